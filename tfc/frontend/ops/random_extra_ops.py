"""RandomShuffle (tf.random_shuffle / tf.random.shuffle) and Multinomial (tf.multinomial /
tf.random.categorical), seeded like tfc's other random ops (random_ops.py): one core
``rng`` per op reading and advancing a per-op Philox state, so a fixed (seed, seed2)
repeats its sequence in every new session. The streams differ from TF's kernels.

RandomShuffle ranks f64 uniform keys (ties broken by position, so the result is always
a permutation) with an n x n comparison, like TopKV2's lowering: memory grows with the
square of the first dimension. Multinomial samples by the Gumbel-max trick:
argmax(logits + Gumbel noise) over the classes for each of ``num_samples`` draws.
"""
from __future__ import annotations

from tfc import ir

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from . import inference_context as ic
from .topk_ops import REAL_TYPES
from .random_ops import _rng, get_seed

_I32, _F64 = ir.ElemType.I32, ir.ElemType.F64


def _tt(elem, shape):
    return ir.TensorType(elem, tuple(shape))


# -- RandomShuffle ----------------------------------------------------------------------------
def _lower_random_shuffle(ctx, op, value):
    shape = tuple(ctx.canon(d) for d in value.type.shape)
    if not shape:
        return value
    n = shape[0]
    if not isinstance(n, int):
        ctx.fail("RandomShuffle needs the first dimension known at compile time")
    if n <= 1:
        return value
    keys = _rng(ctx, op, "uniform", _F64, (n,))
    square = (n, n)
    other = ctx.broadcast_in_dim(keys, square, [0])  # key m
    mine = ctx.broadcast_in_dim(keys, square, [1])  # key j
    less = ctx.b.value("compare", [other, mine], {"dir": "lt"})
    equal = ctx.b.value("compare", [other, mine], {"dir": "eq"})
    before = ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I32, square)),
                                     ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I32, square))],
                         {"dir": "lt"})
    beats = ctx.b.value("or", [less, ctx.b.value("and", [equal, before])])
    rank = ctx.reduce(ctx.convert(beats, _I32), "sum", [0])  # [n]: the new position of row j
    positions = ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I32, (n,)))
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, _I32), (n,), [])
    perm = ctx.b.value("scatter_add", [zeros, rank, positions], {"axis": 0})  # perm[rank[j]] = j
    return ctx.b.value("gather", [value, perm], {"axis": 0})


@register
class RandomShuffle(OpType):
    inputs = ["value: T"]
    outputs = ["output: T"]
    attrs = {"seed": Attr("int", 0), "seed2": Attr("int", 0), "T": Attr("type")}
    stateful = True
    not_differentiable = True

    def infer(op):
        return ic.unchanged_shape(op)

    lower = _lower_random_shuffle


def random_shuffle(value, seed=None, name=None):
    """tf.random_shuffle: the rows (first dimension) of ``value`` in a random order."""
    seed1, seed2 = get_seed(seed)
    return apply_op("RandomShuffle", [value], {"seed": seed1 or 0, "seed2": seed2 or 0}, name).outputs[0]


# -- Multinomial ------------------------------------------------------------------------------
def _multinomial_shape(c):
    logits = ic.with_rank(c.input(0), 2)
    ic.with_rank(c.input(1), 0)
    samples = c.scalar_input_dim(1)
    return [(c.attr("output_dtype"), [logits[0], samples])]


def _lower_multinomial(ctx, op, logits, num_samples):
    counts = ic.static_ints(ctx, num_samples, "Multinomial's num_samples")
    if len(counts) != 1 or counts[0] < 0:
        ctx.fail(f"num_samples should be a nonnegative scalar, got {counts}")
    samples = counts[0]
    batch, classes = (ctx.canon(d) for d in logits.type.shape)
    out_elem = ctx.elem(op._attrs["output_dtype"])
    if isinstance(classes, int) and classes == 0:
        ctx.fail("num_classes should be positive, got 0")
    cube = (batch, samples, classes)
    u = _rng(ctx, op, "uniform", _F64, cube)  # in [0, 1): u = 0 gives -inf noise, never picked
    neg_log_u = ctx.b.value("neg", [ctx.b.value("log", [u])])  # > 0: u < 1
    gumbel = ctx.b.value("neg", [ctx.b.value("log", [neg_log_u])])
    scores = ctx.b.value("add", [ctx.broadcast_in_dim(ctx.convert(logits, _F64), cube, [0, 2]), gumbel])
    return ctx.b.value("argmax", [scores], {"dim": 2}, result_type=_tt(out_elem, (batch, samples)))


@register
class Multinomial(OpType):
    inputs = ["logits: T", "num_samples: int32"]
    outputs = ["output: output_dtype"]
    attrs = {"seed": Attr("int", 0), "seed2": Attr("int", 0), "T": Attr("type", allowed=REAL_TYPES),
             "output_dtype": Attr("type", dtypes.int64, allowed=(dtypes.int32, dtypes.int64))}
    stateful = True
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _multinomial_shape)

    lower = _lower_multinomial


def _multinomial_categorical_impl(logits, num_samples, dtype, seed):
    logits = convert_to_tensor(logits, name="logits")
    seed1, seed2 = get_seed(seed)
    attrs = {"seed": seed1 or 0, "seed2": seed2 or 0, "output_dtype": dtypes.as_dtype(dtype or dtypes.int64)}
    return apply_op("Multinomial", [logits, num_samples], attrs).outputs[0]


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """tf.multinomial: ``num_samples`` class indices per row of ``logits`` [batch, classes]."""
    with name_scope(name, "multinomial", [logits]):
        return _multinomial_categorical_impl(logits, num_samples, output_dtype, seed)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical: as tf.multinomial, under ``categorical/``."""
    with name_scope(name, "categorical", [logits]):
        return _multinomial_categorical_impl(logits, num_samples, dtype, seed)


shuffle = random_shuffle

TF_EXPORTS = ["multinomial", "random_shuffle"]
RANDOM_EXPORTS = ["categorical", "multinomial", "shuffle"]
