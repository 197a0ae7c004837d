"""More of tf.image (TF 1.15's image_ops_impl): color adjustments (AdjustContrastv2,
AdjustSaturation, AdjustHue, RGBToHSV, HSVToRGB ops lowered to core elementwise IR as
TF's CPU kernels compute them), YIQ/YUV, cropping and padding to bounding boxes, rot90,
transpose, total_variation, image_gradients, sobel_edges, psnr, the random color
adjustments, tf.random_crop, and ExtractImagePatches (a gather with constant indices,
its gradient an unsorted segment sum of the same indices)."""
from __future__ import annotations

import numpy as np

from tfc import ir

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_util import constant_value
from . import inference_context as ic

_FLOATS = (dtypes.float16, dtypes.float32)
_HSV_TYPES = (dtypes.float32, dtypes.float64)


def _tf():
    import tfc.compat.v1 as tf

    return tf


# -- elementwise helpers over the last (channel) axis -------------------------------------
def _channels(ctx, x):
    shape = [ctx.canon(d) for d in x.type.shape]
    if not shape or shape[-1] != 3:
        ctx.fail(f"input must have 3 channels but input only has {shape[-1] if shape else '?'} channels.")
    rank = len(shape)
    out = []
    for i in range(3):
        out.append(ctx.b.value("slice", [x], {"start": [0] * (rank - 1) + [i], "limit": shape[:-1] + [i + 1]}))
    return out


def _stack3(ctx, a, b, c):
    return ctx.b.value("concatenate", [a, b, c], {"dim": len(a.type.shape) - 1})


def _cmp(ctx, a, b, direction):
    return ctx.elementwise("compare", a, b, attrs={"dir": direction})


def _sel(ctx, pred, a, b):
    return ctx.elementwise("select", pred, a, b)


def _hsv_of(ctx, r, g, b):
    """(h in [0, 1), s, v, v_min) as TF's rgb_to_hsv."""
    e = ctx.elem_of(r)
    zero, one = ctx.scalar(0.0, e), ctx.scalar(1.0, e)
    v = ctx.elementwise("max", r, ctx.elementwise("max", g, b))
    vmin = ctx.elementwise("min", r, ctx.elementwise("min", g, b))
    rng = ctx.elementwise("sub", v, vmin)
    s = _sel(ctx, _cmp(ctx, v, zero, "gt"), ctx.elementwise("div", rng, v), ctx.broadcast_to(zero, ctx.shape(v)))
    norm = ctx.elementwise("div", one, ctx.elementwise("mul", ctx.scalar(6.0, e), rng))
    h_r = ctx.elementwise("mul", norm, ctx.elementwise("sub", g, b))
    h_g = ctx.elementwise("add", ctx.elementwise("mul", norm, ctx.elementwise("sub", b, r)), ctx.scalar(2.0 / 6.0, e))
    h_b = ctx.elementwise("add", ctx.elementwise("mul", norm, ctx.elementwise("sub", r, g)), ctx.scalar(4.0 / 6.0, e))
    h = _sel(ctx, _cmp(ctx, r, v, "eq"), h_r, _sel(ctx, _cmp(ctx, g, v, "eq"), h_g, h_b))
    h = _sel(ctx, _cmp(ctx, rng, zero, "gt"), h, ctx.broadcast_to(zero, ctx.shape(h)))
    h = _sel(ctx, _cmp(ctx, h, zero, "lt"), ctx.elementwise("add", h, one), h)
    return h, s, v


def _rgb_of(ctx, h, s, v):
    """TF's hsv_to_rgb: c = s*v, m = v - c, x = c*(1 - |fmod(6h, 2) - 1|), per 6h's category."""
    e = ctx.elem_of(h)
    zero = ctx.broadcast_to(ctx.scalar(0.0, e), ctx.shape(h))
    c = ctx.elementwise("mul", s, v)
    m = ctx.elementwise("sub", v, c)
    dh = ctx.elementwise("mul", h, ctx.scalar(6.0, e))
    two = ctx.scalar(2.0, e)
    fmodu = ctx.elementwise("rem", dh, two)  # C fmod: the sign of the dividend
    x = ctx.elementwise("mul", c, ctx.elementwise("sub", ctx.scalar(1.0, e), ctx.elementwise(
        "abs", ctx.elementwise("sub", fmodu, ctx.scalar(1.0, e)))))
    # categories: trunc toward zero (static_cast<int>); negative dh is category 0 too
    cat = ctx.elementwise("floor", dh)
    cat = _sel(ctx, _cmp(ctx, dh, ctx.scalar(0.0, e), "lt"), ctx.elementwise("neg", ctx.elementwise(
        "floor", ctx.elementwise("neg", dh))), cat)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    rr, gg, bb = zero, zero, zero
    for k, (tr, tg, tb) in enumerate(table):
        is_k = _cmp(ctx, cat, ctx.scalar(float(k), e), "eq")
        rr, gg, bb = _sel(ctx, is_k, tr, rr), _sel(ctx, is_k, tg, gg), _sel(ctx, is_k, tb, bb)
    return (ctx.elementwise("add", rr, m), ctx.elementwise("add", gg, m), ctx.elementwise("add", bb, m))


def _float_in(ctx, x):
    return ctx.convert(x, ir.ElemType.F32) if ctx.elem_of(x) != ir.ElemType.F32 else x


def _lower_rgb_to_hsv(ctx, op, images):
    h, s, v = _hsv_of(ctx, *_channels(ctx, images))
    return _stack3(ctx, h, s, v)


def _lower_hsv_to_rgb(ctx, op, images):
    return _stack3(ctx, *_rgb_of(ctx, *_channels(ctx, images)))


def _lower_adjust_saturation(ctx, op, images, scale):
    x = _float_in(ctx, images)
    h, s, v = _hsv_of(ctx, *_channels(ctx, x))
    s = ctx.elementwise("mul", s, _float_in(ctx, scale))
    f32 = ir.ElemType.F32
    s = ctx.elementwise("min", ctx.scalar(1.0, f32), ctx.elementwise("max", ctx.scalar(0.0, f32), s))
    out = _stack3(ctx, *_rgb_of(ctx, h, s, v))
    return ctx.convert(out, ctx.elem_of(images)) if ctx.elem_of(images) != ir.ElemType.F32 else out


def _lower_adjust_hue(ctx, op, images, delta):
    """adjust_hue_op.cc: hue in [0, 6) per (v_min, v_max), shifted by 6*delta and wrapped."""
    f32 = ir.ElemType.F32
    x = _float_in(ctx, images)
    r, g, b = _channels(ctx, x)
    h, _, vmax = _hsv_of(ctx, r, g, b)
    vmin = ctx.elementwise("min", r, ctx.elementwise("min", g, b))
    six = ctx.scalar(6.0, f32)
    h6 = ctx.elementwise("add", ctx.elementwise("mul", h, six), ctx.elementwise("mul", _float_in(ctx, delta), six))
    turns = ctx.elementwise("floor", ctx.elementwise("div", h6, six))
    h6 = ctx.elementwise("sub", h6, ctx.elementwise("mul", six, turns))
    h6 = _sel(ctx, _cmp(ctx, h6, six, "ge"), ctx.elementwise("sub", h6, six), h6)
    cat = ctx.elementwise("floor", h6)
    ratio = ctx.elementwise("sub", h6, cat)
    odd = _cmp(ctx, ctx.elementwise("rem", cat, ctx.scalar(2.0, f32)), ctx.scalar(1.0, f32), "eq")
    ratio = _sel(ctx, odd, ctx.elementwise("sub", ctx.scalar(1.0, f32), ratio), ratio)
    vmid = ctx.elementwise("add", vmin, ctx.elementwise("mul", ratio, ctx.elementwise("sub", vmax, vmin)))
    table = [(vmax, vmid, vmin), (vmid, vmax, vmin), (vmin, vmax, vmid), (vmin, vmid, vmax), (vmid, vmin, vmax),
             (vmax, vmin, vmid)]
    zero = ctx.broadcast_to(ctx.scalar(0.0, f32), ctx.shape(h6))
    rr, gg, bb = zero, zero, zero
    for k, (tr, tg, tb) in enumerate(table):
        is_k = _cmp(ctx, cat, ctx.scalar(float(k), f32), "eq")
        rr, gg, bb = _sel(ctx, is_k, tr, rr), _sel(ctx, is_k, tg, gg), _sel(ctx, is_k, tb, bb)
    out = _stack3(ctx, rr, gg, bb)
    return ctx.convert(out, ctx.elem_of(images)) if ctx.elem_of(images) != f32 else out


def _lower_adjust_contrast(ctx, op, images, factor):
    """(x - mean) * factor + mean, the mean over height and width per image and channel."""
    x = _float_in(ctx, images)
    shape = [ctx.canon(d) for d in x.type.shape]
    rank = len(shape)
    h, w = shape[rank - 3], shape[rank - 2]
    if not isinstance(h, int) or not isinstance(w, int):
        ctx.fail("AdjustContrastv2 needs the images' height and width known at compile time")
    total = ctx.reduce(x, "sum", [rank - 3, rank - 2])
    mean = ctx.elementwise("div", total, ctx.scalar(float(h * w), ir.ElemType.F32))
    mean = ctx.broadcast_in_dim(mean, tuple(shape), [i for i in range(rank) if i not in (rank - 3, rank - 2)])
    out = ctx.elementwise("add", ctx.elementwise("mul", ctx.elementwise("sub", x, mean), _float_in(ctx, factor)), mean)
    return ctx.convert(out, ctx.elem_of(images)) if ctx.elem_of(images) != ir.ElemType.F32 else out


def _image_shape_fn(min_rank=3, channels3=False):
    def infer(op):
        def fn(c):
            s = ic.with_rank_at_least(c.input(0), min_rank)
            if channels3 and s is not None:
                ic.with_value(s[-1], 3)
            return [(c.attr("T"), s)]
        return ic.run_shape_fn(op, fn)
    return infer


@register
class AdjustContrastv2(OpType):
    inputs = ["images: T", "contrast_factor: float32"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", dtypes.float32, allowed=_FLOATS)}
    infer = _image_shape_fn(3)
    lower = _lower_adjust_contrast


@register
class AdjustSaturation(OpType):
    inputs = ["images: T", "scale: float32"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", dtypes.float32, allowed=_FLOATS)}
    infer = _image_shape_fn(3, channels3=True)
    lower = _lower_adjust_saturation


@register
class AdjustHue(OpType):
    inputs = ["images: T", "delta: float32"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", dtypes.float32, allowed=_FLOATS)}
    infer = _image_shape_fn(3, channels3=True)
    lower = _lower_adjust_hue


@register
class RGBToHSV(OpType):
    inputs = ["images: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", dtypes.float32, allowed=_HSV_TYPES)}
    infer = _image_shape_fn(1, channels3=True)
    lower = _lower_rgb_to_hsv


@register
class HSVToRGB(OpType):
    inputs = ["images: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", dtypes.float32, allowed=_HSV_TYPES)}
    infer = _image_shape_fn(1, channels3=True)
    lower = _lower_hsv_to_rgb


# -- ExtractImagePatches ---------------------------------------------------------------------
def _patch_geometry(in_size, k, stride, rate, padding):
    k_eff = k + (k - 1) * (rate - 1)
    if padding == "VALID":
        out = (in_size - k_eff + stride) // stride
        pad_before = 0
    else:
        out = (in_size + stride - 1) // stride
        pad_before = max((out - 1) * stride + k_eff - in_size, 0) // 2
    return max(out, 0), pad_before


def _patch_indices(h, w, attrs):
    """Flat input pixel index (h*w for padding) per (out_row, out_col, ky, kx)."""
    kh, kw = attrs["ksizes"][1:3]
    sh, sw = attrs["strides"][1:3]
    rh, rw = attrs["rates"][1:3]
    padding = attrs["padding"].decode() if isinstance(attrs["padding"], bytes) else attrs["padding"]
    oh, ph = _patch_geometry(h, kh, sh, rh, padding)
    ow, pw = _patch_geometry(w, kw, sw, rw, padding)
    rows = (np.arange(oh) * sh - ph)[:, None, None, None] + (np.arange(kh) * rh)[None, None, :, None]
    cols = (np.arange(ow) * sw - pw)[None, :, None, None] + (np.arange(kw) * rw)[None, None, None, :]
    rows, cols = np.broadcast_arrays(rows, cols)
    inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
    return np.where(inside, rows * w + cols, h * w).astype(np.int32), oh, ow


def _extract_patches_shape(c):
    images = ic.with_rank(c.input(0), 4)
    attrs = {key: c.attr(key) for key in ("ksizes", "strides", "rates", "padding")}
    for key in ("ksizes", "strides", "rates"):
        if len(attrs[key]) != 4:
            raise ShapeError(f"ExtractImagePatches requires the {key} attribute to contain 4 values, but got: "
                   f"{len(attrs[key])}")
    padding = attrs["padding"].decode() if isinstance(attrs["padding"], bytes) else attrs["padding"]
    kh, kw = attrs["ksizes"][1:3]
    out = []
    for size, k, s, r in ((images[1], kh, attrs["strides"][1], attrs["rates"][1]),
                          (images[2], kw, attrs["strides"][2], attrs["rates"][2])):
        out.append(None if size is None else _patch_geometry(size, k, s, r, padding)[0])
    depth = None if images[3] is None else images[3] * kh * kw
    return [(c.attr("T"), [images[0], out[0], out[1], depth])]


def _lower_extract_patches(ctx, op, images):
    shape = [ctx.canon(d) for d in images.type.shape]
    b, h, w, ch = shape
    if not isinstance(h, int) or not isinstance(w, int) or not isinstance(ch, int):
        ctx.fail("ExtractImagePatches needs the images' height, width and depth known at compile time")
    idx, oh, ow = _patch_indices(h, w, op._attrs)
    kh, kw = op._attrs["ksizes"][1:3]
    flat = ctx.reshape(images, (b, h * w, ch))
    zero = ctx.broadcast_to(ctx.constant(np.zeros((1, 1, 1)), ctx.elem_of(images)), (b, 1, ch))
    flat = ctx.b.value("concatenate", [flat, zero], {"dim": 1})
    gathered = ctx.b.value("gather", [flat, ctx.constant(idx.reshape(-1), ir.ElemType.I32)], {"axis": 1})
    return ctx.reshape(gathered, (b, oh, ow, kh * kw * ch))


@register
class ExtractImagePatches(OpType):
    inputs = ["images: T"]
    outputs = ["patches: T"]
    attrs = {"ksizes": Attr("list(int)"), "strides": Attr("list(int)"), "rates": Attr("list(int)"),
             "T": Attr("type"), "padding": Attr("string")}

    def infer(op):
        return ic.run_shape_fn(op, _extract_patches_shape)

    lower = _lower_extract_patches

    def gradient(op, grad):
        """The patches' gradient summed back into the pixels they came from."""
        tf = _tf()
        x = op.inputs[0]
        dims = x.shape.as_list()
        if any(d is None for d in dims[1:]):
            raise NotImplementedError("tfc's ExtractImagePatches gradient needs the images' height, width and "
                                      "depth known")
        _, h, w, ch = dims
        idx, oh, ow = _patch_indices(h, w, op._attrs)
        batch = tf.shape(x)[0]
        g = tf.reshape(grad, tf.stack([batch, idx.size, ch]))
        g = tf.transpose(g, [1, 0, 2])
        summed = tf.unsorted_segment_sum(g, tf.constant(idx.reshape(-1)), h * w + 1)
        summed = tf.transpose(summed[:h * w], [1, 0, 2])
        return [tf.reshape(summed, tf.shape(x))]


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None, sizes=None):
    """tf.image.extract_image_patches / tf.extract_image_patches (``sizes`` is ksizes' new name)."""
    ksizes = ksizes if ksizes is not None else sizes
    return apply_op("ExtractImagePatches", [images], {"ksizes": list(ksizes), "strides": list(strides),
                                                      "rates": list(rates), "padding": padding}, name).outputs[0]


def extract_patches(images, sizes, strides, rates, padding, name=None):
    return extract_image_patches(images, sizes, strides, rates, padding, name)


# -- python functions (TF 1.15's image_ops_impl) ----------------------------------------------
def _convert(image, dtype, saturate=False, name=None):
    from ..image_ops import convert_image_dtype

    return convert_image_dtype(image, dtype, saturate=saturate, name=name)


def _to_float(image):
    return image if image.dtype in _FLOATS else _convert(image, dtypes.float32)


def adjust_brightness(image, delta):
    tf = _tf()
    with name_scope(None, "adjust_brightness", [image, delta]) as name:
        image = convert_to_tensor(image, name="image")
        orig_dtype = image.dtype
        flt_image = _to_float(image)
        adjusted = tf.add(flt_image, tf.cast(delta, flt_image.dtype), name=name)
        return _convert(adjusted, orig_dtype, saturate=True)


def adjust_contrast(images, contrast_factor):
    with name_scope(None, "adjust_contrast", [images, contrast_factor]) as name:
        images = convert_to_tensor(images, name="images")
        orig_dtype = images.dtype
        flt_images = _to_float(images)
        adjusted = apply_op("AdjustContrastv2", [flt_images, contrast_factor], {}, name).outputs[0]
        return _convert(adjusted, orig_dtype, saturate=True)


def adjust_gamma(image, gamma=1, gain=1):
    tf = _tf()
    with name_scope(None, "adjust_gamma", [image, gamma, gain]):
        image = convert_to_tensor(image, name="image")
        orig_dtype = image.dtype
        flt_image = _to_float(image)
        if isinstance(gamma, (int, float)):
            if gamma < 0:
                raise ValueError("Gamma should be a non-negative real number.")
        else:
            gamma = convert_to_tensor(gamma)
            check = tf.Assert(gamma >= 0, ["Gamma should be a non-negative real number."])
            with tf.control_dependencies([check]):
                gamma = tf.identity(gamma)
        adjusted_img = gain * flt_image ** gamma
        return _convert(adjusted_img, orig_dtype, saturate=True)


def adjust_hue(image, delta, name=None):
    with name_scope(name, "adjust_hue", [image]):
        image = convert_to_tensor(image, name="image")
        orig_dtype = image.dtype
        flt_image = _to_float(image)
        rgb_altered = apply_op("AdjustHue", [flt_image, delta], {}).outputs[0]
        return _convert(rgb_altered, orig_dtype)


def adjust_saturation(image, saturation_factor, name=None):
    with name_scope(name, "adjust_saturation", [image]):
        image = convert_to_tensor(image, name="image")
        orig_dtype = image.dtype
        flt_image = _to_float(image)
        adjusted = apply_op("AdjustSaturation", [flt_image, saturation_factor], {}).outputs[0]
        return _convert(adjusted, orig_dtype)


def rgb_to_hsv(images, name=None):
    return apply_op("RGBToHSV", [images], {}, name).outputs[0]


def hsv_to_rgb(images, name=None):
    return apply_op("HSVToRGB", [images], {}, name).outputs[0]


def grayscale_to_rgb(images, name=None):
    tf = _tf()
    with name_scope(name, "grayscale_to_rgb", [images]) as name:
        images = convert_to_tensor(images, name="images")
        shape = images.shape
        if shape.ndims is not None:
            if shape.ndims < 2:
                raise ValueError("'image' must be at least two-dimensional.")
            if shape[-1].value is not None and shape[-1].value != 1:
                raise ValueError("Last dimension of a grayscale image should be size 1.")
        images = _with_deps([], images)  # _AssertGrayscaleImage
        rank_1 = tf.expand_dims(tf.rank(images) - 1, 0)
        shape_list = [tf.ones(rank_1, dtype=dtypes.int32)] + [tf.expand_dims(3, 0)]
        multiples = tf.concat(shape_list, 0)
        rgb = tf.tile(images, multiples, name=name)
        if shape.ndims is not None:
            rgb.set_shape(shape[:-1].concatenate([3]))
        return rgb


_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617], [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512], [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _color_matrix(images, matrix):
    """math_ops.tensordot(images, kernel, [[ndims - 1], [0]]): Reshape, MatMul, Reshape."""
    tf = _tf()
    images = convert_to_tensor(images, name="images")
    kernel = convert_to_tensor(np.asarray(matrix, images.dtype.as_numpy_dtype), name="kernel")
    with name_scope(None, "Tensordot", [images, kernel]) as name:
        shape = images.shape
        if shape.is_fully_defined():
            dims = shape.as_list()
            flat = tf.reshape(images, [int(np.prod(dims[:-1])), dims[-1]])
            out_shape = dims[:-1] + [3]
        else:
            dyn = tf.shape(images)
            flat = tf.reshape(images, tf.stack([tf.reduce_prod(dyn[:-1]), 3]))
            out_shape = tf.concat([dyn[:-1], [3]], 0)
        product = tf.matmul(flat, kernel)
        out = tf.reshape(product, out_shape, name=name)
        if shape.ndims is not None:
            out.set_shape(shape[:-1].concatenate([3]))
        return out


def rgb_to_yiq(images):
    return _color_matrix(images, _RGB_TO_YIQ)


def yiq_to_rgb(images):
    return _color_matrix(images, _YIQ_TO_RGB)


def rgb_to_yuv(images):
    return _color_matrix(images, _RGB_TO_YUV)


def yuv_to_rgb(images):
    return _color_matrix(images, _YUV_TO_RGB)


def _uniform(lower, upper, seed):
    return _tf().random_uniform([], lower, upper, seed=seed)


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _uniform(-max_delta, max_delta, seed))


def random_contrast(image, lower, upper, seed=None):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_contrast(image, _uniform(lower, upper, seed))


def random_hue(image, max_delta, seed=None):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, _uniform(-max_delta, max_delta, seed))


def random_saturation(image, lower, upper, seed=None):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_saturation(image, _uniform(lower, upper, seed))


def random_crop(value, size, seed=None, name=None):
    """tf.random_crop / tf.image.random_crop: a slice at a uniformly random offset."""
    tf = _tf()
    with name_scope(name, "random_crop", [value, size]) as name:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = tf.shape(value)
        check = tf.Assert(tf.reduce_all(shape >= size), ["Need value.shape >= size, got ", shape, size],
                          summarize=1000)
        with tf.control_dependencies([check]):
            shape = tf.identity(shape)
        limit = shape - size + 1
        offset = tf.random_uniform(tf.shape(shape), dtype=size.dtype, maxval=size.dtype.max, seed=seed) % limit
        return tf.slice(value, offset, size, name=name)


def _is_tensor(x):
    from ..graph import Tensor

    return isinstance(x, Tensor)


def _check(cond, msg, ops):
    if _is_tensor(cond):
        ops.append(_tf().Assert(cond, [msg]))
    elif not cond:
        raise ValueError(msg)


def _batched(image):
    tf = _tf()
    image = convert_to_tensor(image, name="image")
    ndims = image.shape.ndims
    if ndims == 3:
        return tf.expand_dims(image, 0), False
    if ndims is None:
        image = tf.expand_dims(image, 0)
        image.set_shape([None] * 4)
        return image, False
    if ndims != 4:
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image, True


def _dims4(image):
    tf = _tf()
    static = image.shape.as_list()
    if all(d is not None for d in static):
        return static
    dynamic = tf.unstack(tf.shape(image), 4)
    return [s if s is not None else d for s, d in zip(static, dynamic)]


def _with_deps(ops, tensor):
    """control_flow_ops.with_dependencies (an Identity "control_dependency", also with no ops)."""
    from .control_flow_ops import with_dependencies

    return with_dependencies(ops, tensor)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    tf = _tf()
    with name_scope(None, "pad_to_bounding_box", [image]):
        image, is_batch = _batched(image)
        batch, height, width, depth = _dims4(image)
        after_padding_width = target_width - offset_width - width
        after_padding_height = target_height - offset_height - height
        checks = []
        _check(offset_height >= 0, "offset_height must be >= 0", checks)
        _check(offset_width >= 0, "offset_width must be >= 0", checks)
        _check(after_padding_width >= 0, "width must be <= target - offset", checks)
        _check(after_padding_height >= 0, "height must be <= target - offset", checks)
        image = _with_deps(checks, image)
        paddings = tf.reshape(tf.stack([0, 0, offset_height, after_padding_height, offset_width,
                                        after_padding_width, 0, 0]), [4, 2])
        padded = tf.pad(image, paddings)
        padded.set_shape([None if _is_tensor(i) else i for i in [batch, target_height, target_width, depth]])
        if not is_batch:
            padded = tf.squeeze(padded, axis=[0])
        return padded


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    tf = _tf()
    with name_scope(None, "crop_to_bounding_box", [image]):
        image, is_batch = _batched(image)
        batch, height, width, depth = _dims4(image)
        checks = []
        _check(offset_width >= 0, "offset_width must be >= 0.", checks)
        _check(offset_height >= 0, "offset_height must be >= 0.", checks)
        _check(target_width > 0, "target_width must be > 0.", checks)
        _check(target_height > 0, "target_height must be > 0.", checks)
        _check(width >= target_width + offset_width, "width must be >= target + offset.", checks)
        _check(height >= target_height + offset_height, "height must be >= target + offset.", checks)
        image = _with_deps(checks, image)
        cropped = tf.slice(image, tf.stack([0, offset_height, offset_width, 0]),
                           tf.stack([tf.shape(image)[0], target_height, target_width, tf.shape(image)[3]]))
        cropped.set_shape([None if _is_tensor(i) else i for i in [batch, target_height, target_width, depth]])
        if not is_batch:
            cropped = tf.squeeze(cropped, axis=[0])
        return cropped


def resize_image_with_crop_or_pad(image, target_height, target_width):
    tf = _tf()
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, is_batch = _batched(image)
        checks = []
        _check(target_width > 0, "target_width must be > 0.", checks)
        _check(target_height > 0, "target_height must be > 0.", checks)
        image = _with_deps(checks, image)

        def max_(x, y):
            return tf.maximum(x, y) if _is_tensor(x) or _is_tensor(y) else max(x, y)

        def min_(x, y):
            return tf.minimum(x, y) if _is_tensor(x) or _is_tensor(y) else min(x, y)

        _, height, width, _ = _dims4(image)
        width_diff = target_width - width
        offset_crop_width = max_(-width_diff // 2, 0)
        offset_pad_width = max_(width_diff // 2, 0)
        height_diff = target_height - height
        offset_crop_height = max_(-height_diff // 2, 0)
        offset_pad_height = max_(height_diff // 2, 0)
        cropped = crop_to_bounding_box(image, offset_crop_height, offset_crop_width, min_(target_height, height),
                                       min_(target_width, width))
        resized = pad_to_bounding_box(cropped, offset_pad_height, offset_pad_width, target_height, target_width)
        checks = []
        _, resized_height, resized_width, _ = _dims4(resized)
        for got, want, what in ((resized_height, target_height, "height"), (resized_width, target_width, "width")):
            _check(tf.equal(got, want) if _is_tensor(got) or _is_tensor(want) else got == want,
                   f"resized {what} is not correct.", checks)
        resized = _with_deps(checks, resized)
        if not is_batch:
            resized = tf.squeeze(resized, axis=[0])
        return resized


def rot90(image, k=1, name=None):
    tf = _tf()
    with name_scope(name, "rot90", [image, k]) as scope:
        image = convert_to_tensor(image, name="image")
        image = _with_deps([], image)
        k = convert_to_tensor(k, dtype=dtypes.int32, name="k")
        k.shape.assert_has_rank(0)
        k_value = constant_value(k)
        k = tf.mod(k, 4)
        ndims = image.shape.ndims
        if ndims == 3:
            h, w, perm = 0, 1, [1, 0, 2]
        elif ndims == 4:
            h, w, perm = 1, 2, [0, 2, 1, 3]
        else:
            raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
        branches = {1: lambda: tf.transpose(tf.reverse_v2(image, [w]), perm),
                    2: lambda: tf.reverse_v2(image, [h, w]),
                    3: lambda: tf.reverse_v2(tf.transpose(image, perm), [w])}
        square = image.shape[h].value is not None and image.shape[h].value == image.shape[w].value
        if k_value is not None and not square:
            # TF's tf.case of the four rotations has branches of different shapes, which tfc
            # does not compile: with k known, only the rotation it selects
            result = branches[int(k_value) % 4]() if int(k_value) % 4 else image
            result = tf.identity(result, name=scope)
        else:
            cases = [(tf.equal(k, i), branches[i]) for i in (1, 2, 3)]
            result = tf.case(cases, default=lambda: image, exclusive=True, name=scope)
        if ndims == 3:
            result.set_shape([None, None, image.shape[2]])
        else:
            result.set_shape([image.shape[0], None, None, image.shape[3]])
        return result


def transpose_image(image, name=None):
    tf = _tf()
    with name_scope(name, "transpose", [image]):
        image = convert_to_tensor(image, name="image")
        image = _with_deps([], image)
        ndims = image.shape.ndims
        if ndims == 3:
            return tf.transpose(image, [1, 0, 2], name=name)
        if ndims == 4:
            return tf.transpose(image, [0, 2, 1, 3], name=name)
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")


def total_variation(images, name=None):
    tf = _tf()
    with name_scope(name, "total_variation"):
        images = convert_to_tensor(images)
        ndims = images.shape.ndims
        if ndims == 3:
            pixel_dif1 = images[1:, :, :] - images[:-1, :, :]
            pixel_dif2 = images[:, 1:, :] - images[:, :-1, :]
            sum_axis = None
        elif ndims == 4:
            pixel_dif1 = images[:, 1:, :, :] - images[:, :-1, :, :]
            pixel_dif2 = images[:, :, 1:, :] - images[:, :, :-1, :]
            sum_axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        tot_var = (tf.reduce_sum(tf.abs(pixel_dif1), axis=sum_axis)
                   + tf.reduce_sum(tf.abs(pixel_dif2), axis=sum_axis))
    return tot_var


def image_gradients(image):
    tf = _tf()
    image = convert_to_tensor(image)
    if image.shape.ndims != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not {}.".format(image.shape))
    image_shape = tf.shape(image)
    batch_size, height, width, depth = tf.unstack(image_shape)
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    shape = tf.stack([batch_size, 1, width, depth])
    dy = tf.concat([dy, tf.zeros(shape, image.dtype)], 1)
    dy = tf.reshape(dy, image_shape)
    shape = tf.stack([batch_size, height, 1, depth])
    dx = tf.concat([dx, tf.zeros(shape, image.dtype)], 2)
    dx = tf.reshape(dx, image_shape)
    return dy, dx


def sobel_edges(image):
    tf = _tf()
    image = convert_to_tensor(image)
    static_image_shape = image.shape
    image_shape = tf.shape(image)
    kernels = [[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]
    num_kernels = len(kernels)
    kernels = np.expand_dims(np.transpose(np.asarray(kernels), (1, 2, 0)), -2)
    kernels_tf = tf.constant(kernels, dtype=image.dtype)
    kernels_tf = tf.tile(kernels_tf, [1, 1, image_shape[-1], 1], name="sobel_filters")
    padded = tf.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = tf.nn.depthwise_conv2d(padded, kernels_tf, [1, 1, 1, 1], "VALID")
    shape = tf.concat([image_shape, [num_kernels]], 0)
    output = tf.reshape(output, shape=shape)
    output.set_shape(static_image_shape.concatenate([num_kernels]))
    return output


def psnr(a, b, max_val, name=None):
    tf = _tf()
    with name_scope(name, "PSNR", [a, b]):
        a = convert_to_tensor(a)
        b = convert_to_tensor(b)
        max_val = tf.cast(max_val, a.dtype)
        max_val = _convert(max_val, dtypes.float32)
        a = _convert(a, dtypes.float32)
        b = _convert(b, dtypes.float32)
        mse = tf.reduce_mean(tf.squared_difference(a, b), [-3, -2, -1])
        psnr_val = tf.subtract(20 * tf.log(max_val) / tf.log(10.0), np.float32(10 / np.log(10)) * tf.log(mse),
                               name="psnr")
        a.shape.with_rank_at_least(3)[-3:].assert_is_compatible_with(b.shape.with_rank_at_least(3)[-3:])
        shape1, shape2 = tf.shape_n([a, b])
        checks = [tf.Assert(tf.greater_equal(tf.size(shape1), 3), [shape1, shape2], summarize=10),
                  tf.Assert(tf.reduce_all(tf.equal(shape1[-3:], shape2[-3:])), [shape1, shape2], summarize=10)]
        with tf.control_dependencies(checks):
            return tf.identity(psnr_val)


IMAGE_EXPORTS = {
    "adjust_brightness": adjust_brightness, "adjust_contrast": adjust_contrast, "adjust_gamma": adjust_gamma,
    "adjust_hue": adjust_hue, "adjust_saturation": adjust_saturation, "rgb_to_hsv": rgb_to_hsv,
    "hsv_to_rgb": hsv_to_rgb, "grayscale_to_rgb": grayscale_to_rgb, "rgb_to_yiq": rgb_to_yiq,
    "yiq_to_rgb": yiq_to_rgb, "rgb_to_yuv": rgb_to_yuv, "yuv_to_rgb": yuv_to_rgb,
    "random_brightness": random_brightness, "random_contrast": random_contrast, "random_hue": random_hue,
    "random_saturation": random_saturation, "random_crop": random_crop,
    "crop_to_bounding_box": crop_to_bounding_box, "pad_to_bounding_box": pad_to_bounding_box,
    "resize_image_with_crop_or_pad": resize_image_with_crop_or_pad,
    "resize_with_crop_or_pad": resize_image_with_crop_or_pad, "rot90": rot90,
    "transpose_image": transpose_image, "transpose": transpose_image, "total_variation": total_variation,
    "image_gradients": image_gradients, "sobel_edges": sobel_edges, "psnr": psnr,
    "extract_image_patches": extract_image_patches, "extract_patches": extract_patches,
}
TF_EXPORTS = {"random_crop": random_crop, "extract_image_patches": extract_image_patches}
