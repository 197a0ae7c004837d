"""tf.image (TF 1.15's image_ops_impl): flips, random flips, per-image standardization,
central crop, grayscale and dtype conversion, built from compiled ops as TF builds them."""
from __future__ import annotations

from . import dtypes
from .convert import convert_to_tensor
from .graph import name_scope


def _ops():
    import tfc.compat.v1 as tf  # the assembled namespace (its ops come from many modules)

    return tf


def _check_image(image, require_static=False):
    shape = image.shape
    if shape.ndims is None:
        if require_static:
            raise ValueError(f"'image' ({image.name}) must be fully defined.")
        return
    if shape.ndims < 3:
        raise ValueError(f"'image' (shape {shape}) must be at least three-dimensional.")
    if require_static and not shape.is_fully_defined():
        raise ValueError(f"'image' ({image.name}) must be fully defined.")
    if any(d == 0 for d in shape.as_list()[-3:]):
        raise ValueError(f"all dims of 'image.shape' must be > 0: {shape}")


def _flip(image, flip_index, scope_name):
    tf = _ops()
    with name_scope(None, scope_name, [image]):
        image = convert_to_tensor(image, name="image")
        _check_image(image)
        ndims = image.shape.ndims
        if ndims == 3:
            return tf.reverse(image, [flip_index])
        if ndims == 4:
            return tf.reverse(image, [flip_index + 1])
        raise ValueError("'image' must have either 3 or 4 dimensions.")


def flip_left_right(image):
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image):
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, flip_index, seed, scope_name):
    tf = _ops()
    with name_scope(None, scope_name, [image]) as scope:
        image = convert_to_tensor(image, name="image")
        _check_image(image)
        ndims = image.shape.ndims
        if ndims == 3:
            uniform_random = tf.random_uniform([], 0, 1.0, seed=seed)
            mirror_cond = tf.less(uniform_random, .5)
            return tf.cond(mirror_cond, lambda: tf.reverse(image, [flip_index]), lambda: image, name=scope)
        if ndims == 4:
            batch_size = tf.shape(image)[0]
            uniform_random = tf.random_uniform([batch_size], 0, 1.0, seed=seed)
            flips = tf.round(tf.reshape(uniform_random, [batch_size, 1, 1, 1]))
            flips = tf.cast(flips, image.dtype)
            flipped_input = tf.reverse(image, [flip_index + 1])
            return flips * flipped_input + (1 - flips) * image
        raise ValueError("'image' must have either 3 or 4 dimensions.")


def random_flip_left_right(image, seed=None):
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, 0, seed, "random_flip_up_down")


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1/sqrt(num_pixels)) per image, as float32 (TF 1.15)."""
    tf = _ops()
    with name_scope(None, "per_image_standardization", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        _check_image(image)
        num_pixels = tf.reduce_prod(tf.shape(image)[-3:])
        image = tf.cast(image, dtype=dtypes.float32)
        image_mean = tf.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        variance = (tf.reduce_mean(tf.square(image), axis=[-1, -2, -3], keepdims=True) - tf.square(image_mean))
        variance = tf.nn.relu(variance)
        stddev = tf.sqrt(variance)
        min_stddev = tf.rsqrt(tf.cast(num_pixels, dtypes.float32))
        pixel_value_scale = tf.maximum(stddev, min_stddev)
        pixel_value_offset = image_mean
        image = tf.subtract(image, pixel_value_offset)
        image = tf.div(image, pixel_value_scale, name=scope)
        return image


def central_crop(image, central_fraction):
    """The central ``central_fraction`` of each image (static height and width)."""
    tf = _ops()
    with name_scope(None, "central_crop", [image]):
        image = convert_to_tensor(image, name="image")
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        _check_image(image)
        rank = image.shape.ndims
        if rank not in (3, 4):
            raise ValueError("`image` should either be a Tensor with rank = 3 or rank = 4. Had rank = {}.".format(rank))
        dims = image.shape.as_list()
        img_h, img_w = dims[-3], dims[-2]
        if img_h is None or img_w is None:
            raise NotImplementedError("tfc's tf.image.central_crop needs the image's height and width known")
        bbox_h_start = int((float(img_h) - float(img_h) * central_fraction) / 2)
        bbox_w_start = int((float(img_w) - float(img_w) * central_fraction) / 2)
        bbox_h_size = img_h - bbox_h_start * 2
        bbox_w_size = img_w - bbox_w_start * 2
        if rank == 3:
            bbox_begin = tf.stack([bbox_h_start, bbox_w_start, 0])
            bbox_size = tf.stack([bbox_h_size, bbox_w_size, -1])
        else:
            bbox_begin = tf.stack([0, bbox_h_start, bbox_w_start, 0])
            bbox_size = tf.stack([-1, bbox_h_size, bbox_w_size, -1])
        image = tf.slice(image, bbox_begin, bbox_size)
        return image


def _saturate_cast(value, dtype):
    tf = _ops()
    with name_scope(None, "saturate_cast", [value]) as name:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        if value.dtype.min < dtype.min:
            value = tf.maximum(value, tf.cast(dtype.min, value.dtype))
        if value.dtype.max > dtype.max:
            value = tf.minimum(value, tf.cast(dtype.max, value.dtype))
        return tf.cast(value, dtype, name=name)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """TF 1.15's convert_image_dtype: integers scale by their max, floats are in [0, 1)."""
    tf = _ops()
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype:
        return tf.identity(image, name=name)
    with name_scope(name, "convert_image", [image]) as name:
        if image.dtype.is_integer and dtype.is_integer:
            scale_in, scale_out = image.dtype.max, dtype.max
            if scale_in > scale_out:
                scale = (scale_in + 1) // (scale_out + 1)
                scaled = tf.floordiv(image, scale)
                return _saturate_cast(scaled, dtype) if saturate else tf.cast(scaled, dtype, name=name)
            cast = _saturate_cast(image, dtype) if saturate else tf.cast(image, dtype)
            scale = (scale_out + 1) // (scale_in + 1)
            return tf.multiply(cast, scale, name=name)
        if image.dtype.is_floating and dtype.is_floating:
            return tf.cast(image, dtype, name=name)
        if image.dtype.is_integer:
            cast = tf.cast(image, dtype)
            scale = 1. / image.dtype.max
            return tf.multiply(cast, scale, name=name)
        scale = dtype.max + 0.5  # avoid rounding problems in the cast
        scaled = tf.multiply(image, scale)
        return _saturate_cast(scaled, dtype) if saturate else tf.cast(scaled, dtype, name=name)


def rgb_to_grayscale(images, name=None):
    """0.2989 R + 0.5870 G + 0.1140 B, in the images' dtype."""
    tf = _ops()
    with name_scope(name, "rgb_to_grayscale", [images]) as name:
        images = convert_to_tensor(images, name="images")
        orig_dtype = images.dtype
        flt_image = convert_image_dtype(images, dtypes.float32)
        rgb_weights = tf.constant([0.2989, 0.5870, 0.1140], dtypes.float32)
        gray_float = tf.reduce_sum(flt_image * rgb_weights, axis=-1)  # TF: tensordot(flt_image, rgb_weights, [-1, -1])
        gray_float = tf.expand_dims(gray_float, -1)
        return convert_image_dtype(gray_float, orig_dtype, name=name)


EXPORTS = {
    "flip_left_right": flip_left_right, "flip_up_down": flip_up_down,
    "random_flip_left_right": random_flip_left_right, "random_flip_up_down": random_flip_up_down,
    "per_image_standardization": per_image_standardization, "central_crop": central_crop,
    "convert_image_dtype": convert_image_dtype, "rgb_to_grayscale": rgb_to_grayscale,
}
