"""tf.data in eager mode (TF 1.x with ``tf.enable_eager_execution()``).

A dataset made while executing eagerly runs its dataset op at once, as TF's eager dataset
ops do: the op's ``host`` function (dataset_ops.py) builds the pipeline node right away,
and the dataset's ``_variant_tensor`` is an EagerTensor (dtype ``variant``) holding it.
Nothing is added to any graph. Functions (``map``, ``filter``, ``flat_map``,
``interleave``, ``reduce``) are traced and compiled once, exactly as in graph mode
(functions.py); ``num_parallel_calls`` runs them on a thread pool (mapping.py).

Iteration (``for x in ds``, ``iter(ds)``, ``ds.make_one_shot_iterator()``,
``tf.compat.v1.data.make_one_shot_iterator(ds)``, ``tfe.Iterator(ds)``) is an
:class:`EagerIterator` (TF's ``IteratorV2``): a pass over the pipeline handing out each
element as EagerTensors in the element's structure; ``next()`` raises StopIteration at
the end and ``get_next()`` raises ``tf.errors.OutOfRangeError`` ("End of sequence"), as
TF 1.x eager does.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from .. import dtypes, errors
from ..registry import lookup_op_type
from . import structure as nest
from .dataset_ops import functions_of, node_of
from .pipeline import Reader

_IN_DEFUN = ("tfc: iterating a tf.data.Dataset or iterator with a Python `for` loop (or `iter(dataset)`) inside a "
             "defun / tf.function needs autograph, which tfc's defun does not have. Make the iterator outside "
             "(`it = iter(dataset)`), pass it to the function (or close over it) and call `next(it)` or "
             "`it.get_next()` inside: each call of the function then reads the next element.")


def executing_eagerly(graph=None) -> bool:
    from ..graph import get_default_graph

    return getattr(graph if graph is not None else get_default_graph(), "_is_eager", False)


def in_defun() -> bool:
    """Whether a defun / tf.function is being traced (its FuncGraph is the default graph)."""
    from ..graph import get_default_graph

    return getattr(get_default_graph(), "_init_scope_graph", None) is not None


def run_host_op(op_type: str, inputs: list, attrs: dict, name: str, functions=None) -> tuple:
    """Run the host op ``op_type`` now (eager mode): (its output values, the op).

    ``functions`` (name -> TracedFunction or generator triple) are visible to the op's
    host function while it runs only: the node it builds holds them, no registry keeps
    them alive."""
    from ..convert import convert_to_tensor
    from ..eager.context import eager_graph
    from ..eager.tensor import EagerOperation, EagerTensor

    entry = lookup_op_type(op_type)
    tensors = [t if isinstance(t, EagerTensor) else convert_to_tensor(t) for t in inputs]
    op = EagerOperation(op_type, name, entry.complete_attrs(attrs, name), tensors, [])
    registry = functions_of(eager_graph())
    for key, function in (functions or {}).items():
        registry[key] = function
    try:
        outputs = entry.host(op, *[t._array for t in tensors])
    except errors.OpError as e:  # as TF's eager ops report it
        raise type(e)(None, None, f"{e.message} [Op:{op_type}]") from None
    finally:
        for key in functions or {}:
            registry.pop(key, None)
    return list(outputs), op


def run_dataset_op(op_type: str, inputs: list, attrs: dict, name: str, functions=None) -> tuple:
    """Run dataset op ``op_type`` now: (its variant EagerTensor, the op)."""
    from ..eager.tensor import EagerTensor

    outputs, op = run_host_op(op_type, inputs, attrs, name, functions)
    variant = EagerTensor(outputs[0], dtypes.variant)
    op._outputs = [variant]
    return variant, op


class EagerIterator(nest.HasElementStructure):
    """A pass over an eager dataset (TF 1.x's eager ``IteratorV2``)."""

    def __init__(self, dataset):
        from ..eager.tensor import EagerTensor

        variant = dataset._variant_tensor
        if not isinstance(variant, EagerTensor):
            raise RuntimeError("tfc: this dataset was built in a graph; iterate it with a graph-mode iterator "
                               "(make_one_shot_iterator / make_initializable_iterator) in a session")
        self._structure = dataset._structure
        self._dtypes = nest.flat_types(self._structure)
        self._lock = threading.Lock()
        self._reader = Reader(node_of(variant._array).iterator())
        self._finished = False
        self._pack = _packer(self._structure)
        handle = np.empty((), dtype=object)
        handle[()] = EagerIteratorHandle(self)
        self._iterator_resource = EagerTensor(handle, dtypes.resource)  # what a defun's trace captures

    # -- the Python iterator protocol -----------------------------------------------------------
    def __iter__(self):
        if in_defun():
            raise NotImplementedError(_IN_DEFUN)
        return self

    def __next__(self):
        if in_defun():
            return self.get_next()
        try:
            return self._next_internal()
        except errors.OutOfRangeError:
            raise StopIteration from None

    def next(self):
        """Python 2's name (TF 1.x iterators have it)."""
        return self.__next__()

    def get_next(self, name=None):
        """The next element; ``tf.errors.OutOfRangeError`` at the end (as in graph mode).
        Inside a defun's trace: the element's tensors, read from this iterator each time
        the compiled function runs (an ``IteratorGetNext`` op)."""
        if in_defun():
            return TracedIterator.capturing(self).get_next(name)
        return self._next_internal()

    def _next_arrays(self, op=None) -> list:
        """The next element's flat arrays; OutOfRangeError at the end (``op``: the graph op
        asking, in a defun's program)."""
        suffix = "" if op is not None else " [Op:IteratorGetNext]"
        with self._lock:
            if self._finished:
                raise errors.OutOfRangeError(None, op, f"End of sequence{suffix}")
            try:
                chunk = self._reader.read(1)
            except errors.OpError as e:
                raise type(e)(None, op, f"{e.message}{suffix}") from None
            if chunk is None:
                self._finished = True
                self._reader.close()
                raise errors.OutOfRangeError(None, op, f"End of sequence{suffix}")
        return [array[0, ...] for array in chunk]

    def _next_internal(self):
        from ..eager.tensor import EagerTensor, contiguous

        return self._pack([EagerTensor(contiguous(array), dtype) for array, dtype in zip(self._next_arrays(),
                                                                                         self._dtypes)])

    # -- as an argument of a defun (tfc/frontend/eager/function.py) ------------------------------
    def _defun_key(self) -> tuple:
        """Calls with iterators of the same element structure share a trace."""
        return ("Iterator", repr(nest.tensor_specs(self._structure)))

    def _defun_tensor(self):
        return self._iterator_resource

    def _defun_traced(self, placeholder):
        return TracedIterator(placeholder, self._structure)

    # -- what TF's iterators answer -------------------------------------------------------------
    def close(self) -> None:
        """Stop the pass (its prefetch and parallel-map threads)."""
        with self._lock:
            self._finished = True
            self._reader.close()

    def __del__(self):
        try:
            self._reader.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"<tfc EagerIterator types: {nest.type_text(self._structure)}>"


class EagerIteratorHandle:
    """The value of an eager iterator's ``resource`` tensor: ``IteratorGetNext`` in a
    defun's program takes the iterator's next element through it (a weak reference: the
    handle does not keep the iterator alive)."""

    __slots__ = ("_iterator",)

    def __init__(self, iterator: "EagerIterator"):
        self._iterator = weakref.ref(iterator)

    def eager_get_next(self, op) -> list:
        iterator = self._iterator()
        if iterator is None:
            raise errors.FailedPreconditionError(None, op, "tfc: the eager iterator this function reads was deleted")
        return [value if value.flags.writeable else value.copy() for value in iterator._next_arrays(op)]


class TracedIterator(nest.HasElementStructure):
    """An eager iterator inside a defun's trace: ``next(it)`` / ``it.get_next()`` add an
    ``IteratorGetNext`` op on the iterator's resource (an argument's placeholder, or the
    captured resource of an iterator the function closes over), ordered after the
    trace's earlier reads of the same iterator, as TF's automatic control dependencies
    order them. Running the compiled function reads the next element; past the end it
    raises ``tf.errors.OutOfRangeError``."""

    def __init__(self, resource, structure):
        self._resource = resource
        self._structure = structure

    @staticmethod
    def capturing(iterator: EagerIterator) -> "TracedIterator":
        from ..graph import get_default_graph

        graph = get_default_graph()
        capture = getattr(graph, "capture_by_feed", None)
        if capture is None:
            raise RuntimeError("tfc: an eager iterator can be read in eager mode or inside a defun / tf.function, not "
                               "in a graph built by hand")
        return TracedIterator(capture(iterator._iterator_resource), iterator._structure)

    def __iter__(self):
        raise NotImplementedError(_IN_DEFUN)

    def __next__(self):
        return self.get_next()

    def next(self):
        return self.get_next()

    def get_next(self, name=None):
        from .iterator import _structure_attrs

        graph = self._resource.graph
        reads = graph._scratch.setdefault("tfc.data.iterator_reads", {})
        with graph.as_default():
            op = graph.create_op("IteratorGetNext", [self._resource], name=name or "IteratorGetNext",
                                 attrs=_structure_attrs(self._structure, None))
        previous = reads.get(self._resource)
        if previous is not None and previous._control_flow_context is op._control_flow_context:
            op._add_control_input(previous)
        reads[self._resource] = op
        outputs = op.outputs
        if nest.has_datasets(self._structure):
            outputs = wrap_datasets(self._structure, outputs)
        return nest.pack_sequence_as(self._structure, outputs)

    def __repr__(self) -> str:
        return f"<tfc traced iterator types: {nest.type_text(self._structure)}>"


def _packer(structure):
    """flat values -> the element (fast paths for a single tensor and a plain tuple); a
    dataset component (a window) becomes an eager Dataset over its variant."""
    if nest.has_datasets(structure):
        return lambda values: nest.pack_sequence_as(structure, wrap_datasets(structure, values))
    if not nest.is_nested(structure):
        return lambda values: values[0]
    if type(structure) is tuple and not any(nest.is_nested(item) for item in structure):
        return tuple
    return lambda values: nest.pack_sequence_as(structure, values)



def wrap_datasets(structure, values: list) -> list:
    """``values`` (flat tensors of an element of ``structure``) with each dataset component
    (``DatasetSpec``) wrapped as a Dataset over its variant tensor, as TF's
    ``DatasetSpec._from_components`` does."""
    from .dataset import Dataset

    return [Dataset(value, spec.element, "_VariantDataset") if isinstance(spec, nest.DatasetSpec) else value
            for spec, value in zip(nest.flatten(structure), values)]
