"""tf.nn.rnn_cell and tf.nn.static_rnn / static_bidirectional_rnn: the graphs tfc builds are
TensorFlow 1.15's, node for node (names, op types, inputs, attrs, dtypes, static shapes), with
the same variables and collections, and compute TensorFlow's values, before and after a
training step (tests/fixtures/rnn_graphs.json and rnn_values.npz, made by
tests/fixtures/make_tf_rnn_graphs.py with real TensorFlow; TensorFlow is not needed here)."""
import importlib.util
import json
import os
import re

import numpy as np
import pytest

import tfc.compat.v1 as tf

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_rnn_graphs", os.path.join(_FIXTURES, "make_tf_rnn_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "rnn_graphs.json")) as _f:
    FIXTURE = json.load(_f)
VALUES = dict(np.load(os.path.join(_FIXTURES, "rnn_values.npz")))

rnn_cell = tf.nn.rnn_cell


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        spec = programs.PROGRAMS[name](tf)
    return graph, spec


# -- the graphs, node for node -----------------------------------------------------------------
def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(programs.PROGRAMS)
    assert len(FIXTURE["programs"]) >= 19


# Where the fixture's TF 2.x gradient code differs from TF 1.15's (which tfc builds): the
# initial gradient (2.x: ``gradients/grad_ys_0`` is a Fill of ``grad_ys_0/Const``; 1.15: a Const
# ``grad_ys_0`` filled by ``gradients/Fill``) and the gradient of an Add of a scalar constant
# (2.x: Sum over static reduction indices; 1.15: BroadcastGradientArgs, two Sum/Reshape pairs).
_TF2_GRADIENT_NODES = re.compile(
    r"^gradients/(grad_ys_0(/Const)?|Fill|add_grad/tuple/.*"
    r"|rnn/basic_lstm_cell/Add(_\d+)?_grad/(Sum|Sum_1|Reshape|Reshape_1|BroadcastGradientArgs"
    r"|Sum/reduction_indices|tuple/.*))$")


def _comparable(nodes, name):
    if FIXTURE["programs"][name]["forward_only"]:
        return [n for n in nodes if not n["name"].startswith("gradients/")]
    if name != "train_step":
        return nodes
    return [n for n in nodes if not _TF2_GRADIENT_NODES.match(n["name"])]


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_matches_tensorflow(name):
    """Every node TF builds, in TF's order, with TF's inputs, attrs, dtypes and shapes (for
    the training step, all but the few gradient nodes where TF 2.x differs from 1.15)."""
    expected = _comparable(FIXTURE["programs"][name]["nodes"], name)
    graph, _ = build(name)
    got = _comparable(programs._record_graph(graph), name)
    assert [(n["name"], n["op"]) for n in got] == [(n["name"], n["op"]) for n in expected]
    for got_node, expected_node in zip(got, expected):
        assert got_node == expected_node, got_node["name"]


def test_training_graph_differs_from_tf2_only_where_tf_1_15_did():
    """The excluded gradient nodes are TF 1.15's: grad_ys_0 a Const filled by gradients/Fill,
    and Add's gradient through BroadcastGradientArgs with both Sum/Reshape pairs."""
    graph, _ = build("train_step")
    assert graph.get_operation_by_name("gradients/grad_ys_0").type == "Const"
    fill = graph.get_operation_by_name("gradients/Fill")
    assert fill.type == "Fill" and [t.name for t in fill.inputs] == ["gradients/Shape:0", "gradients/grad_ys_0:0"]
    args = graph.get_operation_by_name("gradients/rnn/basic_lstm_cell/Add_grad/BroadcastGradientArgs")
    assert [t.name for t in args.inputs] == ["gradients/rnn/basic_lstm_cell/Add_grad/Shape:0",
                                             "gradients/rnn/basic_lstm_cell/Add_grad/Shape_1:0"]
    assert graph.get_operation_by_name("gradients/rnn/basic_lstm_cell/Add_grad/Reshape_1").type == "Reshape"
    expected_names = {n["name"] for n in FIXTURE["programs"]["train_step"]["nodes"]}
    got_names = {op.name for op in graph.get_operations()}
    assert {n for n in expected_names ^ got_names if not _TF2_GRADIENT_NODES.match(n)} == set()


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_variables_and_collections_match_tensorflow(name):
    """GLOBAL_VARIABLES (names, shapes, order) and TRAINABLE_VARIABLES as TF."""
    expected = FIXTURE["programs"][name]
    graph, spec = build(name)
    with graph.as_default():
        assert [[v.name, v.shape.as_list()] for v in tf.global_variables()] == expected["variables"]
        assert [v.name for v in tf.trainable_variables()] == expected["trainable"]
    assert {k: t.name for k, t in spec["fetches"].items()} == expected["fetches"]


# -- the values -----------------------------------------------------------------------------------
# Includes training through static_rnn's nested per-step conds (sequence_length): TF's cond
# gradients, lowered with branch values exported across generations and nesting levels.
_VALUE_PROGRAMS = [name for name in sorted(programs.PROGRAMS) if not FIXTURE["programs"][name]["random"]]


@pytest.mark.parametrize("name", _VALUE_PROGRAMS)
def test_values_match_tensorflow(name):
    """Outputs and final states (and, for train_step, the loss before and after one
    GradientDescent step and every variable after it) equal TF's (same variable values)."""
    graph, spec = build(name)
    with graph.as_default():
        got = programs.run_program(tf, graph, spec)
    expected = {k.split("/", 1)[1]: v for k, v in VALUES.items() if k.split("/", 1)[0] == name}
    assert sorted(got) == sorted(expected)
    for label, value in expected.items():
        np.testing.assert_allclose(got[label], value, rtol=1e-5, atol=1e-6, err_msg=label)


def test_fixture_spot_checks():
    """What TF builds, checked on the fixture itself: static_rnn's per-step op names share one
    kernel read, the read op is not colocated (static_rnn's caching device), MultiRNNCell's
    ops sit under rnn/rnn/multi_rnn_cell/cell_<i>/ while its variables are
    rnn/multi_rnn_cell/cell_<i>/..., and keep_prob 1.0 adds only DropoutWrapperInit consts."""
    nodes = {n["name"]: n for n in FIXTURE["programs"]["static_rnn_basic_lstm"]["nodes"]}
    assert nodes["rnn/basic_lstm_cell/MatMul_2"]["inputs"] == ["rnn/basic_lstm_cell/concat_2",
                                                               "rnn/basic_lstm_cell/kernel/read"]
    assert "_class" not in nodes["rnn/basic_lstm_cell/kernel/read"]["attrs"]
    assert nodes["rnn/basic_lstm_cell/Add"]["op"] == "Add"  # math_ops.add in TF 1.15
    multi = FIXTURE["programs"]["static_rnn_multi"]
    assert "rnn/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/MatMul_2" in {n["name"] for n in multi["nodes"]}
    assert multi["variables"][2] == ["rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel:0", [7, 12]]
    keep1 = {n["name"] for n in FIXTURE["programs"]["static_rnn_dropout_keep1"]["nodes"]}
    plain = {n["name"] for n in FIXTURE["programs"]["static_rnn_basic_lstm"]["nodes"]}
    assert {n.replace("rnn/DropoutWrapperZeroState/", "rnn/") for n in keep1} - plain == {
        "DropoutWrapperInit/Const", "DropoutWrapperInit/Const_1", "DropoutWrapperInit/Const_2"}


# -- behaviour (each checked against TensorFlow 1.15's rnn_cell_impl / rnn.py) ---------------------
def test_state_and_output_sizes():
    """TF: BasicLSTMCell/LSTMCell state_size is LSTMStateTuple(units, units) (num_proj: (units,
    proj), output num_proj), concatenated 2 * units with state_is_tuple=False; MultiRNNCell's
    is the tuple of its cells' and its output_size the last cell's."""
    with tf.Graph().as_default():
        assert rnn_cell.BasicRNNCell(5).state_size == 5 and rnn_cell.GRUCell(5).output_size == 5
        lstm = rnn_cell.BasicLSTMCell(4)
        assert lstm.state_size == rnn_cell.LSTMStateTuple(4, 4) and type(lstm.state_size).__name__ == "LSTMStateTuple"
        assert rnn_cell.BasicLSTMCell(4, state_is_tuple=False).state_size == 8
        proj = rnn_cell.LSTMCell(4, num_proj=2)
        assert (proj.state_size, proj.output_size) == (rnn_cell.LSTMStateTuple(4, 2), 2)
        assert rnn_cell.LSTMCell(4, num_proj=2, state_is_tuple=False).state_size == 6
        multi = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(2), rnn_cell.GRUCell(3)])
        assert multi.state_size == (rnn_cell.LSTMStateTuple(2, 2), 3) and multi.output_size == 3
        assert multi.name == "multi_rnn_cell_1"  # keras names are 1-based per graph
        assert rnn_cell.MultiRNNCell([rnn_cell.BasicRNNCell(2)] * 2, state_is_tuple=False).state_size == 4


def test_lstm_state_tuple():
    """TF: LSTMStateTuple is a namedtuple (c, h) with a dtype property that checks c and h agree."""
    t = rnn_cell.LSTMStateTuple(1, 2)
    assert repr(t) == "LSTMStateTuple(c=1, h=2)" and (t.c, t.h) == (1, 2) and t._fields == ("c", "h")
    with tf.Graph().as_default():
        c, h = tf.zeros([1, 2]), tf.zeros([1, 2])
        assert rnn_cell.LSTMStateTuple(c, h).dtype == tf.float32
        with pytest.raises(TypeError, match="Inconsistent internal state"):
            rnn_cell.LSTMStateTuple(c, tf.zeros([1, 2], tf.float64)).dtype


def test_zero_state_with_a_tensor_batch_size():
    """TF: zero_state(batch_tensor) nests <Cell>ZeroState scopes under MultiRNNCellZeroState and
    leaves the batch dimension unknown."""
    with tf.Graph().as_default():
        multi = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(2), rnn_cell.GRUCell(3)])
        batch = tf.placeholder(tf.int32, [])
        (lstm_state, gru_state) = multi.zero_state(batch, tf.float32)
        assert [t.name for t in (lstm_state.c, lstm_state.h, gru_state)] == [
            "MultiRNNCellZeroState/BasicLSTMCellZeroState/zeros:0",
            "MultiRNNCellZeroState/BasicLSTMCellZeroState/zeros_1:0", "MultiRNNCellZeroState/GRUCellZeroState/zeros:0"]
        assert lstm_state.c.shape.as_list() == [None, 2] and gru_state.shape.as_list() == [None, 3]
        x = tf.placeholder(tf.float32, [None, 3])
        zeros = rnn_cell.GRUCell(3).zero_state(tf.shape(x)[0], tf.float32)  # the batch of a fed tensor
        assert zeros.name == "GRUCellZeroState/zeros:0"
        with tf.Session() as sess:
            value = sess.run(zeros, {x: np.ones((5, 3), np.float32)})
        assert value.shape == (5, 3) and not value.any()


def test_cell_weights_and_names_after_static_rnn():
    """TF: the cell's name is its keras name (basic_lstm_cell_1), its scope_name the variable
    scope (rnn/basic_lstm_cell); trainable_weights are kernel then bias."""
    with tf.Graph().as_default():
        xs = [tf.placeholder(tf.float32, [2, 3]) for _ in range(2)]
        cell = rnn_cell.BasicLSTMCell(4)
        tf.nn.static_rnn(cell, xs, dtype=tf.float32)
        assert (cell.name, cell.scope_name, cell.built, cell.dtype) == ("basic_lstm_cell_1", "rnn/basic_lstm_cell",
                                                                         True, "float32")
        assert [v.name for v in cell.trainable_weights] == ["rnn/basic_lstm_cell/kernel:0",
                                                            "rnn/basic_lstm_cell/bias:0"]


def test_second_static_rnn_with_a_new_cell_needs_reuse():
    """TF: a second static_rnn in the same scope with a new cell fails (the variables exist);
    the same cell object reuses its variables and its first name scope; AUTO_REUSE shares."""
    with tf.Graph().as_default():
        xs = [tf.placeholder(tf.float32, [2, 3]) for _ in range(2)]
        cell = rnn_cell.BasicLSTMCell(4)
        tf.nn.static_rnn(cell, xs, dtype=tf.float32)
        with pytest.raises(ValueError, match=r"Variable rnn/basic_lstm_cell/kernel already exists, disallowed\. "
                                             r"Did you mean to set reuse=True or reuse=tf\.AUTO_REUSE in VarScope\?"):
            tf.nn.static_rnn(rnn_cell.BasicLSTMCell(4), xs, dtype=tf.float32)
        outputs, _ = tf.nn.static_rnn(cell, xs, dtype=tf.float32, scope="again")
        assert outputs[0].name == "rnn/basic_lstm_cell/Mul_8:0"
        assert [v.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]
    with tf.Graph().as_default():
        xs = [tf.placeholder(tf.float32, [2, 3]) for _ in range(2)]
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            first, _ = tf.nn.static_rnn(rnn_cell.GRUCell(4), xs, dtype=tf.float32)
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            second, _ = tf.nn.static_rnn(rnn_cell.GRUCell(4), xs, dtype=tf.float32)
        assert (first[1].name, second[1].name) == ("shared/rnn/gru_cell/add_1:0", "shared_1/rnn/gru_cell/add_1:0")
        assert len(tf.global_variables()) == 4


def test_multi_rnn_cell_called_directly():
    """TF: MultiRNNCell's variables are multi_rnn_cell/cell_<i>/<cell>/...; its weights are its
    cells' in order; the new state is a tuple of the cells' states (LSTMStateTuple kept);
    with state_is_tuple=False the states are sliced from and concatenated into one tensor."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        multi = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(2), rnn_cell.GRUCell(3)])
        out, state = multi(x, multi.zero_state(tf.shape(x)[0], tf.float32))
        assert out.name == "multi_rnn_cell/cell_1/gru_cell/add:0"
        assert type(state) is tuple and type(state[0]).__name__ == "LSTMStateTuple"
        assert [v.name for v in multi.trainable_weights] == [
            "multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0", "multi_rnn_cell/cell_0/basic_lstm_cell/bias:0",
            "multi_rnn_cell/cell_1/gru_cell/gates/kernel:0", "multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
            "multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0", "multi_rnn_cell/cell_1/gru_cell/candidate/bias:0"]
        flat = rnn_cell.MultiRNNCell([rnn_cell.BasicRNNCell(2), rnn_cell.BasicRNNCell(2)], state_is_tuple=False)
        _, flat_state = flat(x, flat.zero_state(2, tf.float32))
        assert (flat_state.name, flat_state.shape.as_list()) == ("multi_rnn_cell_1/concat:0", [2, 4])


def test_activation_and_concatenated_lstm_state():
    """TF: activation= replaces tanh (BasicRNNCell(activation=relu) ends in Relu); LSTMCell with
    state_is_tuple=False slices c and m out of one state and concatenates the new ones."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        cell = rnn_cell.BasicRNNCell(3, activation=tf.nn.relu, name="relu_cell")
        out, _ = cell(x, cell.zero_state(2, tf.float32))
        assert (out.op.type, out.name) == ("Relu", "relu_cell/Relu:0")
        lstm = rnn_cell.LSTMCell(2, state_is_tuple=False, num_proj=1)
        zero = lstm.zero_state(2, tf.float32)
        m, state = lstm(x, zero)
        assert (lstm.state_size, zero.shape.as_list(), m.shape.as_list()) == (3, [2, 3], [2, 1])
        assert (state.name, state.shape.as_list()) == ("lstm_cell/concat_1:0", [2, 3])


def test_residual_wrapper_adds_inputs():
    """TF: ResidualWrapper returns inputs + outputs (an AddV2 named 'add' in the caller's scope)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        cell = rnn_cell.ResidualWrapper(rnn_cell.BasicRNNCell(3))
        out, state = cell(x, cell.zero_state(2, tf.float32))
        assert (out.name, out.op.type, state.name) == ("add:0", "AddV2", "basic_rnn_cell/Tanh:0")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            xv = np.ones((2, 3), np.float32)
            o, s = sess.run([out, state], {x: xv})
        np.testing.assert_allclose(o, xv + s, rtol=1e-6)


def test_dropout_wrapper_output_dropout_values():
    """TF: DropoutWrapper(output_keep_prob=0.5) zeroes outputs or scales them by 1 / 0.5, and
    leaves the state alone; the seeds come from seed + md5 of the salt (dropout seed2)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [64, 3])
        inner = rnn_cell.BasicRNNCell(8)
        cell = rnn_cell.DropoutWrapper(inner, output_keep_prob=0.5, seed=3)
        out, state = cell(x, cell.zero_state(64, tf.float32))
        random_op = [op for op in tf.get_default_graph().get_operations() if op.type == "RandomUniform"
                     and op.name.startswith("dropout/")][0]
        assert (random_op.get_attr("seed"), random_op.get_attr("seed2")) == (87654321, 787469663)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            o, s = sess.run([out, state], {x: np.random.RandomState(0).randn(64, 3).astype(np.float32)})
        kept = o != 0
        np.testing.assert_allclose(o[kept], 2.0 * s[kept], rtol=1e-6)
        assert 0.3 < kept.mean() < 0.7


def test_sequence_length_copies_state_through():
    """TF: past a row's sequence_length, static_rnn's outputs are zeros and the state is the
    state at its last step (fixture: lengths [2, 3])."""
    prefix = "static_rnn_sequence_length/"
    out1, out2, state = (VALUES[prefix + k] for k in ("output_1", "output_2", "state"))
    assert np.all(out2[0] == 0) and np.any(out2[1] != 0)
    np.testing.assert_array_equal(state[0], out1[0])
    np.testing.assert_array_equal(state[1], out2[1])


def test_training_changes_every_variable():
    """TF: one GradientDescent step through the unrolled LSTM updates the shared kernel and
    bias and the readout, and lowers the loss (fixture values)."""
    prefix = "train_step/"
    assert VALUES[prefix + "after/loss"] < VALUES[prefix + "before/loss"]
    for name, shape in FIXTURE["programs"]["train_step"]["variables"]:
        start = programs.variable_value(name, shape)
        assert np.abs(VALUES[prefix + "var/" + name] - start).max() > 1e-4, name


@pytest.mark.parametrize("build_call, error, message", [
    (lambda x: tf.nn.static_rnn(rnn_cell.BasicRNNCell(2), [x]), ValueError,
     "If no initial_state is provided, dtype must be specified"),
    (lambda x: tf.nn.static_rnn(rnn_cell.BasicRNNCell(2), x, dtype=tf.float32), TypeError,
     "inputs must be a sequence"),
    (lambda x: tf.nn.static_rnn(rnn_cell.BasicRNNCell(2), [], dtype=tf.float32), ValueError,
     "inputs must not be empty"),
    (lambda x: tf.nn.static_rnn(lambda a, b: a, [x], dtype=tf.float32), TypeError,
     "The argument 'cell' .* is not an RNNCell: 'output_size' property is missing, 'state_size' property is "
     "missing, either 'zero_state' or 'get_initial_state' method is required"),
    (lambda x: rnn_cell.BasicRNNCell(2)(tf.placeholder(tf.float32, [2, None]), tf.zeros([2, 2])), ValueError,
     r"Expected inputs.shape\[-1\] to be known, saw shape: \(2, None\)"),
    (lambda x: rnn_cell.BasicRNNCell(2)(tf.placeholder(tf.float32, [2, 3, 3]), tf.zeros([2, 2])), ValueError,
     "expected ndim=2, found ndim=3"),
    (lambda x: rnn_cell.BasicRNNCell(2)(tf.placeholder(tf.int32, [2, 3]), tf.zeros([2, 2], tf.int32)), ValueError,
     "RNN cell only supports floating point inputs, but saw dtype: <dtype: 'int32'>"),
    (lambda x: rnn_cell.BasicRNNCell(2, dtype=tf.int32), ValueError,
     "RNN cell only supports floating point inputs, but saw dtype: <dtype: 'int32'>"),
    (lambda x: rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(2), input_keep_prob=2.0), ValueError,
     "Parameter input_keep_prob must be between 0 and 1: 2"),
    (lambda x: rnn_cell.MultiRNNCell([]), ValueError, "Must specify at least one cell for MultiRNNCell."),
    (lambda x: rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(2)], state_is_tuple=False), ValueError,
     r"Some cells return tuples of states, but the flag state_is_tuple is not set.  State sizes are: "
     r"\[LSTMStateTuple\(c=2, h=2\)\]"),
])
def test_errors_as_tensorflow(build_call, error, message):
    """TF 1.15's exceptions and messages (static_rnn's argument checks, the cells' build and
    dtype checks, the wrappers' and MultiRNNCell's constructor checks)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        with pytest.raises(error, match=message):
            build_call(x)


def test_bidirectional_with_sequence_length_reverses_each_row_up_to_its_length():
    """The backward direction reads each row reversed up to its length (TF's _reverse_seq: a
    ReverseSequence of the stacked steps); a full-length row is the plain bidirectional
    rnn's (tests/frontend/test_dynamic_rnn.py compares the whole graph with TensorFlow's)."""
    with tf.Graph().as_default() as graph:
        xs = [tf.placeholder(tf.float32, [2, 3], name=f"x{t}") for t in range(3)]
        fw, bw = rnn_cell.GRUCell(2), rnn_cell.GRUCell(2)
        with tf.variable_scope("a"):
            outputs, _, _ = tf.nn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32, sequence_length=[3, 1])
        with tf.variable_scope("a", reuse=True):
            plain, _, _ = tf.nn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32)
        assert [op.name for op in graph.get_operations() if op.type == "ReverseSequence"] == [
            "a/bidirectional_rnn/bw/ReverseSequence", "a/ReverseSequence"]
        values = {x: np.random.default_rng(t).standard_normal((2, 3)).astype(np.float32) for t, x in enumerate(xs)}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, expected = sess.run([outputs, plain], values)
    for step in range(3):
        np.testing.assert_allclose(got[step][0], expected[step][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1][1], np.zeros(4, np.float32))


def test_rnn_cell_namespace():
    """tf.nn.rnn_cell holds TF 1.15's classes; static_rnn and static_bidirectional_rnn are in tf.nn."""
    assert sorted(n for n in dir(tf.nn.rnn_cell) if not n.startswith("_")) == sorted([
        "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell", "LSTMStateTuple",
        "MultiRNNCell", "RNNCell", "ResidualWrapper"])
    assert callable(tf.nn.static_rnn) and callable(tf.nn.static_bidirectional_rnn)
    assert issubclass(tf.nn.rnn_cell.BasicLSTMCell, tf.nn.rnn_cell.RNNCell)
