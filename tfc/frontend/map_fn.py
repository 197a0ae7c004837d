"""tf.map_fn, tf.scan, tf.foldl and tf.foldr over dense tensors, built as TensorFlow builds
them in graph mode with v1 control flow: the elements unstacked into TensorArrays, one
``tf.while_loop`` reading element i and writing result i, the results stacked (map_fn,
scan) or the accumulator returned (folds). Names follow TF (``map/TensorArray``,
``map/TensorArrayUnstack/...``, ``map/while/...``, ``map/TensorArrayStack/...``).
"""
from __future__ import annotations

from . import dtypes
from .control_flow import flatten, pack_sequence_as, while_loop
from .convert import convert_to_tensor
from .graph import get_default_graph, name_scope
from .tensor_array import TensorArray
from .tensor_shape import TensorShape, dimension_value


def _leading_dim(elems_flat):
    n_static = dimension_value(elems_flat[0].shape[0]) if elems_flat[0].shape.dims is not None else None
    if n_static is not None:
        return n_static, n_static
    from .ops.array_ops import shape

    return None, shape(elems_flat[0])[0]


def _elements_arrays(elems_flat, n):
    arrays = [TensorArray(dtype=t.dtype, size=n, dynamic_size=False, infer_shape=True) for t in elems_flat]
    return [ta.unstack(t) for ta, t in zip(arrays, elems_flat)]


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """fn applied to each slice of ``elems`` along axis 0; the results stacked."""
    if fn_output_signature is None:
        fn_output_signature = dtype
    if not callable(fn):
        raise TypeError(f"fn must be callable. Got: {fn}")
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: a Python loop (tfc/frontend/eager)
        from .eager import control_flow as eager_control_flow

        return eager_control_flow.map_fn(fn, elems, fn_output_signature)
    parallel_iterations = parallel_iterations or 10
    elems_flat = flatten(elems)
    if not elems_flat:
        raise ValueError(f"elems must be a Tensor or (possibly nested) sequence of Tensors. Got {elems}, which does "
                         f"not contain any Tensors.")
    with name_scope(name, "map", elems_flat):
        elems_flat = [convert_to_tensor(t, name="elem") for t in elems_flat]
        if elems_flat[0].shape.ndims is not None and elems_flat[0].shape.ndims < 1:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
        n_static, n = _leading_dim(elems_flat)
        elems_ta = _elements_arrays(elems_flat, n)
        i = convert_to_tensor(0, dtype=dtypes.int32)
        if fn_output_signature is None:
            result_dtypes = [t.dtype for t in elems_flat]
            result_structure = elems
        else:
            result_dtypes = [dtypes.as_dtype(d) for d in flatten(fn_output_signature)]
            result_structure = fn_output_signature
        results_ta = [TensorArray(dtype=d, size=n, dynamic_size=False, infer_shape=infer_shape,
                                  element_shape=None) for d in result_dtypes]

        def compute(i, tas):
            values = pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            result = fn(values)
            flat = flatten(result)
            if len(flat) != len(tas):
                raise ValueError(f"The two structures don't have the same number of elements. First structure: "
                                 f"{result_structure}, second structure: {result}.")
            tas = [ta.write(i, value) for ta, value in zip(tas, flat)]
            return (i + 1, tas)

        _, results = while_loop(lambda i, _: i < n, compute, (i, results_ta), parallel_iterations=parallel_iterations,
                                back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        stacked = [r.stack() for r in results]
        for r in stacked:
            r.set_shape(TensorShape([n_static]).concatenate(r.shape[1:]))
        return pack_sequence_as(result_structure, stacked)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, infer_shape=True,
         reverse=False, name=None):
    """The running ``fn(accumulator, element)`` over axis 0 of ``elems``, every step kept."""
    if not callable(fn):
        raise TypeError(f"fn must be callable. Got: {fn}")
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: a Python loop (tfc/frontend/eager)
        from .eager import control_flow as eager_control_flow

        return eager_control_flow.scan(fn, elems, initializer, reverse)
    elems_flat = flatten(elems)
    with name_scope(name, "scan", elems_flat):
        elems_flat = [convert_to_tensor(t, name="elem") for t in elems_flat]
        n = dimension_value(elems_flat[0].shape[0])
        if n is None:
            from .ops.array_ops import shape

            n = shape(elems_flat[0])[0]
        elems_ta = [TensorArray(dtype=t.dtype, size=n, dynamic_size=False, element_shape=t.shape[1:],
                                infer_shape=True) for t in elems_flat]
        elems_ta = [ta.unstack(t) for ta, t in zip(elems_ta, elems_flat)]
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            i = 1
        else:
            a_flat = [convert_to_tensor(t) for t in flatten(initializer)]
            i = 0
        accs_ta = [TensorArray(dtype=a.dtype, size=n, element_shape=a.shape if infer_shape else None,
                               dynamic_size=False, infer_shape=infer_shape) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]
        structure = elems if initializer is None else initializer

        def compute(i, a_flat, tas):
            packed_elems = pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            a_out = fn(pack_sequence_as(structure, a_flat), packed_elems)
            flat_a_out = flatten(a_out)
            tas = [ta.write(i, value) for ta, value in zip(tas, flat_a_out)]
            return (i - 1 if reverse else i + 1, flat_a_out, tas)

        if reverse:
            initial_i = n - 1 - i
            condition = lambda i, _1, _2: i >= 0  # noqa: E731
        else:
            initial_i = i
            condition = lambda i, _1, _2: i < n  # noqa: E731
        _, _, r_a = while_loop(condition, compute, (initial_i, a_flat, accs_ta), parallel_iterations=parallel_iterations,
                               back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        results = [r.stack() for r in r_a]
        n_static = dimension_value(elems_flat[0].shape[0]) if elems_flat[0].shape.dims is not None else None
        for r in results:
            r.set_shape(TensorShape([n_static]).concatenate(r.shape[1:]))
        return pack_sequence_as(structure, results)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, default_name, reverse):
    if not callable(fn):
        raise TypeError(f"{fn} is not callable. Please provide a callable function.")
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: a Python loop (tfc/frontend/eager)
        from .eager import control_flow as eager_control_flow

        return eager_control_flow.fold(fn, elems, initializer, reverse)
    with name_scope(name, default_name, [elems]):
        elems_flat = [convert_to_tensor(t, name="elem") for t in flatten(elems)]
        n = dimension_value(elems_flat[0].shape[0]) if elems_flat[0].shape.dims is not None else None
        if not n:
            from .ops.array_ops import shape

            n = shape(elems_flat[0])[0]
        elems_ta = pack_sequence_as(elems, [TensorArray(dtype=t.dtype, size=n, dynamic_size=False,
                                                        infer_shape=True).unstack(t) for t in elems_flat])
        read = lambda index: pack_sequence_as(elems, [ta.read(index) for ta in flatten(elems_ta)])  # noqa: E731
        if reverse:
            if initializer is None:
                i = n - 1
                a = read(i)
            else:
                i = n
                a = initializer

            def compute(i, a):
                i -= 1
                return [i, fn(a, read(i))]

            condition = lambda i, a: i > 0  # noqa: E731
        else:
            from .ops.constant_op import constant

            if initializer is None:
                a = read(0)
                i = constant(1)
            else:
                a = initializer
                i = constant(0)

            def compute(i, a):
                a = fn(a, read(i))
                return [i + 1, a]

            condition = lambda i, a: i < n  # noqa: E731
        _, r_a = while_loop(condition, compute, [i, a], parallel_iterations=parallel_iterations,
                            back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        return r_a


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``fn(accumulator, element)`` over axis 0 of ``elems``, left to right: the last value."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldl", False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``fn(accumulator, element)`` over axis 0 of ``elems``, right to left: the last value."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldr", True)


TF_EXPORTS = ["map_fn", "scan", "foldl", "foldr"]
