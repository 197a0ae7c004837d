"""Shape-function helpers that reproduce TF's C++ InferenceContext, messages included.

TF 1.15 runs an op's C++ shape function through ``ShapeRefiner``: first without any
input values; if the function asked for input values (``c->input_tensor(i)``) or for an
input as a partial shape (``c->MakeShapeFromShapeTensor(i)``), the refiner evaluates
those inputs and runs the function again. A failing run appends the context
" for 'name' (op: 'Type') with input shapes: [2,3], [1]" and, for the inputs whose
values were used, " and with computed input tensors: input[1] = <4>" or
" and with input tensors computed as partial shapes: input[1] = [4]".

Shapes inside a shape function are plain python: ``None`` for unknown rank, else a
list of ``int`` or ``None`` (unknown dim). :func:`run_shape_fn` drives a function
``fn(ctx) -> [shape per output]`` the way the refiner does and turns the result into
what ``OpType.infer`` returns.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..registry import ShapeError
from ..tensor_shape import TensorShape
from ..tensor_util import constant_value

MAX_SUMMARIZED_VALUES = 256  # TF's SummarizeValue(256) in the error context


# -- shapes as python lists -------------------------------------------------------------
def as_dims(shape) -> Optional[list]:
    """A TensorShape (or list) as ``None`` (unknown rank) or a list of int/None."""
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    return None if shape.dims is None else [d.value for d in shape.dims]


def debug_string(shape) -> str:
    """TF's InferenceContext::DebugString: ``[2,?]`` or ``?``."""
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def unknown_of_rank(rank: Optional[int]) -> Optional[list]:
    return None if rank is None else [None] * rank


def num_elements(shape) -> Optional[int]:
    if shape is None or any(d is None for d in shape):
        return None
    total = 1
    for d in shape:
        total *= d
    return total


# -- the checks of InferenceContext, with TF's messages ------------------------------------
def with_rank(shape, rank: int) -> list:
    if shape is None:
        return [None] * rank
    if len(shape) != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {len(shape)}")
    return shape


def with_rank_at_least(shape, rank: int):
    if shape is not None and len(shape) < rank:
        raise ShapeError(f"Shape must be at least rank {rank} but is rank {len(shape)}")
    return shape


def with_rank_at_most(shape, rank: int):
    if shape is not None and len(shape) > rank:
        raise ShapeError(f"Shape must be at most rank {rank} but is rank {len(shape)}")
    return shape


def with_value(dim: Optional[int], value: int) -> int:
    if dim is not None and dim != value:
        raise ShapeError(f"Dimension must be {value} but is {dim}")
    return value


def merge_dim(d0: Optional[int], d1: Optional[int]) -> Optional[int]:
    if d0 is None:
        return d1
    if d1 is not None and d0 != d1:
        raise ShapeError(f"Dimensions must be equal, but are {d0} and {d1}")
    return d0


def merge(s0, s1):
    """InferenceContext::Merge of two shapes (TF 1.15 messages)."""
    if s1 is None:
        return s0
    if s0 is None:
        return s1
    if len(s0) != len(s1):
        raise ShapeError(f"Shapes must be equal rank, but are {len(s0)} and {len(s1)}")
    out = []
    for i, (d0, d1) in enumerate(zip(s0, s1)):
        if d0 is not None and d1 is not None and d0 != d1:
            raise ShapeError(f"Dimension {i} in both shapes must be equal, but are {d0} and {d1}. Shapes are "
                             f"{debug_string(s0)} and {debug_string(s1)}.")
        out.append(d0 if d0 is not None else d1)
    return out


def subshape(shape, start: int, end: Optional[int] = None):
    """InferenceContext::Subshape (``end=None`` means to the end)."""
    if shape is None:
        return None
    rank = len(shape)
    start_in, end_in = start, end
    end = rank if end is None else min(end, rank)
    start = min(start, rank)
    if start < 0:
        start += rank
        if start < 0:
            raise ShapeError(f"Subshape start out of bounds: {start_in}, for shape with rank {rank}")
    if end < 0:
        end += rank
        if end < 0:
            raise ShapeError(f"Subshape end out of bounds: {end_in}, for shape with rank {rank}")
    if start > end:
        shown_end = end_in if end_in is not None else 2 ** 63 - 1
        raise ShapeError(f"Subshape must have computed start <= end, but is {start} and {end} (computed from start "
                         f"{start_in} and end {shown_end} over shape with rank {rank})")
    return shape[start:end]


def concatenate(s0, s1):
    if s0 is None or s1 is None:
        return None
    return list(s0) + list(s1)


def dim(shape, index: int) -> Optional[int]:
    """c->Dim: an unknown dim for an unknown-rank shape; negative indices count back."""
    if shape is None:
        return None
    return shape[index]


def add_dims(d0: Optional[int], d1: Optional[int]) -> Optional[int]:
    if d0 == 0:
        return d1
    if d1 == 0:
        return d0
    if d0 is None or d1 is None:
        return None
    return d0 + d1


def subtract_dims(d0: Optional[int], d1: Optional[int]) -> Optional[int]:
    if d1 == 0:
        return d0
    if d0 is None or d1 is None:
        return None
    if d0 < d1:
        raise ShapeError(f"Negative dimension size caused by subtracting {d1} from {d0}")
    return d0 - d1


def multiply_dims(d0: Optional[int], d1: Optional[int]) -> Optional[int]:
    if d0 == 0 or d1 == 0:
        return 0
    if d0 == 1:
        return d1
    if d1 == 1:
        return d0
    if d0 is None or d1 is None:
        return None
    return d0 * d1


def divide_dim(dividend: Optional[int], divisor: Optional[int], evenly_divisible: bool = True) -> Optional[int]:
    if divisor == 1:
        return dividend
    if dividend is None or divisor is None:
        return None
    if divisor <= 0:
        raise ShapeError(f"Divisor must be positive but is {divisor}")
    if evenly_divisible and dividend % divisor != 0:
        raise ShapeError(f"Dimension size must be evenly divisible by {divisor} but is {dividend}")
    return dividend // divisor


def broadcast(shape_x, shape_y):
    """BroadcastBinaryOpOutputShapeFnHelper: the numpy-style broadcast of two shapes."""
    if shape_x is None or shape_y is None:
        return None
    rank = max(len(shape_x), len(shape_y))
    padded_x = [1] * (rank - len(shape_x)) + list(shape_x)
    padded_y = [1] * (rank - len(shape_y)) + list(shape_y)
    out = []
    for dx, dy in zip(padded_x, padded_y):
        if dx is None or dy is None:
            if dx is not None and dx > 1:
                out.append(dx)
            elif dy is not None and dy > 1:
                out.append(dy)
            elif dx == 1:
                out.append(dy)
            elif dy == 1:
                out.append(dx)
            else:
                out.append(None)
        elif dx == 1 or dy == 1:
            out.append(dy if dx == 1 else dx)
        else:
            out.append(merge_dim(dx, dy))
    return out


def append_to_message(error: ShapeError, text: str) -> ShapeError:
    """errors::AppendToMessage: TF adds "\\n\\t" and the text."""
    return ShapeError(f"{error}\n\t{text}", error.context)


# -- value summaries for the error context ------------------------------------------------
def format_element(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (float, np.floating)):
        short = f"{float(value):.6g}"
        if np.asarray(float(short), dtype=np.asarray(value).dtype) != value:
            short = f"{float(value):.9g}"
        return short
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def summarize_value(value: np.ndarray, max_entries: int = MAX_SUMMARIZED_VALUES) -> str:
    """Tensor::SummarizeValue(max_entries) of TF 1.15: ``4``, ``1 2 3``, ``[1 1][2 2]``
    (tfc/program_errors.py's, which tf.Assert's messages use too)."""
    from tfc.program_errors import summarize_value as summarize

    return summarize(np.asarray(value), max_entries)


# -- the context ----------------------------------------------------------------------------
class InferenceContext:
    """One op's view during shape inference: input shapes, attrs and (maybe) input values.

    Values and partial shapes of inputs are only available once the refiner has
    materialized them (:meth:`materialize_requested`, between passes); before that a
    requested input reads as unknown (``None``), as in TF's first pass.
    """

    def __init__(self, op):
        self.op = op
        self.requested_tensor: set = set()
        self.requested_partial_shape: set = set()
        self._values: dict = {}  # input index -> np.ndarray or None (not constant)
        self._partial_shapes: dict = {}  # input index -> dims or None (unknown rank)

    @property
    def num_inputs(self) -> int:
        return len(self.op._inputs)

    def input(self, index: int) -> Optional[list]:
        return as_dims(self.op._inputs[index].shape)

    def attr(self, name: str):
        return self.op._attrs[name]

    def input_tensor(self, index: int) -> Optional[np.ndarray]:
        """c->input_tensor(i): the input's constant value once materialized, else None."""
        self.requested_tensor.add(index)
        return self._values.get(index)

    def shape_from_shape_tensor(self, index: int) -> Optional[list]:
        """c->MakeShapeFromShapeTensor(i): a 1-D int input read as a (partial) shape."""
        input_shape = with_rank(self.input(index), 1)
        self.requested_partial_shape.add(index)
        partial = self._partial_shapes.get(index)
        if partial is not None:
            return partial
        value = self.input_tensor(index)
        if value is None:
            return None if input_shape[0] is None else [None] * input_shape[0]
        return shape_from_value(value)

    def scalar_input_dim(self, index: int) -> Optional[int]:
        """c->MakeDimForScalarInput(i)."""
        value = self.input_tensor(index)
        if value is None:
            return None
        value = _scalar(value)
        if value < 0:
            raise ShapeError(f"Dimension size, given by scalar input {index}, must be non-negative but is {value}")
        return value

    def scalar_input_axis(self, index: int, input_rank: Optional[int]) -> Optional[int]:
        """c->MakeDimForScalarInputWithNegativeIndexing(i, rank): a canonical axis or None."""
        value = self.input_tensor(index)
        if value is None:
            return None
        value = _scalar(value)
        if value < 0:
            if input_rank is None:
                return None
            if value + input_rank < 0:
                raise ShapeError(f"Dimension size, given by scalar input {value} must be in range [-{input_rank}, "
                                 f"{input_rank})")
            return value + input_rank
        if input_rank is not None and value >= input_rank:
            raise ShapeError(f"Dimension size, given by scalar input {value} must be in range [-{input_rank}, "
                             f"{input_rank})")
        return value

    def materialize_requested(self) -> bool:
        """The refiner's step between passes: evaluate the newly requested inputs (values,
        then partial shapes, input by input). True when there was something new.

        An input that cannot be read as a shape fails here, outside the shape function,
        so its ValueError carries no op context (as in TF).
        """
        progressed = False
        for i in range(self.num_inputs):
            if i in self.requested_tensor and i not in self._values:
                self._values[i] = constant_value(self.op._inputs[i])
                progressed = True
            if i in self.requested_partial_shape and i not in self._partial_shapes:
                self._partial_shapes[i] = constant_partial_shape(self.op._inputs[i])
                progressed = True
        return progressed

    def error_context(self) -> str:
        """AttachContext's suffix for the input values this run actually used."""
        computed, partial = [], []
        for i in range(self.num_inputs):
            if i in self.requested_partial_shape and self._partial_shapes.get(i) is not None:
                partial.append(f"input[{i}] = {debug_string(self._partial_shapes[i])}")
            elif i in self.requested_tensor and self._values.get(i) is not None:
                computed.append(f"input[{i}] = <{summarize_value(self._values[i])}>")
        text = ""
        if computed:
            text += " and with computed input tensors: " + ", ".join(computed)
        if partial:
            text += " and with input tensors computed as partial shapes: " + ",".join(partial)
        return text


# -- ShapeRefiner::ConstantPartialShape ------------------------------------------------------
def constant_partial_shape(tensor) -> Optional[list]:
    """A 1-D int tensor read as a partial shape, the way TF's ShapeRefiner does it:
    Shape/ShapeN give their input's shape, Pack its (constant) scalars, ConcatV2 the
    concatenation, StridedSlice of such a tensor its slice; otherwise the constant value
    (-1 = unknown dim) or, without one, unknown dims of the known length.

    Raises a plain ValueError (no op context) for values that cannot be a shape.
    """
    shape = as_dims(tensor.shape)
    if shape is not None and len(shape) == 0:
        return _scalar_as_shape(tensor)
    try:
        shape = with_rank(shape, 1)
    except ShapeError as error:
        raise ValueError(str(error)) from None
    op = tensor.op
    if shape[0] == 0:
        return []
    if op.type == "Shape":
        return as_dims(op._inputs[0].shape)
    if op.type == "ShapeN":
        return as_dims(op._inputs[tensor.value_index].shape)
    if op.type == "Pack":
        dims = []
        for t in op._inputs:
            value = constant_value(t)
            dims.append(None if value is None or int(np.asarray(value).ravel()[0]) < 0
                        else int(np.asarray(value).ravel()[0]))
        return dims
    if op.type in ("Concat", "ConcatV2"):
        parts = op._inputs[1:] if op.type == "Concat" else op._inputs[:-1]
        dims = []
        for t in parts:
            sub = constant_partial_shape(t)
            if sub is None:
                return None
            dims.extend(sub)
        return dims
    if op.type == "StridedSlice":
        return _partial_strided_slice_shape(op)
    value = constant_value(tensor)
    if value is None:
        return None if shape[0] is None else [None] * shape[0]
    try:
        return shape_from_value(value)
    except ShapeError as error:
        raise ValueError(str(error)) from None


def _scalar_as_shape(tensor) -> None:
    value = constant_value(tensor)
    if value is None:
        raise ValueError("Received a shape scalar with unknown static value.  A static value of '-1' is required "
                         "to represent an unknown shape.")
    if int(value) == -1:
        return None
    raise ValueError(f"Received an invalid shape scalar with a static value that is not '-1': {value}")


def _partial_strided_slice_shape(op) -> Optional[list]:
    """ShapeRefiner::PartialStridedSliceShape: a plain 1-element slice of a shape tensor."""
    for t in op._inputs[1:]:
        dims = as_dims(t.shape)
        if dims is None or dims[0] != 1:
            return None
    attrs = op._attrs
    if (attrs["begin_mask"] not in (0, 1) or attrs["end_mask"] not in (0, 1) or attrs["ellipsis_mask"]
            or attrs["new_axis_mask"] or attrs["shrink_axis_mask"]):
        return None
    begin = 0 if attrs["begin_mask"] == 1 else _constant_int(op._inputs[1])
    end = 2 ** 63 - 1 if attrs["end_mask"] == 1 else _constant_int(op._inputs[2])
    stride = _constant_int(op._inputs[3])
    if begin is None or end is None or stride is None:
        return None
    source = constant_partial_shape(op._inputs[0])
    try:
        return strided_subshape(source, begin, end, stride)
    except ShapeError as error:
        raise ValueError(str(error)) from None


def _constant_int(tensor) -> Optional[int]:
    value = constant_value(tensor)
    return None if value is None else int(np.asarray(value).ravel()[0])


def strided_subshape(shape, start: int, end: int, stride: int):
    """InferenceContext::Subshape(s, start, end, stride)."""
    start_in, end_in = start, end
    if shape is None:
        return None
    rank = len(shape)
    if start == 0 and stride == 1 and end >= rank:
        return list(shape)
    start, end = min(start, rank), min(end, rank)
    if stride < 0 and start == rank:
        start -= 1
    if start < 0:
        start += rank
        if start < 0:
            raise ShapeError(f"Subshape start out of bounds: {start_in}, for shape with rank {rank}")
    if end < 0:
        end += rank
        if end < 0:
            raise ShapeError(f"Subshape end out of bounds: {end_in}, for shape with rank {rank}")
    if stride > 0 and start > end:
        raise ShapeError(f"Subshape must have computed start <= end, but is {start} and {end} (computed from start "
                         f"{start_in} and end {end_in} over shape with rank {rank})")
    if stride < 0 and start < end:
        raise ShapeError(f"Subshape must have computed start >= end since stride is negative, but is {start} and "
                         f"{end} (computed from start {start_in} and end {end_in} over shape with rank {rank} and "
                         f"stride{stride})")
    return [shape[i] for i in range(start, end, stride)]


def _scalar(value: np.ndarray) -> int:
    array = np.asarray(value)
    if array.ndim != 0:
        raise ShapeError(f"Input must be scalar but has rank {array.ndim}")
    return int(array)


def shape_from_value(value: np.ndarray) -> list:
    """MakeShapeFromTensor for a known 1-D int tensor: -1 is an unknown dim."""
    array = np.asarray(value)
    if array.ndim != 1:
        raise ShapeError(f"Input tensor must be rank 1, but was rank {array.ndim}")
    out = []
    for v in array.tolist():
        if v < -1:
            raise ShapeError(f"Invalid value in tensor used for shape: {v}")
        out.append(None if v == -1 else int(v))
    return out


def run_shape_fn(op, fn: Callable) -> list:
    """Run ``fn(ctx)`` like TF's ShapeRefiner and return TensorShapes for ``OpType.infer``.

    The first pass sees no input values. While a pass asks for inputs not yet
    materialized, they are evaluated and the function runs again. A ShapeError leaves
    with the context of the values the failing pass used.
    """
    ctx = InferenceContext(op)
    while True:
        try:
            shapes = fn(ctx)
        except ShapeError as error:
            error.context = ctx.error_context()
            raise error
        if not ctx.materialize_requested():
            return [_to_tensor_shape(s) for s in shapes]


def _to_tensor_shape(item):
    if isinstance(item, tuple):  # (dtype, shape) for outputs whose dtype the entry decides
        return item[0], TensorShape(item[1])
    return TensorShape(item)


def unchanged_shape(op) -> list:
    """shape_inference::UnchangedShape: output 0 has input 0's shape."""
    return [op._inputs[0].shape]


# =====================================================================================
# Lowering helpers shared by the array family (array_ops, concat_ops, selection_ops,
# slicing): compile-time values (numbers, or dims for shapes), axes, shapes.
# =====================================================================================
def as_dim_array(array) -> np.ndarray:
    """An object array of python ints / SymExprs (numpy ints become ints)."""
    from tfc.ir.dims import SymExpr

    array = np.asarray(array)
    out = np.empty(array.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(array.reshape(-1)):
        flat[i] = v if isinstance(v, SymExpr) else int(v)
    return out


def is_symbolic(array) -> bool:
    array = np.asarray(array)
    return array.dtype == object and not all(isinstance(v, (int, np.integer)) for v in array.reshape(-1))


def from_static(ctx, array, elem):
    """``ctx.from_static`` of an array of numbers or dims (numpy ints become ints)."""
    array = np.asarray(array)
    if array.dtype == object:
        array = as_dim_array(array)
        if not is_symbolic(array):
            array = array.astype(elem.np_dtype)
    return ctx.from_static(array, elem)


def fold(ctx, fn, inputs, elem, size_limit: int = 4096):
    """``fn(*known inputs)`` emitted as a compile-time value when every input is known
    (object arrays hold python ints and SymExprs), else None. Results with more than
    ``size_limit`` elements are not folded."""
    known = [ctx.static(v) for v in inputs]
    if any(k is None for k in known):
        return None
    known = [np.asarray(k).reshape(tuple(v.type.shape)) if _static_shape(v) else np.asarray(k)
             for k, v in zip(known, inputs)]
    known = [as_dim_array(k) if k.dtype == object else k for k in known]
    result = fn(*known)
    if isinstance(result, (list, tuple)):
        if any(np.asarray(r).size > size_limit for r in result):
            return None
        return [_emit_folded(ctx, r, elem) for r in result]
    if np.asarray(result).size > size_limit:
        return None
    return _emit_folded(ctx, result, elem)


def _emit_folded(ctx, result, elem):
    return from_static(ctx, result, elem)


def _static_shape(value) -> bool:
    return all(isinstance(d, int) for d in value.type.shape)


def static_ints(ctx, value, what: str) -> list:
    """The compile-time integer values of ``value`` (a flat list), or ctx.fail."""
    known = ctx.static(value)
    if known is None:
        ctx.fail(f"{what} must be known at compile time")
    flat = np.asarray(known).reshape(-1)
    out = []
    for v in flat:
        if not isinstance(v, (int, np.integer)):
            ctx.fail(f"{what} must be known at compile time (it depends on a run-time dimension: {v})")
        out.append(int(v))
    return out


def static_dims(ctx, value, what: str) -> list:
    """The compile-time values of ``value`` as dims (ints or SymExprs), or ctx.fail."""
    dims = ctx.static_dims(value)
    if dims is None:
        ctx.fail(f"{what} must be known at compile time")
    return dims


def dim_scalar(ctx, d, elem):
    """A rank-0 integer value holding the dim ``d`` (a constant or a ``dims`` op)."""
    if isinstance(d, (int, np.integer)):
        return ctx.scalar(int(d), elem)
    return from_static(ctx, np.array(d, dtype=object), elem)


def normalize_axis(ctx, axis: int, rank: int, what: str = "axis") -> int:
    if axis < -rank or axis >= rank:
        ctx.fail(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


def static_axis(ctx, value, rank: int, what: str = "axis") -> int:
    values = static_ints(ctx, value, what)
    if len(values) != 1:
        ctx.fail(f"{what} must be a scalar, got {len(values)} values")
    return normalize_axis(ctx, values[0], rank, what)


def record_elements(ctx, value, elements) -> None:
    """Remember the scalar IR values a rank-1 value was packed from (for StridedSlice with
    begin/end tensors that are only partly known at compile time)."""
    table = ctx.__dict__.setdefault("_packed_elements", {})
    table[value] = list(elements)


def packed_elements(ctx, value):
    """The scalar IR values ``value`` was packed from, or None."""
    return ctx.__dict__.get("_packed_elements", {}).get(value)


def unify_shapes(ctx, values, skip_axis=None) -> tuple:
    """Unify every dim (except ``skip_axis``) across ``values`` (all of one rank)."""
    first = values[0]
    rank = first.type.rank
    shapes = [tuple(v.type.shape) for v in values]
    for v in values[1:]:
        if v.type.rank != rank:
            ctx.fail(f"Shapes must be equal rank, but are {rank} and {v.type.rank}")
    for v, shape in zip(values[1:], shapes[1:]):
        for axis in range(rank):
            if axis == skip_axis:
                continue
            a, b = ctx.canon(first.type.shape[axis]), ctx.canon(v.type.shape[axis])
            if a == b:
                continue
            if isinstance(a, int) and isinstance(b, int):
                ctx.fail(f"Dimension {axis} in both shapes must be equal, but are {a} and {b}. Shapes are "
                         f"{list(shapes[0])} and {list(shape)}.")
            ctx.unify(a, b, (shapes[0], shape))
    return tuple(ctx.canon(d) for d in first.type.shape)


def empty(ctx, elem, shape):
    """A value of ``shape`` with no elements (a constant, or a broadcast for run-time dims)."""
    if all(isinstance(d, int) for d in shape):
        return ctx.constant(np.zeros(shape, dtype=elem.np_dtype), elem)
    return ctx.broadcast_in_dim(ctx.scalar(False if elem.is_pred else 0, elem), tuple(shape), [])


def slice_axis(ctx, x, axis: int, start, limit):
    """``x[..., start:limit, ...]`` along ``axis`` (a core slice)."""
    rank = x.type.rank
    starts = [0] * rank
    limits = [ctx.canon(d) for d in x.type.shape]
    starts[axis], limits[axis] = start, limit
    return ctx.b.value("slice", [x], {"start": starts, "limit": limits, "stride": [1] * rank})


def concat_values(ctx, values, axis: int):
    """A core concatenate that leaves out operands empty along ``axis``."""
    kept = [v for v in values if not (isinstance(v.type.shape[axis], int) and v.type.shape[axis] == 0)]
    if not kept:
        return values[0]  # every operand is empty along the axis: so is the result
    if len(kept) == 1:
        return kept[0]
    return ctx.b.value("concatenate", kept, {"dim": axis})
