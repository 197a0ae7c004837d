"""tf.GradientTape: records the ops run eagerly while it is active and differentiates
them with the graph-mode gradient registry.

Gradients run *per op, eagerly*: ``gradient()`` walks the recorded ops backwards and
calls each op's registry ``gradient(op, *output_grads)`` — the very functions
``tf.gradients`` uses — on the recorded op (an EagerOperation with its inputs, outputs
and attrs). Each gradient op runs eagerly on its cached kernel. Why this and not
replaying the tape into a graph: tapes in TF 1.x code change shape every step (Python
control flow, data-dependent loop counts), so a program per tape structure would
recompile often, while per-op gradients reuse the per-op kernels; and gradient ops run
while an outer tape records are recorded by it, so nested tapes (second derivatives)
work with no extra machinery. A loop that must be fast is a ``defun``: inside its trace
the tape is a graph tape and ``gradient()`` is ``tf.gradients`` on the traced graph,
compiled into the function's one program.

Recording: an op is recorded by each active tape that watches one of its inputs (a
watched tensor, a read of a watched variable, or an output of an op it recorded);
outputs of non-trainable dtypes (ints, bools) carry no gradient. Variables read while a
tape records are watched automatically when trainable (``watch_accessed_variables``).
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import dtypes

# Tapes recording now (a tape inside stop_recording() is not in it). Never rebound: the
# executor checks it on every op.
ACTIVE_TAPES: list = []


def _trainable(dtype) -> bool:
    base = dtype.base_dtype
    return base.is_floating or base.is_complex or base in (dtypes.resource, dtypes.variant)


def recording(tensor) -> bool:
    """Whether an active tape follows ``tensor``."""
    key = id(tensor)
    return any(key in tape._tracked for tape in ACTIVE_TAPES)


def record(op, entry) -> None:
    """Called by the executor after each eager op while a tape is active."""
    if entry.not_differentiable:
        return
    inputs = op._inputs
    for tape in ACTIVE_TAPES:
        tracked = tape._tracked
        for t in inputs:
            if id(t) in tracked:
                tape._records.append(op)
                for out in op._outputs:
                    if _trainable(out._eager_dtype):
                        tracked[id(out)] = out
                break


def variable_read(variable, tensor) -> None:
    """A variable was read into ``tensor`` while tapes are active."""
    key = id(variable)
    for tape in ACTIVE_TAPES:
        if key not in tape._watched_variables:
            if not (tape._watch_accessed_variables and variable.trainable):
                continue
            tape._watched_variables[key] = variable
        tape._variable_reads.setdefault(key, []).append(tensor)
        tape._tracked[id(tensor)] = tensor


def _flatten(structure) -> list:
    from ..control_flow import flatten

    return flatten(structure)


def _pack(structure, flat):
    from ..control_flow import pack_sequence_as

    return pack_sequence_as(structure, flat)


def _is_variable(value) -> bool:
    from ..variables import Variable

    return isinstance(value, Variable)


class GradientTape:
    """Record operations for automatic differentiation (TF's tf.GradientTape)."""

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._recording = False
        self._used = False
        self._reset_state()

    def _reset_state(self) -> None:
        self._tracked: dict = {}  # id -> tensor: what gradients flow through (kept alive)
        self._records: list = []  # recorded EagerOperations, in execution order
        self._watched_variables: dict = {}  # id -> variable, in watch order
        self._variable_reads: dict = {}  # id(variable) -> tensors it was read into

    # -- recording -----------------------------------------------------------------------------
    def __enter__(self):
        self._push()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop()
        return False

    def _push(self) -> None:
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an already-active tape.")
        ACTIVE_TAPES.append(self)
        self._recording = True

    def _pop(self) -> None:
        if not self._recording:
            raise ValueError("Tape is not recording.")
        for i in range(len(ACTIVE_TAPES) - 1, -1, -1):
            if ACTIVE_TAPES[i] is self:
                del ACTIVE_TAPES[i]
                break
        self._recording = False

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run in this block are not recorded."""
        if not self._recording:
            raise ValueError("Tape must be recording.")
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Forget everything recorded so far (recording goes on if it was on)."""
        self._reset_state()
        self._used = False

    def watch(self, tensor) -> None:
        """Follow ``tensor`` (a tensor, a variable, or a structure of them)."""
        from .tensor import EagerTensor

        for t in _flatten(tensor):
            if _is_variable(t):
                self._watched_variables[id(t)] = t
            elif isinstance(t, EagerTensor):
                self._tracked[id(t)] = t
            elif not hasattr(t, "dtype"):
                raise ValueError(f"Passed in object of type {type(t)}, not tf.Tensor")
            # a graph tensor (inside a defun trace): tf.gradients differentiates any tensor

    def watched_variables(self) -> tuple:
        return tuple(self._watched_variables.values())

    # -- differentiation ---------------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(sum of ``target``)/d``sources``, in the structure of ``sources``; None where a
        source does not affect the target (or zeros with ``unconnected_gradients='zero'``)."""
        from ..gradients import UnconnectedGradients
        from .tensor import EagerTensor

        if self._used and not self._persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on non-persistent tapes.")
        try:
            unconnected = UnconnectedGradients(getattr(unconnected_gradients, "value", unconnected_gradients))
        except ValueError:
            raise ValueError(f"Unknown value for unconnected_gradients: '{unconnected_gradients}'") from None
        flat_targets = _flatten(target)
        flat_sources = _flatten(sources)
        flat_grads = None if output_gradients is None else _flatten(output_gradients)
        if flat_grads is not None and len(flat_grads) != len(flat_targets):
            raise ValueError(f"{len(flat_grads)} output_gradients for {len(flat_targets)} targets")
        for s in flat_sources:
            if not _is_variable(s) and not hasattr(s, "dtype"):
                raise ValueError(f"Passed in object of type {type(s)}, not tf.Tensor or tf.Variable")
        if not all(isinstance(t, EagerTensor) for t in flat_targets):
            result = _graph_gradient(flat_targets, flat_sources, flat_grads, unconnected)
        else:
            was_recording = self._recording
            if was_recording:
                self._pop()  # the gradient's own ops are not recorded here (outer tapes do record them)
            try:
                result = self._backprop(flat_targets, flat_sources, flat_grads, unconnected)
            finally:
                if was_recording:
                    self._push()
        if not self._persistent:
            self._used = True
            self._reset_state()
        return _pack(sources, result)

    def _backprop(self, targets, sources, output_gradients, unconnected) -> list:
        from ..registry import lookup_op_type
        from .tensor import EagerTensor

        pending: dict = {}  # id(tensor) -> [gradients received]
        for i, t in enumerate(targets):
            if output_gradients is not None and output_gradients[i] is not None:
                from ..convert import convert_to_tensor

                seed = convert_to_tensor(output_gradients[i], dtype=t.dtype.base_dtype)
            else:
                seed = EagerTensor(np.ones(t._array.shape, dtype=t._array.dtype), t.dtype.base_dtype)
            pending.setdefault(id(t), []).append(seed)
        tracked = self._tracked
        for op in reversed(self._records):
            outputs = op._outputs
            if not any(id(o) in pending for o in outputs):
                continue
            entry = lookup_op_type(op._type)
            if entry.gradient is None:
                raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op._type})")
            out_grads = []
            for o in outputs:
                grads = pending.get(id(o))
                if grads is None:
                    out_grads.append(_zeros_like(o) if _trainable(o._eager_dtype) else None)
                else:
                    out_grads.append(_aggregate(grads))
            in_grads = entry.gradient(op, *out_grads)
            in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
            if len(in_grads) != len(op._inputs):
                raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.name} do not match num "
                                 f"inputs {len(op._inputs)}")
            for t, g in zip(op._inputs, in_grads):
                if g is not None and id(t) in tracked and _trainable(t._eager_dtype):
                    pending.setdefault(id(t), []).append(g)
        out = []
        for s in sources:
            if _is_variable(s):
                grads = [g for t in self._variable_reads.get(id(s), ()) for g in pending.get(id(t), ())]
            else:
                grads = pending.get(id(s), [])
            if grads:
                out.append(_aggregate(grads))
            elif unconnected.value == "zero":
                out.append(_zeros_like(s))
            else:
                out.append(None)
        return out


def _aggregate(grads: list):
    if len(grads) == 1:
        return grads[0]
    from ..ops.math_ops import add_n

    return add_n(grads)


def _zeros_like(t):
    from .tensor import EagerTensor

    array = np.asarray(t.numpy() if _is_variable(t) else t._array)
    return EagerTensor(np.zeros(array.shape, dtype=array.dtype), t.dtype.base_dtype)


def _graph_gradient(targets, sources, output_gradients, unconnected) -> list:
    """Inside a defun trace: tf.gradients of the traced graph (variables by their refs)."""
    from ..gradients import gradients

    xs = list(sources)
    return gradients(targets, xs, grad_ys=output_gradients, unconnected_gradients=unconnected)
