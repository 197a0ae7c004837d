"""apply_op: create an op of a registered type the way TF's generated wrappers do.

Opens the op's name scope (so converted arguments are named ``MatMul/a``), converts
each input with the dtype already bound to its type attr, binds type and length attrs
from the inputs, checks that inputs sharing a type attr agree, and creates the op named
after the scope.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from . import dtypes
from .convert import convert_to_tensor
from .graph import Tensor, _graph_from_inputs, colocate_with
from .registry import lookup_op_type


def _graph_of(values):
    """The inputs' graph (TF checks that they all share one), else the default graph."""
    flat = []
    for value in values:
        flat.extend(value if isinstance(value, (list, tuple)) else [value])
    return _graph_from_inputs(flat)


def apply_op(op_type: str, inputs, attrs: Optional[dict] = None, name: Optional[str] = None,
             control_inputs=()):
    """Create an op; ``inputs`` is a list in the entry's input order (lists for list args)."""
    entry = lookup_op_type(op_type)
    attrs = dict(attrs or {})
    inputs = list(inputs)
    if len(inputs) != len(entry.input_specs):
        raise TypeError(f"{op_type} takes {len(entry.input_specs)} inputs, got {len(inputs)}")
    graph = _graph_of(inputs)
    eager_apply = getattr(graph, "_eager_apply", None)  # eager mode: run the op now (tfc/frontend/eager)
    if eager_apply is not None:
        return eager_apply(entry, inputs, attrs, name)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        flat: list = []
        bound: dict = {}
        must_colocate: list = []
        for spec, value in zip(entry.input_specs, inputs):
            if spec.number_attr:
                tensors = _convert_list(entry, spec, value, attrs, bound)
                flat.extend(tensors)
            else:
                tensors = [_convert_one(entry, spec, value, attrs, bound)]
                flat.extend(tensors)
            if spec.is_ref:
                must_colocate.extend(tensors)
        for key, value in bound.items():
            if not key.startswith("__source_"):
                attrs.setdefault(key, value)
        # TF's _MaybeColocateWith: an op is colocated with its reference-typed inputs
        # (Assign gets ``_class: loc:@var`` and the variable's device).
        with contextlib.ExitStack() as stack:
            for tensor in must_colocate:
                stack.enter_context(colocate_with(tensor.op))
            return graph.create_op(op_type, flat, name=scope, attrs=attrs, control_inputs=control_inputs)


def _bound_dtype(spec, attrs: dict, bound: dict):
    if spec.fixed_dtype:
        return dtypes.as_dtype(spec.fixed_dtype)
    value = attrs.get(spec.type_attr, bound.get(spec.type_attr))
    return None if value is None else dtypes.as_dtype(value)


def _default_dtype(entry, spec):
    if spec.type_attr:
        attr = entry.attrs[spec.type_attr]
        default = attr.default
        if isinstance(default, dtypes.DType) or isinstance(default, str):
            return dtypes.as_dtype(default)
    return None


def _convert_one(entry, spec, value, attrs: dict, bound: dict) -> Tensor:
    want = _bound_dtype(spec, attrs, bound)
    try:
        tensor = convert_to_tensor(value, dtype=want, name=spec.name, as_ref=spec.is_ref,
                                   preferred_dtype=None if want else _default_dtype(entry, spec))
    except TypeError as e:
        if want is None or isinstance(value, Tensor):
            raise
        # TF's op_def_library wraps a failed python-value conversion like this.
        raise TypeError(f"Expected {want.name} passed to parameter '{spec.name}' of op '{entry.type_name}', got "
                        f"{value!r} of type '{type(value).__name__}' instead. Error: {e}") from e
    except ValueError as e:
        if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
            raise TypeError(_mismatch(entry, spec, value.dtype, want, attrs, bound)) from e
        raise
    if spec.is_ref and not tensor.dtype.is_ref_dtype:
        raise TypeError(f"'{entry.type_name}' Op requires that input '{spec.name}' be a mutable tensor (e.g.: a "
                        f"tf.Variable)")
    base = tensor.dtype.base_dtype
    if want is not None and base != want:
        raise TypeError(_mismatch(entry, spec, base, want, attrs, bound))
    if spec.type_attr and spec.type_attr not in bound and spec.type_attr not in attrs:
        bound[spec.type_attr] = base
        bound[f"__source_{spec.type_attr}"] = spec.name
    return tensor


def _mismatch(entry, spec, got, want, attrs, bound) -> str:
    source = bound.get(f"__source_{spec.type_attr}")
    got_name = got.base_dtype.name if isinstance(got, dtypes.DType) else got
    if source:
        return (f"Input '{spec.name}' of '{entry.type_name}' Op has type {got_name} that does not match type "
                f"{want.name} of argument '{source}'.")
    return f"Input '{spec.name}' of '{entry.type_name}' Op has type {got_name} that does not match expected type of {want.name}."


def _convert_list(entry, spec, values, attrs: dict, bound: dict) -> list:
    """TF's _apply_op_helper for list inputs: one dtype for all (bound, else the first
    Tensor's, else each value's own), TF's TypeError when they do not all match."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"Expected list for '{spec.name}' argument to '{entry.type_name}' Op, not {values!r}.")
    want = _bound_dtype(spec, attrs, bound)
    if want is None and spec.type_attr:
        want = next((v.dtype.base_dtype for v in values if isinstance(v, Tensor)), None)
    preferred = _default_dtype(entry, spec) if want is None else None
    try:
        tensors = [convert_to_tensor(value, dtype=want, name=f"{spec.name}_{i}", as_ref=spec.is_ref,
                                     preferred_dtype=preferred) for i, value in enumerate(values)]
        kinds = [t.dtype.base_dtype for t in tensors]
        if spec.number_attr and len(set(kinds)) > 1:
            raise TypeError()
    except (TypeError, ValueError):
        raise TypeError(f"Tensors in list passed to '{spec.name}' of '{entry.type_name}' Op have types "
                        f"[{_observed_types(values, spec.is_ref)}] that don't all match.") from None
    bound.setdefault(spec.number_attr, len(tensors))
    if spec.type_attr and kinds:
        bound.setdefault(spec.type_attr, kinds[0])
    return tensors


def _observed_types(values, as_ref: bool) -> str:
    """What the values convert to on their own (TF converts them again for the message)."""
    observed = []
    for value in values:
        try:
            observed.append(convert_to_tensor(value, as_ref=as_ref).dtype.base_dtype.name)
        except (TypeError, ValueError):
            observed.append("<NOT CONVERTIBLE TO TENSOR>")
    return ", ".join(observed)
