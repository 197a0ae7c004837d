"""tf.math.unsorted_segment_max / min / prod / mean / sqrt_n, tf.nn.conv1d_transpose,
tf.nn.pool and tf.layers.conv3d_transpose / separable_conv1d / max_pooling1d /
average_pooling1d (and their classes) against real TensorFlow: node and variable names,
shapes, values and gradients from tests/fixtures/segment_conv_extra.json (made by
tests/fixtures/make_segment_conv_extra_fixture.py, the layers built by TF's own
tf.compat.v1.layers); the compiled programs against the IR evaluator; TF's errors.

The unsorted segment reductions lower two ways: segment ids known while compiling gather
each segment's rows into a table, fed ids build the [num_segments, rows] compare matrix;
both are checked against the same TF values. Each test compiles its graph once."""
import importlib.util
import json
import os
import re

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.ir.evaluator import evaluate
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_segment_conv_extra_fixture",
                                               os.path.join(_FIXTURES, "make_segment_conv_extra_fixture.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)  # the case tables; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "segment_conv_extra.json")) as _f:
    FIXTURE = json.load(_f)

# TF >= 2 builds _unsorted_segment_N's broadcast shape from a strided_slice of num_segments,
# ranks, sub and a second ``ones`` (a concat); TF 1.15 reshapes to ``[num_segments] + [1] * k``
# (a Const), as tfc does. Every other node is the same.
_TF2_ONLY_SUFFIXES = ("/strided_slice", "/sub", "/ones_1/packed", "/ones_1", "/concat")
# The Keras backend of TF opens its session once to list the devices (channels_first pooling
# asks whether NCHW runs here) and adds IsVariableInitialized ops and an 'init' NoOp then:
# a side effect of the process, not part of the layer.
_KERAS_SESSION_TYPES = ("IsVariableInitialized", "NoOp")


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _in_own_gradients(nodes):
    """Gradient node names without the ``gradients_<n>/`` scope of the fixture's shared graph."""
    return [[re.sub(r"^gradients(_\d+)?/", "gradients/", name), op_type] for name, op_type in nodes]


def _tf15_nodes(nodes):
    return [n for n in nodes if not n[0].endswith(_TF2_ONLY_SUFFIXES)]


def _segment_fetches(graph, fed, names=tuple(cases.SEGMENT_OPS)):
    """Every segment case for the functions ``names``; ``fed``: data and ids are
    placeholders (the compare-matrix lowering), else ids are constants (the gathered
    table). Returns (fetches, feeds)."""
    fetches, feeds = {}, {}
    for case, (data, ids, count) in cases.SEGMENT_CASES.items():
        if fed:
            x = tf.placeholder(tf.float32, [None] + list(data.shape[1:]))
            i = tf.placeholder(tf.int32, [None] + list(np.shape(ids)[1:]))
            feeds.update({x: data, i: ids})
        else:
            x, i = tf.constant(data), tf.constant(ids)
        for name in names:
            want = FIXTURE["segments"][case][name]
            before = set(graph.get_operations())
            y = getattr(tf.math, name)(x, i, count)
            nodes = [[o.name, o.type] for o in graph.get_operations() if o not in before and o.type != "Const"]
            assert y.dtype.name == want["dtype"], (case, name)
            if not fed:
                assert nodes == _tf15_nodes(want["nodes"]), (case, name)
                assert y.shape.as_list() == want["shape"], (case, name)
            before = set(graph.get_operations())
            grad = tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp(want["shape"]))), [x])[0]
            grad_nodes = [[o.name, o.type] for o in graph.get_operations() if o not in before
                          and o.type in cases.SEGMENT_GRAD_TYPES]
            if not fed:
                assert grad_nodes == want["grad_nodes"], (case, name)
            fetches[(case, name)] = (y, grad)
    for case in ("int", "nan"):
        data, ids, count = cases.INT_CASE if case == "int" else cases.NAN_CASE
        if fed:
            x, i = tf.placeholder(tf.as_dtype(data.dtype), [None]), tf.placeholder(tf.int32, [None])
            feeds.update({x: data, i: ids})
        else:
            x, i = tf.constant(data), tf.constant(ids)
        for name in [n for n in names if n in FIXTURE["segments"][case]]:
            fetches[(case, name)] = getattr(tf.math, name)(x, i, count)
    return fetches, feeds


def _check_segments(values):
    for (case, name), value in values.items():
        want = FIXTURE["segments"][case][name]
        if case in cases.SEGMENT_CASES:
            y, g = value
            np.testing.assert_allclose(y, want["value"], rtol=1e-6, err_msg=f"{case} {name}")
            np.testing.assert_allclose(g, want["gradient"], rtol=1e-6, atol=1e-7, err_msg=f"{case} {name}")
        else:
            assert value.dtype.name == want["dtype"], (case, name)
            np.testing.assert_array_equal(value, np.asarray(want["value"], value.dtype), err_msg=f"{case} {name}")


def test_unsorted_segments_with_constant_ids_as_tensorflow(fresh_graph):
    """Node names (TF 1.15's), gradient nodes, shapes, values (ties, zeros, a dropped id,
    empty segments holding TF's initial values, int32, NaN and infinities) and gradients."""
    fetches, _ = _segment_fetches(fresh_graph, fed=False)
    ops = fresh_graph.get_operations()
    assert [o.type for o in ops if o.name == "UnsortedSegmentMax"] == ["UnsortedSegmentMax"]
    with tf.Session() as sess:
        values = sess.run(fetches)
        assert sess.cache_stats()["compiles"] == 1
    _check_segments(values)
    nan_max = values[("nan", "unsorted_segment_max")]
    assert nan_max[0] == 1 and np.isnan(nan_max[1]) and nan_max[3] == np.finfo(np.float32).min
    assert values[("int", "unsorted_segment_min")][2] == np.iinfo(np.int32).max


def test_unsorted_segments_with_fed_ids_compile_and_match(fresh_graph):
    """Fed data and ids (nothing folds: the compare-matrix lowering, gradients through
    fed ids) of the three ops (mean and sqrt_n are UnsortedSegmentSums, compiled in
    tests/frontend/test_array_gradients.py), the same TF values; num_segments from the
    data's run-time shape (fed and constant ids); the evaluator agrees; an id >=
    num_segments fails as in TF."""
    fetches, feeds = _segment_fetches(fresh_graph, fed=True, names=cases.SEGMENT_OPS[:3])
    data, ids, _ = cases.SEGMENT_CASES["rows"]
    x_rows = next(t for t, v in feeds.items() if v is data)
    i_rows = next(t for t, v in feeds.items() if v is ids)
    by_rows = [tf.math.unsorted_segment_max(x_rows, i, tf.shape(x_rows)[0]) for i in (i_rows, tf.constant(ids))]
    with tf.Session() as sess:
        values, by_rows_values = sess.run([fetches, by_rows], feeds)
        assert sess.cache_stats()["compiles"] == 1
    # num_segments from the data's run-time shape: 8 segments, the last two empty
    want = np.concatenate([FIXTURE["segments"]["rows"]["unsorted_segment_max"]["value"],
                           np.full([2, 3], np.finfo(np.float32).min)])
    for got in by_rows_values:
        np.testing.assert_array_equal(got, want.astype(np.float32))
    with tf.Session() as sess:
        x = tf.placeholder(tf.float32, [None, 2])
        i = tf.placeholder(tf.int32, [None])
        bad_ids, count = cases.BAD_IDS
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(FIXTURE["segment_error"])):
            sess.run(tf.math.unsorted_segment_max(x, i, count), {x: np.ones([3, 2], np.float32), i: bad_ids})
    _check_segments(values)
    keys = [k for k in fetches if k[0] == "rows"]
    flat = [t for k in keys for t in fetches[k]]
    lowered = lower_graph(flat, [], [FeedSpec(t, t.dtype, np.shape(v)) for t, v in feeds.items()])
    evaluated = evaluate(lowered.module, [np.asarray(feeds[t], t.dtype.as_numpy_dtype) for t in lowered.feeds])
    for got, e in zip([v for k in keys for v in values[k]], evaluated):
        np.testing.assert_allclose(got, e, rtol=1e-6, atol=1e-7)


def test_unsorted_segment_shapes_names_and_errors():
    data = tf.placeholder(tf.float32, [None, 4, 3])
    ids = tf.placeholder(tf.int32, [None, 4])
    assert tf.math.unsorted_segment_max(data, ids, 7).shape.as_list() == [7, 3]
    assert tf.math.unsorted_segment_prod(data, ids, tf.placeholder(tf.int32, [])).shape.as_list() == [None, 3]
    mean = tf.math.unsorted_segment_sqrt_n(data, ids, 5, name="sn")
    assert mean.op.name == "sn/truediv" and mean.shape.as_list() == [5, 3]
    assert tf.get_default_graph().get_operation_by_name("sn/Reshape").inputs[1].op.type == "Const"
    for name in cases.SEGMENT_OPS:
        assert getattr(tf, name) is getattr(tf.math, name)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.math.unsorted_segment_min(data, ids, [3])
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.math.unsorted_segment_max(data, tf.placeholder(tf.int32, [None, 5]), 3)
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.math.unsorted_segment_max(tf.constant([1 + 2j]), [0], 1)
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.math.unsorted_segment_min(tf.constant([1.0]), tf.constant([0.0]), 1)
    assert tf.math.unsorted_segment_prod(tf.constant([1 + 2j], tf.complex64), [0], 1).dtype == tf.complex64


def test_conv1d_transpose_and_pool_as_tensorflow(fresh_graph):
    """Node names and types, gradient nodes, shapes, values and gradients of every case."""
    built = {}
    for name, (build, shapes, grad_inputs) in cases.CASES.items():
        want = FIXTURE["cases"][name]
        inputs = [tf.constant(cases.case_input(shape, i)) for i, shape in enumerate(shapes)]
        before = set(fresh_graph.get_operations())
        y = build(tf, *inputs)
        nodes = [[o.name, o.type] for o in fresh_graph.get_operations() if o not in before and o.type != "Const"]
        assert nodes == want["nodes"], name
        assert (y.dtype.name, y.shape.as_list()) == (want["dtype"], want["shape"]), name
        before = set(fresh_graph.get_operations())
        grads = tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp(want["shape"]))),
                             [inputs[i] for i in grad_inputs])
        grad_nodes = [[o.name, o.type] for o in fresh_graph.get_operations() if o not in before
                      and o.type in cases.GRAD_TYPES]
        assert _in_own_gradients(grad_nodes) == _in_own_gradients(want["grad_nodes"]), name
        built[name] = (y, grads)
    with tf.Session() as sess:
        values = sess.run(built)
        assert sess.cache_stats()["compiles"] == 1
    for name, (y, grads) in values.items():
        want = FIXTURE["cases"][name]
        np.testing.assert_allclose(y, want["value"], rtol=2e-5, atol=2e-5, err_msg=name)
        assert len(grads) == len(want["gradients"]), name
        for g, w in zip(grads, want["gradients"]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=5e-5, err_msg=name)


def _build_layer(name, x, data_format=None):
    function = cases.LAYER_CASES[name][0]
    kwargs = cases.layer_kwargs(tf, name)
    if data_format is not None:
        kwargs["data_format"] = data_format
    return getattr(tf.layers, function)(x, **kwargs)


def _channels_first(x):
    return tf.transpose(x, [0, x.shape.ndims - 1] + list(range(1, x.shape.ndims - 1)))


def test_layers_as_tensorflow(fresh_graph):
    """The real tf.layers' variables, ops, output shapes, values and gradients; the
    channels_first layers (fed, so the compiled NCW/NCDHW paths run) agree with channels_last."""
    built, first, first_feeds = {}, {}, {}
    for name, (_, _, shape, _) in cases.LAYER_CASES.items():
        want = FIXTURE["layers"][name]
        x = tf.constant(cases.case_input(shape, 0))
        before_ops = set(fresh_graph.get_operations())
        before = set(tf.global_variables())
        y = _build_layer(name, x)
        weights = [v for v in tf.global_variables() if v not in before]
        assert [[v.name, v.shape.as_list()] for v in weights] == want["variables"], name
        ops = [[o.name, o.type] for o in fresh_graph.get_operations() if o not in before_ops
               and o.type != "Const" and "/Initializer/" not in o.name]
        assert ops == [op for op in want["ops"] if op[1] not in _KERAS_SESSION_TYPES], name
        assert y.shape.as_list() == want["shape"], name
        grads = tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp(want["shape"]))), [x] + weights)
        built[name] = (y, grads)
    assert tf.trainable_variables() == tf.global_variables()
    for name in ("conv3d_transpose_same", "separable_conv1d_same_strided", "average_pooling1d_same"):
        if cases.LAYER_CASES[name][1].get("data_format") == "channels_first":
            continue
        value = cases.case_input(cases.LAYER_CASES[name][2], 0)
        x = tf.placeholder(tf.float32, [None] + list(np.moveaxis(value, -1, 1).shape[1:]))
        first_feeds[x] = np.moveaxis(value, -1, 1)
        first[name] = _build_layer(name, x, "channels_first")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values, first_values = sess.run([built, first], first_feeds)
        assert sess.cache_stats()["compiles"] == 2  # the initializer, then the step
    for name, (y, grads) in values.items():
        want = FIXTURE["layers"][name]
        np.testing.assert_allclose(y, want["value"], rtol=2e-5, atol=2e-5, err_msg=name)
        assert len(grads) == len(want["gradients"]), name
        for g, w in zip(grads, want["gradients"]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=5e-5, err_msg=name)
    for name, y in first_values.items():
        np.testing.assert_allclose(y, np.moveaxis(values[name][0], -1, 1), rtol=1e-5, atol=1e-5, err_msg=name)


def test_pool_and_conv1d_transpose_compiled_match_the_evaluator():
    """Fed inputs with an unknown batch: tf.nn.pool (dilated 1-D NWC and NCW, 2-D, 3-D) and
    conv1d_transpose (NWC and NCW) with their gradients, against the IR evaluator; the NCW
    results agree with the NWC ones."""
    value = cases.case_input([2, 12, 3], 0)
    x = tf.placeholder(tf.float32, [None, 12, 3])
    xc = tf.placeholder(tf.float32, [None, 3, 12])
    w = tf.constant(cases.case_input([3, 4, 3], 1))
    p = tf.nn.pool(x, [3], "MAX", "VALID", dilation_rate=[2])
    pc = tf.nn.pool(xc, [3], "MAX", "VALID", dilation_rate=[2], data_format="NCW")
    a = tf.nn.pool(tf.reshape(x, [-1, 4, 3, 3]), [2, 2], "AVG", "SAME", strides=[2, 1])
    m = tf.nn.pool(tf.reshape(x, [-1, 2, 3, 2, 3]), [2, 2, 2], "MAX", "VALID")
    t = tf.nn.conv1d_transpose(x, w, tf.stack([tf.shape(x)[0], 24, 4]), 2)
    tc = tf.nn.conv1d_transpose(xc, w, tf.stack([tf.shape(xc)[0], 4, 24]), 2, data_format="NCW")
    loss = tf.add_n([tf.reduce_sum(v * v) for v in (p, pc, a, m, t, tc)])
    grads = tf.gradients(loss, [x, xc])
    fetches = [p, pc, a, m, t, tc] + grads
    feeds = {x: value, xc: np.moveaxis(value, -1, 1)}
    with tf.Session() as sess:
        compiled = sess.run(fetches, feeds)
        assert sess.cache_stats()["compiles"] == 1
    lowered = lower_graph(fetches, [], [FeedSpec(k, k.dtype, np.shape(v)) for k, v in feeds.items()])
    evaluated = evaluate(lowered.module, [feeds[k] for k in lowered.feeds])
    for i, (c, e) in enumerate(zip(compiled, evaluated)):
        np.testing.assert_allclose(c, e, rtol=2e-5, atol=1e-5 * max(np.abs(e).max(), 1), err_msg=f"fetch {i}")
    np.testing.assert_allclose(compiled[1], np.moveaxis(compiled[0], -1, 1), rtol=1e-6)
    np.testing.assert_allclose(compiled[5], np.moveaxis(compiled[4], -1, 1), rtol=1e-5, atol=1e-5)
    assert compiled[0].shape == (2, 8, 3) and compiled[4].shape == (2, 24, 4)


def test_layer_objects_shapes_reuse_and_errors():
    layer = tf.layers.Conv3DTranspose(4, (3, 2, 2), strides=(2, 1, 2), padding="valid", name="up")
    y = layer(tf.placeholder(tf.float32, [None, 3, None, 4, 2]))
    assert y.shape.as_list() == [None, 7, None, 8, 4]
    assert layer.compute_output_shape([5, 3, 6, 4, 2]).as_list() == [5, 7, 7, 8, 4]
    assert [v.name for v in layer.variables] == ["up/kernel:0", "up/bias:0"]
    assert layer.kernel.shape.as_list() == [3, 2, 2, 4, 2]
    layer(tf.zeros([1, 3, 3, 4, 2]))  # a second call reuses the variables, in the same name scope
    assert len(tf.global_variables()) == 2
    assert tf.get_default_graph().get_operation_by_name("up/conv3d_transpose_1").type == "Conv3DBackpropInputV2"
    sep = tf.layers.SeparableConv1D(5, 3, depth_multiplier=2, padding="causal", use_bias=False, name="s1")
    assert sep(tf.zeros([2, 9, 3])).shape.as_list() == [2, 9, 5]
    assert [v.shape.as_list() for v in sep.trainable_weights] == [[3, 3, 2], [1, 6, 5]] and sep.bias is None
    pool = tf.layers.AveragePooling1D(3, 2, padding="same", data_format="channels_first")
    assert pool(tf.zeros([1, 4, 7])).shape.as_list() == [1, 4, 4]
    assert tf.layers.MaxPooling1D(2, 1).compute_output_shape([None, 6, 3]).as_list() == [None, 5, 3]
    with pytest.raises(ValueError, match="Argument `strides` must not be None"):
        tf.layers.MaxPooling1D(2, None)
    with pytest.raises(ValueError, match="expected ndim=3"):
        tf.layers.max_pooling1d(tf.zeros([1, 2, 2, 1]), 1, 1)
    with pytest.raises(ValueError, match="expected ndim=5, found ndim=4"):
        tf.layers.conv3d_transpose(tf.zeros([1, 2, 2, 1]), 1, 1)
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be defined"):
        tf.layers.separable_conv1d(tf.placeholder(tf.float32, [1, 4, None]), 1, 1)
    with pytest.raises(ValueError, match="pooling with SAME padding is not implemented for dilation_rate > 1"):
        tf.nn.pool(tf.zeros([1, 6, 1]), [2], "MAX", "SAME", dilation_rate=[2])
    with pytest.raises(ValueError, match="strides > window_shape not supported"):
        tf.nn.pool(tf.zeros([1, 6, 1]), [2], "AVG", "VALID", strides=[3])
    with pytest.raises(ValueError, match="3-D MIN pooling is not supported"):
        tf.nn.pool(tf.zeros([1, 2, 2, 2, 1]), [1, 1, 1], "MIN", "VALID")
    with pytest.raises(ValueError, match='data_format must be "NWC" or "NCW"'):
        tf.nn.conv1d_transpose(tf.zeros([1, 3, 2]), tf.zeros([2, 2, 2]), [1, 6, 2], 2, data_format="NHWC")
