"""Gradient functions registered from Python, as TF 1.15's ops.py has them:
``tf.RegisterGradient("OpType")`` (a decorator), ``tf.NotDifferentiable`` /
``tf.no_gradient``, and ``tf.AggregationMethod``.

tf.gradients (tfc/frontend/gradients.py) looks an op's gradient up as TF's
``ops.get_gradient_function`` does: under the op's ``_gradient_op_type`` attr (set by
``Graph.gradient_override_map``) or else its type, first among the functions registered
here, then in the op registry (an entry's ``gradient``, or its ``not_differentiable``).
As in TF, a name is registered once: registering a gradient for an op type whose registry
entry already has one (or is not differentiable) raises KeyError.
"""
from __future__ import annotations

import traceback

from .registry import is_registered, lookup_op_type

_NOT_DIFFERENTIABLE = object()
_GRADIENTS: dict = {}  # name -> (function or _NOT_DIFFERENTIABLE, where it was registered)


def _registered_in_op_registry(name: str) -> bool:
    if not is_registered(name):
        return False
    entry = lookup_op_type(name)
    return entry.gradient is not None or entry.not_differentiable


def _register(name: str, value) -> None:
    if name in _GRADIENTS:
        raise KeyError(f"Registering two gradient with name '{name}'! (Previous registration was in "
                       f"{_GRADIENTS[name][1]})")
    if _registered_in_op_registry(name):
        raise KeyError(f"Registering two gradient with name '{name}'! (Previous registration was in tfc's op "
                       f"registry)")
    frame = traceback.extract_stack(limit=4)[0]
    _GRADIENTS[name] = (value, f"{frame.name} {frame.filename}:{frame.lineno}")


class RegisterGradient:
    """Decorator registering ``f(op, *grads) -> [grad per input]`` as the gradient of
    op type ``op_type`` (or of the ops gradient_override_map maps to that name)."""

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f):
        _register(self._op_type, f)
        return f


def NotDifferentiable(op_type):  # noqa: N802 - TF's name
    """Declare ops of ``op_type`` not differentiable: tf.gradients gives their inputs None."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _register(op_type, _NOT_DIFFERENTIABLE)


no_gradient = NotDifferentiable


class _Entry:
    """A registered Python gradient, shaped like a registry entry for tf.gradients."""

    not_differentiable = False

    def __init__(self, function):
        self.gradient = function  # an instance attribute: called unbound, as gradient(op, *grads)


def gradient_entry(op):
    """TF's ops.get_gradient_function for tf.gradients: an object whose ``gradient(op,
    *grads)`` builds the input gradients, or None when the op is not differentiable.
    Raises LookupError with TF's message when no gradient is defined."""
    name = op._attrs.get("_gradient_op_type") if "_gradient_op_type" in op._attrs else op.type
    name = name.decode() if isinstance(name, bytes) else name
    registered = _GRADIENTS.get(name)
    if registered is not None:
        value = registered[0]
        return None if value is _NOT_DIFFERENTIABLE else _Entry(value)
    if is_registered(name):
        entry = lookup_op_type(name)
        if entry.not_differentiable:
            return None
        if entry.gradient is not None:
            return entry
    raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")


class AggregationMethod:
    """How tf.gradients sums the gradients reaching one tensor (TF 1.15's values). tfc adds
    them with one AddN whichever is chosen: the sum is the same."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


TF_EXPORTS = ["AggregationMethod", "NotDifferentiable", "RegisterGradient", "no_gradient"]
