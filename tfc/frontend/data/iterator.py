"""tf.data iterators in TF1 graph mode, and the iterator ops as host ops.

The graph holds TF's ops: ``OneShotIterator`` (``make_one_shot_iterator``), ``IteratorV2``
+ ``MakeIterator`` (``make_initializable_iterator``, ``Iterator.from_structure`` +
``make_initializer``), ``IteratorFromStringHandleV2`` / ``IteratorToStringHandle``
(feedable iterators) and ``IteratorGetNext``. They run on the host around the compiled
step (tfc/runtime/host.py): ``get_next()``'s values are fed to the program like feeds.

An iterator's state (its pass over the pipeline, prefetch threads included) lives in the
session that runs it, like a TF resource: ``MakeIterator`` starts a new pass (and stops
the old one), a ``OneShotIterator`` builds its dataset on its first use in a session (a
nested step computes the dataset's ops), ``IteratorGetNext`` hands out the next element
or raises ``OutOfRangeError("End of sequence")``. Closing the session stops its passes.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from .. import dtypes, errors
from ..convert import convert_to_tensor
from ..graph import Tensor, colocate_with, get_default_graph, name_scope
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape
from . import structure as nest
from .dataset_ops import node_of
from .pipeline import Reader

_ITERATOR_TYPE_NAME = "N10tensorflow4data16IteratorResourceE"
_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


# -- per-session state ------------------------------------------------------------------------
class _Handle:
    """The value of an iterator's resource tensor: which iterator of the session."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def to_string(self) -> bytes:
        from tfc.protos import ResourceHandleProto

        return ResourceHandleProto(device=_DEVICE, container="localhost", name=self.key,
                                   maybe_type_name=_ITERATOR_TYPE_NAME).SerializeToString()

    @staticmethod
    def from_string(data: bytes, op) -> "_Handle":
        from google.protobuf.message import DecodeError

        from tfc.protos import ResourceHandleProto

        try:
            proto = ResourceHandleProto.FromString(bytes(data))
        except DecodeError:
            proto = None
        if proto is None or proto.maybe_type_name != _ITERATOR_TYPE_NAME:
            raise errors.InvalidArgumentError(None, op, "Could not parse an iterator handle from the string "
                                                        f"{bytes(data)[:40]!r}")
        return _Handle(proto.name)


class IteratorResource:
    """One iterator of one session: its pass over a pipeline."""

    def __init__(self, key: str, types: list, shapes: list):
        self.key = key
        self.types = types
        self.shapes = shapes
        self.lock = threading.Lock()
        self.reader = None
        self.finished = False

    def reset(self, node) -> None:
        with self.lock:
            self._close()
            self.reader = Reader(node.iterator())
            self.finished = False

    def _close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def close(self) -> None:
        with self.lock:
            self._close()

    def get_next(self, op) -> list:
        with self.lock:
            if self.reader is None:
                raise errors.FailedPreconditionError(
                    None, op, "GetNext() failed because the iterator has not been initialized. Ensure that you have "
                              "run the initializer operation for this iterator before getting the next element.")
            if self.finished:
                raise errors.OutOfRangeError(None, op, "End of sequence")
            try:
                chunk = self.reader.read(1)
            except errors.OpError as e:
                raise type(e)(None, op, e.message) from None
            if chunk is None:
                self.finished = True
                raise errors.OutOfRangeError(None, op, "End of sequence")
        values = []
        for array in chunk:
            value = array[0, ...]
            values.append(value if value.flags.writeable else value.copy())
        return values

    def __del__(self):
        try:
            self._close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # session -> {key: IteratorResource}
_NO_SESSION: dict = {}
_STATES_LOCK = threading.Lock()


def _resources(session) -> dict:
    if session is None:
        return _NO_SESSION
    with _STATES_LOCK:
        return _STATES.setdefault(session, {})


def _current_session():
    from tfc.runtime.host import current_session

    return current_session()


def _resource(handle: _Handle, op, create_from=None) -> IteratorResource:
    resources = _resources(_current_session())
    resource = resources.get(handle.key)
    if resource is None:
        if create_from is None:
            raise errors.NotFoundError(None, op, f"Resource localhost/{handle.key}/{_ITERATOR_TYPE_NAME} does not "
                                                 "exist.")
        resource = resources[handle.key] = IteratorResource(handle.key, *create_from)
    return resource


def release_session(session) -> None:
    """Stop the passes (prefetch threads) of a closed session's iterators."""
    with _STATES_LOCK:
        resources = _STATES.pop(session, None)
    for resource in (resources or {}).values():
        resource.close()


def _register_release() -> None:
    from tfc.runtime.host import on_session_close

    on_session_close(release_session)


_register_release()


def _handle_of(value) -> _Handle:
    return node_of(value)


def _handle_value(key: str) -> np.ndarray:
    value = np.empty((), dtype=object)
    value[()] = _Handle(key)
    return value


# -- ops --------------------------------------------------------------------------------------
def _iterator_attrs():
    return {"shared_name": Attr("string", ""), "container": Attr("string", ""),
            "output_types": Attr("list(type)"), "output_shapes": Attr("list(shape)")}


def _scalar(op):
    return [TensorShape([])]


class _IteratorOp(OpType):
    host_only = True
    stateful = True
    not_differentiable = True


def _key(op) -> str:
    return op._attrs.get("shared_name") or op.name


@register
class IteratorV2(_IteratorOp):
    inputs = []
    outputs = ["handle: resource"]
    attrs = _iterator_attrs()
    infer = _scalar

    def host(op):
        key = _key(op)
        _resource(_Handle(key), op, (op._attrs["output_types"], op._attrs["output_shapes"]))  # created uninitialized
        return [_handle_value(key)]


@register
class OneShotIterator(_IteratorOp):
    """Builds its dataset (``dataset_factory``) on its first use in a session."""

    inputs = []
    outputs = ["handle: resource"]
    attrs = dict(_iterator_attrs(), dataset_factory=Attr("func"))
    infer = _scalar

    def host(op):
        key = _key(op)
        session = _current_session()
        resources = _resources(session)
        if key not in resources:
            variant_tensor = op.graph._scratch.get("tfc.data.one_shot", {}).get(op.name)
            if variant_tensor is None:
                raise errors.UnimplementedError(None, op, f"tfc: the dataset of one-shot iterator '{op.name}' is "
                                                          "unknown: its dataset_factory function was imported from a "
                                                          "GraphDef, which tfc cannot run")
            if session is None:
                raise errors.FailedPreconditionError(None, op, "tfc: a one-shot iterator runs in a session")
            node = session.run(variant_tensor)
            resource = IteratorResource(key, op._attrs["output_types"], op._attrs["output_shapes"])
            resource.reset(node_of(node))
            resources[key] = resource
        return [_handle_value(key)]


@register
class MakeIterator(_IteratorOp):
    inputs = ["dataset: variant", "iterator: resource"]
    outputs = []

    def infer(op):
        return []

    def host(op, dataset, handle):
        source = op.inputs[1].op
        resource = _resource(_handle_of(handle), op, (source._attrs.get("output_types"),
                                                       source._attrs.get("output_shapes")))
        resource.reset(node_of(dataset))
        return []


@register
class IteratorGetNext(_IteratorOp):
    inputs = ["iterator: resource"]
    outputs = ["components: output_types"]
    attrs = {"output_types": Attr("list(type)"), "output_shapes": Attr("list(shape)")}

    def infer(op):
        return list(op._attrs["output_shapes"])

    def host(op, handle):
        handle = _handle_of(handle)
        if not isinstance(handle, _Handle):  # an eager iterator read by a defun's program (eager.py)
            return handle.eager_get_next(op)
        return _resource(handle, op).get_next(op)


@register
class IteratorToStringHandle(_IteratorOp):
    inputs = ["resource_handle: resource"]
    outputs = ["string_handle: string"]
    infer = _scalar

    def host(op, handle):
        return [np.array(_handle_of(handle).to_string(), dtype=object)]


@register
class IteratorFromStringHandleV2(_IteratorOp):
    inputs = ["string_handle: string"]
    outputs = ["resource_handle: resource"]
    attrs = {"output_types": Attr("list(type)", []), "output_shapes": Attr("list(shape)", [])}
    infer = _scalar

    def host(op, string_handle):
        value = np.empty((), dtype=object)
        value[()] = _Handle.from_string(np.asarray(string_handle, dtype=object)[()], op)
        return [value]


# -- the Python API ----------------------------------------------------------------------------
class Iterator(nest.HasElementStructure):
    """tf.data.Iterator (TF1): ``get_next()``, ``initializer``, ``string_handle()``."""

    def __init__(self, iterator_resource, initializer, output_types, output_shapes, output_classes):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._structure = nest.specs_from(output_types, output_shapes)
        self._output_classes = output_classes
        self._string_handle = _create_op("IteratorToStringHandle", [iterator_resource], {}).outputs[0]

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        structure = nest.specs_from(output_types, output_shapes)
        resource = _create_op("IteratorV2", [], _structure_attrs(structure, shared_name or "")).outputs[0]
        return Iterator(resource, None, nest.types_of(structure), nest.shapes_of(structure),
                        nest.classes_of(structure))

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        structure = nest.specs_from(output_types, output_shapes)
        if not isinstance(string_handle, Tensor):
            string_handle = convert_to_tensor(string_handle, dtype=dtypes.string)
        attrs = _structure_attrs(structure, None)
        resource = _create_op("IteratorFromStringHandleV2", [string_handle], attrs).outputs[0]
        return Iterator(resource, None, nest.types_of(structure), nest.shapes_of(structure),
                        nest.classes_of(structure))

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        structure = dataset._structure
        if not nest.same_structure(self._structure, structure):
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with output types "
                            f"{dataset.output_types!r}.")
        if nest.flat_types(self._structure) != nest.flat_types(structure):
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset with output types "
                            f"{dataset.output_types!r}.")
        if not all(mine.is_compatible_with(theirs) for mine, theirs in
                   zip(nest.flat_shapes(self._structure), nest.flat_shapes(structure))):
            raise TypeError(f"Expected output shapes compatible with {self.output_shapes!r} but got dataset with "
                            f"output shapes {dataset.output_shapes!r}.")
        graph = self._iterator_resource.graph
        with graph.as_default(), colocate_with(self._iterator_resource.op):
            with name_scope(name, "make_initializer") as scope:
                return graph.create_op("MakeIterator", [dataset._variant_tensor, self._iterator_resource],
                                       name=scope)

    def get_next(self, name=None):
        graph = self._iterator_resource.graph
        with graph.as_default(), colocate_with(self._iterator_resource.op):
            op = graph.create_op("IteratorGetNext", [self._iterator_resource], name=name or "IteratorGetNext",
                                 attrs=_structure_attrs(self._structure, None))
        outputs = op.outputs
        if nest.has_datasets(self._structure):  # windows: Datasets over the variant outputs
            from .eager import wrap_datasets

            outputs = wrap_datasets(self._structure, outputs)
        return nest.pack_sequence_as(self._structure, outputs)

    def string_handle(self, name=None):
        if name is None:
            return self._string_handle
        return _create_op("IteratorToStringHandle", [self._iterator_resource], {}, name=name).outputs[0]


def _structure_attrs(structure, shared_name) -> dict:
    attrs = {"output_types": nest.flat_types(structure), "output_shapes": nest.flat_shapes(structure)}
    if shared_name is not None:
        attrs.update(shared_name=shared_name, container="")
    return attrs


def _create_op(op_type, inputs, attrs, name=None, graph=None):
    graph = graph or (inputs[0].graph if inputs else get_default_graph())
    with graph.as_default():
        if inputs:
            with colocate_with(inputs[0].op):
                return graph.create_op(op_type, inputs, name=name or op_type, attrs=attrs)
        return graph.create_op(op_type, inputs, name=name or op_type, attrs=attrs)


_STATEFUL_SOURCES = {"Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "VariableV2", "Variable",
                     "VarHandleOp", "HashTableV2"}


def _check_one_shot_captures(dataset) -> None:
    """TF refuses a one-shot iterator over a dataset that captures a placeholder or a
    variable (use an initializable iterator)."""
    seen, stack = set(), [dataset._variant_tensor.op]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type in _STATEFUL_SOURCES:
            kind = "a placeholder" if op.type.startswith("Placeholder") else "a stateful object"
            raise ValueError(
                "Failed to create a one-shot iterator for a dataset. `Dataset.make_one_shot_iterator()` does not "
                "support datasets that capture stateful objects, such as a `Variable` or `LookupTable`. In these "
                "cases, use `Dataset.make_initializable_iterator()`. (Original error: Cannot capture "
                f"{kind} (name:{op.name}, type:{op.type}) by value.)")
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)


def one_shot_iterator(dataset) -> Iterator:
    """``make_one_shot_iterator``: a ``OneShotIterator`` op whose dataset is built on first use."""
    _check_one_shot_captures(dataset)
    graph = dataset.graph
    name = graph.unique_name("_make_dataset", mark_as_used=False).replace("/", "_")
    attrs = dict(_structure_attrs(dataset._structure, ""), dataset_factory=f"{name}_{id(dataset):x}")
    op = _create_op("OneShotIterator", [], attrs, graph=graph)
    graph._scratch.setdefault("tfc.data.one_shot", {})[op.name] = dataset._variant_tensor
    return Iterator(op.outputs[0], None, dataset.output_types, dataset.output_shapes, dataset.output_classes)


def initializable_iterator(dataset, shared_name=None) -> Iterator:
    """``make_initializable_iterator``: ``IteratorV2`` and its ``MakeIterator`` initializer."""
    graph = dataset.graph
    resource = _create_op("IteratorV2", [], _structure_attrs(dataset._structure, shared_name or ""),
                          graph=graph).outputs[0]
    with graph.as_default(), colocate_with(resource.op):
        initializer = graph.create_op("MakeIterator", [dataset._variant_tensor, resource], name="MakeIterator")
    return Iterator(resource, initializer, dataset.output_types, dataset.output_shapes, dataset.output_classes)


# -- tf.compat.v1.data functions ------------------------------------------------------------------
def make_one_shot_iterator(dataset) -> Iterator:
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None) -> Iterator:
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
