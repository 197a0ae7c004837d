"""Lowering: a TF graph (fetches, targets, feeds) -> an IR module with one function.

What it does, in order:
1. Prune: keep the ops the fetches and targets need (data and control inputs), stopping
   at fed tensors. An unfed Placeholder is an InvalidArgumentError, as in TF.
2. Order: a topological order that respects control dependencies, so stateful ops
   (assign, random) run in dataflow order, each at most once.
3. Arguments: each fed tensor becomes an argument whose unknown dims are symbols
   (``s0``...; a dim known to be 1 at run time is specialised to 1, so broadcasting is
   decided at compile time); each variable and each random op's state becomes a
   ``ref<...>`` argument.
4. Emit: each op's registry entry lowers it (``entry.lower(ctx, op, *inputs)``), with
   the user's file:line as the location. Ops that cannot be lowered are collected and
   reported together.

Shape symbols that broadcasting or contraction proves equal are unified (and the
runtime checks the equality it relies on, naming the op that needed it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tfc import ir
from tfc.frontend import dtypes
from tfc.frontend.errors import InvalidArgumentError
from tfc.frontend.registry import lookup_op_type
from tfc.ir.dims import Dim, SymExpr, dim_str, dim_sub, dim_substitute, sym

_ELEM = {
    "float16": ir.ElemType.F16, "float32": ir.ElemType.F32, "float64": ir.ElemType.F64,
    "int8": ir.ElemType.I8, "int16": ir.ElemType.I16, "int32": ir.ElemType.I32, "int64": ir.ElemType.I64,
    "uint8": ir.ElemType.U8, "bool": ir.ElemType.PRED,
}

_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


class LoweringError(Exception):
    """One op that cannot be compiled (raised by ctx.fail inside an entry's lower)."""


class UnsupportedOpsError(ValueError):
    """Every op of the pruned graph that could not be lowered, with its location."""

    def __init__(self, failures: list):
        self.failures = failures
        lines = [f"tfc cannot compile {len(failures)} op{'s' if len(failures) != 1 else ''} of this graph:"]
        for op, reason in failures:
            file, line = op.location
            where = f" at {file}:{line}" if file else ""
            lines.append(f"  '{op.name}' ({op.type}){where}: {reason}")
        super().__init__("\n".join(lines))


def ir_elem(dtype) -> ir.ElemType:
    base = dtypes.as_dtype(dtype).base_dtype.name
    if base not in _ELEM:
        raise LoweringError(f"dtype {base} is not supported by the compiler")
    return _ELEM[base]


def tf_type_name(dtype) -> str:
    """TF's C++ DataTypeString: float, double, int32, bool..."""
    base = dtypes.as_dtype(dtype).base_dtype.name
    return _TF_TYPE_NAMES.get(base, base)


@dataclass
class FeedSpec:
    """What the compiled program knows about a fed value: dtype, rank, which dims are 1."""

    tensor: object
    dtype: object
    shape: tuple  # runtime shape of the value the key was made from; only rank and 1s matter


@dataclass
class RefSlot:
    """A ref argument: a variable (kind 'variable') or a random op's state ('rng')."""

    kind: str
    name: str
    type: ir.TensorType
    op: object = None
    seed: tuple = (0, 0)


@dataclass
class Constraint:
    """Two dims the program assumes equal; ``op`` is the op whose semantics need it."""

    a: Dim
    b: Dim
    op: object
    shapes: tuple = ()


@dataclass
class LoweredGraph:
    module: ir.Module
    feeds: list
    refs: list
    fetches: list
    constraints: list = field(default_factory=list)
    ops: list = field(default_factory=list)  # the pruned TF ops, in lowering order

    @property
    def function(self) -> ir.Function:
        return self.module.main


# -- pruning ----------------------------------------------------------------------------
def prune(fetch_tensors, target_ops, fed_tensors) -> list:
    """The ops needed for the fetches and targets, topologically ordered. ``fed_tensors``
    may hold ops too: ops that ran already (host ops run before the program), whose control
    dependents need not run them."""
    fed = set(fed_tensors)
    order: list = []
    state: dict = {}  # op -> 1 visiting, 2 done
    stack: list = []

    def push_tensor(t):
        if t not in fed:
            stack.append((t.op, False))

    for t in reversed(list(fetch_tensors)):
        push_tensor(t)
    for op in reversed(list(target_ops)):
        stack.append((op, False))
    while stack:
        op, expanded = stack.pop()
        if expanded:
            if state.get(op) != 2:
                state[op] = 2
                order.append(op)
            continue
        if state.get(op):
            continue
        state[op] = 1
        stack.append((op, True))
        for c in reversed(op._control_inputs):
            # A control dependency on an op whose outputs are all fed is met by the feed
            # (TF replaces the fed node), as for a data input.
            if c in fed or (c.outputs and all(t in fed for t in c.outputs)):
                continue
            if not state.get(c):
                stack.append((c, False))
        for t in reversed(op._inputs):
            if t not in fed and not state.get(t.op):
                stack.append((t.op, False))
    return order


# -- the lowering context --------------------------------------------------------------
class LowerCtx:
    """What an entry's ``lower(ctx, op, *inputs)`` uses to emit IR.

    Inputs arrive as IR values (a variable's ref value for ref inputs; tensors stored in
    variables are read where a non-ref input consumes them). ``lower`` returns one IR
    value per TF output (or a list of them), building ops with ``ctx.b`` (an ir.Builder
    whose location is the TF op's) and the helpers below.
    """

    def __init__(self, symbol_prefix: str = "s"):
        self.function = ir.Function("main")
        self._open_blocks: list = []  # region blocks built through ``b`` (see ``b``)
        self.b = ir.Builder(self.function.body)
        self.constraints: list = []
        self._static: dict = {}
        self._next_symbol = 0
        self._symbol_prefix = symbol_prefix
        self._subst: dict = {}  # symbol name -> the dim it was unified with
        self._strings: dict = {}  # IR value -> the string constant it stands for
        self._host_strings: dict = {}  # IR value -> (host op, its inputs' values): see host_string
        self.op = None  # the TF op being lowered
        self.stacks: dict = {}  # StackV2 op -> lower_stacks.StackState where the builder is
        self.stack_facts: dict = {}  # StackV2 op -> lower_stacks.StackFacts
        self.initialized: dict = {}  # IsVariableInitialized op -> the session's answer (lower_graph)

    @property
    def b(self) -> ir.Builder:
        """The builder emitting the op being lowered (lower_control.py points it at the region
        a cond or loop builds; those blocks are remembered until an op owns them, so a
        unification also retypes the values of regions not attached to the function yet)."""
        return self._b

    @b.setter
    def b(self, builder: ir.Builder) -> None:
        self._b = builder
        block = builder.block
        if block is not self.function.body and block.parent_op is None and \
                not any(block is open_block for open_block in self._open_blocks):
            self._open_blocks.append(block)

    # -- failure ------------------------------------------------------------------------
    def fail(self, reason: str):
        raise LoweringError(reason)

    # -- types ----------------------------------------------------------------------------
    def elem(self, dtype) -> ir.ElemType:
        return ir_elem(dtype)

    def new_symbol(self) -> SymExpr:
        name = f"{self._symbol_prefix}{self._next_symbol}"
        self._next_symbol += 1
        return sym(name)

    @staticmethod
    def shape(value: ir.Value) -> tuple:
        return tuple(value.type.shape)

    @staticmethod
    def elem_of(value: ir.Value) -> ir.ElemType:
        return value.type.elem

    # -- constants and static values -----------------------------------------------------
    def constant(self, array, elem: Optional[ir.ElemType] = None) -> ir.Value:
        array = np.asarray(array)
        if elem is not None:
            array = array.astype(elem.np_dtype)
        elif array.dtype == object or array.dtype.kind in ("U", "S"):
            self.fail("string tensors are not supported by the compiler")
        elem = ir.ElemType.from_numpy(array.dtype)
        array = np.asarray(array, order="C")
        value = self.b.value("constant", [], {"value": array},
                             result_type=ir.TensorType(elem, array.shape))
        self._static[value] = array
        return value

    def string_constant(self, array) -> ir.Value:
        """A string constant (an object array of bytes): the compiler computes no strings,
        but ops that format messages (tf.Assert's data) read it while compiling
        (``string_value``). Its IR value is an empty ``u8[0]`` constant that only the
        entries with ``takes_string_constants`` see (the driver refuses other ops with
        string inputs)."""
        value = self.b.value("constant", [], {"value": np.zeros(0, np.uint8)},
                             result_type=ir.TensorType(ir.ElemType.U8, (0,)))
        self._strings[value] = np.asarray(array, dtype=object)
        return value

    def host_string(self, op, inputs: list) -> ir.Value:
        """A string that host op ``op`` (tf.print's StringFormat, inside a branch or a loop)
        computes from ``inputs`` (its inputs' values) where the program calls back: an empty
        ``u8[0]`` stand-in, for the ``host_call`` of its consumer (``host_string_source``)."""
        value = self.b.value("constant", [], {"value": np.zeros(0, np.uint8)},
                             result_type=ir.TensorType(ir.ElemType.U8, (0,)))
        self._host_strings[value] = (op, list(inputs))
        return value

    def host_string_source(self, value: ir.Value) -> Optional[tuple]:
        """(host op, its inputs' values) of a ``host_string``, or None."""
        return self._host_strings.get(value)

    def string_value(self, value: ir.Value) -> Optional[np.ndarray]:
        """The strings ``value`` stands for (``string_constant``), or None."""
        return self._strings.get(value)

    def scalar(self, number, elem: ir.ElemType) -> ir.Value:
        return self.constant(np.array(number, dtype=elem.np_dtype))

    def static(self, value: ir.Value) -> Optional[np.ndarray]:
        """The value known at compile time (numbers, or Dim objects for shapes), or None."""
        return self._static.get(value)

    def static_dims(self, value: ir.Value) -> Optional[list]:
        known = self.static(value)
        if known is None:
            return None
        return [_as_dim(v) for v in np.asarray(known).reshape(-1)]

    def from_static(self, array: np.ndarray, elem: ir.ElemType) -> ir.Value:
        """Materialise a compile-time value: a constant, or a ``dims`` op when symbolic."""
        array = np.asarray(array)
        if array.dtype != object or all(isinstance(v, (int, np.integer)) for v in array.reshape(-1)):
            return self.constant(array.astype(elem.np_dtype))
        flat = [_as_dim(v) for v in array.reshape(-1)]
        dims_elem = elem if elem in (ir.ElemType.I32, ir.ElemType.I64) else ir.ElemType.I64
        value = self.b.value("dims", [], {"values": flat}, result_type=ir.TensorType(dims_elem, (len(flat),)))
        if dims_elem != elem:
            value = self.b.value("convert", [value], result_type=value.type.with_elem(elem))
        if array.shape != (len(flat),):
            value = self.reshape(value, array.shape)
        self._static[value] = array
        return value

    def fold_static(self, fn, inputs, elem: ir.ElemType) -> Optional[ir.Value]:
        """If every input is known at compile time, emit ``fn(*known)`` as a static value."""
        known = [self.static(v) for v in inputs]
        if any(k is None for k in known):
            return None
        return self.from_static(np.asarray(fn(*known)), elem)

    # -- symbolic dims ----------------------------------------------------------------------
    def unify(self, a: Dim, b: Dim, shapes: tuple = ()) -> Dim:
        """Record that dims ``a`` and ``b`` are equal; returns the surviving dim."""
        a, b = self.canon(a), self.canon(b)
        if a == b:
            return a
        if isinstance(a, int) and isinstance(b, int):
            self.fail(f"Incompatible shapes: {list(shapes[0]) if shapes else a} vs. "
                      f"{list(shapes[1]) if shapes else b}")
        self.constraints.append(Constraint(a, b, self.op, tuple(tuple(s) for s in shapes)))
        target, keep = (a, b) if isinstance(a, SymExpr) and a.is_symbol() else (b, a)
        if isinstance(target, SymExpr) and target.is_symbol() and target not in _symbols_in(keep):
            self._substitute({dim_str(target): keep})
            return keep
        solved = _solve_linear(a, b)
        if solved is not None:
            self._substitute(solved)
            return self.canon(a)
        self.fail(f"cannot prove at compile time that dims {dim_str(a)} and {dim_str(b)} are equal "
                  f"(shapes {[list(s) for s in shapes]})")

    def canon(self, d: Dim) -> Dim:
        """``d`` with every unification so far applied."""
        return dim_substitute(d, self._subst) if self._subst else d

    def _substitute(self, mapping: dict) -> None:
        self._subst = {k: dim_substitute(v, mapping) for k, v in self._subst.items()}
        self._subst.update(mapping)
        for value in self._all_values():
            value.type = _subst_type(value.type, mapping)
        for op in self.function.walk():
            for key, attr in list(op.attrs.items()):
                op.attrs[key] = _subst_attr(attr, mapping)
        for op in self._unattached_ops():
            for key, attr in list(op.attrs.items()):
                op.attrs[key] = _subst_attr(attr, mapping)
        for c in self.constraints:
            c.a = dim_substitute(c.a, mapping)
            c.b = dim_substitute(c.b, mapping)
        for value, known in list(self._static.items()):
            if known.dtype == object:
                self._static[value] = np.vectorize(lambda v: _subst_static(v, mapping), otypes=[object])(known)

    def _all_values(self):
        yield from self.function.args
        for op in self.function.walk():
            yield from op.results
            for region in op.regions:
                yield from region.args
        for block in self._open_blocks:
            yield from block.args
        for op in self._unattached_ops():
            yield from op.results
            for region in op.regions:
                yield from region.args

    def _unattached_ops(self):
        """The ops of region blocks being built (no op owns them yet), nested ones too."""
        self._open_blocks = [block for block in self._open_blocks if block.parent_op is None]
        for block in self._open_blocks:
            for op in block.ops:
                yield from op.walk()

    # -- shape helpers ----------------------------------------------------------------------
    def reshape(self, value: ir.Value, shape) -> ir.Value:
        shape = tuple(shape)
        if tuple(value.type.shape) == shape:
            return value
        return self.b.value("reshape", [value], result_type=value.type.with_shape(shape))

    def transpose(self, value: ir.Value, perm) -> ir.Value:
        perm = list(perm)
        if perm == list(range(len(perm))):
            return value
        return self.b.value("transpose", [value], {"perm": perm})

    def convert(self, value: ir.Value, elem: ir.ElemType) -> ir.Value:
        if value.type.elem == elem:
            return value
        known = self.static(value)
        if known is not None:
            return self.from_static(known, elem) if known.dtype == object else self.constant(known, elem)
        return self.b.value("convert", [value], result_type=value.type.with_elem(elem))

    def broadcast_in_dim(self, value: ir.Value, shape, dims) -> ir.Value:
        shape = tuple(shape)
        if tuple(value.type.shape) == shape and list(dims) == list(range(len(shape))):
            return value
        return self.b.value("broadcast", [value], {"dims": list(dims)}, result_type=value.type.with_shape(shape))

    def broadcast_shapes(self, *shapes) -> tuple:
        """numpy broadcasting of static/symbolic shapes (unifying symbolic dims)."""
        rank = max(len(s) for s in shapes)
        out = []
        for axis in range(rank):
            dim: Dim = 1
            for shape in shapes:
                offset = axis - (rank - len(shape))
                if offset < 0:
                    continue
                d = self.canon(shape[offset])
                dim = self.canon(dim)
                if d == 1 or d == dim:
                    continue
                if dim == 1:
                    dim = d
                else:
                    dim = self.unify(dim, d, shapes[:2])
            out.append(dim)
        return tuple(self.canon(d) for d in out)

    def broadcast_to(self, value: ir.Value, shape) -> ir.Value:
        """numpy-style: align trailing dims; size-1 dims expand."""
        shape = tuple(shape)
        rank_in = value.type.rank
        if tuple(value.type.shape) == shape:
            return value
        return self.broadcast_in_dim(value, shape, range(len(shape) - rank_in, len(shape)))

    def elementwise(self, name: str, *values: ir.Value, attrs: Optional[dict] = None,
                    result_elem: Optional[ir.ElemType] = None) -> ir.Value:
        """A core elementwise op over numpy-broadcast operands."""
        shape = self.broadcast_shapes(*[tuple(v.type.shape) for v in values])
        values = [self.broadcast_to(v, shape) for v in values]
        if result_elem is not None:
            return self.b.value(name, values, attrs, result_type=values[0].type.with_elem(result_elem))
        return self.b.value(name, values, attrs)

    def reduce(self, value: ir.Value, kind: str, dims) -> ir.Value:
        dims = sorted(set(int(d) for d in dims))
        if not dims:
            return value
        return self.b.value("reduce", [value], {"op": kind, "dims": dims})

    # -- run-time checks ----------------------------------------------------------------------
    def check(self, kind: str, value: ir.Value, **attrs) -> None:
        """A ``check`` of ``value`` (kinds: tfc/ir/ops.py) where TF's kernel raises on bad
        data; nothing when the value is known now and passes. A value known to fail is
        still checked at run time: TF raises when the graph runs, not when it is built."""
        attrs = {"kind": kind, **{name: v for name, v in attrs.items() if v is not None}}
        if not self._passes_statically(value, attrs):
            self.b.op("check", [value], attrs)

    def _passes_statically(self, value: ir.Value, attrs: dict) -> bool:
        from tfc.ir.evaluator import check_failure

        known = self.static(value)
        dims = [d for name in ("bound", "size") for d in attrs.get(name) or []]
        if known is None or known.dtype == object or not value.type.is_static or \
                not all(isinstance(d, int) for d in dims):
            return False
        array = np.asarray(known).astype(value.type.elem.np_dtype).reshape(tuple(value.type.shape))
        rule = {name: v for name, v in attrs.items() if name != "unless_empty"}
        return check_failure(array, rule) is None

    # -- state --------------------------------------------------------------------------------
    def rng_state(self, op) -> tuple:
        """(ref<i64[]> state value, (seed0, seed1)) for a random op."""
        return self._rng_provider(op)


def _as_dim(v) -> Dim:
    if isinstance(v, SymExpr):
        return v
    return int(v)


def _solve_linear(a: Dim, b: Dim):
    """{symbol: value} making a == b when their difference is c*s + k with c | k."""
    difference = dim_sub(a, b)
    if isinstance(difference, int):
        return None
    symbols = difference.symbols()
    if len(symbols) != 1:
        return None
    (name,) = symbols
    terms = difference.terms
    if set(terms) - {(), (name,)}:
        return None
    coefficient = terms.get((name,), 0)
    constant = terms.get((), 0)
    if coefficient == 0 or constant % coefficient or -constant // coefficient < 0:
        return None
    return {name: -constant // coefficient}


def _symbols_in(d: Dim) -> set:
    return set() if isinstance(d, int) else {sym(s) for s in d.symbols()}


def _subst_type(t, mapping):
    if isinstance(t, ir.RefType):
        return ir.RefType(_subst_type(t.tensor, mapping))
    return t.with_shape([dim_substitute(d, mapping) for d in t.shape])


def _subst_attr(attr, mapping):
    if isinstance(attr, SymExpr):
        return dim_substitute(attr, mapping)
    if isinstance(attr, list):
        return [_subst_attr(a, mapping) for a in attr]
    return attr


def _subst_static(value, mapping):
    return dim_substitute(value, mapping) if isinstance(value, SymExpr) else value


# -- the driver ---------------------------------------------------------------------------
def _feed_arg_type(spec: FeedSpec, ctx: LowerCtx) -> ir.TensorType:
    static = spec.tensor.shape
    dims = []
    for i, runtime_dim in enumerate(spec.shape):
        known = None if static.dims is None else static.dims[i].value
        if known is not None:
            dims.append(known)
        elif runtime_dim == 1:
            dims.append(1)
        else:
            dims.append(ctx.new_symbol())
    return ir.TensorType(ir_elem(spec.dtype), tuple(dims))


def _location(op) -> ir.Location:
    file, line = op.location
    if file is not None:
        file = os.path.basename(file) if os.path.isabs(file) else file
    return ir.Location(file, line, op.name)


def _tensor_hint(tensor) -> str:
    return tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}:{tensor.value_index}"


class _Lowering:
    def __init__(self, fetches, targets, feeds, variable_types, rng_seed_provider):
        self.fetches = list(fetches)
        self.targets = list(targets)
        self.feeds = list(feeds)
        self.variable_types = variable_types
        self.rng_seed_provider = rng_seed_provider
        self.ctx = LowerCtx()
        self.ctx._rng_provider = self._rng_state
        self.values: dict = {}  # TF tensor -> IR value
        self.refs: list = []
        self._ref_values: dict = {}
        self.failures: list = []
        self.poisoned: set = set()

    def run(self) -> LoweredGraph:
        fed = [spec.tensor for spec in self.feeds]
        ops = prune(self.fetches, self.targets, fed + list(getattr(self, "ran", ())))
        self._check_placeholders(ops)
        for spec in self.feeds:
            try:
                arg_type = _feed_arg_type(spec, self.ctx)
            except LoweringError as e:  # a fed string: what uses it is not compiled either
                self._record_failure(spec.tensor.op, str(e))
                continue
            arg = self.ctx.function.body.add_arg(arg_type, _tensor_hint(spec.tensor))
            self.values[spec.tensor] = arg
        self._lower_ops(ops)
        for t in self.fetches:
            if t.dtype.base_dtype == dtypes.string and t.op not in self.poisoned:
                self._record_failure(t.op, "string tensors are not supported by the compiler")
        if self.failures:
            raise UnsupportedOpsError(self.failures)
        results = [self._fetch_value(t) for t in self.fetches]
        self.ctx.b.loc = None
        self.ctx.b.op("return", results)
        module = ir.Module([self.ctx.function])
        return LoweredGraph(module, [s.tensor for s in self.feeds], self.refs, self.fetches,
                            self.ctx.constraints, ops)

    def _lower_ops(self, ops) -> None:
        """Each op in order; with TF1 control flow (Switch, Merge, Enter...), whole conds and
        loops at once (lower_control.py)."""
        from .lower_control import ControlFlowError, ControlFlowLowering, has_control_flow

        if not has_control_flow(ops):
            for op in ops:
                self._lower_op(op)
            return
        try:
            ControlFlowLowering(self, ops).run()
        except ControlFlowError as e:
            self._record_failure(e.op, str(e))

    def _check_placeholders(self, ops) -> None:
        for op in ops:
            if op.type in ("Placeholder",):
                t = op.outputs[0]
                shape = t.shape
                shape_text = "" if shape.dims is None else " and shape [" + ",".join(
                    "?" if d is None else str(d) for d in shape.as_list()) + "]"
                raise InvalidArgumentError(
                    None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                              f"{tf_type_name(t.dtype)}{shape_text}")

    def _fetch_value(self, tensor) -> ir.Value:
        value = self.values[tensor]
        if isinstance(value.type, ir.RefType):
            self.ctx.b.loc = None
            value = self.ctx.b.value("read", [value])
        return value

    def _input_values(self, op) -> list:
        entry = lookup_op_type(op.type)
        ref_positions = _ref_input_positions(entry, op)
        out = []
        for i, t in enumerate(op._inputs):
            value = self.values[t]
            if isinstance(value.type, ir.RefType) and i not in ref_positions and not entry.forwards_refs:
                value = self.ctx.b.value("read", [value])
            out.append(value)
        return out

    def _lower_op(self, op) -> None:
        entry = lookup_op_type(op.type)
        if any(t.op in self.poisoned for t in op._inputs):
            self.poisoned.add(op)
            return
        self.ctx.op = op
        self.ctx.b.loc = _location(op)
        if op.type == "VariableV2":
            self.values[op.outputs[0]] = self._variable_ref(op)
            return
        if entry.lower is None:
            self._record_failure(op, f"no lowering is registered for op type {op.type}")
            return
        if not getattr(entry, "takes_string_constants", False) and \
                any(t.dtype.base_dtype == dtypes.string for t in op._inputs):
            self._record_failure(op, "string tensors are not supported by the compiler")
            return
        try:
            inputs = self._input_values(op)
            outputs = entry.lower(self.ctx, op, *inputs)
        except LoweringError as e:
            self._record_failure(op, str(e))
            return
        outputs = [] if outputs is None else list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if len(outputs) != len(op.outputs):
            raise AssertionError(f"lowering of {op.type} returned {len(outputs)} values for {len(op.outputs)} outputs")
        for tensor, value in zip(op.outputs, outputs):
            self.values[tensor] = value

    def _record_failure(self, op, reason: str) -> None:
        self.failures.append((op, reason))
        self.poisoned.add(op)

    def _variable_ref(self, op) -> ir.Value:
        if op.name in self._ref_values:
            return self._ref_values[op.name]
        tensor_type = self.variable_types(op) if self.variable_types else None
        if tensor_type is None:
            shape = op.outputs[0].shape
            if not shape.is_fully_defined():
                raise LoweringError(f"variable {op.name} has no fully defined shape")
            tensor_type = ir.TensorType(ir_elem(op._attrs["dtype"]), tuple(shape.as_list()))
        value = self.ctx.function.body.add_arg(ir.RefType(tensor_type), op.name)
        self.refs.append(RefSlot("variable", op.name, tensor_type, op))
        self._ref_values[op.name] = value
        return value

    def _rng_state(self, op) -> tuple:
        key = f"{op.name}.rng"
        seed = self.rng_seed_provider(op) if self.rng_seed_provider else _op_seeds(op)
        if key not in self._ref_values:
            state_type = ir.TensorType(ir.ElemType.I64, ())
            value = self.ctx.function.body.add_arg(ir.RefType(state_type), key)
            self.refs.append(RefSlot("rng", key, state_type, op, seed))
            self._ref_values[key] = value
        return self._ref_values[key], seed


def _op_seeds(op) -> tuple:
    seed = op._attrs.get("seed", 0) or 0
    seed2 = op._attrs.get("seed2", 0) or 0
    if seed == 0 and seed2 == 0:
        rng = np.random.default_rng()
        return int(rng.integers(1, 2**31)), int(rng.integers(1, 2**31))
    return int(seed), int(seed2)


def _ref_input_positions(entry, op) -> set:
    positions = set()
    index = 0
    for spec in entry.input_specs:
        count = op._attrs[spec.number_attr] if spec.number_attr else 1
        if spec.is_ref:
            positions.update(range(index, index + count))
        index += count
    return positions


def lower_graph(fetches, targets=(), feeds=(), variable_types=None, rng_seeds=None,
                initialized=None, ran=()) -> LoweredGraph:
    """Lower what ``fetches`` (tensors) and ``targets`` (ops) need into an IR module.

    ``feeds``: FeedSpecs (tensor, dtype, runtime shape) in argument order.
    ``variable_types(op) -> ir.TensorType | None`` overrides a variable's static type.
    ``rng_seeds(op) -> (seed0, seed1)`` chooses the seeds of unseeded random ops.
    ``initialized``: {IsVariableInitialized op: the session's answer}, constants of this step.
    ``ran``: ops run before the program (host ops): a control dependency on one is met.
    The cyclic garbage collector is paused meanwhile (``manager.gc_paused``).
    """
    from .manager import gc_paused

    with gc_paused():
        lowering = _Lowering(fetches, targets, feeds, variable_types, rng_seeds)
        lowering.ctx.initialized = dict(initialized or {})
        lowering.ran = list(ran)
        return lowering.run()
