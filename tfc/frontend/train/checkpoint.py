"""tf.train.Checkpoint and tf.train.CheckpointManager: object-based checkpoints.

Follows TensorFlow's tensorflow/python/checkpoint/ (checkpoint.py's ``CheckpointV1``, the
TF1 ``tf.train.Checkpoint``; graph_view.py, save_util_v1.py, util.py, restore.py,
checkpoint_management.py's CheckpointManager), TF 2.21's behaviour and messages.

A checkpoint is a V2 tensor bundle (tfc/frontend/checkpoint_format.py) whose keys are
paths in the object graph, from the root (the Checkpoint) through named dependencies
(tfc/frontend/trackable.py)::

    model/kernel/.ATTRIBUTES/VARIABLE_VALUE
    model/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE
    optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE
    save_counter/.ATTRIBUTES/VARIABLE_VALUE

plus ``_CHECKPOINTABLE_OBJECT_GRAPH``, a serialized ``TrackableObjectGraph`` proto: the
nodes in breadth-first order from the root, each with its children (node id, local name),
its attributes (checkpoint keys) and, for optimizers, its slot variables.

Restoring matches the proto's nodes with Python objects by following the same named edges.
Values whose object does not exist yet wait in the parent object and are restored when it
is tracked (restore-on-create: a layer's weights when it is built, an optimizer's slots
when they are made). Eagerly, values are assigned at once; when building a graph, restore
ops (RestoreV2 + Assign) are added to the graph and run by ``status.run_restore_ops()`` or
``status.initialize_or_restore()``; ``save`` runs a SaveV2 op in the session.
"""
from __future__ import annotations

import collections
import glob
import logging
import os
import time
import weakref

import numpy as np

from .. import dtypes, errors
from .. import checkpoint_format as fmt
from ..graph import get_default_graph, get_default_session, init_scope
from ..tensor_shape import TensorShape
from ..trackable import (OBJECT_GRAPH_PROTO_KEY, VARIABLE_VALUE_KEY, AutoTrackable, NoDependency, Trackable,
                         _ContainerTracker, checkpoint_key, next_uid, object_path_to_string, slot_variable_key)

logger = logging.getLogger("tfc")


# =====================================================================================
# Helpers
# =====================================================================================
def _executing_eagerly() -> bool:
    return getattr(get_default_graph(), "_is_eager", False)


def _inside_function() -> bool:
    return getattr(get_default_graph(), "_init_scope_graph", None) is not None


def _is_eager_variable(value) -> bool:
    return hasattr(value, "_handle_name") and hasattr(value, "_buffer")


def _text(value) -> str:
    if hasattr(value, "numpy") and not isinstance(value, (str, bytes)):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="surrogateescape")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _tf_dtype_name(dtype) -> str:
    """TF's DataTypeString: 'float', 'double', 'int64'..."""
    from tfc.protos import DataType

    return DataType.Name(dtype.base_dtype.as_datatype_enum)[3:].lower()


def _saveables(obj) -> dict:
    """{attribute name: variable} that ``obj`` saves itself."""
    if isinstance(obj, Trackable):
        return obj._gather_saveables_for_checkpoint()
    return {}


def _full_name(variable) -> str:
    """The variable's name-based checkpoint key (SerializedTensor.full_name)."""
    info = getattr(variable, "_save_slice_info", None)
    if info is not None:
        return info.full_name
    if _is_eager_variable(variable):
        return variable._handle_name
    return variable.op.name


def _default_session(session, what: str):
    if session is None:
        session = get_default_session()
    if session is None:
        raise RuntimeError(f"Unable to {what} in graph mode without a default session. Please use `with "
                           "tf.Session():` to create a session.")
    return session


class _IdentityWeakSet:
    """A set of objects by identity, holding weak references."""

    def __init__(self):
        self._refs: dict = {}

    def add(self, obj) -> None:
        key = id(obj)
        ref = self._refs.get(key)
        if ref is None or ref() is not obj:
            self._refs[key] = weakref.ref(obj, lambda _, k=key, s=self._refs: s.pop(k, None))

    def __iter__(self):
        for ref in list(self._refs.values()):
            obj = ref()
            if obj is not None:
                yield obj


class _WeakValueById:
    """{proto id: object}, holding weak references (TF's WeakValueDictionary)."""

    def __init__(self):
        self._refs: dict = {}

    def get(self, key, default=None):
        ref = self._refs.get(key)
        obj = ref() if ref is not None else None
        return default if obj is None else obj

    def __getitem__(self, key):
        obj = self.get(key)
        if obj is None:
            raise KeyError(key)
        return obj

    def __setitem__(self, key, obj) -> None:
        self._refs[key] = weakref.ref(obj)

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return sum(1 for ref in self._refs.values() if ref() is not None)

    def values(self) -> list:
        return [obj for obj in (ref() for ref in self._refs.values()) if obj is not None]


# =====================================================================================
# The object graph (graph_view.py, util.py, save_util_v1.py)
# =====================================================================================
class ObjectGraphView:
    """The objects reachable from ``root`` through named dependencies."""

    def __init__(self, root, attached_dependencies=None):
        self._root_ref = weakref.ref(root)
        self._attached_dependencies = attached_dependencies

    @property
    def root(self):
        return self._root_ref()

    def list_children(self, obj) -> list:
        """[(local name, child)] of ``obj``, in dependency order."""
        obj._maybe_initialize_trackable()
        children = list(obj._trackable_children().items())
        if obj is self.root and self._attached_dependencies:
            children.extend(self._attached_dependencies)
        return children

    def breadth_first_traversal(self) -> tuple:
        """(objects in breadth-first order, {id(object): path from the root})."""
        root = self.root
        bfs_sorted = []
        to_visit = collections.deque([root])
        node_paths = {id(root): ()}
        while to_visit:
            current = to_visit.popleft()
            bfs_sorted.append(current)
            for name, dependency in self.list_children(current):
                if id(dependency) not in node_paths:
                    node_paths[id(dependency)] = node_paths[id(current)] + ((name, dependency),)
                    to_visit.append(dependency)
        return bfs_sorted, node_paths


class _Ref(collections.namedtuple("_Ref", ["name", "ref"])):
    pass


def _path_string(path) -> str:
    return object_path_to_string([_Ref(name, ref) for name, ref in path])


def _serialize_slot_variables(trackable_objects: list, node_ids: dict, object_names: dict) -> dict:
    """Append the optimizers' slot variables to the object list; {id(optimizer): [refs]}."""
    from tfc.protos import TrackableObjectGraph

    reference = TrackableObjectGraph.TrackableObject.SlotVariableReference
    non_slot_objects = list(trackable_objects)
    slot_variables: dict = {}
    for trackable in non_slot_objects:
        if not (hasattr(trackable, "get_slot_names") and hasattr(trackable, "get_slot")):
            continue
        for slot_name in trackable.get_slot_names():
            for original_variable_node_id, original_variable in enumerate(non_slot_objects):
                try:
                    slot_variable = trackable.get_slot(original_variable, slot_name)
                except (AttributeError, KeyError):
                    slot_variable = None
                if slot_variable is None:
                    continue
                slot_variable._maybe_initialize_trackable()
                if slot_variable._trackable_children():
                    raise NotImplementedError("Currently only variables with no dependencies can be saved as slot "
                                              "variables. File a feature request if this limitation bothers you.")
                if id(slot_variable) in node_ids:
                    raise NotImplementedError("A slot variable was re-used as a dependency of a Trackable object: "
                                              f"{slot_variable}. This is not currently allowed. File a feature "
                                              "request if this limitation bothers you.")
                object_names[id(slot_variable)] = slot_variable_key(
                    variable_path=object_names[id(original_variable)], optimizer_path=object_names[id(trackable)],
                    slot_name=slot_name)
                slot_variable_node_id = len(trackable_objects)
                node_ids[id(slot_variable)] = slot_variable_node_id
                trackable_objects.append(slot_variable)
                slot_variables.setdefault(id(trackable), []).append(reference(
                    slot_name=slot_name, original_variable_node_id=original_variable_node_id,
                    slot_variable_node_id=slot_variable_node_id))
    return slot_variables


def objects_ids_and_slot_variables_and_paths(graph_view) -> tuple:
    trackable_objects, node_paths = graph_view.breadth_first_traversal()
    object_names = {id(obj): _path_string(node_paths[id(obj)]) for obj in trackable_objects}
    node_ids = {id(obj): node_id for node_id, obj in enumerate(trackable_objects)}
    slot_variables = _serialize_slot_variables(trackable_objects, node_ids, object_names)
    return trackable_objects, node_paths, node_ids, slot_variables, object_names


def list_objects(graph_view) -> list:
    """Every object of the graph, slot variables included."""
    return objects_ids_and_slot_variables_and_paths(graph_view)[0]


def _add_checkpoint_values_check(object_graph_proto) -> None:
    """has_checkpoint_values: the node or a descendant has attributes (or slots)."""
    parents: dict = {}
    checkpointed = set()
    for node_id, node in enumerate(object_graph_proto.nodes):
        if node.attributes or node.slot_variables or node.HasField("registered_saver"):
            checkpointed.add(node_id)
        for child in node.children:
            parents.setdefault(child.node_id, set()).add(node_id)
    to_visit = set(checkpointed)
    while to_visit:
        node_id = to_visit.pop()
        if node_id not in parents:
            continue
        current = parents.pop(node_id)
        checkpointed.update(current)
        for parent in current:
            if parent in parents:
                to_visit.add(parent)
    for node_id, node in enumerate(object_graph_proto.nodes):
        node.has_checkpoint_values.value = node_id in checkpointed


def serialize_object_graph(graph_view) -> tuple:
    """([(checkpoint key, variable)], TrackableObjectGraph) for what ``graph_view`` reaches."""
    from tfc.protos import TrackableObjectGraph

    trackable_objects, _, node_ids, slot_variables, object_names = \
        objects_ids_and_slot_variables_and_paths(graph_view)
    proto = TrackableObjectGraph()
    for trackable in trackable_objects:
        node = proto.nodes.add()
        node.slot_variables.extend(slot_variables.get(id(trackable), ()))
        for name, child in graph_view.list_children(trackable):
            node.children.add(node_id=node_ids[id(child)], local_name=name)
    named_variables = []
    for trackable in trackable_objects:
        for attribute, variable in _saveables(trackable).items():
            key = checkpoint_key(object_names[id(trackable)], attribute)
            proto.nodes[node_ids[id(trackable)]].attributes.add(name=attribute, checkpoint_key=key,
                                                                full_name=_full_name(variable))
            named_variables.append((key, variable))
    _add_checkpoint_values_check(proto)
    return named_variables, proto


class ObjectGraphProtoPrettyPrinter:
    """Node id -> "(root).model.kernel" (and slot variables by optimizer and variable)."""

    def __init__(self, object_graph_proto):
        self._object_graph_proto = object_graph_proto
        self._node_name_cache = None

    @property
    def node_names(self) -> dict:
        if self._node_name_cache is not None:
            return self._node_name_cache
        path_to_root = {0: ("(root)",)}
        to_visit = collections.deque([0])
        while to_visit:
            node_id = to_visit.popleft()
            for child in self._object_graph_proto.nodes[node_id].children:
                if child.node_id not in path_to_root:
                    path_to_root[child.node_id] = path_to_root[node_id] + (child.local_name,)
                    to_visit.append(child.node_id)
        node_names = {node_id: ".".join(path) for node_id, path in path_to_root.items()}
        for node_id, node in enumerate(self._object_graph_proto.nodes):
            for slot_reference in node.slot_variables:
                node_names[slot_reference.slot_variable_node_id] = (
                    f"{node_names[node_id]}'s state '{slot_reference.slot_name}' for "
                    f"{node_names[slot_reference.original_variable_node_id]}")
        self._node_name_cache = node_names
        return node_names


# =====================================================================================
# Restoring (checkpoint.py's coordinator, restore.py's CheckpointPosition)
# =====================================================================================
_SlotVariableRestoration = collections.namedtuple("_SlotVariableRestoration",
                                                  ["optimizer_id", "slot_variable_id", "slot_name"])
_DeferredSlotVariableRestoration = collections.namedtuple("_DeferredSlotVariableRestoration",
                                                          ["original_variable", "slot_variable_id", "slot_name"])


class _CheckpointRestoreCoordinatorDeleter:
    """Warns, when a restore is dropped, about checkpoint values it never used."""

    def __init__(self, expect_partial, object_graph_proto, matched_proto_ids, unused_attributes):
        self.expect_partial = expect_partial
        self.object_graph_proto = object_graph_proto
        self.matched_proto_ids = matched_proto_ids
        self.unused_attributes = unused_attributes

    def __del__(self):
        if self.expect_partial:
            return
        try:
            from .. import tf_logging

            log_fn = tf_logging.warning
        except Exception:  # noqa: BLE001 - interpreter shutdown
            log_fn = print
        unused_nodes = []
        printer = ObjectGraphProtoPrettyPrinter(self.object_graph_proto)
        try:
            for node_id, node in enumerate(self.object_graph_proto.nodes):
                if node.attributes and node_id not in self.matched_proto_ids:
                    unused_nodes.append(printer.node_names[node_id])
            unrestored = [(printer.node_names[node_id], attribute)
                          for node_id, attribute in self.unused_attributes.items()]
            if unused_nodes or unrestored:
                log_fn("Detecting that an object or model or tf.train.Checkpoint is being deleted with unrestored "
                       "values. See the following logs for the specific values in question. To silence these "
                       "warnings, use `status.expect_partial()`. See https://www.tensorflow.org/api_docs/python/tf/"
                       "train/Checkpoint#restorefor details about the status object returned by the restore "
                       "function.")
                for node_path in unused_nodes:
                    log_fn(f"Value in checkpoint could not be found in the restored object: {node_path}")
                for node_path, attribute in unrestored:
                    log_fn("An attribute in the restored object could not be found in the checkpoint. Object: "
                           f"{node_path}, attribute: {attribute}")
        except Exception:  # noqa: BLE001 - never raise from __del__
            pass


class _CheckpointRestoreCoordinator:
    """The state of one object-based checkpoint load."""

    def __init__(self, object_graph_proto, save_path, save_path_tensor, reader, restore_op_cache, graph_view):
        self.object_graph_proto = object_graph_proto
        self.restore_uid = next_uid()
        self.unused_attributes: dict = {}
        self.object_by_proto_id = _WeakValueById()
        self.matched_proto_ids: set = set()
        self.all_python_objects = _IdentityWeakSet()
        self.save_path_tensor = save_path_tensor
        self.save_path_string = save_path
        self.reader = reader
        self.dtype_map = reader.variable_to_dtype_map()
        self.shape_map = reader.variable_to_shape_map()
        self.restore_ops: list = []
        self.restore_ops_by_name = restore_op_cache
        self.restore_checks: dict = {}  # id(restore op) -> (key, variable, RestoreV2 op, op)
        self.graph_view = graph_view
        self.new_restore_ops_callback = None
        self.deferred_slot_restorations: dict = {}
        self.slot_restorations = collections.defaultdict(list)
        self.expect_partial_attr = False
        for node_index, node in enumerate(object_graph_proto.nodes):
            for slot_reference in node.slot_variables:
                self.slot_restorations[slot_reference.original_variable_node_id].append(_SlotVariableRestoration(
                    optimizer_id=node_index, slot_variable_id=slot_reference.slot_variable_node_id,
                    slot_name=slot_reference.slot_name))
        self._deleter = _CheckpointRestoreCoordinatorDeleter(self.expect_partial_attr, object_graph_proto,
                                                             self.matched_proto_ids, self.unused_attributes)

    @property
    def expect_partial(self) -> bool:
        return self.expect_partial_attr

    @expect_partial.setter
    def expect_partial(self, value: bool) -> None:
        self.expect_partial_attr = value
        self._deleter.expect_partial = value

    def new_restore_ops(self, new_ops) -> None:
        self.restore_ops.extend(new_ops)
        if self.new_restore_ops_callback:
            self.new_restore_ops_callback(new_ops)

    # -- reading values --------------------------------------------------------------------
    def read_checked(self, key: str, variable) -> np.ndarray:
        """The checkpoint value of ``key`` for ``variable`` (RestoreV2's dtype check)."""
        if key not in self.dtype_map:
            raise errors.NotFoundError(None, None, f"Key {key} not found in checkpoint [Op:RestoreV2]")
        stored = self.dtype_map[key]
        wanted = variable.dtype.base_dtype
        if stored != wanted:
            raise errors.InvalidArgumentError(None, None, f"tensor_name = {key}; expected dtype "
                                                          f"{_tf_dtype_name(wanted)} does not equal original dtype "
                                                          f"{_tf_dtype_name(stored)} [Op:RestoreV2]")
        return self.reader.lookup(key)

    def restore_saveables(self, tensor_saveables: dict) -> list:
        """Assign (eagerly) or build restore ops for {checkpoint key: variable}."""
        if not tensor_saveables:
            return []
        items = list(tensor_saveables.items())
        if _executing_eagerly():
            values = [self.read_checked(key, variable) for key, variable in items]
            for (key, variable), value in zip(items, values):
                if not _is_eager_variable(variable):
                    raise ValueError(f"Cannot restore the graph variable {variable.name} while executing eagerly.")
                value_shape = TensorShape(np.shape(value))
                if not variable.shape.is_compatible_with(value_shape):
                    raise ValueError(f"Received incompatible tensor with shape {value_shape} when attempting to "
                                     f"restore variable with shape {variable.shape} and name {variable.name}.")
                variable._set_value(value)
            return []
        return self._graph_restore_ops(items)

    def _graph_restore_ops(self, items: list) -> list:
        from ..graph import device
        from ..ops.state_ops import assign
        from ..saver import restore_v2

        for _, variable in items:
            if _is_eager_variable(variable):
                raise ValueError(f"Cannot restore the eager variable {variable.name} in a graph.")
        with init_scope():
            with device("cpu:0"):
                restored = restore_v2(self.save_path_tensor, [key for key, _ in items], [""] * len(items),
                                      [variable.dtype.base_dtype for _, variable in items])
            restore_op = restored[0].op
            ops = []
            for (key, variable), tensor in zip(items, restored):
                op = assign(variable._ref(), tensor, validate_shape=variable.shape.is_fully_defined()).op
                self.restore_ops_by_name[(key, id(variable))] = (variable, op, restore_op)
                self.restore_checks[id(op)] = (key, variable, restore_op, op)
                ops.append(op)
        return ops

    def cached_restore_op(self, key: str, variable):
        entry = self.restore_ops_by_name.get((key, id(variable)))
        if entry is None or entry[0] is not variable or entry[1].graph is not get_default_graph():
            return None
        self.restore_checks[id(entry[1])] = (key, variable, entry[2], entry[1])
        return entry[1]

    def check_restore_ops(self, ops) -> None:
        """TF's run-time errors of RestoreV2/Assign, raised before running ``ops``."""
        for op in ops:
            check = self.restore_checks.get(id(op))
            if check is None:
                continue
            key, variable, restore_op, assign_op = check
            if key not in self.dtype_map:
                raise errors.NotFoundError(None, restore_op, f"Key {key} not found in checkpoint")
            stored, wanted = self.dtype_map[key], variable.dtype.base_dtype
            if stored != wanted:
                raise errors.InvalidArgumentError(None, restore_op, f"tensor_name = {key}; expected dtype "
                                                                    f"{_tf_dtype_name(wanted)} does not equal "
                                                                    f"original dtype {_tf_dtype_name(stored)}")
            if variable.shape.is_fully_defined() and variable.shape.as_list() != self.shape_map[key]:
                raise errors.InvalidArgumentError(
                    None, assign_op, "Assign requires shapes of both tensors to match. lhs shape= "
                                     f"[{','.join(map(str, variable.shape.as_list()))}] rhs shape= "
                                     f"[{','.join(map(str, self.shape_map[key]))}]")


class CheckpointPosition:
    """A node of the checkpoint's object graph, being matched with a Python object."""

    __slots__ = ("_checkpoint", "_proto_id")

    def __init__(self, checkpoint, proto_id: int):
        self._checkpoint = checkpoint
        self._proto_id = proto_id

    def restore(self, trackable) -> None:
        """Restore this node (and what hangs below it) into ``trackable``."""
        with init_scope():
            if self.bind_object(trackable):
                restore_ops = self._restore_descendants()
                if restore_ops:
                    self._checkpoint.new_restore_ops(restore_ops)

    def bind_object(self, trackable) -> bool:
        checkpoint = self._checkpoint
        checkpoint.all_python_objects.add(trackable)
        current = checkpoint.object_by_proto_id.get(self._proto_id, None)
        checkpoint.matched_proto_ids.add(self._proto_id)
        if current is None:
            checkpoint.object_by_proto_id[self._proto_id] = trackable
            return True
        if current is not trackable:
            logger.warning("Inconsistent references when loading the checkpoint into this object graph. For example, "
                           "in the saved checkpoint object, `model.layer.weight` and `model.layer_copy.weight` "
                           "reference the same variable, while in the current object these are two different "
                           "variables. The referenced variables are:(%s and %s).", current, trackable)
        return False

    def is_simple_variable(self) -> bool:
        attributes = self.object_proto.attributes
        return (len(attributes) == 1 and attributes[0].name == VARIABLE_VALUE_KEY
                and not self.object_proto.children)

    def value(self) -> np.ndarray:
        """The VARIABLE_VALUE tensor of this node (restore-on-create)."""
        for serialized_tensor in self.object_proto.attributes:
            if serialized_tensor.name == VARIABLE_VALUE_KEY:
                return self._checkpoint.reader.lookup(serialized_tensor.checkpoint_key)
        raise ValueError(f"The checkpoint node {self._proto_id} holds no variable value")

    def value_shape(self):
        for serialized_tensor in self.object_proto.attributes:
            if serialized_tensor.name == VARIABLE_VALUE_KEY:
                return TensorShape(self._checkpoint.shape_map[serialized_tensor.checkpoint_key])
        return None

    def gather_ops_or_named_saveables(self) -> tuple:
        """(restore ops already built, {checkpoint key: variable} to restore)."""
        if not self.object_proto.attributes:
            return [], {}
        saveables = _saveables(self.trackable)
        existing_restore_ops = []
        named_saveables = {}
        graph_building = not _executing_eagerly()
        for serialized_tensor in self.object_proto.attributes:
            variable = saveables.get(serialized_tensor.name)
            if variable is None:
                self._checkpoint.unused_attributes.setdefault(self._proto_id, []).append(serialized_tensor.name)
                continue
            if graph_building:
                existing = self._checkpoint.cached_restore_op(serialized_tensor.checkpoint_key, variable)
                if existing is not None:
                    existing_restore_ops.append(existing)
                    continue
            named_saveables[serialized_tensor.checkpoint_key] = variable
        return existing_restore_ops, named_saveables

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def trackable(self):
        return self._checkpoint.object_by_proto_id[self._proto_id]

    @property
    def object_proto(self):
        return self._checkpoint.object_graph_proto.nodes[self._proto_id]

    @property
    def proto_id(self) -> int:
        return self._proto_id

    @property
    def restore_uid(self) -> int:
        return self._checkpoint.restore_uid

    def __repr__(self) -> str:
        return repr(self.object_proto)

    def create_slot_variable_position(self, optimizer_object, variable, slot_variable_id, slot_name) -> tuple:
        slot_variable_position = CheckpointPosition(self._checkpoint, slot_variable_id)
        slot_variable = optimizer_object._create_or_restore_slot_variable(
            slot_variable_position=slot_variable_position, slot_name=slot_name, variable=variable)
        if slot_variable is not None and slot_variable_position.bind_object(slot_variable):
            return slot_variable_position, slot_variable
        return None, None

    def _restore_descendants(self) -> list:
        visit_queue = collections.deque([(self, self.trackable)])
        restore_ops = []
        tensor_saveables = {}
        while visit_queue:
            current_position, _ = visit_queue.popleft()
            new_restore_ops, new_tensor_saveables = current_position._single_restore()
            restore_ops.extend(new_restore_ops)
            tensor_saveables.update(new_tensor_saveables)
            _queue_children_for_restoration(current_position, visit_queue)
            _queue_slot_variables(current_position, visit_queue)
        restore_ops.extend(self._checkpoint.restore_saveables(tensor_saveables))
        return restore_ops

    def _single_restore(self) -> tuple:
        trackable = self.trackable
        trackable._maybe_initialize_trackable()
        if self._checkpoint.restore_uid > trackable._update_uid:
            restore_ops, tensor_saveables = self.gather_ops_or_named_saveables()
            trackable._update_uid = self._checkpoint.restore_uid
            return restore_ops, tensor_saveables
        return (), {}


def _queue_children_for_restoration(checkpoint_position, visit_queue) -> None:
    trackable = checkpoint_position.trackable
    trackable_children = trackable._trackable_children()
    checkpoint = checkpoint_position.checkpoint
    for child in checkpoint_position.object_proto.children:
        if checkpoint.object_by_proto_id.get(child.node_id, None) is not None:
            continue
        child_position = CheckpointPosition(checkpoint, child.node_id)
        local_object = trackable._lookup_dependency(child.local_name, trackable_children)
        child_proto = child_position.object_proto
        if local_object is None:
            if child_proto.HasField("has_checkpoint_values"):
                has_value = child_proto.has_checkpoint_values.value
            else:
                has_value = bool(child_proto.children or child_proto.attributes or child_proto.slot_variables
                                 or child_proto.HasField("registered_saver"))
            if has_value:
                trackable._deferred_dependencies.setdefault(child.local_name, []).append(child_position)
        elif child_position.bind_object(local_object):
            visit_queue.append((child_position, local_object))


def _queue_slot_variables(checkpoint_position, visit_queue) -> None:
    trackable = checkpoint_position.trackable
    checkpoint = checkpoint_position.checkpoint
    for deferred in checkpoint.deferred_slot_restorations.pop(checkpoint_position.proto_id, ()):
        slot_variable_position, slot_variable = checkpoint_position.create_slot_variable_position(
            trackable, deferred.original_variable, deferred.slot_variable_id, deferred.slot_name)
        if slot_variable_position is not None:
            visit_queue.append((slot_variable_position, slot_variable))
    for slot_restoration in checkpoint.slot_restorations.pop(checkpoint_position.proto_id, ()):
        optimizer_object = checkpoint.object_by_proto_id.get(slot_restoration.optimizer_id, None)
        if optimizer_object is None:
            checkpoint.deferred_slot_restorations.setdefault(slot_restoration.optimizer_id, []).append(
                _DeferredSlotVariableRestoration(original_variable=trackable,
                                                 slot_variable_id=slot_restoration.slot_variable_id,
                                                 slot_name=slot_restoration.slot_name))
        elif hasattr(optimizer_object, "_create_or_restore_slot_variable"):
            slot_variable_position, slot_variable = checkpoint_position.create_slot_variable_position(
                optimizer_object, trackable, slot_restoration.slot_variable_id, slot_restoration.slot_name)
            if slot_variable_position is not None:
                visit_queue.append((slot_variable_position, slot_variable))


def _poll_container_deferrals(graph_view) -> None:
    """Restorations waiting for list/dict elements that have been added since."""
    if graph_view.root is None:
        return
    for obj in graph_view.breadth_first_traversal()[0]:
        if isinstance(obj, _ContainerTracker):
            obj._poll_deferred()


# =====================================================================================
# Load status objects
# =====================================================================================
def _objects_with_attributes(full_list) -> list:
    return [o for o in full_list if _saveables(o)]


def _run(session, fetches, feed_dict=None):
    if fetches:
        return session.run(fetches, feed_dict=feed_dict)
    return None


class _LoadStatus:
    def assert_consumed(self):
        raise NotImplementedError

    def assert_existing_objects_matched(self):
        raise NotImplementedError

    def assert_nontrivial_match(self):
        raise NotImplementedError

    def run_restore_ops(self, session=None):
        raise NotImplementedError

    def initialize_or_restore(self, session=None):
        raise NotImplementedError

    def expect_partial(self):
        return self


class CheckpointLoadStatus(_LoadStatus):
    """What ``Checkpoint.restore(path)`` returns: assertions about the match, and (when
    building a graph) the restore ops to run."""

    def __init__(self, checkpoint, feed_dict, graph_view):
        self._checkpoint = checkpoint
        self._feed_dict = feed_dict
        self._object_graph_view = graph_view
        self._root = graph_view.root

    def assert_consumed(self):
        """Every checkpointed value has a Python object and every object a value."""
        _poll_container_deferrals(self._object_graph_view)
        pretty_printer = ObjectGraphProtoPrettyPrinter(self._checkpoint.object_graph_proto)
        self.assert_existing_objects_matched()
        for node_id, node in enumerate(self._checkpoint.object_graph_proto.nodes):
            if not node.attributes:
                continue
            trackable = self._checkpoint.object_by_proto_id.get(node_id, None)
            if trackable is None:
                raise AssertionError(f"Unresolved object in checkpoint {pretty_printer.node_names[node_id]}: {node}")
        if self._checkpoint.slot_restorations:
            raise AssertionError(f"Unresolved slot restorations: {dict(self._checkpoint.slot_restorations)}")
        if self._checkpoint.unused_attributes:
            messages = []
            for node_id, attribute in self._checkpoint.unused_attributes.items():
                obj = self._checkpoint.object_by_proto_id[node_id]
                messages.append(f"{pretty_printer.node_names[node_id]} ({obj}): {attribute}")
            joined = "\n".join(messages)
            raise AssertionError("Unused attributes in these objects (the attributes exist in the checkpoint but were "
                                 f"not restored):\n{joined}")
        return self

    def assert_existing_objects_matched(self):
        """Every existing Python object with variables was matched with the checkpoint."""
        _poll_container_deferrals(self._object_graph_view)
        for node_id, node in enumerate(self._checkpoint.object_graph_proto.nodes):
            trackable = self._checkpoint.object_by_proto_id.get(node_id, None)
            if trackable is not None and trackable._update_uid < self._checkpoint.restore_uid:
                raise AssertionError(f"Object {node} not assigned a value from checkpoint.")
        for trackable_object in list_objects(self._object_graph_view):
            if isinstance(trackable_object, _ContainerTracker) and not trackable_object._trackable_children():
                continue
            self._checkpoint.all_python_objects.add(trackable_object)
        bound = {id(o) for o in self._checkpoint.object_by_proto_id.values()}
        unused = [o for o in _objects_with_attributes(self._checkpoint.all_python_objects) if id(o) not in bound]
        if unused:
            count = len(unused)
            shown = min(10, count)
            raise AssertionError(f"Found {count} Python objects that were not bound to checkpointed values, likely due "
                                 f"to changes in the Python program. Showing {shown} of {count} unmatched objects: "
                                 f"{unused[:shown]}")
        return self

    def assert_nontrivial_match(self):
        """Something besides the root object was matched."""
        for trackable_object in list_objects(self._object_graph_view):
            self._checkpoint.all_python_objects.add(trackable_object)
        if len(self._checkpoint.object_by_proto_id) <= 1:
            bound = {id(o) for o in self._checkpoint.object_by_proto_id.values()}
            unused = [o for o in _objects_with_attributes(self._checkpoint.all_python_objects) if id(o) not in bound]
            if unused:
                raise AssertionError("Nothing except the root object matched a checkpointed value. Typically this "
                                     "means that the checkpoint does not match the Python program. The following "
                                     f"objects have no matching checkpointed value: {unused}")
            raise AssertionError(f"Nothing to load. No dependencies have been added to "
                                 f"{self._object_graph_view.root} yet.")
        return self

    def run_restore_ops(self, session=None):
        """Run the restore ops (graph mode; nothing to do when executing eagerly)."""
        if _executing_eagerly():
            return
        _poll_container_deferrals(self._object_graph_view)
        session = _default_session(session, "run restore ops")
        self._checkpoint.check_restore_ops(self._checkpoint.restore_ops)
        _run(session, list(self._checkpoint.restore_ops), self._feed_dict)

    def initialize_or_restore(self, session=None):
        """Restore what the checkpoint has; run the initializers of the other variables."""
        if _executing_eagerly():
            return
        session = _default_session(session, "initialize or restore")
        all_objects = list_objects(self._object_graph_view)
        restored = {id(o) for o in self._checkpoint.object_by_proto_id.values()}
        initializers = [c.initializer for c in all_objects
                        if getattr(c, "initializer", None) is not None and id(c) not in restored
                        and getattr(c, "_update_uid", self._checkpoint.restore_uid - 1) < self._checkpoint.restore_uid]
        self.run_restore_ops(session=session)
        _run(session, initializers)

    def expect_partial(self):
        """Silence the warnings about values left unrestored."""
        self._checkpoint.expect_partial = True
        return self


class InitializationOnlyStatus(_LoadStatus):
    """What ``restore(None)`` returns: ``initialize_or_restore`` runs the initializers."""

    def __init__(self, object_graph_view, restore_uid):
        self._restore_uid = restore_uid
        self._object_graph_view = object_graph_view
        self._root = object_graph_view.root

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_existing_objects_matched(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_nontrivial_match(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def run_restore_ops(self, session=None):
        raise AssertionError("No checkpoint specified, so no restore ops are available (save_path=None to "
                             "Saver.restore).")

    def initialize_or_restore(self, session=None):
        if _executing_eagerly():
            return
        session = _default_session(session, "initialize variables")
        initializers = [c.initializer for c in list_objects(self._object_graph_view)
                        if getattr(c, "initializer", None) is not None
                        and getattr(c, "_update_uid", self._restore_uid - 1) < self._restore_uid]
        _run(session, initializers)


class _NameBasedRestoreCoordinator:
    """A tf.train.Saver checkpoint (no object graph): variables matched by their names."""

    def __init__(self, save_path, reader):
        self.save_path = save_path
        self.reader = reader
        self.dtype_map = reader.variable_to_dtype_map()
        self.unused_attributes: dict = {}  # id(object) -> (object, [names])
        self.restore_uid = next_uid()

    def globally_named_object_attributes(self, trackable) -> list:
        return [(_full_name(variable), variable) for variable in _saveables(trackable).values()]

    def eager_restore(self, trackable) -> None:
        for name, variable in self.globally_named_object_attributes(trackable):
            if name not in self.dtype_map:
                entry = self.unused_attributes.setdefault(id(trackable), (trackable, []))
                entry[1].append(name)
                continue
            stored, wanted = self.dtype_map[name], variable.dtype.base_dtype
            if stored != wanted:
                raise errors.InvalidArgumentError(None, None, f"tensor_name = {name}; expected dtype "
                                                              f"{_tf_dtype_name(wanted)} does not equal original "
                                                              f"dtype {_tf_dtype_name(stored)} [Op:RestoreV2]")
            value = self.reader.lookup(name)
            if not variable.shape.is_compatible_with(TensorShape(np.shape(value))):
                raise ValueError(f"Received incompatible tensor with shape {TensorShape(np.shape(value))} when "
                                 f"attempting to restore variable with shape {variable.shape} and name "
                                 f"{variable.name}.")
            variable._set_value(value)


class NameBasedSaverStatus(_LoadStatus):
    """What ``restore`` returns for a name-based (tf.train.Saver) checkpoint."""

    def __init__(self, checkpoint, object_graph_view):
        logger.warning("Restoring a name-based tf.train.Saver checkpoint using the object-based restore API. This "
                       "mode uses global names to match variables, and so is somewhat fragile. It also adds new "
                       "restore ops to the graph each time it is called when graph building. Prefer re-encoding "
                       "training checkpoints in the object-based format: run save() on the object-based saver (the "
                       "same one this message is coming from) and use that checkpoint in the future.")
        self._checkpoint = checkpoint
        self._object_graph_view = object_graph_view
        self._optionally_restored: list = []
        self._root = object_graph_view.root

    def add_to_optionally_restored(self, var) -> None:
        self._optionally_restored.append(var)

    def assert_consumed(self):
        unused = [entry for entry in self._checkpoint.unused_attributes.values()
                  if all(entry[0] is not x for x in self._optionally_restored)]
        if unused:
            text = "".join(f"\n    {obj}: {attributes}" for obj, attributes in unused)
            raise AssertionError(f"Some objects had attributes which were not restored: {text}")
        for trackable in list_objects(self._object_graph_view):
            trackable._maybe_initialize_trackable()
            if trackable._update_uid < self._checkpoint.restore_uid:
                raise AssertionError(f"Object not restored: {trackable}")
        return self

    def assert_existing_objects_matched(self):
        return self.assert_consumed()

    def assert_nontrivial_match(self):
        return self.assert_consumed()

    def _gather_saveable_objects(self) -> dict:
        names_to_variables = {}
        for trackable in list_objects(self._object_graph_view):
            trackable._maybe_initialize_trackable()
            if trackable._update_uid < self._checkpoint.restore_uid:
                trackable._update_uid = self._checkpoint.restore_uid
            else:
                continue
            names_to_variables.update(self._checkpoint.globally_named_object_attributes(trackable))
        return names_to_variables

    def run_restore_ops(self, session=None):
        """Restore with a tf.train.Saver of the objects' variables (graph mode)."""
        if _executing_eagerly():
            return
        from ..saver import Saver

        session = _default_session(session, "run restore ops")
        names_to_variables = self._gather_saveable_objects()
        if names_to_variables:
            Saver(names_to_variables).restore(sess=session, save_path=self._checkpoint.save_path)

    def initialize_or_restore(self, session=None):
        self.run_restore_ops(session=session)


# =====================================================================================
# TrackableSaver
# =====================================================================================
class TrackableSaver:
    """Saves and restores an object graph (``Checkpoint._saver``)."""

    def __init__(self, graph_view):
        self._graph_view = graph_view
        self._save_cache: dict = {}
        self._file_prefix_placeholders: dict = {}
        self._restore_op_cache: dict = {}

    # -- save -------------------------------------------------------------------------------
    def save(self, file_prefix, checkpoint_number=None, session=None, options=None) -> str:
        del options
        file_prefix = _text(file_prefix)
        if checkpoint_number:
            file_prefix = "%s-%d" % (file_prefix, checkpoint_number)
        named_variables, proto = serialize_object_graph(self._graph_view)
        parent = os.path.dirname(file_prefix)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if _executing_eagerly():
            items = []
            for key, variable in named_variables:
                if not _is_eager_variable(variable):
                    raise ValueError(f"Cannot save the graph variable {variable.name} while executing eagerly.")
                items.append((key, variable._array, variable.dtype.base_dtype))
            items.append((OBJECT_GRAPH_PROTO_KEY, proto.SerializeToString(), dtypes.string))
            fmt.write_bundle(file_prefix, items)
            return file_prefix
        if _inside_function():
            raise NotImplementedError("tfc cannot save a tf.train.Checkpoint inside a defun trace; save outside it.")
        session = _default_session(session, f'save checkpoint to "{file_prefix}"')
        prefix_tensor, proto_tensor, save_tensor = self._graph_save_op(get_default_graph(), named_variables)
        result = session.run(save_tensor, feed_dict={prefix_tensor: file_prefix,
                                                     proto_tensor: proto.SerializeToString()})
        return _text(result)

    def _graph_save_op(self, graph, named_variables) -> tuple:
        """(prefix feed, object graph feed, the saved prefix) for this set of variables:
        a SaveV2 op, built once per set."""
        from ..graph import control_dependencies, device
        from ..ops.array_ops import identity, placeholder_with_default
        from ..saver import save_v2

        signature = (id(graph), tuple((key, id(variable)) for key, variable in named_variables))
        cached = self._save_cache.get(signature)
        if cached is not None and cached[0] is graph:
            return cached[1]
        for _, variable in named_variables:
            if _is_eager_variable(variable):
                raise ValueError(f"Cannot save the eager variable {variable.name} in a graph.")
        with graph.as_default(), init_scope(), device("/cpu:0"):
            prefix_tensor = placeholder_with_default("", shape=(), name="Const")
            proto_tensor = placeholder_with_default("", shape=(), name="Const")
            keys = [key for key, _ in named_variables] + [OBJECT_GRAPH_PROTO_KEY]
            save_op = save_v2(prefix_tensor, keys, [""] * len(keys),
                              [variable for _, variable in named_variables] + [proto_tensor])
            with control_dependencies([save_op]):
                save_tensor = identity(prefix_tensor)
        entry = (prefix_tensor, proto_tensor, save_tensor)
        self._save_cache[signature] = (graph, entry)
        return entry

    # -- restore ----------------------------------------------------------------------------
    def _file_prefix_placeholder(self, graph):
        from ..graph import device
        from ..ops.array_ops import placeholder_with_default

        cached = self._file_prefix_placeholders.get(id(graph))
        if cached is not None and cached[0] is graph:
            return cached[1]
        with init_scope(), device("/cpu:0"):
            tensor = placeholder_with_default("model", shape=(), name="Const")
        self._file_prefix_placeholders[id(graph)] = (graph, tensor)
        return tensor

    def restore(self, save_path, options=None):
        del options
        if save_path is None:
            return InitializationOnlyStatus(self._graph_view, next_uid())
        from tfc.protos import TrackableObjectGraph

        from ..saver import _open_bundle

        save_path = _text(save_path)
        reader = _open_bundle(save_path)
        graph_building = not _executing_eagerly()
        if not reader.contains(OBJECT_GRAPH_PROTO_KEY):
            coordinator = _NameBasedRestoreCoordinator(save_path, reader)
            if not graph_building:
                for existing in list_objects(self._graph_view):
                    existing._maybe_initialize_trackable()
                    existing._name_based_attribute_restore(coordinator)
            return NameBasedSaverStatus(coordinator, self._graph_view)
        object_graph_string = reader.lookup(OBJECT_GRAPH_PROTO_KEY)
        object_graph_string = object_graph_string.item() if isinstance(object_graph_string, np.ndarray) else \
            object_graph_string
        object_graph_proto = TrackableObjectGraph()
        object_graph_proto.ParseFromString(object_graph_string)
        if graph_building:
            prefix_tensor = self._file_prefix_placeholder(get_default_graph())
            feed_dict = {prefix_tensor: save_path}
        else:
            prefix_tensor, feed_dict = None, None
        coordinator = _CheckpointRestoreCoordinator(object_graph_proto, save_path, prefix_tensor, reader,
                                                    self._restore_op_cache, self._graph_view)
        CheckpointPosition(coordinator, 0).restore(self._graph_view.root)
        return CheckpointLoadStatus(coordinator, feed_dict, self._graph_view)


# =====================================================================================
# tf.train.Checkpoint (TF 1.x: CheckpointV1)
# =====================================================================================
def _update_checkpoint_state_internal(save_dir, **kwargs) -> None:
    from ..saver import update_checkpoint_state_internal

    update_checkpoint_state_internal(save_dir, **kwargs)


class CheckpointOptions:
    """tf.train.CheckpointOptions (accepted; tfc saves and restores on the CPU)."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, experimental_sharding_callback=None,
                 experimental_skip_slot_variables=False):
        self.experimental_io_device = experimental_io_device
        self.enable_async = experimental_enable_async_checkpoint or enable_async
        self.experimental_enable_async_checkpoint = self.enable_async
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = experimental_skip_slot_variables


class Checkpoint(AutoTrackable):
    """tf.train.Checkpoint: groups trackable objects (its keyword arguments: variables,
    optimizers, layers, tf.Module...), saving and restoring them with a ``save_counter``."""

    def __init__(self, **kwargs):
        for k, v in sorted(kwargs.items(), key=lambda item: item[0]):
            setattr(self, k, v)
            value = getattr(self, k)
            tracked = self._lookup_dependency(k)
            if not isinstance(value, Trackable) and not isinstance(tracked, _ContainerTracker):
                raise ValueError(f"`Checkpoint` was expecting a trackable object (an object derived from "
                                 f"`Trackable`), got {v}. If you believe this object should be trackable (i.e. it is "
                                 "part of the TensorFlow Python API and manages state), please open an issue.")
        self._save_counter = None  # created lazily, for restore-on-create
        self._save_assign_op = None
        self._saver = TrackableSaver(ObjectGraphView(self))

    def _maybe_create_save_counter(self) -> None:
        if self._save_counter is None:
            from ..variables import Variable

            with init_scope():
                counter = Variable(0, dtype=dtypes.int64, name="save_counter", trainable=False)
            self._track_trackable(counter, name="save_counter")
            self._save_counter = NoDependency(counter)

    @property
    def save_counter(self):
        """An int64 variable, incremented by ``save`` (it numbers the checkpoints)."""
        self._maybe_create_save_counter()
        return self._save_counter

    def write(self, file_prefix, session=None, options=None) -> str:
        """Write a checkpoint at ``file_prefix`` (no numbering, no ``checkpoint`` file)."""
        return self._write(file_prefix, session=session, options=options)

    def _write(self, file_prefix, session=None, options=None) -> str:
        output = self._saver.save(file_prefix=file_prefix, session=session, options=options)
        callbacks = getattr(options, "experimental_write_callbacks", None)
        for callback in callbacks or ():
            callback(output)
        return output

    def save(self, file_prefix, session=None, options=None) -> str:
        """Save at ``file_prefix-<save_counter>`` and record it in the ``checkpoint`` file."""
        graph_building = not _executing_eagerly()
        if graph_building:
            if _inside_function():
                raise NotImplementedError(
                    "Calling tf.train.Checkpoint.save() from a function is not supported, as save() modifies saving "
                    "metadata in ways not supported by TensorFlow Operations. Consider using "
                    "tf.train.Checkpoint.write(), a lower-level API which does not update metadata. "
                    "tf.train.latest_checkpoint and related APIs will not see this checkpoint.")
            session = _default_session(session, f'save checkpoint to "{_text(file_prefix)}"')
            if self._save_counter is None:
                session.run(self.save_counter.initializer)
        if not graph_building or self._save_assign_op is None:
            assign_op = self.save_counter.assign_add(1, read_value=True)
            if graph_building:
                self._save_assign_op = NoDependency(assign_op)
        if graph_building:
            checkpoint_number = int(session.run(self._save_assign_op))
        else:
            checkpoint_number = int(self.save_counter.numpy())
        file_prefix = _text(file_prefix)
        file_path = self.write("%s-%d" % (file_prefix, checkpoint_number), session=session, options=options)
        _update_checkpoint_state_internal(os.path.dirname(file_prefix), model_checkpoint_path=file_path,
                                          all_model_checkpoint_paths=[file_path], save_relative_paths=True)
        return file_path

    def restore(self, save_path, options=None):
        """Restore from ``save_path`` (None: initialize only); returns a load status."""
        status = self._saver.restore(save_path=save_path, options=options)
        self._maybe_create_save_counter()
        if isinstance(status, NameBasedSaverStatus):
            status.add_to_optionally_restored(self.save_counter)
        return status

    def read(self, save_path, options=None):
        """Restore without creating the save counter (TF 2's ``read``)."""
        return self._saver.restore(save_path=save_path, options=options)


# =====================================================================================
# tf.train.Saver on an object-based checkpoint (saver.py's object_graph_key_mapping)
# =====================================================================================
def object_graph_key_mapping(checkpoint_path) -> dict:
    """{variable name when saved (SerializedTensor.full_name): checkpoint key}."""
    from tfc.protos import TrackableObjectGraph

    from ..saver import _open_bundle

    reader = _open_bundle(_text(checkpoint_path))
    value = reader.lookup(OBJECT_GRAPH_PROTO_KEY)  # NotFoundError: not an object-based checkpoint
    proto = TrackableObjectGraph.FromString(value.item() if isinstance(value, np.ndarray) else value)
    return {attribute.full_name: attribute.checkpoint_key for node in proto.nodes for attribute in node.attributes}


def _names_to_variables(var_list) -> dict:
    """The Saver's {checkpoint name: variable} (what its name-based keys would be)."""
    from ..saver import _eager_saveables, _is_eager_variable, op_list_to_dict

    if isinstance(var_list, dict):
        return dict(var_list)
    var_list = list(var_list)
    if var_list and all(_is_eager_variable(v) for v in var_list):
        return dict(_eager_saveables(var_list))
    return op_list_to_dict(var_list)


def saver_from_object_based_checkpoint(checkpoint_path, var_list=None, builder=None, names_to_keys=None,
                                       cached_saver=None):
    """A tf.train.Saver restoring ``var_list`` (by their names) from an object-based checkpoint."""
    from ..saver import Saver, _all_saveable_objects

    if names_to_keys is None:
        names_to_keys = object_graph_key_mapping(checkpoint_path)
    if var_list is None:
        var_list = _all_saveable_objects()
    current = _names_to_variables(var_list)
    current_names = set(current)
    previous_names = set(names_to_keys)
    missing_names = current_names - previous_names
    if missing_names:
        extra_names = previous_names - current_names
        intersecting_names = previous_names & current_names
        raise errors.NotFoundError(None, None, (
            "\n\nExisting variables not in the checkpoint: %s\n\nVariables names when this checkpoint was written "
            "which don't exist now: %s\n\n(%d variable name(s) did match)\n\nCould not find some variables in the "
            "checkpoint (see names above). Saver was attempting to load an object-based checkpoint (saved using "
            "tf.train.Checkpoint or tf.keras.Model.save_weights) using variable names. If the checkpoint was written "
            "with eager execution enabled, it's possible that variable names have changed (for example missing a '_1' "
            "suffix). It's also possible that there are new variables which did not exist when the checkpoint was "
            "written. You can construct a Saver(var_list=...) with only the variables which previously existed, and "
            "if variable names have changed you may need to make this a dictionary with the old names as keys. If "
            "you're using an Estimator, you'll need to return a tf.train.Saver inside a tf.train.Scaffold from your "
            "model_fn.") % (", ".join(sorted(missing_names)), ", ".join(sorted(extra_names)),
                            len(intersecting_names)))
    if cached_saver is not None:
        return cached_saver
    return Saver(var_list={names_to_keys[name]: variable for name, variable in current.items()}, builder=builder)


def restore_object_based_checkpoint_with_saver(saver, sess, save_path) -> bool:
    """Saver.restore's fallback when a key is missing: an object-based checkpoint is restored by
    the names of its variables (False: it is not one)."""
    try:
        names_to_keys = object_graph_key_mapping(save_path)
    except errors.NotFoundError:
        return False
    logger.warning("Restoring an object-based checkpoint using a name-based saver. This may be somewhat fragile, and "
                   "will re-build the Saver. Instead, consider loading object-based checkpoints using "
                   "tf.train.Checkpoint().")
    object_saver = saver_from_object_based_checkpoint(save_path, var_list=saver._var_list,
                                                      names_to_keys=names_to_keys,
                                                      cached_saver=getattr(saver, "_object_restore_saver", None))
    saver._object_restore_saver = object_saver
    object_saver.restore(sess, save_path)
    return True


# =====================================================================================
# tf.train.CheckpointManager (checkpoint_management.py)
# =====================================================================================
def _delete_file_if_exists(filespec) -> None:
    for pathname in glob.glob(filespec):
        try:
            os.remove(pathname)
        except OSError:
            pass


def _evaluate(tensor, session=None):
    if _executing_eagerly() or hasattr(tensor, "numpy") and _is_eager_variable(tensor):
        return int(tensor.numpy())
    session = _default_session(session, "evaluate the step counter")
    return int(session.run(tensor))


class CheckpointManager:
    """Numbers checkpoints ``<directory>/<checkpoint_name>-N``, keeps the newest
    ``max_to_keep`` (and one every ``keep_checkpoint_every_n_hours``) and records them in
    ``<directory>/checkpoint`` (what ``tf.train.latest_checkpoint`` reads)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None,
                 last_checkpoint_step=None):
        from ..saver import get_checkpoint_state

        self._checkpoint = checkpoint
        self._save_counter_assign = None
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError("Expected a positive integer or `None` for `max_to_keep`, got %d." % (max_to_keep,))
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        if isinstance(directory, os.PathLike):
            directory = os.fspath(directory)
        self._directory = directory
        self._checkpoint_prefix = os.path.join(directory, checkpoint_name)
        self._init_fn = init_fn
        if checkpoint_interval is not None:
            if step_counter is None:
                raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
            self._last_checkpoint_step = last_checkpoint_step
            self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        recovered_state = get_checkpoint_state(directory)
        current_clock = time.time()
        self._maybe_delete = collections.OrderedDict()
        if recovered_state is None:
            self._latest_checkpoint = None
            self._last_preserved_timestamp = current_clock - 1.
        else:
            self._latest_checkpoint = recovered_state.model_checkpoint_path
            self._last_preserved_timestamp = recovered_state.last_preserved_timestamp
            if current_clock < self._last_preserved_timestamp:
                logger.warning("time.time() returned a value %f seconds behind the last preserved checkpoint "
                               "timestamp.", self._last_preserved_timestamp - current_clock)
                self._last_preserved_timestamp = current_clock
            all_timestamps = list(recovered_state.all_model_checkpoint_timestamps)
            all_paths = list(recovered_state.all_model_checkpoint_paths)
            if not all_timestamps:
                all_timestamps = [self._last_preserved_timestamp] * len(all_paths)
            for filename, timestamp in zip(all_paths, all_timestamps):
                timestamp = min(timestamp, current_clock)
                if timestamp > self._last_preserved_timestamp:
                    self._maybe_delete[filename] = timestamp

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The prefix of the newest checkpoint, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self) -> list:
        """The checkpoints managed (oldest first), not yet deleted."""
        return list(self._maybe_delete.keys())

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def _prefix(self) -> str:
        return self._checkpoint_prefix

    def _sweep(self) -> None:
        if not self._max_to_keep:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            filename, timestamp = self._maybe_delete.popitem(last=False)
            if (self._keep_checkpoint_every_n_hours
                    and (timestamp - self._keep_checkpoint_every_n_hours * 3600. >= self._last_preserved_timestamp)):
                self._last_preserved_timestamp = timestamp
                continue
            _delete_file_if_exists(filename + ".index")
            _delete_file_if_exists(filename + ".data-?????-of-?????")

    def _record_state(self) -> None:
        filenames, timestamps = zip(*self._maybe_delete.items())
        _update_checkpoint_state_internal(self._directory, model_checkpoint_path=self.latest_checkpoint,
                                          all_model_checkpoint_paths=list(filenames),
                                          all_model_checkpoint_timestamps=list(timestamps),
                                          last_preserved_timestamp=self._last_preserved_timestamp,
                                          save_relative_paths=True)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Write ``<prefix>-<checkpoint_number or save_counter>``; returns its path (None
        when ``checkpoint_interval`` says it is not time yet)."""
        session = None
        if self._checkpoint_interval is not None:
            current_step = _evaluate(self._step_counter)
            if self._last_checkpoint_step is not None:
                if current_step == self._last_checkpoint_step:
                    return None
                if check_interval and current_step < self._last_checkpoint_step + self._checkpoint_interval:
                    return None
            self._last_checkpoint_step = current_step
        if _executing_eagerly():
            save_counter = self._checkpoint.save_counter
            save_counter.assign_add(1)
        else:
            session = _default_session(None, "save a checkpoint")
            created = getattr(self._checkpoint, "_save_counter", None) is None
            save_counter = self._checkpoint.save_counter
            if created:
                session.run(save_counter.initializer)
            if self._save_counter_assign is None:
                self._save_counter_assign = save_counter.assign_add(1, read_value=False)
            session.run(self._save_counter_assign)
        if checkpoint_number is None:
            checkpoint_number = save_counter
        if not isinstance(checkpoint_number, (int, np.integer)) or isinstance(checkpoint_number, bool):
            checkpoint_number = _evaluate(checkpoint_number, session)
        prefix = "%s-%d" % (self._prefix, checkpoint_number)
        save_path = self._checkpoint._write(prefix, session=session, options=options) \
            if isinstance(self._checkpoint, Checkpoint) else self._checkpoint.write(prefix)
        timestamp = time.time()
        if save_path in self._maybe_delete:
            del self._maybe_delete[save_path]
        self._maybe_delete[save_path] = timestamp
        self._latest_checkpoint = save_path
        self._record_state()
        self._sweep()
        self._record_state()
        return save_path

    def restore_or_initialize(self):
        """Restore the latest checkpoint (returning its path) or run ``init_fn``."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _evaluate(self._step_counter)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
            logger.info("Customized initialization is done through the passed `init_fn`.")
        return None

    def sync(self) -> None:
        """Wait for asynchronous checkpoints (tfc writes synchronously)."""


EXPORTS = {
    "Checkpoint": Checkpoint,
    "CheckpointManager": CheckpointManager,
    "CheckpointOptions": CheckpointOptions,
}
