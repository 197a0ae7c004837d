"""More tf.nn convolutions and normalizations, as TensorFlow 1.15 builds them:

- ``tf.nn.conv1d``: ExpandDims + Conv2D + Squeeze (nn_ops.py's conv1d).
- ``tf.nn.conv1d_transpose``: ExpandDims + Conv2DBackpropInput + Squeeze, the same way.
- ``tf.nn.pool``: MaxPool / AvgPool (1-D via ExpandDims + Squeeze) or the 3-D pools, in a
  '<type>_pool' scope, wrapped in SpaceToBatchND / BatchToSpaceND for a dilation rate.
- ``tf.nn.atrous_conv2d``: ``convolution`` with a dilation rate, i.e. a plain Conv2D for
  rate 1, else SpaceToBatchND + VALID Conv2D + BatchToSpaceND (``_WithSpaceToBatch``).
- ``tf.nn.separable_conv2d``: DepthwiseConv2dNative ('depthwise', through the same
  space-to-batch wrapping for a rate > 1) + a 1x1 Conv2D.
- ``tf.space_to_batch_nd`` / ``tf.batch_to_space_nd``: the SpaceToBatchND /
  BatchToSpaceND ops (pad + reshape + transpose + reshape, and back with a crop), each
  the other's gradient.
- ``tf.nn.lrn`` / ``tf.nn.local_response_normalization``: the LRN op (a reduce_window sum
  of squares over the channel dim) and its LRNGrad gradient op.
- ``tf.nn.fused_batch_norm``: FusedBatchNormV3 (the forward op types, with FusedBatchNorm / FusedBatchNormV2,
  are registered in extra_ops.py, which takes its gradient from here), training and inference, with the
  FusedBatchNormGrad{,V2,V3} gradient ops following TF's CPU kernels.
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dim_floordiv, dim_mul

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_util import constant_value
from . import array_ops, inference_context as ic, nn_ops
from .inference_context import run_shape_fn
from .math_ops import _elem_of, _like, _require_float, dims_count, scalar_constant

_d = dtypes
_INDEX_TYPES = (_d.int32, _d.int64)
_HALF_FLOAT = (_d.float16, _d.bfloat16, _d.float32)


def _out(op_type, inputs, attrs=None, name=None):
    return apply_op(op_type, inputs, attrs, name=name).outputs[0]


# -- SpaceToBatchND / BatchToSpaceND --------------------------------------------------------
def _block_and_pairs(c, what: str):
    """(block_shape, [[a, b]...]) from the op's constant inputs 1 and 2, or (None, None)."""
    block = c.input_tensor(1)
    pairs = c.input_tensor(2)
    block_shape = ic.with_rank(c.input(1), 1)
    pairs_shape = ic.with_rank(c.input(2), 2)
    m = ic.merge_dim(block_shape[0], pairs_shape[0])
    ic.with_value(pairs_shape[1], 2)
    if block is None or pairs is None:
        return m, None, None
    block = [int(b) for b in np.asarray(block).reshape(-1)]
    pairs = np.asarray(pairs).reshape(-1, 2).astype(np.int64).tolist()
    if any(b < 1 for b in block):
        raise ShapeError("block_shape must be positive")
    if any(p < 0 for pair in pairs for p in pair):
        raise ShapeError(f"{what} must be non-negative")
    return m, block, pairs


def _space_to_batch_shape(c) -> list:
    m, block, pairs = _block_and_pairs(c, "paddings")
    inp = ic.with_rank_at_least(c.input(0), 1 + (m or 0))
    if block is None or inp is None:
        return [ic.unknown_of_rank(None if inp is None else len(inp))]
    out = list(inp)
    out[0] = None if inp[0] is None else inp[0] * int(np.prod(block))
    for i, (b, (lo, hi)) in enumerate(zip(block, pairs)):
        d = inp[1 + i]
        if d is not None:
            padded = d + lo + hi
            if padded % b:
                raise ShapeError(f"padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={b}")
            out[1 + i] = padded // b
    return [out]


def _batch_to_space_shape(c) -> list:
    m, block, crops = _block_and_pairs(c, "crops")
    inp = ic.with_rank_at_least(c.input(0), 1 + (m or 0))
    if block is None or inp is None:
        return [ic.unknown_of_rank(None if inp is None else len(inp))]
    out = list(inp)
    prod = int(np.prod(block))
    if inp[0] is not None:
        if inp[0] % prod:
            raise ShapeError(f"batch is not divisible by product of block_shape: {inp[0]} vs. {prod}")
        out[0] = inp[0] // prod
    for i, (b, (lo, hi)) in enumerate(zip(block, crops)):
        d = inp[1 + i]
        if d is not None:
            size = d * b - lo - hi
            if size < 0:
                raise ShapeError(f"Negative output dimension size caused by too large crop: {size}")
            out[1 + i] = size
    return [out]


def _static_block(ctx, op, block_value, pairs_value):
    block = ctx.static(block_value)
    pairs = ctx.static(pairs_value)
    if block is None or pairs is None:
        ctx.fail(f"{op.type}'s block_shape and {'paddings' if op.type == 'SpaceToBatchND' else 'crops'} "
                 "must be known at compile time")
    return [int(b) for b in np.asarray(block).reshape(-1)], np.asarray(pairs).reshape(-1, 2).astype(int).tolist()


def _lower_space_to_batch(ctx, op, x, block_shape, paddings):
    """pad, [N, H'/b0, b0, W'/b1, b1, rest] -> transpose blocks first -> [b0*b1*N, ...]."""
    block, pairs = _static_block(ctx, op, block_shape, paddings)
    m = len(block)
    shape = list(x.type.shape)
    rest = shape[1 + m:]
    if any(lo or hi for lo, hi in pairs):
        pad_lo = [0] + [p[0] for p in pairs] + [0] * len(rest)
        pad_hi = [0] + [p[1] for p in pairs] + [0] * len(rest)
        zero = scalar_constant(ctx, 0, _elem_of(x))
        x = ctx.b.value("pad", [x, zero], {"low": pad_lo, "high": pad_hi})
        shape = list(x.type.shape)
    split = [shape[0]]
    for i, b in enumerate(block):
        split += [dim_floordiv(shape[1 + i], b), b]
    x = ctx.reshape(x, tuple(split + rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    x = ctx.transpose(x, perm)
    batch = dim_mul(shape[0], int(np.prod(block))) if block else shape[0]
    return ctx.reshape(x, tuple([batch] + [split[1 + 2 * i] for i in range(m)] + rest))


def _lower_batch_to_space(ctx, op, x, block_shape, crops):
    """[b0*b1*N, h, w, rest] -> [b0, b1, N, h, w, rest] -> interleave -> crop."""
    block, pairs = _static_block(ctx, op, block_shape, crops)
    m = len(block)
    shape = list(x.type.shape)
    rest = shape[1 + m:]
    n = dim_floordiv(shape[0], int(np.prod(block))) if block else shape[0]
    x = ctx.reshape(x, tuple(block + [n] + shape[1:]))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    x = ctx.transpose(x, perm)
    spatial = [dim_mul(shape[1 + i], b) for i, b in enumerate(block)]
    x = ctx.reshape(x, tuple([n] + spatial + rest))
    if any(lo or hi for lo, hi in pairs):
        start = [0] + [p[0] for p in pairs] + [0] * len(rest)
        limit = [n] + [s - p[1] for s, p in zip(spatial, pairs)] + rest
        x = ctx.b.value("slice", [x], {"start": start, "limit": limit})
    return x


def _space_to_batch_grad(op, grad):
    return [_out("BatchToSpaceND", [grad, op.inputs[1], op.inputs[2]]), None, None]


def _batch_to_space_grad(op, grad):
    return [_out("SpaceToBatchND", [grad, op.inputs[1], op.inputs[2]]), None, None]


@register
class SpaceToBatchND(OpType):
    inputs = ["input: T", "block_shape: Tblock_shape", "paddings: Tpaddings"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tblock_shape": Attr("type", _d.int32, _INDEX_TYPES),
             "Tpaddings": Attr("type", _d.int32, _INDEX_TYPES)}

    def infer(op):
        return run_shape_fn(op, _space_to_batch_shape)

    lower = _lower_space_to_batch
    gradient = _space_to_batch_grad


@register
class BatchToSpaceND(OpType):
    inputs = ["input: T", "block_shape: Tblock_shape", "crops: Tcrops"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tblock_shape": Attr("type", _d.int32, _INDEX_TYPES),
             "Tcrops": Attr("type", _d.int32, _INDEX_TYPES)}

    def infer(op):
        return run_shape_fn(op, _batch_to_space_shape)

    lower = _lower_batch_to_space
    gradient = _batch_to_space_grad


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002 - TF's argument name
    return _out("SpaceToBatchND", [input, block_shape, paddings], name=name)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    return _out("BatchToSpaceND", [input, block_shape, crops], name=name)


# -- conv1d, atrous_conv2d, separable_conv2d ------------------------------------------------
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None, data_format=None,
           name=None, input=None, dilations=None):  # noqa: A002
    """TF 1.15's conv1d: inputs expanded to 2-D (height 1), Conv2D, then squeezed."""
    from .math_ops import deprecated_argument_lookup
    value = deprecated_argument_lookup("input", input, "value", value)
    with name_scope(name, "conv1d", [value, filters]) as scope:
        if data_format is None or data_format in ("NHWC", "NWC"):
            data_format, spatial_start_dim, channel_index = "NHWC", 1, 2
        elif data_format in ("NCHW", "NCW"):
            data_format, spatial_start_dim, channel_index = "NCHW", 2, 1
        else:
            raise ValueError('data_format must be "NWC" or "NCW".')
        strides = [1] + nn_ops._get_sequence(stride, 1, channel_index, "stride")
        dilations = [1] + nn_ops._get_sequence(dilations, 1, channel_index, "dilations")
        value = array_ops.expand_dims(value, spatial_start_dim)
        filters = array_ops.expand_dims(filters, 0)
        attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations,
                 "explicit_paddings": []}
        if use_cudnn_on_gpu is not None:
            attrs["use_cudnn_on_gpu"] = use_cudnn_on_gpu
        result = _out("Conv2D", [value, filters], attrs, name=scope)
        return array_ops.squeeze(result, [spatial_start_dim])


def with_space_to_batch_nd(inp, rate, padding, filter_shape, op, data_format=None):
    """TF's _WithSpaceToBatch for 1 to 3 spatial dims with static shapes: ``op(x, padding)``
    directly for rate 1, else SpaceToBatchND (paddings from required_space_to_batch_paddings),
    ``op(x, 'VALID')``, BatchToSpaceND. Channels-first data (``data_format`` 'NC...') keeps
    a block size of 1 on its channel dim, as TF does."""
    rate_t = convert_to_tensor(rate, dtypes.int32, name="dilation_rate")
    rate_value = constant_value(rate_t)
    if rate_t.shape.ndims != 1:
        raise ValueError("rate must be rank 1")
    if rate_value is None:
        raise NotImplementedError("a dilation rate that is not known while building the graph is not supported")
    rate_value = np.asarray(rate_value).astype(np.int64)
    spatial = rate_value.size
    if np.any(rate_value < 1):
        raise ValueError("dilation_rate must be positive")
    if np.all(rate_value == 1):
        return op(inp, padding)
    if padding == "SAME":
        filter_value = None if filter_shape is None else \
            constant_value(filter_shape) if hasattr(filter_shape, "op") else \
            (filter_shape.as_list() if hasattr(filter_shape, "as_list") else np.asarray(filter_shape))
        if filter_value is None or any(d is None for d in list(filter_value)[:spatial]):
            raise NotImplementedError("a dilated SAME convolution needs a filter shape known while building the graph")
        window = np.asarray(list(filter_value)[:spatial]).astype(np.int64)
        extra = (window - 1) * rate_value
        base = np.stack([extra // 2, extra - extra // 2], axis=1)
    elif padding == "VALID":
        base = np.zeros([spatial, 2], np.int64)
    else:
        raise ValueError(f"Invalid padding method {padding!r}")
    first = 2 if data_format is not None and data_format.startswith("NC") else 1
    spatial_shape = inp.shape.as_list()[first:first + spatial] if inp.shape.ndims is not None else [None] * spatial
    if None in spatial_shape:
        raise NotImplementedError("a dilated convolution needs the input's spatial dims known while building "
                                  "the graph")
    full = np.asarray(spatial_shape, np.int64) + base[:, 0] + base[:, 1]
    pad_end_extra = (rate_value - full % rate_value) % rate_value
    paddings = np.stack([base[:, 0], base[:, 1] + pad_end_extra], axis=1)
    crops = np.stack([np.zeros_like(pad_end_extra), pad_end_extra], axis=1)
    lead = first - 1  # dims between the batch and the first spatial dim (a channel dim): block 1
    block = np.concatenate([np.ones(lead, np.int64), rate_value]).astype(np.int32)
    paddings = np.concatenate([np.zeros([lead, 2], np.int64), paddings]).astype(np.int32)
    crops = np.concatenate([np.zeros([lead, 2], np.int64), crops]).astype(np.int32)
    converted = space_to_batch_nd(inp, block, paddings)
    result = op(converted, "VALID")
    return batch_to_space_nd(result, block, crops)


def _with_space_to_batch(inp, rate, padding, filter_shape, op):
    """with_space_to_batch_nd for NHWC data (atrous_conv2d, separable_conv2d)."""
    return with_space_to_batch_nd(inp, rate, padding, filter_shape, op)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """tf.nn.atrous_conv2d: ``convolution`` with dilation_rate [rate, rate] (TF 1.15)."""
    rate_pair = np.broadcast_to(rate, (2,))
    with name_scope(name, "convolution", [value, filters]) as scope:
        value = convert_to_tensor(value, name="input")
        filters = convert_to_tensor(filters, name="filters")
        if value.shape.ndims is not None and value.shape.ndims != 4:
            raise ValueError(f"input must be 4-dimensional (got shape {value.shape})")
        if np.all(rate_pair == 1):
            return nn_ops.conv2d(value, filters, [1, 1, 1, 1], padding, data_format="NHWC", dilations=[1, 1, 1, 1],
                                 name=scope)

        def op(x, pad):
            return nn_ops.conv2d(x, filters, [1, 1, 1, 1], pad, data_format="NHWC", name=scope)

        return _with_space_to_batch(value, rate_pair.astype(np.int32), padding,
                                    filters.shape.as_list() if filters.shape.is_fully_defined() else None, op)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """tf.nn.separable_conv2d (TF 1.15): 'depthwise' DepthwiseConv2dNative, then a 1x1 Conv2D."""
    from .math_ops import deprecated_argument_lookup
    rate = deprecated_argument_lookup("dilations", dilations, "rate", rate)
    with name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]) as scope:
        input = convert_to_tensor(input, name="tensor_in")  # noqa: A001
        depthwise_filter = convert_to_tensor(depthwise_filter, name="depthwise_filter")
        pointwise_filter = convert_to_tensor(pointwise_filter, name="pointwise_filter")
        pointwise_shape = pointwise_filter.shape.with_rank(4)
        pointwise_shape.dims[0].assert_is_compatible_with(1)
        pointwise_shape.dims[1].assert_is_compatible_with(1)
        if rate is None:
            rate = [1, 1]
        filter_shape = array_ops.shape(depthwise_filter)
        if data_format not in (None, "NHWC") and not np.all(np.asarray(rate) == 1):
            raise NotImplementedError("separable_conv2d with a dilation rate and NCHW data is not supported")

        def op(x, pad):
            return nn_ops.depthwise_conv2d_native(x, depthwise_filter, strides, pad, data_format=data_format,
                                                  name="depthwise")

        depthwise = _with_space_to_batch(input, rate, padding,
                                         filter_shape if depthwise_filter.shape.is_fully_defined() else None, op)
        return nn_ops.conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], padding="VALID", data_format=data_format,
                             name=scope)


# -- conv1d_transpose, pool -----------------------------------------------------------------
def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",  # noqa: A002
                     dilations=None, name=None):
    """tf.nn.conv1d_transpose (TF 1.15): the input and filters expanded to 2-D (height 1),
    the output shape with a 1 spliced in (``concat``), a Conv2DBackpropInput named
    'conv1d_transpose', then squeezed."""
    from .concat_ops import concat

    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        if data_format is None or data_format == "NWC":
            data_format, spatial_start_dim, channel_index = "NHWC", 1, 2
        elif data_format == "NCW":
            data_format, spatial_start_dim, channel_index = "NCHW", 2, 1
        else:
            raise ValueError('data_format must be "NWC" or "NCW".')
        strides = [1] + nn_ops._get_sequence(strides, 1, channel_index, "stride")
        dilations = [1] + nn_ops._get_sequence(dilations, 1, channel_index, "dilations")
        input = array_ops.expand_dims(input, spatial_start_dim)  # noqa: A001
        filters = array_ops.expand_dims(filters, 0)
        output_shape = list(output_shape) if not isinstance(output_shape, Tensor) else output_shape
        output_shape = concat([output_shape[:spatial_start_dim], [1], output_shape[spatial_start_dim:]], 0)
        attrs = {"strides": strides, "padding": padding, "data_format": data_format, "dilations": dilations}
        result = _out("Conv2DBackpropInput", [output_shape, filters, input], attrs, name=scope)
        return array_ops.squeeze(result, spatial_start_dim)


def _get_strides_and_dilation_rate(num_spatial_dims: int, strides, dilation_rate) -> tuple:
    """TF's nn_ops._get_strides_and_dilation_rate: both as int32 arrays, checked."""
    if dilation_rate is None:
        dilation_rate = [1] * num_spatial_dims
    elif len(dilation_rate) != num_spatial_dims:
        raise ValueError(f"len(dilation_rate)={len(dilation_rate)} but should be {num_spatial_dims}")
    dilation_rate = np.array(dilation_rate, dtype=np.int32)
    if np.any(dilation_rate < 1):
        raise ValueError("all values of dilation_rate must be positive")
    if strides is None:
        strides = [1] * num_spatial_dims
    elif len(strides) != num_spatial_dims:
        raise ValueError(f"len(strides)={len(strides)} but should be {num_spatial_dims}")
    strides = np.array(strides, dtype=np.int32)
    if np.any(strides < 1):
        raise ValueError("all values of strides must be positive")
    if np.any(strides > 1) and np.any(dilation_rate > 1):
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    return strides, dilation_rate


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None, name=None,  # noqa: A002
         data_format=None, dilations=None):
    """tf.nn.pool (TF 1.15): N-D max or average pooling in a '<type>_pool' scope: MaxPool /
    AvgPool (1-D through ExpandDims and Squeeze) or MaxPool3D / AvgPool3D named after the
    scope; a dilation rate above 1 wraps it in SpaceToBatchND / BatchToSpaceND (VALID
    padding only), as TF's with_space_to_batch does."""
    from .math_ops import deprecated_argument_lookup

    dilation_rate = deprecated_argument_lookup("dilations", dilations, "dilation_rate", dilation_rate)
    with name_scope(name, f"{pooling_type.lower()}_pool", [input]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        num_spatial_dims = len(window_shape)
        if num_spatial_dims < 1 or num_spatial_dims > 3:
            raise ValueError("It is required that 1 <= num_spatial_dims <= 3.")
        input.shape.with_rank(num_spatial_dims + 2)
        strides, dilation_rate = _get_strides_and_dilation_rate(num_spatial_dims, strides, dilation_rate)
        if padding == "SAME" and np.any(dilation_rate > 1):
            raise ValueError("pooling with SAME padding is not implemented for dilation_rate > 1")
        if np.any(strides > window_shape):
            raise ValueError("strides > window_shape not supported due to inconsistency between CPU and GPU "
                             "implementations")
        pooling_ops = {("MAX", 1): nn_ops.max_pool, ("MAX", 2): nn_ops.max_pool, ("AVG", 1): nn_ops.avg_pool,
                       ("AVG", 2): nn_ops.avg_pool, ("MAX", 3): nn_ops.max_pool3d, ("AVG", 3): nn_ops.avg_pool3d}
        op_key = (pooling_type, num_spatial_dims)
        if op_key not in pooling_ops:
            raise ValueError(f"{op_key[1]}-D {op_key[0]} pooling is not supported.")
        if data_format is None or not data_format.startswith("NC"):
            adjusted_window_shape = [1] + list(window_shape) + [1]
            adjusted_strides = [1] + [int(s) for s in strides] + [1]
            spatial_dims = list(range(1, num_spatial_dims + 1))
        else:
            adjusted_window_shape = [1, 1] + list(window_shape)
            adjusted_strides = [1, 1] + [int(s) for s in strides]
            spatial_dims = list(range(2, num_spatial_dims + 2))
        if num_spatial_dims == 1:
            if data_format is None or data_format == "NWC":
                data_format_kwargs = {"data_format": "NHWC"}
            elif data_format == "NCW":
                data_format_kwargs = {"data_format": "NCHW"}
            else:
                raise ValueError('data_format must be either "NWC" or "NCW".')
            adjusted_window_shape = [1] + adjusted_window_shape
            adjusted_strides = [1] + adjusted_strides
        else:
            data_format_kwargs = {"data_format": data_format}

        def op(converted_input, converted_padding):
            if num_spatial_dims == 1:
                converted_input = array_ops.expand_dims(converted_input, spatial_dims[0])
            result = pooling_ops[op_key](converted_input, adjusted_window_shape, adjusted_strides,
                                         converted_padding, name=scope, **data_format_kwargs)
            if num_spatial_dims == 1:
                result = array_ops.squeeze(result, [spatial_dims[0]])
            return result

        return with_space_to_batch_nd(input, dilation_rate, padding, list(window_shape), op,
                                      data_format=data_format)


# -- LRN ------------------------------------------------------------------------------------
def _lrn_sums(ctx, x, radius: int):
    """sum over channels c-radius..c+radius of x^2 (the last dim), zero beyond the edges."""
    sq = ctx.b.value("mul", [x, x])
    return ctx.b.value("reduce_window", [sq], {"op": "sum", "window": [1, 1, 1, 2 * radius + 1],
                                              "strides": [1, 1, 1, 1],
                                              "padding": [[0, 0], [0, 0], [0, 0], [radius, radius]]})


def _lrn_norm(ctx, op, x):
    """bias + alpha * sqr_sum, computed in f32 for half types (TF's CPU kernel works in T;
    f16 rounding may differ in the last bit)."""
    radius = op.get_attr("depth_radius")
    if x.type.rank != 4:
        ctx.fail("LRN needs a rank-4 input")
    sums = _lrn_sums(ctx, x, radius)
    return ctx.elementwise("add", ctx.elementwise("mul", sums, _like(ctx, op.get_attr("alpha"), x)),
                           _like(ctx, op.get_attr("bias"), x))


def _pow(ctx, base, exponent: float):
    if exponent == 0.5:
        return ctx.b.value("sqrt", [base])
    if exponent == 1.0:
        return base
    return ctx.elementwise("pow", base, _like(ctx, exponent, base))


def _lower_lrn(ctx, op, x):
    """x / (bias + alpha * sqr_sum) ** beta."""
    _require_float(ctx, op, x)
    elem = _elem_of(x)
    work = ctx.convert(x, ir.ElemType.F32) if elem is not ir.ElemType.F32 and elem.is_float and elem.bits < 32 \
        else x
    norm = _lrn_norm(ctx, op, work)
    y = ctx.b.value("div", [work, _pow(ctx, norm, op.get_attr("beta"))])
    return ctx.convert(y, elem) if work is not x else y


def _lower_lrn_grad(ctx, op, grads, image, output):
    """TF's LRNGrad: dx_k = g_k * norm_k^-beta
    - 2 alpha beta x_k * sum_{j : |j-k| <= r} g_j y_j / norm_j."""
    _require_float(ctx, op, grads)
    elem = _elem_of(grads)
    low = elem is not ir.ElemType.F32 and elem.bits < 32
    g, x, y = ([ctx.convert(v, ir.ElemType.F32) for v in (grads, image, output)] if low else
               [grads, image, output])
    radius = op.get_attr("depth_radius")
    alpha, beta = op.get_attr("alpha"), op.get_attr("beta")
    norm = _lrn_norm(ctx, op, x)
    direct = ctx.b.value("div", [g, _pow(ctx, norm, beta)])
    inner = ctx.b.value("div", [ctx.b.value("mul", [g, y]), norm])
    spread = ctx.b.value("reduce_window", [inner], {"op": "sum", "window": [1, 1, 1, 2 * radius + 1],
                                                    "strides": [1, 1, 1, 1],
                                                    "padding": [[0, 0], [0, 0], [0, 0], [radius, radius]]})
    cross = ctx.elementwise("mul", ctx.b.value("mul", [x, spread]), _like(ctx, 2.0 * alpha * beta, x))
    dx = ctx.b.value("sub", [direct, cross])
    return ctx.convert(dx, elem) if low else dx


def _lrn_attrs() -> dict:
    return {"depth_radius": Attr("int", 5), "bias": Attr("float", 1.0), "alpha": Attr("float", 1.0),
            "beta": Attr("float", 0.5), "T": Attr("type", _d.float32, _HALF_FLOAT)}


def _lrn_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("depth_radius", "bias", "alpha", "beta")}
    return [_out("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs)]


@register
class LRN(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _lrn_attrs()

    def infer(op):
        return run_shape_fn(op, lambda c: [ic.with_rank(c.input(0), 4)])

    lower = _lower_lrn
    gradient = _lrn_grad


@register
class LRNGrad(OpType):
    inputs = ["input_grads: T", "input_image: T", "output_image: T"]
    outputs = ["output: T"]
    attrs = _lrn_attrs()

    def infer(op):
        def fn(c):
            s = ic.with_rank(c.input(0), 4)
            s = ic.merge(s, ic.with_rank(c.input(1), 4))
            return [ic.merge(s, ic.with_rank(c.input(2), 4))]
        return run_shape_fn(op, fn)

    lower = _lower_lrn_grad


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):  # noqa: A002
    attrs = {"depth_radius": depth_radius, "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}
    return _out("LRN", [input], attrs, name=name)


lrn = local_response_normalization


# -- FusedBatchNorm -------------------------------------------------------------------------
def _format_of(op_or_c) -> str:
    fmt = op_or_c.attr("data_format") if hasattr(op_or_c, "attr") else op_or_c.get_attr("data_format")
    return fmt.decode() if isinstance(fmt, bytes) else fmt


def _layout(data_format: str) -> tuple:
    """(rank, channel axis) of NHWC / NCHW / NDHWC / NCDHW."""
    rank = 5 if len(data_format) == 5 else 4
    return rank, 1 if data_format.startswith("NC") else rank - 1


def _fused_bn_grad_shape(c) -> list:
    """TF's FusedBatchNormGradShape."""
    rank, channel = _layout(_format_of(c))
    dy = ic.with_rank(c.input(0), rank)
    x = ic.merge(dy, ic.with_rank(c.input(1), rank))
    depth = x[channel]
    for i in (2, 3, 4):
        depth = ic.merge_dim(depth, ic.with_rank(c.input(i), 1)[0])
    x = list(x)
    x[channel] = depth
    return [x, [depth], [depth], [0], [0]]


def _per_channel(ctx, v, shape, channel):
    return ctx.broadcast_in_dim(v, tuple(shape), [channel])


def _lower_fused_bn_grad(ctx, op, dy, x, scale, saved_mean, saved_var, *reserve_3):
    """TF's CPU FusedBatchNormGrad kernel (training: through the batch statistics)."""
    _require_float(ctx, op, dy)
    elem_t = _elem_of(dy)
    u = _elem_of(scale)
    dyu = ctx.convert(dy, u) if elem_t is not u else dy
    xu = ctx.convert(x, u) if elem_t is not u else x
    rank, channel = _layout(_format_of(op))
    shape = tuple(ctx.canon(d) for d in xu.type.shape)
    reduce_dims = [d for d in range(rank) if d != channel]
    eps = _like(ctx, op.get_attr("epsilon"), xu)
    centered = ctx.b.value("sub", [xu, _per_channel(ctx, saved_mean, shape, channel)])
    var_eps = ctx.elementwise("add", saved_var, eps)
    coef0 = ctx.b.value("rsqrt", [var_eps])
    offset_bp = ctx.reduce(dyu, "sum", reduce_dims)
    scale_bp = ctx.b.value("mul", [ctx.reduce(ctx.b.value("mul", [dyu, centered]), "sum", reduce_dims), coef0])
    coef1 = ctx.b.value("mul", [scale, coef0])
    if op.get_attr("is_training"):
        count = dims_count(ctx, [shape[d] for d in reduce_dims], u)
        inv = ctx.elementwise("div", _like(ctx, 1.0, xu), count)
        dy_mean = ctx.elementwise("mul", offset_bp, inv)
        dy_centered = ctx.b.value("sub", [dyu, _per_channel(ctx, dy_mean, shape, channel)])
        proj = ctx.b.value("div", [ctx.elementwise("mul", ctx.reduce(ctx.b.value("mul", [dyu, centered]), "sum",
                                                                     reduce_dims), inv), var_eps])
        inner = ctx.b.value("sub", [dy_centered, ctx.b.value("mul", [centered, _per_channel(ctx, proj, shape,
                                                                                              channel)])])
        dx = ctx.b.value("mul", [inner, _per_channel(ctx, coef1, shape, channel)])
    else:
        dx = ctx.b.value("mul", [dyu, _per_channel(ctx, coef1, shape, channel)])
    dx = ctx.convert(dx, elem_t) if elem_t is not u else dx
    empty = ctx.constant(np.zeros([0], np.float32), u)
    return [dx, scale_bp, offset_bp, empty, ctx.constant(np.zeros([0], np.float32), u)]


_GRAD_TYPE = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
              "FusedBatchNormV3": "FusedBatchNormGradV3"}


def fused_batch_norm_grad(op, *grads):
    """TF 1.15's _BaseFusedBatchNormGrad (first-order only)."""
    grad_y = grads[0]
    x, scale = op.inputs[0], op.inputs[1]
    epsilon = op.get_attr("epsilon")
    data_format = op.get_attr("data_format")
    data_format = data_format.decode() if isinstance(data_format, bytes) else data_format
    is_training = op.get_attr("is_training")
    grad_type = _GRAD_TYPE[op.type]
    v3 = op.type == "FusedBatchNormV3"
    if is_training:
        inputs = [grad_y, x, scale, op.outputs[3], op.outputs[4]] + ([op.outputs[5]] if v3 else [])
        attrs = {"epsilon": epsilon, "data_format": data_format, "is_training": True}
        return list(apply_op(grad_type, inputs, attrs).outputs)
    pop_mean, pop_var = op.inputs[3], op.inputs[4]
    if data_format == "NCHW":
        x = array_ops.transpose(x, [0, 2, 3, 1])
        grad_y = array_ops.transpose(grad_y, [0, 2, 3, 1])
    inputs = [grad_y, x, scale, pop_mean, pop_var] + ([op.outputs[5]] if v3 else [])
    attrs = {"epsilon": epsilon, "data_format": "NHWC", "is_training": False}
    dx, dscale, doffset, _, _ = apply_op(grad_type, inputs, attrs).outputs
    if data_format == "NCHW":
        dx = array_ops.transpose(dx, [0, 3, 1, 2])
    return [dx, dscale, doffset, None, None]


def _register_fused_bn_grad(type_name: str, t_allowed, u: bool, v3: bool):
    """FusedBatchNormGrad{,V2,V3} (the forward ops are tfc/frontend/ops/extra_ops.py's)."""
    attrs = {"T": Attr("type", allowed=t_allowed), "epsilon": Attr("float", 0.0001),
             "data_format": Attr("string", "NHWC"), "is_training": Attr("bool", True)}
    if u:
        attrs["U"] = Attr("type", allowed=(_d.float32,))
    p = "U" if u else "T"
    inputs = ["y_backprop: T", "x: T", f"scale: {'float32' if u else 'T'}", f"reserve_space_1: {p}",
              f"reserve_space_2: {p}"] + ([f"reserve_space_3: {p}"] if v3 else [])
    outputs = ["x_backprop: T", f"scale_backprop: {p}", f"offset_backprop: {p}",
               f"reserve_space_{4 if v3 else 3}: {p}", f"reserve_space_{5 if v3 else 4}: {p}"]

    def infer(op):
        fmt = _format_of(op)
        if fmt not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
            raise ShapeError(f"Invalid data format: {fmt}")
        return run_shape_fn(op, _fused_bn_grad_shape)

    register(type(type_name, (OpType,), {"inputs": inputs, "outputs": outputs, "attrs": attrs, "infer": infer,
                                         "lower": _lower_fused_bn_grad, "__doc__": f"TF op {type_name}."}))


_register_fused_bn_grad("FusedBatchNormGrad", (_d.float32,), u=False, v3=False)
_register_fused_bn_grad("FusedBatchNormGradV2", _HALF_FLOAT, u=True, v3=False)
_register_fused_bn_grad("FusedBatchNormGradV3", _HALF_FLOAT, u=True, v3=True)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None, exponential_avg_factor=1.0):
    """tf.nn.fused_batch_norm (TF 1.15): FusedBatchNormV3, epsilon raised to at least 1.001e-5;
    returns (y, batch_mean, batch_var)."""
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    offset = convert_to_tensor(offset, name="offset")
    if mean is None:
        mean = _constant([])
    if variance is None:
        variance = _constant([])
    min_epsilon = 1.001e-5
    epsilon = epsilon if epsilon > min_epsilon else min_epsilon
    attrs = {"epsilon": epsilon, "data_format": data_format, "is_training": is_training}
    if exponential_avg_factor != 1.0:
        attrs["exponential_avg_factor"] = exponential_avg_factor
    y, batch_mean, batch_var, _, _, _ = apply_op("FusedBatchNormV3", [x, scale, offset, mean, variance], attrs,
                                                 name=name).outputs
    return y, batch_mean, batch_var


def _constant(value):
    from .constant_op import constant
    return constant(value)


NN_EXPORTS = ["atrous_conv2d", "conv1d", "fused_batch_norm", "local_response_normalization", "lrn",
              "separable_conv2d", "conv1d_transpose", "pool"]
TF_EXPORTS = ["batch_to_space_nd", "space_to_batch_nd"]
