"""Dependency tracking for object-based checkpoints (``tf.train.Checkpoint``).

Follows TensorFlow's tensorflow/python/trackable/ (base.py, autotrackable.py,
data_structures.py, trackable_utils.py) and the TF1 Optimizer's trackable part
(python/training/optimizer.py), with TF 2.21's behaviour where it differs from TF 1.15
(the object graph it leads to is what TF 2.21 writes):

- :class:`Trackable`: named dependencies (``_track_trackable``), restorations waiting for a
  dependency that does not exist yet (``_deferred_dependencies``, fulfilled by
  ``_handle_deferred_dependencies`` when it is tracked: restore-on-create), the restore uid.
  tf.Variable (graph and eager), the tf.layers Layer and tf.train.Optimizer derive from it.
- :class:`AutoTrackable`: attribute assignment tracks the value (``self.x = v``), as TF's
  AutoTrackable (tf.Module, tf.train.Checkpoint). Lists, tuples and dicts held by attributes
  become nodes of the object graph with their elements as children ("0", "1"... and the
  dict keys), like TF's ListWrapper/_TupleWrapper/_DictWrapper; tfc does not replace the
  container (the attribute keeps the very list assigned), it follows its current contents
  instead: a trackable appended to a tracked list is saved, but is matched with a
  checkpoint restored earlier only when a restore status method next runs, not at once.
- :class:`LayerTrackable`: the tf.layers Layer (TF 1.15's Keras base layer): ``add_weight``
  tracks each weight under its name (``kernel``, ``bias``), attribute assignment outside the
  base ``__init__`` tracks trackable values; containers count only when they hold trackables.
- :class:`OptimizerTrackable`: the TF1 optimizer's non-slot variables (``beta1_power``...)
  are dependencies of the current graph, slot variables (``m``, ``v``...) are restored when
  created (or created from the checkpoint, eagerly, when the variable they slot for is
  restored), as TF's Optimizer does.

The checkpoint side (object graph proto, save, restore, status objects) is
tfc/frontend/train/checkpoint.py.
"""
from __future__ import annotations

import collections
import functools
import itertools
import re

OBJECT_GRAPH_PROTO_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE_KEY = "VARIABLE_VALUE"
_ESCAPE_CHAR = "."
_OPTIMIZER_SLOTS_NAME = _ESCAPE_CHAR + "OPTIMIZER_SLOT"
OBJECT_ATTRIBUTES_NAME = _ESCAPE_CHAR + "ATTRIBUTES"

_UIDS = itertools.count()


def next_uid() -> int:
    """A process-wide increasing id (TF's ops.uid()): the restore uid of a checkpoint load."""
    return next(_UIDS)


# =====================================================================================
# Names (trackable_utils.py)
# =====================================================================================
def escape_local_name(name: str) -> str:
    """'.' -> '..' and '/' -> '.S', so that '/' separates the edges of a path."""
    return name.replace(_ESCAPE_CHAR, _ESCAPE_CHAR + _ESCAPE_CHAR).replace("/", _ESCAPE_CHAR + "S")


def object_path_to_string(path) -> str:
    return "/".join(escape_local_name(ref.name) for ref in path)


def checkpoint_key(object_path: str, local_name: str) -> str:
    """``<object path>/.ATTRIBUTES/<attribute>``."""
    return f"{object_path}/{OBJECT_ATTRIBUTES_NAME}/{escape_local_name(local_name)}"


def slot_variable_key(variable_path: str, optimizer_path: str, slot_name: str) -> str:
    """``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>``."""
    return f"{variable_path}/{_OPTIMIZER_SLOTS_NAME}/{optimizer_path}/{escape_local_name(slot_name)}"


TrackableReference = collections.namedtuple("TrackableReference", ["name", "ref"])


class NoDependency:
    """``self.x = NoDependency(value)`` stores ``value`` without tracking it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def no_automatic_dependency_tracking(method):
    """Attribute assignments inside ``method`` are not tracked (TF's decorator)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        previous = self.__dict__.get("_self_setattr_tracking", True)
        object.__setattr__(self, "_self_setattr_tracking", False)
        try:
            return method(self, *args, **kwargs)
        finally:
            object.__setattr__(self, "_self_setattr_tracking", previous)

    return wrapper


def _is_variable(value) -> bool:
    from .variables import Variable

    return isinstance(value, Variable)


# =====================================================================================
# Trackable
# =====================================================================================
class Trackable:
    """Base class of objects with checkpoint dependencies (no attribute tracking)."""

    def _maybe_initialize_trackable(self) -> None:
        """The tracking state, made on first use (subclasses need not call an __init__)."""
        if "_self_unconditional_checkpoint_dependencies" in self.__dict__:
            return
        state = self.__dict__
        state["_self_unconditional_checkpoint_dependencies"] = []
        state["_self_unconditional_dependency_names"] = {}
        state["_self_unconditional_deferred_dependencies"] = {}
        state["_self_update_uid"] = -1
        state["_self_name_based_restores"] = []

    @property
    def _update_uid(self) -> int:
        self._maybe_initialize_trackable()
        return self.__dict__["_self_update_uid"]

    @_update_uid.setter
    def _update_uid(self, value: int) -> None:
        self._maybe_initialize_trackable()
        self.__dict__["_self_update_uid"] = value

    @property
    def _unconditional_checkpoint_dependencies(self) -> list:
        self._maybe_initialize_trackable()
        return self.__dict__["_self_unconditional_checkpoint_dependencies"]

    @property
    def _deferred_dependencies(self) -> dict:
        """{local name: [CheckpointPosition]} waiting for a dependency of that name."""
        self._maybe_initialize_trackable()
        return self.__dict__["_self_unconditional_deferred_dependencies"]

    @property
    def _name_based_restores(self) -> list:
        self._maybe_initialize_trackable()
        return self.__dict__["_self_name_based_restores"]

    def _trackable_children(self, save_type="checkpoint", **kwargs) -> dict:
        """{local name: trackable}, in the order the dependencies were added."""
        return {ref.name: ref.ref for ref in self._unconditional_checkpoint_dependencies}

    def _lookup_dependency(self, name, cached_dependencies=None):
        if cached_dependencies:
            return cached_dependencies.get(name)
        self._maybe_initialize_trackable()
        return self.__dict__["_self_unconditional_dependency_names"].get(name)

    def _track_trackable(self, trackable, name, overwrite=False):
        """Add ``trackable`` as the dependency ``name`` (restoring it if a checkpoint
        restore was waiting for that name); returns ``trackable``."""
        self._maybe_initialize_trackable()
        if not isinstance(trackable, Trackable):
            raise TypeError("Trackable._track_trackable() can only be used to track objects of type Trackable. Got "
                            f"type {type(trackable)}.")
        deps = self.__dict__["_self_unconditional_checkpoint_dependencies"]
        names = self.__dict__["_self_unconditional_dependency_names"]
        new_reference = TrackableReference(name, trackable)
        current_object = self._lookup_dependency(name)
        if current_object is not None and current_object is not trackable:
            if not overwrite:
                raise ValueError(f"Called Trackable._track_trackable() with name='{name}', but a Trackable with this "
                                 "name is already declared as a dependency. Names must be unique (or "
                                 "overwrite=True).")
            for index, (old_name, _) in enumerate(deps):
                if name == old_name:
                    deps[index] = new_reference
        elif current_object is None:
            deps.append(new_reference)
            names[name] = trackable
            self._handle_deferred_dependencies(name=name, trackable=trackable)
        names[name] = trackable
        return trackable

    def _untrack(self, name) -> None:
        """Drop the dependency ``name`` (``del self.name`` on an AutoTrackable)."""
        self._maybe_initialize_trackable()
        deps = self.__dict__["_self_unconditional_checkpoint_dependencies"]
        deps[:] = [ref for ref in deps if ref.name != name]
        self.__dict__["_self_unconditional_dependency_names"].pop(name, None)

    def _handle_deferred_dependencies(self, name, trackable) -> None:
        """Restore ``trackable`` from the restorations queued for the dependency ``name``
        (newest checkpoint first) and from name-based restores of this object."""
        self._maybe_initialize_trackable()
        trackable._maybe_initialize_trackable()
        positions = self._deferred_dependencies.pop(name, ())
        for position in sorted(positions, key=lambda p: p.restore_uid, reverse=True):
            position.restore(trackable)
        for name_based in sorted(self._name_based_restores, key=lambda c: c.restore_uid, reverse=True):
            trackable._name_based_attribute_restore(name_based)

    def _name_based_attribute_restore(self, checkpoint) -> None:
        """Restore this object's variables by their names (a tf.train.Saver checkpoint)."""
        if checkpoint not in self._name_based_restores:
            self._name_based_restores.append(checkpoint)
        if self._update_uid < checkpoint.restore_uid:
            checkpoint.eager_restore(self)
            self._update_uid = checkpoint.restore_uid

    def _gather_saveables_for_checkpoint(self) -> dict:
        """{attribute name: variable} saved with this object: a Variable saves itself as
        ``VARIABLE_VALUE``; other objects save nothing of their own by default."""
        if _is_variable(self):
            return {VARIABLE_VALUE_KEY: self}
        return {}


# =====================================================================================
# Containers held by attributes (data_structures.py)
# =====================================================================================
def _is_container(value) -> bool:
    return isinstance(value, (list, tuple, dict)) and not isinstance(value, _ContainerTracker)


def _tuple_is_tracked(value) -> bool:
    """TF wraps a tuple only when an element is trackable or mutable (a list, a dict)."""
    for element in value:
        if isinstance(element, (Trackable, NoDependency, list, dict)):
            return True
        if isinstance(element, tuple) and _tuple_is_tracked(element):
            return True
    return False


class _ContainerTracker(Trackable):
    """The object-graph node of a list, tuple or dict (TF's ListWrapper, _TupleWrapper,
    _DictWrapper): its trackable elements, by index or key, are its children."""

    def __init__(self, container, track_empty: bool):
        self.__dict__["_self_container"] = container
        self.__dict__["_self_track_empty"] = track_empty
        self.__dict__["_self_nested"] = {}  # id(nested container) -> (container, tracker)

    @property
    def container(self):
        return self.__dict__["_self_container"]

    def _child(self, value):
        if isinstance(value, NoDependency):
            return None
        if isinstance(value, Trackable):
            return value
        if _is_container(value):
            if isinstance(value, tuple) and not _tuple_is_tracked(value):
                return None
            nested = self.__dict__["_self_nested"]
            entry = nested.get(id(value))
            if entry is None or entry[0] is not value:
                entry = (value, _ContainerTracker(value, self.__dict__["_self_track_empty"]))
                nested[id(value)] = entry
            tracker = entry[1]
            if not self.__dict__["_self_track_empty"] and not tracker._holds_trackables():
                return None
            return tracker
        return None

    def _items(self):
        container = self.container
        if isinstance(container, dict):
            return list(container.items())
        return list(enumerate(container))

    def _holds_trackables(self) -> bool:
        return bool(self._trackable_children())

    def _trackable_children(self, save_type="checkpoint", **kwargs) -> dict:
        children = {}
        for key, value in self._items():
            child = self._child(value)
            if child is None:
                continue
            if isinstance(self.container, dict) and not isinstance(key, str):
                if not self.__dict__["_self_track_empty"]:
                    continue  # a layer's dict: only string keys are dependencies
                raise ValueError(f"Unable to save the object {self!r} (a dictionary wrapper constructed automatically "
                                 "on attribute assignment). The wrapped dictionary contains a non-string key which "
                                 "maps to a trackable object or mutable data structure.\n\nIf you don't need this "
                                 "dictionary checkpointed, wrap it in a non-trackable object; it will be subsequently "
                                 "ignored.")
            children[str(key)] = child
        return children

    def _lookup_dependency(self, name, cached_dependencies=None):
        if cached_dependencies:
            return cached_dependencies.get(name)
        return self._trackable_children().get(name)

    def _poll_deferred(self) -> None:
        """Match restorations waiting for elements that have been added since."""
        deferred = self._deferred_dependencies
        if not deferred:
            return
        children = self._trackable_children()
        for name in [n for n in deferred if n in children]:
            self._handle_deferred_dependencies(name, children[name])

    def __repr__(self) -> str:
        kind = {list: "ListWrapper", tuple: "_TupleWrapper", dict: "_DictWrapper"}.get(type(self.container),
                                                                                  "Wrapper")
        return f"{kind}({self.container!r})"


class _TrackedMixin:
    """Notifies the container's trackers when elements are added, so that a restore waiting
    for an element (``m.layers.append(layer)`` after ``restore``) happens at once."""

    __slots__ = ()

    def _notify(self) -> None:
        for ref in list(getattr(self, "_tracker_refs", ())):
            tracker = ref()
            if tracker is not None:
                tracker._poll_deferred()

    def _add_tracker(self, tracker) -> None:
        import weakref

        refs = getattr(self, "_tracker_refs", None)
        if refs is None:
            refs = []
            object.__setattr__(self, "_tracker_refs", refs)
        refs.append(weakref.ref(tracker))


class TrackedList(_TrackedMixin, list):
    """A list assigned to an AutoTrackable's attribute (TF's ListWrapper: a list)."""

    __slots__ = ("_tracker_refs", "__weakref__")

    def append(self, value):
        super().append(value)
        self._notify()

    def extend(self, values):
        super().extend(values)
        self._notify()

    def insert(self, index, value):
        super().insert(index, value)
        self._notify()

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        self._notify()

    def __iadd__(self, values):
        super().__iadd__(values)
        self._notify()
        return self

    def __reduce_ex__(self, protocol):
        return list, (list(self),)

    def __copy__(self):
        return list(self)


class TrackedDict(_TrackedMixin, dict):
    """A dict assigned to an AutoTrackable's attribute (TF's _DictWrapper: a dict)."""

    __slots__ = ("_tracker_refs", "__weakref__")

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self._notify()

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self._notify()

    def setdefault(self, key, default=None):
        value = super().setdefault(key, default)
        self._notify()
        return value

    def __reduce_ex__(self, protocol):
        return dict, (dict(self),)

    def __copy__(self):
        return dict(self)


# =====================================================================================
# AutoTrackable
# =====================================================================================
def _has_data_descriptor(obj, name: str) -> bool:
    attr = getattr(type(obj), name, None)
    return attr is not None and hasattr(attr, "__set__")


class AutoTrackable(Trackable):
    """Attribute assignment adds dependencies (TF's AutoTrackable): ``self.layer = layer``
    makes ``layer`` the dependency "layer"; lists/tuples/dicts become container nodes."""

    _track_empty_containers = True  # TF 2.x: every list/dict attribute is a node

    def __setattr__(self, name, value):
        if name.startswith("_self_") or _has_data_descriptor(self, name):
            object.__setattr__(self, name, value)
            return
        try:
            if getattr(self, name) is value:
                return  # self.x = self.x
        except AttributeError:
            pass
        if self.__dict__.get("_self_setattr_tracking", True):
            value = self._sticky_attribute_assignment(name, value)
        elif isinstance(value, NoDependency):
            value = value.value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self.__dict__.get("_self_container_trackers", {}) or \
                name in self.__dict__.get("_self_unconditional_dependency_names", {}):
            self._untrack(name)
            self.__dict__.get("_self_container_trackers", {}).pop(name, None)
        object.__delattr__(self, name)

    def _sticky_attribute_assignment(self, name, value):
        if isinstance(value, NoDependency):
            return value.value
        if isinstance(value, Trackable):
            self._track_trackable(value, name=name, overwrite=True)
        elif _is_container(value):
            if isinstance(value, tuple) and not _tuple_is_tracked(value):
                return value
            if self._track_empty_containers and type(value) is list:
                value = TrackedList(value)
            elif self._track_empty_containers and type(value) is dict:
                value = TrackedDict(value)
            tracker = _ContainerTracker(value, self._track_empty_containers)
            if isinstance(value, _TrackedMixin):
                value._add_tracker(tracker)
            trackers = self.__dict__.setdefault("_self_container_trackers", {})
            trackers[name] = tracker
            self._track_trackable(tracker, name=name, overwrite=True)
        return value

    def _trackable_children(self, save_type="checkpoint", **kwargs) -> dict:
        children = {}
        for ref in self._unconditional_checkpoint_dependencies:
            child = ref.ref
            if isinstance(child, _ContainerTracker) and not self._track_empty_containers \
                    and not child._holds_trackables():
                continue
            children[ref.name] = child
        return children


class LayerTrackable(AutoTrackable):
    """The tf.layers Layer: weights tracked by ``add_weight`` under their names, trackable
    attributes assigned outside the base ``__init__`` (``no_automatic_dependency_tracking``);
    list/dict attributes count only while they hold trackables (Keras' ``_layers`` and
    weight lists are not attributes set outside that ``__init__``)."""

    _track_empty_containers = False
    # The base layer's own weight/update/loss lists (set in its __init__, reassigned by add_weight).
    _untracked_attributes = frozenset(("_trainable_weights", "_non_trainable_weights", "_updates", "_losses"))

    def __setattr__(self, name, value):
        # Keras: properties (and other class attributes) are never tracked.
        if hasattr(type(self), name) or name in self._untracked_attributes:
            object.__setattr__(self, name, value.value if isinstance(value, NoDependency) else value)
            return
        super().__setattr__(name, value)


# =====================================================================================
# Optimizer (python/training/optimizer.py, its Trackable part)
# =====================================================================================
class OptimizerTrackable(Trackable):
    """The TF1 optimizer's checkpoint dependencies: its non-slot variables of the current
    graph (sorted by name, before any other dependency) and its slot variables, which are
    keyed by the optimizer and the variable they slot for."""

    def _trackable_children(self, save_type="checkpoint", **kwargs) -> dict:
        from .graph import get_default_graph

        current_graph = get_default_graph()
        children = {}
        for (name, graph), variable in sorted(getattr(self, "_non_slot_dict", {}).items(), key=lambda item: item[0][0]):
            if graph is None or graph is current_graph:
                children[name] = variable
        children.update(super()._trackable_children(save_type, **kwargs))
        return children

    def _lookup_dependency(self, name, cached_dependencies=None):
        from .graph import get_default_graph

        unconditional = super()._lookup_dependency(name, cached_dependencies)
        if unconditional is not None:
            return unconditional
        return getattr(self, "_non_slot_dict", {}).get((name, get_default_graph()), None)

    @property
    def _deferred_slot_restorations(self) -> dict:
        """{slot name: {variable key: [CheckpointPosition]}} waiting for the slot's creation."""
        return self.__dict__.setdefault("_self_deferred_slot_restorations", {})

    def _restore_slot_variable(self, slot_name, variable, slot_variable) -> None:
        """A new slot variable: restore it from any checkpoint waiting for it."""
        from .train.optimizer import _var_key

        positions = self._deferred_slot_restorations.get(slot_name, {}).pop(_var_key(variable), [])
        positions.sort(key=lambda position: position.restore_uid, reverse=True)
        for position in positions:
            position.restore(slot_variable)

    def _create_or_restore_slot_variable(self, slot_variable_position, slot_name, variable):
        """The variable a slot is for was restored: restore the slot, creating it from the
        checkpoint's value when executing eagerly, else once it is created."""
        from .eager.context import executing_eagerly
        from .train.optimizer import _var_key

        named_slots = self._slot_dict(slot_name)
        variable_key = _var_key(variable)
        slot_variable = named_slots.get(variable_key, None)
        if slot_variable is None and executing_eagerly() and slot_variable_position.is_simple_variable():
            initializer = CheckpointInitialValueCallable(slot_variable_position)
            slot_variable = self._get_or_make_slot_with_initializer(
                variable, initializer, variable.shape, variable.dtype.base_dtype, slot_name, self._name)
        if slot_variable is not None:
            slot_variable_position.restore(slot_variable)
        else:
            self._deferred_slot_restorations.setdefault(slot_name, {}).setdefault(variable_key, []).append(
                slot_variable_position)


class CheckpointInitialValueCallable:
    """An initializer returning a checkpointed value (restore-on-create of a slot)."""

    def __init__(self, checkpoint_position):
        self._checkpoint_position = checkpoint_position

    @property
    def restore_uid(self) -> int:
        return self._checkpoint_position.restore_uid

    def __call__(self, shape=None, dtype=None, partition_info=None):
        del shape, partition_info
        value = self._checkpoint_position.value()
        if dtype is not None:
            from . import dtypes

            value = value.astype(dtypes.as_dtype(dtype).as_numpy_dtype, copy=False)
        return value


# =====================================================================================
# tf.Module (python/module/module.py)
# =====================================================================================
_CAMEL_TO_SNAKE_R = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")
_VALID_IDENTIFIER = re.compile(r"^[a-zA-Z_]([a-zA-Z0-9_])*$")
_TF_MODULE_IGNORED_PROPERTIES = frozenset(("_self_unconditional_checkpoint_dependencies",
                                           "_self_unconditional_dependency_names"))


def _camel_to_snake(value: str) -> str:
    return _CAMEL_TO_SNAKE_R.sub(r"_\1", value).lower()


def _flatten_leaves(value):
    """nest.flatten: dict values in sorted-key order."""
    if isinstance(value, dict):
        for key in sorted(value, key=lambda k: (str(type(k)), k) if not isinstance(k, str) else ("", k)):
            yield from _flatten_leaves(value[key])
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten_leaves(item)
    else:
        yield value


class Module(AutoTrackable):
    """tf.Module: a named container of variables and submodules (an AutoTrackable)."""

    @no_automatic_dependency_tracking
    def __init__(self, name=None):
        from .graph import name_scope

        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not _VALID_IDENTIFIER.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python identifiers "
                             "(e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope_name:
            self._scope_name = scope_name

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self):
        from .graph import name_scope

        return name_scope(self._scope_name)

    @property
    def variables(self) -> tuple:
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self) -> tuple:
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self) -> tuple:
        return tuple(self._flatten(predicate=lambda m: isinstance(m, Module)))

    def _flatten(self, recursive=True, predicate=None):
        predicate = predicate or (lambda _: True)
        return _flatten_module(self, recursive, predicate, seen={id(self)}, recursion_stack=[])

    @classmethod
    def with_name_scope(cls, method):
        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)

        return wrapped

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>"


def _flatten_module(module, recursive, predicate, seen, recursion_stack):
    module_dict = vars(module)
    submodules = []
    if id(module) in recursion_stack:
        recursive = False
    for key in sorted(module_dict):
        if key in _TF_MODULE_IGNORED_PROPERTIES or key.startswith("_self_"):
            continue
        for leaf in _flatten_leaves(module_dict[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if recursive and isinstance(leaf, Module):
                submodules.append(leaf)
    recursion_stack.append(id(module))
    for submodule in submodules:
        yield from _flatten_module(submodule, recursive, predicate, seen, recursion_stack)
    recursion_stack.pop()


TF_EXPORTS = {"Module": Module}
