"""Matrix helpers of TF 1.15: MatrixBandPart, MatrixDiag, MatrixDiagPart, MatrixSetDiag,
LinSpace (tf.matrix_band_part, tf.matrix_diag, tf.matrix_diag_part, tf.matrix_set_diag,
tf.linspace / tf.lin_space) and the Python functions tf.eye, tf.meshgrid and tf.norm
built as TF 1.15's linalg_ops.py / array_ops.py build them (TF 1.15 emits the v1 diag ops:
its forward-compatibility window for MatrixDiagV2 had not opened).
"""
from __future__ import annotations

import numbers

import numpy as np

from tfc import ir
from tfc.ir.dims import dim_sub

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, colocate_with, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import inference_context as ic

_I64 = ir.ElemType.I64
_I32 = ir.ElemType.I32


def _tt(elem, shape):
    return ir.TensorType(elem, tuple(shape))


def _diagonal_mask(ctx, shape, lower=None, upper=None):
    """pred[shape]: row == column over the last two dims (or the band lower/upper)."""
    rank = len(shape)
    row = ctx.b.value("iota", [], {"dim": rank - 2}, result_type=_tt(_I64, shape))
    col = ctx.b.value("iota", [], {"dim": rank - 1}, result_type=_tt(_I64, shape))
    if lower is None:
        return ctx.b.value("compare", [row, col], {"dir": "eq"})
    zero = ctx.broadcast_in_dim(ctx.scalar(0, _I64), shape, [])
    masks = []
    for bound, diff in ((lower, ctx.b.value("sub", [row, col])), (upper, ctx.b.value("sub", [col, row]))):
        bound = ctx.broadcast_in_dim(ctx.convert(bound, _I64), shape, [])
        masks.append(ctx.b.value("or", [ctx.b.value("compare", [bound, zero], {"dir": "lt"}),
                                        ctx.b.value("compare", [diff, bound], {"dir": "le"})]))
    return ctx.b.value("and", masks)


def _zeros(ctx, elem, shape):
    return ctx.broadcast_in_dim(ctx.scalar(0, elem), tuple(shape), [])


def _min_dim(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if a == b:
        return a
    return None


# =====================================================================================
# MatrixBandPart
# =====================================================================================
def _band_part_shape(ctx):
    """UnchangedShape: TF checks the ranks when the op runs."""
    return [ctx.input(0)]


def _lower_band_part(ctx, op, x, num_lower, num_upper):
    shape = tuple(ctx.canon(d) for d in x.type.shape)
    if len(shape) < 2:
        ctx.fail(f"input must be at least 2-dim, received shape: {list(shape)}")
    mask = _diagonal_mask(ctx, shape, num_lower, num_upper)
    return ctx.b.value("select", [mask, x, _zeros(ctx, x.type.elem, shape)])


@register
class MatrixBandPart(OpType):
    inputs = ["input: T", "num_lower: Tindex", "num_upper: Tindex"]
    outputs = ["band: T"]
    attrs = {"T": Attr("type"), "Tindex": Attr("type", dtypes.int64, allowed=(dtypes.int32, dtypes.int64))}

    def infer(op):
        return ic.run_shape_fn(op, _band_part_shape)

    lower = _lower_band_part

    def gradient(op, grad):
        """_MatrixBandPartGrad."""
        return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


def _python_int_dtype(*values):
    """TF's _apply_op_helper converts inputs of a defaulted type attr with an allowed list
    (MatrixBandPart's Tindex = int64) without the default first and keeps an allowed
    result: Python ints become int32 when they fit."""
    if any(isinstance(v, Tensor) for v in values):
        return None
    try:
        known = [np.asarray(v) for v in values]
    except (TypeError, ValueError):
        return None
    if not all(k.dtype.kind == "i" for k in known):
        return None
    fits = all(np.all((k >= -2 ** 31) & (k < 2 ** 31)) for k in known)
    return dtypes.int32 if fits else dtypes.int64


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    index_dtype = _python_int_dtype(num_lower, num_upper)
    attrs = {} if index_dtype is None else {"Tindex": index_dtype}
    return apply_op("MatrixBandPart", [input, num_lower, num_upper], attrs, name).outputs[0]


# =====================================================================================
# MatrixDiag, MatrixDiagPart, MatrixSetDiag
# =====================================================================================
def _diag_shape(ctx):
    x = ic.with_rank_at_least(ctx.input(0), 1)
    if x is None:
        return [None]
    return [x + [x[-1]]]


def _lower_diag(ctx, op, diagonal):
    shape = tuple(ctx.canon(d) for d in diagonal.type.shape)
    out = shape + (shape[-1],)
    rank = len(out)
    spread = ctx.broadcast_in_dim(diagonal, out, list(range(rank - 2)) + [rank - 1])
    return ctx.b.value("select", [_diagonal_mask(ctx, out), spread, _zeros(ctx, diagonal.type.elem, out)])


@register
class MatrixDiag(OpType):
    inputs = ["diagonal: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _diag_shape)

    lower = _lower_diag

    def gradient(op, grad):
        """_MatrixDiagGrad."""
        return [matrix_diag_part(grad)]


def _diag_part_shape(ctx):
    x = ic.with_rank_at_least(ctx.input(0), 2)
    if x is None:
        return [None]
    rows, cols = x[-2], x[-1]
    small = None if rows is None or cols is None else min(rows, cols)
    return [x[:-2] + [small]]


def _square_corner(ctx, x):
    """x sliced to its leading square [..., k, k] (k = min of the last two dims)."""
    shape = tuple(ctx.canon(d) for d in x.type.shape)
    k = _min_dim(shape[-2], shape[-1])
    if k is None:
        ctx.fail("the matrix dims must be known at compile time when they may differ")
    if shape[-2] != k or shape[-1] != k:
        x = ctx.b.value("slice", [x], {"start": [0] * len(shape), "limit": list(shape[:-2]) + [k, k]})
    return x, shape[:-2] + (k, k)


def _lower_diag_part(ctx, op, x):
    if x.type.rank < 2:
        ctx.fail("input must be at least 2-dim")
    square, shape = _square_corner(ctx, x)
    chosen = ctx.b.value("select", [_diagonal_mask(ctx, shape), square, _zeros(ctx, x.type.elem, shape)])
    if x.type.elem is ir.ElemType.PRED:
        return ctx.reduce(chosen, "or", [len(shape) - 1])
    return ctx.reduce(chosen, "sum", [len(shape) - 1])


@register
class MatrixDiagPart(OpType):
    inputs = ["input: T"]
    outputs = ["diagonal: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _diag_part_shape)

    lower = _lower_diag_part

    def gradient(op, grad):
        """_MatrixDiagPartGrad."""
        from .array_ops import zeros_like

        matrix_shape = op.inputs[0].get_shape()[-2:]
        if matrix_shape.is_fully_defined() and matrix_shape[0] == matrix_shape[1]:
            return [matrix_diag(grad)]
        return [matrix_set_diag(zeros_like(op.inputs[0]), grad)]


def _set_diag_shape(ctx):
    x = ic.with_rank_at_least(ctx.input(0), 2)
    diag = ic.with_rank_at_least(ctx.input(1), 1)
    if x is not None and diag is not None:
        ic.with_rank(diag, len(x) - 1)
        rows, cols = x[-2], x[-1]
        if rows is not None and cols is not None:
            ic.merge_dim(min(rows, cols), diag[-1])
        x = ic.concatenate(ic.merge(x[:-2], diag[:-1]), x[-2:])
    return [x]


def _lower_set_diag(ctx, op, x, diagonal):
    shape = tuple(ctx.canon(d) for d in x.type.shape)
    k = _min_dim(shape[-2], shape[-1])
    if k is None:
        ctx.fail("the matrix dims must be known at compile time when they may differ")
    for a, b in zip(diagonal.type.shape, shape[:-2] + (k,)):
        ctx.unify(ctx.canon(a), b, (tuple(diagonal.type.shape), shape))
    shape = tuple(ctx.canon(d) for d in x.type.shape)
    rank = len(shape)
    spread = ctx.broadcast_in_dim(diagonal, shape[:-2] + (k, k), list(range(rank - 2)) + [rank - 1])
    if shape[-2] != k or shape[-1] != k:
        pad = ctx.scalar(0, x.type.elem)
        spread = ctx.b.value("pad", [spread, pad], {"low": [0] * rank,
                                                    "high": [0] * (rank - 2) + [dim_sub(shape[-2], k),
                                                                                dim_sub(shape[-1], k)]})
    return ctx.b.value("select", [_diagonal_mask(ctx, shape), spread, x])


@register
class MatrixSetDiag(OpType):
    inputs = ["input: T", "diagonal: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _set_diag_shape)

    lower = _lower_set_diag

    def gradient(op, grad):
        """_MatrixSetDiagGrad."""
        from .array_ops import rank, shape, zeros
        from .concat_ops import concat
        from .math_ops import reduce_min
        from .slicing import slice as slice_

        input_shape = op.inputs[0].get_shape().merge_with(grad.get_shape())
        diag_shape = op.inputs[1].get_shape()
        batch_shape = input_shape[:-2].merge_with(diag_shape[:-1])
        matrix_shape = input_shape[-2:]
        if batch_shape.is_fully_defined() and matrix_shape.is_fully_defined():
            diag_shape = batch_shape.as_list() + [min(matrix_shape.as_list())]
        else:
            with colocate_with(grad):
                grad_shape = shape(grad)
                grad_rank = rank(grad)
                batch_shape = slice_(grad_shape, [0], [grad_rank - 2])
                matrix_shape = slice_(grad_shape, [grad_rank - 2], [2])
                min_dim = reduce_min(matrix_shape)
                diag_shape = concat([batch_shape, [min_dim]], 0)
        grad_input = matrix_set_diag(grad, zeros(diag_shape, dtype=grad.dtype))
        grad_diag = matrix_diag_part(grad)
        return [grad_input, grad_diag]


def matrix_diag(diagonal, name="diag"):
    """tf.matrix_diag / tf.linalg.diag (TF 1.15: a MatrixDiag op named 'diag')."""
    return apply_op("MatrixDiag", [diagonal], name=name).outputs[0]


def matrix_diag_part(input, name="diag_part"):  # noqa: A002
    return apply_op("MatrixDiagPart", [input], name=name).outputs[0]


def matrix_set_diag(input, diagonal, name="set_diag"):  # noqa: A002
    return apply_op("MatrixSetDiag", [input, diagonal], name=name).outputs[0]


# =====================================================================================
# LinSpace
# =====================================================================================
def _lin_space_shape(ctx):
    for index, what in ((0, "start"), (1, "stop"), (2, "num")):
        try:
            ic.with_rank(ctx.input(index), 0)
        except ShapeError as error:
            raise ic.append_to_message(error, f" for '{what}'") from None
    num = ctx.input_tensor(2)
    if num is None:
        return [[None]]
    num = int(np.asarray(num))
    if num <= 0:
        raise ShapeError(f"Requires num > 0: {num}")
    return [[num]]


def _lower_lin_space(ctx, op, start, stop, num):
    counts = ic.static_ints(ctx, num, "LinSpace's num")
    if len(counts) != 1:
        ctx.fail("num must be a scalar")
    n = counts[0]
    if n <= 0:
        ctx.fail(f"Requires num > 0: {n}")
    elem = start.type.elem
    if n == 1:
        return ctx.reshape(start, (1,))
    step = ctx.b.value("div", [ctx.b.value("sub", [stop, start]), ctx.scalar(n - 1, elem)])
    position = ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(elem, (n,)))
    values = ctx.b.value("add", [ctx.broadcast_in_dim(start, (n,), []),
                                 ctx.b.value("mul", [ctx.broadcast_in_dim(step, (n,), []), position])])
    last = ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I32, (n,))),
                                   ctx.broadcast_in_dim(ctx.scalar(n - 1, _I32), (n,), [])], {"dir": "eq"})
    return ctx.b.value("select", [last, ctx.broadcast_in_dim(stop, (n,), []), values])


@register
class LinSpace(OpType):
    inputs = ["start: T", "stop: T", "num: Tidx"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=(dtypes.bfloat16, dtypes.float32, dtypes.float64)),
             "Tidx": Attr("type", dtypes.int32, allowed=(dtypes.int32, dtypes.int64))}

    def infer(op):
        return ic.run_shape_fn(op, _lin_space_shape)

    lower = _lower_lin_space
    not_differentiable = True


def lin_space(start, stop, num, name=None):
    """tf.linspace / tf.lin_space (TF 1.15: the LinSpace op)."""
    return apply_op("LinSpace", [start, stop, num], name=name).outputs[0]


linspace = lin_space


# =====================================================================================
# eye, meshgrid, norm (Python functions of TF 1.15)
# =====================================================================================
def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """tf.eye: linalg_ops_impl.eye of TF 1.15 (matrix_diag of ones, or matrix_set_diag of
    zeros when not square)."""
    from .array_ops import ones, zeros
    from .concat_ops import concat
    from .math_ops import minimum

    with name_scope(name, default_name="eye", values=[num_rows, num_columns, batch_shape]):
        is_square = num_columns is None
        batch_shape = [] if batch_shape is None else batch_shape
        num_columns = num_rows if num_columns is None else num_columns
        if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
            diag_size = minimum(num_rows, num_columns)
        else:
            if not isinstance(num_rows, numbers.Integral) or not isinstance(num_columns, numbers.Integral):
                raise TypeError("num_rows and num_columns must be positive integer values.")
            is_square = num_rows == num_columns
            diag_size = np.minimum(num_rows, num_columns)
        if isinstance(batch_shape, Tensor) or isinstance(diag_size, Tensor):
            batch_shape = convert_to_tensor(batch_shape, name="shape", dtype=dtypes.int32)
            diag_shape = concat((batch_shape, [diag_size]), axis=0)
            if not is_square:
                shape = concat((batch_shape, [num_rows, num_columns]), axis=0)
        else:
            batch_shape = list(batch_shape)
            diag_shape = batch_shape + [diag_size]
            if not is_square:
                shape = batch_shape + [num_rows, num_columns]
        diag_ones = ones(diag_shape, dtype=dtype)
        if is_square:
            return matrix_diag(diag_ones)
        zero_matrix = zeros(shape, dtype=dtype)
        return matrix_set_diag(zero_matrix, diag_ones)


def meshgrid(*args, **kwargs):
    """tf.meshgrid (array_ops.meshgrid of TF 1.15)."""
    from .array_ops import ones, reshape, size
    from .concat_ops import stack

    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = list(kwargs.keys())[0]
        raise TypeError(f"'{key}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with name_scope(name, "meshgrid", args):
        ndim = len(args)
        s0 = (1,) * ndim
        output = []
        for i, x in enumerate(args):
            output.append(reshape(stack(x), (s0[:i] + (-1,) + s0[i + 1::])))
        shapes = [size(x) for x in args]
        output_dtype = convert_to_tensor(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            output[0] = reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult_fact = ones(shapes, output_dtype)
        return [x * mult_fact for x in output]


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002
    """tf.norm (linalg_ops.norm of TF 1.15); the matrix 2-norm (an SVD) is not implemented."""
    from .array_ops import squeeze
    from .math_ops import abs as abs_, conj, pow as pow_, reduce_max, reduce_sum, sqrt

    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    keepdims = keep_dims if keepdims is None else keepdims
    if keepdims is None:
        keepdims = False
    is_matrix_norm = (isinstance(axis, tuple) or isinstance(axis, list)) and len(axis) == 2
    if is_matrix_norm:
        axis = tuple(axis)
        if not isinstance(axis[0], int) or not isinstance(axis[1], int) or axis[0] == axis[1]:
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers")
        supported_matrix_norms = ["euclidean", "fro", 1, 2, np.inf]
        if ord not in supported_matrix_norms:
            raise ValueError(f"'ord' must be a supported matrix norm in {supported_matrix_norms}, got {ord}")
    else:
        if not (isinstance(axis, int) or axis is None):
            raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique integers")
        supported_vector_norms = ["euclidean", 1, 2, np.inf]
        if (not np.isreal(ord) or ord <= 0) and ord not in supported_vector_norms:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (axis,)
    with name_scope(name, "norm", [tensor]):
        tensor = convert_to_tensor(tensor)
        if ord in ["fro", "euclidean", 2, 2.0]:
            if is_matrix_norm and ord in [2, 2.0]:
                raise NotImplementedError("tfc does not implement tf.norm's matrix 2-norm (ord=2 over two axes: "
                                          "an SVD) yet")
            result = sqrt(reduce_sum(tensor * conj(tensor), axis, keepdims=True))
        else:
            result = abs_(tensor)
            if ord == 1:
                sum_axis = None if axis is None else axis[0]
                result = reduce_sum(result, sum_axis, keepdims=True)
                if is_matrix_norm:
                    result = reduce_max(result, axis[1], keepdims=True)
            elif ord == np.inf:
                if is_matrix_norm:
                    result = reduce_sum(result, axis[1], keepdims=True)
                max_axis = None if axis is None else axis[0]
                result = reduce_max(result, max_axis, keepdims=True)
            else:
                result = pow_(reduce_sum(pow_(result, ord), axis, keepdims=True), 1.0 / ord)
        if not keepdims:
            result = squeeze(result, axis)
        return result


TF_EXPORTS = ["matrix_band_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag", "lin_space", "linspace",
              "eye", "meshgrid", "norm"]
LINALG_EXPORTS = {"band_part": matrix_band_part, "diag": matrix_diag, "diag_part": matrix_diag_part,
                  "set_diag": matrix_set_diag, "eye": eye, "norm": norm}
