"""More of tf.nn as TensorFlow 1.15 builds it:

- ``tf.nn.depth_to_space`` / ``space_to_depth`` (also ``tf.depth_to_space`` /
  ``tf.space_to_depth``): the DepthToSpace / SpaceToDepth ops (a reshape + transpose +
  reshape, channels last; NCHW through a transpose), each the other's gradient.
- ``tf.nn.max_pool_with_argmax``: the MaxPoolWithArgmax op (values and the flat argmax
  ``((b * height + y) * width + x) * channels + c`` as TF's CPU kernel computes it: the
  first maximum in window order, never a padding position; the batch term only with
  ``include_batch_in_index``), its MaxPoolGradWithArgmax gradient op (a scatter-add at the
  argmax) and the MaxPoolGradGradWithArgmax op (a gather at the argmax); as in TF, those two
  have no gradient.
- compositions of TF 1.15's nn_ops.py / nn_impl.py: ``swish`` (TF 1.15 wraps
  ``features * sigmoid(features)`` in a Defun; tfc builds the Mul/Sigmoid ops directly, same
  values and gradients), ``crelu``, the pool wrappers ``max_pool2d``, ``max_pool1d``,
  ``avg_pool1d``, ``avg_pool2d`` (TF 1.15's alias of v1 ``avg_pool``), ``max_pool_v2``,
  ``avg_pool_v2``, ``weighted_cross_entropy_with_logits``, ``log_poisson_loss``,
  ``sufficient_statistics``, ``normalize_moments``, ``weighted_moments``,
  ``batch_norm_with_global_normalization``, ``compute_average_loss`` and
  ``scale_regularization_loss`` (no distribution strategy in tfc: one replica).
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import array_ops, concat_ops, inference_context as ic, math_ops, nn_ops, selection_ops
from .inference_context import run_shape_fn
from .math_ops import _cmp, _elem_of, scalar_constant

_d = dtypes
_DATA_FORMATS = ("NHWC", "NCHW", "NCHW_VECT_C")


def _out(op_type, inputs, attrs=None, name=None):
    return apply_op(op_type, inputs, attrs, name=name).outputs[0]


# -- DepthToSpace / SpaceToDepth ---------------------------------------------------------------
def _check_block_size(op):
    block_size = op._attrs["block_size"]
    if block_size < 2:
        raise ValueError(f"Value for attr 'block_size' of {block_size} must be at least minimum 2\n\t; "
                         f"NodeDef: {{{{node {op.name}}}}}")
    data_format = op._attrs["data_format"]
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Value for attr 'data_format' of \"{data_format}\" is not in the list of allowed values: "
                         + ", ".join(f'"{f}"' for f in _DATA_FORMATS))
    return block_size, data_format


def _depth_space_shape(op, to_depth: bool):
    block_size, data_format = _check_block_size(op)

    def fn(c):
        rank = 5 if data_format == "NCHW_VECT_C" else 4
        inp = ic.with_rank(c.input(0), rank)
        if inp is None:
            return [None]
        if data_format == "NHWC":
            n, h, w, ch = 0, 1, 2, 3
        else:
            n, ch, h, w = 0, 1, 2, 3
        out = list(inp)
        depth = inp[ch] * 4 if data_format == "NCHW_VECT_C" and inp[ch] is not None and inp[4] is not None else \
            inp[ch]
        if to_depth:
            out[h] = ic.divide_dim(inp[h], block_size)
            out[w] = ic.divide_dim(inp[w], block_size)
            new_depth = ic.multiply_dims(depth, block_size * block_size)
        else:
            out[h] = ic.multiply_dims(inp[h], block_size)
            out[w] = ic.multiply_dims(inp[w], block_size)
            new_depth = ic.divide_dim(depth, block_size * block_size)
        out[ch] = new_depth // 4 if data_format == "NCHW_VECT_C" and new_depth is not None else new_depth
        del n
        return [out]

    return run_shape_fn(op, fn)


def _lower_depth_space(ctx, op, x, to_depth: bool):
    b = op._attrs["block_size"]
    data_format = op._attrs["data_format"]
    if data_format == "NCHW_VECT_C":
        ctx.fail(f"{op.type} with data_format NCHW_VECT_C is not supported by the compiler")
    if data_format == "NCHW":
        x = ctx.transpose(x, [0, 2, 3, 1])
    n, h, w, c = x.type.shape
    for d in (h, w, c):
        if not isinstance(d, int):
            ctx.fail(f"{op.type} needs its height, width and depth known at compile time")
    if to_depth:  # [N, H/b, b, W/b, b, C] -> [N, H/b, W/b, b, b, C]
        y = ctx.reshape(x, (n, h // b, b, w // b, b, c))
        y = ctx.transpose(y, [0, 1, 3, 2, 4, 5])
        y = ctx.reshape(y, (n, h // b, w // b, b * b * c))
    else:  # [N, H, W, b, b, C'] -> [N, H, b, W, b, C']
        c_out = c // (b * b)
        y = ctx.reshape(x, (n, h, w, b, b, c_out))
        y = ctx.transpose(y, [0, 1, 3, 2, 4, 5])
        y = ctx.reshape(y, (n, h * b, w * b, c_out))
    if data_format == "NCHW":
        y = ctx.transpose(y, [0, 3, 1, 2])
    return y


def _depth_space_grad(inverse: str):
    def gradient(op, grad):
        data_format = op._attrs["data_format"]
        if data_format == "NCHW_VECT_C":
            raise ValueError(f"Cannot compute {op.type} gradient with NCHW_VECT_C. NCHW_VECT_C requires qint8 data "
                             "type.")
        return [_out(inverse, [grad], {"block_size": op._attrs["block_size"], "data_format": data_format})]

    return gradient


def _depth_space_attrs() -> dict:
    return {"T": Attr("type"), "block_size": Attr("int"), "data_format": Attr("string", "NHWC")}


@register
class DepthToSpace(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _depth_space_attrs()

    def infer(op):
        return _depth_space_shape(op, to_depth=False)

    def lower(ctx, op, x):
        return _lower_depth_space(ctx, op, x, to_depth=False)

    gradient = _depth_space_grad("SpaceToDepth")


@register
class SpaceToDepth(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = _depth_space_attrs()

    def infer(op):
        return _depth_space_shape(op, to_depth=True)

    def lower(ctx, op, x):
        return _lower_depth_space(ctx, op, x, to_depth=True)

    gradient = _depth_space_grad("DepthToSpace")


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002 - TF's argument name
    return _out("DepthToSpace", [input], {"block_size": block_size, "data_format": data_format}, name=name)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    return _out("SpaceToDepth", [input], {"block_size": block_size, "data_format": data_format}, name=name)


# -- MaxPoolWithArgmax -----------------------------------------------------------------------
_REAL_TYPES = (_d.float32, _d.float64, _d.int32, _d.uint8, _d.int16, _d.int8, _d.int64, _d.bfloat16, _d.uint16,
               _d.float16, _d.uint32, _d.uint64)


def _argmax_pool_attrs(with_targmax: bool = True) -> dict:
    attrs = {"ksize": Attr("list(int)"), "strides": Attr("list(int)")}
    if with_targmax:
        attrs["Targmax"] = Attr("type", _d.int64, (_d.int32, _d.int64))
    attrs.update({"padding": Attr("string"), "include_batch_in_index": Attr("bool", False),
                  "T": Attr("type", allowed=_REAL_TYPES)})
    return attrs


def _check_argmax_attrs(op):
    for attr in ("ksize", "strides"):
        if len(op._attrs[attr]) < 4:
            raise ValueError(f"Attr '{attr}' of '{op.name}' Op passed list of length {len(op._attrs[attr])} less "
                             "than minimum 4.")
    if op._attrs["padding"] not in ("SAME", "VALID"):
        raise ValueError(f"Value for attr 'padding' of \"{op._attrs['padding']}\" is not in the list of allowed "
                         'values: "SAME", "VALID"')


def _argmax_pool_shape(c) -> list:
    """TF's MaxPoolShape (NHWC) for MaxPoolWithArgmax: both outputs."""
    inp = ic.with_rank(c.input(0), 4)
    strides, ksize = c.attr("strides"), c.attr("ksize")
    if len(strides) != 4:
        raise ShapeError(f"MaxPool requires the stride attribute to contain 4 values, but got: {len(strides)}")
    if len(ksize) != 4:
        raise ShapeError(f"MaxPool requires the ksize attribute to contain 4 values, but got: {len(ksize)}")
    padding = c.attr("padding")
    out = [nn_ops.windowed_output_size(inp[i], ksize[i], strides[i], padding) if i else inp[0] for i in range(4)]
    out[0] = inp[0]
    return out


def _argmax_geometry(ctx, op, shape):
    ksize, strides = op._attrs["ksize"], op._attrs["strides"]
    if ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
        ctx.fail(f"{op.type} pools over height and width only (ksize and strides 1 in batch and depth)")
    _, h, w, c = shape
    if not all(isinstance(d, int) for d in (h, w, c)):
        ctx.fail(f"{op.type} needs its height, width and depth known at compile time")
    geometry = []
    for size, k, s in ((h, ksize[1], strides[1]), (w, ksize[2], strides[2])):
        if op._attrs["padding"] == "VALID":
            out, low = (size - k) // s + 1, 0
        else:
            out = -(-size // s)
            low = max((out - 1) * s + k - size, 0) // 2
        geometry.append((size, k, s, out, low))
    return geometry


def _lower_max_pool_with_argmax(ctx, op, x):
    """One strided slice of the padded input per window offset; a running (max, argmax),
    replaced where a valid position is greater or nothing was taken yet (TF's CPU kernel:
    ``output < input || argmax == -1``)."""
    shape = tuple(x.type.shape)
    (hh, kh, sh, oh, ph), (ww, kw, sw, ow, pw) = _argmax_geometry(ctx, op, shape)
    n, c = shape[0], shape[3]
    elem = _elem_of(x)
    idx_elem = ctx.elem(op._attrs["Targmax"])
    high_h = max(0, (oh - 1) * sh + kh - hh - ph)
    high_w = max(0, (ow - 1) * sw + kw - ww - pw)
    if ph or pw or high_h or high_w:
        x = ctx.b.value("pad", [x, scalar_constant(ctx, 0, elem)], {"low": [0, ph, pw, 0],
                                                                     "high": [0, high_h, high_w, 0]})
    out_shape = (n, oh, ow, c)
    lowest = np.finfo(elem.np_dtype).min if np.issubdtype(elem.np_dtype, np.floating) else \
        np.iinfo(elem.np_dtype).min
    best = ctx.broadcast_in_dim(scalar_constant(ctx, lowest, elem), out_shape, [])
    best_idx = ctx.broadcast_in_dim(scalar_constant(ctx, -1, idx_elem), out_shape, [])
    minus_one = best_idx
    ys = np.arange(oh) * sh - ph
    xs = np.arange(ow) * sw - pw
    for dy in range(kh):
        for dx in range(kw):
            y, xx = ys + dy, xs + dx
            valid = ((y >= 0) & (y < hh))[:, None] & ((xx >= 0) & (xx < ww))[None, :]
            if not valid.any():
                continue
            cand = ctx.b.value("slice", [x], {"start": [0, dy, dx, 0],
                                              "limit": [n, dy + (oh - 1) * sh + 1, dx + (ow - 1) * sw + 1, c],
                                              "stride": [1, sh, sw, 1]})
            flat = ((y[:, None, None] * ww + xx[None, :, None]) * c + np.arange(c)[None, None, :])
            index = ctx.broadcast_in_dim(ctx.constant(flat.astype(idx_elem.np_dtype), idx_elem), out_shape,
                                         [1, 2, 3])
            take = ctx.b.value("or", [_cmp(ctx, "lt", best, cand), _cmp(ctx, "eq", best_idx, minus_one)])
            if not valid.all():
                take = ctx.b.value("and", [take, ctx.broadcast_in_dim(ctx.constant(valid), out_shape, [1, 2])])
            best = ctx.b.value("select", [take, cand, best])
            best_idx = ctx.b.value("select", [take, index, best_idx])
    if op._attrs["include_batch_in_index"]:
        batch = ctx.b.value("iota", [], {"dim": 0}, result_type=best_idx.type)
        best_idx = ctx.b.value("add", [best_idx, ctx.b.value(
            "mul", [batch, ctx.broadcast_in_dim(scalar_constant(ctx, hh * ww * c, idx_elem), out_shape, [])])])
    return [best, best_idx]


def _flat_argmax(ctx, op, argmax, input_shape):
    """The argmax as indices into the flattened input (the batch term added when the op's
    indices leave it out)."""
    n, h, w, c = input_shape
    if not all(isinstance(d, int) for d in (h, w, c)):
        ctx.fail(f"{op.type} needs its height, width and depth known at compile time")
    idx_elem = _elem_of(argmax)
    if not op._attrs["include_batch_in_index"]:
        batch = ctx.b.value("iota", [], {"dim": 0}, result_type=argmax.type)
        size = ctx.broadcast_in_dim(scalar_constant(ctx, h * w * c, idx_elem), tuple(argmax.type.shape), [])
        argmax = ctx.b.value("add", [argmax, ctx.b.value("mul", [batch, size])])
    count = 1
    for d in argmax.type.shape:
        count = count * d
    return ctx.reshape(argmax, (count,))


def _lower_max_pool_grad_with_argmax(ctx, op, x, grad, argmax):
    shape = tuple(x.type.shape)
    flat = _flat_argmax(ctx, op, argmax, shape)
    total = shape[0] * shape[1] * shape[2] * shape[3]
    zeros = ctx.broadcast_in_dim(scalar_constant(ctx, 0, _elem_of(grad)), (total,), [])
    updates = ctx.reshape(grad, tuple(flat.type.shape))
    out = ctx.b.value("scatter_add", [zeros, flat, updates], {"axis": 0})
    return ctx.reshape(out, shape)


def _lower_max_pool_grad_grad_with_argmax(ctx, op, x, grad, argmax):
    shape = tuple(x.type.shape)
    flat = _flat_argmax(ctx, op, argmax, shape)
    total = shape[0] * shape[1] * shape[2] * shape[3]
    values = ctx.b.value("gather", [ctx.reshape(grad, (total,)), flat], {"axis": 0})
    return ctx.reshape(values, tuple(argmax.type.shape))


def _argmax_attrs_of(op) -> dict:
    return {"ksize": op._attrs["ksize"], "strides": op._attrs["strides"], "padding": op._attrs["padding"],
            "include_batch_in_index": op._attrs["include_batch_in_index"]}


def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad):
    del unused_argmax_grad
    return [_out("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]], _argmax_attrs_of(op))]




@register
class MaxPoolWithArgmax(OpType):
    inputs = ["input: T"]
    outputs = ["output: T", "argmax: Targmax"]
    attrs = _argmax_pool_attrs()

    def infer(op):
        _check_argmax_attrs(op)
        return run_shape_fn(op, lambda c: [_argmax_pool_shape(c), (op._attrs["Targmax"], _argmax_pool_shape(c))])

    lower = _lower_max_pool_with_argmax
    gradient = _max_pool_with_argmax_grad


def _grad_with_argmax_attrs() -> dict:
    attrs = _argmax_pool_attrs(with_targmax=False)
    attrs["Targmax"] = Attr("type", allowed=(_d.int32, _d.int64))
    return attrs


@register
class MaxPoolGradWithArgmax(OpType):
    inputs = ["input: T", "grad: T", "argmax: Targmax"]
    outputs = ["output: T"]
    attrs = _grad_with_argmax_attrs()

    def infer(op):
        _check_argmax_attrs(op)
        return run_shape_fn(op, lambda c: [ic.with_rank(c.input(0), 4)])

    lower = _lower_max_pool_grad_with_argmax  # no gradient, as in TF


@register
class MaxPoolGradGradWithArgmax(OpType):
    inputs = ["input: T", "grad: T", "argmax: Targmax"]
    outputs = ["output: T"]
    attrs = _grad_with_argmax_attrs()

    def infer(op):  # TF's MaxPoolShape: the pooled shape
        _check_argmax_attrs(op)
        return run_shape_fn(op, lambda c: [_argmax_pool_shape(c)])

    lower = _lower_max_pool_grad_grad_with_argmax  # no gradient, as in TF


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", Targmax=None,  # noqa: A002,N803
                         name=None, output_dtype=None, include_batch_in_index=False):
    """tf.nn.max_pool_with_argmax (TF 1.15's max_pool_with_argmax_v1): (output, argmax)."""
    if data_format != "NHWC":
        raise ValueError("Data formats other than 'NHWC' are not yet supported")
    Targmax = math_ops.deprecated_argument_lookup("output_dtype", output_dtype, "Targmax", Targmax)  # noqa: N806
    if Targmax is None:
        Targmax = _d.int64  # noqa: N806
    op = apply_op("MaxPoolWithArgmax", [input], {"ksize": ksize, "strides": strides, "padding": padding,
                                                 "Targmax": Targmax,
                                                 "include_batch_in_index": include_batch_in_index}, name=name)
    return op.outputs[0], op.outputs[1]


# -- activations -----------------------------------------------------------------------------
def swish(features):
    """features * sigmoid(features) (TF 1.15 builds it as the Defun ``swish``)."""
    features = convert_to_tensor(features, name="features")
    return features * math_ops.sigmoid(features)


def crelu(features, name=None, axis=-1):
    with name_scope(name, "CRelu", [features]) as name:
        features = convert_to_tensor(features, name="features")
        c = concat_ops.concat([features, -features], axis, name=name)
        return nn_ops.relu(c)


# -- pool wrappers ---------------------------------------------------------------------------
def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    with name_scope(name, "MaxPool2d", [input]) as name:
        if data_format is None:
            data_format = "NHWC"
        channel_index = 1 if data_format.startswith("NC") else 3
        ksize = nn_ops._get_sequence(ksize, 2, channel_index, "ksize")
        strides = nn_ops._get_sequence(strides, 2, channel_index, "strides")
        return _out("MaxPool", [input], {"ksize": ksize, "strides": strides, "padding": padding,
                                         "data_format": data_format}, name=name)


def _pool1d(op_type, default_name, input, ksize, strides, padding, data_format, name):  # noqa: A002
    with name_scope(name, default_name, [input]) as name:
        if data_format is None:
            data_format = "NWC"
        channel_index = 1 if data_format.startswith("NC") else 2
        ksize = [1] + nn_ops._get_sequence(ksize, 1, channel_index, "ksize")
        strides = [1] + nn_ops._get_sequence(strides, 1, channel_index, "strides")
        expanding_dim = 1 if data_format == "NWC" else 2
        data_format = "NHWC" if data_format == "NWC" else "NCHW"
        input = array_ops.expand_dims(input, expanding_dim)  # noqa: A001
        result = _out(op_type, [input], {"ksize": ksize, "strides": strides, "padding": padding,
                                         "data_format": data_format}, name=name)
        return array_ops.squeeze(result, [expanding_dim])


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d("MaxPool", "MaxPool1d", input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d("AvgPool", "AvgPool1D", input, ksize, strides, padding, data_format, name)


def _pool_v2(kind: str, input, ksize, strides, padding, data_format, name):  # noqa: A002
    """TF 1.15's max_pool_v2 / avg_pool_v2: the pool of the input's rank."""
    input = convert_to_tensor(input)  # noqa: A001
    if input.shape.ndims is not None:
        n = input.shape.ndims - 2
    elif data_format is not None:
        n = len(data_format) - 2
    else:
        raise ValueError("The input must have a rank or a data format must be given.")
    if not 1 <= n <= 3:
        raise ValueError(f"Input tensor must be of rank 3, 4 or 5 but was {n + 2}.")
    channel_index = n + 1 if data_format is None else (1 if data_format.startswith("NC") else n + 1)
    ksize = nn_ops._get_sequence(ksize, n, channel_index, "ksize")
    strides = nn_ops._get_sequence(strides, n, channel_index, "strides")
    if n == 1:
        pool1d = max_pool1d if kind == "Max" else avg_pool1d
        return pool1d(input, ksize=ksize, strides=strides, padding=padding, data_format=data_format, name=name)
    op_type = f"{kind}Pool" if n == 2 else f"{kind}Pool3D"
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    if data_format is not None:
        attrs["data_format"] = data_format
    return _out(op_type, [input], attrs, name=name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    return _pool_v2("Max", input, ksize, strides, padding, data_format, name)


def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    return _pool_v2("Avg", input, ksize, strides, padding, data_format, name)


# -- losses ----------------------------------------------------------------------------------
def weighted_cross_entropy_with_logits(targets, logits, pos_weight, name=None):
    """TF 1.15's: (1 - z) * x + (1 + (q - 1) * z) * (log1p(exp(-|x|)) + relu(-x))."""
    with name_scope(name, "logistic_loss", [logits, targets]) as name:
        logits = convert_to_tensor(logits, name="logits")
        targets = convert_to_tensor(targets, name="targets")
        try:
            targets.get_shape().merge_with(logits.get_shape())
        except ValueError:
            raise ValueError(f"logits and targets must have the same shape ({logits.get_shape()} vs "
                             f"{targets.get_shape()})") from None
        log_weight = 1 + (pos_weight - 1) * targets
        return math_ops.add((1 - targets) * logits,
                            log_weight * (math_ops.log1p(math_ops.exp(-math_ops.abs(logits)))
                                          + nn_ops.relu(-logits)), name=name)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    with name_scope(name, "log_poisson_loss", [log_input, targets]) as name:
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        try:
            targets.get_shape().merge_with(log_input.get_shape())
        except ValueError:
            raise ValueError(f"log_input and targets must have the same shape ({log_input.get_shape()} vs "
                             f"{targets.get_shape()})") from None
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            from .constant_op import constant

            point_five = constant(0.5, dtype=targets.dtype)
            two_pi = constant(2 * math.pi, dtype=targets.dtype)
            stirling_approx = (targets * math_ops.log(targets)) - targets + (
                point_five * math_ops.log(two_pi * targets))
            zeros = array_ops.zeros_like(targets, dtype=targets.dtype)
            ones = array_ops.ones_like(targets, dtype=targets.dtype)
            cond = math_ops.logical_and(targets >= zeros, targets <= ones)
            result += selection_ops.where(cond, zeros, stirling_approx)
        return result


# -- moments ---------------------------------------------------------------------------------
def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum of x - shift, sum of (x - shift)^2, shift) over ``axes``."""
    from .constant_op import constant

    axes = list(set(axes))
    keep_dims = math_ops.deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    if keep_dims is None:
        keep_dims = False
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        x_shape = x.get_shape()
        if x_shape.ndims is not None and all(x_shape.dims[d].value is not None for d in axes):
            counts = 1
            for d in axes:
                counts *= x_shape.dims[d].value
            counts = constant(counts, dtype=x.dtype)
        else:
            rank = array_ops.rank(x)
            positive_axes = [axis + rank if axis < 0 else axis for axis in axes]
            x_dims = selection_ops.gather(math_ops.cast(array_ops.shape(x), x.dtype), positive_axes)
            counts = math_ops.reduce_prod(x_dims, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss = math_ops.subtract(x, shift)
            v_ss = math_ops.squared_difference(x, shift)
        else:
            m_ss = x
            v_ss = math_ops.square(x)
        m_ss = math_ops.reduce_sum(m_ss, axes, keepdims=keep_dims, name="mean_ss")
        v_ss = math_ops.reduce_sum(v_ss, axes, keepdims=keep_dims, name="var_ss")
    return counts, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math_ops.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math_ops.subtract(math_ops.multiply(variance_ss, divisor), math_ops.square(shifted_mean),
                                     name="variance")
    return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    keep_dims = math_ops.deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    if keep_dims is None:
        keep_dims = False
    from ..losses import div_no_nan

    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        frequency_weights = convert_to_tensor(frequency_weights, name="frequency_weights")
        needs_cast = x.dtype == _d.float16
        if needs_cast:
            x = math_ops.cast(x, _d.float32)
        if frequency_weights.dtype != x.dtype:
            frequency_weights = math_ops.cast(frequency_weights, x.dtype)
        weighted_input_sum = math_ops.reduce_sum(frequency_weights * x, axes, name="weighted_input_sum",
                                                 keepdims=True)
        broadcasted_weights = frequency_weights + array_ops.zeros_like(x)
        sum_of_weights = math_ops.reduce_sum(broadcasted_weights, axes, name="sum_of_weights", keepdims=True)
        weighted_mean = div_no_nan(weighted_input_sum, sum_of_weights)
        weighted_distsq = math_ops.reduce_sum(frequency_weights * math_ops.squared_difference(x, weighted_mean),
                                              axes, name="weighted_distsq", keepdims=True)
        weighted_variance = div_no_nan(weighted_distsq, sum_of_weights)
        if not keep_dims:
            weighted_mean = array_ops.squeeze(weighted_mean, axis=axes)
            weighted_variance = array_ops.squeeze(weighted_variance, axis=axes)
        if needs_cast:
            weighted_mean = math_ops.cast(weighted_mean, _d.float16)
            weighted_variance = math_ops.cast(weighted_variance, _d.float16)
        return weighted_mean, weighted_variance


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None, variance_epsilon=None,
                                         scale_after_normalization=None, name=None, input=None,  # noqa: A002
                                         mean=None, variance=None):
    t = math_ops.deprecated_argument_lookup("input", input, "t", t)
    m = math_ops.deprecated_argument_lookup("mean", mean, "m", m)
    v = math_ops.deprecated_argument_lookup("variance", variance, "v", v)
    return nn_ops.batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                                      variance_epsilon, name)


# -- distribution-aware losses (one replica: tfc has no distribution strategy) ----------------
_NUM_REPLICAS_IN_SYNC = 1


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """TF 1.15's: sum(per_example_loss [* sample_weight]) / global batch size (by default
    the per-replica batch size times the replicas in sync)."""
    per_example_loss = convert_to_tensor(per_example_loss)
    input_dtype = per_example_loss.dtype
    if per_example_loss.shape.ndims == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1, "
                         f"received: {per_example_loss}")
    if sample_weight is not None:  # TF 1.15's losses_util.scale_losses_by_sample_weight
        losses = math_ops.cast(per_example_loss, _d.float32)
        sample_weight = math_ops.cast(sample_weight, _d.float32)
        per_example_loss = math_ops.multiply(losses, sample_weight)
    per_example_loss = math_ops.cast(per_example_loss, input_dtype)
    if global_batch_size is None:
        per_replica_batch_size = array_ops.shape(per_example_loss)[0]
        global_batch_size = per_replica_batch_size * _NUM_REPLICAS_IN_SYNC
        global_batch_size = math_ops.cast(global_batch_size, input_dtype)
    return math_ops.reduce_sum(per_example_loss) / global_batch_size


def scale_regularization_loss(regularization_loss):
    return math_ops.reduce_sum(regularization_loss) / _NUM_REPLICAS_IN_SYNC


NN_EXPORTS = [
    "avg_pool1d", "avg_pool_v2", "batch_norm_with_global_normalization", "compute_average_loss", "crelu",
    "depth_to_space", "log_poisson_loss", "max_pool1d", "max_pool2d", "max_pool_v2", "max_pool_with_argmax",
    "normalize_moments", "scale_regularization_loss", "space_to_depth", "sufficient_statistics", "swish",
    "weighted_cross_entropy_with_logits", "weighted_moments",
]
NN_EXPORTS = {**{n: globals()[n] for n in NN_EXPORTS}, "silu": swish, "avg_pool2d": nn_ops.avg_pool}
TF_EXPORTS = ["depth_to_space", "space_to_depth"]
