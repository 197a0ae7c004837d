"""Image resizing ops: ResizeBilinear, ResizeNearestNeighbor and their gradients
(ResizeBilinearGrad, ResizeNearestNeighborGrad), with TF's ``align_corners`` and
``half_pixel_centers`` semantics, and tf.image.resize_bilinear / resize_nearest_neighbor /
resize_images (TF 1.15's graph).

Output sizes must be known at compile time. The sampling positions and weights are
computed while compiling exactly as TF's kernels compute them (in float32): the forward
ops lower to gathers along height and width with constant indices (bilinear: TF's
``top + (bottom - top) * y_lerp`` arithmetic on the four gathered corners); the gradients
lower to two ``dot``s with constant interpolation matrices (the transposed resize).
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from . import inference_context as ic

_RESIZE_TYPES = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.int64,
                 dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)
_GRAD_TYPES = (dtypes.float32, dtypes.bfloat16, dtypes.float16, dtypes.float64)
_NN_GRAD_TYPES = (dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.float16, dtypes.float32, dtypes.float64,
                  dtypes.bfloat16)
_FLAG_ATTRS = {"align_corners": Attr("bool", False), "half_pixel_centers": Attr("bool", False)}


# -- sampling positions (TF's image_resizer_state.h / resize_*_op.cc) ------------------------
def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _bilinear_weights(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower, upper, lerp) per output position, as compute_interpolation_weights."""
    scale = _scale(in_size, out_size, align_corners)
    pos = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        src = (pos + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        src = pos * scale
    src = src.astype(np.float32)
    floor = np.floor(src)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    lerp = (src - floor).astype(np.float32)
    return lower, upper, lerp


def _nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    scale = _scale(in_size, out_size, align_corners)
    pos = np.arange(out_size, dtype=np.float32)
    src = ((pos + np.float32(0.5)) * scale if half_pixel else pos * scale).astype(np.float32)
    # roundf rounds halves away from zero; src >= 0 here
    idx = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half_pixel else idx


def _flags(op):
    align, half = bool(op._attrs["align_corners"]), bool(op._attrs["half_pixel_centers"])
    return align, half


def _check_flags(ctx, op):
    align, half = _flags(op)
    if align and half:
        ctx.fail("If half_pixel_centers is True, align_corners must be False.")
    return align, half


def _static_size(ctx, size, what):
    hw = ic.static_ints(ctx, size, f"{what}'s size")
    if len(hw) != 2 or hw[0] <= 0 or hw[1] <= 0:
        ctx.fail(f"{what}'s size must be 2 positive integers, got {hw}")
    return hw


def _static_hw(ctx, x, what):
    h, w = (ctx.canon(d) for d in x.type.shape[1:3])
    if not isinstance(h, int) or not isinstance(w, int):
        ctx.fail(f"{what} needs the images' height and width known at compile time")
    if h <= 0 or w <= 0:
        ctx.fail(f"{what}: input image must be of non-zero size")
    return h, w


def _gather(ctx, x, indices, axis):
    return ctx.b.value("gather", [x, ctx.constant(np.asarray(indices, np.int32), ir.ElemType.I32)], {"axis": axis})


def _along(ctx, x, matrix: np.ndarray, axis: int):
    """x with dim ``axis`` (size matrix.shape[1]) replaced by matrix @ that dim."""
    shape = [ctx.canon(d) for d in x.type.shape]
    rank = len(shape)
    perm = [axis] + [i for i in range(rank) if i != axis]
    rest = [shape[i] for i in perm[1:]]
    flat = ctx.reshape(ctx.transpose(x, perm), (shape[axis], dims_product(rest)))
    m = ctx.constant(matrix.astype(np.float64), x.type.elem)
    product = ctx.b.value("dot", [m, flat], {"contract": [[1], [0]]})
    out = ctx.reshape(product, tuple([matrix.shape[0]] + rest))
    inverse = [perm.index(i) for i in range(rank)]
    return ctx.transpose(out, inverse)


def _bilinear_matrix(in_size, out_size, align, half) -> np.ndarray:
    lower, upper, lerp = _bilinear_weights(in_size, out_size, align, half)
    m = np.zeros((out_size, in_size), np.float64)
    rows = np.arange(out_size)
    np.add.at(m, (rows, lower), 1.0 - lerp.astype(np.float64))
    np.add.at(m, (rows, upper), lerp.astype(np.float64))
    return m


def _nearest_matrix(in_size, out_size, align, half) -> np.ndarray:
    m = np.zeros((out_size, in_size), np.float64)
    m[np.arange(out_size), _nearest_indices(in_size, out_size, align, half)] = 1.0
    return m


# -- shape functions --------------------------------------------------------------------------
def _resize_shape(out_dtype):
    def shape_fn(c):
        images = ic.with_rank(c.input(0), 4)
        size = ic.with_rank(c.input(1), 1)
        ic.with_value(size[0], 2)
        hw = c.shape_from_shape_tensor(1)
        if hw is None:
            hw = [None, None]
        dtype = out_dtype if out_dtype is not None else c.attr("T")
        return [(dtype, [images[0], hw[0], hw[1], images[3]])]
    return shape_fn


def _bilinear_grad_shape(c):
    grads = ic.with_rank(c.input(0), 4)
    original = ic.with_rank(c.input(1), 4)
    return [(c.attr("T"), [grads[0], original[1], original[2], grads[3]])]


# -- lowerings --------------------------------------------------------------------------------
def _lower_resize_bilinear(ctx, op, images, size):
    align, half = _check_flags(ctx, op)
    in_h, in_w = _static_hw(ctx, images, "ResizeBilinear")
    out_h, out_w = _static_size(ctx, size, "ResizeBilinear")
    x = ctx.convert(images, ir.ElemType.F32)
    ys_lo, ys_hi, y_lerp = _bilinear_weights(in_h, out_h, align, half)
    xs_lo, xs_hi, x_lerp = _bilinear_weights(in_w, out_w, align, half)
    top_rows, bottom_rows = _gather(ctx, x, ys_lo, 1), _gather(ctx, x, ys_hi, 1)
    top_left, top_right = _gather(ctx, top_rows, xs_lo, 2), _gather(ctx, top_rows, xs_hi, 2)
    bottom_left, bottom_right = _gather(ctx, bottom_rows, xs_lo, 2), _gather(ctx, bottom_rows, xs_hi, 2)
    xl = ctx.constant(x_lerp.reshape(1, 1, out_w, 1), ir.ElemType.F32)
    yl = ctx.constant(y_lerp.reshape(1, out_h, 1, 1), ir.ElemType.F32)
    top = ctx.elementwise("add", top_left, ctx.elementwise("mul", ctx.elementwise("sub", top_right, top_left), xl))
    bottom = ctx.elementwise("add", bottom_left,
                             ctx.elementwise("mul", ctx.elementwise("sub", bottom_right, bottom_left), xl))
    return ctx.elementwise("add", top, ctx.elementwise("mul", ctx.elementwise("sub", bottom, top), yl))


def _lower_resize_bilinear_grad(ctx, op, grads, original):
    align, half = _check_flags(ctx, op)
    in_h, in_w = _static_hw(ctx, original, "ResizeBilinearGrad")
    out_h, out_w = (ctx.canon(d) for d in grads.type.shape[1:3])
    g = ctx.convert(grads, ctx.elem(op._attrs["T"]))
    g = _along(ctx, g, _bilinear_matrix(in_h, out_h, align, half).T, 1)
    return _along(ctx, g, _bilinear_matrix(in_w, out_w, align, half).T, 2)


def _lower_resize_nearest(ctx, op, images, size):
    align, half = _check_flags(ctx, op)
    in_h, in_w = _static_hw(ctx, images, "ResizeNearestNeighbor")
    out_h, out_w = _static_size(ctx, size, "ResizeNearestNeighbor")
    rows = _gather(ctx, images, _nearest_indices(in_h, out_h, align, half), 1)
    return _gather(ctx, rows, _nearest_indices(in_w, out_w, align, half), 2)


def _lower_resize_nearest_grad(ctx, op, grads, size):
    align, half = _check_flags(ctx, op)
    in_h, in_w = _static_size(ctx, size, "ResizeNearestNeighborGrad")
    out_h, out_w = (ctx.canon(d) for d in grads.type.shape[1:3])
    if not isinstance(out_h, int) or not isinstance(out_w, int):
        ctx.fail("ResizeNearestNeighborGrad needs the gradients' height and width known at compile time")
    g = _along(ctx, grads, _nearest_matrix(in_h, out_h, align, half).T, 1)
    return _along(ctx, g, _nearest_matrix(in_w, out_w, align, half).T, 2)


# -- registry entries -------------------------------------------------------------------------
@register
class ResizeBilinear(OpType):
    inputs = ["images: T", "size: int32"]
    outputs = ["resized_images: float32"]
    attrs = dict(_FLAG_ATTRS, T=Attr("type", allowed=_RESIZE_TYPES))

    def infer(op):
        return ic.run_shape_fn(op, _resize_shape(dtypes.float32))

    lower = _lower_resize_bilinear

    def gradient(op, grad):
        """image_grad.py's _ResizeBilinearGrad."""
        grad0 = apply_op("ResizeBilinearGrad", [grad, op.inputs[0]],
                         {"align_corners": op._attrs["align_corners"],
                          "half_pixel_centers": op._attrs["half_pixel_centers"]}).outputs[0]
        return [grad0, None]


@register
class ResizeBilinearGrad(OpType):
    inputs = ["grads: float32", "original_image: T"]
    outputs = ["output: T"]
    attrs = dict(_FLAG_ATTRS, T=Attr("type", allowed=_GRAD_TYPES))
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _bilinear_grad_shape)

    lower = _lower_resize_bilinear_grad


@register
class ResizeNearestNeighbor(OpType):
    inputs = ["images: T", "size: int32"]
    outputs = ["resized_images: T"]
    attrs = dict(_FLAG_ATTRS, T=Attr("type", allowed=_RESIZE_TYPES))

    def infer(op):
        return ic.run_shape_fn(op, _resize_shape(None))

    lower = _lower_resize_nearest

    def gradient(op, grad):
        """image_grad.py's _ResizeNearestNeighborGrad."""
        image = op.inputs[0]
        if image.shape[1:3].is_fully_defined():
            image_shape = image.shape[1:3].as_list()
        else:
            from .array_ops import shape as _shape
            image_shape = _shape(image)[1:3]
        grads = apply_op("ResizeNearestNeighborGrad", [grad, image_shape],
                         {"align_corners": op._attrs["align_corners"],
                          "half_pixel_centers": op._attrs["half_pixel_centers"]}).outputs[0]
        return [grads, None]


@register
class ResizeNearestNeighborGrad(OpType):
    inputs = ["grads: T", "size: int32"]
    outputs = ["output: T"]
    attrs = dict(_FLAG_ATTRS, T=Attr("type", allowed=_NN_GRAD_TYPES))
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _resize_shape(None))

    lower = _lower_resize_nearest_grad


# -- functions --------------------------------------------------------------------------------
def resize_bilinear(images, size, align_corners=False, half_pixel_centers=False, name=None):
    """tf.image.resize_bilinear (gen_image_ops): one ResizeBilinear op (float32 output)."""
    return apply_op("ResizeBilinear", [images, size],
                    {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)},
                    name).outputs[0]


def resize_nearest_neighbor(images, size, align_corners=False, half_pixel_centers=False, name=None):
    """tf.image.resize_nearest_neighbor (gen_image_ops): one ResizeNearestNeighbor op."""
    return apply_op("ResizeNearestNeighbor", [images, size],
                    {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)},
                    name).outputs[0]


class ResizeMethod:
    """tf.image.ResizeMethod of TF 1.x (ResizeMethodV1)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, preserve_aspect_ratio=False,
                  name=None):
    """TF 1.15's resize_images (image_ops_impl._resize_images_common), BILINEAR and
    NEAREST_NEIGHBOR only; preserve_aspect_ratio is not supported."""
    from . import array_ops
    from ..tensor_util import constant_value_as_shape

    if method in (ResizeMethod.BILINEAR, "bilinear"):
        def resizer(images_t, new_size):
            return resize_bilinear(images_t, new_size, align_corners=align_corners)
    elif method in (ResizeMethod.NEAREST_NEIGHBOR, "nearest"):
        def resizer(images_t, new_size):
            return resize_nearest_neighbor(images_t, new_size, align_corners=align_corners)
    elif method in (ResizeMethod.BICUBIC, ResizeMethod.AREA, "bicubic", "area"):
        raise NotImplementedError("tfc does not implement tf.image.resize_images with BICUBIC or AREA yet")
    else:
        raise ValueError("Resize method is not implemented.")
    if preserve_aspect_ratio:
        raise NotImplementedError("tfc does not implement tf.image.resize_images(preserve_aspect_ratio=True) yet")
    with name_scope(name, "resize", [images, size]):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is None:
            raise ValueError("'images' contains no shape.")
        is_batch = True
        if images.shape.ndims == 3:
            is_batch = False
            images = array_ops.expand_dims(images, 0)
        elif images.shape.ndims != 4:
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        _, height, width, _ = images.shape.as_list()
        try:
            size = convert_to_tensor(size, dtypes.int32, name="size")
        except (TypeError, ValueError):
            raise ValueError("'size' must be a 1-D int32 Tensor")
        if not size.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        size_const_as_shape = constant_value_as_shape(size)
        new_height_const = size_const_as_shape.dims[0].value
        new_width_const = size_const_as_shape.dims[1].value
        if all(x is not None for x in [new_width_const, width, new_height_const, height]) and (
                width == new_width_const and height == new_height_const):
            if not is_batch:
                images = array_ops.squeeze(images, axis=[0])
            return images
        images = resizer(images, size)
        images.set_shape([None, new_height_const, new_width_const, None])
        if not is_batch:
            images = array_ops.squeeze(images, axis=[0])
        return images


IMAGE_EXPORTS = {"resize_bilinear": resize_bilinear, "resize_nearest_neighbor": resize_nearest_neighbor,
                 "resize_images": resize_images, "ResizeMethod": ResizeMethod}
