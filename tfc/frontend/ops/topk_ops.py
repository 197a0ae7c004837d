"""TopKV2, InTopKV2 and CheckNumerics (tf.nn.top_k / tf.math.top_k, tf.nn.in_top_k,
tf.debugging.check_numerics), after TF 1.15's OpDefs, shape functions, CPU kernels and
gradients (nn_grad.py, array_grad.py).

Compiled, top_k ranks each element of a row by the elements that come before it in TF's
order (greater values first, the lower index first among equal values) and picks, for
each of the k output positions, the element of that rank: O(n^2) comparisons per row of
n, fused. NaN sorts above every number here (TF's order around NaN is unspecified).
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import inference_context as ic

REAL_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
              dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32, dtypes.uint64)
FLOAT_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_I32 = ir.ElemType.I32
_I64 = ir.ElemType.I64


def _tt(elem, shape):
    return ir.TensorType(elem, tuple(shape))


def _message_check(ctx, holds, pieces):
    from .scatter_ops import _emit_message_check

    _emit_message_check(ctx, holds, pieces)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _is_nan(ctx, x):
    return ctx.b.value("compare", [x, x], {"dir": "ne"})


# =====================================================================================
# TopKV2
# =====================================================================================
def _top_k_shape(ctx):
    x = ic.with_rank_at_least(ctx.input(0), 1)
    ic.with_rank(ctx.input(1), 0)
    k = ctx.scalar_input_dim(1)
    if x is None:
        return [None, None]
    last = x[-1]
    if last is not None and k is not None and last < k:
        raise ShapeError(f"input must have last dimension >= k = {k} but is {last}")
    out = x[:-1] + [k]
    return [out, out]


def _lower_top_k(ctx, op, x, k):
    ks = ic.static_ints(ctx, k, "TopKV2's k")
    if len(ks) != 1:
        ctx.fail("k must be a scalar")
    k = ks[0]
    if k < 0:
        ctx.fail(f"Need k >= 0, got {k}")
    shape = tuple(ctx.canon(d) for d in x.type.shape)
    if not shape:
        ctx.fail("input must be >= 1-D")
    n = shape[-1]
    if isinstance(n, int):
        if n < k:
            ctx.fail(f"input must have at least k columns. Had {n}, needed {k}")
    else:
        size = ic.dim_scalar(ctx, n, _I64)
        holds = ctx.b.value("compare", [size, ctx.scalar(k, _I64)], {"dir": "ge"})
        _message_check(ctx, holds, ["input must have at least k columns. Had ", size, f", needed {k}"])
    batch = shape[:-1]
    rows = dims_product(batch) if batch else 1
    elem = x.type.elem
    flat = ctx.reshape(x, (rows, n))
    cube = (rows, n, n)
    other = ctx.broadcast_in_dim(flat, cube, [0, 1])  # element m
    mine = ctx.broadcast_in_dim(flat, cube, [0, 2])  # element j
    greater = ctx.b.value("compare", [other, mine], {"dir": "gt"})
    equal = ctx.b.value("compare", [other, mine], {"dir": "eq"})
    if elem.is_float:  # NaN above every number, NaNs equal among themselves
        other_nan, mine_nan = _is_nan(ctx, other), _is_nan(ctx, mine)
        greater = ctx.b.value("or", [greater, ctx.b.value("and", [other_nan, ctx.b.value("not", [mine_nan])])])
        equal = ctx.b.value("or", [equal, ctx.b.value("and", [other_nan, mine_nan])])
    before = ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I32, cube)),
                                     ctx.b.value("iota", [], {"dim": 2}, result_type=_tt(_I32, cube))],
                         {"dir": "lt"})
    beats = ctx.b.value("or", [greater, ctx.b.value("and", [equal, before])])
    rank = ctx.reduce(ctx.convert(beats, _I32), "sum", [1])  # [rows, n]: position of element j
    picks = (rows, n, k)
    hot = ctx.b.value("compare", [ctx.broadcast_in_dim(rank, picks, [0, 1]),
                                  ctx.b.value("iota", [], {"dim": 2}, result_type=_tt(_I32, picks))], {"dir": "eq"})
    column = ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I32, picks))
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, _I32), picks, [])
    indices = ctx.reduce(ctx.b.value("select", [hot, column, zeros]), "sum", [1])  # [rows, k]
    start = ctx.b.value("mul", [ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I64, (rows, k))),
                                ctx.broadcast_in_dim(ic.dim_scalar(ctx, n, _I64), (rows, k), [])])
    linear = ctx.b.value("add", [start, ctx.convert(indices, _I64)])
    values = ctx.b.value("gather", [ctx.reshape(flat, (dims_product((rows, n)),)), linear], {"axis": 0})
    out_shape = batch + (k,)
    return [ctx.reshape(values, out_shape), ctx.reshape(indices, out_shape)]


def _top_k_grad(op, grad, _):
    """_TopKGrad of TF 1.15: scatter the values' gradient to the chosen positions."""
    from .array_ops import expand_dims, reshape, shape, size, zeros
    from .concat_ops import stack
    from .math_ops import cast, reduce_prod
    from .scatter_ops import scatter_nd
    from .selection_ops import gather, range as range_

    in_shape = shape(op.inputs[0])
    ind_shape = shape(op.outputs[1])
    ind_lastdim = gather(cast(ind_shape, dtypes.int64), size(ind_shape) - 1)
    ind_2d = reshape(op.outputs[1], stack([-1, ind_lastdim]))
    in_lastdim = gather(cast(in_shape, dtypes.int64), size(in_shape) - 1)
    outerdim = shape(ind_2d)[0]
    ind = reshape(ind_2d + cast(expand_dims(range_(0, cast(outerdim, dtypes.int64) * in_lastdim, in_lastdim), -1),
                                dtypes.int32), [-1])
    return [reshape(scatter_nd(expand_dims(ind, -1), reshape(grad, [-1]), [reduce_prod(in_shape)]), in_shape),
            zeros([], dtype=dtypes.int32)]


@register
class TopKV2(OpType):
    inputs = ["input: T", "k: int32"]
    outputs = ["values: T", "indices: int32"]
    attrs = {"sorted": Attr("bool", True), "T": Attr("type", allowed=REAL_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _top_k_shape)

    lower = _lower_top_k
    gradient = _top_k_grad


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF's argument names
    """tf.nn.top_k: the k largest entries of the last dimension and their indices."""
    return tuple(apply_op("TopKV2", [input, k], {"sorted": sorted}, name).outputs)


# =====================================================================================
# InTopKV2
# =====================================================================================
def _in_top_k_shape(ctx):
    predictions = ic.with_rank(ctx.input(0), 2)
    targets = ic.with_rank(ctx.input(1), 1)
    ic.with_rank(ctx.input(2), 0)
    return [(dtypes.bool, [ic.merge_dim(ic.dim(predictions, 0), ic.dim(targets, 0))])]


def _lower_in_top_k(ctx, op, predictions, targets, k):
    ctx.unify(ctx.canon(predictions.type.shape[0]), ctx.canon(targets.type.shape[0]),
              (tuple(predictions.type.shape), tuple(targets.type.shape)))
    rows, classes = (ctx.canon(d) for d in predictions.type.shape)
    elem = predictions.type.elem
    t = ctx.convert(targets, _I64) if targets.type.elem != _I64 else targets
    n = ctx.broadcast_in_dim(ic.dim_scalar(ctx, classes, _I64), (rows,), [])
    zero = ctx.broadcast_in_dim(ctx.scalar(0, _I64), (rows,), [])
    in_range = ctx.b.value("and", [ctx.b.value("compare", [t, zero], {"dir": "ge"}),
                                   ctx.b.value("compare", [t, n], {"dir": "lt"})])
    safe = ctx.b.value("select", [in_range, t, zero])
    start = ctx.b.value("mul", [ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I64, (rows,))), n])
    flat = ctx.reshape(predictions, (dims_product((rows, classes)),))
    target = ctx.b.value("gather", [flat, ctx.b.value("add", [start, safe])], {"axis": 0})
    inf = ctx.broadcast_in_dim(ctx.scalar(np.inf, elem), (rows,), [])
    finite = ctx.b.value("compare", [ctx.b.value("abs", [target]), inf], {"dir": "lt"})  # NaN: false
    square = (rows, classes)
    more = ctx.b.value("compare", [predictions, ctx.broadcast_in_dim(target, square, [0])], {"dir": "gt"})
    count = ctx.reduce(ctx.convert(more, _I64), "sum", [1])
    k = ctx.convert(k, _I64) if k.type.elem != _I64 else k
    within = ctx.b.value("compare", [count, ctx.broadcast_in_dim(k, (rows,), [])], {"dir": "lt"})
    return ctx.b.value("and", [ctx.b.value("and", [in_range, finite]), within])


@register
class InTopKV2(OpType):
    inputs = ["predictions: float32", "targets: T", "k: T"]
    outputs = ["precision: bool"]
    attrs = {"T": Attr("type", dtypes.int32, allowed=(dtypes.int32, dtypes.int64))}

    def infer(op):
        return ic.run_shape_fn(op, _in_top_k_shape)

    lower = _lower_in_top_k
    not_differentiable = True


def in_top_k(predictions, targets, k, name=None):
    """tf.nn.in_top_k (TF 1.15): an InTopKV2 op inside ``in_top_k/``."""
    with name_scope(name, "in_top_k"):
        return apply_op("InTopKV2", [predictions, targets, k], name=name).outputs[0]


# =====================================================================================
# CheckNumerics
# =====================================================================================
def _lower_check_numerics(ctx, op, x):
    message = _text(op._attrs["message"])
    nan = ctx.reduce(_is_nan(ctx, x), "or", list(range(x.type.rank)))
    inf_value = ctx.broadcast_in_dim(ctx.scalar(np.inf, x.type.elem), tuple(x.type.shape), [])
    inf = ctx.reduce(ctx.b.value("compare", [ctx.b.value("abs", [x]), inf_value], {"dir": "eq"}), "or",
                     list(range(x.type.rank)))
    both = ctx.b.value("and", [nan, inf])
    for bad, what in ((both, "Inf and NaN"), (inf, "Inf"), (nan, "NaN")):
        _message_check(ctx, ctx.b.value("not", [bad]), [f"{message} : Tensor had {what} values"])
    return x


@register
class CheckNumerics(OpType):
    inputs = ["tensor: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=FLOAT_TYPES), "message": Attr("string")}
    stateful = False

    def infer(op):
        return ic.unchanged_shape(op)

    lower = _lower_check_numerics

    def gradient(op, grad):
        """_CheckNumericsGrad."""
        return check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                                    f"{_text(op._attrs['message'])}")


def check_numerics(tensor, message, name=None):
    """tf.debugging.check_numerics: the tensor, or InvalidArgumentError on NaN/Inf."""
    return apply_op("CheckNumerics", [tensor], {"message": message}, name).outputs[0]


def add_check_numerics_ops():
    """tf.add_check_numerics_ops (TF 1.15's numerics.py): a CheckNumerics on every half,
    float or double output of the default graph's ops, in creation order, each depending on
    the one before (so a tensor's inputs are checked first), grouped into one op."""
    from ..eager.context import executing_eagerly
    from ..graph import control_dependencies, get_default_graph
    from .control_flow_ops import group

    if executing_eagerly():
        raise RuntimeError("add_check_numerics_ops() is not compatible with eager execution. To check for "
                           "Inf's and NaN's under eager execution, call tf.debugging.enable_check_numerics() "
                           "before executing the checked operations.")
    checks = []
    for op in get_default_graph().get_operations():
        for output in op.outputs:
            if output.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
                continue
            if op._get_control_flow_context() is not None:
                raise ValueError("`tf.add_check_numerics_ops() is not compatible with TensorFlow control flow "
                                 "operations such as `tf.cond()` or `tf.while_loop()`.")
            with control_dependencies(checks):
                checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return group(*checks)


TF_EXPORTS = ["check_numerics", "add_check_numerics_ops"]
NN_EXPORTS = ["top_k", "in_top_k"]
MATH_EXPORTS = ["top_k", "in_top_k"]
DEBUGGING_EXPORTS = ["check_numerics"]
