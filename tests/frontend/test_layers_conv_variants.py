"""tf.layers.conv1d / Conv1D, conv2d_transpose / Conv2DTranspose, separable_conv2d /
SeparableConv2D, conv3d / Conv3D and max_pooling3d / average_pooling3d (MaxPooling3D,
AveragePooling3D): TF 1.15's variable and op names, output shapes, and values and
gradients against real TensorFlow (tests/fixtures/conv3d.json ``layers``, the same
computations from tf.nn ops with the same weights; made by
tests/fixtures/make_conv3d_fixture.py). Channels-first layers agree with channels-last ones.

All layers are built in one graph and run in one session step (one compilation)."""
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_conv3d_fixture",
                                               os.path.join(_FIXTURES, "make_conv3d_fixture.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)  # the case tables; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "conv3d.json")) as _f:
    FIXTURE = json.load(_f)["layers"]

_INITIALIZER_ARGS = {"kernel": "kernel_initializer", "bias": "bias_initializer",
                     "depthwise_kernel": "depthwise_initializer", "pointwise_kernel": "pointwise_initializer"}

EXPECTED_VARIABLES = [
    "conv1d/kernel:0", "conv1d/bias:0", "conv1d_1/kernel:0", "conv1d_1/bias:0", "conv1d_2/kernel:0",
    "conv1d_2/bias:0", "conv2d_transpose/kernel:0", "conv2d_transpose/bias:0", "conv2d_transpose_1/kernel:0",
    "conv2d_transpose_1/bias:0", "separable_conv2d/depthwise_kernel:0", "separable_conv2d/pointwise_kernel:0",
    "separable_conv2d/bias:0", "separable_conv2d_1/depthwise_kernel:0", "separable_conv2d_1/pointwise_kernel:0",
    "separable_conv2d_1/bias:0", "conv3d/kernel:0", "conv3d/bias:0", "conv3d_1/kernel:0", "conv3d_1/bias:0",
]

EXPECTED_OPS = {  # TF 1.15's op names inside the layers' scopes
    "conv1d/conv1d/ExpandDims": "ExpandDims", "conv1d/conv1d": "Conv2D", "conv1d/conv1d/Squeeze": "Squeeze",
    "conv1d/BiasAdd": "BiasAdd", "conv1d/Relu": "Relu", "conv1d_1/Pad": "Pad",
    "conv2d_transpose/stack": "Pack",
    "conv2d_transpose/conv2d_transpose": "Conv2DBackpropInput", "conv2d_transpose/BiasAdd": "BiasAdd",
    "separable_conv2d/separable_conv2d/depthwise": "DepthwiseConv2dNative",
    "separable_conv2d/separable_conv2d": "Conv2D", "separable_conv2d/BiasAdd": "BiasAdd",
    "conv3d/Conv3D": "Conv3D", "conv3d/BiasAdd": "BiasAdd", "conv3d_1/Tanh": "Tanh",
    "max_pooling3d/MaxPool3D": "MaxPool3D", "average_pooling3d/AvgPool3D": "AvgPool3D",
}


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _build(name, x, data_format="channels_last"):
    function, kwargs, _, weight_shapes = cases.LAYER_CASES[name]
    kwargs = dict(kwargs)
    for i, (weight, shape) in enumerate(weight_shapes.items()):
        kwargs[_INITIALIZER_ARGS[weight]] = tf.constant_initializer(cases.case_input(shape, i + 1))
    if "activation" in kwargs:
        kwargs["activation"] = {"relu": tf.nn.relu, "tanh": tf.nn.tanh}[kwargs["activation"]]
    if data_format != "channels_last":
        kwargs["data_format"] = data_format
    return getattr(tf.layers, function)(x, **kwargs)


def _channels_first(x):
    return tf.transpose(x, [0, x.shape.ndims - 1] + list(range(1, x.shape.ndims - 1)))


def test_layers_as_tensorflow(fresh_graph):
    built, first = {}, {}
    for name, (_, _, shape, _) in cases.LAYER_CASES.items():
        x = tf.constant(cases.case_input(shape, 0))
        before = set(tf.global_variables())
        y = _build(name, x)
        assert y.shape.as_list() == FIXTURE[name]["shape"], name
        weights = [v for v in tf.global_variables() if v not in before]
        grads = tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp(y.shape.as_list()))), [x] + weights)
        built[name] = (y, grads)
    assert [v.name for v in tf.global_variables()] == EXPECTED_VARIABLES
    assert [v.name for v in tf.trainable_variables()] == EXPECTED_VARIABLES
    ops = {op.name: op.type for op in fresh_graph.get_operations()}
    assert {name: ops.get(name) for name in EXPECTED_OPS} == EXPECTED_OPS
    assert fresh_graph.get_tensor_by_name("separable_conv2d/depthwise_kernel:0").shape.as_list() == [3, 3, 3, 2]
    assert fresh_graph.get_tensor_by_name("conv2d_transpose/kernel:0").shape.as_list() == [3, 3, 4, 3]
    # channels_first layers (TF's CPU path: NHWC inside for the transposed conv and the 3-D pools)
    for name in ("conv1d_same_relu", "conv2d_transpose_same", "separable_conv2d", "conv3d_same", "max_pooling3d",
                 "average_pooling3d_same"):
        x = _channels_first(tf.constant(cases.case_input(cases.LAYER_CASES[name][2], 0)))
        first[name] = _build(name, x, "channels_first")
        assert first[name].shape.as_list() == _channels_first(built[name][0]).shape.as_list(), name
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values, first_values = sess.run([built, first])
        assert sess.cache_stats()["compiles"] == 2  # the initializer, then the step
    for name, (y, grads) in values.items():
        want = FIXTURE[name]
        np.testing.assert_allclose(y, want["value"], rtol=2e-5, atol=2e-5, err_msg=name)
        assert len(grads) == len(want["gradients"]), name
        for g, w in zip(grads, want["gradients"]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=5e-5, err_msg=name)
    for name, y in first_values.items():
        y_last = values[name][0]
        np.testing.assert_allclose(y, np.moveaxis(y_last, -1, 1), rtol=1e-5, atol=1e-5, err_msg=name)


def test_layer_objects_shapes_and_reuse():
    x = tf.placeholder(tf.float32, [None, 6, 7, 8, 2])
    layer = tf.layers.Conv3D(4, (3, 2, 2), strides=(2, 1, 2), padding="same", name="c3")
    y = layer(x)
    assert y.shape.as_list() == [None, 3, 7, 4, 4]
    assert layer.compute_output_shape([5, 6, 7, 8, 2]).as_list() == [5, 3, 7, 4, 4]
    assert [v.name for v in layer.variables] == ["c3/kernel:0", "c3/bias:0"]
    layer(x)  # a second call reuses the variables, in the same name scope
    assert len(tf.global_variables()) == 2
    assert tf.get_default_graph().get_operation_by_name("c3/Conv3D_1").type == "Conv3D"

    transpose = tf.layers.Conv2DTranspose(3, 3, strides=2, use_bias=False)
    z = transpose(tf.placeholder(tf.float32, [None, 4, None, 5]))
    assert z.shape.as_list() == [None, 9, None, 3]  # valid: 4 * 2 + (3 - 2)
    assert transpose.kernel.shape.as_list() == [3, 3, 3, 5] and transpose.bias is None
    sep = tf.layers.SeparableConv2D(6, [2, 3], depth_multiplier=3, name="sep")
    assert sep(tf.zeros([1, 5, 5, 2])).shape.as_list() == [1, 4, 3, 6]
    assert [v.shape.as_list() for v in sep.trainable_weights] == [[2, 3, 2, 3], [1, 1, 6, 6], [6]]
    conv1 = tf.layers.Conv1D(2, 4, strides=3, padding="valid")
    assert conv1(tf.zeros([2, 10, 3])).shape.as_list() == [2, 3, 2]
    assert conv1.kernel.shape.as_list() == [4, 3, 2]
    pool = tf.layers.MaxPooling3D([1, 2, 3], 2, padding="same", data_format="channels_first")
    assert pool(tf.zeros([1, 3, 4, 5, 6])).shape.as_list() == [1, 3, 2, 3, 3]
    assert tf.layers.AveragePooling3D(2, 1)(tf.zeros([1, 3, 3, 3, 1])).shape.as_list() == [1, 2, 2, 2, 1]
    with pytest.raises(ValueError, match="Causal padding is only supported"):
        tf.layers.Conv3D(1, 1, padding="causal")
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be defined"):
        tf.layers.conv3d(tf.placeholder(tf.float32, [1, 2, 2, 2, None]), 1, 1)
    with pytest.raises(ValueError, match="expected ndim=5"):
        tf.layers.max_pooling3d(tf.zeros([1, 2, 2, 1]), 1, 1)
