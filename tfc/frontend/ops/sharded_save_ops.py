"""The string ops of TensorFlow's sharded save graph, as host ops.

A ``tf.train.Saver(sharded=True)`` built by TensorFlow (the Saver of every SavedModel
that TF's ``SavedModelBuilder`` or ``simple_save`` writes) names its temporary shard
files with ``StaticRegexFullMatch`` (is the prefix an ``s3://`` path?), ``StringJoin`` and
``ShardedFilename``. They are registered here so that such graphs import (and their string
computation runs on the host, as TF's kernels compute it). An op type that another module
already defines is left to it.
"""
from __future__ import annotations

import re

import numpy as np

from . import inference_context as ic
from ..registry import Attr, OpType, is_registered, register
from ..tensor_shape import TensorShape


def _register(cls):
    """register(), unless another module already defines this op type."""
    name = cls.__dict__.get("type_name") or cls.__name__
    return cls if is_registered(name) else register(cls)


def _bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", errors="surrogateescape")


def _strings(value) -> np.ndarray:
    array = np.asarray(value, dtype=object)
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = _bytes(item)
    return out


@_register
class StaticRegexFullMatch(OpType):
    """Whether each string fully matches ``pattern`` (RE2 in TF; Python's re here)."""

    inputs = ["input: string"]
    outputs = ["output: bool"]
    attrs = {"pattern": Attr("string")}
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        pattern = re.compile(_bytes(op._attrs["pattern"]))
        strings = _strings(value)
        out = np.zeros(strings.shape, dtype=np.bool_)
        for index, item in np.ndenumerate(strings):
            out[index] = pattern.fullmatch(item) is not None
        return [out]


@_register
class StringJoin(OpType):
    """Joins strings elementwise (scalars broadcast), with ``separator`` between them."""

    inputs = ["inputs: N * string"]
    outputs = ["output: string"]
    attrs = {"N": Attr("int"), "separator": Attr("string", "")}
    not_differentiable = True

    def infer(op):
        shape = TensorShape([])
        for t in op.inputs:
            if t.shape.ndims != 0:
                shape = shape.merge_with(t.shape) if shape.ndims != 0 else t.shape
        return [shape]

    def host(op, *values):
        from ..errors import InvalidArgumentError

        arrays = [_strings(v) for v in values]
        shapes = {a.shape for a in arrays if a.ndim}
        if len(shapes) > 1:
            first, other = sorted(shapes)[:2]
            raise InvalidArgumentError(None, op, f"Input shapes do not match: [{','.join(map(str, first))}] vs. "
                                                 f"[{','.join(map(str, other))}]")
        shape = shapes.pop() if shapes else ()
        separator = _bytes(op._attrs["separator"])
        out = np.empty(shape, dtype=object)
        for index in np.ndindex(*shape):
            out[index] = separator.join(a[index] if a.ndim else a[()] for a in arrays)
        return [out]


@_register
class ShardedFilename(OpType):
    """``basename-00000-of-00001``: the name of one shard's file, as TF's ShardedFilename."""

    inputs = ["basename: string", "shard: int32", "num_shards: int32"]
    outputs = ["filename: string"]
    attrs = {}
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    def host(op, basename, shard, num_shards):
        name = b"%s-%05d-of-%05d" % (_bytes(np.asarray(basename, dtype=object)[()]), int(shard), int(num_shards))
        return [np.array(name, dtype=object)]
