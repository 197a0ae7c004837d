"""``tfe.defun`` / ``tf.function``: trace a Python function into a graph once per input
signature and run it as one compiled program.

Called eagerly, a Function computes the signature of its arguments — for each tensor or
numpy array its dtype and shape, Python values as they are, variables by identity — and
looks up a traced program. The first call with a signature traces: a ``FuncGraph`` (a
Graph whose variables are the eager variables it captures) becomes the default graph,
each tensor argument a placeholder of its dtype and shape, and the function runs in graph
mode. Its outputs, and every op with a side effect (assignments, optimizer updates,
asserts, prints), are compiled with ``tfc.compile`` into one program; the variables the
function reads or updates are that program's ref arguments, bound to the eager
variables' buffers at each call. Later calls with the signature run the program.

Inside the trace ``tf.executing_eagerly()`` is False, GradientTape differentiates the
traced graph with ``tf.gradients``, and variables created there (an optimizer's slots on
the first call) are lifted out and made eagerly, as TF's init_scope does. A defun called
from another trace is inlined. While a GradientTape records, a call runs the Python
function eagerly op by op, so the tape sees its ops.

An eager tf.data iterator passed as an argument (calls with iterators of the same element
structure share a trace) or closed over is a ``resource`` placeholder fed with its handle
at each call; ``next(it)`` / ``it.get_next()`` in the trace is an ``IteratorGetNext`` op
that reads the iterator's next element every time the function runs (tfc/frontend/data/eager.py).
"""
from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from .. import dtypes
from ..graph import Graph, Operation, Tensor
from ..tensor_shape import TensorShape
from . import tape as _tape
from .context import eager_graph, executing_eagerly
from .tensor import EagerRefTensor, EagerTensor, contiguous


class TensorSpec:
    """tf.TensorSpec: the shape and dtype of a function argument."""

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSpec) and self.shape.as_list() == other.shape.as_list() \
            and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash((str(self.shape), self.dtype))


class FuncGraph(Graph):
    """A defun's trace: eager variables and tensors it uses are captured (variables as
    VariableV2 ops bound to their buffers at run time; tensors as constants)."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._init_scope_graph = eager_graph()  # graph.init_scope() lifts out to the eager context
        self.seed = self._init_scope_graph.seed
        self.captured_variables: dict = {}  # id(variable) -> (variable, ref, read)
        self.variables_by_op: dict = {}  # VariableV2 op name -> variable
        self._captured_tensors: dict = {}  # id(EagerTensor) -> (tensor, constant)
        self.fed_captures: list = []  # [(EagerTensor, placeholder)]: resources fed at each call
        self._last_write: dict = {}  # VariableV2 op name -> the last op that wrote it
        self._reads: dict = {}  # VariableV2 op name -> the reads since

    def capture_variable(self, variable):
        """The VariableV2 op standing for ``variable`` in this trace (its ref tensor)."""
        entry = self.captured_variables.get(id(variable))
        if entry is None:
            from ..ops.state_ops import variable_op_v2

            saved_context = self._control_flow_context
            self._control_flow_context = None
            try:
                with self.as_default(), self.control_dependencies(None), self.name_scope(""):
                    ref = variable_op_v2(variable.shape, variable.dtype, name=variable.op.name)
            finally:
                self._control_flow_context = saved_context
            entry = (variable, ref)
            self.captured_variables[id(variable)] = entry
            self.variables_by_op[ref.op.name] = variable
            self._last_write[ref.op.name] = None
            self._reads[ref.op.name] = []
        return entry[1]

    def read_variable(self, variable):
        """A read of ``variable`` here, in program order: a Snapshot (the value at this point
        of the function, as TF's ReadVariableOp), ordered after the variable's last write."""
        from ..op_helper import apply_op

        ref = self.capture_variable(variable)
        with self.as_default():
            return apply_op("Snapshot", [ref], name="ReadVariableOp").outputs[0]

    # -- automatic control dependencies (TF's, for variables): reads and writes of a variable
    # run in program order
    def create_op(self, *args, **kwargs):
        op = super().create_op(*args, **kwargs)
        if self.variables_by_op:
            self._order_variable_access(op)
        return op

    def _variable_of(self, tensor):
        source = tensor.op
        while source.type in ("Identity", "RefIdentity") and source._inputs:
            source = source._inputs[0].op
        return source.name if source.type == "VariableV2" and source.name in self.variables_by_op else None

    def _order_variable_access(self, op) -> None:
        from ..registry import lookup_op_type

        if op.type in ("VariableV2", "Identity", "RefIdentity"):
            return
        if op.type == "Snapshot":
            name = self._variable_of(op._inputs[0])
            if name is not None:
                self._depend(op, [self._last_write[name]])
                self._reads[name].append(op)
            return
        entry = lookup_op_type(op.type)
        if not any(spec.is_ref for spec in entry.input_specs):
            return
        index = 0
        for spec in entry.input_specs:
            count = op._attrs[spec.number_attr] if spec.number_attr else 1
            if spec.is_ref and op.type != "IsVariableInitialized":
                for t in op._inputs[index:index + count]:
                    name = self._variable_of(t)
                    if name is not None:
                        self._depend(op, [self._last_write[name]] + self._reads[name])
                        self._last_write[name] = op
                        self._reads[name] = []
            index += count

    @staticmethod
    def _depend(op, others) -> None:
        for other in others:
            if other is not None and other is not op and \
                    other._control_flow_context is op._control_flow_context:
                op._add_control_input(other)

    def capture_by_feed(self, tensor):
        """A placeholder fed with ``tensor``'s value at each call (a resource such as an eager
        iterator's handle, which no constant can hold)."""
        entry = self._captured_tensors.get(id(tensor))
        if entry is None:
            from ..ops.array_ops import placeholder

            saved_context = self._control_flow_context
            self._control_flow_context = None
            try:
                with self.as_default(), self.control_dependencies(None), self.name_scope(""):
                    value = placeholder(tensor.dtype, tensor.shape, name="captured_resource")
            finally:
                self._control_flow_context = saved_context
            entry = (tensor, value)
            self._captured_tensors[id(tensor)] = entry
            self.fed_captures.append(entry)
        return entry[1]

    def capture_eager_tensor(self, tensor):
        if tensor.dtype.base_dtype in (dtypes.resource, dtypes.variant) and not isinstance(tensor, EagerRefTensor):
            return self.capture_by_feed(tensor)
        entry = self._captured_tensors.get(id(tensor))
        if entry is None:
            if isinstance(tensor, EagerRefTensor):
                return self.capture_variable(tensor._variable)
            from ..ops.constant_op import constant

            saved_context = self._control_flow_context
            self._control_flow_context = None
            try:
                with self.as_default(), self.control_dependencies(None):
                    value = constant(tensor._array, dtype=tensor.dtype, name="captured")
            finally:
                self._control_flow_context = saved_context
            entry = (tensor, value)
            self._captured_tensors[id(tensor)] = entry
        return entry[1]


def capture(tensor, as_ref: bool = False):
    """An EagerTensor used while the default graph is a graph (convert_to_tensor): itself in
    eager mode, else its capture in that graph (a constant; a variable's ref or read)."""
    from ..graph import get_default_graph
    from ..ops.constant_op import constant

    graph = get_default_graph()
    if getattr(graph, "_is_eager", False):
        return tensor
    if isinstance(tensor, EagerRefTensor):
        variable = tensor._variable
        return variable._ref() if as_ref else variable.value()
    capture_fn = getattr(graph, "capture_eager_tensor", None)
    if capture_fn is not None:
        return capture_fn(tensor)
    return constant(tensor._array, dtype=tensor.dtype)  # an eager value used in a plain graph


# -- signatures ------------------------------------------------------------------------------------
def _is_variable(value) -> bool:
    from ..variables import Variable

    return isinstance(value, Variable)


def _is_composite(value) -> bool:
    """An argument passed as a resource tensor and rebuilt in the trace (an eager iterator:
    ``_defun_key``, ``_defun_tensor``, ``_defun_traced``)."""
    return hasattr(value, "_defun_traced") and not isinstance(value, type)


def _leaf_key(value):
    if _is_composite(value):
        return ("C",) + tuple(value._defun_key())
    if isinstance(value, EagerTensor) and not isinstance(value, EagerRefTensor):
        return ("T", value.dtype.name, value._array.shape)
    if isinstance(value, np.ndarray):
        return ("T", dtypes.as_dtype(value.dtype).name, value.shape)
    if _is_variable(value) or isinstance(value, EagerRefTensor):
        return ("V", id(value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("P", type(value).__name__, value)


def _is_tensor_arg(value) -> bool:
    return (isinstance(value, EagerTensor) and not isinstance(value, EagerRefTensor)) or isinstance(value, np.ndarray)


class _Concrete:
    """One traced and compiled signature."""

    def __init__(self, graph, placeholders, structure, flat_outputs, compiled, session, fetches, written,
                 targets=()):
        self.graph = graph
        self.placeholders = placeholders
        self.structure = structure  # the function's return value with graph tensors replaced by indices
        self.flat_outputs = flat_outputs  # per output leaf: ("tensor", index) / ("value", python value)
        self.compiled = compiled
        self.session = session
        self.fetches = fetches  # graph tensors the program returns
        self.targets = list(targets)  # ops it runs for their side effects
        self.out_dtypes = [t.dtype.base_dtype for t in fetches]
        self.written = written  # VariableV2 op names the program assigns
        self.lock = threading.Lock()
        self.calls = 0
        self.np_dtypes = [p.dtype.base_dtype.as_numpy_dtype for p in placeholders]
        self.single = flat_outputs == [("tensor", 0)] and isinstance(structure, Tensor)  # returns one tensor
        # per ref argument of the program: (variable, written) or a random op's state array
        self.refs = []
        if compiled is not None:
            self.executable = compiled.result.executable
            for slot in compiled.lowered.refs:
                if slot.kind == "variable":
                    self.refs.append((graph.variables_by_op[slot.name], slot.name in written))
                else:
                    self.refs.append(compiled._ref_value(slot))

    def run(self, arrays: list) -> list:
        self.calls += 1
        if self.compiled is not None:
            with self.lock:
                for item in self.refs:
                    arrays.append(item[0]._buffer(item[1]) if type(item) is tuple else item)
                outputs = self.executable.run(arrays)
        else:  # a graph with host ops: run by a private session holding the variables' buffers
            values = self.session._variables.values
            for name, variable in self.graph.variables_by_op.items():
                values[name] = variable._buffer(name in self.written)
            outputs = self.session.run(self.fetches + self.targets,
                                       dict(zip(self.placeholders, arrays)))[:len(self.fetches)]
            for name, variable in self.graph.variables_by_op.items():
                variable._array = values[name]
        return [EagerTensor(np.asarray(o), d) for o, d in zip(outputs, self.out_dtypes)]


class _VariableBuffers(dict):
    """For CompiledGraph._ref_value: a variable's buffer by its op name in the trace."""

    def __init__(self, graph, written):
        super().__init__()
        self._graph = graph
        self._written = written

    def get(self, name, default=None):
        variable = self._graph.variables_by_op.get(name)
        if variable is None:
            return default
        return variable._buffer(name in self._written)


_EFFECT_TYPES = frozenset({"Assert", "Print", "PrintV2", "PyFunc", "PyFuncStateless", "EagerPyFunc",
                           "IteratorGetNext",
                           "WriteScalarSummary", "WriteHistogramSummary", "FlushSummaryWriter",
                           "CloseSummaryWriter", "SaveV2"})


def _side_effect_ops(graph) -> list:
    """The ops a call must run even when no output needs them: writes to variables
    (ops with ref inputs), asserts, prints, py_funcs, and groups of them."""
    from ..registry import lookup_op_type

    out = []
    for op in graph._ops:
        entry = lookup_op_type(op.type)
        if op.type in ("VariableV2", "Identity", "RefIdentity", "IsVariableInitialized"):
            continue
        if any(spec.is_ref for spec in entry.input_specs) or op.type in _EFFECT_TYPES or \
                (op.type == "NoOp" and op.control_inputs):
            out.append(op)
    return out


def _written_variables(graph) -> set:
    """VariableV2 op names that an op with a ref input (an assignment) takes."""
    from ..registry import lookup_op_type

    written = set()
    for op in graph._ops:
        entry = lookup_op_type(op.type)
        if op.type in ("Identity", "RefIdentity", "IsVariableInitialized"):
            continue
        index = 0
        for spec in entry.input_specs:
            count = op._attrs[spec.number_attr] if spec.number_attr else 1
            if spec.is_ref:
                for t in op._inputs[index:index + count]:
                    source = t.op
                    while source.type in ("Identity", "RefIdentity") and source._inputs:
                        source = source._inputs[0].op
                    if source.type == "VariableV2":
                        written.add(source.name)
            index += count
    return written


class Function:
    """A Python function compiled once per input signature (``tfe.defun``, ``tf.function``)."""

    def __init__(self, python_function, input_signature=None, name=None):
        self._python_function = python_function
        self._input_signature = None if input_signature is None else list(input_signature)
        self._name = name or getattr(python_function, "__name__", "function")
        self._cache: dict = {}
        self.stats = {"traces": 0, "calls": 0, "eager_calls": 0}
        self._bound = weakref.WeakKeyDictionary()  # instance -> its bound Function (methods)
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def __get__(self, instance, owner):
        """A defun used as a method: one Function per instance (the instance bound in)."""
        if instance is None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:  # not weak-referenceable: a new Function (and trace) per access
            return Function(functools.partial(self._python_function, instance), self._input_signature, self._name)
        if bound is None:
            bound = Function(functools.partial(self._python_function, instance), self._input_signature, self._name)
            self._bound[instance] = bound
        return bound

    def __call__(self, *args, **kwargs):
        if not executing_eagerly():
            return self._python_function(*args, **kwargs)  # inside another trace: inline
        if _tape.ACTIVE_TAPES:
            self.stats["eager_calls"] += 1  # the tape must see the ops
            return self._python_function(*args, **kwargs)
        if kwargs or self._input_signature is not None:
            from ..control_flow import flatten

            structure = (args, kwargs)
            flat = flatten(structure)
        elif not args:
            structure, flat = ((), {}), []
        else:
            from ..control_flow import flatten

            structure = (args, kwargs)
            flat = flatten(structure)
        if self._input_signature is not None:
            key = ("signature",)
            tensors = self._signature_arguments(flat)
        else:
            key = tuple([_leaf_key(v) for v in flat])
            tensors = [v._defun_tensor() if _is_composite(v) else v for v in flat
                       if _is_tensor_arg(v) or _is_composite(v)]
        concrete = self._cache.get(key)
        if concrete is None:
            concrete = self._trace(structure, flat)
            self._cache[key] = concrete
        self.stats["calls"] += 1
        arrays = [contiguous(t._array if isinstance(t, EagerTensor) else t, d)
                  for t, d in zip(tensors, concrete.np_dtypes)]
        if concrete.fed:
            arrays += [t._array for t in concrete.fed]
        results = concrete.run(arrays)
        if concrete.single:
            return results[0]
        return _rebuild(concrete, results)

    def _signature_arguments(self, flat) -> list:
        from ..convert import convert_to_tensor

        if len(flat) != len(self._input_signature):
            raise ValueError(f"Function {self._name} was given {len(flat)} arguments but its input_signature has "
                             f"{len(self._input_signature)}")
        out = []
        for value, spec in zip(flat, self._input_signature):
            tensor = convert_to_tensor(value, dtype=spec.dtype)
            if not spec.shape.is_compatible_with(tensor.shape):
                raise ValueError(f"Python inputs incompatible with input_signature: {value!r} does not match "
                                 f"{spec!r}")
            out.append(tensor)
        return out

    def _trace(self, structure, flat) -> _Concrete:
        from ..control_flow import flatten, pack_sequence_as
        from ..ops.array_ops import identity, placeholder

        self.stats["traces"] += 1
        graph = FuncGraph(self._name)
        placeholders = []
        with graph.as_default():
            leaves = []
            if self._input_signature is not None:
                for i, spec in enumerate(self._input_signature):
                    p = placeholder(spec.dtype, spec.shape, name=spec.name or f"arg{i}")
                    placeholders.append(p)
                    leaves.append(p)
            else:
                for i, value in enumerate(flat):
                    if _is_composite(value):
                        resource = value._defun_tensor()
                        p = placeholder(resource.dtype, resource.shape, name=f"arg{i}")
                        placeholders.append(p)
                        leaves.append(value._defun_traced(p))
                    elif _is_tensor_arg(value):
                        dtype = value.dtype if isinstance(value, EagerTensor) else dtypes.as_dtype(value.dtype)
                        p = placeholder(dtype, value.shape, name=f"arg{i}")
                        placeholders.append(p)
                        leaves.append(p)
                    else:
                        leaves.append(value)
            args, kwargs = pack_sequence_as(structure, leaves)
            returned = self._python_function(*args, **kwargs)
            out_leaves = flatten(returned)
            fetches, flat_outputs = [], []
            for leaf in out_leaves:
                if isinstance(leaf, Tensor) and not isinstance(leaf, EagerTensor):
                    if leaf.dtype.is_ref_dtype:
                        leaf = identity(leaf)
                    flat_outputs.append(("tensor", len(fetches)))
                    fetches.append(leaf)
                elif _is_variable(leaf) and not isinstance(leaf, EagerTensor):
                    flat_outputs.append(("value", leaf))
                elif isinstance(leaf, Operation):
                    flat_outputs.append(("value", None))
                else:
                    flat_outputs.append(("value", leaf))
        targets = _side_effect_ops(graph)
        written = _written_variables(graph)
        placeholders += [p for _, p in graph.fed_captures]
        compiled, session = _compile(graph, fetches, targets, placeholders, written)
        concrete = _Concrete(graph, placeholders, returned, flat_outputs, compiled, session, fetches, written, targets)
        concrete.fed = [t for t, _ in graph.fed_captures]
        return concrete

    def get_concrete_function(self, *args, **kwargs):
        return self

    def __repr__(self) -> str:
        return f"<tfc defun {self._name}: {len(self._cache)} traced signatures>"


def _compile(graph, fetches, targets, placeholders, written):
    """tfc.compile of the trace (one program); a graph the compiler cannot take whole (host
    ops) runs in a private session instead."""
    from tfc.compile_api import compile as tfc_compile
    from tfc.passes.lower import UnsupportedOpsError

    try:
        compiled = tfc_compile(list(fetches) + list(targets), feeds=placeholders, graph=graph)
    except UnsupportedOpsError:
        from tfc.runtime.session import Session

        return None, Session(graph=graph)
    compiled._variable_values = _VariableBuffers(graph, written)
    return compiled, None


def _rebuild(concrete: _Concrete, results: list):
    from ..control_flow import flatten, pack_sequence_as

    if concrete.structure is None:
        return None
    leaves = []
    for kind, value in concrete.flat_outputs:
        leaves.append(results[value] if kind == "tensor" else value)
    if not flatten(concrete.structure):
        return concrete.structure
    return pack_sequence_as(concrete.structure, leaves)


def defun(func=None, input_signature=None, autograph=True, experimental_autograph_options=None,
          experimental_relax_shapes=False, experimental_compile=None, **unused):
    """tf.contrib.eager.defun / tf.function: compile ``func`` once per input signature."""
    del autograph, experimental_autograph_options, experimental_relax_shapes, experimental_compile, unused
    if func is None:
        return lambda f: Function(f, input_signature)
    return Function(func, input_signature)


function = defun
