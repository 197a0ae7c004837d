"""tf.gradients through TF1 while loops (v1 control flow): the graphs tfc builds are
TensorFlow 1.15's, node for node (the forward loop's ``f_count`` counter and stack pushes,
the backprop loop's ``b_count`` counter, ``b_exit`` / ``b_switch`` / ``b_acc``, stack pops,
``f_sync`` / ``b_sync`` triggers, TensorArray gradients), the gradients TF leaves None are
None, TF's errors are raised, and the gradients' values are TF's (fixtures:
tests/fixtures/while_grad_graphs.json and while_grad_values.npz, made by
tests/fixtures/make_tf_while_grad_graphs.py with real TensorFlow)."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.control_flow import WhileContext
from tfc.frontend.control_flow_state import GradLoopState

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_while_grad_graphs",
                                               os.path.join(_FIXTURES, "make_tf_while_grad_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "while_grad_graphs.json")) as _f:
    FIXTURE = json.load(_f)
VALUES = np.load(os.path.join(_FIXTURES, "while_grad_values.npz"))

def build(name):
    graph = tf.Graph()
    with graph.as_default():
        spec = programs.PROGRAMS[name](tf)
    return graph, spec


def op(graph, name):
    return graph.get_operation_by_name(name)


# -- the graphs, node for node ---------------------------------------------------------------
def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors"]) == sorted(programs.ERRORS)
    assert len(FIXTURE["programs"]) == 14


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_matches_tensorflow(name):
    """Every node TF builds, in TF's order, with TF's inputs (``^control`` ones included),
    attrs (frame_name, is_constant, parallel_iterations, elem_type...), dtypes and shapes."""
    expected = FIXTURE["programs"][name]["nodes"]
    graph, _ = build(name)
    got = programs.rnn_graphs.record(graph)
    assert [(n["name"], n["op"]) for n in got] == [(n["name"], n["op"]) for n in expected]
    for got_node, expected_node in zip(got, expected):
        assert got_node == expected_node, got_node["name"]


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_gradients_and_variables_are_tensorflows(name):
    """The gradient tensors are the ones TF returns (by name), None where TF's are; the
    variables are TF's."""
    expected = FIXTURE["programs"][name]
    graph, spec = build(name)
    fetches, none_gradients = programs.split_fetches(spec)
    assert {k: t.name for k, t in fetches.items()} == expected["fetches"]
    assert none_gradients == expected["none_gradients"]
    with graph.as_default():
        assert [[v.name, v.shape.as_list()] for v in tf.global_variables()] == expected["variables"]
        assert [v.name for v in tf.trainable_variables()] == expected["trainable"]


@pytest.mark.parametrize("name", sorted(programs.ERRORS))
def test_errors_match_tensorflow(name):
    expected = FIXTURE["errors"][name]
    error = {"TypeError": TypeError, "ValueError": ValueError}[expected["type"]]
    with tf.Graph().as_default():
        with pytest.raises(error) as info:
            programs.ERRORS[name](tf)
    assert str(info.value) == expected["message"]


def test_fixture_has_the_key_structure():
    """A spot check of what TF builds (so the comparison above is known to cover the
    stacks, the two frames and the accumulator)."""
    nodes = {n["name"]: n for n in FIXTURE["programs"]["while_grad_simple"]["nodes"]}
    acc = "gradients/while/mul_grad/Mul_1/"
    assert nodes[acc + "f_acc"]["op"] == "StackV2" and nodes[acc + "f_acc"]["attrs"]["elem_type"] == {
        "type": "float32"}
    assert nodes[acc + "Enter"]["attrs"]["frame_name"] == {"s": "while/while_context"}
    assert nodes[acc + "StackPushV2"]["inputs"] == [acc + "Enter", "while/Identity_1", "^gradients/Add"]
    assert nodes[acc + "StackPopV2/Enter"]["attrs"]["frame_name"] == {"s": "gradients/while/while_context"}
    assert nodes[acc + "StackPopV2"]["inputs"] == [acc + "StackPopV2/Enter:0", "^gradients/Sub"]
    assert nodes["gradients/NextIteration"]["inputs"] == ["gradients/Add", "^" + acc + "StackPushV2"]
    assert nodes["gradients/while/mul/Enter_grad/b_acc_3"]["op"] == "Exit"


# -- the loop state ---------------------------------------------------------------------------
def test_the_backprop_loop_knows_its_forward_loop():
    graph, spec = build("while_grad_simple")
    forward = op(graph, "while/LoopCond")._control_flow_context
    backprop = op(graph, "gradients/b_count_2")._control_flow_context
    assert isinstance(backprop, WhileContext) and backprop.name == "gradients/while/while_context"
    assert forward.grad_state is None
    state = backprop.grad_state
    assert isinstance(state, GradLoopState)
    assert state.forward_context is forward and state.grad_context is backprop and state.outer_grad_state is None
    assert state.forward_index.op.name == "gradients/NextIteration"
    assert state.grad_index.op.name == "gradients/NextIteration_1"  # of gradients/Sub, the body's pivot
    assert [t.op.name for t in forward.loop_exits] == ["while/Exit", "while/Exit_1", "gradients/f_count_2"]
    assert list(state.history_map) == ["while/mul/Enter:0", "while/Identity_1:0"]
    assert state.history_map["while/Identity_1:0"].op.name == "gradients/while/mul_grad/Mul_1/StackPopV2"
    assert state.history_map["while/mul/Enter:0"].op.name == "gradients/while/mul_grad/Mul/Enter"
    assert [(s.name, m.name) for s, m in state.switch_map.items()] == [
        ("while/Switch_1", "gradients/while/Switch_1_grad/b_switch:0")]
    # The stack ops are in the loops' contexts; the stack itself outside both.
    assert op(graph, "gradients/while/mul_grad/Mul_1/StackPushV2")._control_flow_context is forward
    assert op(graph, "gradients/while/mul_grad/Mul_1/StackPopV2")._control_flow_context is backprop
    assert op(graph, "gradients/while/mul_grad/Mul_1/f_acc")._control_flow_context is None
    assert op(graph, "gradients/while/mul_grad/Mul_1/b_sync")._control_flow_context is backprop


def test_nested_loops_nest_their_backprop_loops():
    graph, _ = build("while_grad_nested")
    outer = op(graph, "while/LoopCond")._control_flow_context
    inner = op(graph, "while/while/LoopCond")._control_flow_context
    inner_backprop = op(graph, "gradients/b_count_6")._control_flow_context
    assert inner_backprop.name == "gradients/while/while/while_context"
    # The inner loop's iteration count of each outer iteration, popped in the outer backprop loop.
    assert op(graph, "gradients/b_count_5").inputs[0].op.type == "StackPopV2"
    assert inner_backprop.grad_state.forward_context is inner
    assert inner_backprop.outer_context.grad_state.forward_context is outer
    assert inner_backprop.grad_state.outer_grad_state is inner_backprop.outer_context.grad_state


def test_back_prop_false_gives_none():
    """As TF: nothing flows back through a loop built with back_prop=False."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        _, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [tf.constant(0), x],
                             back_prop=False)
        assert tf.gradients(v, [x]) == [None]
        assert tf.gradients(tf.reduce_sum(v), x, unconnected_gradients="zero")[0].op.type == "Const"
        (g,) = tf.gradients(v * x, [x])
        assert g.op.name == "gradients_2/mul_grad/Mul_1"


# -- the values --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in sorted(programs.PROGRAMS)])
def test_values_match_tensorflow(name):
    """The gradients (and for the training step, the loss before and after one step and
    every variable after it) equal TF's, from the same feeds and variable values."""
    graph, spec = build(name)
    fetches, _ = programs.split_fetches(spec)
    with graph.as_default():
        got = programs.rnn_graphs.run_program(tf, graph, dict(spec, fetches=fetches))
    expected = {k.split("/", 1)[1]: v for k, v in VALUES.items() if k.split("/", 1)[0] == name}
    assert sorted(got) == sorted(expected)
    for label, value in expected.items():
        np.testing.assert_allclose(got[label], value, rtol=1e-5, atol=1e-6, err_msg=label)
