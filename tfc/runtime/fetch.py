"""Session.run's fetch structures: any nesting of lists, tuples, namedtuples and dicts of
tensors, operations, variables or their names, returned in the same structure (a
SparseTensor comes back as a SparseTensorValue of its three arrays)."""
from __future__ import annotations

import collections

import numpy as np

from tfc.frontend.graph import Operation, Tensor
from tfc.frontend.sparse_tensor import SparseTensor, SparseTensorValue


class FetchPlan:
    """The unique tensors and ops a fetch structure needs, and how to rebuild it."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.tensors: list = []
        self.ops: list = []
        self._tensor_index: dict = {}
        self.structure = self._map(fetches)

    def _element(self, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}")
        try:
            element = self.graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or Tensor. "
                            f"({e})") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})") from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e.args[0]})") from None
        if isinstance(element, Tensor):
            if element not in self._tensor_index:
                self._tensor_index[element] = len(self.tensors)
                self.tensors.append(element)
            return ("tensor", self._tensor_index[element])
        if element not in self.ops:
            self.ops.append(element)
        return ("op", None)

    def _map(self, fetch):
        if isinstance(fetch, SparseTensor):  # its three tensors, returned as a SparseTensorValue
            return ("sparse", SparseTensorValue, [self._element(t) for t in
                                                  (fetch.indices, fetch.values, fetch.dense_shape)])
        if isinstance(fetch, (Tensor, Operation, str, bytes)) or hasattr(fetch, "_as_graph_element"):
            return self._element(fetch)
        if isinstance(fetch, dict):
            return ("dict", type(fetch), [(k, self._map(v)) for k, v in fetch.items()])
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
            return ("namedtuple", type(fetch), [self._map(v) for v in fetch])
        if isinstance(fetch, (list, tuple)):
            return ("sequence", type(fetch), [self._map(v) for v in fetch])
        return self._element(fetch)

    def build(self, values: list):
        return self._build(self.structure, values)

    def _build(self, node, values):
        kind = node[0]
        if kind == "tensor":
            return values[node[1]]
        if kind == "op":
            return None
        _, container, children = node
        if kind == "dict":
            items = [(k, self._build(v, values)) for k, v in children]
            if container is collections.defaultdict:
                out = collections.defaultdict(None)
                out.update(items)
                return out
            try:
                return container(items)
            except TypeError:
                return dict(items)
        built = [self._build(c, values) for c in children]
        if kind in ("namedtuple", "sparse"):
            return container(*built)
        return container(built) if container in (list, tuple) else list(built)


def to_fetch_value(array: np.ndarray):
    """0-d results come back as numpy scalars, others as arrays (as TF does)."""
    if array.ndim == 0:
        return array[()]
    return array
