"""Executable: a compiled program plus what is needed to call it from Python.

One ctypes call per run. Before it: bind the shape symbols from the arguments' shapes
(checking static dims, ranks, dtypes and the equalities the compiler relied on), compute
the output shapes from the symbols and allocate them, and size the temp arena (kept and
grown across runs). After it: turn a non-zero status into the error the program reported.

Thread-safe: what one call writes (the slots array, the dims array, the temp arena, the
error record, the argument pointer cache) lives in a ``_CallContext`` taken from a free
list for the call and put back after it, so threads run calls at the same time, each on
its own context (the ctypes call releases the GIL). One thread reuses one context.

An Executable needs no IR: a ``Signature`` (arguments, results, op locations) says all it
needs of the function, and ``describe()`` / ``from_description()`` carry the rest as plain
data, so the persistent step cache (tfc/runtime/step_cache.py) rebuilds one from disk.
"""
from __future__ import annotations

import ctypes
import hashlib
import marshal
import types
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from tfc import ir
from tfc.frontend import errors
from tfc.frontend.errors import InvalidArgumentError
from tfc import program_errors as checks
from tfc.ir.dims import Dim, dim_str, parse_dim

ARENA_ALIGN = 64  # the arena's base address is rounded up to this (buffer_assign.ALIGN)


class ShapeBindingError(ValueError):
    """An argument's shape or dtype does not fit the compiled program."""


def _compile_dim(d: Dim, symbols: list):
    """A Python function of the symbol values tuple computing dim ``d``."""
    if isinstance(d, int):
        return lambda values, d=d: d
    text = _rename_symbols(dim_str(d), {name: f"v[{i}]" for i, name in enumerate(symbols)})
    return eval(f"lambda v: {text}")  # noqa: S307 - text is generated from a canonical dim expression


def _rename_symbols(text: str, names: dict) -> str:
    """``text`` with every symbol renamed at once (renaming one after another turned
    ``s10`` into ``s3`` and then, as symbol s3, into ``s1``: a wrong output shape)."""
    import re

    return re.sub(r"\b[A-Za-z_][A-Za-z_0-9]*\b", lambda m: names.get(m.group(0), m.group(0)), text)


@dataclass
class ArgSpec:
    """How one function argument is checked and bound."""

    name: str
    elem: ir.ElemType
    shape: tuple  # dims: int or SymExpr
    is_ref: bool
    binders: list = field(default_factory=list)  # [(axis, symbol position)]
    checks: list = field(default_factory=list)  # [(axis, dim function)] for non-plain dims


class Signature:
    """What an Executable needs to know of its function: each argument (name, element type,
    shape with symbols, ref or not), each result (element type, shape) and where each
    top-level op came from (for errors). Built from an ``ir.Function`` or from the plain
    description the persistent step cache keeps (``to_json`` / ``from_json``)."""

    __slots__ = ("args", "results", "_locations", "_function")

    def __init__(self, args: Sequence[tuple], results: Sequence[tuple], locations: Optional[Sequence] = None,
                 function: Optional[ir.Function] = None):
        self.args = [(name, elem, tuple(shape), bool(is_ref)) for name, elem, shape, is_ref in args]
        self.results = [(elem, tuple(shape)) for elem, shape in results]
        self._locations = None if locations is None else list(locations)
        self._function = function

    @classmethod
    def from_function(cls, function: ir.Function) -> "Signature":
        args = []
        for arg in function.args:
            is_ref = isinstance(arg.type, ir.RefType)
            t = arg.type.tensor if is_ref else arg.type
            args.append((arg.name_hint or "arg", t.elem, t.shape, is_ref))
        return cls(args, [(t.elem, t.shape) for t in function.result_types], None, function)

    @property
    def locations(self) -> list:
        """Per op of ``indexed_ops`` (the top-level ops, then those inside if/while regions):
        (name, file, line), or None without a name."""
        if self._locations is None:
            from tfc.passes.buffer_assign import indexed_ops

            ops = indexed_ops(self._function) if self._function else []
            self._locations = [(op.loc.name, op.loc.file, op.loc.line) if op.loc is not None and op.loc.name
                               else None for op in ops]
        return self._locations

    def to_json(self) -> dict:
        return {"args": [[name, elem.value, [_dim_json(d) for d in shape], is_ref]
                         for name, elem, shape, is_ref in self.args],
                "results": [[elem.value, [_dim_json(d) for d in shape]] for elem, shape in self.results],
                "locations": [list(loc) if loc is not None else None for loc in self.locations]}

    @classmethod
    def from_json(cls, data: dict) -> "Signature":
        return cls([(name, ir.ElemType(elem), [dim_from_json(d) for d in shape], is_ref)
                    for name, elem, shape, is_ref in data["args"]],
                   [(ir.ElemType(elem), [dim_from_json(d) for d in shape]) for elem, shape in data["results"]],
                   [tuple(loc) if loc is not None else None for loc in data["locations"]])


def _dim_json(d: Dim):
    """A dim in a JSON description: an int, or its canonical text (``dim_from_json`` reads it)."""
    return d if isinstance(d, int) else dim_str(d)


def dim_from_json(value) -> Dim:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"not a dimension: {value!r}")
    return value if isinstance(value, int) else parse_dim(value)


class _CallContext:
    """The memory one call of a program writes: never shared by two calls at once."""

    __slots__ = ("slots", "dims", "error", "arena", "arena_address", "cache", "runs")

    def __init__(self, num_args: int, num_outputs: int, num_symbols: int):
        self.slots = (ctypes.c_void_p * (num_args + num_outputs + 2))()
        self.dims = (ctypes.c_int64 * max(1, num_symbols))()
        self.error = np.zeros(checks.RECORD_SIZE, dtype=np.int64)
        self.slots[num_args + num_outputs + 1] = self.error.__array_interface__["data"][0]
        self.arena = np.empty(0, dtype=np.uint8)
        self.arena_address = 0
        self.cache = [None] * num_args  # per argument: (the last array, its data address)
        self.runs = 0

    def grow_arena(self, size: int, arena_slot: int) -> None:
        """An arena of at least ``size`` usable bytes, its base aligned to ARENA_ALIGN."""
        self.arena = np.empty(size + ARENA_ALIGN, dtype=np.uint8)  # the slack for aligning the base is not usable
        address = self.arena.__array_interface__["data"][0]
        self.arena_address = address + (-address % ARENA_ALIGN)
        self.slots[arena_slot] = self.arena_address


class Executable:
    """Runs compiled code: ``run(args)`` takes one numpy array per function argument.

    Thread-safe: several threads may call ``run`` at once; each call has its own slots,
    dims, arena and error record (a ``_CallContext`` from a free list), so calls run in
    parallel. Arguments that are program state (refs) are not guarded: callers that share
    them serialise their calls (Session.run does)."""

    def __init__(self, function, code, symbols: list, arena_bytes: Dim, op_names: Sequence[str],
                 constraints: Sequence = (), source_ops: Optional[dict] = None, fast_path: Optional[bytes] = None,
                 host_calls: Sequence = ()):
        """``function``: the compiled ``ir.Function``, or its ``Signature`` (a program loaded
        from the persistent cache has no IR); ``fast_path``: see ``_generate_fast_path``;
        ``host_calls``: the program's (``Program.host_calls``; see host_calls.py)."""
        if isinstance(function, Signature):
            self.function, self.signature = None, function
        else:
            self.function, self.signature = function, Signature.from_function(function)
        self.code = code
        self.symbols = list(symbols)
        self.arena_bytes = arena_bytes
        self.op_names = list(op_names)
        self.source_ops = source_ops or {}
        # name -> the graph op of that name (set by a Session): errors then show its traceback
        self.op_resolver: Optional[Callable[[str], object]] = None
        self.args = [self._arg_spec(*arg) for arg in self.signature.args]
        self.outputs = [(elem.np_dtype, [_compile_dim(d, self.symbols) for d in shape])
                        for elem, shape in self.signature.results]
        self._arena_size = _compile_dim(arena_bytes, self.symbols)
        self.constraints = list(constraints)
        self._arena_slot = len(self.args) + len(self.outputs)
        self._contexts: list = []  # every context made (for ``runs``)
        self._free: list = []  # the contexts no call is using; list.pop/append are atomic
        self._fast = self._generate_fast_path(fast_path)
        self._no_kept = (None,) * len(self.outputs)  # (a caller's kept output buffers: runtime/fast_run.py)
        self.host_calls = None
        if host_calls:
            from .host_calls import HostCalls, graph_handler

            self.host_calls = HostCalls(list(host_calls), graph_handler(self._resolve_op))
            self.host_calls.install(code)

    # -- the plain description (the persistent step cache) -----------------------------------
    def describe(self) -> dict:
        """Everything but the code, as JSON-able data (``from_description`` rebuilds it);
        constraints name their graph op."""
        locations = self.signature.locations
        # an op's name is mostly its location's: null then
        op_names = [None if i < len(locations) and locations[i] is not None and locations[i][0] == name else name
                    for i, name in enumerate(self.op_names)]
        return {"signature": self.signature.to_json(), "symbols": self.symbols,
                "host_calls": self.host_calls.describe() if self.host_calls is not None else [],
                "arena_bytes": _dim_json(self.arena_bytes), "op_names": op_names,
                "constraints": [[_dim_json(c.a), _dim_json(c.b), getattr(c.op, "name", None),
                                 [[_dim_json(d) for d in shape] for shape in c.shapes]] for c in self.constraints]}

    @classmethod
    def from_description(cls, data: dict, code, op_resolver: Optional[Callable[[str], object]] = None,
                         fast_path: Optional[bytes] = None) -> "Executable":
        """The executable ``describe`` described, running ``code``; constraint ops by name;
        ``fast_path``: its ``fast_path_code()``, when kept."""
        from tfc.passes.lower import Constraint

        resolve = op_resolver or (lambda name: None)
        constraints = [Constraint(dim_from_json(a), dim_from_json(b), resolve(op) if op is not None else None,
                                  tuple(tuple(dim_from_json(d) for d in shape) for shape in shapes))
                       for a, b, op, shapes in data["constraints"]]
        signature = Signature.from_json(data["signature"])
        locations = signature.locations
        op_names = [locations[i][0] if name is None else name for i, name in enumerate(data["op_names"])]
        executable = cls(signature, code, list(data["symbols"]), dim_from_json(data["arena_bytes"]), op_names,
                         constraints, fast_path=fast_path, host_calls=data.get("host_calls", ()))
        executable.op_resolver = op_resolver
        return executable

    def _new_context(self) -> _CallContext:
        context = _CallContext(len(self.args), len(self.outputs), len(self.symbols))
        self._contexts.append(context)
        return context

    @property
    def runs(self) -> int:
        """Calls that reached the compiled code, over all threads."""
        return sum(context.runs for context in list(self._contexts))

    # -- profiling --------------------------------------------------------------------------
    def enable_profile(self, kernels: Sequence[tuple], descriptions: Sequence[str]) -> None:
        """Point the code's counters (compiled with ``profile=True``) at a host array."""
        from tfc.codegen.program import PROFILE_GLOBAL

        self._profile_rows = [(name, what) for (name, _), what in zip(kernels, descriptions)]
        self._profile = np.zeros((max(1, len(kernels)), 2), dtype=np.int64)
        address = self.code.engine.get_global_value_address(PROFILE_GLOBAL)
        ctypes.c_void_p.from_address(address).value = self._profile.ctypes.data

    def profile(self) -> list:
        """[(kernel, what it computes, calls, total seconds)], slowest first."""
        if not hasattr(self, "_profile"):
            raise RuntimeError("this program was not compiled with profile=True")
        rows = [(name, what, int(calls), total / 1e9)
                for (name, what), (total, calls) in zip(self._profile_rows, self._profile)]
        return sorted(rows, key=lambda row: -row[3])

    def reset_profile(self) -> None:
        self._profile[:] = 0

    def _arg_spec(self, name: str, elem: ir.ElemType, shape: tuple, is_ref: bool) -> ArgSpec:
        spec = ArgSpec(name, elem, tuple(shape), is_ref)
        for axis, d in enumerate(shape):
            if isinstance(d, int):
                continue
            if d.is_symbol() and dim_str(d) in self.symbols:
                spec.binders.append((axis, self.symbols.index(dim_str(d))))
            else:
                spec.checks.append((axis, _compile_dim(d, self.symbols), dim_str(d)))
        return spec

    # -- running ------------------------------------------------------------------------
    def bind(self, values: Sequence[np.ndarray]) -> tuple:
        """The symbol values, after checking every argument against its type."""
        if len(values) != len(self.args):
            raise ShapeBindingError(f"expected {len(self.args)} arguments, got {len(values)}")
        bound: list = [None] * len(self.symbols)
        for spec, value in zip(self.args, values):
            if value.dtype != spec.elem.np_dtype:
                raise ShapeBindingError(f"argument '{spec.name}' must be {spec.elem.np_dtype}, got {value.dtype}")
            if value.ndim != len(spec.shape):
                raise ShapeBindingError(f"argument '{spec.name}' must have rank {len(spec.shape)}, got shape "
                                        f"{value.shape}")
            for axis, d in enumerate(spec.shape):
                if isinstance(d, int) and value.shape[axis] != d:
                    self._mismatch(spec, value, axis, d)
            for axis, position in spec.binders:
                size = value.shape[axis]
                if bound[position] is None:
                    bound[position] = size
                elif bound[position] != size:
                    self._mismatch(spec, value, axis, bound[position])
        for spec, value in zip(self.args, values):
            for axis, fn, text in spec.checks:
                if fn(bound) != value.shape[axis]:
                    self._mismatch(spec, value, axis, fn(bound))
        return tuple(bound)

    def _mismatch(self, spec: ArgSpec, value, axis: int, expected) -> None:
        for c in self.constraints:
            names = {dim_str(c.a), dim_str(c.b)}
            d = spec.shape[axis]
            if not isinstance(d, int) and dim_str(d) in names and c.shapes:
                raise InvalidArgumentError(None, c.op, f"Incompatible shapes: {_shape_text(c.shapes[0])} vs. "
                                                       f"{_shape_text(c.shapes[1])} (at run time, "
                                                       f"'{spec.name}' has shape {list(value.shape)})")
        raise ShapeBindingError(f"argument '{spec.name}' dim {axis} is {value.shape[axis]}, but the program "
                                f"needs {expected} (shape {list(value.shape)} vs. "
                                f"[{', '.join(dim_str(d) for d in spec.shape)}])")

    def _generate_fast_path(self, compiled: Optional[bytes] = None):
        """A Python function specialised to this program's signature: check the arguments
        (returning None on any mismatch, so ``run`` reports it with the slow, detailed
        path), bind the symbols, allocate the outputs and fill the call's slots and dims.

        ``compiled``: a ``fast_path_code()`` of an executable with this signature (the
        step cache keeps it: compiling the source of a large signature takes ~30 ms); used
        only when it was compiled from exactly this source."""
        source, env = self._fast_path_source()
        digest = hashlib.sha256(source.encode()).digest()
        self._fast_digest = digest
        if compiled is not None and compiled[:len(digest)] == digest:
            try:
                code = marshal.loads(compiled[len(digest):])
            except (EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, types.CodeType) and code.co_name == "fast":
                return types.FunctionType(code, env, "fast")
        namespace: dict = {}
        exec(source, env, namespace)  # noqa: S102 - code generated from the program's own signature
        return namespace["fast"]

    def fast_path_code(self) -> bytes:
        """The compiled fast path, for ``_generate_fast_path(compiled=...)`` in another process
        (same Python: the step cache's key has its version)."""
        return self._fast_digest + marshal.dumps(self._fast.__code__)

    def _fast_path_source(self) -> tuple:
        """(source of ``fast``, its globals)."""
        lines = ["def fast(values, slots, dims_array, cache, kept):"]
        names = [f"v{i}" for i in range(len(self.args))]
        if names:
            lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = values")
        symbol_names = [f"s{i}" for i in range(len(self.symbols))]
        bound: set = set()
        env = {"np_empty": np.empty, "address": _address}
        for i, (spec, name) in enumerate(zip(self.args, names)):
            env[f"D{i}"] = spec.elem.np_dtype
            lines.append(f"    if {name}.dtype != D{i} or {name}.ndim != {len(spec.shape)}: return None")
            lines.append(f"    sh = {name}.shape")
            positions = dict(spec.binders)
            for axis, d in enumerate(spec.shape):
                if isinstance(d, int):
                    lines.append(f"    if sh[{axis}] != {d}: return None")
                elif axis in positions:
                    symbol = symbol_names[positions[axis]]
                    if symbol in bound:
                        lines.append(f"    if sh[{axis}] != {symbol}: return None")
                    else:
                        lines.append(f"    {symbol} = sh[{axis}]")
                        bound.add(symbol)
        for i, spec in enumerate(self.args):
            for axis, fn, text in spec.checks:
                lines.append(f"    if v{i}.shape[{axis}] != {self._python_dim(text)}: return None")
        out_names = []
        for j, (elem, result_shape) in enumerate(self.signature.results):
            env[f"O{j}"] = elem.np_dtype
            shape = ", ".join(self._python_dim(dim_str(d)) for d in result_shape)
            lines.append(f"    o{j} = kept[{j}]")
            lines.append(f"    if o{j} is None:")
            lines.append(f"        o{j} = np_empty(({shape}{',' if len(result_shape) == 1 else ''}), O{j})")
            lines.append(f"        slots[{len(names) + j}] = address(o{j})")
            out_names.append(f"o{j}")
        for i, name in enumerate(names):
            lines.append(f"    c = cache[{i}]")
            lines.append(f"    if c is not None and c[0] is {name}: slots[{i}] = c[1]")
            lines.append("    else:")
            lines.append(f"        p = address({name})")
            lines.append(f"        cache[{i}] = ({name}, p)")
            lines.append(f"        slots[{i}] = p")
        for k, symbol in enumerate(symbol_names):
            lines.append(f"    dims_array[{k}] = {symbol}")
        symbols_tuple = ", ".join(symbol_names) + ("," if len(symbol_names) == 1 else "")
        lines.append(f"    return ({symbols_tuple}), [{', '.join(out_names)}]")
        return "\n".join(lines), env

    def _python_dim(self, text: str) -> str:
        return _rename_symbols(text, {name: f"s{i}" for i, name in enumerate(self.symbols)})

    def run(self, values: Sequence[np.ndarray]) -> list:
        """One call on one array per function argument; returns the output arrays."""
        free = self._free
        try:
            context = free.pop()
        except IndexError:
            context = self._new_context()
        try:
            outputs = self.run_on(values, context, self._no_kept) if len(values) == len(self.args) else None
            return self._run_checked(values, context) if outputs is None else outputs
        finally:
            free.append(context)

    def run_on(self, values: Sequence[np.ndarray], context: _CallContext, kept: tuple) -> Optional[list]:
        """One call on ``context`` through the generated fast path, the results written to
        ``kept``'s buffers where it has one (and whose addresses ``context`` holds), else
        to new arrays; None, with nothing run, when the arguments do not fit it."""
        fast = self._fast(values, context.slots, context.dims, context.cache, kept)
        if fast is None:
            return None
        bound, outputs = fast
        arena_size = self._arena_size(bound)
        if context.arena.size < arena_size + ARENA_ALIGN:
            context.grow_arena(arena_size, self._arena_slot)
        status = self.code.entry(context.slots, context.dims)
        context.runs += 1
        if status != 0:
            self._raise(status, context.error)
        return outputs

    def _run_checked(self, values: Sequence[np.ndarray], context: _CallContext) -> list:
        """The slow path: explains why arguments do not fit (bind raises)."""
        bound = self.bind(values)
        outputs = [np.empty([f(bound) for f in dims], dtype=dtype) for dtype, dims in self.outputs]
        arena_size = self._arena_size(bound)
        if context.arena.size < arena_size + ARENA_ALIGN:
            context.grow_arena(arena_size, self._arena_slot)
        slots = context.slots
        position = 0
        for value in values:
            slots[position] = _address(value)
            position += 1
        for out in outputs:
            slots[position] = out.__array_interface__["data"][0]
            position += 1
        for i, size in enumerate(bound):
            context.dims[i] = size
        status = self.code.entry(slots, context.dims)
        context.runs += 1
        if status != 0:
            self._raise(status, context.error)
        return outputs

    def _raise(self, status: int, error: np.ndarray) -> None:
        """The error a failed run reported (tfc/program_errors.py), naming the op and its source,
        or the exception a host call raised."""
        if self.host_calls is not None:
            failure = self.host_calls.take_failure()
            if failure is not None:
                raise failure
        op_index = int(error[checks.OP])
        op_name = self.op_names[op_index] if 0 <= op_index < len(self.op_names) else "?"
        source = self.source_ops.get(op_index) or self._located_op(op_index)
        described = checks.describe(status, error)
        if described is None:
            described = "InvalidArgumentError", f"compiled program failed with status {status}"
        error_class, message = described
        raise getattr(errors, error_class)(None, source, f"{message} (in '{op_name}')")

    def _resolve_op(self, name: str):
        return self.op_resolver(name) if self.op_resolver is not None else None

    def _located_op(self, op_index: int):
        """The graph op an error blames, from the IR location of the top-level op (its name
        and file:line), when the caller gave no source op."""
        locations = self.signature.locations
        loc = locations[op_index] if 0 <= op_index < len(locations) else None
        if loc is None:
            return None
        name, file, line = loc
        graph_op = self.op_resolver(name) if self.op_resolver is not None else None
        if graph_op is not None:
            return graph_op
        return _LocatedOp(name, [(file, line, "?")] if file else [])


class _LocatedOp:
    """What an error needs of the op it blames: its name and where it was defined."""

    def __init__(self, name: str, frames: list):
        self.name = name
        self._user_frames = frames


_ADDRESS_OF = ctypes.addressof
_BYTES_OF = ctypes.c_char.from_buffer


def _address(array: np.ndarray) -> int:
    """The data address of an array (the ctypes route is 3x faster than __array_interface__,
    which remains for read-only and empty arrays). The program reads the memory as a
    C-ordered block for as long as it runs, so a strided view (it would read the wrong
    elements) and a numpy scalar (its __array_interface__ is a temporary copy, freed
    before the program reads it) are refused."""
    try:
        return _ADDRESS_OF(_BYTES_OF(array))
    except (TypeError, ValueError):
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise ShapeBindingError(f"a program argument must be a C-contiguous numpy array, got "
                                    f"{'a strided array' if isinstance(array, np.ndarray) else type(array).__name__}"
                                    " (np.ascontiguousarray makes one)") from None
        return array.__array_interface__["data"][0]


def _shape_text(shape) -> str:
    return "[" + ",".join(dim_str(d) if not isinstance(d, int) else str(d) for d in shape) + "]"
