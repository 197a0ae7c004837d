"""Stateful host resources (queues, conditional accumulators) and where they live.

TensorFlow keeps a queue or an accumulator in its device's resource manager, in a
container (the op's ``container`` attr, "" by default), under its ``shared_name``, or,
without one, under a name made for the op: ``_<N>_<node name>`` with N a process-wide
counter (what TF's error messages show, e.g. "FIFOQueue '_0_fifo_queue' is closed...").
A handle op (FIFOQueueV2, ResourceConditionalAccumulator...) creates its resource the
first time it runs and returns a handle naming it; the ops using the resource look it up
by that handle.

Where the store is:
- an in-process ``tf.Session`` has its own (as TF's DirectSession has its own devices);
  closing the session cancels what waits on its resources;
- a task of a cluster keeps them in its ResourceManager (tfc/distributed/resources.py),
  shared by the client sessions on the task (by shared name, as its variables are):
  ``tf.Session.reset`` clears them and cancels their waiters. A resource without a shared
  name is the same one for every step of one client session (TF's per-session kernel
  cache), keyed by the session's handle (``TaskSession.resource_scope``).
"""
from __future__ import annotations

import itertools
import threading
import weakref

from tfc.frontend import errors

_ANONYMOUS = itertools.count()  # TF's ResourceMgr unique ids: _0_fifo_queue, _1_..., per process
_SESSION_STORES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()
_NO_SESSION = None


class ResourceStore:
    """Resources by (container, name); anonymous names by (scope, node name)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._resources: dict = {}  # (container, name) -> resource
        self._anonymous: dict = {}  # (scope, node name) -> name

    def get_or_create(self, container: str, shared_name: str, scope, node_name: str, create):
        """The resource (created by ``create(name)`` if absent) and its name."""
        with self._lock:
            name = shared_name
            if not name:
                name = self._anonymous.get((scope, node_name))
                if name is None:
                    name = self._anonymous[(scope, node_name)] = f"_{next(_ANONYMOUS)}_{node_name}"
            resource = self._resources.get((container, name))
            if resource is None:
                resource = self._resources[(container, name)] = create(name)
            return resource, name

    def lookup(self, container: str, name: str):
        with self._lock:
            return self._resources.get((container, name))

    def cleanup(self, containers=None, reason: str = "its resources were reset") -> None:
        """Drop the given containers (all for None; [] means the default one), cancelling
        what waits on their resources."""
        with self._lock:
            if containers is None:
                dropped = list(self._resources.values())
                self._resources.clear()
                self._anonymous.clear()
            else:
                names = set(containers) or {""}
                keys = [key for key in self._resources if key[0] in names]
                dropped = [self._resources.pop(key) for key in keys]
        for resource in dropped:
            cancel = getattr(resource, "cancel", None)
            if cancel is not None:
                cancel(reason)

    def names(self) -> list:
        with self._lock:
            return sorted(self._resources)


def store_of(session) -> ResourceStore:
    """Where ``session``'s steps keep their resources (see the module docstring)."""
    global _NO_SESSION
    if session is None:
        if _NO_SESSION is None:
            _NO_SESSION = ResourceStore()
        return _NO_SESSION
    variables = getattr(session, "_variables", None)
    manager = getattr(getattr(variables, "values", None), "_resources", None)
    host = getattr(manager, "host", None)
    if host is not None:
        return host
    with _STORES_LOCK:
        store = _SESSION_STORES.get(session)
        if store is None:
            store = _SESSION_STORES[session] = ResourceStore()
        return store


def scope_of(session):
    """What tells apart the anonymous resources of two client sessions on one task."""
    return getattr(session, "resource_scope", None)


def release_session(session) -> None:
    """A closed in-process session's resources: dropped, their waiters cancelled."""
    with _STORES_LOCK:
        store = _SESSION_STORES.pop(session, None)
    if store is not None:
        store.cleanup(None, "the session was closed")


def handle_value(container: str, name: str):
    import numpy as np

    return np.array(f"{container}\x00{name}".encode(), dtype=object)


def parse_handle(value) -> tuple:
    import numpy as np

    item = np.asarray(value, dtype=object).reshape(-1)
    if item.size != 1:
        raise errors.InvalidArgumentError(None, None, f"A resource handle must be a scalar, got {item.size} values")
    raw = item[0]
    raw = raw.decode() if isinstance(raw, bytes) else str(raw)
    container, sep, name = raw.partition("\x00")
    if not sep:
        return "", container
    return container, name
