"""tf.layers (tfc/frontend/layers.py): TF 1.15's variable names, op names, collections and
layer properties, and compiled forward values against numpy (dense, conv, pooling,
flatten, dropout, batch normalization), plus small training loops.

Names follow TF 1.15's python/layers/base.py + keras/engine/base_layer.py: the layer's
``name`` is Keras' one-based per-graph unique name (``dense_1`` for the first unnamed
Dense, as TF's own core_test checks), the variable scope is ``variable_scope(None,
default_name='dense')`` (``dense/kernel:0``, then ``dense_1/kernel:0``).
"""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.registry import lookup_op_type

F32 = np.float32


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def op_names(graph, prefix=""):
    return [op.name for op in graph.get_operations() if op.name.startswith(prefix)]


def var_names(variables):
    return [v.name for v in variables]


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _have_gradients(*op_types) -> bool:
    return all(lookup_op_type(t).gradient is not None or lookup_op_type(t).not_differentiable for t in op_types)


def _optimizer_or_skip():
    optimizer = getattr(tf.train, "GradientDescentOptimizer", None)
    if optimizer is None:
        pytest.skip("tf.train.GradientDescentOptimizer is not available yet (tfc/frontend/train/)")
    return optimizer


# -- numpy references ----------------------------------------------------------------------------
def np_conv2d_nhwc(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """Direct convolution; SAME puts the odd padding element at the end, as TF does."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    ekh, ekw = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    if padding == "SAME":
        oh, ow = -(-h // strides[0]), -(-wd // strides[1])
        ph = max((oh - 1) * strides[0] + ekh - h, 0)
        pw = max((ow - 1) * strides[1] + ekw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - ekh) // strides[0] + 1, (wd - ekw) // strides[1] + 1
    out = np.zeros((n, oh, ow, f), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0]:i * strides[0] + ekh:dilations[0],
                      j * strides[1]:j * strides[1] + ekw:dilations[1], :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def np_pool_nhwc(x, k, s, padding, kind):
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s), -(-w // s)
        ph, pw = max((oh - 1) * s + k - h, 0), max((ow - 1) * s + k - w, 0)
        top, left = ph // 2, pw // 2
    else:
        oh, ow = (h - k) // s + 1, (w - k) // s + 1
        top = left = 0
    out = np.zeros((n, oh, ow, c), np.float64)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - top, j * s - left
            window = x[:, max(r0, 0):min(r0 + k, h), max(c0, 0):min(c0 + k, w), :]
            out[:, i, j, :] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


# -- Dense: the seed's example, names, properties ------------------------------------------------
SEED_X = [[1, 2, 3], [4, 5, 6]]
KERNEL = np.array([[0.5], [-1.0], [0.25]], F32)


def test_seed_dense_class_and_function_forms(graph):
    """seeds/001: tf.layers.Dense(units=1) on a [None, 3] placeholder, then tf.layers.dense."""
    x = tf.placeholder(tf.float32, shape=[None, 3])
    linear_model = tf.layers.Dense(units=1, kernel_initializer=tf.constant_initializer(KERNEL))
    assert linear_model.name == "dense_1" and linear_model.dtype is None and not linear_model.built
    y = linear_model(x)
    assert linear_model.built and linear_model.dtype == "float32"
    assert y.name == "dense/BiasAdd:0" and y.shape.as_list() == [None, 1]
    y2 = tf.layers.dense(x, units=1, kernel_initializer=tf.constant_initializer(KERNEL),
                         bias_initializer=tf.constant_initializer(0.5))
    assert y2.name == "dense_1/BiasAdd:0"
    assert var_names(tf.global_variables()) == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0",
                                                "dense_1/bias:0"]
    assert var_names(tf.trainable_variables()) == var_names(tf.global_variables())
    assert var_names(linear_model.trainable_variables) == ["dense/kernel:0", "dense/bias:0"]
    assert linear_model.weights == linear_model.variables == [linear_model.kernel, linear_model.bias]
    assert linear_model.kernel.shape.as_list() == [3, 1] and linear_model.bias.shape.as_list() == [1]
    out, out2 = run([y, y2], {x: SEED_X})
    expected = np.array(SEED_X, F32) @ KERNEL
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(out2, expected + 0.5, rtol=1e-6)


def test_dense_default_initializers_build_tf_ops(graph):
    """glorot_uniform kernel (limit sqrt(6 / (fan_in + fan_out))) and zeros bias, under
    ``dense/kernel/Initializer/`` and ``dense/bias/Initializer/``."""
    x = tf.placeholder(tf.float32, shape=[None, 3])
    y = tf.layers.dense(x, 4)
    assert op_names(graph, "dense/") == [
        "dense/kernel/Initializer/random_uniform/shape", "dense/kernel/Initializer/random_uniform/min",
        "dense/kernel/Initializer/random_uniform/max", "dense/kernel/Initializer/random_uniform/RandomUniform",
        "dense/kernel/Initializer/random_uniform/sub", "dense/kernel/Initializer/random_uniform/mul",
        "dense/kernel/Initializer/random_uniform", "dense/kernel", "dense/kernel/Assign", "dense/kernel/read",
        "dense/bias/Initializer/zeros", "dense/bias", "dense/bias/Assign", "dense/bias/read",
        "dense/MatMul", "dense/BiasAdd"]
    assert graph.get_operation_by_name("dense/MatMul").type == "MatMul"
    assert [t.name for t in graph.get_operation_by_name("dense/MatMul").inputs] == ["Placeholder:0",
                                                                                  "dense/kernel/read:0"]
    kernel, bias = run(tf.trainable_variables())
    limit = np.sqrt(6.0 / (3 + 4))
    assert kernel.shape == (3, 4) and np.all(np.abs(kernel) <= limit) and np.any(kernel != 0)
    np.testing.assert_array_equal(bias, np.zeros(4, F32))
    assert y.shape.as_list() == [None, 4]


def test_dense_activation_names_and_values(graph):
    x = tf.constant(np.array([[1.0, -2.0], [3.0, 0.5]], F32))
    init = tf.constant_initializer(np.array([[1.0, -1.0], [2.0, 0.5]], F32))
    outs = {
        "relu": tf.layers.dense(x, 2, activation=tf.nn.relu, kernel_initializer=init),
        "tanh": tf.layers.dense(x, 2, activation=tf.tanh, kernel_initializer=init),
        "sigmoid": tf.layers.dense(x, 2, activation="sigmoid", kernel_initializer=init),
        "none": tf.layers.dense(x, 2, use_bias=False, kernel_initializer=init),
    }
    assert outs["relu"].name == "dense/Relu:0"
    assert outs["tanh"].name == "dense_1/Tanh:0"
    assert outs["sigmoid"].name == "dense_2/Sigmoid:0"
    assert outs["none"].name == "dense_3/MatMul:0"
    assert var_names(tf.global_variables())[-1] == "dense_3/kernel:0"  # no bias
    got = run(outs)
    z = np.array([[1.0, -2.0], [3.0, 0.5]]) @ np.array([[1.0, -1.0], [2.0, 0.5]])
    np.testing.assert_allclose(got["relu"], np.maximum(z, 0), rtol=1e-6)
    np.testing.assert_allclose(got["tanh"], np.tanh(z), rtol=1e-6)
    np.testing.assert_allclose(got["sigmoid"], 1 / (1 + np.exp(-z)), rtol=1e-6)
    np.testing.assert_allclose(got["none"], z, rtol=1e-6)


def test_dense_rank3_uses_tensordot(graph):
    """Keras Dense.call: tensordot over the last axis for inputs of rank > 2."""
    x = tf.placeholder(tf.float32, shape=[None, 4, 5])
    w = np.arange(10, dtype=F32).reshape(5, 2) / 10
    y = tf.layers.dense(x, 2, kernel_initializer=tf.constant_initializer(w),
                        bias_initializer=tf.constant_initializer([1.0, -1.0]))
    assert y.name == "dense/BiasAdd:0" and y.shape.as_list() == [None, 4, 2]
    names = op_names(graph, "dense/Tensordot")
    for expected in ("dense/Tensordot/axes", "dense/Tensordot/free", "dense/Tensordot/Shape",
                     "dense/Tensordot/GatherV2", "dense/Tensordot/Prod", "dense/Tensordot/stack",
                     "dense/Tensordot/transpose", "dense/Tensordot/Reshape", "dense/Tensordot/MatMul",
                     "dense/Tensordot"):
        assert expected in names
    xv = np.random.RandomState(0).randn(3, 4, 5).astype(F32)
    np.testing.assert_allclose(run(y, {x: xv}), xv @ w + [1.0, -1.0], rtol=1e-5, atol=1e-6)


def test_layer_called_twice_reuses_variables_and_scope(graph):
    x1 = tf.placeholder(tf.float32, [None, 3])
    x2 = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, kernel_initializer=tf.constant_initializer(KERNEL.repeat(2, 1)))
    y1, y2 = layer(x1), layer.apply(x2)
    assert y1.name == "dense/BiasAdd:0" and y2.name == "dense/BiasAdd_1:0"
    assert "dense/MatMul_1" in op_names(graph)
    assert len(tf.global_variables()) == 2
    assert layer.scope_name == "dense"
    a, b = run([y1, y2], {x1: SEED_X, x2: np.ones((1, 3), F32)})
    np.testing.assert_allclose(a, np.array(SEED_X, F32) @ KERNEL.repeat(2, 1))
    np.testing.assert_allclose(b, np.ones((1, 3), F32) @ KERNEL.repeat(2, 1))


def test_named_layers_share_with_reuse(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    a = tf.layers.dense(x, 2, name="fc")
    b = tf.layers.dense(x, 2, name="fc", reuse=True)
    assert a.name == "fc/BiasAdd:0" and b.name == "fc_1/BiasAdd:0"
    assert var_names(tf.global_variables()) == ["fc/kernel:0", "fc/bias:0"]
    with pytest.raises(ValueError, match="Variable fc/kernel already exists, disallowed"):
        tf.layers.dense(x, 2, name="fc")
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        c = tf.layers.dense(x, 2, name="head")
        d = tf.layers.dense(x, 2, name="head")
    assert c.name == "model/head/BiasAdd:0" and d.name == "model/head_1/BiasAdd:0"
    assert var_names(tf.global_variables())[2:] == ["model/head/kernel:0", "model/head/bias:0"]
    va, vb, vc, vd = run([a, b, c, d], {x: SEED_X})
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(vc, vd)


def test_scopes_initializer_trainable_and_dtype(graph):
    with tf.variable_scope("model", initializer=tf.constant_initializer(0.5)):
        with tf.name_scope("ignored_by_variables"):
            y = tf.layers.dense(tf.constant([[1.0, 2.0]]), 3)
    assert var_names(tf.global_variables()) == ["model/dense/kernel:0", "model/dense/bias:0"]
    assert y.name == "model/ignored_by_variables/dense/BiasAdd:0"
    frozen = tf.layers.Dense(1, trainable=False)
    frozen(tf.constant([[1.0]]))
    assert frozen.trainable_variables == [] and len(frozen.non_trainable_variables) == 2
    assert var_names(tf.trainable_variables()) == ["model/dense/kernel:0", "model/dense/bias:0"]
    d64 = tf.layers.Dense(1)
    y64 = d64(tf.constant([[1.0, 2.0]], dtype=tf.float64))
    assert d64.dtype == "float64" and d64.kernel.dtype.base_dtype == tf.float64 and y64.dtype == tf.float64
    np.testing.assert_allclose(run(y), [[1.5, 1.5, 1.5]])


def test_custom_layer_subclass(graph):
    """A user Layer: add_weight in build, ops of call in the layer's name scope."""
    class ScaleShift(tf.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight("scale", shape=[int(input_shape[-1])],
                                         initializer=tf.constant_initializer(3.0))
            self.step = self.add_weight("step", shape=[], dtype=tf.int32, trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            return inputs * self.scale + 1.0

    layer = ScaleShift()
    assert layer.name == "scale_shift_1"
    y = layer(tf.constant([[1.0, 2.0]]))
    assert y.name == "scale_shift/add:0" and "scale_shift/mul" in op_names(graph)
    assert var_names(layer.trainable_weights) == ["scale_shift/scale:0"]
    assert var_names(layer.non_trainable_weights) == ["scale_shift/step:0"]
    assert var_names(tf.trainable_variables()) == ["scale_shift/scale:0"]
    named = ScaleShift(name="custom")
    named(tf.constant([[1.0]]))
    assert named.name == "custom" and named.scope_name == "custom"
    got, step = run([y, layer.step])
    np.testing.assert_allclose(got, [[4.0, 7.0]])
    assert step == 0


def test_dense_input_checks(graph):
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        tf.layers.dense(tf.constant([1.0, 2.0]), 2)
    with pytest.raises(ValueError, match="The last dimension of the inputs to `Dense` should be defined"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
    with pytest.raises(TypeError, match="Unable to build `Dense` layer with non-floating point dtype"):
        tf.layers.dense(tf.constant([[1, 2]]), 2)
    layer = tf.layers.Dense(2)
    layer(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(tf.placeholder(tf.float32, [None, 4]))


def test_regularizers_join_regularization_losses(graph):
    x = tf.constant([[1.0, 2.0]])
    tf.layers.dense(x, 2, kernel_initializer=tf.constant_initializer(1.0),
                    kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(tf.square(w)),
                    activity_regularizer=lambda a: tf.reduce_sum(a))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["dense/kernel/Regularizer/mul:0", "dense/ActivityRegularizer/truediv:0"]
    total = tf.losses.get_regularization_loss()
    assert total.name == "total_regularization_loss:0"
    # kernel 1s: 0.1 * 4; activity: sum([[3, 3]]) / batch 1
    np.testing.assert_allclose(run(total), 0.4 + 6.0, rtol=1e-6)


# -- Conv2D, pooling, flatten --------------------------------------------------------------------
def test_conv2d_names_shapes_and_values(graph):
    rng = np.random.RandomState(1)
    xv = rng.randn(2, 7, 6, 3).astype(F32)
    w1 = rng.randn(3, 3, 3, 4).astype(F32)
    w2 = rng.randn(2, 2, 3, 2).astype(F32)
    w3 = rng.randn(3, 3, 3, 2).astype(F32)
    x = tf.placeholder(tf.float32, [None, 7, 6, 3])
    valid = tf.layers.conv2d(x, 4, 3, activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(w1),
                             bias_initializer=tf.constant_initializer(0.1))
    same = tf.layers.conv2d(x, 2, (2, 2), strides=2, padding="same", kernel_initializer=tf.constant_initializer(w2))
    dilated = tf.layers.conv2d(x, 2, 3, dilation_rate=2, padding="same", kernel_initializer=tf.constant_initializer(w3))
    assert valid.name == "conv2d/Relu:0" and valid.shape.as_list() == [None, 5, 4, 4]
    assert same.name == "conv2d_1/BiasAdd:0" and same.shape.as_list() == [None, 4, 3, 2]
    assert dilated.shape.as_list() == [None, 7, 6, 2]
    assert var_names(tf.global_variables())[:4] == ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0",
                                                    "conv2d_1/bias:0"]
    conv = graph.get_operation_by_name("conv2d_1/Conv2D")
    assert conv.type == "Conv2D" and conv.get_attr("strides") == [1, 2, 2, 1]
    assert conv.get_attr("padding") == b"SAME" or conv.get_attr("padding") == "SAME"
    got = run([valid, same, dilated], {x: xv})
    np.testing.assert_allclose(got[0], np.maximum(np_conv2d_nhwc(xv, w1) + 0.1, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], np_conv2d_nhwc(xv, w2, (2, 2), "SAME"), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], np_conv2d_nhwc(xv, w3, padding="SAME", dilations=(2, 2)), rtol=1e-4,
                               atol=1e-5)


def test_conv2d_channels_first(graph):
    rng = np.random.RandomState(2)
    xv = rng.randn(2, 3, 5, 5).astype(F32)
    w = rng.randn(3, 3, 3, 2).astype(F32)
    layer = tf.layers.Conv2D(2, 3, data_format="channels_first", kernel_initializer=tf.constant_initializer(w),
                             bias_initializer=tf.constant_initializer([1.0, 2.0]))
    y = layer(tf.constant(xv))
    assert y.shape.as_list() == [2, 2, 3, 3] and layer.kernel.shape.as_list() == [3, 3, 3, 2]
    assert graph.get_operation_by_name("conv2d/BiasAdd").get_attr("data_format") in (b"NCHW", "NCHW")
    expected = np_conv2d_nhwc(xv.transpose(0, 2, 3, 1), w).transpose(0, 3, 1, 2) + np.array([1.0, 2.0])[:, None, None]
    np.testing.assert_allclose(run(y), expected, rtol=1e-4, atol=1e-5)


def test_pooling_and_flatten(graph):
    rng = np.random.RandomState(3)
    xv = rng.randn(2, 5, 5, 3).astype(F32)
    x = tf.placeholder(tf.float32, [None, 5, 5, 3])
    mp = tf.layers.max_pooling2d(x, 2, 2)
    ap = tf.layers.average_pooling2d(x, 3, 2, padding="same")
    flat = tf.layers.flatten(mp)
    assert mp.name == "max_pooling2d/MaxPool:0" and mp.shape.as_list() == [None, 2, 2, 3]
    assert ap.name == "average_pooling2d/AvgPool:0" and ap.shape.as_list() == [None, 3, 3, 3]
    assert flat.name == "flatten/Reshape:0" and flat.shape.as_list() == [None, 12]
    with pytest.raises(ValueError, match="Argument `strides` must not be None"):
        tf.layers.MaxPooling2D(2, None)
    assert tf.global_variables() == []
    got = run([mp, ap, flat], {x: xv})
    np.testing.assert_allclose(got[0], np_pool_nhwc(xv, 2, 2, "VALID", "max"), rtol=1e-6)
    np.testing.assert_allclose(got[1], np_pool_nhwc(xv, 3, 2, "SAME", "avg"), rtol=1e-5)
    np.testing.assert_allclose(got[2], np_pool_nhwc(xv, 2, 2, "VALID", "max").reshape(2, 12), rtol=1e-6)


def test_flatten_static_and_dynamic_inner_dims(graph):
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = tf.layers.flatten(x)
    shape_op = graph.get_operation_by_name("flatten/Reshape/shape")
    assert shape_op.type == "Const"
    from tfc.frontend.tensor_util import constant_value

    np.testing.assert_array_equal(constant_value(shape_op.outputs[0]), [-1, 6])
    y = tf.placeholder(tf.float32, [4, None, 2])
    flat_dynamic = tf.layers.flatten(y)
    assert flat_dynamic.shape.as_list() == [4, None]
    cf = tf.layers.flatten(tf.constant(np.arange(12, dtype=F32).reshape(1, 3, 2, 2)), data_format="channels_first")
    a, b, c = run([flat, flat_dynamic, cf], {x: np.ones((5, 2, 3), F32), y: np.ones((4, 3, 2), F32)})
    assert a.shape == (5, 6) and b.shape == (4, 6)
    np.testing.assert_array_equal(c, np.arange(12, dtype=F32).reshape(1, 3, 2, 2).transpose(0, 2, 3, 1).reshape(1, 12))


# -- Dropout ---------------------------------------------------------------------------------------
def test_dropout_rate_scaling_and_modes(graph):
    tf.set_random_seed(42)
    x = tf.ones([100, 100])
    off = tf.layers.dropout(x, rate=0.3)
    on = tf.layers.dropout(x, rate=0.3, training=True, seed=7)
    const_on = tf.layers.Dropout(0.3, seed=7)(x, training=tf.constant(True))
    assert off.name == "dropout/Identity:0" and off.op.type == "Identity"
    assert on.name == "dropout_1/dropout/mul_1:0"
    assert "dropout_1/dropout/random_uniform/RandomUniform" in op_names(graph)
    assert const_on.name == "dropout_2/dropout/mul_1:0"
    with tf.Session() as sess:
        a, b1, c = sess.run([off, on, const_on])
        b2 = sess.run(on)
    np.testing.assert_array_equal(a, np.ones((100, 100), F32))
    for b in (b1, b2, c):
        kept = b != 0
        np.testing.assert_allclose(b[kept], 1 / 0.7, rtol=1e-6)
        assert abs(1 - kept.mean() - 0.3) < 0.03
    assert not np.array_equal(b1, b2)  # a new mask each run
    with tf.Session() as sess:  # graph + op seed: the same masks in a new session
        np.testing.assert_array_equal(sess.run(on), b1)


def test_dropout_training_placeholder_needs_cond(graph):
    with pytest.raises(NotImplementedError, match="tf.cond"):
        tf.layers.dropout(tf.ones([2, 2]), training=tf.placeholder(tf.bool))


# -- BatchNormalization ------------------------------------------------------------------------------
BN_INIT = dict(gamma_initializer=tf.constant_initializer(2.0), beta_initializer=tf.constant_initializer(0.5),
               moving_mean_initializer=tf.constant_initializer(0.1),
               moving_variance_initializer=tf.constant_initializer(1.5))


def test_batch_norm_variables_collections_and_update_ops(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.batch_normalization(x, training=True)
    assert y.name == "batch_normalization/batchnorm/add_1:0"
    assert var_names(tf.global_variables()) == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0", "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0"]
    assert var_names(tf.trainable_variables()) == ["batch_normalization/gamma:0", "batch_normalization/beta:0"]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [(u.name, u.type) for u in updates] == [("batch_normalization/AssignMovingAvg", "AssignSub"),
                                                   ("batch_normalization/AssignMovingAvg_1", "AssignSub")]
    names = op_names(graph, "batch_normalization/")
    for expected in ("batch_normalization/moments/mean", "batch_normalization/moments/StopGradient",
                     "batch_normalization/moments/SquaredDifference", "batch_normalization/moments/variance",
                     "batch_normalization/moments/Squeeze", "batch_normalization/moments/Squeeze_1",
                     "batch_normalization/AssignMovingAvg/decay", "batch_normalization/AssignMovingAvg/sub",
                     "batch_normalization/AssignMovingAvg/mul", "batch_normalization/batchnorm/add",
                     "batch_normalization/batchnorm/Rsqrt", "batch_normalization/batchnorm/mul_2",
                     "batch_normalization/batchnorm/sub"):
        assert expected in names
    assert updates[0].inputs[0].op.name == "batch_normalization/moving_mean"
    # inference: no moments, no updates
    z = tf.layers.batch_normalization(x, training=False)
    assert z.name == "batch_normalization_1/batchnorm/add_1:0"
    assert not [n for n in op_names(graph, "batch_normalization_1/") if "moments" in n or "Assign" in n.split("/")[1]]
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2


def test_batch_norm_train_then_inference_values(graph):
    rng = np.random.RandomState(4)
    xv = (rng.randn(8, 3) * [1.0, 2.0, 0.5] + [0.0, 1.0, -2.0]).astype(F32)
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.BatchNormalization(momentum=0.9, epsilon=1e-3, **BN_INIT)
    train_out = layer(x, training=True)
    infer_out = layer(x, training=False)
    assert infer_out.name == "batch_normalization/batchnorm_1/add_1:0"
    assert len(layer.updates) == 2 and layer.fused is False
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(infer_out, {x: xv})
        out = sess.run([train_out] + layer.updates, {x: xv})[0]
        mm, mv = sess.run([layer.moving_mean, layer.moving_variance])
        after = sess.run(infer_out, {x: xv})
    mean, var = xv.mean(0), xv.var(0)
    np.testing.assert_allclose(before, (xv - 0.1) / np.sqrt(1.5 + 1e-3) * 2.0 + 0.5, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, (xv - mean) / np.sqrt(var + 1e-3) * 2.0 + 0.5, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mm, 0.9 * 0.1 + 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 * 1.5 + 0.1 * var, rtol=1e-5)
    np.testing.assert_allclose(after, (xv - mm) / np.sqrt(mv + 1e-3) * 2.0 + 0.5, rtol=1e-4, atol=1e-5)


def test_batch_norm_4d_where_tf_is_fused(graph):
    """TF 1.15 uses FusedBatchNorm for 4-D inputs: the moving variance receives the
    Bessel-corrected batch variance; outputs use the biased one."""
    rng = np.random.RandomState(5)
    xv = rng.randn(2, 3, 3, 2).astype(F32)
    layer = tf.layers.BatchNormalization(momentum=0.5)
    y = layer(tf.constant(xv), training=True)
    assert layer.fused is True
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run([y] + tf.get_collection(tf.GraphKeys.UPDATE_OPS))[0]
        mv = sess.run(layer.moving_variance)
    mean, var = xv.mean((0, 1, 2)), xv.var((0, 1, 2))
    np.testing.assert_allclose(out, (xv - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mv, 0.5 * 1.0 + 0.5 * var * 18 / 17, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="tf.cond"):
        layer(tf.constant(xv), training=tf.placeholder(tf.bool))


def test_batch_norm_channels_first_axis(graph):
    rng = np.random.RandomState(6)
    xv = rng.randn(4, 2, 3).astype(F32)
    y = tf.layers.batch_normalization(tf.constant(xv), axis=1, training=True)
    gamma = tf.global_variables()[0]
    assert gamma.shape.as_list() == [2]
    assert "batch_normalization/Reshape" in op_names(graph)  # params broadcast to [1, C, 1]
    mean, var = xv.mean((0, 2), keepdims=True), xv.var((0, 2), keepdims=True)
    np.testing.assert_allclose(run(y), (xv - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)


# -- training --------------------------------------------------------------------------------------
def test_training_loop_small_dense_network(graph):
    optimizer = _optimizer_or_skip()
    rng = np.random.RandomState(0)
    xv = rng.randn(64, 3).astype(F32)
    yv = (xv @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(F32)
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.float32, [None, 1])
    hidden = tf.layers.dense(x, 8, activation=tf.nn.tanh)
    pred = tf.layers.dense(hidden, 1)
    loss = tf.losses.mean_squared_error(labels, pred)
    train_op = optimizer(0.1).minimize(loss)
    assert tf.losses.get_losses() == [loss]
    with tf.Session() as sess:  # one program: the loss before each step, then the step
        sess.run(tf.global_variables_initializer())
        history = [sess.run([loss, train_op], {x: xv, labels: yv})[0] for _ in range(150)]
    assert history[-1] < 0.05 * history[0], (history[0], history[-1])


def test_training_with_batch_norm_update_ops(graph):
    optimizer = _optimizer_or_skip()
    needed = ("Rsqrt", "SquaredDifference", "Mean", "Squeeze", "StopGradient", "BiasAdd", "Relu")
    if not _have_gradients(*needed):
        pytest.xfail("gradients of the batch norm ops are not all registered yet")
    rng = np.random.RandomState(1)
    xv = (rng.randn(32, 4) * 3 + 1).astype(F32)
    yv = (np.sin(xv).sum(1, keepdims=True)).astype(F32)
    tf.set_random_seed(7)  # unseeded initializers draw per session: fix them, so the loss curve is one curve
    x = tf.placeholder(tf.float32, [None, 4])
    labels = tf.placeholder(tf.float32, [None, 1])
    h = tf.layers.batch_normalization(tf.layers.dense(x, 16, activation=tf.nn.relu), training=True)
    loss = tf.losses.mean_squared_error(labels, tf.layers.dense(h, 1))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer(0.05).minimize(loss)
    moving_mean = tf.global_variables()[4]
    assert moving_mean.name == "batch_normalization/moving_mean:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        history = [sess.run([loss, moving_mean, train_op], {x: xv, labels: yv})[:2] for _ in range(100)]
    assert history[-1][0] < 0.5 * history[0][0]
    assert not np.array_equal(history[-1][1], history[-2][1])  # the update ops run with each step
