"""TF1 control flow (tf.cond, tf.case, tf.while_loop, v1 Switch/Merge graphs): the graphs
tfc builds are TensorFlow's, node for node (tests/fixtures/control_flow_graphs.json, made
by tests/fixtures/make_tf_control_flow_graphs.py with real TensorFlow), errors carry TF
1.15's messages, and every op built in a branch or loop records its context."""
import importlib.util
import json
import os

import pytest

import tfc.compat.v1 as tf
from tfc.frontend import control_flow
from tfc.frontend.op_helper import apply_op
from tfc.frontend.registry import lookup_op_type
from tfc.passes.lower import LowerCtx, LoweringError

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_control_flow_graphs",
                                               os.path.join(_FIXTURES, "make_tf_control_flow_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "control_flow_graphs.json")) as _f:
    FIXTURE = json.load(_f)

# Attrs TF 2.x adds that TF 1.15 never wrote.
_TF2_ONLY_ATTRS = {"_has_manual_control_dependencies"}


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        programs.PROGRAMS[name](tf)
    return graph


def op(graph, name):
    return graph.get_operation_by_name(name)


def ctx_of(graph, name):
    return op(graph, name)._control_flow_context


# -- the graphs, node for node ---------------------------------------------------------------
def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(programs.PROGRAMS)
    assert len(FIXTURE["programs"]) >= 12


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_matches_tensorflow(name):
    expected = FIXTURE["programs"][name]
    for node in expected:
        for attr in _TF2_ONLY_ATTRS:
            node["attrs"].pop(attr, None)
    got = programs.record_graph(build(name))
    assert [n["name"] for n in got] == [n["name"] for n in expected]
    for got_node, expected_node in zip(got, expected):
        assert got_node == expected_node, got_node["name"]


def test_fixture_has_the_key_structure():
    """A spot check of the fixture itself (what TF builds), so the comparison above is
    known to cover Switch/Merge/Enter attrs."""
    nodes = {n["name"]: n for n in FIXTURE["programs"]["while_two_vars"]}
    assert nodes["while/mul/Enter"]["attrs"]["is_constant"] == {"b": True}
    assert nodes["while/Enter"]["attrs"]["frame_name"] == {"s": "while/while_context"}
    assert nodes["while/Enter"]["attrs"]["parallel_iterations"] == {"i": 10}
    assert nodes["while/Merge"]["inputs"] == ["while/Enter", "while/NextIteration:0"]
    captured = {n["name"]: n for n in FIXTURE["programs"]["cond_captured"]}
    assert captured["cond/mul/Switch"]["inputs"] == ["x", "cond/pred_id"]
    assert captured["cond/mul/Switch"]["attrs"]["_class"]["list"]["s"] == ["loc:@x"]


# -- return values ------------------------------------------------------------------------------
def test_cond_returns_the_structure_of_the_branches():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        a, b = tf.cond(p, lambda: (x, x * 2.0), lambda: (x - 1.0, tf.zeros_like(x)))
        assert (a.name, b.name) == ("cond/Merge:0", "cond/Merge_1:0")
        d = tf.cond(p, lambda: {"b": x + 1.0, "a": tf.constant(1)}, lambda: {"a": tf.constant(2), "b": x})
        assert list(d) == ["b", "a"] and d["a"].name == "cond_1/Merge:0" and d["b"].name == "cond_1/Merge_1:0"
        strict = tf.cond(p, lambda: [x], lambda: [x * 3.0], strict=True)
        assert isinstance(strict, list) and strict[0].name == "cond_2/Merge:0"
        single = tf.cond(p, lambda: [x], lambda: [x])
        assert single.name == "cond_3/Merge:0"
        assert single.shape.as_list() == [None, 3]


def test_cond_of_operations_gates_the_pivot():
    with tf.Graph().as_default() as g:
        p = tf.placeholder(tf.bool, [], name="p")
        out = tf.cond(p, lambda: tf.no_op(), lambda: tf.no_op())
        assert out.name == "cond/Merge:0" and out.dtype == tf.bool
        t = op(g, "cond/control_dependency")
        assert t.type == "Identity" and list(t.node_def.input) == ["cond/switch_t", "^cond/NoOp"]
        assert list(op(g, "cond/NoOp").node_def.input) == ["^cond/switch_t"]


def test_while_loop_returns_tensor_or_list():
    with tf.Graph().as_default():
        one = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
        assert isinstance(one, tf.Tensor) and one.name == "while/Exit:0"
        same = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], return_same_structure=True)
        assert isinstance(same, list) and same[0].name == "while_1/Exit:0"
        i, a = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 2.0), [0, tf.ones([2])])
        assert (i.name, a.name) == ("while_2/Exit:0", "while_2/Exit_1:0")
        assert a.shape.as_list() == [2]
        limited = tf.while_loop(lambda i: i < 100, lambda i: i + 2, [tf.constant(0)], maximum_iterations=5)
        assert limited.name == "while_3/Exit_1:0"


# -- the contexts ---------------------------------------------------------------------------------
def test_cond_contexts_on_branch_ops():
    g = build("cond_captured")
    ctx_t, ctx_f = g.get_collection(tf.GraphKeys.COND_CONTEXT)
    assert isinstance(ctx_t, control_flow.CondContext) and isinstance(ctx_f, control_flow.CondContext)
    assert (ctx_t.name, ctx_f.name) == ("cond/cond_text", "cond/cond_text_1")
    assert (ctx_t.branch, ctx_f.branch) == (1, 0)
    assert ctx_t.pred.name == ctx_f.pred.name == "cond/pred_id:0"
    assert (ctx_t.pivot.name, ctx_f.pivot.name) == ("cond/switch_t:0", "cond/switch_f:0")
    assert ctx_t.outer_context is None and ctx_f.outer_context is None
    for name in ("cond/switch_t", "cond/mul/y", "cond/mul", "cond/mul/Switch"):
        assert ctx_of(g, name) is ctx_t, name
    for name in ("cond/switch_f", "cond/add", "cond/add/Switch", "cond/add/Switch_1"):
        assert ctx_of(g, name) is ctx_f, name
    for name in ("x", "y", "p", "cond/Switch", "cond/pred_id", "cond/Merge"):
        assert ctx_of(g, name) is None, name
    assert {k: v.name for k, v in ctx_t.external_values.items()} == {"cond/pred_id:0": "cond/pred_id:0",
                                                                     "x:0": "cond/mul/Switch:1"}
    assert [(a.name, b.name) for a, b in ctx_f.switches] == [("x:0", "cond/add/Switch:0"),
                                                             ("y:0", "cond/add/Switch_1:0")]
    assert [t.name for t in ctx_t.branch_outputs] == ["cond/mul:0"]
    assert [t.name for t in ctx_f.branch_outputs] == ["cond/add:0"]
    assert [m.name for m in ctx_t.merges] == ["cond/Merge"] and ctx_t.merges == ctx_f.merges
    assert ctx_t.other_branch is ctx_f and ctx_f.other_branch is ctx_t
    assert ctx_t.switch_op.name == "cond/Switch"


def test_nested_cond_contexts():
    g = build("cond_nested")
    outer_t, outer_f = g.get_collection(tf.GraphKeys.COND_CONTEXT)  # only the outer cond is collected
    inner_t = ctx_of(g, "cond/cond/add")
    inner_f = ctx_of(g, "cond/cond/sub")
    assert inner_t.branch == 1 and inner_f.branch == 0
    assert inner_t.outer_context is outer_t and inner_f.outer_context is outer_t
    assert outer_t.nested_contexts == [inner_t, inner_f]
    assert ctx_of(g, "cond/cond/Merge") is outer_t
    assert ctx_of(g, "cond/mul") is outer_f
    # x reaches the inner branch through a Switch in each cond.
    assert inner_t.external_values["x:0"].name == "cond/cond/add/Switch_1:1"
    assert ctx_of(g, "cond/cond/add/Switch") is outer_t


def test_control_dependencies_in_a_branch():
    g = build("cond_assign_add")
    ctx_t = g.get_collection(tf.GraphKeys.COND_CONTEXT)[0]
    assign = op(g, "cond/AssignAdd")
    assert ctx_of(g, "cond/AssignAdd") is ctx_t
    assert op(g, "cond/AssignAdd/Switch").type == "RefSwitch"
    assert [c.name for c in op(g, "cond/AssignAdd/value").control_inputs] == ["cond/switch_t"]
    assert [c.name for c in op(g, "cond/Identity").control_inputs] == ["cond/AssignAdd"]
    assert assign.inputs[0].name == "cond/AssignAdd/Switch:1" and assign.inputs[0].dtype.is_ref_dtype


def test_control_dependencies_none_leaves_the_branch():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        made = {}

        def true_fn():
            with tf.control_dependencies(None):
                made["outside"] = tf.constant(1.0, name="outside")
            made["inside"] = tf.constant(2.0, name="inside")
            return made["outside"] + made["inside"]

        tf.cond(p, true_fn, lambda: tf.constant(0.0))
        assert made["outside"].op._control_flow_context is None
        assert made["outside"].op.control_inputs == []
        assert made["inside"].op._control_flow_context.branch == 1
        assert [c.name for c in made["inside"].op.control_inputs] == ["cond/switch_t"]


def test_while_context_on_loop_ops():
    g = build("while_two_vars")
    (ctx,) = g.get_collection(tf.GraphKeys.WHILE_CONTEXT)
    assert isinstance(ctx, control_flow.WhileContext)
    assert ctx.name == "while/while_context" and ctx.outer_context is None
    assert (ctx.parallel_iterations, ctx.back_prop, ctx.swap_memory, ctx.maximum_iterations) == (10, True, False, None)
    assert ctx.pivot.name == "while/LoopCond:0" and ctx.loop_cond_op.name == "while/LoopCond"
    assert ctx.GetControlPivot().name == "while/Identity:0"
    assert [t.name for t in ctx.loop_enters] == ["while/Enter:0", "while/Enter_1:0"]
    assert [t.name for t in ctx.loop_merges] == ["while/Merge:0", "while/Merge_1:0"]
    assert [o.name for o in ctx.loop_switches] == ["while/Switch", "while/Switch_1"]
    assert [t.name for t in ctx.loop_identities] == ["while/Identity:0", "while/Identity_1:0"]
    assert [t.name for t in ctx.body_outputs] == ["while/add:0", "while/mul:0"]
    assert [t.name for t in ctx.loop_next_iterations] == ["while/NextIteration:0", "while/NextIteration_1:0"]
    assert [t.name for t in ctx.loop_exits] == ["while/Exit:0", "while/Exit_1:0"]
    assert [(a.name, b.name) for a, b in ctx.captured] == [("x:0", "while/mul/Enter:0")]
    for o in g.get_operations():
        expected = None if o.name in ("x", "ones", "while/Const") else ctx
        assert o._control_flow_context is expected, o.name


def test_while_maximum_iterations_context():
    g = build("while_maximum_iterations")
    (ctx,) = g.get_collection(tf.GraphKeys.WHILE_CONTEXT)
    assert ctx.maximum_iterations.name == "while/maximum_iterations:0"
    assert [t.name for t in ctx.loop_enters] == ["while/Enter:0", "while/Enter_1:0"]
    assert op(g, "while/Enter").inputs[0].name == "while/iteration_counter:0"
    assert [(a.name, b.name) for a, b in ctx.captured] == [("while/maximum_iterations:0", "while/Less/Enter:0")]


def test_while_in_cond_contexts():
    g = build("while_in_cond")
    ctx_t, ctx_f = g.get_collection(tf.GraphKeys.COND_CONTEXT)
    assert g.get_collection(tf.GraphKeys.WHILE_CONTEXT) == []  # nested loops are not collected
    loop = ctx_of(g, "cond/while/LoopCond")
    assert loop.name == "cond/while/while_context" and loop.outer_context is ctx_t
    assert loop.GetWhileContext() is loop and ctx_t.GetWhileContext() is None
    assert ctx_t.nested_contexts == [loop]
    assert ctx_of(g, "cond/while/Enter") is loop and ctx_of(g, "cond/while/Exit") is loop
    assert ctx_of(g, "cond/while/Switch") is ctx_t  # x switched into the branch, then entered
    assert ctx_of(g, "cond/while/Less/Switch") is ctx_t
    assert ctx_of(g, "cond/while/Less/Enter") is loop
    assert ctx_of(g, "cond/Switch_1") is ctx_f
    assert [(a.name, b.name) for a, b in loop.captured] == [("n:0", "cond/while/Less/Enter:0")]


def test_cond_in_while_contexts():
    g = build("cond_in_while")
    (loop,) = g.get_collection(tf.GraphKeys.WHILE_CONTEXT)
    assert g.get_collection(tf.GraphKeys.COND_CONTEXT) == []
    ctx_t, ctx_f = ctx_of(g, "loop/cond/add"), ctx_of(g, "loop/cond/sub")
    assert ctx_t.outer_context is loop and ctx_f.outer_context is loop
    assert ctx_t.GetWhileContext() is loop
    assert ctx_of(g, "loop/cond/Switch") is loop and ctx_of(g, "loop/cond/Merge") is loop
    assert ctx_of(g, "loop/cond/sub/Enter") is loop
    assert [(a.name, b.name) for a, b in loop.captured] == [("k:0", "loop/cond/sub/Enter:0")]
    assert ctx_f.external_values["k:0"].name == "loop/cond/sub/Switch_1:0"


def test_nested_while_contexts():
    g = build("while_nested")
    (outer,) = g.get_collection(tf.GraphKeys.WHILE_CONTEXT)
    inner = ctx_of(g, "while/while/LoopCond")
    assert inner.outer_context is outer and outer.nested_contexts == [inner]
    assert ctx_of(g, "while/while/Const") is outer  # the inner loop's 0 is made in the outer body
    assert ctx_of(g, "while/while/Exit_1") is inner
    assert [(a.name, b.name) for a, b in inner.captured] == [("while/Identity:0", "while/while/Less/Enter:0")]


def test_fetchable_and_feedable():
    g = build("while_in_cond")
    assert not g.is_fetchable(op(g, "cond/switch_t"))
    assert not g.is_fetchable(g.get_tensor_by_name("cond/while/Identity:0"))
    assert not g.is_fetchable(op(g, "cond/while/Exit"))  # an Exit inside a cond branch
    assert g.is_fetchable(op(g, "cond/Merge"))
    assert not g.is_feedable(g.get_tensor_by_name("cond/while/Enter:0"))
    assert g.is_feedable(g.get_tensor_by_name("x:0"))
    loop_graph = build("while_count")
    assert loop_graph.is_fetchable(op(loop_graph, "while/Exit"))
    assert not loop_graph.is_fetchable(op(loop_graph, "while/Merge"))


# -- the primitive ops ------------------------------------------------------------------------
def test_primitive_shapes():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        f, t = apply_op("Switch", [x, p]).outputs
        assert f.shape.as_list() == t.shape.as_list() == [2, 3]
        out, index = apply_op("Merge", [[x, tf.zeros([2, 4])]]).outputs
        assert out.shape.as_list() == [2, None] and index.dtype == tf.int32 and index.shape.as_list() == []
        assert apply_op("Merge", [[x, tf.zeros([2])]]).outputs[0].shape.ndims is None
        enter = apply_op("Enter", [x], {"frame_name": "f"}).outputs[0]
        assert enter.shape.ndims is None
        const_enter = apply_op("Enter", [x], {"frame_name": "f", "is_constant": True}).outputs[0]
        assert const_enter.shape.as_list() == [2, 3]
        assert apply_op("Exit", [x]).outputs[0].shape.as_list() == [2, 3]
        assert apply_op("NextIteration", [x]).outputs[0].shape.as_list() == [2, 3]
        assert apply_op("LoopCond", [p]).outputs[0].shape.as_list() == []
        with pytest.raises(ValueError, match=r"^Shape must be rank 0 but is rank 1 for 'Switch_1' \(op: 'Switch'\) "
                                             r"with input shapes: \[2,3\], \[2\]\.$"):
            apply_op("Switch", [x, tf.placeholder(tf.bool, [2])])
        with pytest.raises(ValueError, match=r"^Shape must be rank 0 but is rank 1 for 'LoopCond_1'"):
            apply_op("LoopCond", [tf.placeholder(tf.bool, [2])])


def test_loop_primitives_have_tf_gradients_and_every_primitive_refuses_lowering_alone():
    # Conds differentiate (Switch/Merge: the cond_gradient program above); while loops too
    # (TF 1.15's control_flow_grad, tests/frontend/test_while_gradients.py): outside a
    # backprop loop an Enter's gradient passes through, a NextIteration's is the identity and
    # a LoopCond's predicate gets none.
    for type_name in ("Enter", "Exit", "NextIteration", "LoopCond", "RefEnter", "RefExit", "RefNextIteration"):
        entry = lookup_op_type(type_name)
        assert not entry.not_differentiable and entry.gradient is not None, type_name
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        enter = apply_op("Enter", [x], {"frame_name": "f"})
        assert lookup_op_type("Enter").gradient(enter, x) is x
        assert lookup_op_type("NextIteration").gradient(apply_op("NextIteration", [x]), x) is x
        assert lookup_op_type("LoopCond").gradient(apply_op("LoopCond", [tf.constant(True)]), None) is None
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        switch = apply_op("Switch", [tf.constant(1.0), p], name="my_switch")  # this line is the location
        line = switch.location[1]
        with pytest.raises(LoweringError) as info:
            lookup_op_type("Switch").lower(LowerCtx(), switch)
    message = str(info.value)
    assert message.startswith(f"'my_switch' (op type Switch, created at {__file__}:{line}) is a TF1 control-flow "
                              f"primitive: tf.cond / tf.case / tf.while_loop are lowered as a whole construct")


def test_exported_in_compat_v1():
    assert tf.cond is control_flow.cond and tf.case is control_flow.case and tf.while_loop is control_flow.while_loop
    assert tf.group is not None and tf.no_op is not None


# -- errors -------------------------------------------------------------------------------------
def _tf1_nest_message(tf2_message: str) -> str:
    """TF 2.x's nest message as TF 1.15 wrote it: graph tensors are type=Tensor (not
    SymbolicTensor), and no 'Entire first structure' summary."""
    return tf2_message.split("\nEntire first structure:")[0].replace("type=SymbolicTensor", "type=Tensor")


# TF 1.15's texts (control_flow_ops.py r1.15) where TF 2.x reworded them (the fixture has
# TF 2.x's, checked to be the same error class).
TF1_MESSAGES = {
    "err_cond_dtype": "Outputs of true_fn and false_fn must have the same type: float32, int32",
    "err_cond_python_bool": "pred must not be a Python bool",
    "err_cond_not_callable": "true_fn must be callable.",
    "err_cond_no_result": "true_fn must have a return value.",
    "err_while_no_vars": "No loop variables provided",
    "err_while_parallel_iterations": "parallel_iterations must be a positive integer.",
    "err_while_not_callable": "cond must be callable.",
}


@pytest.mark.parametrize("name", sorted(programs.ERRORS))
def test_error_messages(name):
    expected = FIXTURE["errors"][name]
    assert expected is not None
    with tf.Graph().as_default():
        with pytest.raises(Exception) as info:
            programs.ERRORS[name](tf)
    assert type(info.value).__name__ == expected["type"]
    if name in TF1_MESSAGES:
        assert str(info.value) == TF1_MESSAGES[name]
    else:
        assert str(info.value) == _tf1_nest_message(expected["message"])


def test_shape_error_texts_are_tensorflows():
    assert FIXTURE["errors"]["err_while_shape"]["message"] == (
        "Input tensor 'ones:0' enters the loop with shape (1, 2), but has shape (2, 2) after one iteration. To "
        "allow the shape to vary across iterations, use the `shape_invariants` argument of tf.while_loop to "
        "specify a less-specific shape.")
    assert FIXTURE["errors"]["err_while_invariant"]["message"].endswith(
        "It enters the loop with shape (1, 2), but the specified shape invariant is (?, 3).")


def test_more_errors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        with pytest.raises(ValueError, match=r"^maximum_iterations must be a scalar, saw shape: \(2,\)$"):
            tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], maximum_iterations=[1, 2])
        with pytest.raises(TypeError, match=r"^cond\(\): true_fn argument required$"):
            tf.cond(p, false_fn=lambda: 1.0)
        with pytest.raises(TypeError, match=r"^Each entry in pred_fn_pairs must be a 2-tuple$"):
            tf.case([p], default=lambda: 1.0)
        # (TF 2.21 builds this invalid graph silently; tfc refuses it like Graph::UpdateEdge)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"^Input 1 of node while_1/Merge was passed float32 from while_1/NextIteration:0 "
                                 r"incompatible with expected int32\.$"):
            tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [tf.constant(0)])
