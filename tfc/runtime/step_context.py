"""What a blocking host op needs to know about the step running it.

A queue's dequeue on an empty queue, an enqueue on a full one and an accumulator's
``take_grad`` wait (tfc/frontend/data_flow_ops.py) until another step — often from another
Python thread of the same session (a QueueRunner), or from another client of the same
task — makes them possible. While one waits (a ``Waiter``):

- it does not hold the locks its thread's steps hold (the running session's; a master
  session's, registered by ``step(lock=...)``): the step that would release it needs them.
  They are let go of wholly (a re-entrant lock held several times too) and taken back, in
  the order they were taken, once the wait is over; the waiter takes its resource's own
  lock only after letting go of them, so no thread holds a resource lock while waiting for
  a step lock;
- it honours the step's deadline: ``RunOptions.timeout_in_ms`` (a ``step`` frame), else
  the session's ``ConfigProto.operation_timeout_in_ms`` (counted from when the wait
  began), and on a worker the RunGraph's gRPC deadline; then it fails with TF's
  DeadlineExceededError "Timed out waiting for notification";
- it stops when the step is cancelled: its session was closed (TF's session close cancels
  pending ops), the master that sent the RunGraph went away, the resource was reset. Then
  it fails with CancelledError.

Frames nest (a worker's RunGraph runs its partition's stages through a session): the
innermost sees the earliest deadline, every cancellation check and every lock of the
frames around it. A plain ``Session.run`` makes no frame (nothing to pay when nothing
waits): the waiter finds its session through ``tfc.runtime.host.current_session``.
"""
from __future__ import annotations

import threading
import time

from tfc.frontend import errors

_NONE = ()
POLL_S = 0.05  # how often a waiter looks at its deadline and cancellation (notifications wake it at once)
_LOCAL = threading.local()


class _Frame:
    __slots__ = ("deadline", "checks", "locks")

    def __init__(self, deadline, checks, locks):
        self.deadline = deadline  # time.monotonic() value, or None
        self.checks = checks  # callables: an error message when the step is cancelled, else None
        self.locks = locks  # re-entrant locks the thread holds for its steps, outermost first


def current() -> _Frame | None:
    return getattr(_LOCAL, "frame", None)


def deadline_from(options=None, config=None, now=None) -> float | None:
    """The monotonic deadline of a step: ``options.timeout_in_ms`` when positive, else the
    config's ``operation_timeout_in_ms`` when positive, else None."""
    ms = options.timeout_in_ms if options is not None and getattr(options, "timeout_in_ms", 0) else 0
    if ms <= 0 and config is not None:
        ms = getattr(config, "operation_timeout_in_ms", 0) or 0
    if ms <= 0:
        return None
    return (time.monotonic() if now is None else now) + ms / 1000.0


class step:  # noqa: N801 - used as a function: ``with step(...):``
    """A step (nested in the thread's current one, if any): ``deadline`` (monotonic),
    ``cancelled()`` (a message when the step is cancelled, else None), ``lock`` (a
    re-entrant lock the thread holds while the step runs). Cheap: every Session.run enters one."""

    __slots__ = ("_frame", "_outer")

    def __init__(self, deadline: float | None = None, cancelled=None, lock=None):
        outer = getattr(_LOCAL, "frame", None)
        self._outer = outer
        if outer is None:
            self._frame = _Frame(deadline, (cancelled,) if cancelled is not None else _NONE,
                                 [lock] if lock is not None else [])
            return
        if deadline is None or (outer.deadline is not None and outer.deadline < deadline):
            deadline = outer.deadline
        checks = outer.checks + ((cancelled,) if cancelled is not None else ())
        locks = outer.locks
        if lock is not None and not any(lock is held for held in locks):
            locks = locks + [lock]
        self._frame = _Frame(deadline, checks, locks)

    def __enter__(self) -> _Frame:
        _LOCAL.frame = self._frame
        return self._frame

    def __exit__(self, *exc) -> None:
        _LOCAL.frame = self._outer


class Waiter:
    """What one blocked host op waits under: ``with Waiter(op, "Dequeue operation") as w:``
    lets go of the thread's step locks (the frames' and the running session's), and
    ``w.wait(condition)`` (the condition's lock held) waits for a notification or a short
    while, then raises at the deadline or on cancellation. The deadline: the frames' (a
    RunOptions.timeout_in_ms, a RunGraph's), and the session's operation_timeout_in_ms from
    when the wait began (Session.run sets no frame of its own: it costs nothing when nothing
    waits)."""

    def __init__(self, op=None, what: str = ""):
        from .host import current_session

        self.op, self.what = op, what
        frame = current()
        deadline = frame.deadline if frame is not None else None
        checks = frame.checks if frame is not None else _NONE
        locks = list(frame.locks) if frame is not None else []
        session = current_session()
        if session is not None:
            config = getattr(session, "_config", None)
            ms = getattr(config, "operation_timeout_in_ms", 0) or 0 if config is not None else 0
            if ms > 0:
                own = time.monotonic() + ms / 1000.0
                deadline = own if deadline is None else min(deadline, own)
            cancelled = getattr(session, "_cancelled", None)
            if cancelled is not None:
                checks = checks + (cancelled,)
            lock = getattr(session, "_lock", None)
            if lock is not None and not any(lock is held for held in locks):
                locks.append(lock)
        self.deadline, self.checks, self.locks = deadline, checks, locks
        self._saved: list = []

    def __enter__(self) -> "Waiter":
        for lock in reversed(self.locks):  # innermost first
            is_owned = getattr(lock, "_is_owned", None)
            if is_owned is not None and is_owned():
                self._saved.append((lock, lock._release_save()))
        return self

    def __exit__(self, *exc) -> None:
        saved, self._saved = self._saved, []
        for lock, state in reversed(saved):  # outermost first, as they were taken
            lock._acquire_restore(state)

    def check(self) -> None:
        """Raise the DeadlineExceededError or CancelledError of the step, if it has one now."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise errors.DeadlineExceededError(None, self.op, "Timed out waiting for notification")
        for cancelled in self.checks:
            message = cancelled()
            if message:
                raise errors.CancelledError(None, self.op, f"{self.what} was cancelled: {message}" if self.what
                                            else message)

    def wait(self, condition: threading.Condition) -> None:
        timeout = POLL_S
        if self.deadline is not None:
            timeout = max(0.0, min(timeout, self.deadline - time.monotonic()))
        if timeout > 0:
            condition.wait(timeout)
        self.check()
