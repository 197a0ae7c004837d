"""TF1 control flow (Switch/Merge conds, Enter/Merge/Switch/LoopCond/NextIteration/Exit
loops) lowered to the IR's ``if``/``while`` (tfc/passes/lower_control.py): TF-written frozen
graphs run to TensorFlow's outputs (fixtures: tests/fixtures/make_tf_control_flow_frozen.py),
TF2's functional If/While (bodies in the GraphDef's function library) lower the same way,
graphs built with tfc's tf.cond / tf.while_loop compile to one native program, and a
structure that is not a cond or a loop is refused naming the op."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.passes.lower import UnsupportedOpsError, lower_graph
from tfc.protos import GraphDef

GRAPHS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "graphs")
MODELS = ["cond", "cond_tuple", "while", "nested", "max_iter", "lstm", "cond_v2", "while_v2", "lstm_v2"]
# Gradients through while loops, as TF builds them: stacks of forward values
# (StackV2/StackPushV2/StackPopV2, tfc/passes/lower_stacks.py), TensorArray gradients.
GRADIENT_MODELS = ["grad_while", "grad_max_iter", "grad_nested", "grad_cond", "grad_unused", "grad_lstm"]


def _load(name: str):
    data = np.load(os.path.join(GRAPHS, f"cf_{name}.npz"))
    graph_def = GraphDef()
    with open(os.path.join(GRAPHS, f"cf_{name}.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    return graph_def, data


@pytest.mark.parametrize("name", MODELS + GRADIENT_MODELS)
def test_tf_written_control_flow_runs_to_tensorflows_outputs(name):
    # v1: Switch/Merge/Enter/Exit/NextIteration/LoopCond; v2: If / StatelessWhile whose
    # bodies are FunctionDefs of the GraphDef's library.
    graph_def, data = _load(name)
    assert str(data["encoding"]) == ("v2" if name.endswith("_v2") else "v1")
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
        inputs = [graph.get_tensor_by_name(n) for n in data["input_names"]]
        outputs = [graph.get_tensor_by_name(n) for n in data["output_names"]]
        with tf.Session(graph=graph) as sess:
            for s in range(int(data["sets"])):
                got = sess.run(outputs, {t: data[f"in{s}_{i}"] for i, t in enumerate(inputs)})
                for i, value in enumerate(got):
                    expected = data[f"out{s}_{i}"]
                    assert np.asarray(value).dtype == expected.dtype
                    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=f"{name} set {s}")


def _ir_ops(fetches, feeds):
    from tfc.passes.lower import FeedSpec

    specs = [FeedSpec(t, t.dtype, tuple(d if d is not None else 2 for d in t.shape.as_list())) for t in feeds]
    lowered = lower_graph(fetches, (), specs)
    return [op.name for op in lowered.module.main.walk()], lowered


def test_a_cond_becomes_one_if_whose_regions_hold_the_branches():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        a, b = tf.cond(p, lambda: (tf.tanh(x), x * 2.0), lambda: (x - 1.0, tf.exp(x)))
        names, lowered = _ir_ops([a, b], [x, p])
    assert names.count("if") == 1  # both Merges of the cond join one if
    top = [op.name for op in lowered.module.main.body.ops]
    assert "tanh" not in top and "exp" not in top  # each branch's ops live in its region
    text = str(lowered.module)
    assert "tanh" in text.split("} {")[0] and "exp" in text.split("} {")[1]


def test_a_while_loop_becomes_one_while_and_runs_zero_or_more_times():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        x = tf.placeholder(tf.float32, [None], name="x")
        i, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.5 + x),
                               [tf.constant(0), tf.zeros_like(x)])
        names, _ = _ir_ops([i, acc], [n, x])
        assert names.count("while") == 1
        xs = np.array([1.0, -2.0], np.float32)
        with tf.Session() as sess:
            for count in (0, 1, 4):
                got_i, got_acc = sess.run([i, acc], {n: count, x: xs})
                expected = np.zeros(2)
                for _ in range(count):
                    expected = expected * 0.5 + xs
                assert got_i == count
                np.testing.assert_allclose(got_acc, expected, rtol=1e-6)


def test_side_effects_in_a_branch_happen_only_when_it_is_taken():
    # TF: ops created inside a branch run only if the branch is taken (v1: they hang off
    # the branch's pivot), so the assign_add under control_dependencies runs only when p.
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        v = tf.Variable(np.zeros(2, np.float32), name="v")

        def taken():
            with tf.control_dependencies([tf.assign_add(v, [1.0, 2.0])]):
                return tf.identity(v.read_value() * 1.0)

        y = tf.cond(p, taken, lambda: tf.zeros([2]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(y, {p: False}), [0, 0])
            np.testing.assert_array_equal(sess.run(v), [0, 0])
            np.testing.assert_array_equal(sess.run(y, {p: True}), [1, 2])
            np.testing.assert_array_equal(sess.run(y, {p: True}), [2, 4])
            np.testing.assert_array_equal(sess.run(v), [2, 4])


def test_a_loop_inside_a_cond_inside_a_loop():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [], name="n")

        def outer_body(i, total):
            inner = tf.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + tf.cast(j, tf.float32)),
                                  [tf.constant(0), tf.constant(0.0)])[1]
            total = tf.cond(tf.equal(i % 2, 0), lambda: total + inner, lambda: total - 1.0)
            return i + 1, total

        _, total = tf.while_loop(lambda i, t: i < n, outer_body, [tf.constant(0), tf.constant(0.0)])
        with tf.Session() as sess:
            expected = 0.0
            for i in range(6):
                expected = expected + sum(range(i)) if i % 2 == 0 else expected - 1.0
            assert sess.run(total, {n: 6}) == pytest.approx(expected)


def test_a_merge_of_values_from_no_cond_is_refused_naming_the_op():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        merged = tf.raw_ops.Merge(inputs=[x, x * 2.0], name="odd_merge") if hasattr(tf, "raw_ops") else None
        if merged is None:
            from tfc.frontend.op_helper import apply_op

            merged = apply_op("Merge", [[x, x * 2.0]], name="odd_merge")
        out = merged[0] if isinstance(merged, (list, tuple)) else merged.outputs[0]
        with pytest.raises(UnsupportedOpsError, match="'odd_merge' .*joins a value that comes from no branch"):
            _ir_ops([out], [x])


@pytest.mark.parametrize("taken", [True, False])
def test_gradients_through_a_cond_compile_and_match_the_derivative(taken):
    # TF 1.15's cond gradient: a Switch of the incoming gradient (Merge_grad/cond_grad), the
    # branches' gradients, Merges of them (Switch_grad/cond_grad) with zeros for the branch
    # not taken. The loss squares the cond's result, so the gradient cond needs the forward
    # cond's result and reads the forward branch's values: two ifs on one predicate, the
    # first yielding those values (generations of conds on one predicate).
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        w = tf.constant([0.5, -2.0, 3.0], name="w")
        y = tf.cond(p, lambda: tf.tanh(x) * w, lambda: x * x)
        dx, dw = tf.gradients(tf.reduce_sum(y * y), [x, w])
        names, _ = _ir_ops([dx, dw], [x, p])
        assert names.count("if") == 2
        xs = np.array([0.3, -1.2, 2.0], np.float32)
        with tf.Session() as sess:
            got_dx, got_dw = sess.run([dx, dw], {x: xs, p: taken})
    weights = np.array([0.5, -2.0, 3.0])
    if taken:
        value = np.tanh(xs) * weights
        np.testing.assert_allclose(got_dx, 2 * value * weights * (1 - np.tanh(xs) ** 2), rtol=1e-5)
        np.testing.assert_allclose(got_dw, 2 * value * np.tanh(xs), rtol=1e-5)
    else:
        np.testing.assert_allclose(got_dx, 4 * xs ** 3, rtol=1e-5)
        np.testing.assert_array_equal(got_dw, [0, 0, 0])


def test_training_through_a_cond_updates_only_what_the_taken_branch_used():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        a = tf.Variable(2.0, name="a")
        b = tf.Variable(-1.0, name="b")
        loss = tf.cond(p, lambda: tf.square(a - 5.0), lambda: tf.square(b + 3.0))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step, {p: True})
            assert sess.run(a) == pytest.approx(2.0 - 0.1 * 2 * (2.0 - 5.0))
            assert sess.run(b) == pytest.approx(-1.0)
            sess.run(step, {p: False})
            assert sess.run(b) == pytest.approx(-1.0 - 0.1 * 2 * (-1.0 + 3.0))
            assert sess.run(a) == pytest.approx(2.6)


def test_gradients_of_a_tfc_built_while_loop_compile_to_the_derivative():
    # d/dx of x**3 computed as v *= x three times: 3 x**2.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [tf.constant(0), tf.constant(1.0)])
        (dx,) = tf.gradients(y, x)
        with tf.Session() as sess:
            assert sess.run(dx, {x: 1.5}) == pytest.approx(3 * 1.5 ** 2)


def test_a_loop_variable_that_grows_in_a_counted_loop_is_unrolled():
    # TF's shape_invariants example: m doubles its rows each of 3 iterations (TF 1.15
    # docs of tf.while_loop). The loop counts to a constant, so tfc unrolls it.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        i, m = tf.while_loop(lambda i, m: i < 3, lambda i, m: [i + 1, tf.concat([m, m * 2.0], axis=0)],
                             [tf.constant(0), x], shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])])
        (dx,) = tf.gradients(tf.reduce_sum(m), x)
        value = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
        expected = value
        for _ in range(3):
            expected = np.concatenate([expected, expected * 2.0], axis=0)
        with tf.Session() as sess:
            got_i, got_m = sess.run([i, m], {x: value})
            assert got_i == 3 and got_m.shape == (16, 2)
            np.testing.assert_array_equal(got_m, expected)
            np.testing.assert_array_equal(sess.run(dx, {x: value}), np.full((2, 2), 27.0, np.float32))


def test_a_loop_variable_that_grows_in_a_data_dependent_loop_is_refused_naming_the_loop():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [], name="n")
        i, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.concat([y, y], 0)),
                             [tf.constant(0), tf.constant([1.0])],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
        with tf.Session() as sess:
            with pytest.raises(UnsupportedOpsError, match=r"'while/Merge_1' \(Merge\) at .*changes from f32\[1\] to"
                                                          r" f32\[2\] in an iteration: .* unrolls a loop whose"
                                                          r" variables grow when it counts to a limit known at"
                                                          r" compile time \(256 iterations at most\)"):
                sess.run(y, {n: 3})


def test_a_run_time_error_inside_a_branch_names_the_op_inside_and_only_when_taken():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        i = tf.placeholder(tf.int32, [1], name="i")
        params = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        y = tf.cond(p, lambda: tf.gather(params, i, name="lookup"), lambda: tf.zeros([1, 2]))
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {p: False, i: [5]}), [[0, 0]])  # the gather never ran
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 5 is not in \[0, 2\) "
                                                                     r"\(in 'cond/lookup'\)") as info:
                sess.run(y, {p: True, i: [5]})
            assert info.value.op is not None and info.value.op.name == "cond/lookup"


def test_branches_giving_different_shapes_are_refused_naming_the_cond():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.cond(p, lambda: x * 2.0, lambda: tf.zeros([1, 2]))
        with tf.Session() as sess:
            with pytest.raises(UnsupportedOpsError, match=r"'cond/Merge' \(Merge\) at .*result 0 of the cond is"
                                                          r" f32\[s0,2\] when the predicate is true and f32\[1,2\]"):
                sess.run(y, {p: True, x: np.ones((3, 2), np.float32)})


@pytest.mark.parametrize("k, expected", [(0, 10.0), (1, 20.0), (2, 30.0), (7, -1.0)])
def test_case_runs_the_first_true_branch_or_the_default(k, expected):
    # TF's tf.case: nested conds on the predicates in order (case/cond/...), default last.
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int32, [], name="i")
        y = tf.case([(tf.equal(i, 0), lambda: tf.constant(10.0)), (tf.equal(i, 1), lambda: tf.constant(20.0)),
                     (tf.equal(i, 2), lambda: tf.constant(30.0))], default=lambda: tf.constant(-1.0))
        with tf.Session() as sess:
            assert sess.run(y, {i: k}) == expected


def test_a_loose_shape_invariant_with_a_steady_shape_compiles():
    # shape_invariants may relax a variable's static shape; the values keep their shape.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        _, y = tf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, tf.tanh(v) + 0.5), [tf.constant(0), x],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
        with tf.Session() as sess:
            xs = np.array([0.1, -0.4, 2.0], np.float32)
            expected = xs.astype(np.float64)
            for _ in range(4):
                expected = np.tanh(expected) + 0.5
            np.testing.assert_allclose(sess.run(y, {x: xs}), expected, rtol=1e-6)


@pytest.mark.parametrize("taken", [True, False])
def test_a_gradient_constant_waiting_on_the_gradient_switch_does_not_make_a_cycle(taken):
    # Square's gradient makes its Const under control_dependencies([grad]): a control edge
    # from the cond gradient's Switch to a constant used inside the gradient's branch (the
    # fuzzer found it, seeds 21657 and 24378). A Switch orders nothing: no cycle.
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [3], name="x")
        y = tf.cond(p, lambda: tf.square(x), lambda: tf.nn.leaky_relu(x, 0.2))
        (dx,) = tf.gradients(tf.reduce_sum(y * 3.0), [x])
        xs = np.array([1.5, -2.0, 0.5], np.float32)
        with tf.Session() as sess:
            got = sess.run(dx, {p: taken, x: xs})
    expected = 6.0 * xs if taken else 3.0 * np.where(xs > 0, 1.0, 0.2)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_a_loop_gradient_with_no_compile_time_bound_is_refused_naming_the_loop():
    # TF's stacks grow as the loop runs; compiled ones are sized by the loop's trip-count
    # bound. ``i < n`` with a fed n has none.
    graph_def, data = _load("grad_fed_bound")
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            with pytest.raises(UnsupportedOpsError) as info:
                sess.run("dx:0", {"x:0": data["in0_0"], "n:0": data["in0_1"]})
    message = str(info.value)
    assert "'while/LoopCond' (LoopCond)" in message
    assert "the gradient of while loop 'while/while_context' keeps values of each iteration on stack" \
           " 'gradients/while/mul_grad/Mul_1/f_acc'" in message
    assert "pass maximum_iterations (a constant) to tf.while_loop" in message
