"""Gradients of the nn ops (tfc/frontend/ops/nn_ops.py) and the gradient ops they use
(ReluGrad, Relu6Grad, EluGrad, SeluGrad, SoftplusGrad, SoftsignGrad, LeakyReluGrad,
BiasAddGrad, Conv2DBackpropInput/Filter, DepthwiseConv2dNativeBackpropInput/Filter,
MaxPoolGrad, AvgPoolGrad, PreventGradient).

Numeric checks in float64 as in test_math_gradients.py: analytic gradients run compiled
in one ``Session.run`` per test, compared with central finite differences of numpy
references (conv and pooling written out below, with TF's SAME padding), and for one
case per family of the compiled forward graph itself.
"""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op

from gradient_check import GradientChecker, fresh_graph, op, rand  # noqa: F401 - fresh_graph: an autouse fixture


def away_from(rng, shape, points=(0.0,), margin=0.2, low=-3.0, high=3.0):
    """Uniform values at least ``margin`` from each of ``points`` (kinks)."""
    values = rng.uniform(low, high, size=shape)
    for p in points:
        near = np.abs(values - p) < margin
        values[near] = p + np.sign(values[near] - p + 1e-12) * (margin + rng.uniform(0, 0.5, size=near.sum()))
    return values


def distinct(rng, shape, scale=0.1):
    """Distinct values (no ties for max pooling)."""
    return (rng.permutation(int(np.prod(shape))) * scale - 1.0).reshape(shape)


# -- numpy references ---------------------------------------------------------------------------
def same_pads(size, window, stride, dilation=1):
    effective = (window - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def np_conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1), groups=1):
    """NHWC x HWIO, TF's padding rules; padding may be [[top, bottom], [left, right]]."""
    n, h, wd, c = x.shape
    kh, kw, cg, o = w.shape
    if padding == "SAME":
        pads = [same_pads(h, kh, strides[0], dilations[0]), same_pads(wd, kw, strides[1], dilations[1])]
    elif padding == "VALID":
        pads = [(0, 0), (0, 0)]
    else:
        pads = padding
    xp = np.pad(x, [(0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)])
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    out = np.zeros((n, oh, ow, o))
    per = o // groups
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * strides[0], i * strides[0] + eh, dilations[0])
            cols = slice(j * strides[1], j * strides[1] + ew, dilations[1])
            patch = xp[:, rows, cols, :]
            for g in range(groups):
                out[:, i, j, g * per:(g + 1) * per] = np.einsum(
                    "nhwc,hwco->no", patch[..., g * cg:(g + 1) * cg], w[..., g * per:(g + 1) * per])
    return out


def _pads(shape, window, strides, padding, dilations=(1, 1)):
    if padding == "SAME":
        return [same_pads(shape[1], window[0], strides[0], dilations[0]),
                same_pads(shape[2], window[1], strides[1], dilations[1])]
    return [(0, 0), (0, 0)] if padding == "VALID" else padding


def np_conv2d_backprop_input(xs, w, dy, strides, padding):
    """The adjoint of np_conv2d in its input: each output position scatters dy * w back."""
    kh, kw = w.shape[:2]
    (pt, pb), (pl, pr) = _pads(xs, (kh, kw), strides, padding)
    dx = np.zeros((xs[0], xs[1] + pt + pb, xs[2] + pl + pr, xs[3]))
    for i in range(dy.shape[1]):
        for j in range(dy.shape[2]):
            dx[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw, :] += np.einsum(
                "no,hwco->nhwc", dy[:, i, j, :], w)
    return dx[:, pt:pt + xs[1], pl:pl + xs[2], :]


def np_conv2d_backprop_filter(x, ws, dy, strides, padding):
    """The adjoint of np_conv2d in its filter."""
    kh, kw = ws[:2]
    (pt, pb), (pl, pr) = _pads(x.shape, (kh, kw), strides, padding)
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    dw = np.zeros(ws)
    for i in range(dy.shape[1]):
        for j in range(dy.shape[2]):
            patch = xp[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw, :]
            dw += np.einsum("nhwc,no->hwco", patch, dy[:, i, j, :])
    return dw


def np_depthwise(x, w, strides=(1, 1), padding="VALID"):
    kh, kw, c, m = w.shape
    return np_conv2d(x, w.reshape(kh, kw, 1, c * m), strides, padding, groups=c)


def np_pool(x, ksize, strides, padding, kind):
    """NHWC max/avg pooling over H and W; SAME averages count only real elements."""
    n, h, w, c = x.shape
    if padding == "SAME":
        ph, pw = same_pads(h, ksize[0], strides[0]), same_pads(w, ksize[1], strides[1])
    else:
        ph, pw = (0, 0), (0, 0)
    oh = (h + sum(ph) - ksize[0]) // strides[0] + 1
    ow = (w + sum(pw) - ksize[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - ph[0], j * strides[1] - pw[0]
            window = x[:, max(r0, 0):r0 + ksize[0], max(c0, 0):c0 + ksize[1], :]
            out[:, i, j, :] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


def nchw(fn):
    """A NHWC numpy reference applied to NCHW arrays."""
    def wrapped(x, *rest):
        return np.transpose(fn(np.transpose(x, (0, 2, 3, 1)), *rest), (0, 3, 1, 2))
    return wrapped


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# -- activations, softmax, bias, losses ---------------------------------------------------------------
def test_activation_gradients_numeric():
    rng = np.random.RandomState(1)
    c = GradientChecker()
    selu_scale, selu_alpha = 1.0507009873554805, 1.6732632423543772
    cases = {
        "relu": (tf.nn.relu, lambda a: np.maximum(a, 0), (0.0,)),
        "relu6": (tf.nn.relu6, lambda a: np.clip(a, 0, 6), (0.0, 6.0)),
        "elu": (tf.nn.elu, lambda a: np.where(a < 0, np.expm1(a), a), (0.0,)),
        "selu": (tf.nn.selu, lambda a: selu_scale * np.where(a < 0, selu_alpha * np.expm1(a), a), (0.0,)),
        "softplus": (tf.nn.softplus, lambda a: np.log1p(np.exp(a)), ()),
        "softsign": (tf.nn.softsign, lambda a: a / (1 + np.abs(a)), (0.0,)),
        "leaky_relu": (lambda t: tf.nn.leaky_relu(t, alpha=0.3), lambda a: np.where(a > 0, a, 0.3 * a), (0.0,)),
        "sigmoid": (tf.nn.sigmoid, lambda a: 1 / (1 + np.exp(-a)), ()),
    }
    for name, (fn, ref, kinks) in cases.items():
        c.add(name, fn, [away_from(rng, (3, 4), kinks, low=-7.0, high=8.0) if name == "relu6"
                         else away_from(rng, (3, 4), kinks)], ref=ref)
    c.add("softmax", tf.nn.softmax, [rand(rng, 3, 4)], ref=np_softmax)
    c.add("softmax_rank3", tf.nn.softmax, [rand(rng, 2, 2, 3)], ref=np_softmax)
    c.add("log_softmax", tf.nn.log_softmax, [rand(rng, 3, 4)], ref=np_log_softmax)
    c.add("l2_loss", tf.nn.l2_loss, [rand(rng, 3, 2)], ref=lambda a: np.sum(a * a) / 2)
    c.add("bias_add", tf.nn.bias_add, [rand(rng, 3, 4), rand(rng, 4)], ref=np.add)
    c.add("bias_add_rank4", tf.nn.bias_add, [rand(rng, 2, 2, 3, 4), rand(rng, 4)], ref=np.add)
    c.add("bias_add_nchw", lambda v, b: tf.nn.bias_add(v, b, data_format="NCHW"), [rand(rng, 2, 3, 2, 2), rand(rng, 3)],
          ref=lambda v, b: v + b[None, :, None, None])
    c.add("relu_symbolic", tf.nn.relu, [away_from(rng, (5, 3))], shapes=[[None, 3]], out_shapes=[(5, 3)],
          ref=lambda a: np.maximum(a, 0))
    c.add("elu_compiled_fd", tf.nn.elu, [away_from(rng, (2, 3))])
    c.add("log_softmax_compiled_fd", tf.nn.log_softmax, [rand(rng, 2, 3)])
    c.check()


def test_softmax_cross_entropy_gradients_numeric():
    rng = np.random.RandomState(2)
    c = GradientChecker()
    logits = rand(rng, 3, 4)
    labels = np_softmax(rand(rng, 3, 4))

    def np_xent(x, z):
        return -np.sum(z * np_log_softmax(x), axis=-1)

    c.add("xent_op", lambda x, z: op("SoftmaxCrossEntropyWithLogits", x, z), [logits, labels], ref=np_xent)
    # both outputs used: the backprop output's gradient adds the softmax derivative (TF
    # gives the labels only the loss term, so only the logits are checked)
    c.add("xent_both_outputs", lambda x, z: apply_op("SoftmaxCrossEntropyWithLogits", [x, z]).outputs,
          [logits, labels], diff=[0], ref=lambda x, z: [np_xent(x, z), np_softmax(x) - z])
    c.add("xent_v2", lambda x, z: tf.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
          [rand(rng, 2, 2, 3), np_softmax(rand(rng, 2, 2, 3))], ref=np_xent)
    sparse_labels = np.array([1, 0, 3], dtype=np.int64)
    c.add("sparse_xent_op", lambda x, lab: op("SparseSoftmaxCrossEntropyWithLogits", x, lab),
          [logits, sparse_labels], ref=lambda x, lab: -np_log_softmax(x)[np.arange(3), lab])
    c.add("sparse_xent", lambda x, lab: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=x),
          [rand(rng, 3, 5), np.array([4, 0, 2], dtype=np.int32)])
    c.check()


def test_xent_gradient_graph_names(fresh_graph):
    logits = tf.placeholder(tf.float32, [3, 4], name="logits")
    labels = tf.placeholder(tf.float32, [3, 4], name="labels")
    loss = op("SoftmaxCrossEntropyWithLogits", logits, labels)
    g_logits, g_labels = tf.gradients(loss, [logits, labels])
    names = [o.name for o in fresh_graph.get_operations() if o.name.startswith("gradients/Softmax")]
    assert names == [
        "gradients/SoftmaxCrossEntropyWithLogits_grad/ExpandDims/dim",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/ExpandDims",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/mul",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/LogSoftmax",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/Neg",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/ExpandDims_1/dim",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/ExpandDims_1",
        "gradients/SoftmaxCrossEntropyWithLogits_grad/mul_1"]
    assert g_logits.op.inputs[1].name == "SoftmaxCrossEntropyWithLogits:1"
    sparse = op("SparseSoftmaxCrossEntropyWithLogits", logits, tf.placeholder(tf.int64, [3]))
    g, = tf.gradients(sparse, [logits])
    prevent = fresh_graph.get_operation_by_name("gradients_1/SparseSoftmaxCrossEntropyWithLogits_grad/PreventGradient")
    assert prevent.type == "PreventGradient" and b"second derivative" in prevent.get_attr("message")
    with pytest.raises(LookupError, match="Gradient explicitly disabled"):
        tf.gradients(g, [logits])


def test_activation_gradient_graph_names(fresh_graph):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    b = tf.placeholder(tf.float32, [3], name="b")
    tf.gradients(tf.nn.relu(tf.nn.bias_add(x, b)), [x, b])
    assert [o.name for o in fresh_graph.get_operations() if "_grad/" in o.name] == [
        "gradients/Relu_grad/ReluGrad", "gradients/BiasAdd_grad/BiasAddGrad"]
    relu_grad = fresh_graph.get_operation_by_name("gradients/Relu_grad/ReluGrad")
    assert [t.name for t in relu_grad.inputs] == ["gradients/Fill:0", "Relu:0"]
    tf.gradients(tf.nn.softplus(x), [x])
    sp = fresh_graph.get_operation_by_name("gradients_1/Softplus_grad/SoftplusGrad")
    assert [t.name for t in sp.inputs] == ["gradients_1/Fill:0", "x:0"]
    tf.gradients(tf.nn.softmax(x), [x])
    assert [o.name.split("/", 2)[2] for o in fresh_graph.get_operations()
            if o.name.startswith("gradients_2/Softmax_grad/")] == ["mul", "Sum/reduction_indices", "Sum", "sub",
                                                                   "mul_1"]


def test_second_order_activation_gradients_numeric():
    """The activation gradient ops as functions of (gradients, features/outputs)."""
    rng = np.random.RandomState(3)
    c = GradientChecker()
    g = rand(rng, 3, 4)
    x = away_from(rng, (3, 4), (0.0, 6.0), low=-2.0, high=8.0)
    selu_scale, selu_scale_alpha = 1.0507009873554805, 1.7580993408473768
    refs = {
        "ReluGrad": lambda d, f: d * (f > 0), "Relu6Grad": lambda d, f: d * ((f > 0) & (f < 6)),
        "EluGrad": lambda d, y: np.where(y < 0, d * (y + 1), d),
        "SeluGrad": lambda d, y: np.where(y < 0, d * (y + selu_scale_alpha), d * selu_scale),
        "SoftplusGrad": lambda d, f: d / (np.exp(-f) + 1),
    }
    for name, ref in refs.items():
        c.add(name, lambda a, b, name=name: op(name, a, b), [g, x], ref=ref)
    c.add("LeakyReluGrad", lambda a, b: op("LeakyReluGrad", a, b, alpha=0.1), [g, x],
          ref=lambda d, f: np.where(f > 0, d, 0.1 * d))
    c.add("BiasAddGrad", lambda a: op("BiasAddGrad", a), [rand(rng, 2, 3, 4)], ref=lambda a: a.sum(axis=(0, 1)))
    c.add("BiasAddGrad_nchw", lambda a: op("BiasAddGrad", a, data_format="NCHW"), [rand(rng, 2, 3, 2, 2)],
          ref=lambda a: a.sum(axis=(0, 2, 3)))
    c.add("SoftplusGrad_compiled_fd", lambda a, b: op("SoftplusGrad", a, b), [rand(rng, 2, 2), rand(rng, 2, 2)])
    c.check()
    x = tf.placeholder(tf.float32, [3])
    with pytest.raises(LookupError, match="SoftsignGrad"):
        tf.gradients(tf.gradients(tf.nn.softsign(x), x)[0], x)


# -- convolution ------------------------------------------------------------------------------------
_CONV_CASES = [  # name, x shape, w shape, strides, padding, dilations
    ("valid", (1, 4, 4, 2), (3, 3, 2, 3), (1, 1), "VALID", (1, 1)),
    ("same_stride2_odd", (2, 5, 7, 2), (3, 2, 2, 2), (2, 2), "SAME", (1, 1)),
    ("same_stride12_even_window", (1, 4, 5, 1), (2, 3, 1, 2), (1, 2), "SAME", (1, 1)),
    ("valid_stride2_leftover", (1, 6, 5, 1), (3, 2, 1, 2), (2, 2), "VALID", (1, 1)),
    ("same_dilated", (1, 5, 6, 2), (2, 3, 2, 1), (1, 1), "SAME", (2, 2)),
    ("explicit", (1, 4, 5, 1), (3, 3, 1, 2), (2, 1), [[1, 2], [0, 1]], (1, 1)),
]


def _tf_padding(padding):
    return padding if isinstance(padding, str) else [[0, 0]] + padding + [[0, 0]]


def test_conv2d_gradients_numeric():
    rng = np.random.RandomState(4)
    c = GradientChecker()
    for name, xs, ws, strides, padding, dilations in _CONV_CASES:
        c.add(name, lambda x, w, s=strides, p=padding, d=dilations: tf.nn.conv2d(
            x, w, strides=[1, *s, 1], padding=_tf_padding(p), dilations=[1, *d, 1]),
            [rand(rng, *xs), rand(rng, *ws)],
            ref=lambda x, w, s=strides, p=padding, d=dilations: np_conv2d(x, w, s, p, d))
    c.add("nchw_same_stride2", lambda x, w: tf.nn.conv2d(x, w, strides=[1, 1, 2, 2], padding="SAME",
                                                        data_format="NCHW"),
          [rand(rng, 1, 2, 5, 5), rand(rng, 3, 3, 2, 2)], ref=nchw(lambda x, w: np_conv2d(x, w, (2, 2), "SAME")))
    c.add("symbolic_batch", lambda x, w: tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"),
          [rand(rng, 3, 5, 5, 1), rand(rng, 3, 3, 1, 2)], shapes=[[None, 5, 5, 1], [3, 3, 1, 2]],
          out_shapes=[(3, 3, 3, 2)], ref=lambda x, w: np_conv2d(x, w, (2, 2), "SAME"))
    c.add("compiled_fd", lambda x, w: tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"),
          [rand(rng, 1, 3, 3, 1), rand(rng, 2, 2, 1, 2)])
    c.check()


def test_depthwise_conv2d_gradients_numeric():
    rng = np.random.RandomState(5)
    c = GradientChecker()
    for name, xs, ws, strides, padding in (("same_stride2", (1, 5, 5, 2), (3, 3, 2, 2), (2, 2), "SAME"),
                                           ("valid", (2, 4, 4, 3), (2, 2, 3, 1), (1, 1), "VALID"),
                                           ("same_stride12", (1, 4, 5, 2), (2, 3, 2, 3), (1, 2), "SAME")):
        c.add(name, lambda x, w, s=strides, p=padding: tf.nn.depthwise_conv2d_native(x, w, [1, *s, 1], p),
              [rand(rng, *xs), rand(rng, *ws)], ref=lambda x, w, s=strides, p=padding: np_depthwise(x, w, s, p))
    c.add("compiled_fd", lambda x, w: tf.nn.depthwise_conv2d_native(x, w, [1, 2, 2, 1], "SAME"),
          [rand(rng, 1, 3, 3, 2), rand(rng, 2, 2, 2, 2)])
    c.check()


def test_conv_backprop_op_gradients_numeric():
    """Conv2DBackpropInput/Filter and the depthwise ones as functions of their tensor inputs."""
    rng = np.random.RandomState(6)
    c = GradientChecker()
    xs, ws, strides = (1, 5, 4, 2), (3, 2, 2, 3), (2, 2)
    dy_shape = (1, 3, 2, 3)

    def np_input_grad(w, dy):
        return np_conv2d_backprop_input(xs, w, dy, strides, "SAME")

    def np_filter_grad(x, dy):
        return np_conv2d_backprop_filter(x, ws, dy, strides, "SAME")

    attrs = dict(strides=[1, *strides, 1], padding="SAME")
    c.add("conv2d_transpose", lambda w, dy: tf.nn.conv2d_transpose(dy, w, list(xs), [1, *strides, 1], "SAME"),
          [rand(rng, *ws), rand(rng, *dy_shape)], ref=np_input_grad)
    c.add("Conv2DBackpropFilter", lambda x, dy: op("Conv2DBackpropFilter", x, tf.constant(ws, tf.int32), dy, **attrs),
          [rand(rng, *xs), rand(rng, *dy_shape)], ref=np_filter_grad)
    dxs, dws = (1, 4, 4, 2), (2, 2, 2, 2)
    d_attrs = dict(strides=[1, 2, 2, 1], padding="VALID")
    c.add("DepthwiseBackpropInput", lambda w, dy: op("DepthwiseConv2dNativeBackpropInput",
                                                     tf.constant(dxs, tf.int32), w, dy, **d_attrs),
          [rand(rng, *dws), rand(rng, 1, 2, 2, 4)])
    c.add("DepthwiseBackpropFilter", lambda x, dy: op("DepthwiseConv2dNativeBackpropFilter",
                                                      x, tf.constant(dws, tf.int32), dy, **d_attrs),
          [rand(rng, *dxs), rand(rng, 1, 2, 2, 4)])
    c.check()


def test_conv_gradient_graph_names(fresh_graph):
    x = tf.placeholder(tf.float32, [1, 5, 5, 2], name="x")
    w = tf.placeholder(tf.float32, [3, 3, 2, 4], name="w")
    assert tf.nn.conv2d_transpose(tf.ones([1, 3, 3, 4]), w, [1, 5, 5, 2], [1, 2, 2, 1]).op.name == "conv2d_transpose"
    gx, gw = tf.gradients(tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"), [x, w])
    assert [o.name for o in fresh_graph.get_operations() if "_grad/" in o.name] == [
        "gradients/Conv2D_grad/ShapeN", "gradients/Conv2D_grad/Conv2DBackpropInput",
        "gradients/Conv2D_grad/Conv2DBackpropFilter"]
    assert gx.op.type == "Conv2DBackpropInput" and gx.shape.as_list() == [1, 5, 5, 2]
    assert gw.op.type == "Conv2DBackpropFilter" and gw.shape.as_list() == [3, 3, 2, 4]
    assert gx.op.get_attr("strides") == [1, 2, 2, 1] and gx.op.get_attr("padding") == b"SAME"
    tf.gradients(tf.nn.depthwise_conv2d_native(x, tf.ones([2, 2, 2, 1]), [1, 1, 1, 1], "VALID"), [x])
    assert [o.name.split("/")[2] for o in fresh_graph.get_operations()
            if o.name.startswith("gradients_1/Depthwise")] == [
        "Shape", "DepthwiseConv2dNativeBackpropInput", "Shape_1", "DepthwiseConv2dNativeBackpropFilter"]


# -- pooling ----------------------------------------------------------------------------------------
_POOL_CASES = [  # name, x shape, ksize, strides, padding
    ("valid_2x2", (1, 4, 4, 2), (2, 2), (2, 2), "VALID"),
    ("same_3x3_stride2_odd", (2, 5, 5, 2), (3, 3), (2, 2), "SAME"),
    ("same_2x3_stride12", (1, 4, 5, 1), (2, 3), (1, 2), "SAME"),
    ("valid_overlap_leftover", (1, 6, 5, 1), (3, 2), (2, 1), "VALID"),
]


def test_pool_gradients_numeric():
    rng = np.random.RandomState(7)
    c = GradientChecker()
    for kind, fn in (("max", tf.nn.max_pool), ("avg", tf.nn.avg_pool)):
        for name, xs, k, s, p in _POOL_CASES:
            x = distinct(rng, xs) if kind == "max" else rand(rng, *xs)
            c.add(f"{kind}_{name}", lambda t, fn=fn, k=k, s=s, p=p: fn(t, [1, *k, 1], [1, *s, 1], p), [x],
                  ref=lambda a, kind=kind, k=k, s=s, p=p: np_pool(a, k, s, p, kind))
        c.add(f"{kind}_nchw", lambda t, fn=fn: fn(t, [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCHW"),
              [distinct(rng, (1, 2, 3, 3))], ref=nchw(lambda a, kind=kind: np_pool(a, (2, 2), (2, 2), "SAME", kind)))
        c.add(f"{kind}_compiled_fd", lambda t, fn=fn: fn(t, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
              [distinct(rng, (1, 3, 3, 1))])
    c.add("avg_symbolic_batch", lambda t: tf.nn.avg_pool(t, [1, 3, 3, 1], [1, 1, 1, 1], "SAME"),
          [rand(rng, 2, 4, 4, 1)], shapes=[[None, 4, 4, 1]], out_shapes=[(2, 4, 4, 1)],
          ref=lambda a: np_pool(a, (3, 3), (1, 1), "SAME", "avg"))
    # AvgPoolGrad's own gradient is an AvgPool of the incoming gradient
    c.add("AvgPoolGrad", lambda g: op("AvgPoolGrad", tf.constant([1, 5, 5, 1]), g, ksize=[1, 3, 3, 1],
                                      strides=[1, 2, 2, 1], padding="SAME"), [rand(rng, 1, 3, 3, 1)])
    c.check()


def test_max_pool_gradient_ties_go_to_the_first_maximum():
    x = tf.constant(np.array([[1.0, 3.0], [3.0, 3.0]]).reshape(1, 2, 2, 1))
    g, = tf.gradients(tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), [x])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g).reshape(2, 2), [[0.0, 1.0], [0.0, 0.0]])


def test_pool_gradient_graph_names(fresh_graph):
    x = tf.placeholder(tf.float32, [1, 4, 4, 1], name="x")
    tf.gradients(tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), [x])
    tf.gradients(tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), [x])
    assert [o.name for o in fresh_graph.get_operations() if "_grad/" in o.name] == [
        "gradients/MaxPool_grad/MaxPoolGrad", "gradients_1/AvgPool_grad/Shape",
        "gradients_1/AvgPool_grad/AvgPoolGrad"]
    mpg = fresh_graph.get_operation_by_name("gradients/MaxPool_grad/MaxPoolGrad")
    assert [t.name for t in mpg.inputs] == ["x:0", "MaxPool:0", "gradients/Fill:0"]
