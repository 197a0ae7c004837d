"""Neural-net ops and tf.nn: activations, Softmax/LogSoftmax, BiasAdd, Conv2D, Conv3D,
DepthwiseConv2dNative, MaxPool, AvgPool, MaxPool3D, AvgPool3D, the softmax cross
entropies, L2Loss, tf.nn.convolution (1-D to 3-D), and the
composite functions of TensorFlow 1.15's nn_ops.py / nn_impl.py (dropout, moments,
batch_normalization, sigmoid_cross_entropy_with_logits, l2_normalize, xw_plus_b...),
building the same ops under the same name scopes as TF does.

Gradients are TF 1.15's python/ops/nn_grad.py, with its gradient op types registered
here (ReluGrad..., BiasAddGrad, Conv2DBackpropInput/Filter and Conv3DBackpropInputV2/
FilterV2 lowered to core convs as XLA does, the depthwise ones as grouped convs,
MaxPoolGrad/MaxPool3DGrad as select_and_scatter, AvgPoolGrad/AvgPool3DGrad as a pad +
reduce_window sum, PreventGradient). The conv lowerings are rank-generic: the core conv
takes any number of spatial dims, channels last; channels-first data is transposed.

Shape functions follow TF's common_shape_fns.cc (Conv2DShapeWithExplicitPadding,
Conv3DShape, MaxPoolShape, AvgPoolShape, Pool3DShape, BiasAddShape,
DepthwiseConv2DNativeShape) with their
error texts, e.g. "Negative dimension size caused by subtracting 3 from 2".
"""
from __future__ import annotations

import numbers
from collections.abc import Sized

import numpy as np

from tfc import ir

from .. import dtypes
from ..convert import convert_to_tensor
from ..errors import InvalidArgumentError
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_shape import TensorShape, as_shape
from ..tensor_util import constant_value
from . import inference_context as ic
from . import math_ops
from .inference_context import run_shape_fn
from .math_ops import NN_FLOAT_TYPES, NUMBER_TYPES, REAL_NUMBER_TYPES, array_ops
from .math_ops import sigmoid, tanh  # noqa: F401 - tf.nn.sigmoid and tf.nn.tanh
from .math_ops import _broadcast_all, _cmp, _elem_of, _full_like, _like, _require_float, _select, scalar_constant

_d = dtypes
_MAX_POOL_TYPES = (_d.float16, _d.bfloat16, _d.float32, _d.float64, _d.int32, _d.int64, _d.uint8, _d.int16,
                   _d.int8, _d.uint16)


def _unchanged_rank_at_least_1(op) -> list:
    return run_shape_fn(op, lambda c: [ic.with_rank_at_least(c.input(0), 1)])


def _register_nn(type_name: str, inputs: list, outputs: list, attrs: dict, infer, **methods):
    """Register one nn op type from a table row; ``methods`` may add lower/gradient/..."""
    body = {"inputs": inputs, "outputs": outputs, "attrs": attrs, "infer": infer,
            "__doc__": f"TF op {type_name}.", **methods}
    return register(type(type_name, (OpType,), body))


# -- lowerings (graph -> core IR; see docs/CONTRIBUTING-ops.md "Lowering") -----------------
# The activations follow TF 1.15's Eigen functors (relu_op_functor.h, softplus_op.h,
# softsign_op.h) term for term, so values match TF's CPU kernels.
_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_SCALE_ALPHA = 1.7580993408473768599402175208123  # scale * alpha, as TF's kernel uses it


def _lower_relu(ctx, op, x):
    """max(x, 0) (NaN stays NaN)."""
    return ctx.elementwise("max", x, _like(ctx, 0, x))


def _lower_relu6(ctx, op, x):
    """min(max(x, 0), 6)."""
    return ctx.elementwise("min", ctx.elementwise("max", x, _like(ctx, 0, x)), _like(ctx, 6, x))


def _lower_elu(ctx, op, x):
    """x < 0 ? exp(x) - 1 : x (TF computes exp(x) - 1, not expm1)."""
    _require_float(ctx, op, x)
    negative = ctx.elementwise("sub", ctx.b.value("exp", [x]), _like(ctx, 1, x))
    return _select(ctx, _cmp(ctx, "lt", x, _like(ctx, 0, x)), negative, x)


def _lower_selu(ctx, op, x):
    """x < 0 ? scale_alpha * (exp(x) - 1) : scale * x, with TF's constants."""
    _require_float(ctx, op, x)
    negative = ctx.elementwise("mul", _like(ctx, _SELU_SCALE_ALPHA, x),
                               ctx.elementwise("sub", ctx.b.value("exp", [x]), _like(ctx, 1, x)))
    positive = ctx.elementwise("mul", _like(ctx, _SELU_SCALE, x), x)
    return _select(ctx, _cmp(ctx, "lt", x, _like(ctx, 0, x)), negative, positive)


def softplus_threshold(np_dtype) -> float:
    """TF's ``log(epsilon) + 2`` in the value's precision."""
    np_dtype = np.dtype(np_dtype)
    eps = np.finfo(np_dtype).eps
    return float(np.log(np.asarray(eps, dtype=np_dtype)).astype(np_dtype) + np_dtype.type(2))


def _lower_softplus(ctx, op, x):
    """TF's stable softplus: x above -threshold, exp(x) below threshold, else
    log1p(exp(x)), with threshold = log(epsilon) + 2."""
    _require_float(ctx, op, x)
    threshold = softplus_threshold(_elem_of(x).np_dtype)
    exp_x = ctx.b.value("exp", [x])
    too_large = _cmp(ctx, "gt", x, _like(ctx, -threshold, x))
    too_small = _cmp(ctx, "lt", x, _like(ctx, threshold, x))
    middle = _select(ctx, too_small, exp_x, ctx.b.value("log1p", [exp_x]))
    return _select(ctx, too_large, x, middle)


def _lower_softsign(ctx, op, x):
    """x / (1 + |x|)."""
    _require_float(ctx, op, x)
    return ctx.b.value("div", [x, ctx.elementwise("add", _like(ctx, 1, x), ctx.b.value("abs", [x]))])


def _lower_leaky_relu(ctx, op, x):
    """max(x, alpha * x): TF 1.15's kernel (``features.cwiseMax(features * alpha)``)."""
    _require_float(ctx, op, x)
    scaled = ctx.elementwise("mul", x, _like(ctx, op._attrs.get("alpha", 0.2), x))
    return ctx.b.value("max", [x, scaled])


def _last_axis_parts(ctx, logits):
    """(shifted = logits - max, sum of exp(shifted)) over the last axis, sums kept as
    [..., 1]-broadcastable values for the caller."""
    rank = logits.type.rank
    last = rank - 1
    shape = tuple(logits.type.shape)
    peak = ctx.reduce(logits, "max", [last])
    shifted = ctx.b.value("sub", [logits, ctx.broadcast_in_dim(peak, shape, list(range(last)))])
    exp_shifted = ctx.b.value("exp", [shifted])
    total = ctx.reduce(exp_shifted, "sum", [last])
    return shifted, exp_shifted, total


def _keep_last(ctx, value, shape):
    """Broadcast a [...] per-row value back over the last axis of ``shape``."""
    return ctx.broadcast_in_dim(value, shape, list(range(len(shape) - 1)))


def _lower_softmax(ctx, op, logits):
    """exp(x - max) / sum(exp(x - max)) over the last axis."""
    _require_float(ctx, op, logits)
    if logits.type.rank == 0:
        ctx.fail("Softmax needs logits of rank >= 1")
    shape = tuple(logits.type.shape)
    _, exp_shifted, total = _last_axis_parts(ctx, logits)
    return ctx.b.value("div", [exp_shifted, _keep_last(ctx, total, shape)])


def _lower_log_softmax(ctx, op, logits):
    """(x - max) - log(sum(exp(x - max))) over the last axis."""
    _require_float(ctx, op, logits)
    if logits.type.rank == 0:
        ctx.fail("LogSoftmax needs logits of rank >= 1")
    shape = tuple(logits.type.shape)
    shifted, _, total = _last_axis_parts(ctx, logits)
    return ctx.b.value("sub", [shifted, _keep_last(ctx, ctx.b.value("log", [total]), shape)])


def _lower_l2_loss(ctx, op, t):
    """sum(t * t) / 2 (a halving is exact, so this equals TF's sum(t^2 * 0.5))."""
    _require_float(ctx, op, t)
    total = ctx.reduce(ctx.b.value("mul", [t, t]), "sum", range(t.type.rank))
    return ctx.elementwise("mul", total, _like(ctx, 0.5, total))


def _lower_bias_add(ctx, op, value, bias):
    """value + bias along the channel dim: the last (NHWC) or dim 1 (NCHW)."""
    nchw = op._attrs.get("data_format", "NHWC") == "NCHW"
    rank = value.type.rank
    if bias.type.rank != 1 or rank < (3 if nchw else 2):
        ctx.fail(f"BiasAdd needs a vector bias and a value of rank >= {3 if nchw else 2}")
    channel = 1 if nchw else rank - 1
    ctx.unify(value.type.shape[channel], bias.type.shape[0], (value.type.shape, bias.type.shape))
    spread = ctx.broadcast_in_dim(bias, tuple(value.type.shape), [channel])
    return ctx.b.value("add", [value, spread])


def _lower_softmax_xent(ctx, op, features, labels):
    """TF's XentFunctor, with features and labels broadcast to [batch, classes]:
    loss = sum(labels * (log(sum(exp(shifted))) - shifted)),
    backprop = exp(shifted) / sum(exp(shifted)) - labels, where shifted = x - max(x)."""
    _require_float(ctx, op, features)
    features, labels = _broadcast_all(ctx, features, labels)
    if features.type.rank != 2:
        ctx.fail("SoftmaxCrossEntropyWithLogits needs rank-2 logits and labels")
    shape = tuple(features.type.shape)
    shifted, exp_shifted, total = _last_axis_parts(ctx, features)
    log_total = _keep_last(ctx, ctx.b.value("log", [total]), shape)
    loss = ctx.reduce(ctx.b.value("mul", [labels, ctx.b.value("sub", [log_total, shifted])]), "sum", [1])
    probabilities = ctx.b.value("div", [exp_shifted, _keep_last(ctx, total, shape)])
    backprop = ctx.b.value("sub", [probabilities, labels])
    return [loss, backprop]


def _lower_sparse_softmax_xent(ctx, op, features, labels):
    """The dense version with one-hot labels (an iota compare): loss =
    log(sum(exp(shifted))) - shifted[label], backprop = softmax - onehot. A label outside
    [0, classes) fails, as in TF's CPU kernel (its GPU kernel and XLA give NaN)."""
    _require_float(ctx, op, features)
    if features.type.rank != 2 or labels.type.rank != 1:
        ctx.fail("SparseSoftmaxCrossEntropyWithLogits needs rank-2 logits and rank-1 labels")
    ctx.unify(features.type.shape[0], labels.type.shape[0], (features.type.shape, labels.type.shape))
    shape = tuple(features.type.shape)
    label_elem = _elem_of(labels)
    ctx.check("label", labels, bound=[shape[1]])
    classes = ctx.b.value("iota", [], {"dim": 1}, result_type=ir.TensorType(label_elem, shape))
    one_hot = ctx.b.value("compare", [classes, ctx.broadcast_in_dim(labels, shape, [0])], {"dir": "eq"})
    shifted, exp_shifted, total = _last_axis_parts(ctx, features)
    log_total = _keep_last(ctx, ctx.b.value("log", [total]), shape)
    picked = _select(ctx, one_hot, ctx.b.value("sub", [log_total, shifted]), _full_like(ctx, 0, shifted))
    loss = ctx.reduce(picked, "sum", [1])
    probabilities = ctx.b.value("div", [exp_shifted, _keep_last(ctx, total, shape)])
    backprop = ctx.b.value("sub", [probabilities, ctx.convert(one_hot, _elem_of(features))])
    return [loss, backprop]


# -- lowerings: convolution and pooling -----------------------------------------------------
def _same_padding(ctx, size, window: int, stride: int, dilation: int = 1) -> list:
    """TF's SAME padding: out = ceil(size / stride); the total padding is
    max((out - 1) * stride + effective_window - size, 0), the odd element at the end."""
    effective = (window - 1) * dilation + 1
    if not isinstance(size, int):
        if stride != 1:
            ctx.fail(f"SAME padding with stride {stride} along a dimension of unknown size ({size}): the padding "
                     f"depends on the size, which must be known at compile time")
        needed = effective - 1
    else:
        out = -(-size // stride)
        needed = max((out - 1) * stride + effective - size, 0)
    return [needed // 2, needed - needed // 2]


def _layout(data_format: str) -> tuple:
    """(batch, [spatial dims...], channel) positions of a data format: NHWC/NCHW (2
    spatial dims), NDHWC/NCDHW (3), NWC/NCW (1)."""
    spatial = len(data_format) - 2
    if data_format.startswith("NC"):
        return 0, list(range(2, spatial + 2)), 1
    return 0, list(range(1, spatial + 1)), spatial + 1


def _spatial_pads(ctx, op, x_shape, windows, strides, dilations, data_format) -> list:
    """[[low, high]] per spatial dim of a conv from TF's padding attrs."""
    _, spatial, _ = _layout(data_format)
    padding = op._attrs["padding"]
    if padding == "VALID":
        return [[0, 0] for _ in spatial]
    if padding == "EXPLICIT":
        explicit = _imported_explicit_paddings(op)
        return [[explicit[2 * d], explicit[2 * d + 1]] for d in spatial]
    return [_same_padding(ctx, x_shape[d], k, s, r) for d, k, s, r in zip(spatial, windows, strides, dilations)]


def _spatial_values(ctx, op, attr: str, data_format: str) -> list:
    """The spatial entries of a per-dim attr (strides, dilations); batch and depth must be 1."""
    batch, spatial, channel = _layout(data_format)
    values = list(op._attrs.get(attr) or [1] * (len(spatial) + 2))
    if len(values) != len(spatial) + 2 or values[batch] != 1 or values[channel] != 1:
        ctx.fail(f"{attr} in the batch and depth dimensions must be 1, got {values}")
    return [values[d] for d in spatial]


def _to_channels_last(ctx, x, data_format):
    """NC... -> N...C (a transpose; channels-last values pass through)."""
    if not data_format.startswith("NC"):
        return x
    rank = x.type.rank
    return ctx.transpose(x, [0] + list(range(2, rank)) + [1])


def _from_channels_last(ctx, y, data_format):
    if not data_format.startswith("NC"):
        return y
    rank = y.type.rank
    return ctx.transpose(y, [0, rank - 1] + list(range(1, rank - 1)))


def _in_layout(data_format: str, shape_channels_last) -> list:
    """A channels-last shape [N, spatial..., C] in ``data_format``'s order."""
    shape = list(shape_channels_last)
    return shape if not data_format.startswith("NC") else [shape[0], shape[-1]] + shape[1:-1]


def _conv(ctx, op, x, w, groups: int, dilations) -> object:
    """The core conv of a channels-last or channels-first input and a [K..., C, O] filter."""
    data_format = op._attrs.get("data_format", "NHWC")
    spatial = w.type.rank - 2
    strides = _spatial_values(ctx, op, "strides", data_format)
    pads = _spatial_pads(ctx, op, tuple(x.type.shape), list(w.type.shape[:spatial]), strides, dilations,
                         data_format)
    x = _to_channels_last(ctx, x, data_format)
    attrs = {"strides": strides, "padding": pads}
    if any(d != 1 for d in dilations):
        attrs["rhs_dilation"] = list(dilations)
    if groups != 1:
        attrs["groups"] = groups
    y = ctx.b.value("conv", [x, w], attrs)
    return _from_channels_last(ctx, y, data_format)


def _lower_conv(ctx, op, x, w):
    """Conv2D and Conv3D: the core conv (channels last, [K..., C, O] filter); channels-first
    data through transposes; SAME padding as TF computes it (the odd pad at the end),
    EXPLICIT from explicit_paddings; dilations -> rhs_dilation."""
    _require_float(ctx, op, x)
    data_format = op._attrs.get("data_format", "NHWC")
    _, _, channel = _layout(data_format)
    spatial = w.type.rank - 2
    for d in w.type.shape[:spatial]:
        if not isinstance(d, int):
            ctx.fail("the filter's spatial size must be known at compile time")
    ctx.unify(x.type.shape[channel], w.type.shape[spatial], (x.type.shape, w.type.shape))
    dilations = _spatial_values(ctx, op, "dilations", data_format)
    return _conv(ctx, op, x, w, 1, dilations)


def _lower_depthwise_conv2d(ctx, op, x, w):
    """Core conv with groups = in_channels and the [kh, kw, C, M] filter reshaped to
    [kh, kw, 1, C * M] (output channel c * M + m, TF's order)."""
    _require_float(ctx, op, x)
    data_format = op._attrs.get("data_format", "NHWC")
    channel = _spatial_indices(data_format)[3]
    kh, kw, c, m = w.type.shape
    ctx.unify(x.type.shape[channel], c, (x.type.shape, w.type.shape))
    kh, kw, c, m = w.type.shape
    if not all(isinstance(d, int) for d in (kh, kw, c, m)):
        ctx.fail("the depthwise filter's shape must be known at compile time")
    if _spatial_values(ctx, op, "dilations", data_format) != [1, 1]:
        ctx.fail("DepthwiseConv2dNative with dilations other than 1 (TF's kernel does not support them either)")
    flat = ctx.reshape(w, (kh, kw, 1, c * m))
    return _conv(ctx, op, x, flat, c, [1, 1])


def _pool_geometry(ctx, op, x, shape=None) -> tuple:
    """(window, strides, padding) per dim of the input (of ``shape`` when given, else of
    the value ``x``), in its own layout."""
    ksize, strides = list(op._attrs["ksize"]), list(op._attrs["strides"])
    shape = tuple(x.type.shape) if shape is None else tuple(shape)
    rank = len(shape)
    if len(ksize) != rank or len(strides) != rank:
        ctx.fail(f"ksize and strides must have {rank} values")
    if op._attrs["padding"] == "VALID":
        padding = [[0, 0] for _ in range(rank)]
    elif op._attrs["padding"] == "EXPLICIT":
        explicit = _imported_explicit_paddings(op)
        padding = [explicit[2 * i:2 * i + 2] for i in range(rank)]
    else:
        padding = [_same_padding(ctx, d, k, s) for d, k, s in zip(shape, ksize, strides)]
    return ksize, strides, padding


def _imported_explicit_paddings(op) -> list:
    """TF 2.x's MaxPool ``explicit_paddings`` (not in TF 1.15's OpDef: it arrives verbatim
    on GraphDef import as an AttrValue)."""
    value = op._attrs.get("explicit_paddings")
    if value is None:
        return []
    if type(value).__name__ == "AttrValue":
        return list(value.list.i)
    return list(value)


def _lower_max_pool(ctx, op, x):
    """reduce_window max (padding never wins)."""
    window, strides, padding = _pool_geometry(ctx, op, x)
    return ctx.b.value("reduce_window", [x], {"op": "max", "window": window, "strides": strides,
                                              "padding": padding})


def _lower_avg_pool(ctx, op, x):
    """reduce_window sum divided by the number of input elements in each window: the
    window size for VALID; for SAME a reduce_window over ones (a constant after folding),
    so edge windows average only their valid elements, like TF."""
    _require_float(ctx, op, x)
    window, strides, padding = _pool_geometry(ctx, op, x)
    total = ctx.b.value("reduce_window", [x], {"op": "sum", "window": window, "strides": strides,
                                               "padding": padding})
    return ctx.elementwise("div", total, _avg_pool_counts(ctx, tuple(x.type.shape), window, strides, padding,
                                                          _elem_of(x)))


def _avg_pool_counts(ctx, shape, window, strides, padding, elem):
    """How many input elements each output window averages (broadcastable to the
    output): a scalar for VALID, else a reduce_window sum over ones (a constant after
    folding) whose size-1 dims stand for dims with trivial windows."""
    if all(p == [0, 0] for p in padding):
        return scalar_constant(ctx, int(np.prod(window)), elem)
    count_shape, count_strides = [], []
    for d, k, s, p in zip(shape, window, strides, padding):
        trivial = k == 1 and p == [0, 0]
        count_shape.append(1 if trivial else d)
        count_strides.append(1 if trivial else s)
    if all(isinstance(d, int) for d in count_shape):
        ones = ctx.constant(np.ones(count_shape, dtype=elem.np_dtype))
    else:
        ones = ctx.broadcast_to(scalar_constant(ctx, 1, elem), tuple(count_shape))
    return ctx.b.value("reduce_window", [ones], {"op": "sum", "window": window, "strides": count_strides,
                                                 "padding": padding})


# -- lowerings: the gradient ops (ReluGrad ..., BiasAddGrad, conv backprops, pool grads) ----
# Activation gradients follow TF 1.15's functors (relu_op_functor.h, softplus_op.h,
# softsign_op.h): masks are multiplied in (so an inf gradient times a 0 mask is NaN, as in TF).
def _lower_relu_grad(ctx, op, gradients, features):
    """gradients * (features > 0)."""
    mask = ctx.convert(_cmp(ctx, "gt", features, _like(ctx, 0, features)), _elem_of(gradients))
    return ctx.elementwise("mul", gradients, mask)


def _lower_relu6_grad(ctx, op, gradients, features):
    """gradients * ((features > 0) & (features < 6))."""
    inside = ctx.b.value("and", [_cmp(ctx, "gt", features, _like(ctx, 0, features)),
                                 _cmp(ctx, "lt", features, _like(ctx, 6, features))])
    return ctx.elementwise("mul", gradients, ctx.convert(inside, _elem_of(gradients)))


def _lower_elu_grad(ctx, op, gradients, outputs):
    """outputs < 0 ? gradients * (outputs + 1) : gradients."""
    _require_float(ctx, op, gradients)
    negative = ctx.elementwise("mul", gradients, ctx.elementwise("add", outputs, _like(ctx, 1, outputs)))
    return _select(ctx, _cmp(ctx, "lt", outputs, _like(ctx, 0, outputs)), negative, gradients)


def _lower_selu_grad(ctx, op, gradients, outputs):
    """outputs < 0 ? gradients * (outputs + scale * alpha) : gradients * scale."""
    _require_float(ctx, op, gradients)
    negative = ctx.elementwise("mul", gradients,
                               ctx.elementwise("add", outputs, _like(ctx, _SELU_SCALE_ALPHA, outputs)))
    positive = ctx.elementwise("mul", gradients, _like(ctx, _SELU_SCALE, gradients))
    return _select(ctx, _cmp(ctx, "lt", outputs, _like(ctx, 0, outputs)), negative, positive)


def _lower_softplus_grad(ctx, op, gradients, features):
    """gradients / (exp(-features) + 1)."""
    _require_float(ctx, op, gradients)
    denominator = ctx.elementwise("add", ctx.b.value("exp", [ctx.b.value("neg", [features])]),
                                  _like(ctx, 1, features))
    return ctx.elementwise("div", gradients, denominator)


def _lower_softsign_grad(ctx, op, gradients, features):
    """gradients / (1 + |features|)^2."""
    _require_float(ctx, op, gradients)
    base = ctx.elementwise("add", ctx.b.value("abs", [features]), _like(ctx, 1, features))
    return ctx.elementwise("div", gradients, ctx.b.value("mul", [base, base]))


def _lower_leaky_relu_grad(ctx, op, gradients, features):
    """features > 0 ? gradients : gradients * alpha."""
    _require_float(ctx, op, gradients)
    scaled = ctx.elementwise("mul", gradients, _like(ctx, op._attrs.get("alpha", 0.2), gradients))
    return _select(ctx, _cmp(ctx, "gt", features, _like(ctx, 0, features)), gradients, scaled)


def _lower_bias_add_grad(ctx, op, out_backprop):
    """The sum over every dim but the channel dim (the last for NHWC, 1 for NCHW)."""
    nchw = op._attrs.get("data_format", "NHWC") == "NCHW"
    rank = out_backprop.type.rank
    if rank < (3 if nchw else 2):
        ctx.fail(f"BiasAddGrad needs a value of rank >= {3 if nchw else 2}")
    channel = 1 if nchw else rank - 1
    return ctx.reduce(out_backprop, "sum", [d for d in range(rank) if d != channel])


def _static_channels_last_shape(ctx, sizes, data_format: str, what: str) -> tuple:
    """A shape argument (input_sizes / filter_sizes) as dims, reordered to channels last."""
    dims = [ctx.canon(d) for d in ic.static_dims(ctx, sizes, what)]
    batch, spatial, channel = _layout(data_format)
    if len(dims) != len(spatial) + 2:
        ctx.fail(f"{what} must have {len(spatial) + 2} elements, got {len(dims)}")
    return tuple([dims[batch]] + [dims[d] for d in spatial] + [dims[channel]])


def _transposed_pads(ctx, size, out_size, window: int, stride: int, dilation: int, pad_low: int) -> list:
    """[low, high] padding of the stride-dilated output gradient so that a stride-1
    window of ``window`` taps (dilated by ``dilation``) gives back ``size`` positions:
    low = span - 1 - pad_low, high = size - 1 + pad_low - (out_size - 1) * stride."""
    from tfc.ir.dims import dim_add, dim_mul, dim_sub

    span = (window - 1) * dilation + 1
    low = span - 1 - pad_low
    high = dim_sub(dim_add(size, pad_low - 1), dim_mul(dim_sub(out_size, 1), stride))
    high = ctx.canon(high)
    if not isinstance(high, int):
        ctx.fail(f"the gradient's padding depends on a run-time dimension ({size}): strided windows over "
                 f"dimensions of unknown size are not supported")
    return [low, high]


def _filter_pads(ctx, size, out_size, window: int, stride: int, dilation: int, pad_low: int) -> list:
    """[low, high] padding of the input for the filter gradient: a window of
    ``out_size`` taps dilated by ``stride``, stepping by ``dilation``, ``window`` times."""
    from tfc.ir.dims import dim_add, dim_mul, dim_sub

    needed = dim_add(dim_add(dim_mul(dim_sub(out_size, 1), stride), (window - 1) * dilation), 1)
    high = ctx.canon(dim_sub(dim_sub(needed, size), pad_low))
    if not isinstance(high, int):
        ctx.fail(f"the filter gradient's padding depends on a run-time dimension ({size}): strided windows over "
                 f"dimensions of unknown size are not supported")
    return [pad_low, high]


def _conv_geometry(ctx, op, x_shape_channels_last, window, dilations_allowed=True) -> tuple:
    """(strides, dilations, pads) per spatial dim of a conv op for a channels-last input shape."""
    data_format = op._attrs.get("data_format", "NHWC")
    strides = _spatial_values(ctx, op, "strides", data_format)
    dilations = _spatial_values(ctx, op, "dilations", data_format) if dilations_allowed else [1] * len(window)
    in_layout = _in_layout(data_format, x_shape_channels_last)
    pads = _spatial_pads(ctx, op, tuple(in_layout), list(window), strides, dilations, data_format)
    return strides, dilations, pads


def _static_window(ctx, w) -> list:
    window = list(w.type.shape[:w.type.rank - 2])
    if not all(isinstance(k, int) for k in window):
        ctx.fail("the filter's spatial size must be known at compile time")
    return window


def _swap_filter_channels(ctx, w):
    """[K..., I, O] -> [K..., O, I]."""
    rank = w.type.rank
    return ctx.transpose(w, list(range(rank - 2)) + [rank - 1, rank - 2])


def _backprop_input(ctx, op, input_sizes, w_transposed, dy, groups: int, dilations_allowed=True):
    """The input gradient: a conv of the stride-dilated (lhs_dilation) output gradient
    with the spatially reversed filter (in/out channels already swapped by the caller)."""
    data_format = op._attrs.get("data_format", "NHWC")
    x_shape = _static_channels_last_shape(ctx, input_sizes, data_format, "input_sizes")
    window = _static_window(ctx, w_transposed)
    spatial = len(window)
    strides, dilations, pads = _conv_geometry(ctx, op, x_shape, window, dilations_allowed)
    dy = _to_channels_last(ctx, dy, data_format)
    padding = [_transposed_pads(ctx, x_shape[1 + i], dy.type.shape[1 + i], window[i], strides[i], dilations[i],
                                pads[i][0]) for i in range(spatial)]
    flipped = ctx.b.value("reverse", [w_transposed], {"dims": list(range(spatial))})
    attrs = {"strides": [1] * spatial, "padding": padding}
    if any(s != 1 for s in strides):
        attrs["lhs_dilation"] = list(strides)
    if any(d != 1 for d in dilations):
        attrs["rhs_dilation"] = list(dilations)
    if groups != 1:
        attrs["groups"] = groups
    dx = ctx.b.value("conv", [dy, flipped], attrs)
    for axis in range(1, spatial + 1):
        ctx.unify(dx.type.shape[axis], x_shape[axis], (tuple(dx.type.shape), x_shape))
    return _from_channels_last(ctx, dx, data_format)


def _lower_conv_backprop_input(ctx, op, input_sizes, w, dy):
    """XLA's ConvBackpropInput (Conv2DBackpropInput, Conv3DBackpropInputV2):
    conv(lhs_dilation = strides) with the reversed [K..., O, I] filter."""
    _require_float(ctx, op, w)
    return _backprop_input(ctx, op, input_sizes, _swap_filter_channels(ctx, w), dy, 1)


def _lower_depthwise_backprop_input(ctx, op, input_sizes, w, dy):
    """A grouped conv (groups = C) of the [N, OH, OW, C*M] gradient with the reversed
    [KH, KW, M, C] filter."""
    _require_float(ctx, op, w)
    c = w.type.shape[2]
    if not isinstance(c, int):
        ctx.fail("the depthwise filter's shape must be known at compile time")
    return _backprop_input(ctx, op, input_sizes, _swap_filter_channels(ctx, w), dy, c, dilations_allowed=False)


def _backprop_filter(ctx, op, x, filter_sizes, dy, depthwise: bool):
    """The filter gradient as a conv whose window is the output gradient: the input's
    channels (or channel x batch groups for depthwise) play the batch, the batch is
    contracted; window strides are the dilations and the window dilation is the strides."""
    data_format = op._attrs.get("data_format", "NHWC")
    sizes = ic.static_dims(ctx, filter_sizes, "filter_sizes")
    if not all(isinstance(d, int) for d in sizes):
        ctx.fail("the filter's shape must be known at compile time")
    window, (c_in, c_out) = list(sizes[:-2]), sizes[-2:]
    spatial = len(window)
    if x.type.rank != spatial + 2:
        ctx.fail(f"filter_sizes must have {x.type.rank} elements, got {len(sizes)}")
    x = _to_channels_last(ctx, x, data_format)
    dy = _to_channels_last(ctx, dy, data_format)
    x_shape = tuple(x.type.shape)
    strides, dilations, pads = _conv_geometry(ctx, op, x_shape, window, dilations_allowed=not depthwise)
    padding = [_filter_pads(ctx, x_shape[1 + i], dy.type.shape[1 + i], window[i], strides[i], dilations[i],
                            pads[i][0]) for i in range(spatial)]
    attrs = {"strides": list(dilations), "padding": padding}
    if any(s != 1 for s in strides):
        attrs["rhs_dilation"] = list(strides)
    positions = list(range(1, spatial + 1))
    window_value = ctx.transpose(dy, positions + [0, spatial + 1])  # [O1.., N, O]
    if depthwise:
        from tfc.ir.dims import dim_mul

        n, c = x_shape[0], x_shape[-1]
        lhs = ctx.reshape(ctx.transpose(x, positions + [spatial + 1, 0]),
                          (1,) + x_shape[1:-1] + (dim_mul(c, n),))  # channels (c, n)
        attrs["groups"] = c_in
        grad = ctx.b.value("conv", [lhs, window_value], attrs)  # [1, K..., C*M]
        return ctx.reshape(grad, tuple(window) + (c_in, c_out))
    lhs = ctx.transpose(x, [spatial + 1] + positions + [0])  # [C, S..., N]
    grad = ctx.b.value("conv", [lhs, window_value], attrs)  # [C, K..., O]
    return ctx.transpose(grad, positions + [0, spatial + 1])


def _lower_conv_backprop_filter(ctx, op, x, filter_sizes, dy):
    _require_float(ctx, op, x)
    return _backprop_filter(ctx, op, x, filter_sizes, dy, depthwise=False)


def _lower_depthwise_backprop_filter(ctx, op, x, filter_sizes, dy):
    _require_float(ctx, op, x)
    return _backprop_filter(ctx, op, x, filter_sizes, dy, depthwise=True)


def _lower_max_pool_grad(ctx, op, orig_input, orig_output, grad):
    """select_and_scatter: each gradient goes to its window's maximum (the first among
    ties, never a padding position)."""
    window, strides, padding = _pool_geometry(ctx, op, orig_input)
    return ctx.b.value("select_and_scatter", [orig_input, grad], {"window": window, "strides": strides,
                                                                   "padding": padding})


def _lower_avg_pool_grad(ctx, op, orig_input_shape, grad):
    """Each output gradient divided by its window's element count, then summed back
    over the windows: the stride-dilated gradient (pad interior) padded by the
    transposed amounts, and a stride-1 reduce_window sum."""
    _require_float(ctx, op, grad)
    shape = tuple(ctx.canon(d) for d in ic.static_dims(ctx, orig_input_shape, "orig_input_shape"))
    rank = grad.type.rank
    if len(shape) != rank:
        ctx.fail(f"orig_input_shape must have {rank} elements")
    window, strides, padding = _pool_geometry(ctx, op, None, shape)
    scaled = ctx.elementwise("div", grad, _avg_pool_counts(ctx, shape, window, strides, padding, _elem_of(grad)))
    low, high, interior = [], [], []
    for d, size, k, s, (pad_low, _) in zip(range(rank), shape, window, strides, padding):
        lo, hi = _transposed_pads(ctx, size, scaled.type.shape[d], k, s, 1, pad_low)
        low.append(lo)
        high.append(hi)
        interior.append(s - 1)
    if any(low) or any(high) or any(interior):
        scaled = ctx.b.value("pad", [scaled, _like(ctx, 0, scaled)], {"low": low, "high": high,
                                                                       "interior": interior})
    if all(k == 1 for k in window):
        return scaled
    return ctx.b.value("reduce_window", [scaled], {"op": "sum", "window": window, "strides": [1] * rank,
                                                   "padding": [[0, 0]] * rank})


# -- gradients (tf.gradients; TF 1.15's python/ops/nn_grad.py) ------------------------------
def _gen_out(op_type: str, inputs, attrs=None):
    """gen_nn_ops.<op>(...): the op named after its type."""
    return apply_op(op_type, inputs, attrs).outputs[0]


def _relu_grad(op, grad):
    return _gen_out("ReluGrad", [grad, op.outputs[0]])


def _relu6_grad(op, grad):
    return _gen_out("Relu6Grad", [grad, op.outputs[0]])


def _elu_grad(op, grad):
    return _gen_out("EluGrad", [grad, op.outputs[0]])


def _selu_grad(op, grad):
    return _gen_out("SeluGrad", [grad, op.outputs[0]])


def _softplus_grad(op, grad):
    return _gen_out("SoftplusGrad", [grad, op.inputs[0]])


def _softsign_grad(op, grad):
    return _gen_out("SoftsignGrad", [grad, op.inputs[0]])


def _leaky_relu_grad(op, grad):
    x = op.inputs[0]
    alpha = op.get_attr("alpha")
    return _gen_out("LeakyReluGrad", [grad, x], {"alpha": alpha})


def _relu_grad_grad(op, grad):
    x = op.inputs[1]
    return (_gen_out("ReluGrad", [grad, x]), array_ops.zeros(shape=array_ops.shape(x), dtype=x.dtype))


def _relu6_grad_grad(op, grad):
    x = op.inputs[1]
    return (_gen_out("Relu6Grad", [grad, x]), array_ops.zeros(shape=array_ops.shape(x), dtype=x.dtype))


def _leaky_relu_grad_grad(op, grad):
    x = op.inputs[1]
    alpha = op.get_attr("alpha")
    return (_gen_out("LeakyReluGrad", [grad, x], {"alpha": alpha}),
            array_ops.zeros(shape=array_ops.shape(x), dtype=x.dtype))


def _elu_grad_grad(op, grad):
    elu_x = op.inputs[1]
    return (_gen_out("EluGrad", [grad, elu_x]),
            array_ops.where(elu_x < 0, grad * op.inputs[0], array_ops.zeros_like(elu_x)))


def _selu_grad_grad(op, grad):
    selu_x = op.inputs[1]
    return (_gen_out("SeluGrad", [grad, selu_x]),
            array_ops.where(selu_x < 0., grad * op.inputs[0], array_ops.zeros_like(selu_x)))


def _softplus_grad_grad(op, grad):
    """(ddy, d2x) from op.inputs == [dy, x] and grad == ddx."""
    from ..graph import control_dependencies

    dy, x = op.inputs
    with control_dependencies([grad]):
        ddy = _gen_out("SoftplusGrad", [grad, x])
        d2x = grad * dy / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))
        return ddy, d2x


def _softmax_grad(op, grad_softmax):
    """(grad_softmax - sum(grad_softmax * softmax)) * softmax."""
    softmax = op.outputs[0]
    sum_channels = math_ops.reduce_sum(grad_softmax * softmax, -1, keepdims=True)
    return (grad_softmax - sum_channels) * softmax


def _log_softmax_grad(op, grad):
    softmax = math_ops.exp(op.outputs[0])
    return grad - math_ops.reduce_sum(grad, -1, keepdims=True) * softmax


def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


def _bias_add_grad(op, received_grad):
    data_format = op.get_attr("data_format")
    return received_grad, _gen_out("BiasAddGrad", [received_grad], {"data_format": data_format})


def _attr_text(op, name: str) -> str:
    value = op.get_attr(name)
    return value.decode() if isinstance(value, bytes) else value


def _bias_add_grad_grad(op, received_grad):
    data_format = _attr_text(op, "data_format")
    shape = array_ops.shape(op.inputs[0])
    bias_shape = array_ops.shape(received_grad)
    if data_format == "NCHW":
        expanded_shape = array_ops.concat([array_ops.ones_like(shape[:1]), bias_shape,
                                           array_ops.ones_like(shape[2:])], 0)
        tile_mults = array_ops.concat([shape[:1], [1], shape[2:]], 0)
    else:
        expanded_shape = array_ops.concat([array_ops.ones_like(shape[:-1]), bias_shape], 0)
        tile_mults = array_ops.concat([shape[:-1], [1]], 0)
    expanded_grad = array_ops.reshape(received_grad, expanded_shape)
    return array_ops.tile(expanded_grad, tile_mults)


def _broadcast_mul(vec, mat):
    """vec [D0] times mat [D0, D1], vec expanded to [D0, 1]."""
    vec = array_ops.expand_dims(vec, -1)
    return vec * mat


def _is_zero(g) -> bool:
    """TF's IsZero introspection: a ZerosLike/Zeros op or a constant of zeros."""
    if g.op.type in ("ZerosLike", "Zeros"):
        return True
    value = constant_value(g)
    if value is None and g.op.type == "Fill":  # zeros() of a large static shape
        value = constant_value(g.op.inputs[1])
    return value is not None and bool((np.asarray(value) == 0).all())


def _softmax_xent_grad(op, grad_loss, grad_grad):
    """grad_loss * backprop (the op's second output); a nonzero gradient of the backprop
    output adds the softmax derivative; the labels get -log_softmax(logits) * grad_loss."""
    softmax_grad = op.outputs[1]
    grad = _broadcast_mul(grad_loss, softmax_grad)
    logits = op.inputs[0]
    if grad_grad is not None and not _is_zero(grad_grad):
        probabilities = softmax(logits)
        grad += ((grad_grad - array_ops.squeeze(
            math_ops.matmul(array_ops.expand_dims(grad_grad, 1), array_ops.expand_dims(probabilities, 2)),
            axis=1)) * probabilities)
    return grad, _broadcast_mul(grad_loss, -log_softmax(logits))


def _sparse_softmax_xent_grad(op, grad_0, _):
    """grad_0 * backprop; the backprop goes through PreventGradient (no second derivative)."""
    sparse_softmax_grad_without_gradient = prevent_gradient(
        op.outputs[1],
        message="Currently there is no way to take the second derivative of "
                "sparse_softmax_cross_entropy_with_logits due to the fused implementation's interaction with "
                "tf.gradients()")
    return _broadcast_mul(grad_0, sparse_softmax_grad_without_gradient), None


def _conv_attrs(op) -> dict:
    return {name: op.get_attr(name) for name in ("dilations", "strides", "padding", "explicit_paddings",
                                                 "use_cudnn_on_gpu", "data_format")}


def _conv_gradients(forward: str, backprop_input: str, backprop_filter: str, attrs_of) -> tuple:
    """TF's gradients of a convolution and of its two backprop ops (nn_grad.py's _Conv2DGrad,
    _Conv2DBackpropInputGrad, _Conv2DBackpropFilterGrad; the 3-D ones have the same shape)."""

    def forward_grad(op, grad):
        attrs = attrs_of(op)
        shape_0, shape_1 = array_ops.shape_n([op.inputs[0], op.inputs[1]])
        return [_gen_out(backprop_input, [shape_0, op.inputs[1], grad], attrs),
                _gen_out(backprop_filter, [op.inputs[0], shape_1, grad], attrs)]

    def backprop_input_grad(op, grad):
        attrs = attrs_of(op)
        return [None,
                _gen_out(backprop_filter, [grad, array_ops.shape(op.inputs[1]), op.inputs[2]], attrs),
                _gen_out(forward, [grad, op.inputs[1]], attrs)]

    def backprop_filter_grad(op, grad):
        attrs = attrs_of(op)
        return [_gen_out(backprop_input, [array_ops.shape(op.inputs[0]), grad, op.inputs[2]], attrs),
                None,
                _gen_out(forward, [op.inputs[0], grad], attrs)]

    return forward_grad, backprop_input_grad, backprop_filter_grad


_conv2d_grad, _conv2d_backprop_input_grad, _conv2d_backprop_filter_grad = _conv_gradients(
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", _conv_attrs)


def _depthwise_attrs(op) -> dict:
    return {name: op.get_attr(name) for name in ("dilations", "strides", "padding", "data_format")}


def _depthwise_conv2d_native_grad(op, grad):
    attrs = _depthwise_attrs(op)
    return [_gen_out("DepthwiseConv2dNativeBackpropInput", [array_ops.shape(op.inputs[0]), op.inputs[1], grad],
                     attrs),
            _gen_out("DepthwiseConv2dNativeBackpropFilter", [op.inputs[0], array_ops.shape(op.inputs[1]), grad],
                     attrs)]


def _depthwise_backprop_input_grad(op, grad):
    attrs = _depthwise_attrs(op)
    return [None,
            _gen_out("DepthwiseConv2dNativeBackpropFilter", [grad, array_ops.shape(op.inputs[1]), op.inputs[2]],
                     attrs),
            _gen_out("DepthwiseConv2dNative", [grad, op.inputs[1]], attrs)]


def _depthwise_backprop_filter_grad(op, grad):
    attrs = _depthwise_attrs(op)
    return [_gen_out("DepthwiseConv2dNativeBackpropInput", [array_ops.shape(op.inputs[0]), grad, op.inputs[2]],
                     attrs),
            None,
            _gen_out("DepthwiseConv2dNative", [op.inputs[0], grad], attrs)]


def _pool_attrs_of(op) -> dict:
    return {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}


def _max_pool_grad(op, grad):
    return _gen_out("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs_of(op))


def _avg_pool_grad(op, grad):
    return _gen_out("AvgPoolGrad", [array_ops.shape(op.inputs[0]), grad], _pool_attrs_of(op))


def _avg_pool_grad_grad(op, grad):
    return (array_ops.stop_gradient(op.inputs[0]), _gen_out("AvgPool", [grad], _pool_attrs_of(op)))


def _prevent_gradient_grad(op, _):
    raise LookupError(f"Gradient explicitly disabled. Reason: {_attr_text(op, 'message')}")


_ACTIVATION_GRAD = {"Relu": _relu_grad, "Relu6": _relu6_grad, "Elu": _elu_grad, "Selu": _selu_grad,
                    "Softplus": _softplus_grad, "Softsign": _softsign_grad}


_ACTIVATION_LOWER = {"Relu": _lower_relu, "Relu6": _lower_relu6, "Elu": _lower_elu, "Selu": _lower_selu,
                     "Softplus": _lower_softplus, "Softsign": _lower_softsign}


# -- activations and softmax ----------------------------------------------------------------
for _name, _allowed in (("Relu", REAL_NUMBER_TYPES), ("Relu6", REAL_NUMBER_TYPES), ("Elu", NN_FLOAT_TYPES),
                        ("Selu", NN_FLOAT_TYPES), ("Softplus", NN_FLOAT_TYPES), ("Softsign", NN_FLOAT_TYPES)):
    _register_nn(_name, ["features: T"], ["activations: T"], {"T": Attr("type", allowed=_allowed)},
                 ic.unchanged_shape, lower=_ACTIVATION_LOWER[_name], gradient=_ACTIVATION_GRAD[_name])
_register_nn("LeakyRelu", ["features: T"], ["activations: T"],
             {"alpha": Attr("float", 0.2), "T": Attr("type", _d.float32, allowed=NN_FLOAT_TYPES)},
             ic.unchanged_shape, lower=_lower_leaky_relu, gradient=_leaky_relu_grad)
_register_nn("Softmax", ["logits: T"], ["softmax: T"], {"T": Attr("type", allowed=NN_FLOAT_TYPES)},
             _unchanged_rank_at_least_1, lower=_lower_softmax, gradient=_softmax_grad)
_register_nn("LogSoftmax", ["logits: T"], ["logsoftmax: T"], {"T": Attr("type", allowed=NN_FLOAT_TYPES)},
             _unchanged_rank_at_least_1, lower=_lower_log_softmax, gradient=_log_softmax_grad)


def _merge_both_inputs(op) -> list:
    """shape_inference::MergeBothInputsShapeFn."""
    return run_shape_fn(op, lambda c: [ic.merge(c.input(0), c.input(1))])


# The activation gradient ops: (gradients, features) or (gradients, outputs).
for _name, _second, _allowed, _lower, _grad in (
        ("ReluGrad", "features", REAL_NUMBER_TYPES, _lower_relu_grad, _relu_grad_grad),
        ("Relu6Grad", "features", REAL_NUMBER_TYPES, _lower_relu6_grad, _relu6_grad_grad),
        ("EluGrad", "outputs", NN_FLOAT_TYPES, _lower_elu_grad, _elu_grad_grad),
        ("SeluGrad", "outputs", NN_FLOAT_TYPES, _lower_selu_grad, _selu_grad_grad),
        ("SoftplusGrad", "features", NN_FLOAT_TYPES, _lower_softplus_grad, _softplus_grad_grad),
        ("SoftsignGrad", "features", NN_FLOAT_TYPES, _lower_softsign_grad, None)):
    _register_nn(_name, ["gradients: T", f"{_second}: T"], ["backprops: T"], {"T": Attr("type", allowed=_allowed)},
                 _merge_both_inputs, lower=_lower, gradient=_grad)
_register_nn("LeakyReluGrad", ["gradients: T", "features: T"], ["backprops: T"],
             {"alpha": Attr("float", 0.2), "T": Attr("type", _d.float32, allowed=NN_FLOAT_TYPES)},
             _merge_both_inputs, lower=_lower_leaky_relu_grad, gradient=_leaky_relu_grad_grad)


@register
class PreventGradient(OpType):
    """An identity whose gradient is an error (TF's prevent_gradient)."""
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "message": Attr("string", "")}
    infer = ic.unchanged_shape
    gradient = _prevent_gradient_grad

    def lower(ctx, op, x):
        return x


@register
class L2Loss(OpType):
    inputs = ["t: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=NN_FLOAT_TYPES)}

    def infer(op):
        return [TensorShape([])]

    lower = _lower_l2_loss
    gradient = _l2_loss_grad


# -- string attrs (validated at op creation, like TF's NodeDef validation) --------------
def _check_choice(op, attr: str, allowed: tuple) -> str:
    value = op._attrs[attr]
    if value not in allowed:
        choices = ", ".join(f'"{a}"' for a in allowed)
        raise ValueError(f"Value for attr '{attr}' of \"{value}\" is not in the list of allowed values: {choices}")
    return value


_DATA_FORMATS = ("NHWC", "NCHW")
_PADDINGS = ("SAME", "VALID")


def _spatial_indices(data_format: str) -> tuple:
    """(batch, height, width, channels) positions for NHWC or NCHW."""
    return (0, 1, 2, 3) if data_format == "NHWC" else (0, 2, 3, 1)


def windowed_output_size(input_size, filter_size, stride: int, padding: str, dilation: int = 1,
                         pad_before: int = 0, pad_after: int = 0):
    """TF's GetWindowedOutputSizeFromDimsV2 on dims (None = unknown)."""
    if stride <= 0:
        raise ShapeError(f"Stride must be > 0, but got {stride}")
    if dilation < 1:
        raise ShapeError(f"Dilation rate must be >= 1, but got {dilation}")
    if padding == "SAME":
        return ic.divide_dim(ic.add_dims(input_size, stride - 1), stride, evenly_divisible=False)
    if padding == "VALID" and dilation == 1:
        window = filter_size
    else:
        window = ic.add_dims(ic.multiply_dims(ic.subtract_dims(filter_size, 1), dilation), 1)
    size = ic.subtract_dims(input_size, window)
    if padding == "EXPLICIT":
        size = ic.add_dims(size, pad_before + pad_after)
    return ic.divide_dim(ic.add_dims(size, stride), stride, evenly_divisible=False)


def _check_explicit_paddings(padding: str, explicit: list, data_format: str) -> None:
    """TF's CheckValidPadding for 4-D ops."""
    if padding != "EXPLICIT":
        if explicit:
            raise ShapeError("explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT")
        return
    if len(explicit) != 8:
        raise ShapeError(f"explicit_paddings attribute must contain 8 values, but got: {len(explicit)}")
    if any(p < 0 for p in explicit):
        raise ShapeError("All elements of explicit_paddings must be nonnegative")
    batch, _, _, depth = _spatial_indices(data_format)
    if explicit[2 * batch] or explicit[2 * batch + 1] or explicit[2 * depth] or explicit[2 * depth + 1]:
        raise ShapeError("Nonzero explicit padding in the batch or depth dimensions is not supported")


def _make_shape(data_format: str, batch, rows, cols, depth) -> list:
    return [batch, rows, cols, depth] if data_format == "NHWC" else [batch, depth, rows, cols]


# -- convolutions ---------------------------------------------------------------------------
def _conv2d_shape(c) -> list:
    """TF's Conv2DShapeWithExplicitPadding."""
    data_format = c.attr("data_format")
    inp = ic.with_rank(c.input(0), 4)
    flt = ic.with_rank(c.input(1), 4)
    dilations, strides = c.attr("dilations"), c.attr("strides")
    if len(dilations) != 4:
        raise ShapeError(f"Conv2D requires the dilation attribute to contain 4 values, but got: {len(dilations)}")
    if len(strides) != 4:
        raise ShapeError(f"Conv2D on data format {data_format} requires the stride attribute to contain 4 values, "
                         f"but got: {len(strides)}")
    n, h, w, ch = _spatial_indices(data_format)
    ic.merge_dim(inp[ch], flt[2])
    padding, explicit = c.attr("padding"), c.attr("explicit_paddings")
    _check_explicit_paddings(padding, explicit, data_format)
    pads = explicit if padding == "EXPLICIT" else [0] * 8
    rows = windowed_output_size(inp[h], flt[0], strides[h], padding, dilations[h], pads[2 * h], pads[2 * h + 1])
    cols = windowed_output_size(inp[w], flt[1], strides[w], padding, dilations[w], pads[2 * w], pads[2 * w + 1])
    return [_make_shape(data_format, inp[n], rows, cols, flt[3])]


@register
class Conv2D(OpType):
    inputs = ["input: T", "filter: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=NN_FLOAT_TYPES), "strides": Attr("list(int)"),
             "use_cudnn_on_gpu": Attr("bool", True), "padding": Attr("string"),
             "explicit_paddings": Attr("list(int)", []), "data_format": Attr("string", "NHWC"),
             "dilations": Attr("list(int)", [1, 1, 1, 1])}

    def infer(op):
        _check_choice(op, "padding", _PADDINGS + ("EXPLICIT",))
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, _conv2d_shape)

    lower = _lower_conv
    gradient = _conv2d_grad


def _depthwise_shape(c) -> list:
    """TF's DepthwiseConv2DNativeShape (dilations do not enter the shape)."""
    inp = ic.with_rank(c.input(0), 4)
    flt = ic.with_rank(c.input(1), 4)
    strides = c.attr("strides")
    if len(strides) != 4:
        raise ShapeError(f"DepthwiseConv2D requires the stride attribute to contain 4 values, but got: "
                         f"{len(strides)}")
    data_format = c.attr("data_format")
    n, h, w, ch = _spatial_indices(data_format)
    in_depth = ic.merge_dim(inp[ch], flt[2])
    out_depth = ic.multiply_dims(in_depth, flt[3])
    padding = c.attr("padding")
    pads = _imported_explicit_paddings(c.op) if padding == "EXPLICIT" else [0] * 8
    if padding == "EXPLICIT":
        _check_explicit_paddings(padding, pads, data_format)
    rows = windowed_output_size(inp[h], flt[0], strides[h], padding, 1, pads[2 * h], pads[2 * h + 1])
    cols = windowed_output_size(inp[w], flt[1], strides[w], padding, 1, pads[2 * w], pads[2 * w + 1])
    return [_make_shape(data_format, inp[n], rows, cols, out_depth)]


@register
class DepthwiseConv2dNative(OpType):
    inputs = ["input: T", "filter: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=NN_FLOAT_TYPES), "strides": Attr("list(int)"), "padding": Attr("string"),
             "data_format": Attr("string", "NHWC"), "dilations": Attr("list(int)", [1, 1, 1, 1])}

    def infer(op):
        _check_choice(op, "padding", _PADDINGS + ("EXPLICIT",))
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, _depthwise_shape)

    lower = _lower_depthwise_conv2d
    gradient = _depthwise_conv2d_native_grad


# -- pooling --------------------------------------------------------------------------------
def _pool_shape(c, op_name: str, pool_depth: bool) -> list:
    """TF's MaxPoolShape (pool_depth) / AvgPoolShape."""
    data_format = c.attr("data_format")
    inp = ic.with_rank(c.input(0), 4)
    strides, ksize = c.attr("strides"), c.attr("ksize")
    if len(strides) != 4:
        raise ShapeError(f"{op_name} requires the stride attribute to contain 4 values, but got: {len(strides)}")
    if len(ksize) != 4:
        raise ShapeError(f"{op_name} requires the ksize attribute to contain 4 values, but got: {len(ksize)}")
    n, h, w, ch = _spatial_indices(data_format)
    padding = c.attr("padding")
    pads = _imported_explicit_paddings(c.op) if padding == "EXPLICIT" else [0] * 8
    if padding == "EXPLICIT":
        _check_explicit_paddings(padding, pads, data_format)

    def size(axis):
        return windowed_output_size(inp[axis], ksize[axis], strides[axis], padding, 1, pads[2 * axis],
                                    pads[2 * axis + 1])

    rows, cols = size(h), size(w)
    depth = size(ch) if pool_depth else inp[ch]
    return [_make_shape(data_format, inp[n], rows, cols, depth)]


def _pool_attrs(default_type=None, allowed=NN_FLOAT_TYPES) -> dict:
    type_attr = Attr("type", allowed=allowed) if default_type is None else Attr("type", default_type, allowed)
    return {"T": type_attr, "ksize": Attr("list(int)"), "strides": Attr("list(int)"), "padding": Attr("string"),
            "data_format": Attr("string", "NHWC")}


@register
class MaxPool(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _pool_attrs(_d.float32, _MAX_POOL_TYPES)

    def infer(op):
        _check_choice(op, "padding", _PADDINGS + ("EXPLICIT",))
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, lambda c: _pool_shape(c, "MaxPool", pool_depth=True))

    lower = _lower_max_pool
    gradient = _max_pool_grad


@register
class AvgPool(OpType):
    inputs = ["value: T"]
    outputs = ["output: T"]
    attrs = _pool_attrs()

    def infer(op):
        _check_choice(op, "padding", _PADDINGS)
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, lambda c: _pool_shape(c, "AvgPool", pool_depth=False))

    lower = _lower_avg_pool
    gradient = _avg_pool_grad


# -- 3-D convolution and pooling (NDHWC / NCDHW) -------------------------------------------
_DATA_FORMATS_3D = ("NDHWC", "NCDHW")
_POOL3D_TYPES = (_d.float16, _d.bfloat16, _d.float32)


def _conv3d_shape(c) -> list:
    """TF's Conv3DShape."""
    data_format = c.attr("data_format")
    inp = ic.with_rank(c.input(0), 5)
    flt = ic.with_rank(c.input(1), 5)
    dilations, strides = c.attr("dilations"), c.attr("strides")
    if len(dilations) != 5:
        raise ShapeError(f"Conv3D requires the dilation attribute to contain 5 values, but got: {len(dilations)}")
    if len(strides) != 5:
        raise ShapeError(f"Conv3D requires the stride attribute to contain 5 values, but got: {len(strides)}")
    batch, spatial, channel = _layout(data_format)
    ic.merge_dim(inp[channel], flt[3])
    padding = c.attr("padding")
    sizes = [windowed_output_size(inp[d], flt[i], strides[d], padding, dilations[d]) for i, d in enumerate(spatial)]
    return [_in_layout(data_format, [inp[batch]] + sizes + [flt[4]])]


def _pool3d_shape(c) -> list:
    """TF's Pool3DShape: the channel dim is not pooled."""
    data_format = c.attr("data_format")
    inp = ic.with_rank(c.input(0), 5)
    strides, ksize = c.attr("strides"), c.attr("ksize")
    if len(strides) != 5:
        raise ShapeError(f"Pool3D ops require the stride attribute to contain 5 values, but got: {len(strides)}")
    if len(ksize) != 5:
        raise ShapeError(f"Pool3D requires the ksize attribute to contain 5 values, but got: {len(ksize)}")
    batch, spatial, channel = _layout(data_format)
    if ksize[batch] != 1 or ksize[channel] != 1 or strides[batch] != 1 or strides[channel] != 1:
        raise ShapeError("Pooling is not yet supported on the batch or depth dimension.")
    padding = c.attr("padding")
    sizes = [windowed_output_size(inp[d], ksize[d], strides[d], padding) for d in spatial]
    return [_in_layout(data_format, [inp[batch]] + sizes + [inp[channel]])]


def _conv3d_attrs() -> dict:
    return {"T": Attr("type", allowed=NN_FLOAT_TYPES), "strides": Attr("list(int)"), "padding": Attr("string"),
            "data_format": Attr("string", "NDHWC"), "dilations": Attr("list(int)", [1, 1, 1, 1, 1])}


def _checked_3d(infer):
    """``infer`` after TF's attr checks of the 3-D ops (padding, data_format)."""
    def checked(op):
        _check_choice(op, "padding", _PADDINGS)
        _check_choice(op, "data_format", _DATA_FORMATS_3D)
        return infer(op)

    return checked


def _conv3d_attrs_of(op) -> dict:
    return {name: op.get_attr(name) for name in ("dilations", "strides", "padding", "data_format")}


_conv3d_grad, _conv3d_backprop_input_grad, _conv3d_backprop_filter_grad = _conv_gradients(
    "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", _conv3d_attrs_of)


@register
class Conv3D(OpType):
    inputs = ["input: T", "filter: T"]
    outputs = ["output: T"]
    attrs = _conv3d_attrs()
    infer = _checked_3d(lambda op: run_shape_fn(op, _conv3d_shape))
    lower = _lower_conv
    gradient = _conv3d_grad


@register
class Conv3DBackpropInputV2(OpType):
    inputs = ["input_sizes: Tshape", "filter: T", "out_backprop: T"]
    outputs = ["output: T"]
    attrs = {**_conv3d_attrs(), "Tshape": Attr("type", _d.int32, allowed=(_d.int32, _d.int64))}
    infer = _checked_3d(lambda op: _shape_from_input(0, 5)(op))
    lower = _lower_conv_backprop_input
    gradient = _conv3d_backprop_input_grad


@register
class Conv3DBackpropFilterV2(OpType):
    inputs = ["input: T", "filter_sizes: int32", "out_backprop: T"]
    outputs = ["output: T"]
    attrs = _conv3d_attrs()
    infer = _checked_3d(lambda op: _shape_from_input(1, 5)(op))
    lower = _lower_conv_backprop_filter
    gradient = _conv3d_backprop_filter_grad


def _pool3d_attrs(allowed) -> dict:
    return {"ksize": Attr("list(int)"), "strides": Attr("list(int)"), "padding": Attr("string"),
            "data_format": Attr("string", "NDHWC"), "T": Attr("type", allowed=allowed)}


@register
class MaxPool3D(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _pool3d_attrs(_POOL3D_TYPES)
    infer = _checked_3d(lambda op: run_shape_fn(op, _pool3d_shape))
    lower = _lower_max_pool

    def gradient(op, grad):
        """TF's _MaxPool3DGrad."""
        return _gen_out("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs_of(op))


@register
class AvgPool3D(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _pool3d_attrs(NN_FLOAT_TYPES)
    infer = _checked_3d(lambda op: run_shape_fn(op, _pool3d_shape))
    lower = _lower_avg_pool

    def gradient(op, grad):
        """TF's _AvgPool3DGrad."""
        return _gen_out("AvgPool3DGrad", [array_ops.shape(op.inputs[0]), grad], _pool_attrs_of(op))


@register
class MaxPool3DGrad(OpType):
    """The gradient of MaxPool3D (its own gradient, MaxPool3DGradGrad, is not implemented)."""
    inputs = ["orig_input: TInput", "orig_output: TInput", "grad: T"]
    outputs = ["output: T"]
    attrs = {**_pool3d_attrs(_POOL3D_TYPES), "T": Attr("type", _d.float32, allowed=_POOL3D_TYPES),
             "TInput": Attr("type", _d.float32, allowed=_POOL3D_TYPES)}
    infer = _checked_3d(lambda op: run_shape_fn(op, lambda c: [ic.with_rank(c.input(0), 5)]))

    def lower(ctx, op, orig_input, orig_output, grad):
        """select_and_scatter in the input's type (TInput), the result in T."""
        elem = _elem_of(grad)
        if _elem_of(orig_input) != elem:
            grad = ctx.convert(grad, _elem_of(orig_input))
            return ctx.convert(_lower_max_pool_grad(ctx, op, orig_input, orig_output, grad), elem)
        return _lower_max_pool_grad(ctx, op, orig_input, orig_output, grad)


@register
class AvgPool3DGrad(OpType):
    inputs = ["orig_input_shape: int32", "grad: T"]
    outputs = ["output: T"]
    attrs = _pool3d_attrs(NN_FLOAT_TYPES)
    infer = _checked_3d(lambda op: _shape_from_input(0, 5)(op))
    lower = _lower_avg_pool_grad

    def gradient(op, grad):
        """TF's _AvgPool3DGradGrad."""
        return (array_ops.stop_gradient(op.inputs[0]), _gen_out("AvgPool3D", [grad], _pool_attrs_of(op)))


# -- BiasAdd and the cross entropies ------------------------------------------------------
def _bias_add_shape(c) -> list:
    """TF's BiasAddShape: the bias length merges into the channel dim."""
    nchw = c.attr("data_format") == "NCHW"
    inp = ic.with_rank_at_least(c.input(0), 3 if nchw else 2)
    bias = ic.with_rank(c.input(1), 1)
    if inp is None:
        return [None]
    channel = 1 if nchw else len(inp) - 1
    out = list(inp)
    out[channel] = ic.merge_dim(inp[channel], bias[0])
    return [out]


@register
class BiasAdd(OpType):
    inputs = ["value: T", "bias: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "data_format": Attr("string", "NHWC")}

    def infer(op):
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, _bias_add_shape)

    lower = _lower_bias_add
    gradient = _bias_add_grad


def _softmax_xent_shape(c) -> list:
    """SoftmaxCrossEntropyWithLogits: [batch] loss and [batch, classes] backprop."""
    try:
        merged = ic.merge(ic.with_rank(c.input(0), 2), c.input(1))
        return [[merged[0]], merged]
    except ShapeError:
        pass
    backprop = ic.broadcast(c.input(0), c.input(1))
    if backprop is None:
        raise ShapeError("Shape must be broadcasted with rank 2, but is rank is unknown.")
    if len(backprop) != 2:
        raise ShapeError(f"Shape must be broadcasted with rank 2, but is rank {len(backprop)}")
    return [[backprop[0]], backprop]


def _sparse_softmax_xent_shape(c) -> list:
    features = ic.with_rank(c.input(0), 2)
    labels = ic.with_rank(c.input(1), 1)
    batch = ic.merge_dim(features[0], labels[0])
    return [[batch], [batch, features[1]]]


@register
class SoftmaxCrossEntropyWithLogits(OpType):
    inputs = ["features: T", "labels: T"]
    outputs = ["loss: T", "backprop: T"]
    attrs = {"T": Attr("type", allowed=NN_FLOAT_TYPES)}

    def infer(op):
        return run_shape_fn(op, _softmax_xent_shape)

    lower = _lower_softmax_xent
    gradient = _softmax_xent_grad


@register
class SparseSoftmaxCrossEntropyWithLogits(OpType):
    inputs = ["features: T", "labels: Tlabels"]
    outputs = ["loss: T", "backprop: T"]
    attrs = {"T": Attr("type", allowed=NN_FLOAT_TYPES), "Tlabels": Attr("type", _d.int64, allowed=(_d.int32, _d.int64))}

    def infer(op):
        return run_shape_fn(op, _sparse_softmax_xent_shape)

    lower = _lower_sparse_softmax_xent
    gradient = _sparse_softmax_xent_grad


# -- the gradient ops of convolution, pooling and BiasAdd ---------------------------------
def _bias_add_grad_shape(c) -> list:
    """TF's BiasAddGradShape: the channel dim as a vector."""
    if c.attr("data_format") == "NCHW":
        inp = ic.with_rank_at_least(c.input(0), 3)
        return [[None if inp is None else inp[1]]]
    inp = ic.with_rank_at_least(c.input(0), 2)
    return [[None if inp is None else inp[-1]]]


@register
class BiasAddGrad(OpType):
    inputs = ["out_backprop: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "data_format": Attr("string", "NHWC")}

    def infer(op):
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, _bias_add_grad_shape)

    lower = _lower_bias_add_grad
    gradient = _bias_add_grad_grad


def _shape_from_input(index: int, rank: int = 4):
    """The output shape is the (rank-4 or 5) value of a shape input (input_sizes, filter_sizes...)."""
    def infer(op):
        return run_shape_fn(op, lambda c: [ic.with_rank(c.shape_from_shape_tensor(index), rank)])

    return infer


def _conv_backprop_attrs() -> dict:
    return {"T": Attr("type", allowed=NN_FLOAT_TYPES), "strides": Attr("list(int)"),
            "use_cudnn_on_gpu": Attr("bool", True), "padding": Attr("string"),
            "explicit_paddings": Attr("list(int)", []), "data_format": Attr("string", "NHWC"),
            "dilations": Attr("list(int)", [1, 1, 1, 1])}


def _depthwise_backprop_attrs() -> dict:
    return {"T": Attr("type", allowed=NN_FLOAT_TYPES), "strides": Attr("list(int)"), "padding": Attr("string"),
            "data_format": Attr("string", "NHWC"), "dilations": Attr("list(int)", [1, 1, 1, 1])}


def _register_backprop(type_name, inputs, attrs, shape_index, lower, gradient, paddings):
    def infer(op):
        _check_choice(op, "padding", paddings)
        _check_choice(op, "data_format", _DATA_FORMATS)
        return _shape_from_input(shape_index)(op)

    return _register_nn(type_name, inputs, ["output: T"], attrs, infer, lower=lower, gradient=gradient)


_register_backprop("Conv2DBackpropInput", ["input_sizes: int32", "filter: T", "out_backprop: T"],
                   _conv_backprop_attrs(), 0, _lower_conv_backprop_input, _conv2d_backprop_input_grad,
                   _PADDINGS + ("EXPLICIT",))
_register_backprop("Conv2DBackpropFilter", ["input: T", "filter_sizes: int32", "out_backprop: T"],
                   _conv_backprop_attrs(), 1, _lower_conv_backprop_filter, _conv2d_backprop_filter_grad,
                   _PADDINGS + ("EXPLICIT",))
_register_backprop("DepthwiseConv2dNativeBackpropInput", ["input_sizes: int32", "filter: T", "out_backprop: T"],
                   _depthwise_backprop_attrs(), 0, _lower_depthwise_backprop_input, _depthwise_backprop_input_grad,
                   _PADDINGS)
_register_backprop("DepthwiseConv2dNativeBackpropFilter", ["input: T", "filter_sizes: int32", "out_backprop: T"],
                   _depthwise_backprop_attrs(), 1, _lower_depthwise_backprop_filter,
                   _depthwise_backprop_filter_grad, _PADDINGS)


@register
class MaxPoolGrad(OpType):
    """The gradient of MaxPool (its own gradient, MaxPoolGradGrad, is not implemented)."""
    inputs = ["orig_input: T", "orig_output: T", "grad: T"]
    outputs = ["output: T"]
    attrs = {"ksize": Attr("list(int)"), "strides": Attr("list(int)"), "padding": Attr("string"),
             "data_format": Attr("string", "NHWC"), "T": Attr("type", _d.float32, allowed=REAL_NUMBER_TYPES)}

    def infer(op):
        _check_choice(op, "padding", _PADDINGS)
        _check_choice(op, "data_format", _DATA_FORMATS)
        return run_shape_fn(op, lambda c: [ic.with_rank(c.input(0), 4)])

    lower = _lower_max_pool_grad


@register
class AvgPoolGrad(OpType):
    inputs = ["orig_input_shape: int32", "grad: T"]
    outputs = ["output: T"]
    attrs = {"ksize": Attr("list(int)"), "strides": Attr("list(int)"), "padding": Attr("string"),
             "data_format": Attr("string", "NHWC"), "T": Attr("type", allowed=NN_FLOAT_TYPES)}

    def infer(op):
        _check_choice(op, "padding", _PADDINGS)
        _check_choice(op, "data_format", _DATA_FORMATS)
        return _shape_from_input(0)(op)

    lower = _lower_avg_pool_grad
    gradient = _avg_pool_grad_grad


# -- functions: activations ----------------------------------------------------------------
def _out(op_type: str, inputs, attrs=None, name=None) -> Tensor:
    return apply_op(op_type, inputs, attrs, name=name).outputs[0]


def relu(features, name=None):
    return _out("Relu", [features], name=name)


def elu(features, name=None):
    return _out("Elu", [features], name=name)


def selu(features, name=None):
    return _out("Selu", [features], name=name)


def softplus(features, name=None):
    return _out("Softplus", [features], name=name)


def softsign(features, name=None):
    return _out("Softsign", [features], name=name)


def relu6(features, name=None):
    with name_scope(name, "Relu6", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return _out("Relu6", [features], name=scope)


def leaky_relu(features, alpha=0.2, name=None):
    """tf.nn.leaky_relu: integer features are cast to float32 first."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return _out("LeakyRelu", [features], {"alpha": alpha}, name=scope)


def l2_loss(t, name=None):
    return _out("L2Loss", [t], name=name)


def prevent_gradient(input, message="", name=None):  # noqa: A002 - TF's argument name
    """array_ops.prevent_gradient: an identity whose gradient raises LookupError."""
    return _out("PreventGradient", [input], {"message": message}, name=name)


def _swap_axis(logits, dim_index, last_index, name=None):
    """Transpose that swaps dim_index with the last axis (TF's _softmax helper)."""
    perm = array_ops.concat([array_ops.range(dim_index), [last_index],
                             array_ops.range(dim_index + 1, last_index), [dim_index]], 0)
    return array_ops.transpose(logits, perm, name=name)


def _softmax(logits, op_type: str, dim=-1, name=None):
    """Softmax/LogSoftmax on the last axis, or transposed around it for another axis."""
    logits = convert_to_tensor(logits)
    shape = logits.get_shape()
    if dim == -1 or dim == shape.ndims - 1:
        return _out(op_type, [logits], name=name)
    dim_val = constant_value(dim) if isinstance(dim, Tensor) else dim
    if dim_val is not None and not -shape.ndims <= dim_val < shape.ndims:
        raise InvalidArgumentError(None, None, f"Dimension ({dim_val}) must be in the range [{-shape.ndims}, "
                                               f"{shape.ndims}) where {shape.ndims} is the number of dimensions in "
                                               f"the input.")
    ndims = array_ops.rank(logits)
    if not isinstance(dim, Tensor):
        if dim < 0:
            dim += ndims
    else:
        dim = array_ops.where(math_ops.less(dim, 0), dim + ndims, dim)
    input_rank = array_ops.rank(logits)
    dim_axis = dim % shape.ndims
    logits = _swap_axis(logits, dim_axis, math_ops.subtract(input_rank, 1))
    output = _out(op_type, [logits])
    output = _swap_axis(output, dim_axis, math_ops.subtract(input_rank, 1), name=name)
    output.set_shape(shape)
    return output


def softmax(logits, axis=None, name=None, dim=None):
    axis = math_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
    return _softmax(logits, "Softmax", -1 if axis is None else axis, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    axis = math_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
    return _softmax(logits, "LogSoftmax", -1 if axis is None else axis, name)


# -- functions: bias, convolution, pooling ----------------------------------------------------
def bias_add(value, bias, data_format=None, name=None):
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError("data_format must be of the form `N...C` or `NC...`")
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype, name="bias")
        attrs = {} if data_format is None else {"data_format": data_format}
        return _out("BiasAdd", [value, bias], attrs, name=scope)


def xw_plus_b(x, weights, biases, name=None):
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        mm = math_ops.matmul(x, weights)
        return bias_add(mm, biases, name=scope)


def _get_sequence(value, n: int, channel_index: int, name: str) -> list:
    """TF's _get_sequence: an int or list of 1, n or n+2 ints as the full n+2 list."""
    if value is None:
        value = [1]
    elif not isinstance(value, Sized):
        value = [value]
    current_n = len(value)
    if current_n == n + 2:
        return value
    if current_n == 1:
        value = list((value[0],) * n)
    elif current_n == n:
        value = list(value)
    else:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2} but was {current_n}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def _convert_padding(padding):
    """TF's _convert_padding: a list of [before, after] pairs means EXPLICIT padding."""
    explicit_paddings = []
    if padding == "EXPLICIT":
        raise ValueError('"EXPLICIT" is not a valid value for the padding parameter. To use explicit padding, the '
                         "padding parameter must be a list.")
    if isinstance(padding, (list, tuple)):
        for i, dim_paddings in enumerate(padding):
            if not isinstance(dim_paddings, (list, tuple)):
                raise ValueError("When padding is a list, each element of padding must be a list/tuple of size 2. "
                                 f"Element with index {i} of padding is not a list/tuple")
            if len(dim_paddings) != 2:
                raise ValueError("When padding is a list, each element of padding must be a list/tuple of size 2. "
                                 f"Element with index {i} of padding has size {len(dim_paddings)}")
            explicit_paddings.extend(dim_paddings)
        if len(padding) != 4:
            raise ValueError(f"When padding is a list, it must be of size 4. Got padding of size: {len(padding)}")
        padding = "EXPLICIT"
    return padding, explicit_paddings


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = _convert_padding(padding)
    if data_format is None:
        data_format = "NHWC"
    channel_index = 1 if data_format.startswith("NC") else 3
    strides = _get_sequence(strides, 2, channel_index, "strides")
    dilations = _get_sequence(dilations, 2, channel_index, "dilations")
    attrs = {"strides": strides, "padding": padding, "use_cudnn_on_gpu": use_cudnn_on_gpu,
             "explicit_paddings": explicit_paddings, "data_format": data_format, "dilations": dilations}
    return _out("Conv2D", [input, filter], attrs, name=name)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    attrs = {"strides": strides, "padding": padding, "data_format": data_format or "NHWC",
             "dilations": dilations}
    return _out("DepthwiseConv2dNative", [input, filter], attrs, name=name)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None, padding=None,  # noqa: A002
                          use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1), name=None,
                          filters=None):
    """tf.nn.conv2d_backprop_input: the gradient of conv2d in its input (Conv2DBackpropInput)."""
    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = _convert_padding(padding)
    attrs = {"strides": strides, "padding": padding, "use_cudnn_on_gpu": use_cudnn_on_gpu,
             "explicit_paddings": explicit_paddings, "data_format": data_format, "dilations": dilations}
    return _out("Conv2DBackpropInput", [input_sizes, filter, out_backprop], attrs, name=name)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """tf.nn.conv2d_backprop_filter: the gradient of conv2d in its filter (Conv2DBackpropFilter)."""
    padding, explicit_paddings = _convert_padding(padding)
    attrs = {"strides": strides, "padding": padding, "use_cudnn_on_gpu": use_cudnn_on_gpu,
             "explicit_paddings": explicit_paddings, "data_format": data_format, "dilations": dilations}
    return _out("Conv2DBackpropFilter", [input, filter_sizes, out_backprop], attrs, name=name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):
    """tf.nn.conv2d_transpose (TF1): a Conv2DBackpropInput named 'conv2d_transpose'."""
    value = math_ops.deprecated_argument_lookup("input", input, "value", value)
    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        if data_format is None:
            data_format = "NHWC"
        channel_index = 1 if data_format.startswith("NC") else 3
        strides = _get_sequence(strides, 2, channel_index, "strides")
        dilations = _get_sequence(dilations, 2, channel_index, "dilations")
        attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations}
        return _out("Conv2DBackpropInput", [output_shape, filter, value], attrs, name=scope)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """tf.nn.conv3d (TF1): a Conv3D op; strides and dilations have 5 values."""
    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    attrs = {"strides": strides, "padding": padding, "data_format": data_format or "NDHWC",
             "dilations": list(dilations)}
    return _out("Conv3D", [input, filter], attrs, name=name)


def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                              data_format="NDHWC", dilations=(1, 1, 1, 1, 1), name=None):
    """tf.nn.conv3d_backprop_filter_v2: the gradient of conv3d in its filter."""
    attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": list(dilations)}
    return _out("Conv3DBackpropFilterV2", [input, filter_sizes, out_backprop], attrs, name=name)


def conv3d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NDHWC", name=None, input=None, filters=None, dilations=None):
    """tf.nn.conv3d_transpose (TF1): a Conv3DBackpropInputV2 named 'conv3d_transpose'."""
    value = math_ops.deprecated_argument_lookup("input", input, "value", value)
    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    with name_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        if data_format is None:
            data_format = "NDHWC"
        channel_index = 1 if data_format.startswith("NC") else 4
        strides = _get_sequence(strides, 3, channel_index, "strides")
        dilations = _get_sequence(dilations, 3, channel_index, "dilations")
        attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations}
        return _out("Conv3DBackpropInputV2", [output_shape, filter, value], attrs, name=scope)


_CHANNELS_LAST_FORMATS = ("NWC", "NHC", "NHWC", "NWHC", "NDHWC", "NDWHC", "NHDWC", "NHWDC", "NWDHC", "NWHDC")


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None, name=None,  # noqa: A002
                data_format=None, filters=None, dilations=None):
    """tf.nn.convolution (TF's convolution_internal): conv1d, Conv2D or Conv3D named after
    the 'convolution' scope; a dilation rate above 1 wraps the undilated conv in
    SpaceToBatchND / BatchToSpaceND, as TF's _WithSpaceToBatch does."""
    from .nn_extra_ops import conv1d, with_space_to_batch_nd

    filter = math_ops.deprecated_argument_lookup("filters", filters, "filter", filter)
    dilation_rate = math_ops.deprecated_argument_lookup("dilations", dilations, "dilation_rate", dilation_rate)
    filter = convert_to_tensor(filter, name="filters") if not isinstance(filter, Tensor) else filter
    input = convert_to_tensor(input, name="input") if not isinstance(input, Tensor) else input  # noqa: A001
    if filter.shape.ndims:
        spatial = filter.shape.ndims - 2
    elif input.shape.ndims:
        spatial = input.shape.ndims - 2
    else:
        raise ValueError("When `num_spatial_dims` is not set, one of `input.shape.rank` or `filters.shape.rank` "
                         f"must be known. Received: input.shape={input.shape} and filters.shape={filter.shape}")
    if spatial not in (1, 2, 3):
        raise ValueError(f"`num_spatial_dims` must be 1, 2, or 3. Received: num_spatial_dims={spatial}.")
    channels_last = data_format is None or data_format in _CHANNELS_LAST_FORMATS
    channel_index = spatial + 1 if channels_last else 1
    dilations = _get_sequence(dilation_rate, spatial, channel_index, "dilations")
    strides = _get_sequence(strides, spatial, channel_index, "strides")
    spatial_slice = slice(1, -1) if channels_last else slice(2, None)

    def build(x, pad, rates, scope):
        if spatial == 1:
            return conv1d(x, filter, strides, pad, data_format=data_format, dilations=rates, name=scope)
        attrs = {"strides": strides, "padding": pad, "dilations": rates}
        if data_format is not None:
            attrs["data_format"] = data_format
        return _out("Conv2D" if spatial == 2 else "Conv3D", [x, filter], attrs, name=scope)

    with name_scope(name, "convolution", [input, filter]) as scope:
        if all(d == 1 for d in dilations):
            return build(input, padding, dilations, scope)
        if any(s != 1 for s in strides[spatial_slice]):
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={strides[spatial_slice]} and dilation_rate={dilations[spatial_slice]}")
        ones = [1] * (spatial + 2)
        return with_space_to_batch_nd(input, dilations[spatial_slice], padding, filter.shape,
                                      lambda x, pad: build(x, pad, ones, scope), data_format=data_format)


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides, padding,  # noqa: A002
                                           data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations}
    return _out("DepthwiseConv2dNativeBackpropInput", [input_sizes, filter, out_backprop], attrs, name=name)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                                            data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations}
    return _out("DepthwiseConv2dNativeBackpropFilter", [input, filter_sizes, out_backprop], attrs, name=name)


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None, data_format=None,  # noqa: A002
                     dilations=None):
    """tf.nn.depthwise_conv2d (TF's with_space_to_batch structure, dilation rate 1 only)."""
    rate = math_ops.deprecated_argument_lookup("dilations", dilations, "rate", rate)
    with name_scope(name, "depthwise", [input, filter]) as scope:
        input = convert_to_tensor(input, name="tensor_in")  # noqa: A001
        filter = convert_to_tensor(filter, name="filter_in")  # noqa: A001
        array_ops.shape(filter)  # with_space_to_batch's filter_shape argument
        rate = convert_to_tensor([1, 1] if rate is None else rate, dtypes.int32, name="dilation_rate")
        if rate.shape.ndims != 1:
            raise ValueError("rate must be rank 1")
        spatial_rank = rate.shape.as_list()[0]
        first_spatial = 2 if data_format is not None and data_format.startswith("NC") else 1
        expected_rank = spatial_rank + first_spatial - (1 if first_spatial == 2 else 0)
        try:
            input.shape.with_rank_at_least(expected_rank)
        except ValueError:
            raise ValueError(f"input tensor must have rank {expected_rank} at least") from None
        rate_value = constant_value(rate)
        if rate_value is not None and np.any(rate_value < 1):
            raise ValueError("dilation_rate must be positive")
        if rate_value is None or not np.all(rate_value == 1):
            raise NotImplementedError("depthwise_conv2d with a dilation rate other than 1 (SpaceToBatchND) is not "
                                      "supported")
        return depthwise_conv2d_native(input, filter, strides, padding, data_format, name=scope)


def _pool(op_type, default_name, value, ksize, strides, padding, data_format, name, spatial=2):
    with name_scope(name, default_name, [value]) as scope:
        if data_format is None:
            data_format = "NHWC" if spatial == 2 else "NDHWC"
        channel_index = 1 if data_format.startswith("NC") else spatial + 1
        ksize = _get_sequence(ksize, spatial, channel_index, "ksize")
        strides = _get_sequence(strides, spatial, channel_index, "strides")
        attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": data_format}
        return _out(op_type, [value], attrs, name=scope)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    value = math_ops.deprecated_argument_lookup("input", input, "value", value)
    return _pool("MaxPool", "MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    value = math_ops.deprecated_argument_lookup("input", input, "value", value)
    return _pool("AvgPool", "AvgPool", value, ksize, strides, padding, data_format, name)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.max_pool3d: a MaxPool3D op (ksize/strides: an int, 3 or 5 values)."""
    return _pool("MaxPool3D", "MaxPool3D", input, ksize, strides, padding, data_format, name, spatial=3)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.avg_pool3d: an AvgPool3D op (ksize/strides: an int, 3 or 5 values)."""
    return _pool("AvgPool3D", "AvgPool3D", input, ksize, strides, padding, data_format, name, spatial=3)


# -- functions: dropout ---------------------------------------------------------------------
def _get_noise_shape(x, noise_shape):
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        noise_shape_ = as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.dims is not None and noise_shape_.dims is not None and len(x.shape.dims) == len(noise_shape_.dims):
        new_dims = []
        for i, dim in enumerate(x.shape.dims):
            if noise_shape_.dims[i].value is None and dim.value is not None:
                new_dims.append(dim.value)
            else:
                new_dims.append(noise_shape_.dims[i].value)
        return TensorShape(new_dims)
    return noise_shape


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.nn.dropout (TF1): ``keep_prob`` is the deprecated alias of ``1 - rate``."""
    try:
        keep = 1. - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})") from None
    rate = math_ops.deprecated_argument_lookup("rate", rate, "keep_prob", keep)
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    return dropout_v2(x, rate, noise_shape=noise_shape, seed=seed, name=name)


def dropout_v2(x, rate, noise_shape=None, seed=None, name=None):
    """TF 1.15's dropout: keep where uniform >= rate, scaled by 1 / (1 - rate)."""
    from .random_ops import random_uniform

    with name_scope(name, "dropout", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be scaled. Got a {x.dtype} "
                             f"tensor instead.")
        if isinstance(rate, numbers.Real):
            if not (0 <= rate < 1):
                raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}")
            if rate == 0:
                return x
        rate = convert_to_tensor(rate, dtype=x.dtype, name="rate")
        rate.get_shape().assert_is_compatible_with(TensorShape([]))
        if constant_value(rate) == 0:
            return x
        noise_shape = _get_noise_shape(x, noise_shape)
        random_tensor = random_uniform(noise_shape, seed=seed, dtype=x.dtype)
        keep_prob = 1 - rate
        scale = 1 / keep_prob
        keep_mask = random_tensor >= rate
        ret = x * scale * math_ops.cast(keep_mask, x.dtype)
        ret.set_shape(x.get_shape())
        return ret


# -- functions: losses ----------------------------------------------------------------------
def _ensure_xent_args(name, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flatten_outer_dims(logits):
    """Reshape to [-1, last_dim] (Rank, Shape, Sub, Slice, concat, Reshape as TF)."""
    rank = array_ops.rank(logits)
    last_dim_size = array_ops.slice(array_ops.shape(logits), [math_ops.subtract(rank, 1)], [1])
    output = array_ops.reshape(logits, array_ops.concat([[-1], last_dim_size], 0))
    shape = logits.get_shape()
    if shape.dims is not None:
        dims = shape.as_list()
        if all(d is not None for d in dims[:-1]):
            output.set_shape([int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]])
    return output


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """tf.nn.softmax_cross_entropy_with_logits_v2: flatten to 2-D, the op, reshape back."""
    axis = math_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None:
        axis = -1
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        convert_to_float32 = logits.dtype in (dtypes.float16, dtypes.bfloat16)
        precise_logits = math_ops.cast(logits, dtypes.float32) if convert_to_float32 else logits
        labels = math_ops.cast(labels, precise_logits.dtype)
        input_rank = array_ops.rank(precise_logits)
        shape = logits.get_shape()
        if axis != -1:
            def move_dim_to_end(tensor, dim_index, rank):
                perm = array_ops.concat([array_ops.range(dim_index), array_ops.range(dim_index + 1, rank),
                                         [dim_index]], 0)
                return array_ops.transpose(tensor, perm)

            precise_logits = move_dim_to_end(precise_logits, axis, input_rank)
            labels = move_dim_to_end(labels, axis, input_rank)
        input_shape = array_ops.shape(precise_logits)
        precise_logits = _flatten_outer_dims(precise_logits)
        labels = _flatten_outer_dims(labels)
        cost = apply_op("SoftmaxCrossEntropyWithLogits", [precise_logits, labels], name=scope).outputs[0]
        output_shape = array_ops.slice(input_shape, [0], [math_ops.subtract(input_rank, 1)])
        cost = array_ops.reshape(cost, output_shape)
        if shape.dims is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return math_ops.cast(cost, logits.dtype) if convert_to_float32 else cost


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    """tf.nn.softmax_cross_entropy_with_logits (deprecated in TF1 but working): labels get StopGradient."""
    dim = math_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """The op directly for rank-2 logits, else reshaped to 2-D and back (TF's structure).

    TF also adds an ``assert_equal`` on the dynamic shapes when the static ones are not
    fully defined; tfc leaves that runtime check out.
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        precise_logits = math_ops.cast(logits, dtypes.float32) if logits.dtype == dtypes.float16 else logits
        labels_static_shape = labels.get_shape()
        labels_shape = array_ops.shape(labels)
        logits_shape = logits.get_shape()
        fully_defined = labels_static_shape.is_fully_defined() and logits_shape[:-1].is_fully_defined()
        if logits_shape.ndims == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
        if (logits_shape.ndims is not None and labels_static_shape.ndims is not None
                and labels_static_shape.ndims != logits_shape.ndims - 1):
            raise ValueError(f"Rank mismatch: Rank of labels (received {labels_static_shape.ndims}) should equal "
                             f"rank of logits minus 1 (received {logits_shape.ndims}).")
        if fully_defined and labels_static_shape != logits_shape[:-1]:
            raise ValueError(f"Shape mismatch: The shape of labels (received {labels_static_shape}) should equal "
                             f"the shape of logits except for the last dimension (received {logits_shape}).")
        if logits_shape.ndims == 2:
            cost = apply_op("SparseSoftmaxCrossEntropyWithLogits", [precise_logits, labels], name=name).outputs[0]
            return math_ops.cast(cost, dtypes.float16) if logits.dtype == dtypes.float16 else cost
        num_classes = array_ops.shape(logits)[array_ops.rank(logits) - 1]
        precise_logits = array_ops.reshape(precise_logits, [-1, num_classes])
        labels = array_ops.reshape(labels, [-1])
        cost = apply_op("SparseSoftmaxCrossEntropyWithLogits", [precise_logits, labels], name=name).outputs[0]
        cost = array_ops.reshape(cost, labels_shape)
        cost.set_shape(labels_static_shape)
        return math_ops.cast(cost, dtypes.float16) if logits.dtype == dtypes.float16 else cost


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-abs(x))), under the name scope 'logistic_loss'."""
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        try:
            labels.get_shape().merge_with(logits.get_shape())
        except ValueError:
            raise ValueError(f"logits and labels must have the same shape ({logits.get_shape()} vs "
                             f"{labels.get_shape()})") from None
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = logits >= zeros
        relu_logits = array_ops.where(cond, logits, zeros)
        neg_abs_logits = array_ops.where(cond, -logits, logits)
        return math_ops.add(relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)),
                            name=scope)


# -- functions: normalization ---------------------------------------------------------------
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and (biased) variance over ``axes``, as TF: mean, StopGradient, SquaredDifference, variance."""
    del shift  # unused, as in TF
    keep_dims = math_ops.deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    if keep_dims is None:
        keep_dims = False
    with name_scope(name, "moments", [x, axes]):
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(math_ops.squared_difference(y, array_ops.stop_gradient(mean)), axes,
                                        keepdims=True, name="variance")
        if not keep_dims:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * rsqrt(variance + eps) * scale + offset, in TF's exact op order."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(
            offset - mean * inv if offset is not None else -mean * inv, x.dtype)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    axis = math_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def relu_layer(x, weights, biases, name=None):
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return relu(bias_add(math_ops.matmul(x, weights), biases), name=scope)


NN_EXPORTS = [
    "avg_pool", "avg_pool3d", "batch_normalization", "bias_add", "conv2d", "conv2d_backprop_filter",
    "conv2d_backprop_input", "conv2d_transpose", "conv3d", "conv3d_backprop_filter_v2", "conv3d_transpose",
    "convolution", "max_pool3d", "depthwise_conv2d", "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "dropout", "elu", "l2_loss", "l2_normalize", "leaky_relu", "log_softmax", "max_pool", "moments", "relu",
    "relu6", "relu_layer", "selu", "sigmoid", "sigmoid_cross_entropy_with_logits", "softmax",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2", "softplus", "softsign",
    "sparse_softmax_cross_entropy_with_logits", "tanh", "xw_plus_b",
]
TF_EXPORTS: list = []  # nn functions live under tf.nn only
MATH_EXPORTS = ["l2_normalize", "log_softmax", "softmax", "softplus", "softsign"]
