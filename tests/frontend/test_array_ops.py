"""Array ops: op types, names, attrs, static shapes and TF 1.15's error messages.

Expected names and messages are derived from TF 1.15's python wrappers
(tensorflow/python/ops/array_ops.py) and C++ shape functions (core/ops/array_ops.cc).
"""
from types import SimpleNamespace

import numpy as np
import pytest

from tfc.frontend import dtypes
from tfc.frontend.graph import Graph, control_dependencies
from tfc.frontend.ops import array_ops, concat_ops, constant_op, control_flow_ops, math_ops, selection_ops, slicing
from tfc.frontend.tensor_shape import TensorShape
from tfc.frontend.tensor_util import constant_value

_MODULES = (array_ops, concat_ops, selection_ops, slicing, control_flow_ops)
tf = SimpleNamespace(**{name: getattr(m, name) for m in _MODULES for name in m.TF_EXPORTS},
                     constant=constant_op.constant, float32=dtypes.float32, int32=dtypes.int32,
                     int64=dtypes.int64, bool=dtypes.bool, string=dtypes.string, cast=math_ops.cast)


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


# -- Placeholder and graph lookups ------------------------------------------------------
def test_placeholder_repr_and_attrs(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    assert str(p) == 'Tensor("Placeholder:0", shape=(?, 3), dtype=float32)'
    assert repr(p) == "<tf.Tensor 'Placeholder:0' shape=(?, 3) dtype=float32>"
    assert p.op.type == "Placeholder"
    assert p.op.get_attr("dtype") == tf.float32
    assert TensorShape(p.op.get_attr("shape")).as_list() == [None, 3]  # a TensorShapeProto, as in TF
    node = p.op.node_def
    assert node.attr["shape"].shape.dim[0].size == -1 and node.attr["shape"].shape.dim[1].size == 3


def test_placeholder_dtype_strings_unknown_shape_and_names(graph):
    a = tf.placeholder("float")
    b = tf.placeholder("int32", shape=(), name="b")
    c = tf.placeholder(tf.bool, name="b")
    assert str(a) == 'Tensor("Placeholder:0", dtype=float32)'  # TF1 leaves an unknown shape out
    assert a.shape.ndims is None
    assert a.op.node_def.attr["shape"].shape.unknown_rank
    assert str(b) == 'Tensor("b:0", shape=(), dtype=int32)'
    assert c.name == "b_1:0"
    with pytest.raises(TypeError, match="Cannot convert value 'flaot' to a TensorFlow DType."):
        tf.placeholder("flaot")


def test_lookup_errors_on_graph_with_placeholders(graph):
    tf.placeholder(tf.float32, [None, 2], name="v")
    assert graph.get_tensor_by_name("v:0").shape.as_list() == [None, 2]
    with pytest.raises(ValueError) as info:
        graph.get_tensor_by_name("v")
    assert str(info.value) == ("The name 'v' refers to an Operation, not a Tensor. Tensor names must be of the "
                               'form "<op_name>:<output_index>".')
    with pytest.raises(KeyError) as info:
        graph.get_tensor_by_name("v:3")
    assert "The name 'v:3' refers to a Tensor which does not exist. The operation, 'v', exists but only has 1 " \
           "outputs." in str(info.value)
    with pytest.raises(KeyError) as info:
        graph.get_operation_by_name("nope")
    assert "The name 'nope' refers to an Operation not in the graph." in str(info.value)


def test_placeholder_with_default(graph):
    t = tf.placeholder_with_default([[1.0, 2.0]], [None, 2])
    assert op_names(graph) == ["PlaceholderWithDefault/input", "PlaceholderWithDefault"]
    assert shape_of(t) == [None, 2]
    message = error_of(tf.placeholder_with_default, [1.0, 2.0], [3])
    assert message == ("Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and [3]. for "
                       "'PlaceholderWithDefault_1' (op: 'PlaceholderWithDefault') with input shapes: [2].")


# -- Identity family ------------------------------------------------------------------------
def test_identity_stop_gradient_and_identity_n(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    assert str(tf.identity(p)) == 'Tensor("Identity:0", shape=(?, 3), dtype=float32)'
    assert tf.stop_gradient(p, name="sg").op.type == "StopGradient"
    a, b = tf.identity_n([p, [1, 2]])
    assert op_names(graph)[-2:] == ["IdentityN/input_1", "IdentityN"]
    assert a.name == "IdentityN:0" and b.name == "IdentityN:1"
    assert (a.dtype, b.dtype) == (tf.float32, tf.int32) and shape_of(b) == [2]
    assert a.op.get_attr("T") == [tf.float32, tf.int32]


def test_identity_inside_control_dependencies_gets_the_control_input(graph):
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with control_dependencies([a]):
        c = tf.identity(b)
    assert c.op.control_inputs == [a.op]
    assert list(c.op.node_def.input) == ["b", "^a"]
    d = tf.identity(b)
    assert d.op.control_inputs == []


# -- Shape, Size, Rank ----------------------------------------------------------------------
def test_shape_size_rank_fold_to_constants_when_static(graph):
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert op_names(graph) == ["Const", "Shape", "Size", "Rank"]
    assert op_types(graph) == ["Const"] * 4
    assert constant_value(s).tolist() == [2, 3] and int(constant_value(n)) == 6 and int(constant_value(r)) == 2
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64


def test_shape_size_rank_ops_for_unknown_shapes(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    u = tf.placeholder(tf.float32)
    s, n, r = tf.shape(p), tf.size(p), tf.rank(u)
    assert [s.op.type, n.op.type, r.op.type] == ["Shape", "Size", "Rank"]
    assert shape_of(s) == [2] and shape_of(n) == [] and shape_of(r) == []
    assert shape_of(tf.shape(u)) == [None]
    assert int(constant_value(tf.rank(p))) == 2
    zero = tf.size(tf.placeholder(tf.float32, [None, 0]))
    assert zero.op.type == "Const" and int(constant_value(zero)) == 0
    assert tf.shape(p, name="my_shape").name == "my_shape:0"
    assert tf.shape(p, out_type=tf.int64).op.get_attr("out_type") == tf.int64


def test_shape_n(graph):
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32)
    sa, sb = tf.shape_n([a, b])
    assert sa.name == "ShapeN:0" and sb.name == "ShapeN:1"
    assert shape_of(sa) == [2] and shape_of(sb) == [None]
    assert sa.op.get_attr("N") == 2


# -- Reshape -------------------------------------------------------------------------------
def test_reshape_infers_minus_one(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    x = tf.constant(np.zeros((2, 3), np.float32))
    assert shape_of(tf.reshape(x, [-1])) == [6]
    assert shape_of(tf.reshape(x, [3, -1])) == [3, 2]
    assert shape_of(tf.reshape(p, [-1, 3, 1])) == [None, 3, 1]
    assert shape_of(tf.reshape(p, [-1])) == [None]
    assert shape_of(tf.reshape(tf.placeholder(tf.float32), [2, -1])) == [2, None]
    assert op_names(graph)[2:4] == ["Reshape/shape", "Reshape"]
    assert tf.reshape(x, [6]).op.get_attr("Tshape") == tf.int32


def test_reshape_with_partially_known_target(graph):
    p = tf.placeholder(tf.float32, [None, 4])
    batch = tf.shape(p)[0]
    r = tf.reshape(p, [batch, 2, 2])
    assert r.op.inputs[1].op.type == "Pack"
    assert shape_of(r) == [None, 2, 2]
    assert shape_of(tf.reshape(p, tf.shape(p))) == [None, 4]
    q = tf.reshape(tf.constant(np.zeros((2, 6))), [batch, -1])
    assert shape_of(q) == [None, None]


def test_reshape_errors_match_tf(graph):
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    assert error_of(tf.reshape, x, [4]) == (
        "Cannot reshape a tensor with 6 elements to shape [4] (4 elements) for 'Reshape' (op: 'Reshape') with "
        "input shapes: [2,3], [1] and with input tensors computed as partial shapes: input[1] = [4].")
    assert error_of(tf.reshape, x, [-1, 4]) == (
        "Dimension size must be evenly divisible by 4 but is 6 for 'Reshape_1' (op: 'Reshape') with input "
        "shapes: [2,3], [2] and with input tensors computed as partial shapes: input[1] = [?,4].")
    p = tf.placeholder(tf.int32, [None, 3])
    assert error_of(tf.reshape, p, [4]) == (
        "Dimension size must be evenly divisible by 3 but is 4 for 'Reshape_2' (op: 'Reshape') with input "
        "shapes: [?,3], [1] and with input tensors computed as partial shapes: input[1] = [4].")
    assert error_of(tf.reshape, x, [[6]]) == (
        "Shape must be rank 1 but is rank 2 for 'Reshape_3' (op: 'Reshape') with input shapes: [2,3], [1,1].")


# -- ExpandDims, Squeeze ---------------------------------------------------------------------
def test_expand_dims(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    assert shape_of(tf.expand_dims(p, 0)) == [1, None, 3]
    assert shape_of(tf.expand_dims(p, -1)) == [None, 3, 1]
    assert shape_of(tf.expand_dims(p, dim=1)) == [None, 1, 3]
    assert shape_of(tf.expand_dims(tf.placeholder(tf.float32), 0)) is None
    assert op_names(graph)[1:3] == ["ExpandDims/dim", "ExpandDims"]
    assert error_of(tf.expand_dims, p, 3) == (
        "dim 3 not in the interval [-3, 2]. for 'ExpandDims_4' (op: 'ExpandDims') with input shapes: [?,3], [] "
        "and with computed input tensors: input[1] = <3>.")
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        tf.expand_dims(p, 0, dim=0)
    with pytest.raises(ValueError, match=r"Must specify an axis argument to tf.expand_dims\(\)"):
        tf.expand_dims(p)


def test_squeeze(graph):
    x = tf.placeholder(tf.float32, [1, 2, 1, 3])
    assert shape_of(tf.squeeze(x)) == [2, 3]
    assert shape_of(tf.squeeze(x, [0])) == [2, 1, 3]
    assert shape_of(tf.squeeze(x, axis=-2)) == [1, 2, 3]
    assert tf.squeeze(x, squeeze_dims=[2]).op.get_attr("squeeze_dims") == [2]
    assert shape_of(tf.squeeze(tf.placeholder(tf.float32, [None, 1, 3]))) is None
    assert shape_of(tf.squeeze(tf.placeholder(tf.float32, [None, 1, 3]), [0])) == [1, 3]
    assert error_of(tf.squeeze, x, [1]) == (
        "Can not squeeze dim[1], expected a dimension of 1, got 2 for 'Squeeze_6' (op: 'Squeeze') with input "
        "shapes: [1,2,1,3].")
    assert error_of(tf.squeeze, x, [4]) == (
        "squeeze_dims[0] not in [-4,4). for 'Squeeze_7' (op: 'Squeeze') with input shapes: [1,2,1,3].")


# -- Transpose -----------------------------------------------------------------------------
def test_transpose_default_perm_known_rank(graph):
    p = tf.placeholder(tf.float32, [None, 3, 5])
    t = tf.transpose(p)
    assert op_names(graph) == ["Placeholder", "transpose/perm", "transpose"]
    assert constant_value(t.op.inputs[1]).tolist() == [2, 1, 0]
    assert t.op.get_attr("Tperm") == tf.int32
    assert shape_of(t) == [5, 3, None]
    assert shape_of(tf.transpose(p, [0, 2, 1])) == [None, 5, 3]
    assert tf.transpose([[1, 2]]).op.inputs[0].op.name == "transpose_2/a"


def test_transpose_default_perm_unknown_rank_is_computed_in_graph(graph):
    t = tf.transpose(tf.placeholder(tf.float32))
    assert op_names(graph) == ["Placeholder", "transpose/Rank", "transpose/sub/y", "transpose/sub",
                               "transpose/Range/start", "transpose/Range/delta", "transpose/Range",
                               "transpose/sub_1", "transpose"]
    assert op_types(graph)[1:] == ["Rank", "Const", "Sub", "Const", "Const", "Range", "Sub", "Transpose"]
    assert shape_of(t) is None


def test_transpose_errors(graph):
    x = tf.placeholder(tf.float32, [2, 3])
    assert error_of(tf.transpose, x, [0, 2]) == (
        "perm dim 2 is out of range of input rank 2 for 'transpose' (op: 'Transpose') with input shapes: "
        "[2,3], [2] and with computed input tensors: input[1] = <0 2>.")
    assert error_of(tf.transpose, x, [1, 0, 2]) == (
        "Dimension must be 2 but is 3 for 'transpose_1' (op: 'Transpose') with input shapes: [2,3], [3].")


# -- Fill, zeros, ones ------------------------------------------------------------------------
def test_fill(graph):
    f = tf.fill([2, 3], 9)
    assert op_names(graph) == ["Fill/dims", "Fill/value", "Fill"]
    assert shape_of(f) == [2, 3] and f.dtype == tf.int32
    p = tf.placeholder(tf.int32, [2])
    assert shape_of(tf.fill(p, 1.0)) == [None, None]
    assert error_of(tf.fill, [2, -1], 1.0) == (
        "Fill dimensions must be >= 0 for 'Fill_2' (op: 'Fill') with input shapes: [2], [] and with input "
        "tensors computed as partial shapes: input[0] = [2,?].")
    assert error_of(tf.fill, [2], [1.0]) == (
        "Shape must be rank 0 but is rank 1 for 'Fill_3' (op: 'Fill') with input shapes: [1], [1].")


def test_zeros_small_is_a_single_const(graph):
    z = tf.zeros([2, 3])
    o = tf.ones((2,), tf.int32)
    b = tf.zeros([1], tf.bool)
    assert op_names(graph) == ["zeros", "ones", "zeros_1"]
    assert op_types(graph) == ["Const"] * 3
    assert constant_value(z).tolist() == [[0, 0, 0], [0, 0, 0]] and z.dtype == tf.float32
    assert constant_value(o).tolist() == [1, 1] and o.dtype == tf.int32
    assert constant_value(b).tolist() == [False]
    assert tf.zeros([2], name="zz").name == "zz:0"


def test_zero_element_shapes_ignore_the_value_like_tf(graph):
    # TF 1.15's make_tensor_proto: a python value with a zero-element shape becomes
    # np.empty(shape, dtype) (float32 when no dtype is given), the value unchecked.
    c = tf.constant(0, shape=[2, 0])
    assert c.dtype == tf.float32 and shape_of(c) == [2, 0]
    assert constant_value(c).shape == (2, 0)
    assert tf.constant(1.5, shape=[0], dtype=tf.int32).dtype == tf.int32
    proto = tf.constant("a", shape=[0], dtype=tf.string).op.get_attr("value")
    assert list(proto.string_val) == [b"a"] and [d.size for d in proto.tensor_shape.dim] == [0]
    z, o = tf.zeros([2, 0]), tf.ones([0, 3], tf.int32)
    assert op_types(graph)[-2:] == ["Const", "Const"]
    assert constant_value(z).shape == (2, 0) and z.dtype == tf.float32
    assert constant_value(o).shape == (0, 3) and o.dtype == tf.int32
    with pytest.raises(ValueError, match="Too many elements provided. Needed at most 0, but received 1"):
        tf.constant(np.array(0), shape=[2, 0])


def test_zero_element_zeros_run():
    import tfc.compat.v1 as tf1

    with tf1.Graph().as_default():
        z, o = tf1.zeros([2, 0]), tf1.ones([0, 3], tf1.int32)
        with tf1.Session() as sess:
            zv, ov = sess.run([z, o])
    assert zv.shape == (2, 0) and zv.dtype == np.float32
    assert ov.shape == (0, 3) and ov.dtype == np.int32


def test_zeros_large_or_dynamic_uses_fill(graph):
    big = tf.ones([1000, 2])
    assert op_names(graph) == ["ones/shape_as_tensor", "ones/Const", "ones"]
    assert big.op.type == "Fill" and shape_of(big) == [1000, 2]
    n = tf.placeholder(tf.int32, [])
    dynamic = tf.zeros([n, 3])
    # TF's np.prod(shape) < 1000 multiplies the tensor as a Python object: stray mul/Less ops.
    assert op_names(graph)[4:] == ["zeros/mul/y", "zeros/mul", "zeros/Less/y", "zeros/Less", "zeros/packed/1",
                                   "zeros/packed", "zeros/Const", "zeros"]
    assert shape_of(dynamic) == [None, 3]
    s = tf.placeholder(tf.int32, [2])
    assert shape_of(tf.zeros(s)) == [None, None]
    scalar_shape = tf.placeholder(tf.int32, [])
    tf.ones(scalar_shape)
    assert op_names(graph)[-4:] == ["ones_1/Reshape/shape", "ones_1/Reshape", "ones_1/Const", "ones_1"]
    five = tf.ones(5)  # TF's Const(shape=5) fails (not iterable): TensorShape(5) and a Fill
    assert op_names(graph)[-3:] == ["ones_2/shape_as_tensor", "ones_2/Const", "ones_2"]
    assert shape_of(five) == [5]


def test_zeros_like_and_ones_like(graph):
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    p = tf.placeholder(tf.float32, [None, 3])
    z = tf.zeros_like(x)
    assert op_names(graph)[-1] == "zeros_like" and z.op.type == "Const"
    zp = tf.zeros_like(p)
    assert zp.op.type == "ZerosLike" and zp.name == "zeros_like_1:0" and shape_of(zp) == [None, 3]
    o = tf.ones_like(p)
    assert op_names(graph)[-3:] == ["ones_like/Shape", "ones_like/Const", "ones_like"]
    assert op_types(graph)[-3:] == ["Shape", "Const", "Fill"]
    assert shape_of(o) == [None, 3]
    o2 = tf.ones_like(x, dtype=tf.float32)
    assert op_types(graph)[-3:] == ["Const", "Const", "Fill"] and o2.dtype == tf.float32
    zf = tf.zeros_like(p, dtype=tf.int32)
    assert op_names(graph)[-3:] == ["zeros_like_2/Shape", "zeros_like_2/Const", "zeros_like_2"]
    assert zf.dtype == tf.int32


# -- BroadcastTo, Tile, Pad, Reverse ---------------------------------------------------------
def test_broadcast_to(graph):
    p = tf.placeholder(tf.float32, [None, 1])
    assert shape_of(tf.broadcast_to(p, [4, 2, 3])) == [4, 2, 3]
    assert shape_of(tf.broadcast_to(tf.placeholder(tf.float32, [3]), [2, 3])) == [2, 3]
    assert error_of(tf.broadcast_to, tf.placeholder(tf.float32, [3]), [2, 4]) == (
        "Dimensions must be equal, but are 3 and 4 for 'BroadcastTo_2' (op: 'BroadcastTo') with input shapes: "
        "[3], [2] and with input tensors computed as partial shapes: input[1] = [2,4].")


def test_tile(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    t = tf.tile(p, [2, 3])
    assert op_names(graph)[1:] == ["Tile/multiples", "Tile"]
    assert shape_of(t) == [None, 9]
    assert shape_of(tf.tile(tf.placeholder(tf.float32, [2, 1]), tf.placeholder(tf.int32, [2]))) == [None, None]
    assert error_of(tf.tile, p, [2, 3, 4]) == (
        "Shape must be rank 2 but is rank 3 for 'Tile_2' (op: 'Tile') with input shapes: [?,3], [3].")


def test_pad_modes(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    a = tf.pad(p, [[1, 1], [2, 2]])
    b = tf.pad(p, [[0, 0], [1, 0]], constant_values=5)
    c = tf.pad(p, [[1, 1], [1, 1]], mode="reflect")
    assert [a.op.type, b.op.type, c.op.type] == ["Pad", "PadV2", "MirrorPad"]
    assert c.op.get_attr("mode") == b"REFLECT"
    assert [shape_of(a), shape_of(b), shape_of(c)] == [[None, 7], [None, 4], [None, 5]]
    assert op_names(graph)[1:3] == ["Pad/paddings", "Pad"]
    assert op_names(graph)[3:6] == ["PadV2/paddings", "PadV2/constant_values", "PadV2"]
    with pytest.raises(ValueError, match="Unknown padding mode: WRAP"):
        tf.pad(p, [[1, 1], [1, 1]], mode="wrap")


def test_pad_errors(graph):
    x = tf.placeholder(tf.float32, [2, 3])
    assert error_of(tf.pad, x, [[1, 1], [2, 2], [3, 3]]) == (
        "Shape must be rank 3 but is rank 2 for 'Pad' (op: 'Pad') with input shapes: [2,3], [3,2].")
    assert error_of(tf.pad, x, [[1, 1], [-1, 2]]) == (
        "Paddings must be non-negative for 'Pad_1' (op: 'Pad') with input shapes: [2,3], [2,2] and with "
        "computed input tensors: input[1] = <[1 1][-1 2]>.")
    assert error_of(tf.pad, x, [[1, 1, 1], [2, 2, 2]]) == (
        "Dimension must be 2 but is 3 for 'Pad_2' (op: 'Pad') with input shapes: [2,3], [2,3].")


def test_reverse(graph):
    p = tf.placeholder(tf.float32, [None, 3])
    r = tf.reverse(p, [1])
    assert op_names(graph)[1:] == ["ReverseV2/axis", "ReverseV2"]
    assert shape_of(r) == [None, 3] and r.op.get_attr("Tidx") == tf.int32
    assert error_of(tf.reverse, p, [2]) == (
        "'axis'[0] = 2 is out of valid range [0, 1 for 'ReverseV2_1' (op: 'ReverseV2') with input shapes: "
        "[?,3], [1] and with computed input tensors: input[1] = <2>.")
    assert error_of(tf.reverse, p, [0, -2]) == (
        "axis 0 specified more than once. for 'ReverseV2_2' (op: 'ReverseV2') with input shapes: [?,3], [2] and "
        "with computed input tensors: input[1] = <0 -2>.")
