"""Op types that frozen models written by TensorFlow 2.x (and older 1.x) contain and the
rest of the library does not define: Einsum, BatchMatMul (v1) and BatchMatMulV3, and the
FusedBatchNorm family.

They exist so ``tf.import_graph_def`` of such a GraphDef compiles and runs (and, for
Einsum and BatchMatMul, differentiates); no user function of the TF1 API is defined here
(``tf.einsum`` and ``tf.nn.fused_batch_norm`` would create these ops, but belong with the
math and nn families).

Entries whose type another module already registers are skipped, so this module can be
imported last without clashing with entries that move elsewhere later.
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes as _d
from ..registry import Attr, OpType, ShapeError, is_registered, register
from . import inference_context as ic
from .inference_context import run_shape_fn

_E = ir.ElemType
_BATCH_MATMUL_TYPES = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.int32, _d.int64, _d.complex64,
                       _d.complex128)
_BATCH_MATMUL_V3_TYPES = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.uint8, _d.int8, _d.int16, _d.int32,
                          _d.int64, _d.complex64, _d.complex128)


def _register(cls):
    """register(), unless another module already defines this op type."""
    name = cls.__dict__.get("type_name") or cls.__name__
    return cls if is_registered(name) else register(cls)


def _attr(op, name: str, default):
    """An attr value; attrs this registry does not declare stay AttrValue protos."""
    value = op._attrs.get(name, default)
    if type(value).__name__ == "AttrValue":
        kind = value.WhichOneof("value")
        value = getattr(value, kind) if kind else default
    if isinstance(value, bytes):
        value = value.decode()
    return value


# =====================================================================================
# Einsum
# =====================================================================================
_ELLIPSIS = "..."


def _parse_subscript(sub: str, equation: str) -> list:
    """Letters and at most one ellipsis, as TF's ValidateEinsumEllipsis checks them."""
    periods = sub.count(".")
    if periods not in (0, 3):
        raise ShapeError(f"Expected at most one ellipsis (...), but found {periods} periods (.) in the input "
                         f"subscript: {sub}")
    if periods == 3 and _ELLIPSIS not in sub:
        raise ShapeError(f"Periods found outside of ellipsis in subscript: {sub}")
    tokens, i = [], 0
    while i < len(sub):
        if sub.startswith(_ELLIPSIS, i):
            tokens.append(_ELLIPSIS)
            i += 3
            continue
        if not sub[i].isalpha():
            raise ShapeError(f"Invalid character '{sub[i]}' in einsum equation: {equation}")
        tokens.append(sub[i])
        i += 1
    return tokens


def parse_einsum_equation(equation: str, num_inputs: int) -> tuple:
    """TF's ParseEinsumEquation: ``([input tokens...], output tokens)``."""
    parts = equation.split("->")
    if len(parts) != 2:
        raise ShapeError(f"Expecting exactly one '->' in einsum equation: {equation}")
    inputs = parts[0].split(",")
    if len(inputs) not in (1, 2):
        raise ShapeError(f"Expecting 1 or 2 input subscripts in equation '{equation}' but got: {len(inputs)}")
    if num_inputs == 0 or num_inputs > 2:
        raise ShapeError(f"Expected either 1 or 2 inputs but got: {num_inputs}")
    if len(inputs) != num_inputs:
        raise ShapeError(f"Expected {len(inputs)} inputs for equation {equation} but got: {num_inputs}")
    return [_parse_subscript(s, equation) for s in inputs], _parse_subscript(parts[1], equation)


def _axis_labels(tokens: list, rank: int, index: int, equation: str) -> list:
    """One label per axis: letters for named axes, ``k`` (an int) for the k-th ellipsis
    axis counted from the end of the ellipsis, so ellipses of different lengths align
    on the right like numpy broadcasting."""
    named = [t for t in tokens if t != _ELLIPSIS]
    if _ELLIPSIS not in tokens:
        if rank != len(named):
            raise ShapeError(f"Shape must be rank {len(named)} but is rank {rank} for {index}th input and "
                             f"equation: {equation}")
        return named
    count = rank - len(named)
    if count < 0:
        raise ShapeError(f"Shape must be at least rank {len(named)} but is rank {rank} for {index}th input and "
                         f"equation: {equation}")
    out: list = []
    for t in tokens:
        out.extend(range(count, 0, -1) if t == _ELLIPSIS else [t])
    return out


def _einsum_shape(c) -> list:
    """TF's EinsumShape."""
    equation = c.attr("equation")
    n = len(c.op._inputs)
    input_tokens, output_tokens = parse_einsum_equation(equation, n)
    label_dims: dict = {}
    bcast_shapes = []
    for i, tokens in enumerate(input_tokens):
        shape = c.input(i)
        if shape is None:
            bcast_shapes.append(None if _ELLIPSIS in tokens else [])
            for t in tokens:
                if t != _ELLIPSIS:
                    label_dims.setdefault(t, None)
            continue
        labels = _axis_labels(tokens, len(shape), i, equation)
        bcast_shapes.append([d for d, label in zip(shape, labels) if isinstance(label, int)])
        for d, label in zip(shape, labels):
            if isinstance(label, int):
                continue
            label_dims[label] = ic.merge_dim(label_dims[label], d) if label in label_dims else d
    out_bcast = bcast_shapes[0] if n == 1 else ic.broadcast(bcast_shapes[0], bcast_shapes[1])
    if _ELLIPSIS in output_tokens:
        if out_bcast is None:
            return [None]
    else:
        if out_bcast:
            raise ShapeError(f"Shape must be at most rank 0 but is rank {len(out_bcast)} for einsum equation "
                             f"'{equation}' without ellipsis (...) in the output subscripts where input(s) have "
                             "non-empty broadcasting shape")
        out_bcast = []
    out: list = []
    for t in output_tokens:
        if t == _ELLIPSIS:
            out.extend(out_bcast)
            continue
        if t not in label_dims:
            raise ShapeError(f"Einsum output subscripts for equation '{equation}' has label '{t}' which is not "
                             "present in the input subscripts")
        out.append(label_dims[t])
    return [out]


def _sum_out(ctx, x, labels: list, keep: set) -> tuple:
    """Sum over the axes whose label is not in ``keep``."""
    dims = [i for i, label in enumerate(labels) if label not in keep]
    if dims:
        x = ctx.reduce(x, "sum", dims)
    return x, [label for label in labels if label in keep]


def _lower_einsum(ctx, op, *xs):
    """Binary einsum = sum out the labels only one operand has, then one ``dot``: the
    labels both operands and the output share are batch dims, the ones both operands
    share and the output lacks are contracted; each operand is transposed to
    [batch, free, contracting] / [batch, contracting, free] and reshaped to one free and
    one contracting dim (the shape the packed GEMM kernels take), the product reshaped
    back and transposed to the output's order. Unary einsum is a sum and a transpose."""
    equation = op._attrs["equation"]
    try:
        input_tokens, output_tokens = parse_einsum_equation(equation, len(xs))
        labels = [_axis_labels(t, x.type.rank, i, equation) for i, (t, x) in enumerate(zip(input_tokens, xs))]
    except ShapeError as e:
        ctx.fail(str(e))
    if any(x.type.elem.is_pred for x in xs):
        ctx.fail("Einsum of bool values has no kernel")
    n_ellipsis = max(sum(isinstance(label, int) for label in ls) for ls in labels)
    out_labels: list = []
    for t in output_tokens:
        out_labels.extend(range(n_ellipsis, 0, -1) if t == _ELLIPSIS else [t])
    if any(len(set(ls)) != len(ls) for ls in labels + [out_labels]):
        # A label repeated within one subscript: a trace / diagonal, or the "un-trace"
        # (``i->ii``) of its gradient.
        from .einsum_ops import lower_einsum_with_diagonals

        return lower_einsum_with_diagonals(ctx, equation, xs)
    shapes = tuple(tuple(x.type.shape) for x in xs)
    # Label sizes: named labels must agree; ellipsis dims broadcast (size 1 stretches).
    size: dict = {}
    for x, ls in zip(xs, labels):
        for axis, label in enumerate(ls):
            d = ctx.canon(x.type.shape[axis])
            if label not in size:
                size[label] = d
                continue
            current = ctx.canon(size[label])
            if isinstance(label, int) and (d == 1 or current == 1):
                size[label] = current if d == 1 else d
            else:
                size[label] = ctx.unify(current, d, shapes)
    size = {k: ctx.canon(v) for k, v in size.items()}
    elem = xs[0].type.elem
    if len(xs) == 1:
        x, ls = _sum_out(ctx, xs[0], labels[0], set(out_labels))
        return ctx.transpose(x, [ls.index(label) for label in out_labels])

    (a, b), (la, lb) = xs, labels
    if b.type.elem != elem:
        ctx.fail(f"Einsum operands have different element types {elem} and {b.type.elem}")
    out_set = set(out_labels)
    a, la = _sum_out(ctx, a, la, set(lb) | out_set)
    b, lb = _sum_out(ctx, b, lb, set(la) | out_set)
    batch = [label for label in out_labels if label in la and label in lb]
    contract = [label for label in la if label in lb and label not in out_set]
    free_a = [label for label in la if label not in lb]
    free_b = [label for label in lb if label not in la]

    def stretch(v, ls):
        """Broadcast size-1 ellipsis dims to the label size."""
        target = tuple(size[label] if label in batch else ctx.canon(d) for label, d in zip(ls, v.type.shape))
        if target == tuple(ctx.canon(d) for d in v.type.shape):
            return v
        return ctx.broadcast_in_dim(v, target, range(len(target)))

    a = ctx.transpose(stretch(a, la), [la.index(label) for label in batch + free_a + contract])
    b = ctx.transpose(stretch(b, lb), [lb.index(label) for label in batch + contract + free_b])
    nb = len(batch)
    batch_dims = [ctx.canon(d) for d in a.type.shape[:nb]]
    free_a_dims = [ctx.canon(d) for d in a.type.shape[nb:nb + len(free_a)]]
    free_b_dims = [ctx.canon(d) for d in b.type.shape[nb + len(contract):]]
    k = dims_product([ctx.canon(d) for d in a.type.shape[nb + len(free_a):]])
    a = ctx.reshape(a, batch_dims + [dims_product(free_a_dims), k])
    b = ctx.reshape(b, batch_dims + [k, dims_product(free_b_dims)])
    attrs = {"contract": [[nb + 1], [nb]]}
    if nb:
        attrs["batch"] = [list(range(nb)), list(range(nb))]
    product = ctx.b.value("dot", [a, b], attrs)
    product = ctx.reshape(product, batch_dims + free_a_dims + free_b_dims)
    order = batch + free_a + free_b
    return ctx.transpose(product, [order.index(label) for label in out_labels])


def einsum_op(inputs, equation: str, name=None):
    """gen_linalg_ops.einsum: one Einsum op (equation in explicit ``->`` form)."""
    from ..op_helper import apply_op

    return apply_op("Einsum", [list(inputs)], {"equation": equation}, name=name).outputs[0]


def _einsum_grad(op, grad):
    """TF's _EinsumGrad (linalg_grad.py): the vector-Jacobian products are einsums with
    the roles of output and operand exchanged; labels an operand sums out on its own
    come back through a reshape and broadcast."""
    from . import math_ops
    from .math_ops import array_ops  # the array family across its modules (stack, concat...)

    equation = op.get_attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    input_subs, output_subs = equation.split("->")

    def reduced_axes_and_dims(reduced, input_shape, subs):
        reduced_subs = "".join(sorted(reduced))
        axes = [_axis_of_label(subs, s) for s in reduced_subs]
        dims = array_ops.stack([input_shape[ax] for ax in axes])
        return reduced_subs, dims, axes

    def grad_reduced(output_grad, out_subs, in_subs, input_shape, reduced, input_rank):
        reduced_subs, reduced_dims, axes = reduced_axes_and_dims(reduced, input_shape, in_subs)
        repeated = len(set(in_subs)) + len(set(out_subs)) < len(in_subs) + len(out_subs)
        without = "".join(s for s in in_subs if s not in reduced)
        if not repeated and without == out_subs and _ELLIPSIS not in in_subs:
            # reduced_shape: the input shape with the reduced axes set to 1
            positions = {ax % input_rank for ax in axes}
            pieces = [1 if i in positions else input_shape[i] for i in range(input_rank)]
            shape = array_ops.stack(pieces)
            return array_ops.broadcast_to(array_ops.reshape(output_grad, shape), input_shape)
        grad_shape = array_ops.concat([reduced_dims, array_ops.shape(output_grad)], axis=0)
        reduced_shape = array_ops.concat([array_ops.ones([len(reduced)], dtype=_d.int32),
                                          array_ops.shape(output_grad)], axis=0)
        broadcasted = array_ops.broadcast_to(array_ops.reshape(output_grad, reduced_shape), grad_shape)
        return einsum_op([broadcasted], f"{reduced_subs + out_subs}->{in_subs}")

    def grad_wrt(output_grad, other, input_shape, in_subs, other_subs, out_subs, input_rank):
        reduced = set(in_subs).difference(set(out_subs + other_subs + "."))
        left = "".join(s for s in in_subs if s not in reduced)
        partial = einsum_op([output_grad, other], f"{out_subs},{other_subs}->{left}")
        if not reduced:
            return partial
        return grad_reduced(partial, left, in_subs, input_shape, reduced, input_rank)

    if len(op.inputs) == 1:
        x = op.inputs[0]
        reduced = set(input_subs).difference(set(output_subs + _ELLIPSIS))
        if not reduced:
            return [einsum_op([grad], f"{output_subs}->{input_subs}")]
        _require_rank(x)
        return [grad_reduced(grad, output_subs, input_subs, array_ops.shape(x), reduced, x.shape.ndims)]

    x_subs, y_subs = input_subs.split(",")
    if _ELLIPSIS in output_subs:
        if _ELLIPSIS not in x_subs:
            x_subs += _ELLIPSIS
        if _ELLIPSIS not in y_subs:
            y_subs += _ELLIPSIS
    x, y = op.inputs
    if grad.dtype.is_complex:
        x, y = math_ops.conj(x), math_ops.conj(y)
    x_shape, y_shape = array_ops.shape(x), array_ops.shape(y)
    grad_x = grad_wrt(grad, y, x_shape, x_subs, y_subs, output_subs, x.shape.ndims)
    grad_y = grad_wrt(grad, x, y_shape, y_subs, x_subs, output_subs, y.shape.ndims)
    if _ELLIPSIS not in output_subs:
        return [grad_x, grad_y]
    bx, by = _bcast_subshape(x_subs), _bcast_subshape(y_subs)
    xs, ys = x.get_shape(), y.get_shape()
    if xs.is_fully_defined() and ys.is_fully_defined() and \
            xs.as_list()[bx[0]:bx[1]] == ys.as_list()[by[0]:by[1]]:
        return [grad_x, grad_y]
    rx, ry = array_ops.broadcast_gradient_args(x_shape[bx[0]:bx[1]], y_shape[by[0]:by[1]])
    grad_x = array_ops.reshape(math_ops.reduce_sum(grad_x, bx[0] + rx), x_shape)
    grad_y = array_ops.reshape(math_ops.reduce_sum(grad_y, by[0] + ry), y_shape)
    return [grad_x, grad_y]


def _require_rank(x):
    if x.shape.ndims is None:
        raise NotImplementedError("the gradient of an einsum that sums out labels needs operands of known rank")


def _axis_of_label(subscripts: str, label: str) -> int:
    """TF's _GetAxisFromLabel: the index before the ellipsis, negative after it."""
    splits = subscripts.split(_ELLIPSIS)
    index = splits[0].find(label)
    if index != -1:
        return index
    index = splits[1].find(label) if len(splits) > 1 else -1
    return index - len(splits[1])


def _bcast_subshape(subscripts: str) -> tuple:
    """TF's _GetBcastSubshape: the (start, end) slice the ellipsis covers."""
    start = subscripts.find(_ELLIPSIS)
    if start == -1:
        return 0, 0
    remaining = len(subscripts) - (start + len(_ELLIPSIS))
    return start, (-remaining if remaining > 0 else None)


@_register
class Einsum(OpType):
    inputs = ["inputs: N * T"]
    outputs = ["output: T"]
    attrs = {"equation": Attr("string"), "N": Attr("int"), "T": Attr("type")}

    def infer(op):
        return run_shape_fn(op, _einsum_shape)

    lower = _lower_einsum
    gradient = _einsum_grad


# =====================================================================================
# BatchMatMul (TF < 1.14 writes it) and BatchMatMulV3 (TF >= 2.5)
# =====================================================================================
def _batch_matmul_shape(c) -> list:
    """TF's BatchMatMulShape: batch dims must match (no broadcasting)."""
    x = ic.with_rank_at_least(c.input(0), 2)
    y = ic.with_rank_at_least(c.input(1), 2)
    adj_x, adj_y = c.attr("adj_x"), c.attr("adj_y")
    rows = ic.dim(x, -1 if adj_x else -2)
    cols = ic.dim(y, -2 if adj_y else -1)
    batch = ic.merge(ic.subshape(x, 0, -2), ic.subshape(y, 0, -2))
    ic.merge_dim(ic.dim(x, -2 if adj_x else -1), ic.dim(y, -1 if adj_y else -2))
    return [ic.concatenate(batch, [rows, cols])]


def _batch_matmul_v2_shape(c) -> list:
    x = ic.with_rank_at_least(c.input(0), 2)
    y = ic.with_rank_at_least(c.input(1), 2)
    adj_x, adj_y = c.attr("adj_x"), c.attr("adj_y")
    rows = ic.dim(x, -1 if adj_x else -2)
    cols = ic.dim(y, -2 if adj_y else -1)
    ic.merge_dim(ic.dim(x, -2 if adj_x else -1), ic.dim(y, -1 if adj_y else -2))
    batch = ic.broadcast(ic.subshape(x, 0, -2), ic.subshape(y, 0, -2))
    return [ic.concatenate(batch, [rows, cols])]


def _lower_batch_matmul(ctx, op, x, y, out_elem=None):
    """One ``dot`` with the (broadcast) leading dims as batch dims; adjoints are transposes
    (real types only)."""
    if out_elem is not None:
        x, y = ctx.convert(x, out_elem), ctx.convert(y, out_elem)
    if x.type.elem.is_pred:
        ctx.fail(f"{op.type} of bool values has no kernel")
    adj_x, adj_y = bool(_attr(op, "adj_x", False)), bool(_attr(op, "adj_y", False))
    rx, ry = x.type.rank, y.type.rank
    if rx < 2 or ry < 2:
        ctx.fail(f"{op.type} needs operands of rank >= 2")
    lc, rc = (rx - 2 if adj_x else rx - 1), (ry - 1 if adj_y else ry - 2)
    ctx.unify(x.type.shape[lc], y.type.shape[rc], (x.type.shape, y.type.shape))
    batch = ctx.broadcast_shapes(tuple(x.type.shape[:-2]), tuple(y.type.shape[:-2]))
    x = ctx.broadcast_to(x, tuple(batch) + tuple(ctx.canon(d) for d in x.type.shape[-2:]))
    y = ctx.broadcast_to(y, tuple(batch) + tuple(ctx.canon(d) for d in y.type.shape[-2:]))
    nb = len(batch)
    attrs = {"contract": [[nb + (lc - (rx - 2))], [nb + (rc - (ry - 2))]]}
    if nb:
        attrs["batch"] = [list(range(nb)), list(range(nb))]
    return ctx.b.value("dot", [x, y], attrs)


def _batch_matmul_grad(op, grad):
    """TF's _BatchMatMul gradient (math_grad.py): two matmuls with adjoint flags (batch
    dims match, so nothing is unbroadcast)."""
    from .math_ops import matmul

    x, y = op.inputs
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not adj_x:
        if not adj_y:
            return [matmul(grad, y, adjoint_a=False, adjoint_b=True), matmul(x, grad, adjoint_a=True, adjoint_b=False)]
        return [matmul(grad, y, adjoint_a=False, adjoint_b=False), matmul(grad, x, adjoint_a=True, adjoint_b=False)]
    if not adj_y:
        return [matmul(y, grad, adjoint_a=False, adjoint_b=True), matmul(x, grad, adjoint_a=False, adjoint_b=False)]
    return [matmul(y, grad, adjoint_a=True, adjoint_b=True), matmul(grad, x, adjoint_a=True, adjoint_b=True)]


@_register
class BatchMatMul(OpType):
    inputs = ["x: T", "y: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=_BATCH_MATMUL_TYPES), "adj_x": Attr("bool", False),
             "adj_y": Attr("bool", False)}

    def infer(op):
        return run_shape_fn(op, _batch_matmul_shape)

    def lower(ctx, op, x, y):
        return _lower_batch_matmul(ctx, op, x, y)

    gradient = _batch_matmul_grad


@_register
class BatchMatMulV3(OpType):
    inputs = ["x: Ta", "y: Tb"]
    outputs = ["output: Tout"]
    attrs = {"Ta": Attr("type", allowed=_BATCH_MATMUL_V3_TYPES), "Tb": Attr("type", allowed=_BATCH_MATMUL_V3_TYPES),
             "Tout": Attr("type", allowed=_BATCH_MATMUL_V3_TYPES), "adj_x": Attr("bool", False),
             "adj_y": Attr("bool", False), "grad_x": Attr("bool", False), "grad_y": Attr("bool", False)}

    def infer(op):
        return run_shape_fn(op, _batch_matmul_v2_shape)

    def lower(ctx, op, x, y):
        return _lower_batch_matmul(ctx, op, x, y, out_elem=ctx.elem(op._attrs["Tout"]))


# =====================================================================================
# FusedBatchNorm, FusedBatchNormV2, FusedBatchNormV3
# =====================================================================================
_BN_FORMATS = ("NHWC", "NCHW", "NDHWC", "NCDHW")


def _channel_axis(data_format: str, rank: int) -> int:
    return 1 if data_format.startswith("NC") else rank - 1


def _fused_batch_norm_shape(c, v3: bool) -> list:
    """TF's FusedBatchNormShape (FusedBatchNormV3Shape adds an unknown reserve_space_3)."""
    data_format = c.attr("data_format")
    if data_format not in _BN_FORMATS:
        raise ShapeError(f"Invalid data format: {data_format}")
    rank = 5 if len(data_format) == 5 else 4
    x = ic.with_rank(c.input(0), rank)
    is_training = c.attr("is_training")
    avg_factor = _attr(c.op, "exponential_avg_factor", 1.0)
    axis = _channel_axis(data_format, rank)
    channel = x[axis]
    checked = 3 if is_training and avg_factor == 1.0 else 5  # the estimates are unused then
    for i in range(1, checked):
        channel = ic.merge_dim(channel, ic.with_rank(c.input(i), 1)[0])
    y = list(x)
    y[axis] = channel
    out = [y] + [[channel]] * 4
    if v3:
        out.append(None)
    return out


def _lower_fused_batch_norm(ctx, op, x, scale, offset, mean, variance):
    """y = (x - mean) * rsqrt(variance + epsilon) * scale + offset, per channel, computed
    in the parameters' type (f32). Training mode uses the batch moments over every axis
    but the channel: y with the biased variance, ``batch_variance`` with Bessel's
    correction, both moving towards the given estimates by ``exponential_avg_factor``.
    The reserve spaces hold the batch mean and the variance (kernel scratch in TF)."""
    data_format = _attr(op, "data_format", "NHWC")
    epsilon = float(_attr(op, "epsilon", 1e-4))
    is_training = bool(_attr(op, "is_training", True))
    factor = float(_attr(op, "exponential_avg_factor", 1.0))
    rank = x.type.rank
    axis = _channel_axis(data_format, rank)
    reduce_dims = [d for d in range(rank) if d != axis]
    compute = scale.type.elem
    x_c = ctx.convert(x, compute)
    shape = tuple(ctx.canon(d) for d in x.type.shape)

    def per_channel(v):
        ctx.unify(v.type.shape[0], shape[axis], (v.type.shape, shape))
        return ctx.broadcast_in_dim(v, tuple(ctx.canon(d) for d in x_c.type.shape), [axis])

    if is_training:
        count = dims_product([shape[d] for d in reduce_dims])
        count_value = _dim_scalar(ctx, count, compute)
        batch_mean = ctx.elementwise("div", ctx.reduce(x_c, "sum", reduce_dims), count_value)
        centered = ctx.elementwise("sub", x_c, per_channel(batch_mean))
        sq_sum = ctx.reduce(ctx.elementwise("mul", centered, centered), "sum", reduce_dims)
        batch_var = ctx.elementwise("div", sq_sum, count_value)  # biased: normalises y
        bessel = ctx.elementwise("max", ctx.elementwise("sub", count_value, ctx.scalar(1, compute)),
                                 ctx.scalar(1, compute))
        unbiased = ctx.elementwise("div", sq_sum, bessel)
        use_mean, use_var = batch_mean, batch_var
        out_mean, out_var = batch_mean, unbiased
        if factor != 1.0:
            keep = ctx.scalar(1.0 - factor, compute)
            new = ctx.scalar(factor, compute)
            out_mean = ctx.elementwise("add", ctx.elementwise("mul", mean, keep),
                                       ctx.elementwise("mul", batch_mean, new))
            out_var = ctx.elementwise("add", ctx.elementwise("mul", variance, keep),
                                      ctx.elementwise("mul", unbiased, new))
    else:
        use_mean, use_var = mean, variance
        out_mean, out_var = mean, variance
        centered = ctx.elementwise("sub", x_c, per_channel(mean))
    inv = ctx.b.value("rsqrt", [ctx.elementwise("add", use_var, ctx.scalar(epsilon, compute))])
    y = ctx.elementwise("mul", centered, per_channel(ctx.elementwise("mul", inv, scale)))
    y = ctx.elementwise("add", y, per_channel(offset))
    outputs = [ctx.convert(y, x.type.elem), out_mean, out_var, use_mean, use_var]
    if op.type == "FusedBatchNormV3":
        outputs.append(ctx.constant(np.zeros([0], dtype=compute.np_dtype)))
    return outputs


def _dim_scalar(ctx, d, elem):
    if isinstance(d, int):
        return ctx.scalar(d, elem)
    value = ctx.from_static(np.array([d], dtype=object), _E.I64)
    return ctx.convert(ctx.reshape(value, ()), elem)


def _fused_batch_norm_grad(op, *grads):
    """TF 1.15's _BaseFusedBatchNormGrad (tfc/frontend/ops/nn_extra_ops.py)."""
    from .nn_extra_ops import fused_batch_norm_grad
    return fused_batch_norm_grad(op, *grads)


_BN_ATTRS = {"epsilon": Attr("float", 1e-4), "data_format": Attr("string", "NHWC"),
             "is_training": Attr("bool", True)}


@_register
class FusedBatchNorm(OpType):
    inputs = ["x: T", "scale: T", "offset: T", "mean: T", "variance: T"]
    outputs = ["y: T", "batch_mean: T", "batch_variance: T", "reserve_space_1: T", "reserve_space_2: T"]
    attrs = {"T": Attr("type", allowed=(_d.float32,)), **_BN_ATTRS}

    def infer(op):
        return run_shape_fn(op, lambda c: _fused_batch_norm_shape(c, v3=False))

    lower = _lower_fused_batch_norm
    gradient = _fused_batch_norm_grad


@_register
class FusedBatchNormV2(OpType):
    inputs = ["x: T", "scale: U", "offset: U", "mean: U", "variance: U"]
    outputs = ["y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U", "reserve_space_2: U"]
    attrs = {"T": Attr("type", allowed=(_d.float16, _d.bfloat16, _d.float32)),
             "U": Attr("type", allowed=(_d.float32,)), **_BN_ATTRS}

    def infer(op):
        return run_shape_fn(op, lambda c: _fused_batch_norm_shape(c, v3=False))

    lower = _lower_fused_batch_norm
    gradient = _fused_batch_norm_grad


@_register
class FusedBatchNormV3(OpType):
    inputs = ["x: T", "scale: U", "offset: U", "mean: U", "variance: U"]
    outputs = ["y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U", "reserve_space_2: U",
               "reserve_space_3: U"]
    attrs = {"T": Attr("type", allowed=(_d.float16, _d.bfloat16, _d.float32)),
             "U": Attr("type", allowed=(_d.float32,)), **_BN_ATTRS}

    def infer(op):
        return run_shape_fn(op, lambda c: _fused_batch_norm_shape(c, v3=True))

    lower = _lower_fused_batch_norm
    gradient = _fused_batch_norm_grad


TF_EXPORTS: list = []
