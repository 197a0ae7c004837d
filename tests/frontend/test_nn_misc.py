"""tf.nn.swish, crelu, depth_to_space / space_to_depth, the pool wrappers, the
weighted / Poisson losses, sufficient_statistics / normalize_moments / weighted_moments,
batch_norm_with_global_normalization, max_pool_with_argmax, compute_average_loss /
scale_regularization_loss against real TensorFlow's graphs, values and gradients
(tests/fixtures/nn_misc.json, made by tests/fixtures/make_nn_misc_fixture.py); tf.assert_near,
tf.assert_proper_iterable, tf.RegisterGradient / NotDifferentiable / gradient_override_map,
tf.AggregationMethod and the version constants."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURE = json.load(open(os.path.join(HERE, "nn_misc.json")))
FIXTURES = FIXTURE["cases"]


def _cases():
    """NN_MISC_CASES and helpers from the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_nn_misc_fixture.py")).read()
    start = source.index("def case_input")
    end = source.index("def record")
    namespace = {"np": np}
    exec(source[start:end], namespace)
    return namespace


NS = _cases()
CASES = NS["NN_MISC_CASES"]
# Where TF 2.21 (the fixture's TensorFlow) builds another graph than TF 1.15 (what tfc follows):
# TF 1.15's swish is the Defun "swish" (tfc: its Mul/Sigmoid directly; TF 2.21: custom_gradient
# IdentityN); TF 1.15's compute_average_loss divides by the cast batch size with no assertions
# (TF 2.21: asserts and DivNoNan); TF 1.15's reduce_sum of a scalar takes its axes as a Const
# (TF 2.21: a Range); TF 1.15's math_ops.add is an Add op (TF 2.x: AddV2).
TF1_NODES = {
    "swish": [["Sigmoid", "Sigmoid"], ["mul", "Mul"]],
    "compute_average_loss": [["strided_slice", "StridedSlice"], ["mul", "Mul"], ["Cast", "Cast"], ["Sum", "Sum"],
                             ["truediv", "RealDiv"]],
    "compute_average_loss_weighted": [["Mul", "Mul"], ["Sum", "Sum"], ["truediv", "RealDiv"]],
    "scale_regularization_loss": [["Sum", "Sum"], ["Sum_1", "Sum"], ["truediv", "RealDiv"]],
}
TF1_ADD = {"normalize_moments_shift": "norm/mean", "weighted_xent": "logistic_loss"}
TF1_GRAD_NODES = {"swish": [["gradients/Sigmoid_grad/SigmoidGrad", "SigmoidGrad"]]}


def _tf1_nodes(name, nodes):
    nodes = TF1_NODES.get(name, nodes)
    return [[n, "Add" if n == TF1_ADD.get(name) else t] for n, t in nodes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_nn_misc_as_tensorflow(name):
    build, specs, grad_inputs = CASES[name]
    want = FIXTURES[name]
    with tf.Graph().as_default() as g:
        inputs = [tf.constant(v) for v in NS["case_inputs"](specs)]
        before = set(g.get_operations())
        result = build(tf, *inputs)
        nodes = [[o.name, o.type] for o in g.get_operations() if o not in before and o.type != "Const"]
        assert nodes == _tf1_nodes(name, want["nodes"])
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        for t, w in zip(outputs, want["outputs"]):
            assert t.dtype.name == w["dtype"]
            assert t.shape.as_list() == w["shape"]
        y = outputs[0]
        grads = tf.gradients(tf.reduce_sum(y * tf.constant(NS["ramp"](y.shape.as_list()))),
                             [inputs[i] for i in grad_inputs])
        assert [g_ is None for g_ in grads] == [w is None for w in want["gradients"]]
        grad_nodes = [[o.name, o.type] for o in g.get_operations() if o.type in NS["GRAD_TYPES"]
                      and o.name.startswith("gradients/")]
        assert grad_nodes == TF1_GRAD_NODES.get(name, want["grad_nodes"])
        with tf.Session() as sess:
            values, grad_values = sess.run([outputs, [g_ for g_ in grads if g_ is not None]])
    assert len(values) == len(want["outputs"])
    for v, w in zip(values, want["outputs"]):
        if w["dtype"].startswith("int"):
            np.testing.assert_array_equal(v, w["value"])
        else:
            np.testing.assert_allclose(v, w["value"], rtol=2e-5, atol=2e-5)
    for v, w in zip(grad_values, [w for w in want["gradients"] if w is not None]):
        np.testing.assert_allclose(v, w, rtol=1e-4, atol=5e-5)


def test_names_and_aliases():
    assert tf.nn.silu is tf.nn.swish
    assert tf.nn.avg_pool2d is tf.nn.avg_pool
    assert tf.depth_to_space is tf.nn.depth_to_space
    assert tf.space_to_depth is tf.nn.space_to_depth
    assert tf.debugging.assert_near is tf.assert_near
    assert tf.no_gradient is tf.NotDifferentiable


def test_max_pool_v2_rank4_is_tf1_max_pool():
    """TF 1.15's max_pool_v2 calls gen_nn_ops.max_pool for rank 4 (TF 2.x: max_pool2d)."""
    x = NS["case_input"]([1, 4, 4, 2], 0)
    with tf.Graph().as_default() as g:
        y = tf.nn.max_pool_v2(tf.constant(x), 2, 2, "VALID")
        assert [o.type for o in g.get_operations()] == ["Const", "MaxPool"]
        assert y.op.name == "MaxPool"
        assert y.op.get_attr("ksize") == [1, 2, 2, 1]
        with tf.Session() as sess:
            value = sess.run(y)
    np.testing.assert_allclose(value, x.reshape(1, 2, 2, 2, 2, 2).max(axis=(2, 4)))


def test_depth_to_space_shape_errors_and_round_trip():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Dimension size must be evenly divisible by 4 but is 6"):
            tf.depth_to_space(tf.zeros([1, 2, 2, 6]), 2)
        with pytest.raises(ValueError, match="Dimension size must be evenly divisible by 2 but is 3"):
            tf.space_to_depth(tf.zeros([1, 3, 4, 1]), 2)
        with pytest.raises(ValueError, match="must be at least minimum 2"):
            tf.space_to_depth(tf.zeros([1, 4, 4, 1]), 1)
        x = tf.placeholder(tf.float32, [None, 4, 6, 3])
        s = tf.space_to_depth(x, 2)
        assert s.shape.as_list() == [None, 2, 3, 12]
        back = tf.depth_to_space(s, 2)
        nchw = tf.space_to_depth(tf.transpose(x, [0, 3, 1, 2]), 2, data_format="NCHW")
        assert nchw.shape.as_list() == [None, 12, 2, 3]
        value = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
        with tf.Session() as sess:
            s_v, back_v, nchw_v = sess.run([s, back, nchw], {x: value})
    np.testing.assert_array_equal(back_v, value)
    np.testing.assert_array_equal(nchw_v, s_v.transpose(0, 3, 1, 2))
    # TF's order: output depth (by * 2 + bx) * C + c
    np.testing.assert_array_equal(s_v[1, 1, 2, (1 * 2 + 0) * 3 + 2], value[1, 3, 4, 2])


def test_weighted_moments_and_losses_validate_shapes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="logits and targets must have the same shape"):
            tf.nn.weighted_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([3, 2]), 2.0)
        with pytest.raises(ValueError, match="Expected a tensor with at least rank 1"):
            tf.nn.compute_average_loss(tf.constant(1.0))


def test_sufficient_statistics_dynamic_count():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3])
        counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(x, [0])
        assert shift is None
        assert counts.op.name == "sufficient_statistics/count"
        assert g.get_operation_by_name("sufficient_statistics/GatherV2").type == "GatherV2"
        value = np.arange(12, dtype=np.float32).reshape(4, 3)
        with tf.Session() as sess:
            c, m, v = sess.run([counts, m_ss, v_ss], {x: value})
    assert c == 4.0
    np.testing.assert_allclose(m, value.sum(0))
    np.testing.assert_allclose(v, (value ** 2).sum(0))


def test_max_pool_with_argmax_ties_and_grad_ops():
    from tfc.frontend.op_helper import apply_op

    x = np.zeros([1, 2, 4, 1], np.float32)
    x[0, 1, 1, 0] = 1.0  # a window of zeros, and one with its max at (1, 1)
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    with tf.Graph().as_default():
        t = tf.constant(x)
        out, argmax = tf.nn.max_pool_with_argmax(t, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        (g,) = tf.gradients(out, t)
        with pytest.raises(LookupError, match="No gradient defined for operation "
                                              "'gradients/MaxPoolWithArgmax_grad/MaxPoolGradWithArgmax'"):
            tf.gradients(g, t)
        gg = apply_op("MaxPoolGradGradWithArgmax", [t, tf.constant(np.arange(8, dtype=np.float32).reshape(x.shape)),
                                                    argmax], attrs).outputs[0]
        assert gg.shape.as_list() == [1, 1, 2, 1]
        with tf.Session() as sess:
            out_v, argmax_v, g_v, gg_v = sess.run([out, argmax, g, gg])
    assert argmax.dtype == tf.int64
    np.testing.assert_array_equal(argmax_v.reshape(-1), [5, 2])  # the first of tied zeros: (0, 2)
    np.testing.assert_array_equal(out_v.reshape(-1), [1, 0])
    assert g_v.reshape(-1).tolist() == [0, 0, 1, 0, 0, 1, 0, 0]
    assert gg_v.reshape(-1).tolist() == [5, 2]  # the gradient's values at the argmax


def test_assert_near_graph_and_message():
    want = FIXTURE["assert_near"]
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.constant([1.0, 2.0, 3.5])
        before = set(g.get_operations())
        ok = tf.assert_near(x, x + 1e-7, name="near_ok")
        bad = tf.debugging.assert_near(x, y, rtol=0.01, atol=0.1, message="custom")
        nodes = [[o.name, o.type] for o in g.get_operations() if o not in before]
        assert nodes == want["nodes"]
        with tf.Session() as sess:
            sess.run(ok)
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(bad)
    # TF 1.15's message is the plain ``message`` (TF 2.x appends ".  ").
    assert want["error"].replace("[custom.  ]", "[custom]") in str(info.value)


def test_assert_proper_iterable():
    tf.assert_proper_iterable([1, 2])
    tf.debugging.assert_proper_iterable((x for x in range(3)))
    with pytest.raises(TypeError, match='Expected argument "values" to be a "proper" iterable'):
        tf.assert_proper_iterable("abc")
    with pytest.raises(TypeError, match='Expected argument "values" to be a "proper" iterable'):
        tf.assert_proper_iterable(np.zeros(3))
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="proper"):
            tf.assert_proper_iterable(tf.constant([1]))
    with pytest.raises(TypeError, match='Expected argument "values" to be iterable'):
        tf.assert_proper_iterable(3)


def test_register_gradient_and_override_map():
    @tf.RegisterGradient("NnMiscTestDoubleGrad")
    def _double(op, grad):
        return [grad * 2.0]

    with pytest.raises(KeyError, match="Registering two gradient with name 'NnMiscTestDoubleGrad'"):
        tf.RegisterGradient("NnMiscTestDoubleGrad")(_double)
    with pytest.raises(KeyError, match="Registering two gradient with name 'Relu'"):
        tf.RegisterGradient("Relu")(_double)
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.RegisterGradient(3)
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, -2.0])
        with g.gradient_override_map({"Identity": "NnMiscTestDoubleGrad"}):
            y = tf.identity(x)
        z = tf.identity(x)
        assert y.op.get_attr("_gradient_op_type") == b"NnMiscTestDoubleGrad"
        with pytest.raises(ValueError):
            z.op.get_attr("_gradient_op_type")
        (gy,) = tf.gradients(y, x)
        (gz,) = tf.gradients(z, x)
        with g.gradient_override_map({"Identity": "NnMiscTestNoSuchGrad"}):
            w = tf.identity(x)
        with pytest.raises(LookupError, match="No gradient defined for operation 'Identity_2'"):
            tf.gradients(w, x)
        with pytest.raises(TypeError, match="op_type_map must be a dictionary mapping strings to strings"):
            with g.gradient_override_map({"Identity": 1}):
                pass
        with tf.Session() as sess:
            gy_v, gz_v = sess.run([gy, gz])
    np.testing.assert_array_equal(gy_v, [2.0, 2.0])
    np.testing.assert_array_equal(gz_v, [1.0, 1.0])


def test_not_differentiable():
    tf.NotDifferentiable("NnMiscTestNoGrad")
    with pytest.raises(KeyError, match="Registering two gradient with name 'NnMiscTestNoGrad'"):
        tf.no_gradient("NnMiscTestNoGrad")
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.NotDifferentiable(None)
    with tf.Graph().as_default() as g:
        x = tf.constant([1.0, 2.0])
        with g.gradient_override_map({"Square": "NnMiscTestNoGrad"}):
            y = tf.square(x)
        assert tf.gradients(y + x, x)[0] is not None
        assert tf.gradients(y, x) == [None]


def test_aggregation_method_and_versions():
    assert tf.AggregationMethod.ADD_N == 0
    assert tf.AggregationMethod.DEFAULT == tf.AggregationMethod.ADD_N
    assert tf.AggregationMethod.EXPERIMENTAL_TREE == 1
    assert tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N == 2
    with tf.Graph().as_default():
        x = tf.constant(2.0)
        (g,) = tf.gradients(x * x + x, x, aggregation_method=tf.AggregationMethod.EXPERIMENTAL_TREE)
        with tf.Session() as sess:
            assert sess.run(g) == 5.0
    assert tf.VERSION == "1.15.5"
    assert tf.version.VERSION == tf.VERSION
    assert tf.GRAPH_DEF_VERSION == 134
    assert tf.GRAPH_DEF_VERSION_MIN_CONSUMER == 0
    assert tf.GRAPH_DEF_VERSION_MIN_PRODUCER == 0
    assert isinstance(tf.GIT_VERSION, str) and tf.GIT_VERSION.startswith("v1.15")
    assert isinstance(tf.COMPILER_VERSION, str)
    with tf.Graph().as_default() as g:
        assert g.as_graph_def().versions.producer == tf.GRAPH_DEF_VERSION
