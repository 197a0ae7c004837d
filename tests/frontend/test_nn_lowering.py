"""Lowerings of the nn ops (tfc/frontend/ops/nn_ops.py), run for real through ``tf.Session``
and compared with straightforward numpy references that follow TF 1.15's kernels
(activations term for term, SAME padding with the odd element at the end, AvgPool
dividing by the number of valid elements, the softmax cross entropies' two outputs).
Placeholders have an unknown batch dim; each graph runs at two batch sizes in one
session and must compile once.
"""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op
from tfc.passes.lower import UnsupportedOpsError


def op(op_type, *inputs, **attrs):
    return apply_op(op_type, list(inputs), attrs).outputs


def run_batches(fetches: dict, make_feeds, check, sizes=(2, 3)):
    with tf.Session() as sess:
        for n in sizes:
            feeds = make_feeds(n)
            check(feeds, sess.run(fetches, feeds))
        stats = sess.cache_stats()
    assert stats["compiles"] == 1, stats


def assert_close(actual, expected, name, rtol=2e-6, atol=1e-6):
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (name, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (name, actual.dtype, expected.dtype)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# -- activations -------------------------------------------------------------------------------
SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def np_softplus(x):
    """TF's softplus_op.h: threshold = log(eps) + 2."""
    dtype = x.dtype.type
    threshold = np.log(np.finfo(x.dtype).eps).astype(x.dtype) + dtype(2)
    with np.errstate(over="ignore"):
        e = np.exp(x)
        return np.where(x > -threshold, x, np.where(x < threshold, e, np.log1p(e))).astype(x.dtype)


_ACTIVATIONS = {
    "Relu": lambda x: np.maximum(x, 0),
    "Relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "Elu": lambda x: np.where(x < 0, np.exp(x) - 1, x),
    "Selu": lambda x: np.where(x < 0, SELU_SCALE * SELU_ALPHA * (np.exp(x) - 1), SELU_SCALE * x),
    "Softplus": np_softplus,
    "Softsign": lambda x: x / (1 + np.abs(x)),
}
_EDGES = [-100.0, -40.0, -20.0, -13.95, -13.9, -5.0, -1.0, -0.1, 0.0, 0.1, 1.0, 5.5, 6.0, 7.0, 13.9, 13.95,
          20.0, 40.0, 100.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations(dtype):
    tf_dtype = tf.as_dtype(dtype)
    x = tf.placeholder(tf_dtype, [None, len(_EDGES)], name="x")
    k = tf.placeholder(tf.int32, [None, 4], name="k")
    fetches = {name: op(name, x)[0] for name in _ACTIVATIONS}
    fetches["LeakyRelu"] = tf.nn.leaky_relu(x)
    fetches["LeakyRelu.01"] = tf.nn.leaky_relu(x, alpha=0.01)
    fetches["int_relu"] = tf.nn.relu(k)
    fetches["int_relu6"] = tf.nn.relu6(k)

    def feeds(n):
        rng = np.random.default_rng(n)
        rows = np.array([_EDGES] * n, dtype=dtype)
        rows[1:] *= rng.uniform(0.5, 1.5, (n - 1, len(_EDGES)))
        return {x: rows, k: rng.integers(-10, 10, (n, 4))}

    def check(fed, out):
        v = fed[x]
        with np.errstate(all="ignore"):
            for name, ref in _ACTIVATIONS.items():
                assert_close(out[name], ref(v).astype(dtype), name)
            assert_close(out["LeakyRelu"], np.maximum(v, v * dtype(0.2)), "LeakyRelu")
            assert_close(out["LeakyRelu.01"], np.maximum(v, v * dtype(0.01)), "LeakyRelu.01")
            finite = np.isfinite(v)
            np.testing.assert_allclose(out["Softplus"][finite], np.logaddexp(0, v[finite]), rtol=1e-6)
        kv = fed[k].astype(np.int32)
        assert_close(out["int_relu"], np.maximum(kv, 0), "int_relu")
        assert_close(out["int_relu6"], np.clip(kv, 0, 6), "int_relu6")

    run_batches(fetches, feeds, check)


# -- softmax, bias, l2 loss ------------------------------------------------------------------------
def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_softmax_log_softmax_bias_add_l2_loss():
    x = tf.placeholder(tf.float32, [None, 7], name="x")
    x3 = tf.placeholder(tf.float32, [None, 2, 5], name="x3")
    img = tf.placeholder(tf.float32, [None, 3, 2, 2], name="img")
    bias7 = tf.placeholder(tf.float32, [7], name="bias7")
    bias3 = tf.placeholder(tf.float32, [3], name="bias3")
    fetches = {
        "softmax": tf.nn.softmax(x), "log_softmax": tf.nn.log_softmax(x), "softmax3": tf.nn.softmax(x3),
        "log_softmax3": tf.nn.log_softmax(x3), "bias_nhwc": tf.nn.bias_add(x, bias7),
        "bias_nchw": tf.nn.bias_add(img, bias3, data_format="NCHW"), "bias_nhwc4": tf.nn.bias_add(img, tf.constant(
            np.array([1.0, -2.0], np.float32))), "l2": tf.nn.l2_loss(x), "l2_3": tf.nn.l2_loss(x3),
    }

    def feeds(n):
        rng = np.random.default_rng(n)
        xv = rng.normal(size=(n, 7)).astype(np.float32) * 5
        xv[0] = [1000.0, 999.0, -1000.0, 0.0, 1000.0, 3.0, -3.0]  # needs the max subtraction
        return {x: xv, x3: rng.normal(size=(n, 2, 5)), img: rng.normal(size=(n, 3, 2, 2)),
                bias7: rng.normal(size=7), bias3: rng.normal(size=3)}

    def check(fed, out):
        xv, x3v, imgv = fed[x], fed[x3].astype(np.float32), fed[img].astype(np.float32)
        b7, b3 = fed[bias7].astype(np.float32), fed[bias3].astype(np.float32)
        assert_close(out["softmax"], np_softmax(xv), "softmax")
        assert_close(out["log_softmax"], np_log_softmax(xv), "log_softmax", rtol=1e-5)
        assert_close(out["softmax3"], np_softmax(x3v), "softmax3")
        assert_close(out["log_softmax3"], np_log_softmax(x3v), "log_softmax3", rtol=1e-5)
        assert np.all(np.isfinite(out["softmax"])) and np.all(np.isfinite(out["log_softmax"]))
        assert_close(out["bias_nhwc"], xv + b7, "bias_nhwc")
        assert_close(out["bias_nchw"], imgv + b3[None, :, None, None], "bias_nchw")
        assert_close(out["bias_nhwc4"], imgv + np.array([1.0, -2.0], np.float32), "bias_nhwc4")
        assert_close(out["l2"], np.float32(np.sum(xv.astype(np.float64) ** 2) / 2), "l2", rtol=1e-5)
        assert_close(out["l2_3"], np.float32(np.sum(x3v.astype(np.float64) ** 2) / 2), "l2_3", rtol=1e-5)

    run_batches(fetches, feeds, check)


# -- softmax cross entropies -----------------------------------------------------------------------
def np_xent(logits, labels):
    """TF's XentFunctor."""
    shifted = logits - logits.max(1, keepdims=True)
    total = np.exp(shifted).sum(1, keepdims=True)
    loss = (labels * (np.log(total) - shifted)).sum(1)
    return loss, np.exp(shifted) / total - labels


def test_softmax_cross_entropy_with_logits():
    logits = tf.placeholder(tf.float32, [None, 5], name="logits")
    labels = tf.placeholder(tf.float32, [None, 5], name="labels")
    row = tf.placeholder(tf.float32, [1, 5], name="row")
    loss, backprop = op("SoftmaxCrossEntropyWithLogits", logits, labels)
    bloss, bbackprop = op("SoftmaxCrossEntropyWithLogits", logits, row)  # labels broadcast over the batch
    fetches = {"loss": loss, "backprop": backprop, "bloss": bloss, "bbackprop": bbackprop}

    def feeds(n):
        rng = np.random.default_rng(n)
        lv = rng.normal(size=(n, 5)).astype(np.float32) * 3
        lv[0] = [500.0, -500.0, 499.0, 0.0, 1.0]
        p = rng.uniform(size=(n, 5)).astype(np.float32)
        return {logits: lv, labels: p / p.sum(1, keepdims=True), row: np.array([[0, 0, 1, 0, 0]], np.float32)}

    def check(fed, out):
        lv, pv, rv = fed[logits], fed[labels], fed[row]
        ref_loss, ref_backprop = np_xent(lv, pv)
        assert_close(out["loss"], ref_loss, "loss", rtol=1e-5, atol=1e-5)
        assert_close(out["backprop"], ref_backprop, "backprop", rtol=1e-5, atol=1e-6)
        ref_bloss, ref_bbackprop = np_xent(lv, np.broadcast_to(rv, lv.shape))
        assert_close(out["bloss"], ref_bloss, "bloss", rtol=1e-5, atol=1e-5)
        assert_close(out["bbackprop"], ref_bbackprop, "bbackprop", rtol=1e-5, atol=1e-6)
        assert np.isclose(out["bloss"][0], 1.0 + np.log1p(np.exp(-1.0)), rtol=1e-5)  # 500 vs 499

    run_batches(fetches, feeds, check)


@pytest.mark.parametrize("label_dtype", [tf.int32, tf.int64])
def test_sparse_softmax_cross_entropy_with_logits(label_dtype):
    logits = tf.placeholder(tf.float64, [None, 4], name="logits")
    labels = tf.placeholder(label_dtype, [None], name="labels")
    loss, backprop = op("SparseSoftmaxCrossEntropyWithLogits", logits, labels)
    f32_logits = tf.cast(logits, tf.float32)
    loss32 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=f32_logits)
    fetches = {"loss": loss, "backprop": backprop, "loss32": loss32}

    def feeds(n):
        rng = np.random.default_rng(n)
        lab = rng.integers(0, 4, n)  # out-of-range labels raise: tests/frontend/test_integer_semantics.py
        return {logits: rng.normal(size=(n, 4)) * 4, labels: lab}

    def check(fed, out):
        lv, lab = fed[logits], fed[labels]
        one_hot = np.zeros_like(lv)
        one_hot[np.arange(len(lab)), lab] = 1
        ref_loss, ref_backprop = np_xent(lv, one_hot)
        assert_close(out["loss"], ref_loss, "loss", rtol=1e-12, atol=1e-12)
        assert_close(out["backprop"], ref_backprop, "backprop", rtol=1e-12, atol=1e-12)
        assert_close(out["loss32"], ref_loss.astype(np.float32), "loss32", rtol=1e-5, atol=1e-5)

    run_batches(fetches, feeds, check)


# -- convolution ---------------------------------------------------------------------------------
def same_pads(size, window, stride, dilation=1):
    effective = (window - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return (total // 2, total - total // 2)


def np_conv2d(x, w, strides, padding, dilations=(1, 1), explicit=None):
    """NHWC x HWIO, the textbook loop over output positions."""
    n, h, wd, c = x.shape
    kh, kw, _, co = w.shape
    sh, sw = strides
    dh, dw = dilations
    if padding == "SAME":
        pads = [same_pads(h, kh, sh, dh), same_pads(wd, kw, sw, dw)]
    elif padding == "VALID":
        pads = [(0, 0), (0, 0)]
    else:
        pads = explicit
    xp = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)])
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    oh, ow = (xp.shape[1] - eh) // sh + 1, (xp.shape[2] - ew) // sw + 1
    out = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * sh:i * sh + eh:dh, j * sw:j * sw + ew:dw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out.astype(x.dtype)


def nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


_CONV_CASES = [
    # name, kernel (kh, kw), strides, padding, dilations, explicit
    ("same_3x3", (3, 3), (1, 1), "SAME", (1, 1), None),
    ("valid_3x3", (3, 3), (1, 1), "VALID", (1, 1), None),
    ("same_s2_asym", (2, 4), (2, 2), "SAME", (1, 1), None),   # even kernels: the extra pad goes at the end
    ("valid_s2x3", (3, 2), (2, 3), "VALID", (1, 1), None),
    ("same_dilated", (3, 3), (1, 1), "SAME", (2, 2), None),
    ("valid_dilated_s2", (2, 3), (2, 1), "VALID", (2, 3), None),
    ("explicit", (3, 3), (2, 1), "EXPLICIT", (1, 1), [(1, 2), (0, 3)]),
    ("same_1x1_s2", (1, 1), (2, 2), "SAME", (1, 1), None),
]


def test_conv2d_paddings_strides_dilations_and_layouts():
    h, w, c, co = 7, 8, 3, 4
    x = tf.placeholder(tf.float32, [None, h, w, c], name="x")
    xc = tf.placeholder(tf.float32, [None, c, h, w], name="xc")
    rng = np.random.default_rng(0)
    filters = {name: rng.normal(size=k + (c, co)).astype(np.float32) for name, k, *_ in _CONV_CASES}
    fetches = {}
    for name, _, strides, padding, dilations, explicit in _CONV_CASES:
        pad_arg = padding if explicit is None else [[0, 0], list(explicit[0]), list(explicit[1]), [0, 0]]
        fetches[name] = tf.nn.conv2d(x, tf.constant(filters[name]), strides=list(strides), padding=pad_arg,
                                     dilations=list(dilations))
        nchw_pad = pad_arg if explicit is None else [[0, 0], [0, 0], list(explicit[0]), list(explicit[1])]
        fetches[name + "_nchw"] = tf.nn.conv2d(xc, tf.constant(filters[name]), strides=list(strides),
                                               padding=nchw_pad, dilations=list(dilations), data_format="NCHW")

    def feeds(n):
        xv = np.random.default_rng(n).normal(size=(n, h, w, c)).astype(np.float32)
        return {x: xv, xc: nchw(xv)}

    def check(fed, out):
        xv = fed[x]
        for name, _, strides, padding, dilations, explicit in _CONV_CASES:
            ref = np_conv2d(xv, filters[name], strides, padding, dilations, explicit)
            if padding == "SAME":
                assert ref.shape[1:3] == (-(-h // strides[0]), -(-w // strides[1]))
            assert_close(out[name], ref, name, rtol=1e-5, atol=1e-5)
            assert_close(out[name + "_nchw"], nchw(ref), name + "_nchw", rtol=1e-5, atol=1e-5)

    run_batches(fetches, feeds, check)


def test_conv2d_unknown_spatial_dims():
    """SAME with stride 1 pads by the window alone, so H and W may stay symbolic."""
    x = tf.placeholder(tf.float32, [None, None, None, 2], name="x")
    filt = np.random.default_rng(1).normal(size=(3, 2, 2, 3)).astype(np.float32)
    y = tf.nn.conv2d(x, tf.constant(filt), strides=[1, 1, 1, 1], padding="SAME")
    v = tf.nn.conv2d(x, tf.constant(filt), strides=[1, 2, 2, 1], padding="VALID")
    with tf.Session() as sess:
        for shape in [(2, 5, 6, 2), (3, 4, 9, 2)]:
            xv = np.random.default_rng(sum(shape)).normal(size=shape).astype(np.float32)
            out, valid = sess.run([y, v], {x: xv})
            assert_close(out, np_conv2d(xv, filt, (1, 1), "SAME"), "same", rtol=1e-5, atol=1e-5)
            assert_close(valid, np_conv2d(xv, filt, (2, 2), "VALID"), "valid", rtol=1e-5, atol=1e-5)
        assert sess.cache_stats()["compiles"] == 1
        strided = tf.nn.conv2d(x, tf.constant(filt), strides=[1, 2, 2, 1], padding="SAME")
        with pytest.raises(UnsupportedOpsError, match="SAME padding with stride 2 along a dimension of unknown"):
            sess.run(strided, {x: np.zeros((1, 4, 4, 2), np.float32)})


def np_depthwise(x, w, strides, padding):
    c, m = w.shape[2], w.shape[3]
    outs = [np_conv2d(x[..., ci:ci + 1], w[:, :, ci:ci + 1, mi:mi + 1], strides, padding)
            for ci in range(c) for mi in range(m)]
    return np.concatenate(outs, axis=-1)  # channel ci * m + mi


def test_depthwise_conv2d_native():
    h, w, c, m = 6, 5, 3, 2
    x = tf.placeholder(tf.float32, [None, h, w, c], name="x")
    xc = tf.placeholder(tf.float32, [None, c, h, w], name="xc")
    filt = np.random.default_rng(2).normal(size=(3, 2, c, m)).astype(np.float32)
    cases = [("same", [1, 1, 1, 1], "SAME"), ("valid", [1, 1, 1, 1], "VALID"), ("same_s2", [1, 2, 2, 1], "SAME")]
    fetches = {name: tf.nn.depthwise_conv2d_native(x, tf.constant(filt), strides, padding)
               for name, strides, padding in cases}
    fetches["nchw"] = tf.nn.depthwise_conv2d_native(xc, tf.constant(filt), [1, 1, 2, 2], "SAME", data_format="NCHW")
    fetches["wrapper"] = tf.nn.depthwise_conv2d(x, tf.constant(filt), [1, 1, 1, 1], "SAME")

    def feeds(n):
        xv = np.random.default_rng(n).normal(size=(n, h, w, c)).astype(np.float32)
        return {x: xv, xc: nchw(xv)}

    def check(fed, out):
        xv = fed[x]
        for name, strides, padding in cases:
            ref = np_depthwise(xv, filt, strides[1:3], padding)
            assert_close(out[name], ref, name, rtol=1e-5, atol=1e-5)
        assert_close(out["nchw"], nchw(np_depthwise(xv, filt, (2, 2), "SAME")), "nchw", rtol=1e-5, atol=1e-5)
        assert_close(out["wrapper"], np_depthwise(xv, filt, (1, 1), "SAME"), "wrapper", rtol=1e-5, atol=1e-5)

    run_batches(fetches, feeds, check)


# -- pooling -------------------------------------------------------------------------------------
def np_pool(x, ksize, strides, padding, kind):
    """N-D pooling over every dim (ksize/strides per dim, in x's own layout)."""
    if padding == "SAME":
        pads = [same_pads(d, k, s) for d, k, s in zip(x.shape, ksize, strides)]
    else:
        pads = [(0, 0)] * x.ndim
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), pads, constant_values=fill)
    ones = np.pad(np.ones(x.shape), pads)
    out_shape = [(p - k) // s + 1 for p, k, s in zip(xp.shape, ksize, strides)]
    out = np.zeros(out_shape)
    for index in np.ndindex(*out_shape):
        window = tuple(slice(i * s, i * s + k) for i, k, s in zip(index, ksize, strides))
        if kind == "max":
            out[index] = xp[window].max()
        else:
            out[index] = xp[window].sum() / ones[window].sum()
    return out.astype(x.dtype)


_POOL_CASES = [
    ("same_3x3_s2", [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    ("valid_3x3_s2", [1, 3, 3, 1], [1, 2, 2, 1], "VALID"),
    ("same_2x2_s1", [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
    ("same_4x3_s3x2", [1, 4, 3, 1], [1, 3, 2, 1], "SAME"),
    ("valid_2x2_s2", [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
]


def test_max_and_avg_pool():
    x = tf.placeholder(tf.float32, [None, 7, 6, 2], name="x")
    xc = tf.placeholder(tf.float32, [None, 2, 7, 6], name="xc")
    k = tf.placeholder(tf.int32, [None, 4, 4, 1], name="k")
    fetches = {}
    for name, ksize, strides, padding in _POOL_CASES:
        fetches["max_" + name] = tf.nn.max_pool(x, ksize, strides, padding)
        fetches["avg_" + name] = tf.nn.avg_pool(x, ksize, strides, padding)
        to_nchw = [ksize[0], ksize[3], ksize[1], ksize[2]], [strides[0], strides[3], strides[1], strides[2]]
        fetches["maxc_" + name] = tf.nn.max_pool(xc, to_nchw[0], to_nchw[1], padding, data_format="NCHW")
        fetches["avgc_" + name] = tf.nn.avg_pool(xc, to_nchw[0], to_nchw[1], padding, data_format="NCHW")
    fetches["int_max"] = tf.nn.max_pool(k, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    fetches["depth_max"] = tf.nn.max_pool(x, [1, 1, 1, 2], [1, 1, 1, 2], "VALID")

    def feeds(n):
        rng = np.random.default_rng(n)
        xv = rng.normal(size=(n, 7, 6, 2)).astype(np.float32) - 3  # all negative-ish: padding must not win
        return {x: xv, xc: nchw(xv), k: rng.integers(-100, -1, (n, 4, 4, 1))}

    def check(fed, out):
        xv = fed[x]
        for name, ksize, strides, padding in _POOL_CASES:
            for kind in ("max", "avg"):
                ref = np_pool(xv, ksize, strides, padding, kind)
                assert_close(out[f"{kind}_{name}"], ref, f"{kind}_{name}", rtol=1e-5, atol=1e-6)
                assert_close(out[f"{kind}c_{name}"], nchw(ref), f"{kind}c_{name}", rtol=1e-5, atol=1e-6)
        kv = fed[k].astype(np.int32)
        assert_close(out["int_max"], np_pool(kv.astype(np.float64), [1, 3, 3, 1], [1, 2, 2, 1], "SAME", "max")
                     .astype(np.int32), "int_max")
        assert_close(out["depth_max"], xv.max(-1, keepdims=True), "depth_max")

    run_batches(fetches, feeds, check)


def test_avg_pool_same_divides_by_valid_count():
    """A 2x2 all-ones input with a 3x3 SAME window: every window sees 4 valid ones -> 1.0 (not 4/9)."""
    x = tf.placeholder(tf.float32, [None, 2, 2, 1])
    with tf.Session() as sess:
        out = sess.run(tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME"), {x: np.ones((1, 2, 2, 1), np.float32)})
    np.testing.assert_array_equal(out, np.ones((1, 2, 2, 1), np.float32))
    compiled = tf.compile([tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")], feeds=[x])
    final = compiled.ir("final")
    assert final.count("reduce_window") == 1, final  # the count was folded into a constant
