"""tf.cond, tf.while_loop, tf.map_fn, tf.scan and the folds in eager mode: TF 1.x runs
them as Python (the predicate's value picks the branch; the loop runs while the
condition's value is true), each op inside running eagerly."""
from __future__ import annotations


def _flatten(structure):
    from ..control_flow import flatten

    return flatten(structure)


def _pack(structure, flat):
    from ..control_flow import pack_sequence_as

    return pack_sequence_as(structure, flat)


def cond(pred, true_fn, false_fn, strict=False):
    """TF 1.x's eager tf.cond."""
    from ..control_flow import _unpack_if_singleton

    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    result = true_fn() if pred else false_fn()
    return result if strict else _unpack_if_singleton(result)


def while_loop(cond_fn, body, loop_vars, maximum_iterations=None, return_same_structure=False):
    """TF 1.x's eager tf.while_loop: a Python loop."""
    from ..convert import convert_to_tensor

    if not loop_vars:
        raise ValueError("No loop variables provided")
    try_to_pack = len(loop_vars) == 1 and not return_same_structure
    packed = False
    if maximum_iterations is not None:
        maximum_iterations = int(convert_to_tensor(maximum_iterations))
    iterations = 0
    while (maximum_iterations is None or iterations < maximum_iterations) and cond_fn(*loop_vars):
        loop_vars = body(*loop_vars)
        iterations += 1
        if try_to_pack and not isinstance(loop_vars, (list, tuple)):
            packed = True
            loop_vars = (loop_vars,)

    def convert(x):
        return convert_to_tensor(x) if not hasattr(x, "flow") else x  # TensorArrays stay

    loop_vars = _pack(loop_vars, [convert(x) for x in _flatten(loop_vars)])
    return loop_vars[0] if packed else loop_vars


def map_fn(fn, elems, dtype=None):
    """fn of each slice of ``elems`` (axis 0), stacked."""
    from ..convert import convert_to_tensor
    from ..ops.concat_ops import stack

    flat = [convert_to_tensor(t) for t in _flatten(elems)]
    if flat[0].shape.ndims is not None and flat[0].shape.ndims < 1:
        raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n = int(flat[0].shape[0])
    results = [_flatten(fn(_pack(elems, [t[i] for t in flat]))) for i in range(n)]
    structure_source = elems if dtype is None else dtype
    stacked = [stack([r[k] for r in results]) for k in range(len(results[0]))] if results else []
    if dtype is None and results and len(results[0]) != len(flat):
        structure_source = fn(_pack(elems, [t[0] for t in flat]))
    return _pack(structure_source, stacked)


def scan(fn, elems, initializer=None, reverse=False):
    """The running fn(accumulator, element) over axis 0, every step stacked."""
    from ..convert import convert_to_tensor
    from ..ops.concat_ops import stack

    flat = [convert_to_tensor(t) for t in _flatten(elems)]
    n = int(flat[0].shape[0])
    order = range(n - 1, -1, -1) if reverse else range(n)
    outputs = []
    if initializer is None:
        first = order[0]
        accumulator = _pack(elems, [t[first] for t in flat])
        outputs.append(_flatten(accumulator))
        order = order[1:]
    else:
        accumulator = initializer
    for i in order:
        accumulator = fn(accumulator, _pack(elems, [t[i] for t in flat]))
        outputs.append(_flatten(accumulator))
    if reverse:
        outputs.reverse()
    structure = accumulator
    return _pack(structure, [stack([o[k] for o in outputs]) for k in range(len(outputs[0]))])


def fold(fn, elems, initializer=None, reverse=False):
    """tf.foldl / tf.foldr: the last accumulator of fn(accumulator, element)."""
    from ..convert import convert_to_tensor

    flat = [convert_to_tensor(t) for t in _flatten(elems)]
    n = int(flat[0].shape[0])
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    if initializer is None:
        if not order:
            raise ValueError("elems must not be empty when no initializer is given")
        accumulator = _pack(elems, [t[order[0]] for t in flat])
        order = order[1:]
    else:
        accumulator = initializer
    for i in order:
        accumulator = fn(accumulator, _pack(elems, [t[i] for t in flat]))
    return accumulator
