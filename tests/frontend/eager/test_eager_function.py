"""tfe.defun / tf.function: one trace and one program per input signature; training steps
compiled whole; variables (and optimizer slots) bound to the eager variables."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe
from tfc.frontend.eager import execute


def test_trace_once_per_signature():
    calls = []

    @tfe.defun
    def f(x, y):
        calls.append(tf.executing_eagerly())
        return tf.reduce_sum(x * y) + 1.0

    a = tf.constant([1., 2.])
    before = execute.STATS["compiles"]
    for i in range(20):
        out = f(a, tf.constant([3., float(i)]))
    assert float(out) == 3. + 2. * 19 + 1.
    assert calls == [False] and f.stats["traces"] == 1 and f.stats["calls"] == 20
    assert execute.STATS["compiles"] == before  # no per-op kernels: the function is one program
    f(tf.constant([1., 2., 3.]), tf.constant([1., 1., 1.]))  # a new shape: a new trace
    assert f.stats["traces"] == 2
    f(np.ones(2, np.float32), np.ones(2, np.float32))  # numpy arrays are tensor arguments
    assert f.stats["traces"] == 2


def test_python_arguments_are_part_of_the_signature_and_structures_return():
    @tf.function
    def f(x, power, scale=1.0):
        return {"y": x ** power * scale, "n": power, "pair": (x, x + 1.)}

    x = tf.constant([2., 3.])
    out = f(x, 2)
    assert out["y"].numpy().tolist() == [4., 9.] and out["n"] == 2
    assert [t.numpy().tolist() for t in out["pair"]] == [[2., 3.], [3., 4.]]
    assert f(x, 3)["y"].numpy().tolist() == [8., 27.]
    assert f(x, 3, scale=2.0)["y"].numpy().tolist() == [16., 54.]
    assert f.stats["traces"] == 3
    f(x, 2)
    assert f.stats["traces"] == 3


def test_input_signature_and_captures():
    offset = tf.constant([10., 20., 30.])

    @tfe.defun(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return tf.reduce_sum(x) + offset

    assert f(tf.constant([1., 2., 3.])).numpy().tolist() == [16., 26., 36.]
    assert f(tf.constant([1., 2., 3., 4., 5.])).numpy().tolist() == [25., 35., 45.]
    assert f.stats["traces"] == 1
    with pytest.raises(ValueError, match="incompatible with input_signature"):
        f(tf.constant([[1.]]))


def test_variables_read_and_updated_in_place():
    v = tf.Variable([1., 2.])
    counter = tf.Variable(0)

    @tfe.defun
    def bump(delta):
        v.assign_add(delta)
        counter.assign_add(1)
        return v.read_value() * 2.

    snapshot = v.value()
    out = bump(tf.constant([1., 1.]))
    assert out.numpy().tolist() == [4., 6.]
    bump(tf.constant([1., 1.]))
    assert v.numpy().tolist() == [3., 4.] and int(counter) == 2
    assert snapshot.numpy().tolist() == [1., 2.]  # a value read before stays what it was
    assert bump.stats["traces"] == 1


def _training_data():
    rng = np.random.RandomState(3)
    x = rng.randn(64, 2).astype(np.float32)
    y = (x @ np.array([[2.], [-3.]], np.float32) + 1.0).astype(np.float32)
    return x, y


def test_defun_training_step_matches_the_eager_loop():
    x, y = _training_data()
    results = {}
    for mode in ("eager", "defun"):
        w = tf.Variable(np.zeros((2, 1), np.float32))
        b = tf.Variable(0.0)
        opt = tf.train.AdamOptimizer(0.1)

        def step(xs, ys):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) + b - ys))
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss

        run = tfe.defun(step) if mode == "defun" else step
        losses = [float(run(tf.constant(x), tf.constant(y))) for _ in range(100)]
        results[mode] = (losses, w.numpy(), b.numpy())
        if mode == "defun":
            assert run.stats["traces"] == 1  # Adam's slots were made eagerly on the first trace
            names = sorted(v.name for v in opt.variables())
            assert len(names) == 6 and names[-2:] == ["beta1_power:0", "beta2_power:0"]
            assert all(name.startswith("Variable/Adam") for name in names[:4])
    np.testing.assert_allclose(results["defun"][0], results["eager"][0], rtol=1e-4)
    np.testing.assert_allclose(results["defun"][1], results["eager"][1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(results["defun"][1].ravel(), [2., -3.], atol=5e-2)


def test_minimize_inside_defun_and_a_tape_around_a_defun():
    x, y = _training_data()
    w = tf.Variable(np.zeros((2, 1), np.float32))
    opt = tf.train.GradientDescentOptimizer(0.2)

    @tfe.defun
    def train():
        opt.minimize(lambda: tf.reduce_mean(tf.square(tf.matmul(x, w) - y)))

    for _ in range(200):
        train()
    best = np.linalg.lstsq(x, y, rcond=None)[0]
    np.testing.assert_allclose(w.numpy(), best, atol=1e-3)
    assert train.stats["traces"] == 1

    @tfe.defun
    def square(t):
        return t * t

    t = tf.constant(3.)
    with tf.GradientTape() as tape:
        tape.watch(t)
        s = square(t)  # a tape is recording: the ops run eagerly, so the tape sees them
    assert float(tape.gradient(s, t)) == 6.
    assert square.stats["eager_calls"] == 1


def test_defun_inside_defun_is_inlined_and_graph_mode_is_untouched():
    @tfe.defun
    def inner(a):
        return a + 1.

    @tfe.defun
    def outer(a):
        return inner(a) * 2.

    assert outer(tf.constant(1.)).numpy() == 4.
    assert inner.stats["traces"] == 0 and outer.stats["traces"] == 1
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        y = outer(p)  # in graph mode a defun builds its ops into the graph
        assert y.op.type == "Mul"
        with tf.Session() as sess:
            assert sess.run(y, {p: 2.}) == 6.


def test_return_structures_of_one_tensor_keep_their_type():
    @tf.function
    def as_list(x):
        return [x * 2.]

    @tf.function
    def nothing(x):
        x * 2.

    out = as_list(tf.constant(1.))
    assert isinstance(out, list) and float(out[0]) == 2.
    assert nothing(tf.constant(1.)) is None


def test_defun_as_a_method():
    class Model:
        def __init__(self, scale):
            self.w = tf.Variable(scale)

        @tfe.defun
        def __call__(self, x):
            return x * self.w

    a, b = Model(2.), Model(3.)
    assert float(a(tf.constant(1.))) == 2. and float(b(tf.constant(1.))) == 3.
    assert float(a(tf.constant(5.))) == 10.
    assert a.__call__.stats["traces"] == 1 and b.__call__.stats["traces"] == 1


def test_reads_and_writes_of_a_variable_run_in_program_order():
    v = tf.Variable([1., 2.])

    @tfe.defun
    def read_then_write():
        before = v.read_value()
        v.assign_add([1., 1.])
        return before, v * 1.

    @tfe.defun
    def write_then_read():
        v.assign([0., 0.])
        doubled = v * 2.
        v.assign([5., 5.])
        return doubled, v.read_value()

    before, after = read_then_write()
    assert before.numpy().tolist() == [1., 2.] and after.numpy().tolist() == [2., 3.]
    doubled, last = write_then_read()
    assert doubled.numpy().tolist() == [0., 0.] and last.numpy().tolist() == [5., 5.]
    assert v.numpy().tolist() == [5., 5.]
