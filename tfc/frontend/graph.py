"""Graph, Operation and Tensor: TF1's dataflow graph with its exact naming rules.

Everything here follows tensorflow/python/framework/ops.py observable behaviour: name
uniquifying (case-insensitive, first free ``_N``), name scopes sharing the op namespace,
control-dependency controllers, device functions applied innermost first, colocation,
collections, and the default graph / default session stacks (the only global state).
"""
from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import threading
from typing import Any, Optional

from . import device as pydev
from . import dtypes
from .registry import lookup_op_type
from .tensor_shape import TensorShape

_VALID_OP_NAME_REGEX = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME_REGEX = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
_TFC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files inside the package that build graphs as a user would (their lines are the ones
# worth reporting).
_USER_FILES_IN_TFC = (os.path.join(_TFC_DIR, "demo.py"),)
_MAX_USER_FRAMES = 8


def _user_frames() -> tuple:
    """(file, line, function) of the innermost frames outside the tfc package."""
    frames = []
    frame = sys._getframe(2)
    while frame is not None and len(frames) < _MAX_USER_FRAMES:
        filename = frame.f_code.co_filename
        inside_tfc = filename.startswith(_TFC_DIR) and filename not in _USER_FILES_IN_TFC
        if not inside_tfc and not filename.startswith("<frozen"):
            frames.append((filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return tuple(frames)


class GraphKeys:
    """Standard collection names (tf.GraphKeys)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


class Tensor:
    """One output of an Operation: ``Tensor("add:0", shape=(), dtype=float32)``."""

    # Make numpy defer to our operator overloads (np_array + tensor -> tensor).
    __array_priority__ = 100
    # Equality and hashing are object's (identity, as TF1's graph tensors): in C, they keep
    # Session.run's lookups of its run plans cheap.

    def __init__(self, op: "Operation", value_index: int, dtype: dtypes.DType, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list = []

    @property
    def op(self) -> "Operation":
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> "Graph":
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        self._shape = self._shape.merge_with(shape)

    def consumers(self) -> list:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        return _run_using_default_session(self, feed_dict, self.graph, session, "evaluate tensor", "eval")

    def __str__(self) -> str:
        # TF1: the shape is left out when the rank is unknown, the device added when set.
        shape = f", shape={self._shape}" if self._shape.ndims is not None else ""
        device = f", device={self.device}" if self.device else ""
        return f'Tensor("{self.name}"{shape}, dtype={self._dtype.name}{device})'

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __bool__(self) -> bool:
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` instead "
                        "of `if t:` to test if a tensor is defined, and use TensorFlow ops such as tf.cond to "
                        "execute subgraphs conditioned on the value of a tensor.")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled. To iterate over "
                        "this tensor use tf.map_fn.")

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors. ({self.name}) Please call `x.shape` "
                        "rather than `len(x)` for shape information.")

    def _as_graph_element(self):
        return self


class _InputList(list):
    """op.inputs: a read-only list of the op's input tensors."""


class Operation:
    """A graph node: ``<tf.Operation 'Const' type=Const>``; ``str(op)`` is its NodeDef."""

    def __init__(self, graph: "Graph", name: str, op_type: str, inputs, attrs: dict, control_inputs):
        self._graph = graph
        self._name = name
        self._type = op_type
        self._inputs = list(inputs)
        self._attrs = attrs
        self._control_inputs = list(control_inputs)
        self._outputs: list = []
        self._device = ""
        self._id = graph._next_id()
        self._user_frames = _user_frames()
        self._control_flow_context = None
        self._original_op = None

    # -- identity ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def graph(self) -> "Graph":
        return self._graph

    @property
    def inputs(self) -> _InputList:
        return _InputList(self._inputs)

    @property
    def outputs(self) -> list:
        return list(self._outputs)

    def values(self) -> tuple:
        return tuple(self._outputs)

    @property
    def control_inputs(self) -> list:
        return list(self._control_inputs)

    @property
    def device(self) -> str:
        return self._device

    @property
    def traceback(self) -> list:
        """TF's form: [(file, line, function, source line), ...], outermost call first
        (the frames outside tfc; at most the innermost _MAX_USER_FRAMES of them)."""
        out = []
        for filename, lineno, name in reversed(self._user_frames):
            line = linecache.getline(filename, lineno).strip()
            out.append((filename, lineno, name, line or None))
        return out

    @property
    def location(self) -> tuple:
        """(file, line) where the user created this op, or (None, None)."""
        if self._user_frames:
            return self._user_frames[0][0], self._user_frames[0][1]
        return None, None

    @property
    def op_def(self):
        return lookup_op_type(self._type)

    # -- attributes -----------------------------------------------------------------------
    @property
    def node_def(self):
        from .node_def import make_node_def

        return make_node_def(self)

    def get_attr(self, name: str):
        from .node_def import attr_to_python

        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return attr_to_python(self, name)

    def _set_attr(self, name: str, value) -> None:
        self._attrs[name] = value

    def _get_attr_raw(self, name: str, default=None):
        return self._attrs.get(name, default)

    def colocation_groups(self) -> list:
        """TF's list of ``b"loc:@name"`` groups: the ``_class`` ones, else the op's own."""
        groups = [g.encode() if isinstance(g, str) else g for g in self._attrs.get("_class") or ()]
        groups = [g for g in groups if g.startswith(b"loc:@")]
        return groups or [f"loc:@{self._name}".encode()]

    # -- mutation (used by graph construction utilities) -----------------------------
    def _set_device(self, device) -> None:
        # TF stores the string as given (only tf.device's merging canonicalizes it).
        if isinstance(device, pydev.DeviceSpec):
            device = device.to_string()
        self._device = device.decode() if isinstance(device, bytes) else (device or "")

    def _add_control_input(self, op: "Operation") -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)

    def _add_control_inputs(self, ops) -> None:
        for op in ops:
            self._add_control_input(op)

    # -- control flow (TF1 Switch/Merge construction, tfc.frontend.control_flow) --------
    def _remove_all_control_inputs(self) -> None:
        self._control_inputs = []

    def _update_input(self, index: int, tensor: "Tensor") -> None:
        """Replace input ``index`` (TF's _update_input: shapes are not re-inferred; the
        NodeDef names the new input with an explicit ``:index``, as TF's UpdateEdge does)."""
        old = self._inputs[index]
        if old is tensor:
            return
        self._inputs[index] = tensor
        if self in old._consumers:  # one entry per input slot
            old._consumers.remove(self)
        tensor._consumers.append(self)
        self._updated_inputs = getattr(self, "_updated_inputs", set()) | {index}

    def _get_control_flow_context(self):
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    def run(self, feed_dict=None, session=None) -> None:
        _run_using_default_session(self, feed_dict, self.graph, session, "execute operation", "run")

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self) -> str:
        from google.protobuf import text_format

        return text_format.MessageToString(self.node_def)

    def _as_graph_element(self):
        return self


class _ControlDependenciesController:
    """One ``with g.control_dependencies(...)`` level."""

    def __init__(self, graph: "Graph", control_inputs: Optional[list]):
        self._graph = graph
        if control_inputs is None:
            self._control_inputs = []
            self._new_stack = True
        else:
            self._control_inputs = control_inputs
            self._new_stack = False
        self._seen_ops: set = set()
        self._old_stack = None

    def __enter__(self):
        if self._new_stack:
            self._old_stack = self._graph._control_dependencies_stack
            self._graph._control_dependencies_stack = []
            # TF: control_dependencies(None) also leaves any control-flow context.
            self._old_control_flow_context = self._graph._control_flow_context
            self._graph._control_flow_context = None
        self._graph._control_dependencies_stack.append(self)

    def __exit__(self, *exc):
        self._graph._control_dependencies_stack.pop()
        if self._new_stack:
            self._graph._control_dependencies_stack = self._old_stack
            self._graph._control_flow_context = self._old_control_flow_context

    @property
    def control_inputs(self) -> list:
        return self._control_inputs

    def add_op(self, op: Operation) -> None:
        self._seen_ops.add(op)

    def op_in_group(self, op: Operation) -> bool:
        return op in self._seen_ops


class Graph:
    """A TensorFlow computation: operations, their names, collections and state."""

    def __init__(self):
        self._lock = threading.RLock()
        self._nodes_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._next_id_counter = 0
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_dependencies_stack: list = []
        self._device_function_stack: list = []
        self._colocation_stack: list = []
        self._attr_scope_map: dict = {}
        self._gradient_override_map: dict = {}  # op type -> gradient op type (gradient_override_map)
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._seed: Optional[int] = None
        # Per-graph state owned by other frontend modules (variable store, variable
        # scopes, layer name counters...). Lives and dies with the graph.
        self._scratch: dict[str, Any] = {}
        # TF1 control flow: the context new ops join (a CondContext/WhileContext of
        # tfc.frontend.control_flow), and what cond/while_loop mark unfetchable/unfeedable.
        self._control_flow_context = None
        self._unfetchable_ops: set = set()
        self._unfeedable_tensors: set = set()

    # -- ids, version, seed -----------------------------------------------------------
    def _next_id(self) -> int:
        self._next_id_counter += 1
        return self._next_id_counter

    @property
    def _last_id(self) -> int:
        return self._next_id_counter

    @property
    def version(self) -> int:
        return self._next_id_counter

    @property
    def seed(self) -> Optional[int]:
        return self._seed

    @seed.setter
    def seed(self, seed: Optional[int]) -> None:
        self._seed = seed

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    # -- default graph ------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack().append(self)
        try:
            yield self
        finally:
            stack = _default_graph_stack()
            if stack and stack[-1] is self:
                stack.pop()
            elif self in stack:
                stack.remove(self)

    # -- names --------------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """TF's uniquifier: case-insensitive counts, first free ``name_N``."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        name_key = name.lower()
        i = self._names_in_use.get(name_key, 0)
        if mark_as_used:
            self._names_in_use[name_key] = i + 1
        if i > 0:
            base_name_key = name_key
            while name_key in self._names_in_use:
                name_key = f"{base_name_key}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[name_key] = 1
            name = f"{name}_{i - 1}"
        return name

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]):
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            if self._name_stack:
                if not _VALID_SCOPE_NAME_REGEX.match(name):
                    raise ValueError(f"'{name}' is not a valid scope name")
            elif not _VALID_OP_NAME_REGEX.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        old_stack = self._name_stack
        if not name:
            new_stack = ""
        elif name[-1] == "/":
            new_stack = name[:-1]
        else:
            new_stack = self.unique_name(name)
        self._name_stack = new_stack
        try:
            yield "" if new_stack == "" else new_stack + "/"
        finally:
            self._name_stack = old_stack

    # -- control flow -------------------------------------------------------------------
    def _get_control_flow_context(self):
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    def _record_op_seen_by_control_dependencies(self, op: "Operation") -> None:
        for controller in self._control_dependencies_stack:
            controller.add_op(op)

    def prevent_feeding(self, tensor: "Tensor") -> None:
        self._unfeedable_tensors.add(tensor)

    def is_feedable(self, tensor: "Tensor") -> bool:
        return tensor not in self._unfeedable_tensors

    def prevent_fetching(self, op: "Operation") -> None:
        self._unfetchable_ops.add(op)

    def is_fetchable(self, tensor_or_op) -> bool:
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable_ops

    # -- op creation --------------------------------------------------------------------
    def create_op(self, op_type: str, inputs=(), dtypes_=None, input_types=None, name: Optional[str] = None,
                  attrs: Optional[dict] = None, op_def=None, compute_shapes=True, compute_device=True,
                  control_inputs=()) -> Operation:
        """Add an op of a registered type. ``name`` ending in '/' is taken verbatim."""
        del dtypes_, input_types, op_def, compute_shapes  # TF signature; types come from the registry
        self._check_not_finalized()
        entry = lookup_op_type(op_type)
        inputs = list(inputs)
        for idx, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"Input #{idx} is not a tensor: {t}")  # TF's Graph.create_op message
            if t.graph is not self:
                raise ValueError(f"Tensor {t!r} must be from the same graph as the op '{op_type}' being created.")
        if name is None:
            name = op_type
        if name and name[-1] == "/":
            name = name[:-1]
        else:
            name = self.unique_name(name)
        if not _VALID_OP_NAME_REGEX.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        if name in self._nodes_by_name:
            raise ValueError(f"Duplicate node name in graph: '{name}'")
        attrs = dict(attrs or {})
        for key, value in self._attr_scope_map.items():
            attrs.setdefault(key, value)
        mapped_op_type = self._gradient_override_map.get(op_type)
        if mapped_op_type is not None:  # TF's _create_op_helper: the gradient function's op type
            attrs["_gradient_op_type"] = mapped_op_type
        full_attrs = entry.complete_attrs(attrs, name)
        control = self._control_dependencies_for_inputs([t.op for t in inputs])
        control += [c for c in control_inputs if c not in control]
        op = Operation(self, name, op_type, inputs, full_attrs, control)
        op._control_flow_context = self._control_flow_context
        try:
            outputs = entry.run_inference(op)
        except Exception:
            self._next_id_counter -= 1  # like TF, an op that failed to build takes no id (g.version)
            raise
        op._outputs = [Tensor(op, i, dt, shape) for i, (dt, shape) in enumerate(outputs)]
        if compute_device:
            self._apply_device_functions(op)
        self._apply_colocation(op)
        self._add_op(op)
        if op._control_flow_context is not None:
            # TF's _control_flow_post_processing: the context switches in outside inputs
            # and adds its pivot as a control input where needed.
            op._control_flow_context.AddOp(op)
        return op

    def _add_op(self, op: Operation) -> None:
        with self._lock:
            self._nodes_by_name[op.name] = op
            self._ops.append(op)
        for t in op._inputs:
            t._consumers.append(op)
        for controller in self._control_dependencies_stack:
            controller.add_op(op)

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Ops of the types in ``op_type_map`` created inside take their gradient from the
        function registered (tf.RegisterGradient) under the mapped name (TF's
        Graph.gradient_override_map: the op's ``_gradient_op_type`` attr)."""
        if not isinstance(op_type_map, dict):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved_mappings = {}
        for op_type, mapped_op_type in op_type_map.items():
            if not (isinstance(op_type, str) and isinstance(mapped_op_type, str)):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
            if op_type in self._gradient_override_map:
                saved_mappings[op_type] = self._gradient_override_map[op_type]
            self._gradient_override_map[op_type] = mapped_op_type
        try:
            yield
        finally:
            for op_type in op_type_map:
                if op_type in saved_mappings:
                    self._gradient_override_map[op_type] = saved_mappings[op_type]
                else:
                    self._gradient_override_map.pop(op_type, None)

    @contextlib.contextmanager
    def _attr_scope(self, attr_map: dict):
        """Attributes added to every op created inside (TF's private _attr_scope)."""
        saved = dict(self._attr_scope_map)
        self._attr_scope_map.update(attr_map)
        try:
            yield
        finally:
            self._attr_scope_map = saved

    def _apply_device_functions(self, op: Operation) -> None:
        for device_function in reversed(self._device_function_stack):
            if device_function is None:
                break
            if getattr(device_function, "is_null_merge", False):
                continue
            op._set_device(device_function(op))

    def _apply_colocation(self, op: Operation) -> None:
        if not self._colocation_stack:
            return
        groups = []
        for colocation_op in self._colocation_stack:
            groups.extend(colocation_op.colocation_groups())
            if colocation_op.device:
                op._set_device(colocation_op.device)
        op._set_attr("_class", sorted({g.decode() for g in groups}))

    # -- lookups ------------------------------------------------------------------------
    def get_operations(self) -> list:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def _get_operation_by_name_unsafe(self, name: str) -> Operation:
        return self._nodes_by_name[name]

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        if allow_tensor and allow_operation:
            types_str = "Tensor or Operation"
        elif allow_tensor:
            types_str = "Tensor"
        elif allow_operation:
            types_str = "Operation"
        else:
            raise ValueError("allow_tensor and allow_operation can't both be False.")
        converter = getattr(obj, "_as_graph_element", None)
        if converter is not None and not isinstance(obj, (Tensor, Operation)):
            obj = converter()
        if isinstance(obj, bytes):
            obj = obj.decode()
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation, types_str)
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {types_str}.")

    def _element_by_name(self, name: str, allow_tensor: bool, allow_operation: bool, types_str: str):
        if ":" in name and allow_tensor:
            try:
                op_name, out_n = name.split(":")
                out_n = int(out_n)
            except ValueError:
                raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not a valid one. Tensor names "
                                 f'must be of the form "<op_name>:<output_index>".') from None
            if op_name not in self._nodes_by_name:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The operation, "
                               f"{op_name!r}, does not exist in the graph.")
            op = self._nodes_by_name[op_name]
            try:
                return op.outputs[out_n]  # TF indexes the list: 'op:-1' is the last output
            except IndexError:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The operation, "
                               f"{op_name!r}, exists but only has {len(op.outputs)} outputs.") from None
        if ":" in name:
            raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a {types_str}.")
        if allow_operation:
            if name not in self._nodes_by_name:
                raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
            return self._nodes_by_name[name]
        if name in self._nodes_by_name:
            message = f"The name {name!r} refers to an Operation, not a {types_str}."
        else:
            message = f"The name {name!r} looks like an (invalid) Operation name, not a {types_str}."
        raise ValueError(message + ' Tensor names must be of the form "<op_name>:<output_index>".')

    # -- collections --------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._check_not_finalized()
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: Optional[str] = None) -> list:
        with self._lock:
            collection = self._collections.get(name)
            if collection is None:
                return []
            if scope is None:
                return list(collection)
            regex = re.compile(scope)
            out = []
            for item in collection:
                item_name = getattr(item, "name", None)
                if item_name is not None and regex.match(item_name):
                    out.append(item)
            return out

    def get_all_collection_keys(self) -> list:
        with self._lock:
            return [k for k in self._collections if isinstance(k, str)]

    @property
    def collections(self) -> list:
        return list(self._collections)

    def clear_collection(self, name: str) -> None:
        self._check_not_finalized()
        with self._lock:
            self._collections.pop(name, None)

    # -- control dependencies -----------------------------------------------------------
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            return _ControlDependenciesController(self, None)
        ops = []
        current = self._current_control_dependencies()
        for c in control_inputs:
            # TF: names, Variables and other graph elements are accepted (as_graph_element).
            c = self.as_graph_element(c)
            if isinstance(c, Tensor):
                c = c.op
            elif not isinstance(c, Operation):
                raise TypeError(f"Control input must be Operation or Tensor: {c}")
            if c not in current and c not in ops:
                ops.append(c)
        return _ControlDependenciesController(self, ops)

    def _current_control_dependencies(self) -> list:
        out = []
        for controller in self._control_dependencies_stack:
            out.extend(controller.control_inputs)
        return out

    def _control_dependencies_for_inputs(self, input_ops) -> list:
        out = []
        for controller in self._control_dependencies_stack:
            if any(controller.op_in_group(op) for op in input_ops):
                continue
            for c in controller.control_inputs:
                if c not in input_ops and c not in out:
                    out.append(c)
        return out

    # -- devices and colocation ---------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        if device_name_or_function is None or callable(device_name_or_function):
            function = device_name_or_function
        else:
            if isinstance(device_name_or_function, pydev.DeviceSpec):
                device_name_or_function = device_name_or_function.to_string()
            function = pydev.merge_device(device_name_or_function)
        self._device_function_stack.append(function)
        try:
            yield
        finally:
            self._device_function_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
        if op is not None and not isinstance(op, Operation):
            op = getattr(op, "op", op)
        saved_devices = self._device_function_stack
        self._device_function_stack = []
        saved_colocation = None
        if ignore_existing:
            saved_colocation = self._colocation_stack
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack.append(op)
        try:
            yield
        finally:
            self._device_function_stack = saved_devices
            if op is not None:
                self._colocation_stack.pop()
            if ignore_existing:
                self._colocation_stack = saved_colocation

    def as_graph_def(self, from_version=None, add_shapes=False):
        from .graph_io import graph_to_graph_def

        return graph_to_graph_def(self, from_version=from_version, add_shapes=add_shapes)


# -- default graph and default session stacks (the TF-mandated global state) ----------
class _ThreadStacks(threading.local):
    def __init__(self):
        self.graphs: list = []
        self.sessions: list = []


_STACKS = _ThreadStacks()
_GLOBAL = {"default_graph": None}


def _default_graph_stack() -> list:
    return _STACKS.graphs


def get_default_graph() -> Graph:
    if _STACKS.graphs:
        return _STACKS.graphs[-1]
    if _GLOBAL["default_graph"] is None:
        _GLOBAL["default_graph"] = Graph()
    return _GLOBAL["default_graph"]


def reset_default_graph() -> None:
    if _STACKS.graphs:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a cleared "
                             "graph, exit the nesting and create a new graph.")
    if getattr(_GLOBAL["default_graph"], "_keep_on_reset", False):  # eager mode stays on (tfc/frontend/eager)
        return
    _GLOBAL["default_graph"] = Graph()


def default_session_stack() -> list:
    return _STACKS.sessions


def get_default_session():
    return _STACKS.sessions[-1] if _STACKS.sessions else None


# TF 1.15's messages (ops.py _eval_using_default_session / _run_using_default_session);
# note the small differences between the two ('as_default():', backticks).
_NO_SESSION = {
    "eval": ("Cannot evaluate tensor using `eval()`: No default session is registered. Use `with "
             "sess.as_default()` or pass an explicit session to `eval(session=sess)`"),
    "run": ("Cannot execute operation using `run()`: No default session is registered. Use `with "
            "sess.as_default():` or pass an explicit session to `run(session=sess)`"),
}
_OTHER_DEFAULT_GRAPH = {
    "eval": ("Cannot use the default session to evaluate tensor: the tensor's graph is different from the "
             "session's graph. Pass an explicit session to `eval(session=sess)`."),
    "run": ("Cannot use the default session to execute operation: the operation's graph is different from the "
            "session's graph. Pass an explicit session to run(session=sess)."),
}
_OTHER_GIVEN_GRAPH = {
    "eval": ("Cannot use the given session to evaluate tensor: the tensor's graph is different from the session's "
             "graph."),
    "run": ("Cannot use the given session to execute operation: the operation's graph is different from the "
            "session's graph."),
}


def _run_using_default_session(fetch, feed_dict, graph, session, action: str, method: str):
    del action
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(_NO_SESSION[method])
        if session.graph is not graph:
            raise ValueError(_OTHER_DEFAULT_GRAPH[method])
    elif session.graph is not graph:
        raise ValueError(_OTHER_GIVEN_GRAPH[method])
    return session.run(fetch, feed_dict)


# -- module-level wrappers (tf.name_scope, tf.control_dependencies, tf.device...) -----
class name_scope:  # noqa: N801 - TF's name; a class in TF 1.15 too (``tf.name_scope("x").name``)
    """tf.name_scope (TF1): ``name`` if given (None -> default_name), '' resets to the root;
    the graph of ``values`` becomes the default graph inside."""

    def __init__(self, name, default_name=None, values=None):
        self._name = default_name if name is None else name
        self._default_name = default_name
        self._values = values
        self._graph_context = None
        self._scope_context = None

    @property
    def name(self):
        return self._name

    def __enter__(self) -> str:
        if self._name is None and self._values is not None:
            raise ValueError(f"At least one of name ({self._name}) and default_name ({self._default_name}) must be "
                             "provided.")
        graph = _graph_from_inputs(self._values or [])
        self._graph_context = graph.as_default()
        self._graph_context.__enter__()
        try:
            self._scope_context = graph.name_scope(self._name)
            return self._scope_context.__enter__()
        except BaseException:
            self._graph_context.__exit__(*sys.exc_info())
            raise

    def __exit__(self, *exc) -> bool:
        self._scope_context.__exit__(*exc)
        self._graph_context.__exit__(*exc)
        return False


def _graph_from_inputs(values) -> Graph:
    """TF's _get_graph_from_inputs: the graph of the graph elements among ``values``
    (Tensors, Operations, Variables...), checking they all share it; else the default."""
    default = _default_graph_stack()[-1] if _default_graph_stack() else None
    if default is not None and getattr(default, "_captures_outer_tensors", False):
        return default  # tracing a tf.data function: outer tensors become captures (tfc/frontend/data/functions.py)
    graph = None
    original = None
    for value in tuple(values):
        if isinstance(value, (Tensor, Operation)):
            element = value
        else:
            converter = getattr(value, "_as_graph_element", None)
            element = converter() if callable(converter) else None
        if element is None:
            continue
        if graph is None:
            original, graph = element, element.graph
        elif element.graph is not graph:
            raise ValueError(f"{element} must be from the same graph as {original}.")
    return graph or get_default_graph()


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return get_default_graph().colocate_with(op, ignore_existing)


@contextlib.contextmanager
def init_scope():
    """Lift out of control-dependency contexts (what variable creation uses); inside a
    defun trace, out to the eager context (tfc/frontend/eager/function.py)."""
    outer = getattr(get_default_graph(), "_init_scope_graph", None)
    if outer is not None:
        with outer.as_default(), outer.control_dependencies(None):
            yield
        return
    with get_default_graph().control_dependencies(None):
        yield


def add_to_collection(name, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key) -> list:
    return get_default_graph().get_collection_ref(key)
