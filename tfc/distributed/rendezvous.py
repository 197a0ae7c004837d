"""The worker's rendezvous: tensors a step's _Send nodes produced, waiting for RecvTensor.

Keys are TensorFlow's (rendezvous.cc ``CreateKey``):
``src_device;src_incarnation(16 hex digits);dst_device;edge_name;frame_id:iter_id``.
A RecvTensor may arrive before the RunGraph that produces its value: it waits (until the
value arrives, the RPC's deadline passes, the client goes away, the step is aborted or
cleaned up, or the server stops) rather than failing.
"""
from __future__ import annotations

import collections
import threading
import time

from tfc.frontend import errors

_CLEANED_KEEP = 4096  # step ids remembered after CleanupGraph (a late RecvTensor fails fast)


def make_key(src_device: str, src_incarnation: int, dst_device: str, name: str, frame_iter=(0, 0)) -> str:
    """TF's Rendezvous::CreateKey (the incarnation printed as 16 hex digits, FpToString)."""
    incarnation = int(src_incarnation) & 0xFFFFFFFFFFFFFFFF
    return f"{src_device};{incarnation:016x};{dst_device};{name};{frame_iter[0]}:{frame_iter[1]}"


def parse_key(key: str) -> tuple:
    """(src_device, incarnation, dst_device, edge name, (frame, iter)); InvalidArgumentError if
    ``key`` is not a rendezvous key."""
    parts = key.split(";")
    if len(parts) != 5 or not parts[0] or not parts[2] or not parts[3]:
        raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key}")
    try:
        incarnation = int(parts[1], 16)
        frame, iteration = (int(x) for x in parts[4].split(":"))
    except ValueError:
        raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key}") from None
    return parts[0], incarnation, parts[2], parts[3], (frame, iteration)


class _Step:
    __slots__ = ("values", "error")

    def __init__(self):
        self.values: dict = {}
        self.error = None  # (error class, message) once aborted


class Rendezvous:
    """step id -> {key -> value}, with waiting receivers."""

    def __init__(self, where: str = ""):
        self._where = where
        self._cond = threading.Condition()
        self._steps: dict = {}
        self._cleaned: collections.OrderedDict = collections.OrderedDict()
        self._stopped = None  # (error class, message) once the server stops

    def send(self, step_id: int, key: str, value) -> None:
        with self._cond:
            if step_id in self._cleaned:
                return
            step = self._steps.get(step_id)
            if step is None:
                step = self._steps[step_id] = _Step()
            step.values[key] = value
            self._cond.notify_all()

    def recv(self, step_id: int, key: str, timeout=None, is_active=None):
        """The value sent under ``key`` in step ``step_id``, waiting up to ``timeout`` seconds
        (None: no limit); ``is_active()`` false ends the wait (the caller went away)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._stopped is not None:
                    cls, message = self._stopped
                    raise cls(None, None, message)
                if step_id in self._cleaned:
                    raise errors.AbortedError(None, None, f"Step {step_id} was cleaned up on {self._where} before "
                                                          f"its tensor {key} was received")
                step = self._steps.get(step_id)
                if step is None:
                    step = self._steps[step_id] = _Step()
                if step.error is not None:
                    cls, message = step.error
                    raise cls(None, None, message)
                if key in step.values:
                    return step.values[key]
                wait = 1.0
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise errors.DeadlineExceededError(
                            None, None, f"RecvTensor on {self._where} timed out waiting for {key} (step {step_id})")
                    wait = min(wait, remaining)
                if is_active is not None and not is_active():
                    raise errors.CancelledError(None, None, f"RecvTensor for {key} (step {step_id}) was cancelled")
                self._cond.wait(wait)

    def abort(self, step_id: int, error_class, message: str) -> None:
        with self._cond:
            step = self._steps.get(step_id)
            if step is None:
                step = self._steps[step_id] = _Step()
            if step.error is None:
                step.error = (error_class, message)
            self._cond.notify_all()

    def cleanup(self, step_id: int) -> None:
        with self._cond:
            self._steps.pop(step_id, None)
            self._cleaned[step_id] = True
            while len(self._cleaned) > _CLEANED_KEEP:
                self._cleaned.popitem(last=False)
            self._cond.notify_all()

    def stop(self, message: str) -> None:
        with self._cond:
            self._stopped = (errors.CancelledError, message)
            self._steps.clear()
            self._cond.notify_all()

    def pending_steps(self) -> list:
        with self._cond:
            return sorted(self._steps)
