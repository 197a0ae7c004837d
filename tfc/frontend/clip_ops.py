"""TF 1.15's clipping functions (tensorflow/python/ops/clip_ops.py): ``tf.clip_by_value``,
``tf.clip_by_norm``, ``tf.global_norm``, ``tf.clip_by_global_norm`` and
``tf.clip_by_average_norm``, built from the library's ops with TensorFlow 1.15's graphs
(op names and types in order), static shape checks and errors.

TF 1.15 differs from TF 2.x here in ways this module follows (1.15's side):
``clip_by_global_norm`` makes the scale NaN for a non-finite norm with
``Select(IsFinite(norm), scale, nan)`` (2.x: ``scale + (norm - norm)``); ``clip_by_norm``
uses a tensor ``clip_norm`` as is (2.x clamps and casts it); the shape checks use
``merge_with`` ("Shapes ... are not compatible"); a non-sequence ``t_list`` raises
``TypeError("t_list should be a sequence")``.

tfc has no ``IndexedSlices``; an object with ``values``/``indices``/``dense_shape`` (what
TF would treat as IndexedSlices) is refused with a TypeError.
"""
from __future__ import annotations

import collections.abc

from . import dtypes
from .convert import convert_to_tensor
from .graph import colocate_with, name_scope
from .ops import math_ops, nn_ops
from .ops.array_ops import identity, ones_like, rank, size
from .ops.concat_ops import stack
from .ops.constant_op import constant
from .ops.selection_ops import range as _range
from .ops.selection_ops import where


def _check_dense(t, function: str):
    """Refuse IndexedSlices-like values: tfc has no IndexedSlices."""
    if t is not None and all(hasattr(t, attr) for attr in ("values", "indices", "dense_shape")):
        raise TypeError(f"{function}: IndexedSlices inputs are not supported by tfc (it has no IndexedSlices); "
                        f"got {type(t).__name__}. Convert it to a dense Tensor first.")


def _check_sequence(t_list):
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError("t_list should be a sequence")


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips tensor values to [clip_value_min, clip_value_max]: ``Minimum`` with the max,
    then ``Maximum`` with the min (named as the scope). A bound that would broadcast the
    result to a shape incompatible with ``t``'s raises TF's ValueError."""
    _check_dense(t, "clip_by_value")
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = convert_to_tensor(t, name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        # Assert that the shape is compatible with the initial shape, to prevent
        # unintentional broadcasting.
        _ = values.shape.merge_with(t_min.shape)
        t_max = math_ops.maximum(t_min, clip_value_min, name=name)
        _ = values.shape.merge_with(t_max.shape)
    return t_max


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Clips ``t`` to a maximum L2-norm over ``axes`` (all axes by default):
    ``t * clip_norm / maximum(l2norm(t), clip_norm)``, with TF's two-tap ``Select`` that
    keeps the gradient of an all-zero slice finite."""
    _check_dense(t, "clip_by_norm")
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as name:
        values = convert_to_tensor(t, name="t")
        # Calculate L2-norm, clip elements by ratio of clip_norm to L2-norm
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        # Two-tap tf.where trick to bypass NaN gradients
        l2sum_safe = where(pred, l2sum, ones_like(l2sum))
        l2norm = where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        _ = values.shape.merge_with(intermediate.shape)
        values_clip = identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=name)
    return values_clip


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2-norms of the tensors of ``t_list``); None entries are
    skipped (but counted in the ``t_<i>`` names of converted values)."""
    _check_sequence(t_list)
    t_list = list(t_list)
    for t in t_list:
        _check_dense(t, "global_norm")
    with name_scope(name, "global_norm", t_list) as name:
        values = [convert_to_tensor(t, name="t_%d" % i) if t is not None else t for i, t in enumerate(t_list)]
        half_squared_norms = []
        for v in values:
            if v is not None:
                with colocate_with(v):
                    half_squared_norms.append(nn_ops.l2_loss(v))
        half_squared_norm = math_ops.reduce_sum(stack(half_squared_norms))
        norm = math_ops.sqrt(half_squared_norm * constant(2.0, dtype=half_squared_norm.dtype), name="global_norm")
    return norm


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor of ``t_list`` by ``clip_norm / maximum(global_norm, clip_norm)``;
    returns ``(list_clipped, global_norm)``. None entries stay None; a non-finite norm
    makes every clipped value NaN."""
    _check_sequence(t_list)
    t_list = list(t_list)
    for t in t_list:
        _check_dense(t, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as name:
        # Calculate L2-norm, clip elements by ratio of clip_norm to L2-norm
        scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm,
                                                        constant(1.0, dtype=use_norm.dtype) / clip_norm)
        scale = where(math_ops.is_finite(use_norm), scale_for_finite,
                      # Return NaN if use_norm is not finite.
                      constant(float("nan"), dtype=use_norm.dtype))
        values = [convert_to_tensor(t, name="t_%d" % i) if t is not None else t for i, t in enumerate(t_list)]
        values_clipped = []
        for i, v in enumerate(values):
            if v is None:
                values_clipped.append(None)
            else:
                with colocate_with(v):
                    values_clipped.append(identity(v * scale, name="%s_%d" % (name, i)))
    return values_clipped, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """Clips ``t`` to a maximum average L2-norm (the L2-norm divided by its size)."""
    _check_dense(t, "clip_by_average_norm")
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as name:
        t = convert_to_tensor(t, name="t")
        # Calculate L2-norm per element, clip elements by ratio of clip_norm to
        # L2-norm per element
        n_element = math_ops.cast(size(t), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t, _range(rank(t))))
        tclip = identity(t * clip_norm * math_ops.minimum(l2norm_inv * n_element, constant(1.0) / clip_norm),
                         name=name)
    return tclip


TF_EXPORTS = ["clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm", "clip_by_average_norm"]
