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

from .. import dtypes, errors
from ..registry import lookup_op_type
from . import structure as nest
from .dataset_ops import functions_of, node_of
from .pipeline import Reader


def executing_eagerly(graph=None) -> bool:
    from ..graph import get_default_graph

    return getattr(graph if graph is not None else get_default_graph(), "_is_eager", False)


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

    # -- the Python iterator protocol -----------------------------------------------------------
    def __iter__(self):
        return self

    def __next__(self):
        try:
            return self._next_internal()
        except errors.OutOfRangeError:
            raise StopIteration from None

    def next(self):
        """Python 2's name (TF 1.x iterators have it)."""
        return self.__next__()

    def get_next(self, name=None):
        """The next element; ``tf.errors.OutOfRangeError`` at the end (as in graph mode)."""
        del name
        return self._next_internal()

    def _next_internal(self):
        from ..eager.tensor import EagerTensor, contiguous

        with self._lock:
            if self._finished:
                raise errors.OutOfRangeError(None, None, "End of sequence [Op:IteratorGetNext]")
            try:
                chunk = self._reader.read(1)
            except errors.OpError as e:
                raise type(e)(None, None, f"{e.message} [Op:IteratorGetNext]") from None
            if chunk is None:
                self._finished = True
                self._reader.close()
                raise errors.OutOfRangeError(None, None, "End of sequence [Op:IteratorGetNext]")
        return self._pack([EagerTensor(contiguous(array[0, ...]), dtype) for array, dtype in zip(chunk, self._dtypes)])

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


def _packer(structure):
    """flat values -> the element (fast paths for a single tensor and a plain tuple)."""
    if not nest.is_nested(structure):
        return lambda values: values[0]
    if type(structure) is tuple and not any(nest.is_nested(item) for item in structure):
        return tuple
    return lambda values: nest.pack_sequence_as(structure, values)

