"""Frozen models written by real TensorFlow import into tfc and run compiled.

The fixtures in tests/fixtures/graphs were made by tests/fixtures/make_tf_graphs.py with
TensorFlow itself (version in each .npz): a frozen GraphDef per model, the values fed and
the outputs TF computed, and the static shape TF infers for every tensor on import.
Here each GraphDef goes through ``tf.import_graph_def`` (placeholders replaced through
``input_map``, outputs picked with ``return_elements``), runs in a ``tf.Session``
(compiled to native code) and must reproduce TF's outputs; the GraphDef interchange
around it (unknown op types, malformed files, ``as_graph_def`` round trips,
``tf.train.write_graph`` text and binary) is checked too.
"""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import graph_io
from tfc.frontend.op_helper import apply_op
from tfc.frontend.tensor_shape import TensorShape
from tfc.protos import GraphDef

GRAPHS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "graphs")
IMPORTABLE = ["mlp", "cnn", "lstm", "attention", "misc", "mobilenet_block", "legacy", "placeholders"]
# TF 2.x writes padding=EXPLICIT with explicit_paddings on MaxPool and DepthwiseConv2dNative.
MODELS = IMPORTABLE + ["explicit_padding"]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def load_fixture(name: str):
    graph_def = GraphDef()
    with open(os.path.join(GRAPHS, name + ".pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    data = np.load(os.path.join(GRAPHS, name + ".npz"))
    feeds = {str(n): data[f"in{i}"] for i, n in enumerate(data["input_names"])}
    expected = {str(n): data[f"out{i}"] for i, n in enumerate(data["output_names"])}
    return graph_def, feeds, expected, data


def placeholder_shape(graph_def, tensor_name: str) -> TensorShape:
    node = next(n for n in graph_def.node if n.name == tensor_name.split(":")[0])
    return TensorShape(node.attr["shape"].shape) if "shape" in node.attr else TensorShape(None)


def assert_matches_tf(actual, expected, name: str):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (name, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (name, actual.dtype, expected.dtype)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    else:
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-5, err_msg=name)


# -- every fixture imports, runs compiled and reproduces TF's outputs -------------------------
@pytest.mark.parametrize("name", MODELS)
def test_frozen_model_runs_like_tensorflow(name):
    graph_def, feeds, expected, _ = load_fixture(name)
    inputs = {key: tf.placeholder(value.dtype, placeholder_shape(graph_def, key), name=key.split(":")[0])
              for key, value in feeds.items()}
    outputs = tf.import_graph_def(graph_def, input_map=inputs, return_elements=list(expected), name="frozen")
    assert [t.name for t in outputs] == [f"frozen/{n}" for n in expected]
    with tf.Session() as sess:
        values = sess.run(outputs, {inputs[k]: v for k, v in feeds.items()})
    for key, value in zip(expected, values):
        assert_matches_tf(value, expected[key], f"{name}: {key}")


@pytest.mark.parametrize("name", MODELS)
def test_imported_graph_has_tf_names_and_static_shapes(name):
    """Without input_map: the nodes keep their names under the default 'import/' scope,
    and every tensor has the static shape TF infers for it."""
    graph_def, _, _, data = load_fixture(name)
    graph = tf.get_default_graph()
    assert tf.import_graph_def(graph_def) is None
    assert [op.name for op in graph.get_operations()] == ["import/" + n.name for n in graph_def.node]
    assert [op.type for op in graph.get_operations()] == [n.op for n in graph_def.node]
    tf_shapes = json.loads(str(data["static_shapes"]))
    assert len(tf_shapes) == sum(len(op.outputs) for op in graph.get_operations())
    for tensor_name, tf_shape in tf_shapes.items():
        shape = graph.get_tensor_by_name("import/" + tensor_name).shape
        assert (shape.as_list() if shape.ndims is not None else None) == tf_shape, tensor_name


def test_imported_placeholders_are_fed_by_name():
    graph_def, feeds, expected, _ = load_fixture("misc")
    tf.import_graph_def(graph_def)
    with tf.Session() as sess:
        values = sess.run(["import/" + k for k in expected], {"import/" + k: v for k, v in feeds.items()})
    for key, value in zip(expected, values):
        assert_matches_tf(value, expected[key], key)


def test_fixtures_come_from_tensorflow():
    """The fixtures hold what the issue asks for: the op types each model must contain."""
    wanted = {
        "mlp": {"MatMul", "BiasAdd", "Relu", "Softmax"},
        "cnn": {"Conv2D", "MaxPool", "Reshape", "AddV2", "BiasAdd", "Relu", "Mean"},
        "lstm": {"MatMul", "BiasAdd", "Sigmoid", "Tanh", "Split", "ConcatV2", "Mul", "AddV2", "Pack", "Unpack",
                 "StridedSlice"},
        "attention": {"BatchMatMulV2", "Einsum", "Softmax", "Mean", "SquaredDifference", "Rsqrt", "Transpose",
                      "Reshape", "Cast"},
        "misc": {"Pow", "Select", "SelectV2", "Tile", "ArgMax", "Identity", "Shape", "Fill", "ZerosLike", "Split",
                 "StridedSlice", "Sigmoid", "Tanh"},
        "mobilenet_block": {"FusedBatchNormV3", "DepthwiseConv2dNative", "Relu6", "AvgPool", "Squeeze"},
        "legacy": {"BatchMatMul", "BatchMatMulV3", "FusedBatchNorm", "FusedBatchNormV3", "Einsum"},
        "explicit_padding": {"MaxPool", "DepthwiseConv2dNative"},
    }
    for name, ops in wanted.items():
        graph_def, _, _, data = load_fixture(name)
        assert ops <= {n.op for n in graph_def.node}, (name, ops - {n.op for n in graph_def.node})
        assert not any(n.op in ("VariableV2", "VarHandleOp", "ReadVariableOp") for n in graph_def.node), name
        assert str(data["tf_version"])[0].isdigit()
    cnn, _, _, _ = load_fixture("cnn")
    assert all("_output_shapes" in n.attr for n in cnn.node if n.op in ("Conv2D", "MaxPool", "Relu", "Reshape"))


# -- what the GraphDef's own attrs say survives ----------------------------------------------
def test_tf2_attrs_are_kept_verbatim_and_round_trip():
    """TF 2.x attrs the registry does not declare (MatMul's grad_a, the Placeholder
    forms, _output_shapes, _has_manual_control_dependencies) come back out of
    as_graph_def unchanged, and nothing else changes either."""
    for name in IMPORTABLE:
        graph_def, _, _, _ = load_fixture(name)
        with tf.Graph().as_default() as g:
            tf.import_graph_def(graph_def, name="")
            exported = g.as_graph_def()
        assert [n.name for n in exported.node] == [n.name for n in graph_def.node]
        for original, node in zip(graph_def.node, exported.node):
            assert (node.op, list(node.input), node.device) == (original.op, list(original.input), original.device)
            for key, value in original.attr.items():
                assert node.attr[key] == value, (name, node.name, key)


def test_placeholder_without_shape_attr():
    """GraphDefs of old TF versions may omit Placeholder's shape attr: unknown shape."""
    graph_def, feeds, expected, _ = load_fixture("placeholders")
    for node in graph_def.node:
        if node.op == "Placeholder":
            del node.attr["shape"]
    out, = tf.import_graph_def(graph_def, return_elements=["out:0"], name="")
    assert out.shape.ndims is None
    with tf.Session() as sess:
        assert_matches_tf(sess.run(out, feeds), expected["out:0"], "out")


# -- errors ---------------------------------------------------------------------------------
def test_unknown_op_types_are_listed_in_one_error():
    graph_def = GraphDef()
    for name, op, inputs in [("x", "Placeholder", []), ("a", "FancyNewOp", ["x"]), ("b", "Relu", ["a"]),
                             ("c", "AnotherMissingOp", ["b"]), ("d", "FancyNewOp", ["c"])]:
        node = graph_def.node.add(name=name, op=op)
        node.input.extend(inputs)
    graph_def.node[0].attr["dtype"].type = 1
    graph = tf.get_default_graph()
    with pytest.raises(ValueError) as info:
        tf.import_graph_def(graph_def)
    message = str(info.value)
    assert "2 op types" in message and "AnotherMissingOp" in message and "FancyNewOp" in message
    assert graph.get_operations() == []  # nothing half-imported


def test_malformed_files_give_a_clear_error(tmp_path):
    bad = tmp_path / "model.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0fnot a graph")
    with pytest.raises(ValueError, match="is not a valid GraphDef"):
        graph_io.load_graph_def(str(bad))
    bad_text = tmp_path / "model.pbtxt"
    bad_text.write_text('node { name: "a" op: "Const" oops }')
    with pytest.raises(ValueError, match="is not a valid GraphDef"):
        graph_io.load_graph_def(str(bad_text))
    truncated = tmp_path / "truncated.pb"
    data = open(os.path.join(GRAPHS, "mlp.pb"), "rb").read()
    truncated.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="is not a valid GraphDef"):
        graph_io.load_graph_def(str(truncated))


def test_shape_mismatch_through_input_map_names_the_node():
    graph_def, _, _, _ = load_fixture("mlp")
    wrong = tf.placeholder(tf.float32, [None, 5])
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 5 and 12 for 'import/MatMul'"):
        tf.import_graph_def(graph_def, input_map={"x:0": wrong})


def test_input_map_key_not_in_graph_def():
    graph_def, _, _, _ = load_fixture("mlp")
    with pytest.raises(ValueError, match=r"Attempted to map inputs that were not found in graph_def: \[nope:0\]"):
        tf.import_graph_def(graph_def, input_map={"nope:0": tf.constant(1.0)})


def test_return_elements_not_in_graph_def():
    graph_def, _, _, _ = load_fixture("mlp")
    with pytest.raises(ValueError, match="Requested return tensor 'nope:0' not found in graph def"):
        tf.import_graph_def(graph_def, return_elements=["nope:0"])
    with pytest.raises(ValueError, match="Requested return node 'nope' not found in graph def"):
        tf.import_graph_def(graph_def, return_elements=["nope"])
    with pytest.raises(ValueError, match=r"Invalid return output 3 of node 'probs', which has 1 output\(s\)"):
        tf.import_graph_def(graph_def, return_elements=["probs:3"])


def test_input_map_with_wrong_dtype():
    graph_def, _, _, _ = load_fixture("mlp")
    ints = tf.constant(np.ones([2, 12], np.int32))
    with pytest.raises(ValueError, match="Input 0 of node import/MatMul was passed int32 from Const:0 incompatible "
                                         "with expected float"):
        tf.import_graph_def(graph_def, input_map={"x:0": ints})


# -- malformed GraphDefs: TF 2.x's errors, and nothing half-imported -------------------------
_CONST_A = ('node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
            'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }\n')


def _identity(name: str, *inputs: str) -> str:
    listed = " ".join(f'input: "{i}"' for i in inputs)
    return f'node {{ name: "{name}" op: "Identity" {listed} attr {{ key: "T" value {{ type: DT_FLOAT }} }} }}\n'


def _graph_def(text: str) -> GraphDef:
    from google.protobuf import text_format

    return text_format.Parse(text, GraphDef())


# The messages are TensorFlow 2.x's (tf.compat.v1.import_graph_def) for the same GraphDefs.
BAD_GRAPH_DEFS = {
    "missing input": (_CONST_A + _identity("b", "nope"), "Node 'b': Unknown input node 'nope'"),
    "missing control input": (_CONST_A + _identity("b", "a", "^nope"), "Node 'b': Unknown input node '^nope'"),
    "negative index": (_CONST_A + _identity("b", "a:-1"), "Node 'b': Unknown input node 'a:-1'"),
    "bad output index": (_CONST_A + _identity("b", "a:3"),
                         "Node 'b': Connecting to invalid output 3 of source node a which has 1 outputs."),
    "bad index before its source": (_identity("b", "a:3") + _CONST_A,
                                    "Node 'b': Connecting to invalid output 3 of source node a which has 1 outputs."),
    "two-node cycle": (_identity("a", "b") + _identity("b", "a"), "2 nodes in a cycle"),
    "self loop": (_identity("a", "a"), "1 nodes in a cycle"),
    "control-edge cycle": (_CONST_A + _identity("b", "a", "^c") + _identity("c", "b"), "2 nodes in a cycle"),
    "behind a cycle": (_CONST_A + _identity("x", "y") + _identity("y", "x") + _identity("d", "y")
                       + _identity("e", "a"), "3 nodes in a cycle"),
    "cycle and missing input": (_identity("x", "y") + _identity("y", "x") + _identity("m", "nope"),
                                "Node 'm': Unknown input node 'nope'"),
    "cycle and bad index": (_CONST_A + _identity("x", "y") + _identity("y", "x") + _identity("m", "a:2"),
                            "Node 'm': Connecting to invalid output 2 of source node a which has 1 outputs."),
    "duplicate name": (_CONST_A + _CONST_A, "Node 'a' is not unique"),
    "duplicate name used": (_CONST_A + _identity("b", "a") + _CONST_A, "Node 'a' is not unique"),
    "control input first": (_CONST_A + _identity("b", "^a", "a"),
                            "Node 'b': Control dependencies must come after regular dependencies"),
}


@pytest.mark.parametrize("case", list(BAD_GRAPH_DEFS))
@pytest.mark.parametrize("scope", [None, "imp"])
def test_bad_graph_def_is_tf_value_error_and_leaves_graph_unchanged(case, scope):
    text, message = BAD_GRAPH_DEFS[case]
    graph = tf.get_default_graph()
    tf.constant(0.0, name="pre")
    version = graph.version
    with pytest.raises(ValueError) as info:
        tf.import_graph_def(_graph_def(text), name=scope)
    assert str(info.value) == message
    assert [op.name for op in graph.get_operations()] == ["pre"]
    assert graph.version == version
    assert [tf.constant(1.0, name=n).op.name for n in ("a", "b")] == ["a", "b"]  # no name left marked as used


def _node(name: str, op: str, inputs=(), attrs: str = 'attr { key: "T" value { type: DT_FLOAT } }') -> str:
    listed = " ".join(f'input: "{i}"' for i in inputs)
    return f'node {{ name: "{name}" op: "{op}" {listed} {attrs} }}\n'


_MAX_POOL_ATTRS = ('attr { key: "T" value { type: DT_FLOAT } } '
                   'attr { key: "ksize" value { list { i: 1 i: 3 i: 3 i: 1 } } } '
                   'attr { key: "strides" value { list { i: 1 i: 2 i: 2 i: 1 } } } '
                   'attr { key: "padding" value { s: "VALID" } }')

# Nodes whose inputs do not fit their op's signature (shape inference used to index past the
# inputs: IndexError). The messages are TF 2.x's up to its signature summary, which tfc ends
# after the signature (TF goes on with the attrs' details); then the node's name, as TF. Several
# missing attrs are listed in the registry's order (TF's follows a hash map: 'T', 'N' here).
WRONG_NODE_DEFS = {
    "Tanh without inputs": (_node("a", "Tanh"), "NodeDef expected inputs 'float' do not match 0 inputs specified; "
                            "Op<name=Tanh; signature=x:T -> y:T>; NodeDef: {{node PREFIXa}}"),
    "Rsqrt without inputs": (_node("a", "Rsqrt"), "NodeDef expected inputs 'float' do not match 0 inputs specified; "
                             "Op<name=Rsqrt; signature=x:T -> y:T>; NodeDef: {{node PREFIXa}}"),
    "Mean without inputs": (_node("m", "Mean"), "NodeDef expected inputs 'float, int32' do not match 0 inputs "
                            "specified; Op<name=Mean; signature=input:T, reduction_indices:Tidx -> output:T>; "
                            "NodeDef: {{node PREFIXm}}"),
    "MaxPool without inputs": (_node("MaxPool2d", "MaxPool", attrs=_MAX_POOL_ATTRS),
                               "NodeDef expected inputs 'float' do not match 0 inputs specified; Op<name=MaxPool; "
                               "signature=input:T -> output:T>; NodeDef: {{node PREFIXMaxPool2d}}"),
    "Shape with two inputs": (_CONST_A + _node("s", "Shape", ["a", "a", "^a"]),
                              "NodeDef expected inputs 'float' do not match 2 inputs specified; Op<name=Shape; "
                              "signature=input:T -> output:out_type>; NodeDef: {{node PREFIXs}}"),
    "AddN with fewer inputs than N": (_CONST_A + _node("s", "AddN", ["a"], 'attr { key: "T" value { type: DT_FLOAT } } '
                                                       'attr { key: "N" value { i: 2 } }'),
                                      "NodeDef expected inputs 'float, float' do not match 1 inputs specified; "
                                      "Op<name=AddN; signature=inputs:N*T -> sum:T>; NodeDef: {{node PREFIXs}}"),
    # An absurd N (the loader fuzzer's) is summarised, not listed (listing it took 20 GB).
    "AddN with N = 2**31 - 1": (_CONST_A + _node("s", "AddN", ["a"], 'attr { key: "T" value { type: DT_FLOAT } } '
                                                 'attr { key: "N" value { i: 2147483647 } }'),
                                "NodeDef expected inputs 'float (x2147483647)' do not match 1 inputs specified; "
                                "Op<name=AddN; signature=inputs:N*T -> sum:T>; NodeDef: {{node PREFIXs}}"),
    "Assign with one input": (_CONST_A + _node("s", "Assign", ["a"]),
                              "NodeDef expected inputs 'float_ref, float' do not match 1 inputs specified; "
                              "Op<name=Assign; signature=ref:Ref(T), value:T -> output_ref:Ref(T)>; "
                              "NodeDef: {{node PREFIXs}}"),
    "Placeholder with an input": (_CONST_A + _node("p", "Placeholder", ["a"], 'attr { key: "dtype" value { type: '
                                                                               'DT_FLOAT } }'),
                                  "NodeDef expected inputs '' do not match 1 inputs specified; Op<name=Placeholder; "
                                  "signature= -> output:dtype>; NodeDef: {{node PREFIXp}}"),
    "Tanh without T": (_CONST_A + _node("t", "Tanh", ["a"], attrs=""),
                       "NodeDef missing attr 'T' from Op<name=Tanh; signature=x:T -> y:T>; NodeDef: {{node PREFIXt}}"),
    "ConcatV2 without N and T": (_CONST_A + _node("c", "ConcatV2", ["a"], attrs=""),
                                 "NodeDef missing attrs 'N', 'T' from Op<name=ConcatV2; signature=values:N*T, "
                                 "axis:Tidx -> output:T>; NodeDef: {{node PREFIXc}}"),
}


@pytest.mark.parametrize("case", list(WRONG_NODE_DEFS))
@pytest.mark.parametrize("scope", [None, "", "imp"])
def test_node_def_not_fitting_its_op_is_tf_value_error(case, scope):
    text, message = WRONG_NODE_DEFS[case]
    graph = tf.get_default_graph()
    tf.constant(0.0, name="pre")
    with pytest.raises(ValueError) as info:
        tf.import_graph_def(_graph_def(text), name=scope)
    prefix = {None: "import/", "": "", "imp": "imp/"}[scope]
    assert str(info.value) == message.replace("PREFIX", prefix)
    assert [op.name for op in graph.get_operations()] == ["pre"]


def test_failure_while_building_ops_rolls_back_everything():
    """An import that fails after some ops were added (a shape error on the fourth node) removes
    them, their ids and their consumer links; like TF, its scope name stays used."""
    graph = tf.get_default_graph()
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    text = (_CONST_A + _identity("b", "x") + _identity("c", "b")
            + 'node { name: "m" op: "MatMul" input: "c" input: "a" attr { key: "T" value { type: DT_FLOAT } } }')
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 0 for 'imp/m'"):
        tf.import_graph_def(_graph_def(text), input_map={"x:0": x}, name="imp")
    assert [op.name for op in graph.get_operations()] == ["x"]
    assert graph.version == 1
    assert x.consumers() == []
    tf.import_graph_def(_graph_def(_CONST_A), name="imp")
    assert [op.name for op in graph.get_operations()] == ["x", "imp_1/a"]
    assert graph.get_operation_by_name("imp_1/a")._id == 2


def test_imported_names_are_uniquified_and_marked_used_like_tf():
    graph = tf.get_default_graph()
    tf.constant(0.0, name="a")
    tf.import_graph_def(_graph_def(_CONST_A + _identity("b", "a")), name="")
    assert [(op.name, [t.name for t in op.inputs]) for op in graph.get_operations()] == \
        [("a", []), ("a_1", []), ("b", ["a_1:0"])]
    assert tf.constant(1.0, name="b").op.name == "b_1"


def test_input_map_may_replace_an_input_the_graph_def_lacks():
    graph = tf.get_default_graph()
    two = tf.constant(2.0, name="Const")
    b, = tf.import_graph_def(_graph_def(_identity("b", "nope")), input_map={"nope:0": two},
                             return_elements=["b:0"], name="imp")
    assert [op.name for op in graph.get_operations()] == ["Const", "imp/b"]
    assert list(b.op.inputs) == [two]


# -- tfc graphs out and back in ---------------------------------------------------------------
def build_tfc_model():
    rng = np.random.default_rng(3)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.constant(rng.standard_normal([4, 3]).astype(np.float32), name="w")
    b = tf.constant(rng.standard_normal([3]).astype(np.float32), name="b")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    e = apply_op("Einsum", [[h, h]], {"equation": "bi,bj->bij"}).outputs[0]
    y = tf.identity(tf.nn.softmax(tf.reduce_mean(e, axis=1) + tf.cast(tf.argmax(h, 1), tf.float32)[:, None]),
                    name="y")
    return x, y


def test_as_graph_def_round_trip():
    """A tfc graph goes out as a GraphDef (wire bytes), comes back under a scope with its
    input mapped, goes out and in once more, and computes the same values."""
    x, y = build_tfc_model()
    graph_def = tf.get_default_graph().as_graph_def()
    feed = np.random.default_rng(4).standard_normal([5, 4]).astype(np.float32)
    with tf.Session() as sess:
        want = sess.run(y, {x: feed})
    wire = GraphDef()
    wire.ParseFromString(graph_def.SerializeToString())
    with tf.Graph().as_default() as g2:
        x2 = tf.placeholder(tf.float32, [None, 4])
        y2, = tf.import_graph_def(wire, input_map={"x": x2}, return_elements=["y:0"], name="copy")
        assert y2.name == "copy/y:0" and y2.shape.as_list() == [None, 3]
        again = g2.as_graph_def()
    assert [n.name for n in again.node] == ["Placeholder"] + ["copy/" + n.name for n in graph_def.node]
    mapped = [n for n in again.node if n.name == "copy/MatMul"][0]
    assert list(mapped.input) == ["Placeholder", "copy/w"]
    for original, node in zip(graph_def.node, again.node[1:]):
        assert (node.op, dict(node.attr)) == (original.op, dict(original.attr)), node.name
    with tf.Graph().as_default():
        y3, = tf.import_graph_def(again, return_elements=["copy/y:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y3, {"Placeholder:0": feed}), want, rtol=1e-6, atol=1e-7)


def test_write_graph_text_and_binary(tmp_path):
    graph_def, feeds, expected, _ = load_fixture("mlp")
    tf.import_graph_def(graph_def, name="")
    graph = tf.get_default_graph()
    text_path = tf.train.write_graph(graph, str(tmp_path), "model.pbtxt", as_text=True)
    binary_path = tf.train.write_graph(graph, str(tmp_path), "model.pb", as_text=False)
    assert text_path == os.path.join(str(tmp_path), "model.pbtxt")
    assert binary_path == os.path.join(str(tmp_path), "model.pb")
    text = open(text_path).read()
    assert 'name: "MatMul"' in text and 'op: "BiasAdd"' in text and 'key: "grad_a"' in text
    # a GraphDef (not a Graph) is written as it is
    direct_path = tf.train.write_graph(graph_def, str(tmp_path), "direct.pb", as_text=False)
    assert open(direct_path, "rb").read() == graph_def.SerializeToString()
    with tf.Graph().as_default():
        from_binary = graph_io.load_graph_def(binary_path, name="b")
    with tf.Graph().as_default():
        from_text = graph_io.load_graph_def(text_path, name="t")
        assert from_text == from_binary
        assert list(from_text.node) == list(graph_def.node)
        with tf.Session() as sess:
            values = sess.run(["t/" + k for k in expected], {"t/" + k: v for k, v in feeds.items()})
    for key, value in zip(expected, values):
        assert_matches_tf(value, expected[key], key)


# -- Einsum (tfc/frontend/ops/extra_ops.py) beyond what the fixtures exercise ---------------------
def einsum(equation, *inputs):
    return apply_op("Einsum", [list(inputs)], {"equation": equation}).outputs[0]


def test_einsum_gradients_match_finite_differences():
    """TF's _EinsumGrad: plain contractions, labels summed on one side, unary sums and
    transposes, broadcasting ellipses; checked against numpy's einsum in float64."""
    rng = np.random.default_rng(7)
    cases = [("bqhk,bshk->bhqs", [(2, 3, 2, 2), (2, 4, 2, 2)]), ("abc,cd->ad", [(2, 3, 4), (4, 5)]),
             ("ijk->ki", [(2, 3, 4)]), ("abc->ac", [(2, 3, 4)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
             ("i,j->ij", [(3,), (4,)])]
    fetches, feeds, checks = [], {}, []
    for equation, shapes in cases:
        values = [rng.standard_normal(s) for s in shapes]
        inputs = [tf.placeholder(tf.float64, s) for s in shapes]
        seed = rng.standard_normal(np.einsum(equation, *values).shape)
        grad_ys = tf.placeholder(tf.float64, seed.shape)
        fetches.append(tf.gradients(einsum(equation, *inputs), inputs, grad_ys=grad_ys))
        feeds.update(zip(inputs, values))
        feeds[grad_ys] = seed
        checks.append((equation, values, seed))
    with tf.Session() as sess:
        results = sess.run(fetches, feeds)
    for (equation, values, seed), grads in zip(checks, results):
        for i, grad in enumerate(grads):
            numeric = np.zeros_like(values[i])
            for index in np.ndindex(values[i].shape):
                plus = [v.copy() for v in values]
                minus = [v.copy() for v in values]
                plus[i][index] += 1e-6
                minus[i][index] -= 1e-6
                numeric[index] = np.sum(seed * (np.einsum(equation, *plus) - np.einsum(equation, *minus))) / 2e-6
            np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7, err_msg=f"{equation} input {i}")


def test_einsum_shape_inference_and_errors():
    a = tf.placeholder(tf.float32, [None, 3, 4])
    b = tf.placeholder(tf.float32, [4, None])
    assert einsum("bij,jk->bki", a, b).shape.as_list() == [None, None, 3]
    assert einsum("...j,jk->...k", a, b).shape.as_list() == [None, 3, None]
    with pytest.raises(ValueError, match="Expecting exactly one '->' in einsum equation: bij,jk"):
        einsum("bij,jk", a, b)
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 3 for 0th input and equation: ij,jk->ik"):
        einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        einsum("bij,ik->bjk", a, b)
    with pytest.raises(ValueError, match="has label 'z' which is not present in the input subscripts"):
        einsum("bij,jk->bz", a, b)
    with pytest.raises(ValueError, match="without ellipsis"):
        einsum("...j,jk->k", a, b)


def test_batch_matmul_v1_gradient():
    rng = np.random.default_rng(8)
    xv, yv, gv = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 3, 3))
    x, y, g = tf.constant(xv), tf.constant(yv), tf.constant(gv)
    fetches = {}
    for adj_x in (False, True):
        for adj_y in (False, True):
            a = tf.transpose(x, [0, 2, 1]) if adj_x else x
            b = tf.transpose(y, [0, 2, 1]) if adj_y else y
            z = apply_op("BatchMatMul", [a, b], {"adj_x": adj_x, "adj_y": adj_y}).outputs[0]
            fetches[adj_x, adj_y] = tf.gradients(z, [x, y], grad_ys=g)
    with tf.Session() as sess:
        results = sess.run(fetches)
    for key, (gx, gy) in results.items():  # z = x @ y whatever the flags: the same gradients
        np.testing.assert_allclose(gx, gv @ yv.transpose(0, 2, 1), rtol=1e-12, err_msg=str(key))
        np.testing.assert_allclose(gy, xv.transpose(0, 2, 1) @ gv, rtol=1e-12, err_msg=str(key))
