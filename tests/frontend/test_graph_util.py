"""tf.graph_util (TF 1.15's graph_util_impl.py): freezing variables into Const nodes,
extracting the subgraph outputs need, removing training nodes; checked against TensorFlow
where /tmp/tfvenv has it."""
from __future__ import annotations

import logging
import os
import subprocess

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.protos import DT_FLOAT, DT_INT32, DT_STRING, GraphDef, NodeDef

TF_PYTHON = "/tmp/tfvenv/bin/python"


def _model():
    """y = x @ w + b (w, b variables), plus an unused variable, its Assign and a Saver."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
        b = tf.Variable(np.array([0.5, -0.5], np.float32), name="b")
        unused = tf.Variable(7, name="unused")
        tf.assign(unused, 8, name="set_unused")
        y = tf.add(tf.matmul(x, w), b, name="y")
        tf.train.Saver()
    return graph, x, w, b, y


def _frozen(whitelist=None, blacklist=None, caplog=None):
    graph, x, w, b, y = _model()
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, w * 2.0))  # the frozen values are the session's, not the initial ones
        with caplog.at_level(logging.INFO, logger="tensorflow") if caplog else _nothing():
            out = tf.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), ["y"],
                                                               variable_names_whitelist=whitelist,
                                                               variable_names_blacklist=blacklist)
    return graph, out


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_freezing_keeps_what_y_needs_in_graph_order_with_variables_as_consts(caplog):
    graph, frozen = _frozen(caplog=caplog)
    assert [(n.name, n.op) for n in frozen.node] == [
        ("x", "Placeholder"), ("w", "Const"), ("w/read", "Identity"), ("b", "Const"), ("b/read", "Identity"),
        ("MatMul", "MatMul"), ("y", "Add")]
    w = frozen.node[1]
    assert list(w.input) == [] and w.device == ""
    assert sorted(w.attr) == ["dtype", "value"] and w.attr["dtype"].type == DT_FLOAT
    tensor = w.attr["value"].tensor
    assert [d.size for d in tensor.tensor_shape.dim] == [2, 2]
    assert np.frombuffer(tensor.tensor_content, np.float32).tolist() == [2.0, 4.0, 6.0, 8.0]
    assert list(frozen.node[2].input) == ["w"] and list(frozen.node[2].attr["_class"].list.s) == [b"loc:@w"]
    assert not frozen.HasField("versions")  # TF 1.15 copies the library only
    messages = [r.getMessage() for r in caplog.records if r.name == "tensorflow" and r.levelno == logging.INFO]
    assert messages == ["Froze 2 variables.", "Converted 2 variables to const ops."]


def test_frozen_graph_runs_to_the_sessions_values():
    _, frozen = _frozen()
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(frozen, name="")
        assert not graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        with tf.Session() as sess:
            got = sess.run("y:0", {"x:0": [[1.0, 1.0], [0.0, 2.0]]})
    np.testing.assert_array_equal(got, [[8.5, 11.5], [12.5, 15.5]])


def test_whitelist_and_blacklist_choose_the_variables(caplog):
    _, frozen = _frozen(whitelist=["b"], caplog=caplog)
    assert [(n.name, n.op) for n in frozen.node][1:4] == [("w", "VariableV2"), ("w/read", "Identity"), ("b", "Const")]
    assert caplog.records[-2].getMessage() == "Froze 1 variables."
    _, frozen = _frozen(blacklist=["b"])
    assert [(n.name, n.op) for n in frozen.node][1:4] == [("w", "Const"), ("w/read", "Identity"), ("b", "VariableV2")]


def test_a_scalar_variable_is_a_float_val_const():
    with tf.Graph().as_default() as graph:
        s = tf.Variable(3.25, name="s")
        tf.multiply(s, 2.0, name="out")
        with tf.Session() as sess:
            sess.run(s.initializer)
            frozen = tf.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), ["out"])
    tensor = frozen.node[0].attr["value"].tensor
    assert (frozen.node[0].name, list(tensor.float_val), tensor.tensor_content, len(tensor.tensor_shape.dim)) == \
        ("s", [3.25], b"", 0)


def _graph_def(*nodes) -> GraphDef:
    graph_def = GraphDef()
    for name, op, inputs, attrs in nodes:
        node = graph_def.node.add(name=name, op=op, input=inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
    graph_def.versions.producer = 134
    return graph_def


def _colocated(name: str):
    value = tf.AttrValue()
    value.list.s.append(f"loc:@{name}".encode())
    return value


def test_extract_sub_graph_follows_inputs_control_inputs_and_colocation():
    graph_def = _graph_def(("a", "Const", [], {}), ("b", "Const", [], {}), ("c", "Const", [], {}),
                           ("d", "Identity", ["a:0", "^b"], {"_class": _colocated("c")}),
                           ("e", "Identity", ["b"], {}), ("f", "Identity", ["d"], {}))
    sub = tf.graph_util.extract_sub_graph(graph_def, ["f"])
    assert [n.name for n in sub.node] == ["a", "b", "c", "d", "f"]
    assert sub.versions.producer == 134
    assert [n.name for n in tf.graph_util.extract_sub_graph(graph_def, ["e", "a"]).node] == ["a", "b", "e"]
    with pytest.raises(TypeError, match="^dest_nodes must be a list.$"):
        tf.graph_util.extract_sub_graph(graph_def, "f")
    with pytest.raises(TypeError, match="^graph_def must be a graph_pb2.GraphDef proto.$"):
        tf.graph_util.extract_sub_graph(NodeDef(), ["f"])
    with pytest.raises(AssertionError, match="^g is not in graph$"):
        tf.graph_util.extract_sub_graph(graph_def, ["g"])


def test_remove_training_nodes_drops_check_numerics_and_splices_identities():
    graph_def = _graph_def(("x", "Placeholder", [], {}), ("check", "CheckNumerics", ["x"], {}),
                           ("i1", "Identity", ["x"], {}), ("i2", "Identity", ["i1"], {}),
                           ("guarded", "Identity", ["x", "^check"], {}), ("kept", "Identity", ["x"], {}),
                           ("out", "Add", ["i2", "guarded", "^kept"], {}))
    out = tf.graph_util.remove_training_nodes(graph_def, protected_nodes=["guarded"])
    assert [(n.name, list(n.input)) for n in out.node] == [
        ("x", []), ("guarded", ["x"]), ("kept", ["x"]), ("out", ["x", "guarded", "^kept"])]
    out = tf.graph_util.remove_training_nodes(graph_def)
    assert [(n.name, list(n.input)) for n in out.node] == [
        ("x", []), ("kept", ["x"]), ("out", ["x", "x", "^kept"])]
    assert not out.HasField("versions")


def test_must_run_on_cpu():
    def node(op, **types):
        n = NodeDef(name="n", op=op)
        for key, value in types.items():
            n.attr[key].type = value
        return n

    assert tf.graph_util.must_run_on_cpu(node("Const", dtype=DT_INT32))
    assert tf.graph_util.must_run_on_cpu(node("Const", dtype=DT_STRING))
    assert not tf.graph_util.must_run_on_cpu(node("Const", dtype=DT_FLOAT))
    assert tf.graph_util.must_run_on_cpu(node("Cast", SrcT=DT_INT32))
    assert tf.graph_util.must_run_on_cpu(node("DynamicStitch", T=DT_INT32))
    assert not tf.graph_util.must_run_on_cpu(node("VariableV2"))
    assert tf.graph_util.must_run_on_cpu(node("VariableV2"), pin_variables_on_cpu=True)


_TF_SCRIPT = """
import sys
import tensorflow.compat.v1 as tf
graph_def = tf.GraphDef()
graph_def.ParseFromString(open(sys.argv[1], "rb").read())
sub = tf.graph_util.extract_sub_graph(graph_def, ["y"])
stripped = tf.graph_util.remove_training_nodes(graph_def)
open(sys.argv[2], "wb").write(sub.SerializeToString())
open(sys.argv[3], "wb").write(stripped.SerializeToString())
"""


@pytest.mark.skipif(not os.path.exists(TF_PYTHON), reason="TensorFlow is not installed in /tmp/tfvenv")
def test_extract_and_remove_give_tensorflows_graph_defs(tmp_path):
    graph, *_ = _model()
    graph_def = graph.as_graph_def()
    (tmp_path / "in.pb").write_bytes(graph_def.SerializeToString())
    result = subprocess.run([TF_PYTHON, "-c", _TF_SCRIPT, str(tmp_path / "in.pb"), str(tmp_path / "sub.pb"),
                             str(tmp_path / "stripped.pb")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    expected_sub, expected_stripped = GraphDef(), GraphDef()
    expected_sub.ParseFromString((tmp_path / "sub.pb").read_bytes())
    expected_stripped.ParseFromString((tmp_path / "stripped.pb").read_bytes())
    assert tf.graph_util.extract_sub_graph(graph_def, ["y"]) == expected_sub
    assert tf.graph_util.remove_training_nodes(graph_def) == expected_stripped
