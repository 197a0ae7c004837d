"""User functions of tf.data (``map``, ``filter``, ``flat_map``, ``interleave``), traced once.

``trace(fn, structure, ...)`` calls ``fn`` once on placeholders shaped like the input
element, in a graph of its own (:class:`FunctionGraph`), as TF traces a dataset function
into a FunctionDef. Tensors of the enclosing graph that ``fn`` uses become *captures*:
placeholders inside the function, fed at run time with the outer tensors' values, which
the dataset op takes as its ``other_arguments`` inputs (as TF's MapDataset does).

At run time a :class:`TracedFunction` runs its graph as one program compiled by
``tfc.compile`` (a :class:`Program`): calls from several threads run at the same time
(``map(..., num_parallel_calls=n)``; the compiled code releases the GIL). A graph the
compiler cannot take whole — host ops such as ``parse_single_example``, strings — runs
in a private session of its own instead (not the user's: the pipeline may run on a
prefetch thread while the user's session is busy with a step), which compiles the rest
and runs the host ops around it, one call at a time. Where the graph can be rewritten to
work on a whole batch of elements (tfc/frontend/data/vectorize.py), chunks of elements go
through that batched graph in one call; otherwise it runs once per element. An op the
compiler cannot compile is an ``UnimplementedError`` naming it.

Functions are traced the same way in eager mode (TF traces dataset functions there too):
inside ``fn`` ``tf.executing_eagerly()`` is False and eager tensors it uses become
constants of the function.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import errors
from ..graph import Graph, Tensor
from . import structure as nest

_COUNTER = [0]
_COUNTER_LOCK = threading.Lock()


class FunctionGraph(Graph):
    """The graph a tf.data function is traced into; tensors of the outer graphs it uses
    are captured (see graph._graph_from_inputs: ops created while tracing land here)."""

    _captures_outer_tensors = True

    def __init__(self, outer: Graph, name: str):
        super().__init__()
        self.outer = outer
        self.name = name
        self.seed = outer.seed
        self.captures: list = []  # [(outer tensor, placeholder)] in capture order
        self._captured: dict = {}
        self.variable_reads: list = []  # [(eager variable, placeholder)]: fed its value at each call
        self._variables: dict = {}

    def capture(self, tensor: Tensor) -> Tensor:
        if tensor.graph is self:
            return tensor
        placeholder = self._captured.get(tensor)
        if placeholder is not None:
            return placeholder
        if tensor.dtype.is_ref_dtype:
            raise ValueError(f"tfc: a tf.data function cannot use the variable ref {tensor.name}; read it first "
                             "(tf.identity / var.value())")
        if tensor.graph is not self.outer and isinstance(self.outer, FunctionGraph):
            self.outer.capture(tensor)  # a nested function: the outer function captures it first
        saved = self._name_stack
        self._name_stack = ""
        try:
            placeholder = Graph.create_op(self, "Placeholder", [], name="captured_input",
                                          attrs={"dtype": tensor.dtype.base_dtype, "shape": tensor.shape}).outputs[0]
        finally:
            self._name_stack = saved
        self._captured[tensor] = placeholder
        self.captures.append((tensor, placeholder))
        return placeholder

    # -- eager variables (a dataset built eagerly): read at each call, as TF's captured
    # resource variables are
    def read_variable(self, variable):
        placeholder = self._variables.get(id(variable))
        if placeholder is None:
            saved = self._name_stack
            self._name_stack = ""
            try:
                placeholder = Graph.create_op(self, "Placeholder", [], name="captured_variable",
                                              attrs={"dtype": variable.dtype.base_dtype,
                                                     "shape": variable.shape}).outputs[0]
            finally:
                self._name_stack = saved
            self._variables[id(variable)] = placeholder
            self.variable_reads.append((variable, placeholder))
        return placeholder

    def capture_variable(self, variable):
        raise ValueError(f"tfc: a tf.data function cannot update the eager variable {variable.name} (it may read "
                         "it)")

    def outer_tensor(self, tensor: Tensor) -> Tensor:
        """The tensor of the *outer* graph a capture stands for (for a nested function,
        the outer function's own placeholder)."""
        if tensor.graph is self.outer or not isinstance(self.outer, FunctionGraph):
            return tensor
        return self.outer._captured[tensor]

    def create_op(self, op_type, inputs=(), *args, **kwargs):
        inputs = [self.capture(t) if isinstance(t, Tensor) and t.graph is not self else t for t in inputs]
        return super().create_op(op_type, inputs, *args, **kwargs)


def _function_name(fn, transformation: str) -> str:
    base = getattr(fn, "__name__", type(fn).__name__)
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    with _COUNTER_LOCK:
        _COUNTER[0] += 1
        number = _COUNTER[0]
    return f"__inference_Dataset_{transformation}_{base}_{number}"


def trace(fn, input_structure, transformation: str, outer: Graph) -> "TracedFunction":
    """Trace ``fn`` on placeholders for an element of ``input_structure`` (a Spec nest)."""
    from ..convert import convert_to_tensor
    from ..ops.array_ops import placeholder
    from .dataset import Dataset

    graph = FunctionGraph(outer, _function_name(fn, transformation))
    with graph.as_default():
        flat_specs = nest.flatten(input_structure)
        flat_inputs = [placeholder(spec.dtype, spec.shape, name=f"args_{i}") for i, spec in enumerate(flat_specs)]
        # a dataset component (a window) is a Dataset over its variant placeholder
        args = nest.pack_sequence_as(input_structure, [
            Dataset(t, spec.element, "_VariantDataset") if isinstance(spec, nest.DatasetSpec) else t
            for t, spec in zip(flat_inputs, flat_specs)])
        result = fn(*args) if type(args) is tuple else fn(args)
        result = nest.normalize_function_result(result)
        dataset_structure = None
        if isinstance(result, Dataset):
            dataset_structure = result._structure
            outputs = [result._variant_tensor]
            output_structure = nest.Spec("variant", [])
        else:
            outputs = []
            for i, leaf in enumerate(nest.flatten(result)):
                if isinstance(leaf, Dataset):
                    raise TypeError("tfc: a tf.data function may return a Dataset only as its whole result")
                tensor = convert_to_tensor(leaf)
                if tensor.graph is not graph:
                    tensor = graph.capture(tensor)
                outputs.append(tensor)
            output_structure = nest.pack_sequence_as(
                result, [nest.Spec(t.dtype, t.shape) for t in outputs]) if nest.is_nested(result) \
                else nest.Spec(outputs[0].dtype, outputs[0].shape)
    return TracedFunction(graph, flat_inputs, outputs, output_structure, dataset_structure, transformation, fn)


class Program:
    """A function graph run with fed values: compiled once by ``tfc.compile`` (thread-safe,
    calls run in parallel), or, where the compiler cannot take the graph whole, a private
    session (host ops run around the compiled part; one call at a time)."""

    def __init__(self, graph, feeds: list, outputs: list):
        self.graph = graph
        self.feeds = list(feeds)
        self.outputs = list(outputs)
        self._lock = threading.Lock()
        self._compiled = False  # not tried yet; then a CompiledGraph or None (use the session)
        self._session = None
        self._np_dtypes = [t.dtype.base_dtype.as_numpy_dtype for t in self.feeds]

    def _program(self):
        with self._lock:
            if self._compiled is False:
                compiled = _compile(self.graph, self.feeds, self.outputs)
                if compiled is None:
                    from tfc.runtime.session import Session

                    self._session = Session(graph=self.graph)
                self._compiled = compiled  # published last: other threads read it without the lock
            return self._compiled

    def run(self, values: list) -> list:
        compiled = self._compiled if self._compiled is not False else self._program()
        if compiled is None:
            return self._session.run(self.outputs, dict(zip(self.feeds, values)))
        arrays = [np.asarray(v, dtype=d, order="C") for v, d in zip(values, self._np_dtypes)]
        lock = compiled._state_lock
        if lock is None:
            return compiled.result.executable.run(arrays + [compiled._ref_value(s) for s in compiled.lowered.refs])
        with lock:  # a stateful program (random ops): one call at a time
            return compiled.result.executable.run(arrays + [compiled._ref_value(s) for s in compiled.lowered.refs])

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


def _compile(graph, feeds, outputs):
    """tfc.compile of the function (None: the private session runs it)."""
    from tfc.compile_api import compile as tfc_compile
    from tfc.frontend import dtypes

    if any(t.dtype.base_dtype in (dtypes.string, dtypes.variant, dtypes.resource) for t in list(feeds) + outputs):
        return None
    try:
        return tfc_compile(list(outputs), feeds=list(feeds), graph=graph)
    except Exception:  # noqa: BLE001 - host ops, unknown ranks...: the session compiles what it can
        return None


class TracedFunction:
    """A traced tf.data function and the program that runs it."""

    def __init__(self, graph: FunctionGraph, inputs: list, outputs: list, output_structure, dataset_structure,
                 transformation: str, fn):
        self.graph = graph
        self.name = graph.name
        self.inputs = inputs
        self.outputs = outputs
        self.output_structure = output_structure
        self.dataset_structure = dataset_structure  # the element of the Dataset it returns, if it does
        self.transformation = transformation
        self.python_function = fn
        self.owner = None  # the dataset op that calls it (set by the Dataset)
        self._lock = threading.Lock()
        self._program = None
        self._batched = False  # unknown yet; then a vectorize.BatchedFunction or None
        self._identity = all(t in inputs for t in outputs)

    @property
    def captured_tensors(self) -> list:
        """The outer graph's tensors the function uses, in capture order."""
        return [self.graph.outer_tensor(outer) for outer, _ in self.graph.captures]

    @property
    def capture_placeholders(self) -> list:
        """The placeholders fed with captured values: the captures', then the eager
        variables' (their values at each call)."""
        return [placeholder for _, placeholder in self.graph.captures] + \
            [placeholder for _, placeholder in self.graph.variable_reads]

    def _captured_values(self, captured: list) -> list:
        if not self.graph.variable_reads:
            return list(captured)
        return list(captured) + [variable._snapshot_array() for variable, _ in self.graph.variable_reads]

    def _run(self, program: Program, values: list) -> list:
        from tfc.passes.lower import UnsupportedOpsError

        try:
            return program.run(values)
        except UnsupportedOpsError as e:
            owner = self.owner
            where = f" of '{owner.name}' ({owner.type})" if owner is not None else ""
            raise errors.UnimplementedError(
                None, owner, f"tf.data: the function {self.name}{where} cannot be compiled: {e}") from None

    def program(self) -> Program:
        with self._lock:
            if self._program is None:
                self._program = Program(self.graph, self.inputs + self.capture_placeholders, self.outputs)
            return self._program

    def call(self, components: list, captured: list) -> list:
        """The function's flat outputs for one element (flat components)."""
        if self._identity:
            by_input = dict(zip(self.inputs, components))
            return [by_input[t] for t in self.outputs]
        values = self._run(self._program or self.program(), list(components) + self._captured_values(captured))
        return [v if self.dataset_structure is not None else np.asarray(v) for v in values]

    def batched(self):
        """The function rewritten for a batch of elements, or None where it cannot be."""
        with self._lock:
            if self._batched is False:
                from .vectorize import vectorize

                self._batched = None if self.dataset_structure is not None else vectorize(self)
            return self._batched

    def call_batch(self, chunk: list, captured: list):
        """Outputs for a chunk of elements (leading dimension n), or None when the
        function cannot be run on a batch."""
        if self._identity:
            by_input = dict(zip(self.inputs, chunk))
            return [by_input[t] for t in self.outputs]
        batched = self.batched()
        if batched is None:
            return None
        values = self._run(batched.program(), list(chunk) + self._captured_values(captured))
        out = [np.asarray(v) for v in values]
        if batched.unbatched_outputs:  # outputs that do not depend on the element: one per element
            n = chunk[0].shape[0]
            for i in batched.unbatched_outputs:
                out[i] = np.ascontiguousarray(np.broadcast_to(out[i], (n,) + out[i].shape))
        return out

    def close(self) -> None:
        with self._lock:
            if self._program is not None:
                self._program.close()
                self._program = None
