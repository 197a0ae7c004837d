"""Compiled kernels for the ops whose output sizes depend on the values.

tf.where's indices, tf.unique (and unique_with_counts), tf.dynamic_partition and
tf.setdiff1d cannot give the compiler their output shapes. Each is computed by a compiled
program whose outputs are sized by an upper bound that *is* known from the input shapes (a
where over n elements has at most n rows), padded past the valid rows, together with the
number of valid rows, which the program computes and reports back. The runtime returns the
first ``count`` rows of each padded output: a view, no copy. The core of each program is
one of two scan ops (tfc/ir/ops.py, kernels in tfc/codegen/kernels/compaction.py):

- ``compact`` lists the positions of the nonzero elements of a mask, in order, then -1;
- ``first_occurrence`` gives, for each element, the position of the first equal one
  (a hash table: O(n), as TF's kernels use hash maps).

Everything around them (the mask, the unravelled coordinates, gathers of the selected rows,
a unique's inverse index and counts) is ordinary IR, fused and buffered by the usual
passes. A program is compiled once per op kind, element type and attributes, and serves
every size (its dims are symbols; only a dim of 1 gets its own program, as everywhere).

These are the ``host`` functions of the graph ops (tfc/runtime/host.py): a compiled op
that consumes the result runs in a later stage of the step, fed the trimmed value, whose
size binds that program's shape symbols like any feed. In eager mode the same kernels run
per call. String elements (and the few dtypes the IR has no element type for) stay numpy
host computations, as strings do everywhere.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import dtypes
from ..registry import Attr, OpType, register

_KERNELS: dict = {}  # (kind, key...) -> _BoundedKernel; filled once per kind and element type
_LOCK = threading.Lock()


@register
class TfcCompact(OpType):
    """Internal: the positions of x's nonzero elements, then -1 (core ``compact``)."""

    inputs = ["x: T"]
    outputs = ["positions: int64"]
    attrs = {"T": Attr("type")}
    not_differentiable = True

    def infer(op):
        return [op._inputs[0].shape]

    def lower(ctx, op, x):
        return ctx.b.value("compact", [x])


@register
class TfcFirstOccurrence(OpType):
    """Internal: for each element, the position of the first one equal to it (core
    ``first_occurrence``)."""

    inputs = ["x: T"]
    outputs = ["first: int64"]
    attrs = {"T": Attr("type")}
    not_differentiable = True

    def infer(op):
        return [op._inputs[0].shape]

    def lower(ctx, op, x):
        return ctx.b.value("first_occurrence", [x])


def compilable(dtype) -> bool:
    """Has the IR an element type for ``dtype`` (strings and uint16/32/64 do not)?"""
    from tfc.passes.lower import LoweringError, ir_elem

    try:
        ir_elem(dtype)
    except LoweringError:
        return False
    return True


class _BoundedKernel:
    """A compiled program over placeholders of unknown sizes, called on numpy arrays."""

    def __init__(self, build, input_dtypes: list, sample_shapes: list):
        from tfc.compiler import compile_module
        from tfc.passes.lower import FeedSpec, lower_graph

        from ..graph import Graph
        from ..tensor_shape import TensorShape

        graph = Graph()
        with graph.as_default():
            placeholders = []
            for i, (dtype, shape) in enumerate(zip(input_dtypes, sample_shapes)):
                static = TensorShape([1 if d == 1 else None for d in shape])
                placeholders.append(graph.create_op("Placeholder", [], name=f"x{i}",
                                                    attrs={"dtype": dtype, "shape": static}).outputs[0])
            outputs = build(*placeholders)
        specs = [FeedSpec(p, p.dtype.base_dtype, shape) for p, shape in zip(placeholders, sample_shapes)]
        lowered = lower_graph(list(outputs), [], specs)
        self.module = lowered.module  # the IR before the passes (dumps, tests)
        self.executable = compile_module(lowered.module, constraints=lowered.constraints).executable
        self.numpy_dtypes = [dtypes.as_dtype(d).as_numpy_dtype for d in input_dtypes]

    def __call__(self, *arrays) -> list:
        values = [np.ascontiguousarray(a, dtype=d) for a, d in zip(arrays, self.numpy_dtypes)]
        return self.executable.run(values)


def _kernel(key: tuple, build, input_dtypes: list, arrays: list) -> _BoundedKernel:
    ones = tuple(tuple(d == 1 for d in np.shape(a)) for a in arrays)
    full_key = key + (ones,)
    kernel = _KERNELS.get(full_key)
    if kernel is None:
        with _LOCK:
            kernel = _KERNELS.get(full_key)
            if kernel is None:
                kernel = _BoundedKernel(build, input_dtypes, [np.shape(a) for a in arrays])
                _KERNELS[full_key] = kernel
    return kernel


def _tf():
    import tfc.compat.v1 as tf

    return tf


def _compact(mask):
    """(positions padded with -1, count) of a bool vector."""
    tf = _tf()
    positions = _apply("TfcCompact", mask)
    count = tf.reduce_sum(tf.cast(mask, tf.int64))
    return positions, count


def _apply(op_type: str, x):
    from ..op_helper import apply_op

    return apply_op(op_type, [x]).outputs[0]


# -- tf.where(condition) -----------------------------------------------------------------------
def _build_where(flat, strides, dims):
    tf = _tf()
    mask = flat if flat.dtype.base_dtype == dtypes.bool else tf.not_equal(flat, tf.zeros([], flat.dtype))
    positions, count = _compact(mask)
    coordinates = tf.floormod(tf.floordiv(tf.expand_dims(positions, 1), strides), dims)
    return [coordinates, count]


def where_indices(condition: np.ndarray) -> np.ndarray:
    """The [count, rank] int64 coordinates of the nonzero elements, in row-major order."""
    condition = np.asarray(condition)
    flat = condition.reshape(-1)
    shape = np.asarray(condition.shape, dtype=np.int64)
    strides = np.asarray([int(np.prod(condition.shape[d + 1:])) for d in range(condition.ndim)], dtype=np.int64)
    dtype = dtypes.as_dtype(condition.dtype)
    kernel = _kernel(("where", dtype.name), _build_where, [dtype, dtypes.int64, dtypes.int64],
                     [flat, strides, shape])
    coordinates, count = kernel(flat, strides, shape)
    return coordinates[:int(count)]


# -- tf.unique / tf.unique_with_counts ------------------------------------------------------
def _build_unique(x):
    tf = _tf()
    size = tf.size(x, out_type=tf.int64)
    first = _apply("TfcFirstOccurrence", x)
    iota = tf.range(size)
    positions, count = _compact(tf.equal(first, iota))
    values = tf.gather(x, tf.maximum(positions, 0))
    rank = tf.unsorted_segment_sum(iota, positions, size)  # positions[k] -> k; the -1 padding is dropped
    index = tf.gather(rank, first)
    counts = tf.unsorted_segment_sum(tf.ones_like(index), index, size)
    return [values, index, counts, count]


def unique(x: np.ndarray) -> tuple:
    """(unique values in order of first occurrence, each element's index into them, counts)."""
    dtype = dtypes.as_dtype(x.dtype)
    kernel = _kernel(("unique", dtype.name), _build_unique, [dtype], [x])
    values, index, counts, count = kernel(x)
    count = int(count)
    return values[:count], index, counts[:count]


# -- tf.setdiff1d ------------------------------------------------------------------------------
def _build_setdiff(x, y):
    tf = _tf()
    size_y = tf.size(y, out_type=tf.int64)
    both = tf.concat([y, x], 0)
    first = _apply("TfcFirstOccurrence", both)
    keep = tf.greater_equal(first, size_y)  # an element of x whose first equal element is not in y
    positions, count = _compact(keep)
    return [tf.gather(both, tf.maximum(positions, 0)), positions - size_y, count]


def setdiff1d(x: np.ndarray, y: np.ndarray) -> tuple:
    """(the elements of x not in y, in order; their positions in x)."""
    dtype = dtypes.as_dtype(x.dtype)
    kernel = _kernel(("setdiff1d", dtype.name), _build_setdiff, [dtype, dtype], [x, y])
    values, positions, count = kernel(x, y)
    count = int(count)
    return values[:count], positions[:count]


# -- tf.dynamic_partition ----------------------------------------------------------------------
def _partition_builder(count: int):
    def build(rows, partitions):
        tf = _tf()
        outputs, counts = [], []
        for p in range(count):
            positions, selected = _compact(tf.equal(partitions, p))
            outputs.append(tf.gather(rows, tf.maximum(positions, 0)))
            counts.append(selected)
        return outputs + counts

    return build


def dynamic_partition(data: np.ndarray, partitions: np.ndarray, count: int) -> tuple:
    """(the rows of data per partition, in order; the number of rows placed), data viewed
    as [partitions.size, rest] rows."""
    keys = partitions.reshape(-1)
    rows = data.reshape((keys.size, -1)) if keys.size else data.reshape((0, int(np.prod(data.shape[partitions.ndim:]))))
    dtype = dtypes.as_dtype(data.dtype)
    kernel = _kernel(("dynamic_partition", dtype.name, count), _partition_builder(count),
                     [dtype, dtypes.int32], [rows, keys])
    results = kernel(rows, keys)
    padded, counts = results[:count], [int(c) for c in results[count:]]
    tail = data.shape[partitions.ndim:]
    parts = [p[:c].reshape((c,) + tail) for p, c in zip(padded, counts)]
    return parts, sum(counts)


def clear_cache() -> None:
    """Forget the compiled kernels (tests counting compiles)."""
    _KERNELS.clear()

