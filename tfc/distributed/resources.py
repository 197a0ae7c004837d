"""The state a task keeps for the sessions that run on it: variables by container.

TensorFlow keeps a variable in its task's resource manager, in a container (the
VariableV2 op's ``container`` attr, or the default container ""), under its
``shared_name`` (or its node name). It outlives the client session that created it, so
a second session on the same server sees it; ``tf.Session.reset(target, containers)``
(the master's Reset, the workers' CleanupAll) clears containers. A session created with
``ConfigProto.isolate_session_state`` has a private resource manager instead, gone with
the session.

A tfc step program addresses a variable by its op name (the session's
``VariableStore.values``); ``VariableValues`` is that mapping for one graph, resolving each
op name to its (container, shared name) in a ``ResourceManager``.
"""
from __future__ import annotations

import threading

from tfc.runtime.host_resources import ResourceStore

DEFAULT_CONTAINER = ""


class ResourceManager:
    """Variable buffers: container -> {shared name -> numpy array}; and the task's queues and
    accumulators (``host``: tfc/runtime/host_resources.py), in the same containers."""

    def __init__(self):
        self._lock = threading.Lock()
        self._containers: dict = {}
        self.host = ResourceStore()

    def container(self, name: str) -> dict:
        with self._lock:
            found = self._containers.get(name)
            if found is None:
                found = self._containers[name] = {}
            return found

    def cleanup(self, containers=None) -> None:
        """Drop the given containers (all of them for None; [] means the default one, as TF's
        Reset with no container names)."""
        with self._lock:
            if containers is None:
                self._containers.clear()
            else:
                for name in (list(containers) or [DEFAULT_CONTAINER]):
                    self._containers.pop(name, None)
        self.host.cleanup(None if containers is None else list(containers))

    def names(self) -> dict:
        """container -> sorted variable names (for tests and debugging)."""
        with self._lock:
            return {c: sorted(values) for c, values in self._containers.items()}


class VariableValues:
    """A session's ``VariableStore.values`` backed by a ResourceManager: a dict-like map from
    variable op name to buffer, where each name is stored under its op's (container, shared
    name). ``clear()`` (what closing a session does) leaves shared state alone."""

    def __init__(self, resources: ResourceManager, graph, private: bool = False):
        self._resources = resources
        self._graph = graph
        self._private = private
        self._keys: dict = {}

    def _key(self, name: str) -> tuple:
        key = self._keys.get(name)
        if key is None:
            op = self._graph._nodes_by_name.get(name)
            attrs = op._attrs if op is not None else {}
            container = attrs.get("container") or DEFAULT_CONTAINER
            shared = attrs.get("shared_name") or name
            if isinstance(container, bytes):
                container = container.decode()
            if isinstance(shared, bytes):
                shared = shared.decode()
            key = self._keys[name] = (container, shared)
        return key

    def get(self, name: str, default=None):
        container, shared = self._key(name)
        return self._resources.container(container).get(shared, default)

    def __getitem__(self, name: str):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value) -> None:
        container, shared = self._key(name)
        self._resources.container(container)[shared] = value

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def pop(self, name: str, default=None):
        container, shared = self._key(name)
        return self._resources.container(container).pop(shared, default)

    def clear(self) -> None:
        if self._private:
            self._resources.cleanup(None)
