"""tf.nn.conv3d, conv3d_transpose, conv3d_backprop_filter_v2, max_pool3d, avg_pool3d and
tf.nn.convolution (1-D to 3-D, dilated through SpaceToBatchND as TF builds it) against real
TensorFlow's graphs, values and gradients (tests/fixtures/conv3d.json, made by
tests/fixtures/make_conv3d_fixture.py), compiled programs against the IR evaluator (NCDHW,
dilations, gradient ops TF's CPU kernels lack), and the shape functions' errors.

Every case is built in one graph and run in one session step (one compilation)."""
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.ir.evaluator import evaluate
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_conv3d_fixture",
                                               os.path.join(_FIXTURES, "make_conv3d_fixture.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)  # the case builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "conv3d.json")) as _f:
    FIXTURE = json.load(_f)["cases"]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_ops_as_tensorflow():
    """Node names and types, shapes, values and gradients of every case, in one graph."""
    built = {}
    with tf.Graph().as_default() as g:
        for name, (build, shapes, grad_inputs) in cases.CASES.items():
            want = FIXTURE[name]
            inputs = [tf.constant(cases.case_input(shape, i)) for i, shape in enumerate(shapes)]
            before = set(g.get_operations())
            y = build(tf, *inputs)
            nodes = [[o.name, o.type] for o in g.get_operations() if o not in before and o.type != "Const"]
            assert nodes == want["nodes"], name
            assert (y.dtype.name, y.shape.as_list()) == (want["dtype"], want["shape"]), name
            before = set(g.get_operations())
            grads = tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp(y.shape.as_list()))),
                                 [inputs[i] for i in grad_inputs])
            grad_nodes = [[o.name, o.type] for o in g.get_operations() if o not in before
                          and o.type in cases.GRAD_TYPES]
            assert grad_nodes == want["grad_nodes"], name
            built[name] = (y, grads)
        with tf.Session() as sess:
            values = sess.run(built)
    for name, (y, grads) in values.items():
        want = FIXTURE[name]
        np.testing.assert_allclose(y, want["value"], rtol=2e-5, atol=2e-5, err_msg=name)
        assert len(grads) == len(want["gradients"])
        for g_value, g_want in zip(grads, want["gradients"]):
            np.testing.assert_allclose(g_value, g_want, rtol=1e-4, atol=5e-5, err_msg=name)


def _compiled_and_evaluated(fetches, feeds):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feeds)
        assert sess.cache_stats()["compiles"] == 1
    specs = [FeedSpec(t, t.dtype, np.shape(v)) for t, v in feeds.items()]
    lowered = lower_graph(fetches, [], specs)
    args = [np.asarray(feeds[t], dtype=t.dtype.as_numpy_dtype) for t in lowered.feeds]
    return compiled, evaluate(lowered.module, args)


def _to_ncdhw(x):
    return np.transpose(x, (0, 4, 1, 2, 3))


def test_compiled_matches_the_evaluator():
    """Fed inputs (nothing folds away): NDHWC and NCDHW convs with dilations and strides,
    their gradients (the filter gradient of a dilated conv, which TF's CPU kernels refuse),
    pools with their gradients, a transposed conv; NCDHW agrees with NDHWC."""
    x_value = cases.case_input([2, 6, 5, 7, 3], 0)
    w_value = cases.case_input([2, 3, 2, 3, 4], 1)
    x = tf.placeholder(tf.float32, [None, 6, 5, 7, 3], name="x")
    w = tf.placeholder(tf.float32, [2, 3, 2, 3, 4], name="w")
    xc = tf.placeholder(tf.float32, [None, 3, 6, 5, 7], name="xc")
    y = tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME", dilations=[1, 1, 2, 1, 1])
    yc = tf.nn.conv3d(xc, w, [1, 1, 2, 1, 1], "SAME", data_format="NCDHW", dilations=[1, 1, 1, 2, 1])
    yd = tf.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME", dilations=[1, 1, 1, 2, 1])
    p = tf.nn.max_pool3d(x, [2, 2, 3], [2, 1, 2], "SAME")
    pc = tf.nn.avg_pool3d(xc, [1, 1, 2, 2, 2], [1, 1, 1, 2, 2], "VALID", data_format="NCDHW")
    t = tf.nn.conv3d_transpose(p, tf.ones([2, 2, 2, 4, 3]), tf.stack([tf.shape(x)[0], 6, 10, 8, 4]), 2, "SAME")
    loss = (tf.reduce_sum(y * y) + tf.reduce_sum(tf.sin(yc)) + tf.reduce_sum(p * p) + tf.reduce_sum(pc * pc)
            + tf.reduce_sum(t * t))
    grads = tf.gradients(loss, [x, w, xc])
    fetches = [y, yc, yd, p, pc, t] + grads
    feeds = {x: x_value, w: w_value, xc: _to_ncdhw(x_value)}
    compiled, evaluated = _compiled_and_evaluated(fetches, feeds)
    for i, (c, e) in enumerate(zip(compiled, evaluated)):
        np.testing.assert_allclose(c, e, rtol=2e-5, atol=1e-5 * np.abs(e).max(), err_msg=f"fetch {i}")
    np.testing.assert_allclose(compiled[1], _to_ncdhw(compiled[0]), rtol=1e-5, atol=1e-5)
    assert compiled[0].shape == (2, 3, 5, 7, 4) and compiled[5].shape == (2, 6, 10, 8, 4)


def test_shapes_and_attrs():
    x = tf.placeholder(tf.float32, [None, 8, 7, None, 3])
    w = tf.zeros([3, 2, 2, 3, 5])
    assert tf.nn.conv3d(x, w, [1, 2, 2, 1, 1], "SAME").shape.as_list() == [None, 4, 4, None, 5]
    assert tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1, 1]).shape.as_list() == \
        [None, 4, 6, None, 5]
    xc = tf.placeholder(tf.float32, [2, 3, 8, 7, 6])
    y = tf.nn.conv3d(xc, w, [1, 1, 1, 1, 1], "VALID", data_format="NCDHW")
    assert y.shape.as_list() == [2, 5, 6, 6, 5]
    assert y.op.get_attr("data_format") in ("NCDHW", b"NCDHW")
    assert tf.nn.max_pool3d(xc, 2, 2, "VALID", data_format="NCDHW").shape.as_list() == [2, 3, 4, 3, 3]
    assert tf.nn.avg_pool3d(x, [1, 3, 3, 3, 1], [1, 1, 2, 2, 1], "SAME").shape.as_list() == [None, 8, 4, None, 3]
    t = tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 5]), w, [1, 4, 4, 4, 3], [1, 2, 2, 2, 1])
    assert t.op.type == "Conv3DBackpropInputV2" and t.op.name == "conv3d_transpose"
    assert t.shape.as_list() == [1, 4, 4, 4, 3]
    assert tf.nn.convolution(tf.zeros([2, 9, 4]), tf.zeros([3, 4, 2]), "SAME").shape.as_list() == [2, 9, 2]


def test_errors():
    x = tf.zeros([1, 4, 4, 4, 2])
    with pytest.raises(ValueError, match="Shape must be rank 5 but is rank 4"):
        tf.nn.conv3d(tf.zeros([1, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 2]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Conv3D requires the stride attribute to contain 5 values"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 2, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 3, 2]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Negative dimension size"):
        tf.nn.conv3d(x, tf.zeros([5, 2, 2, 2, 2]), [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="is not in the list of allowed values"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 2, 2]), [1, 1, 1, 1, 1], "SAME", data_format="NHWC")
    with pytest.raises(ValueError, match="Pooling is not yet supported on the batch or depth dimension"):
        tf.nn.max_pool3d(x, [1, 2, 2, 2, 2], [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="ksize should be of length 1, 3 or 5"):
        tf.nn.avg_pool3d(x, [2, 2], 1, "SAME")
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.nn.max_pool3d(tf.zeros([1, 2, 2, 2, 1], tf.float64), 1, 1, "SAME")
    with pytest.raises(ValueError, match="`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
        tf.nn.convolution(x, tf.zeros([2, 2, 2, 2, 2]), "SAME", strides=2, dilation_rate=2)
