"""tf.einsum (TF 1.15's Python implementation), tf.trace / tf.linalg.trace, and the
``Einsum`` op of TF 2.x GraphDefs.

``einsum`` builds the graph TF 1.15's python/ops/special_math_ops.py builds: under
``einsum/``, Transpose / Reshape / MatMul (BatchMatMulV2 above rank 2) / Mul / ExpandDims /
Sum ops, ``Trace`` for ``'ii'``, and the exponential-space fallback when a label is summed
over more than two inputs; its gradients are those of the ops it builds.

The ``Einsum`` op of TF 2.x GraphDefs has its registry entry in extra_ops.py; equations
that repeat a label within one subscript (a trace ``ii->i``, the ``i->ii`` its gradient
builds) are lowered here with iota masks.
"""
from __future__ import annotations

import re
import string

from tfc.ir.dims import dims_product

from ..convert import convert_to_tensor
from ..graph import name_scope
from ..registry import ShapeError
from . import array_ops, math_ops, matrix_ops


# =====================================================================================
# tf.trace
# =====================================================================================
def trace(x, name=None):
    """tf.trace / tf.linalg.trace (TF 1.15 math_ops.trace): Sum of the diagonal part."""
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return math_ops.reduce_sum(matrix_ops.matrix_diag_part(x), [-1], name=scope)


# =====================================================================================
# tf.einsum: TF 1.15's special_math_ops.einsum
# =====================================================================================
def einsum(equation, *inputs, **kwargs):
    """A generalized contraction between tensors (TF 1.15's graph)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("invalid keyword arguments for this function: " +
                        ", ".join([format(key) for key in sorted(list(kwargs.keys()))]))
    with name_scope(name, "einsum", list(inputs)):
        inputs = list(inputs)
        input_shapes = [x.get_shape() for x in inputs]
        input_axis_labels, output_axis_labels = _einsum_parse_and_resolve_equation(equation, input_shapes)

        axis_labels = set("".join(input_axis_labels) + output_axis_labels)
        for a in axis_labels:
            for input_labels in input_axis_labels:
                if (len(input_axis_labels) == 1 and input_labels.count(a) == 2 and
                        input_labels == input_labels[::-1] and "->" not in equation):
                    return trace(inputs[0])
                if input_labels.count(a) > 1:
                    raise ValueError("Subscript not supported: an axis appears more than once: %s" % input_labels)
        for a in axis_labels:
            input_count = sum(1 for s in input_axis_labels if a in s)
            if input_count > 2 and a not in output_axis_labels:
                from ..tf_logging import warn

                warn("Falling back to exponential-space implementation of einsum() because index \"%s\" is "
                     "summed over more than two inputs.", a)
                return _exponential_space_einsum(equation, *inputs)

        temp = inputs[0]
        temp_axis_labels = input_axis_labels[0]
        for i in range(len(inputs) - 1):
            axes_to_sum = set(temp_axis_labels) & set(input_axis_labels[i + 1]) - set(output_axis_labels)
            temp, temp_axis_labels = _einsum_reduction(temp, temp_axis_labels, inputs[i + 1],
                                                       input_axis_labels[i + 1], axes_to_sum)

        missing_indices = set(temp_axis_labels) - set(output_axis_labels)
        if missing_indices:
            axis = [i for i, a in enumerate(temp_axis_labels) if a not in output_axis_labels]
            temp = math_ops.reduce_sum(temp, axis=axis)
            temp_axis_labels = "".join(a for a in temp_axis_labels if a in output_axis_labels)
        if sorted(temp_axis_labels) != sorted(output_axis_labels):
            raise ValueError("Invalid equation: %s" % equation)

        perm = [temp_axis_labels.index(a) for a in output_axis_labels]
        return _transpose_if_necessary(temp, perm)


def _einsum_parse_and_resolve_equation(equation, input_shapes):
    """Input labels (ellipses resolved to unused letters) and output labels."""
    equation = equation.replace(" ", "")
    match = re.match("^([a-zA-Z,.]+)(->[a-zA-Z.]*)?$", equation)
    if not match:
        raise ValueError("Indices have incorrect format: %s" % equation)

    input_axis_labels = match.group(1).split(",")
    output_axis_labels = match.group(2)[2:] if match.group(2) else None

    if len(input_shapes) != len(input_axis_labels):
        raise ValueError('Got %d arguments for equation "%s", expecting %d' %
                         (len(input_shapes), equation, len(input_axis_labels)))

    ellipsis_axes = ""
    if "..." in equation:
        unused = "".join([c for c in string.ascii_letters if c not in "".join(input_axis_labels)])
        for i, ax in enumerate(input_axis_labels):
            if "..." in ax:
                parts = ax.split("...")
                if len(parts) != 2:
                    raise ValueError("Unable to resolve ellipsis. Excess number found.")
                if input_shapes[i].ndims is None:
                    raise ValueError("Unable to statically infer ellipsis axes.")
                n = input_shapes[i].ndims - len("".join(parts))
                if n < 0:
                    raise ValueError("Ellipses lengths do not match.")
                if len(unused) < n:
                    raise ValueError("Unable to resolve ellipsis, too many distinct labels.")
                replace_axes = unused[-n:] if n > 0 else ""
                input_axis_labels[i] = input_axis_labels[i].replace("...", replace_axes)
                if len(replace_axes) > len(ellipsis_axes):
                    ellipsis_axes = replace_axes

        if any(["." in ax for ax in input_axis_labels]):
            raise ValueError('period "." found outside of ellipsis')

        if output_axis_labels is not None:
            output_axis_labels = output_axis_labels.replace("...", ellipsis_axes)
            if "." in output_axis_labels:
                raise ValueError('period "." found outside of ellipsis')

    if output_axis_labels is None:
        axis_labels = set("".join(input_axis_labels)) - set(ellipsis_axes)
        indices = "".join(sorted(axis_labels))
        counts = {ax: 0 for ax in indices}
        for axes_ in input_axis_labels:
            for ax in axes_:
                if ax not in ellipsis_axes:
                    counts[ax] += 1
        output_axis_labels = ellipsis_axes + "".join(sorted(ax for ax in axis_labels if counts[ax] == 1))

    return input_axis_labels, output_axis_labels


def _einsum_reduction(t0, t0_axis_labels, t1, t1_axis_labels, axes_to_sum):
    """The two-argument einsum: transposes, then Mul (nothing summed) or a (batch) MatMul."""
    if len(t0_axis_labels) != len(t0.get_shape()):
        raise ValueError("Tensor t0 of rank %d does not match einsum reduction of length %d" %
                         (len(t0.get_shape()), len(t0_axis_labels)))
    if len(t1_axis_labels) != len(t1.get_shape()):
        raise ValueError("Tensor t1 of rank %d does not match einsum reduction of length %d" %
                         (len(t1.get_shape()), len(t1_axis_labels)))

    assert all(a in t0_axis_labels and a in t1_axis_labels for a in axes_to_sum)
    preserved_axes = (set(t0_axis_labels) & set(t1_axis_labels)) - axes_to_sum
    broadcast_axes = {}
    for i, sym_list in enumerate([t0_axis_labels, t1_axis_labels]):
        broadcast_axes[i] = set(sym_list) - preserved_axes - axes_to_sum

    def sort_key(input_index, a):
        if a in preserved_axes:
            return (-1, a)
        elif ((input_index == 0 and a in broadcast_axes[0]) or
              (input_index == 1 and a in axes_to_sum)):
            return (0, a)
        else:
            return (1, a)

    axis_labels = [t0_axis_labels, t1_axis_labels]
    sorted_axes = [sorted(sym_list, key=lambda a, i=i: sort_key(i, a)) for i, sym_list in enumerate(axis_labels)]
    inputs = [t0, t1]
    for i, axes_str in enumerate(axis_labels):
        perm = [axes_str.find(a) for a in sorted_axes[i]]
        inputs[i] = _transpose_if_necessary(inputs[i], perm)
    t0, t1 = inputs

    if not axes_to_sum:
        for _ in broadcast_axes[1]:
            t0 = array_ops.expand_dims(t0, -1)
        for _ in broadcast_axes[0]:
            t1 = array_ops.expand_dims(t1, len(preserved_axes))
        product = math_ops.multiply(t0, t1)
        product_axes = sorted_axes[0] + sorted_axes[1][len(preserved_axes):]
        return product, "".join(product_axes)

    t0_shape = _get_shape(t0)
    num_broadcast_elements_t0 = _total_size(t0_shape[len(preserved_axes):-len(axes_to_sum)])
    num_summed_elements = _total_size(t0_shape[-len(axes_to_sum):])
    new_shape = t0_shape[:len(preserved_axes)] + [num_broadcast_elements_t0, num_summed_elements]
    t0 = _reshape_if_necessary(t0, new_shape)

    t1_shape = _get_shape(t1)
    num_broadcast_elements_t1 = _total_size(t1_shape[len(preserved_axes) + len(axes_to_sum):])
    new_shape = t1_shape[:len(preserved_axes)] + [num_summed_elements, num_broadcast_elements_t1]
    t1 = _reshape_if_necessary(t1, new_shape)

    product = math_ops.matmul(t0, t1)

    uncompacted_shape = (t0_shape[:len(preserved_axes) + len(broadcast_axes[0])] +
                         t1_shape[len(t1_shape) - len(broadcast_axes[1]):])
    product = _reshape_if_necessary(product, uncompacted_shape)

    product_axes = (sorted_axes[0][:len(preserved_axes) + len(broadcast_axes[0])] +
                    sorted_axes[1][len(sorted_axes[1]) - len(broadcast_axes[1]):])
    return product, "".join(product_axes)


def _transpose_if_necessary(tensor, perm):
    if perm != list(range(len(perm))):
        return array_ops.transpose(tensor, perm=perm)
    return tensor


def _is_tensor(value) -> bool:
    from ..graph import Tensor

    return isinstance(value, Tensor)


def _reshape_if_necessary(tensor, new_shape):
    new_shape = tuple(-1 if x is None else x for x in new_shape)
    cur_shape = tuple(x.value for x in tensor.get_shape().dims)
    if (len(new_shape) == len(cur_shape) and
            all(not _is_tensor(d1) and (d0 == d1 or d1 == -1) for d0, d1 in zip(cur_shape, new_shape))):
        return tensor
    return array_ops.reshape(tensor, new_shape)


def _get_shape(tensor):
    shape = tensor.get_shape().as_list()
    none_indices = [i for i, d in enumerate(shape) if d is None]
    if none_indices:
        shape_tensor = array_ops.shape(tensor)
        for i in none_indices:
            shape[i] = shape_tensor[i]
    return shape


def _total_size(shape_values):
    result = 1
    for val in shape_values:
        result *= val
    return result


def _exponential_space_einsum(equation, *inputs):
    """Fallback that supports summing an index over more than two inputs."""
    inputs = list(inputs)
    input_shapes = [x.get_shape() for x in inputs]
    idx_in, idx_out = _einsum_parse_and_resolve_equation(equation, input_shapes)

    idx_all = set("".join(idx_in) + idx_out)
    indices = "".join(sorted(idx_all))

    missing_idx = set(idx_out).difference(idx_all)
    if missing_idx:
        raise ValueError("Unknown output axes: %s" % missing_idx)

    axis_order = {}
    for ax in indices:
        if ax not in idx_out:
            axis_order[ax] = len(axis_order)
    for ax in idx_out:
        axis_order[ax] = len(axis_order)

    for i, (input_, axes_) in enumerate(zip(inputs, idx_in)):
        if input_.get_shape().ndims != len(axes_):
            raise ValueError("Input %d with axes %s has incorrect number of dimensions (expected %d, got %d)" %
                             (i, axes_, len(axes_), input_.get_shape().ndims))
        sorted_idx = sorted(axes_, key=axis_order.get)
        if len(set(axes_)) != len(axes_):
            raise ValueError("Subscript not supported: an axis appears more than once: %s" % axes_)
        if list(axes_) != sorted_idx:
            permuted = [axes_.find(ax) for ax in sorted_idx]
            inputs[i] = array_ops.transpose(input_, permuted)
            idx_in[i] = sorted_idx

    reduction_idx = []
    shapes = [[dim if dim else -1 for dim in tensor.get_shape().as_list()] for tensor in inputs]

    for j, ax in enumerate(sorted(idx_all, key=axis_order.get)):
        dims = []
        for i, idx in enumerate(idx_in):
            if ax not in idx:
                shapes[i].insert(j, 1)
            else:
                dim = shapes[i][j]
                if isinstance(dim, int) and dim > 1:
                    dims.append(dim)
        if len(set(dims)) > 1:
            raise ValueError("Dimension mismatch on axis: %s" % ax)
        if ax not in idx_out:
            reduction_idx.append(j)

    expanded_inputs = [array_ops.reshape(input_, shape) for input_, shape in zip(inputs, shapes)]
    expanded_output = 1
    for input_ in expanded_inputs:
        expanded_output *= input_
    return math_ops.reduce_sum(expanded_output, reduction_idx)


# =====================================================================================
# Einsum equations with a label repeated within one subscript
# =====================================================================================
# The Einsum op's entry (extra_ops.py) hands these here: a trace / diagonal (``ii->i``)
# and the "un-trace" its gradient builds (``i->ii``, values on the diagonal).
def _split_equation(equation: str, count: int):
    """(input subscripts, output subscripts or None), TF's errors for a bad equation."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ShapeError(f"Expecting exactly one '->' in einsum equation: {equation}")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    subs = lhs.split(",")
    if len(subs) != count or count not in (1, 2):
        raise ShapeError(f"Expecting 1 or 2 input subscripts in equation '{equation}' but got: {len(subs)}")
    for s in subs + ([out] if out is not None else []):
        if s.replace("...", "").strip(string.ascii_letters) or s.count("...") > 1:
            raise ShapeError(f"Invalid einsum equation: {equation}")
    return subs, out


def _resolve_labels(subs, ranks):
    """Tokens per input: letters, and ints for ellipsis positions (right-aligned across
    inputs, 0 = the outermost); also the ellipsis length."""
    lengths = []
    for s, rank in zip(subs, ranks):
        named = len(s.replace("...", ""))
        if "..." in s:
            if rank < named:
                raise ShapeError(f"Input rank {rank} is smaller than the number of labels in '{s}'")
            lengths.append(rank - named)
        else:
            if rank != named:
                raise ShapeError(f"Expected input rank {named} for subscripts '{s}' but got rank {rank}")
            lengths.append(0)
    n_ell = max(lengths) if lengths else 0
    tokens = []
    for s, n in zip(subs, lengths):
        before, _, after = s.partition("...")
        tokens.append(list(before) + list(range(n_ell - n, n_ell)) + list(after))
    return tokens, n_ell


def _output_tokens(out, tokens, n_ell):
    if out is None:
        counts: dict = {}
        for labels in tokens:
            for t in labels:
                if isinstance(t, str):
                    counts[t] = counts.get(t, 0) + 1
        return list(range(n_ell)) + sorted(t for t, c in counts.items() if c == 1)
    before, ell, after = out.partition("...")
    return list(before) + (list(range(n_ell)) if ell else []) + list(after)


def _mask_equal(ctx, shape, pairs):
    """pred[shape]: True where dims p and q hold the same index for every (p, q)."""
    from .matrix_ops import _I64, _tt

    mask = None
    for p, q in pairs:
        a = ctx.b.value("iota", [], {"dim": p}, result_type=_tt(_I64, shape))
        b = ctx.b.value("iota", [], {"dim": q}, result_type=_tt(_I64, shape))
        eq = ctx.b.value("compare", [a, b], {"dir": "eq"})
        mask = eq if mask is None else ctx.b.value("and", [mask, eq])
    return mask


def _zeros_like_shape(ctx, value, shape):
    return ctx.broadcast_in_dim(ctx.scalar(0, value.type.elem), tuple(shape), [])


def _take_diagonals(ctx, value, labels):
    """Repeated labels of one operand: keep the diagonal (mask, then sum one of the dims)."""
    labels = list(labels)
    while True:
        seen: dict = {}
        repeat = None
        for i, t in enumerate(labels):
            if t in seen:
                repeat = (seen[t], i)
                break
            seen[t] = i
        if repeat is None:
            return value, labels
        p, q = repeat
        shape = tuple(ctx.canon(d) for d in value.type.shape)
        ctx.unify(shape[p], shape[q], (shape,))
        shape = tuple(ctx.canon(d) for d in value.type.shape)
        masked = ctx.b.value("select", [_mask_equal(ctx, shape, [(p, q)]), value,
                                          _zeros_like_shape(ctx, value, shape)])
        value = ctx.reduce(masked, "sum", [q])
        del labels[q]


def lower_einsum_with_diagonals(ctx, equation: str, values):
    """Lower an Einsum whose subscripts repeat a label (diagonals taken or made with
    iota masks; the rest as a transpose / reshape / ``dot`` contraction)."""
    try:
        subs, out = _split_equation(equation, len(values))
        tokens, n_ell = _resolve_labels(subs, [v.type.rank for v in values])
    except ShapeError as e:
        ctx.fail(str(e))
    out_tokens = _output_tokens(out, tokens, n_ell)
    elem = values[0].type.elem
    if elem.is_pred:
        ctx.fail("Einsum of bool values has no kernel")
    values = list(values)
    labels = [list(t) for t in tokens]
    for i in range(len(values)):
        values[i], labels[i] = _take_diagonals(ctx, values[i], labels[i])
    # Ellipsis dims of size 1 that broadcast against a larger one: drop them (the operand
    # is constant along that dim); an output dim no operand keeps is re-inserted as 1.
    if len(values) == 2:
        for i in range(2):
            other = 1 - i
            shape = [ctx.canon(d) for d in values[i].type.shape]
            other_shape = dict(zip(labels[other], [ctx.canon(d) for d in values[other].type.shape]))
            keep = [k for k, t in enumerate(labels[i])
                    if not (isinstance(t, int) and shape[k] == 1 and t in other_shape and other_shape[t] != 1)]
            if len(keep) != len(labels[i]):
                values[i] = ctx.reshape(values[i], tuple(shape[k] for k in keep))
                labels[i] = [labels[i][k] for k in keep]
    # Labels only one operand has and the output lacks: summed away first.
    for i in range(len(values)):
        others = set(t for j, ls in enumerate(labels) if j != i for t in ls)
        drop = [k for k, t in enumerate(labels[i]) if t not in out_tokens and t not in others]
        if drop:
            values[i] = ctx.reduce(values[i], "sum", drop)
            labels[i] = [t for k, t in enumerate(labels[i]) if k not in drop]
    if len(values) == 1:
        result, result_labels = values[0], labels[0]
    else:
        result, result_labels = _contract_pair(ctx, values[0], labels[0], values[1], labels[1], out_tokens)
    return _to_output(ctx, result, result_labels, out_tokens)


def _contract_pair(ctx, x, xl, y, yl, out_tokens):
    xs = dict(zip(xl, [ctx.canon(d) for d in x.type.shape]))
    ys = dict(zip(yl, [ctx.canon(d) for d in y.type.shape]))
    for t in xl:
        if t in ys:
            ctx.unify(xs[t], ys[t], (tuple(xs.values()), tuple(ys.values())))
    xs = dict(zip(xl, [ctx.canon(d) for d in x.type.shape]))
    ys = dict(zip(yl, [ctx.canon(d) for d in y.type.shape]))
    batch = [t for t in xl if t in ys and t in out_tokens]
    contract = [t for t in xl if t in ys and t not in out_tokens]
    free_x = [t for t in xl if t not in ys]
    free_y = [t for t in yl if t not in xs]
    x = ctx.transpose(x, [xl.index(t) for t in batch + free_x + contract])
    y = ctx.transpose(y, [yl.index(t) for t in batch + contract + free_y])
    bdims = [xs[t] for t in batch]
    fx, fy = [xs[t] for t in free_x], [ys[t] for t in free_y]
    nb = len(batch)
    if not contract:
        x = ctx.reshape(x, tuple(bdims + fx + [1] * len(fy)))
        y = ctx.reshape(y, tuple(bdims + [1] * len(fx) + fy))
        return ctx.elementwise("mul", x, y), batch + free_x + free_y
    c = dims_product([xs[t] for t in contract])
    x = ctx.reshape(x, tuple(bdims + [dims_product(fx), c]))
    y = ctx.reshape(y, tuple(bdims + [c, dims_product(fy)]))
    attrs = {"contract": [[nb + 1], [nb]]}
    if nb:
        attrs["batch"] = [list(range(nb)), list(range(nb))]
    product = ctx.b.value("dot", [x, y], attrs)
    return ctx.reshape(product, tuple(bdims + fx + fy)), batch + free_x + free_y


def _to_output(ctx, value, labels, out_tokens):
    """Transpose to the output order; labels no operand kept are size-1 dims; repeated
    output labels (TF's gradient's ``i->ii``) put the values on the diagonal."""
    unique = []
    for t in out_tokens:
        if t not in unique:
            unique.append(t)
    present = [t for t in unique if t in labels]
    value = ctx.transpose(value, [labels.index(t) for t in present])
    if len(present) != len(unique):
        dims = dict(zip(present, [ctx.canon(d) for d in value.type.shape]))
        value = ctx.reshape(value, tuple(dims.get(t, 1) for t in unique))
    if len(unique) == len(out_tokens):
        return value
    dims = dict(zip(unique, [ctx.canon(d) for d in value.type.shape]))
    shape = tuple(dims[t] for t in out_tokens)
    spread = ctx.broadcast_in_dim(value, shape, [out_tokens.index(t) for t in unique])
    pairs = [(out_tokens.index(t), k) for k, t in enumerate(out_tokens) if out_tokens.index(t) != k]
    return ctx.b.value("select", [_mask_equal(ctx, shape, pairs), spread, _zeros_like_shape(ctx, spread, shape)])


TF_EXPORTS = ["einsum", "trace"]
LINALG_EXPORTS = {"einsum": einsum, "trace": trace}
