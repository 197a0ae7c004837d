"""Eager tensors: values, Python protocols, printing as TensorFlow prints them, and the
switch between eager and graph mode."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.eager import context
from tfc.frontend.eager.tensor import EagerTensor

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager.json")


def _fixture():
    with open(FIXTURE) as f:
        return json.load(f)


def test_ops_run_at_once_and_return_values():
    x = tf.constant([1., 2.])
    y = tf.constant([3., 4.])
    z = x + y
    assert isinstance(z, tf.Tensor) and isinstance(z, EagerTensor)
    np.testing.assert_array_equal(z.numpy(), [4., 6.])
    assert z.dtype == tf.float32 and z.shape.as_list() == [2] and z.get_shape() == tf.TensorShape([2])
    assert z.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    np.testing.assert_allclose(tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(y, [2, 1])).numpy(), [[11.]])
    np.testing.assert_allclose(tf.nn.softmax(x).numpy(), np.exp([1., 2.]) / np.exp([1., 2.]).sum(), rtol=1e-6)
    assert float(tf.reduce_mean(x)) == 1.5


def test_python_operators():
    x = tf.constant([1., 2., 4.])
    checks = {
        "x + 1": (x + 1, [2., 3., 5.]), "1 + x": (1 + x, [2., 3., 5.]), "x - 1": (x - 1, [0., 1., 3.]),
        "10 - x": (10 - x, [9., 8., 6.]), "x * x": (x * x, [1., 4., 16.]), "2 * x": (2 * x, [2., 4., 8.]),
        "x / 2": (x / 2, [.5, 1., 2.]), "4 / x": (4 / x, [4., 2., 1.]), "-x": (-x, [-1., -2., -4.]),
        "abs(-x)": (abs(-x), [1., 2., 4.]), "x ** 2": (x ** 2, [1., 4., 16.]), "x // 2": (x // 2, [0., 1., 2.]),
        "x % 3": (x % 3, [1., 2., 1.]), "x > 1": (x > 1, [False, True, True]), "x <= 2": (x <= 2, [True, True, False]),
    }
    for text, (value, expected) in checks.items():
        np.testing.assert_array_equal(value.numpy(), expected, err_msg=text)
    i = tf.constant([7, 8])
    np.testing.assert_array_equal((i / 2).numpy(), [3.5, 4.])  # TF's truediv of ints: float64
    assert (i / 2).dtype == tf.float64
    np.testing.assert_array_equal((i // 2 + i % 3).numpy(), [4, 6])
    b = tf.constant([True, False])
    np.testing.assert_array_equal((~b).numpy(), [False, True])
    np.testing.assert_array_equal((b & tf.constant([True, True])).numpy(), [True, False])
    m = tf.constant([[1., 2.], [3., 4.]])
    np.testing.assert_array_equal((m @ m).numpy(), [[7., 10.], [15., 22.]])
    np.testing.assert_array_equal(m[1].numpy(), [3., 4.])
    np.testing.assert_array_equal(m[:, 0].numpy(), [1., 3.])
    assert float(m[1, 1]) == 4.


def test_numpy_protocols():
    x = tf.constant([[1., 2.], [3., 4.]])
    assert np.asarray(x).tolist() == [[1., 2.], [3., 4.]]
    assert np.add(x, 1).tolist() == [[2., 3.], [4., 5.]]
    assert len(x) == 2
    rows = list(x)
    assert [r.numpy().tolist() for r in rows] == [[1., 2.], [3., 4.]] and rows[0].shape.as_list() == [2]
    s = tf.constant(2.5)
    assert float(s) == 2.5 and int(s) == 2 and bool(s) and f"{s:.2f}" == "2.50"
    assert isinstance(s.numpy(), np.float32) and s.numpy() == 2.5
    n = tf.constant(3)
    assert list(range(n)) == [0, 1, 2] and [10, 20, 30, 40][n] == 40
    copy = x.numpy()
    copy[0, 0] = 100.
    assert x.numpy()[0, 0] == 1.  # numpy() is a copy
    with pytest.raises(TypeError, match="Scalar tensor has no `len\\(\\)`"):
        len(s)
    with pytest.raises(TypeError, match="Cannot iterate over a scalar tensor."):
        iter(s).__next__()
    with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
        bool(x)
    with pytest.raises(AttributeError, match="Tensor.name is meaningless when eager execution is enabled."):
        x.name  # noqa: B018
    with pytest.raises(NotImplementedError, match="eval is not supported when eager execution is enabled"):
        x.eval()


def test_python_control_flow_on_tensor_values():
    x = tf.constant([1., -2., 3.])
    total = tf.constant(0.)
    for value in x:
        if value > 0:
            total += value
        else:
            total -= 10 * value
    assert float(total) == 24.
    n = tf.constant(0)
    while n < 5:
        n += 1
    assert int(n) == 5
    assert (tf.reduce_sum(x) > 0) and not (tf.reduce_sum(x) > 100)


def test_convert_to_tensor_and_constant():
    t = tf.convert_to_tensor([1, 2, 3])
    assert t.dtype == tf.int32 and t.numpy().tolist() == [1, 2, 3]
    assert tf.convert_to_tensor(np.arange(3.)).dtype == tf.float64
    assert tf.convert_to_tensor(2.5, dtype=tf.float64).dtype == tf.float64
    assert tf.convert_to_tensor(t) is t
    assert tf.constant(7, dtype=tf.int64).dtype == tf.int64
    assert tf.constant([[1.5]], shape=[1, 1]).numpy().tolist() == [[1.5]]
    assert tf.constant(0., shape=[2, 2]).numpy().tolist() == [[0., 0.], [0., 0.]]
    assert tf.constant(2**40).dtype == tf.int64
    source = np.ones(3, np.float32)
    c = tf.constant(source)
    source[0] = 5.
    assert c.numpy().tolist() == [1., 1., 1.]  # tf.constant copies
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype=tf.int32)
    with pytest.raises(RuntimeError, match=r"tf.placeholder\(\) is not compatible with eager execution."):
        tf.placeholder(tf.float32, [2])
    assert tf.is_tensor(c)


def test_printing_matches_tensorflow():
    expected = _fixture()["print"]
    sources = {"vector": lambda: tf.constant([1., 2.]), "scalar_float": lambda: tf.constant(3.0),
               "scalar_tenth": lambda: tf.constant(0.1), "int_matrix": lambda: tf.constant([[1, 2], [3, 4]]),
               "float_matrix": lambda: tf.constant([[1.5, 2.0], [3.0, 4.25]]), "string": lambda: tf.constant("abc"),
               "bool": lambda: tf.constant([True, False]),
               "float64": lambda: tf.constant([0.5, 1.0], dtype=tf.float64),
               "sum": lambda: tf.constant([1., 2.]) + tf.constant([3., 4.]),
               "int64": lambda: tf.constant([7], dtype=tf.int64)}
    assert set(sources) == set(expected)
    for name, make in sources.items():
        assert str(make()) == expected[name], name
    assert repr(tf.Variable([1., 2.])) == _fixture()["variable_repr"]
    t = tf.constant([1., 2.])
    assert repr(t) == f"<tf.Tensor: id={t._id}, shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert repr(tf.constant(1.5)).endswith("shape=(), dtype=float32, numpy=1.5>")


def test_graph_mode_inside_eager_and_back():
    assert tf.executing_eagerly()
    g = tf.Graph()
    with g.as_default():
        assert not tf.executing_eagerly()
        p = tf.placeholder(tf.float32, [2])
        y = p * 2.
        assert type(y) is tf.Tensor and y.op.type == "Mul"
        with tf.Session() as sess:
            assert sess.run(y, {p: [1., 2.]}).tolist() == [2., 4.]
    assert tf.executing_eagerly()
    tf.reset_default_graph()  # eager mode stays on
    assert tf.executing_eagerly()
    assert tf.compat.v1.executing_eagerly is tf.executing_eagerly
    tf.compat.v1.enable_eager_execution()  # again: no-op


def test_eager_mode_switch_is_scoped():
    context.disable_eager_execution()
    try:
        assert not tf.executing_eagerly()
        x = tf.constant(1.0)
        assert type(x) is tf.Tensor and x.op.type == "Const"
        with context.eager_mode():
            assert tf.executing_eagerly()
            assert float(tf.constant(2.0) * 2) == 4.
        assert not tf.executing_eagerly()
    finally:
        context.enable_eager_execution()


def test_name_scopes_and_collections_do_not_accumulate():
    graph = tf.get_default_graph()
    with tf.name_scope("block"):
        for _ in range(3):
            tf.constant(1.) + 1.
    assert graph.get_operations() == []
    tf.losses.mean_squared_error(tf.constant([1.]), tf.constant([2.]))
    assert tf.get_collection(tf.GraphKeys.LOSSES) == []
    with tf.control_dependencies([tf.constant(1.)]):
        assert float(tf.identity(tf.constant(3.))) == 3.


def test_string_and_host_ops():
    s = tf.strings.join([tf.constant("ab"), tf.constant("cd")])
    assert s.numpy() == b"abcd" and s.dtype == tf.string
    y = tf.py_func(lambda a: a * 10, [tf.constant([1., 2.])], tf.float32)
    assert y.numpy().tolist() == [10., 20.]
    np.testing.assert_array_equal(tf.where(tf.constant([True, False, True])).numpy(), [[0], [2]])
    np.testing.assert_array_equal(tf.unique(tf.constant([3, 1, 3]))[0].numpy(), [3, 1])


def test_tf1_eager_names():
    import tfc
    import tfc.contrib.eager as tfe

    assert tfc.contrib.eager is tfe
    for name in ("Variable", "defun", "GradientTape", "enable_eager_execution", "executing_eagerly",
                 "implicit_gradients", "gradients_function", "num_gpus"):
        assert hasattr(tfe, name), name
    assert tfe.executing_eagerly() and tf.compat.v1.executing_eagerly()
    tfe.enable_eager_execution()  # already on: nothing changes
    grad = tfe.gradients_function(lambda x: x * x * x)
    assert float(grad(2.)[0]) == 12.
    w = tfe.Variable(3.)
    loss_grads = tfe.implicit_gradients(lambda: w * w)
    ((g, v),) = loss_grads()
    assert v is w and float(g) == 6.
    with pytest.raises(AttributeError, match="tfc does not implement tf.contrib.layers yet"):
        tfc.contrib.layers  # noqa: B018
