"""gather, one_hot, where/where_v2, range, sequence_mask: names, shapes, TF 1.15 messages."""
from types import SimpleNamespace

import numpy as np
import pytest

from tfc.frontend import dtypes
from tfc.frontend.graph import Graph
from tfc.frontend.ops import array_ops, constant_op, math_ops, selection_ops  # noqa: F401 - math: operators
from tfc.frontend.tensor_util import constant_value

tf = SimpleNamespace(**{name: getattr(selection_ops, name) for name in selection_ops.TF_EXPORTS},
                     constant=constant_op.constant, placeholder=array_ops.placeholder, float32=dtypes.float32,
                     float64=dtypes.float64, int32=dtypes.int32, int64=dtypes.int64, bool=dtypes.bool)


@pytest.fixture(autouse=True)
def graph():
    with Graph().as_default() as g:
        yield g


def op_names(g):
    return [op.name for op in g.get_operations()]


def op_types(g):
    return [op.type for op in g.get_operations()]


def shape_of(t):
    return None if t.shape.ndims is None else t.shape.as_list()


def error_of(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# -- gather ------------------------------------------------------------------------------------
def test_gather_names_and_shapes(graph):
    params = tf.placeholder(tf.float32, [None, 3, 5])
    g = tf.gather(params, [0, 2])
    assert op_names(graph) == ["Placeholder", "GatherV2/indices", "GatherV2/axis", "GatherV2"]
    assert g.op.type == "GatherV2" and g.op.get_attr("batch_dims") == 0
    assert g.op.get_attr("Tindices") == tf.int32 and g.op.get_attr("Taxis") == tf.int32
    assert shape_of(g) == [2, 3, 5]
    indices = tf.placeholder(tf.int64, [4, None])
    assert shape_of(tf.gather(params, indices, axis=1)) == [None, 4, None, 5]
    assert shape_of(tf.gather(params, indices, axis=-1)) == [None, 3, 4, None]
    assert shape_of(tf.gather(params, 1, axis=2)) == [None, 3]
    axis = tf.placeholder(tf.int32, [])
    assert shape_of(tf.gather(params, indices, axis=axis)) == [None, None, None, None]
    assert tf.gather(params, [0], name="picked").name == "picked:0"


def test_gather_errors(graph):
    assert error_of(tf.gather, tf.constant(1.0), [0]) == (
        "Shape must be at least rank 1 but is rank 0 for 'GatherV2' (op: 'GatherV2') with input shapes: [], "
        "[1], [].")
    params = tf.placeholder(tf.float32, [2, 3])
    assert error_of(tf.gather, params, [0], axis=2) == (
        "Shape must be at least rank 3 but is rank 2 for 'GatherV2_1' (op: 'GatherV2') with input shapes: "
        "[2,3], [1], [] and with computed input tensors: input[2] = <2>.")


# -- one_hot -----------------------------------------------------------------------------------
def test_one_hot_defaults(graph):
    h = tf.one_hot([0, 1, 2], 3)
    assert op_names(graph) == ["one_hot/on_value", "one_hot/off_value", "one_hot/indices", "one_hot/depth",
                               "one_hot"]
    assert h.op.type == "OneHot" and h.dtype == tf.float32
    assert h.op.get_attr("TI") == tf.int64 and h.op.get_attr("axis") == -1
    assert constant_value(h.op.inputs[2]) == 1.0 and constant_value(h.op.inputs[3]) == 0.0
    assert shape_of(h) == [3, 3]


def test_one_hot_shapes_and_dtypes(graph):
    indices = tf.placeholder(tf.int32, [None, 4])
    assert shape_of(tf.one_hot(indices, 5)) == [None, 4, 5]
    assert shape_of(tf.one_hot(indices, 5, axis=0)) == [5, None, 4]
    assert shape_of(tf.one_hot(indices, 5, axis=1)) == [None, 5, 4]
    assert shape_of(tf.one_hot(indices, tf.placeholder(tf.int32, []))) == [None, 4, None]
    assert tf.one_hot(indices, 3, dtype=tf.int64).dtype == tf.int64
    before = len(graph.get_operations())
    h = tf.one_hot(indices, 3, on_value=5)
    # TF converts a given on_value once only to read its dtype: a stray 'one_hot_5/Const'.
    assert op_names(graph)[before:] == ["one_hot_5/Const", "one_hot_5/off_value", "one_hot_5/depth",
                                        "one_hot_5/on_value", "one_hot_5"]
    assert h.dtype == tf.int32


def test_one_hot_errors(graph):
    with pytest.raises(TypeError) as info:
        tf.one_hot([0], 2, on_value=1.0, dtype=tf.int32)
    assert str(info.value) == "dtype <dtype: 'float32'> of on_value does not match dtype parameter <dtype: 'int32'>"
    with pytest.raises(TypeError) as info:
        tf.one_hot([0], 2, on_value=1.0, off_value=0)
    assert str(info.value) == "dtype <dtype: 'float32'> of on_value does not match dtype <dtype: 'int32'> of off_value"
    assert error_of(tf.one_hot, [0], 2, axis=-2) == (
        "axis must be >= -1 for 'one_hot_2' (op: 'OneHot') with input shapes: [1], [], [], [].")
    assert error_of(tf.one_hot, [0], -1) == (
        "Dimension size, given by scalar input 1, must be non-negative but is -1 for 'one_hot_3' (op: 'OneHot') "
        "with input shapes: [1], [], [], [] and with computed input tensors: input[1] = <-1>.")


# -- where / where_v2 ----------------------------------------------------------------------------
def test_where_one_argument_gives_coordinates(graph):
    c = tf.placeholder(tf.bool, [None, 3])
    w = tf.where(c)
    assert w.op.type == "Where" and w.name == "Where:0" and w.dtype == tf.int64
    assert shape_of(w) == [None, 2]
    assert shape_of(tf.where(tf.placeholder(tf.bool))) == [None, None]
    listed = tf.where([True, False])
    assert op_names(graph)[-2:] == ["Where_2/condition", "Where_2"]
    assert listed.op.inputs[0].dtype == tf.bool and shape_of(listed) == [None, 1]
    assert tf.where(tf.placeholder(tf.float32, [3])).op.get_attr("T") == tf.float32


def test_where_three_arguments_is_select(graph):
    c = tf.placeholder(tf.bool, [3])
    x = tf.placeholder(tf.float32, [3, 2])
    y = tf.placeholder(tf.float32, [None, 2])
    s = tf.where(c, x, y)
    assert s.op.type == "Select" and s.name == "Select:0" and shape_of(s) == [3, 2]
    assert shape_of(tf.where(tf.placeholder(tf.bool, []), x, y)) == [3, 2]
    assert shape_of(tf.where(tf.placeholder(tf.bool, [3, 2]), x, y)) == [3, 2]
    assert error_of(tf.where, tf.placeholder(tf.bool, [2]), x, y) == (
        "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and [3]. for 'Select_3' "
        "(op: 'Select') with input shapes: [2], [3,2], [?,2].")
    assert error_of(tf.where, c, x, tf.placeholder(tf.float32, [3])) == (
        "Shapes must be equal rank, but are 2 and 1 for 'Select_4' (op: 'Select') with input shapes: [3], "
        "[3,2], [3].")
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None."):
        tf.where(c, x)


def test_where_v2_broadcasts(graph):
    c = tf.placeholder(tf.bool, [3, 1])
    s = tf.where_v2(c, tf.placeholder(tf.float32, [1, 4]), 0.0)
    assert s.op.type == "SelectV2" and s.name == "SelectV2:0" and shape_of(s) == [3, 4]
    assert op_names(graph)[-2:] == ["SelectV2/e", "SelectV2"]
    assert tf.where_v2(c).op.type == "Where"
    assert error_of(tf.where_v2, c, tf.placeholder(tf.float32, [2, 4]), tf.placeholder(tf.float32, [3, 4])) == (
        "Dimensions must be equal, but are 2 and 3 for 'SelectV2_1' (op: 'SelectV2') with input shapes: [3,1], "
        "[2,4], [3,4].")


# -- range ----------------------------------------------------------------------------------------
def test_range_names_and_sizes(graph):
    r = tf.range(5)
    assert op_names(graph) == ["range/start", "range/limit", "range/delta", "range"]
    assert r.op.type == "Range" and r.dtype == tf.int32 and shape_of(r) == [5]
    assert constant_value(r).tolist() == [0, 1, 2, 3, 4]
    assert shape_of(tf.range(10, 0, -3)) == [4]
    assert shape_of(tf.range(0.0, 1.0, 0.3)) == [4]
    assert shape_of(tf.range(tf.placeholder(tf.int32, []))) == [None]
    assert tf.range(3, dtype=tf.float64).dtype == tf.float64
    assert tf.range(3, name="steps").name == "steps:0"


def test_range_casts_to_the_widest_dtype(graph):
    r = tf.range(1, 5.0)
    assert op_names(graph) == ["range/start", "range/limit", "range/delta", "range/Cast", "range/Cast_1",
                               "range"]
    assert op_types(graph) == ["Const", "Const", "Const", "Cast", "Cast", "Range"]
    assert r.dtype == tf.float32 and r.op.get_attr("Tidx") == tf.float32 and shape_of(r) == [4]
    limit = tf.placeholder(tf.int64, [])
    assert tf.range(limit).dtype == tf.int64


def test_range_errors(graph):
    assert error_of(tf.range, 5, 1) == (
        "Requires start <= limit when delta > 0: 5/1 for 'range' (op: 'Range') with input shapes: [], [], [] "
        "and with computed input tensors: input[0] = <5>, input[1] = <1>, input[2] = <1>.")
    assert error_of(tf.range, 1, 5, -1) == (
        "Requires start >= limit when delta < 0: 1/5 for 'range_1' (op: 'Range') with input shapes: [], [], [] "
        "and with computed input tensors: input[0] = <1>, input[1] = <5>, input[2] = <-1>.")
    assert error_of(tf.range, 0, 5, 0) == (
        "Requires delta != 0 for 'range_2' (op: 'Range') with input shapes: [], [], [] and with computed input "
        "tensors: input[0] = <0>, input[1] = <5>, input[2] = <0>.")
    assert error_of(tf.range, [1, 2]) == (
        "Shape must be rank 0 but is rank 1\n\t for 'limit' for 'range_3' (op: 'Range') with input shapes: [], "
        "[2], [].")


# -- sequence_mask ---------------------------------------------------------------------------------
def test_sequence_mask(graph):
    m = tf.sequence_mask([1, 3, 2], 5)
    assert op_names(graph) == ["SequenceMask/Const", "SequenceMask/Const_1", "SequenceMask/Const_2",
                               "SequenceMask/Const_3", "SequenceMask/Range", "SequenceMask/ExpandDims/dim",
                               "SequenceMask/ExpandDims", "SequenceMask/Cast", "SequenceMask/Less"]
    assert m.dtype == tf.bool and shape_of(m) == [3, 5]
    lengths = tf.placeholder(tf.int32, [None])
    assert shape_of(tf.sequence_mask(lengths)) == [None, None]
    assert tf.sequence_mask(lengths, 4, dtype=tf.float32).dtype == tf.float32


def test_gather_of_constant_folds_through_constant_value(graph):
    x = tf.constant(np.arange(6).reshape(2, 3))
    assert shape_of(tf.gather(x, [1, 0])) == [2, 3]


def test_range_of_values_known_only_at_run_time():
    """tf.sequence_mask without maxlen ranges to the lengths' max: the Range runs between
    stages and the compare after it is compiled with its size bound."""
    import tfc.compat.v1 as tf

    with tf.Graph().as_default():
        lengths = tf.placeholder(tf.int32, [None])
        n = tf.placeholder(tf.int32, [])
        mask = tf.sequence_mask(lengths)
        doubled = tf.range(n) * 2
        floats = tf.range(tf.constant(0.5), tf.cast(n, tf.float32), 0.25)
        backwards = tf.range(n, 0, 1)
        with tf.Session() as sess:
            got_mask = sess.run(mask, {lengths: [1, 3, 2]})
            got = sess.run([doubled, floats], {n: 2})
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Requires start <= limit when delta > 0: 3/0"):
                sess.run(backwards, {n: 3})
    np.testing.assert_array_equal(got_mask, [[True, False, False], [True, True, True], [True, True, False]])
    np.testing.assert_array_equal(got[0], [0, 2])
    np.testing.assert_array_equal(got[1], np.array([0.5, 0.75, 1.0, 1.25, 1.5, 1.75], np.float32))
