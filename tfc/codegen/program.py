"""The program: ``i32 tfc_main(i8** args, i64* dims)`` calling one kernel per top-level op.

``args`` layout (the runtime and AOT header follow it):
  [function arguments (feeds and refs, in IR order)..., outputs..., arena, error record]
and, with ``external_constants=True``, one more slot: the weights (see below).
``dims`` holds the values of the shape symbols in ``program_symbols`` order.
The error record is ``i64[RECORD_SIZE]``; a non-zero return value is the error
code. Codes, record slots and messages: tfc/program_errors.py.

Constants are private globals of the module by default (the JIT). With
``external_constants=True`` (ahead-of-time artifacts) every constant of at least
``external_min_bytes`` bytes is instead read through the weights pointer passed in the
last ``args`` slot: ``weights_layout()`` gives each one's offset (64-byte aligned, from
the pointer, which must itself be 64-byte aligned) and ``weights_blob()`` the bytes.
Kernels reach it through ``dims``: the entry copies the caller's dims into a local array
with one extra element, the weights address, and passes that array on.
"""
from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import Dim, SymExpr, ordered_terms
from tfc.passes.buffer_assign import parse_buffer, value_bytes

from .kernel import Kernel
from .kernel_key import kernel_key
from .llvm_util import I1, I8, I8P, I32, I64, I64P, CodegenError, const_i64, floor_div, intrinsic, storage_type

EXTERNAL_MIN_BYTES = 256  # with external_constants: smaller constants stay in the module
WEIGHTS_ALIGN = 64
PARALLEL_WORK = 1 << 17  # element-operations below which a kernel runs on the calling thread
PROFILE_GLOBAL = "tfc_profile_counters"  # i64*: 2 per kernel call site (ns, calls)
CLOCK_MONOTONIC = 1  # Linux
CHECK_SHARING_ENV = "TFC_CHECK_KERNEL_SHARING"  # "1": emit every kernel and check shared ones agree


def _symbol_key(name: str) -> tuple:
    match = re.fullmatch(r"([A-Za-z_]+)(\d+)", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)


def program_symbols(function: ir.Function) -> list:
    """Symbols bound by the arguments, in the order of the ``dims`` array."""
    names = set()
    for arg in function.args:
        t = arg.type.tensor if isinstance(arg.type, ir.RefType) else arg.type
        for d in t.shape:
            if isinstance(d, SymExpr) and d.is_symbol():
                names |= d.symbols()
    return sorted(names, key=_symbol_key)


@dataclass
class SharedKernel:
    """A kernel emitted once and called for every op with the same key: its function, how
    it is dispatched, and its params as positions in the op's (results + operands)."""

    fn: ll.Function
    parallel_extent: Optional[Dim]
    work_per_index: Dim
    may_fail: bool
    positions: Optional[list]


class Program:
    """Emits the LLVM module for a planned (fused, buffer-assigned) IR function."""

    def __init__(self, function: ir.Function, entry_name: str = "tfc_main", external_constants: bool = False,
                 external_min_bytes: int = EXTERNAL_MIN_BYTES, vector_bits: Optional[int] = None,
                 profile: bool = False):
        from .target import host_target

        # profile: time every kernel call (clock_gettime around it) into the counters
        # array the host points PROFILE_GLOBAL at; profile_kernels[i] = (kernel, op index).
        self.profile = profile
        self.profile_kernels: list = []
        self.function = function
        self.vector_bits = vector_bits or host_target().vector_bits  # the target's widest float vector
        self.external_constants = external_constants
        self.external_min_bytes = external_min_bytes
        self.entry_name = entry_name
        self.module = ll.Module(name="tfc")
        self.symbols = program_symbols(function)
        self.symbol_index = {name: i for i, name in enumerate(self.symbols)}
        self.ops = [op for op in function.body.ops if op.name != "return"]
        from tfc.passes.buffer_assign import indexed_ops

        self.indexed_ops = indexed_ops(function)  # errors and profiles name ops by index in this list
        self.op_index = {op: i for i, op in enumerate(self.indexed_ops)}
        self.returned = list(function.body.terminator.operands)
        self.num_args = len(function.args)
        self.arena_slot = self.num_args + len(self.returned)
        self.error_slot = self.arena_slot + 1
        self.weights_slot = self.error_slot + 1 if external_constants else None
        self.num_slots = self.error_slot + (2 if external_constants else 1)
        self._buffers: dict = {}
        self._constants: dict = {}  # id(op) or content -> private global, or byte offset in the weights
        self._data: dict = {}  # content -> private global (data_buffer)
        self.constant_ops: dict = {}  # id(op) -> the constant op of a ("const", id) buffer
        self._external: list = []  # (offset, array, op) of constants read through the weights pointer
        self._weights_size = 0
        self._kernel_count = 0
        self._kernel_texts: dict = {}  # a kernel's LLVM text, its name blanked -> its function
        self._shared: dict = {}  # kernel_key -> SharedKernel
        self.emission_seconds: list = []  # (op index, seconds) of each op whose kernel was emitted
        self.kernel_ops: dict = {}  # kernel function name -> the index of the first op calling it
        self.kernel_levels: dict = {}  # kernel function name -> LLVM optimisation level (llvm_level)
        self._recording = self._recording_buffers = None  # kernels called while emitting one op
        # (graph op names, graph tensor names, [(element type, rank)]) of each host_call, in order;
        # only a program run by this process's runtime can call back (not AOT, not the GPU)
        self.host_calls: list = []
        self.host_calls_allowed = not external_constants
        self.check_sharing = os.environ.get(CHECK_SHARING_ENV) == "1"
        self._assign_buffers()

    # -- buffers ------------------------------------------------------------------------------
    def _assign_buffers(self) -> None:
        from tfc.passes.buffer_assign import planned_ops, region_arg_targets

        for i, arg in enumerate(self.function.args):
            self._buffers[arg] = ("arg", i)
        for op in planned_ops(self.function.body):
            if op.name == "yield":
                continue
            annotations = op.attrs.get("_buf")
            if op.results and annotations is None:
                raise CodegenError(f"op '{op.name}' has no buffer assignment (run buffer_assign first)")
            for result, annotation in zip(op.results, annotations or []):
                kind, where = parse_buffer(annotation)
                if kind == "alias":
                    self._buffers[result] = self._buffers[op.operands[0]]
                elif kind == "const":
                    self._buffers[result] = ("const", id(op))
                    self.constant_ops[id(op)] = op
                elif kind == "out":
                    self._buffers[result] = ("out", where)
                elif kind == "ref":
                    self._buffers[result] = ("arg", where)
                else:
                    self._buffers[result] = ("arena", str(where), where)
            for arg, target in region_arg_targets(op):
                self._buffers[arg] = self._buffers[target]

    def buffer_of(self, value: ir.Value) -> tuple:
        return self._buffers[value]

    def constant_pointer(self, op: ir.Operation, kernel: Kernel):
        """A pointer (in ``kernel``) to a constant's data: a private global or in the weights."""
        where = self._constant_location(op)
        elem_pointer = storage_type(op.result.type.elem).as_pointer()
        if isinstance(where, int):
            base = getattr(kernel, "_weights_base", None)
            if base is None:
                address = kernel.pro.load(kernel.pro.gep(kernel.dims_arg, [const_i64(len(self.symbols))]))
                base = kernel._weights_base = kernel.pro.inttoptr(address, I8P, name="weights")
            return kernel.pro.bitcast(kernel.pro.gep(base, [const_i64(where)], inbounds=True), elem_pointer)
        return kernel.pro.bitcast(where, elem_pointer)

    def data_buffer(self, array: np.ndarray) -> tuple:
        """A buffer holding ``array`` (a small private constant of the module, shared by
        equal contents) to pass a kernel as a parameter: values that would otherwise be
        compiled into the kernel, making every instance a different kernel."""
        content = (array.dtype.str, array.shape, array.tobytes())
        if content not in self._data:
            self._data[content] = self._private_bytes(f"data.{len(self._data)}", content[2], 16)
        return ("data", content)

    def _private_bytes(self, name: str, data: bytes, align: int):
        """A private constant global of the module holding ``data`` (a byte for empty data)."""
        data = bytearray(data) or bytearray(1)
        byte_array = ll.ArrayType(I8, len(data))
        where = ll.GlobalVariable(self.module, byte_array, name=name)
        where.linkage = "private"
        where.global_constant = True
        where.align = align
        where.initializer = ll.Constant(byte_array, data)
        return where

    def _constant_array(self, op: ir.Operation) -> np.ndarray:
        array = np.ascontiguousarray(op.attrs["value"])
        shape = tuple(op.result.type.shape)
        if array.size == 1 and array.shape != shape:
            array = np.full(shape, array.reshape(-1)[0], dtype=array.dtype)
        return array

    def _constant_location(self, op: ir.Operation):
        """The private global holding a constant, or its byte offset in the external weights."""
        if id(op) in self._constants:
            return self._constants[id(op)]
        array = self._constant_array(op)
        content = (array.dtype.str, array.shape, array.tobytes())  # equal constants share storage
        if content in self._constants:
            self._constants[id(op)] = self._constants[content]
            return self._constants[content]
        if self.external_constants and array.nbytes >= self.external_min_bytes:
            where = self._weights_size
            self._external.append((where, array, op))
            self._weights_size = where + -(-array.nbytes // WEIGHTS_ALIGN) * WEIGHTS_ALIGN
        else:
            where = self._private_bytes(f"const.{len(self._constants)}", content[2], 64)
        self._constants[id(op)] = self._constants[content] = where
        return where

    def _constant_global(self, op: ir.Operation):
        where = self._constant_location(op)
        if isinstance(where, int):
            raise CodegenError("this constant lives in the external weights, not in a global")
        return where

    # -- external weights (external_constants=True; complete after emit()) ---------------------
    def weights_layout(self) -> list:
        """One dict per external constant: offset, nbytes, dtype, shape, name (its source op)."""
        out = []
        for offset, array, op in self._external:
            name = op.loc.name if op.loc is not None and op.loc.name else f"constant.{len(out)}"
            out.append({"name": name, "offset": offset, "nbytes": int(array.nbytes), "dtype": array.dtype.str,
                        "shape": list(array.shape)})
        return out

    def weights_blob(self) -> bytes:
        """The external constants at their offsets (zero padding between them)."""
        blob = bytearray(self._weights_size)
        for offset, array, _ in self._external:
            blob[offset:offset + array.nbytes] = array.tobytes()
        return bytes(blob)

    # -- entry --------------------------------------------------------------------------------
    def emit(self) -> str:
        """Build the module (``build``) and return its LLVM IR text."""
        self.build()
        return str(self.module)

    def build(self) -> None:
        """Emit the entry and its kernels into ``self.module``."""
        from . import kernels

        entry = ll.Function(self.module, ll.FunctionType(I32, [I8P.as_pointer(), I64P]), name=self.entry_name)
        # The entry is glue (buffer addresses, one call per kernel), linear in the program's
        # size: LLVM compiles it without optimisation, so big programs do not pay O3 for it.
        entry.attributes.add("optnone")
        entry.attributes.add("noinline")
        b = ll.IRBuilder(entry.append_basic_block("entry"))
        args, dims = entry.args
        if self.external_constants:
            dims = self._dims_with_weights(b, args, dims)
        self._main = _MainContext(self, b, args, dims)
        for index, op in enumerate(self.ops):
            kernels.emit_op(self, self._main, index, op)
        self._copy_outputs()
        b.ret(ll.Constant(I32, 0))

    def kernel_emitter(self, kind: str):
        """The target's own emitter for a kernel family or special op (None: the CPU's)."""
        return None

    def control_emitter(self, name: str):
        """The target's own emitter of an ``if`` or ``while`` (None: the CPU entry's)."""
        return None

    def _dims_with_weights(self, b: ll.IRBuilder, args, dims):
        """A local copy of ``dims`` with the weights address appended (what kernels receive)."""
        count = len(self.symbols)
        local = b.alloca(ll.ArrayType(I64, count + 1), name="dims.local")
        for i in range(count):
            value = b.load(b.gep(dims, [const_i64(i)]))
            b.store(value, b.gep(local, [const_i64(0), const_i64(i)]))
        weights = b.load(b.gep(args, [const_i64(self.weights_slot)]))
        b.store(b.ptrtoint(weights, I64), b.gep(local, [const_i64(0), const_i64(count)]))
        return b.gep(local, [const_i64(0), const_i64(0)])

    def new_kernel(self, op: ir.Operation, values: list, extra: tuple = ()) -> tuple:
        """A Kernel whose params are the distinct buffers of ``values`` (outputs first),
        then the ``extra`` buffers (``data_buffer``'s)."""
        params = []
        for buffer in [self.buffer_of(v) for v in values] + list(extra):
            if buffer not in params:
                params.append(buffer)
        name = f"k{self._kernel_count}.{op.name}"
        self._kernel_count += 1
        return Kernel(self, name, params), params

    def call_kernel(self, kernel: Kernel, params: list, index: int, may_fail: bool = False) -> None:
        kernel.finish()
        kernel.fn = self._deduplicate(kernel.fn)
        self.kernel_ops.setdefault(kernel.fn.name, index)
        self.kernel_levels.setdefault(kernel.fn.name, llvm_level(self.indexed_ops[index]))
        if self._recording is not None:
            values = self._recording_buffers
            positions = [values.index(p) for p in params] if all(p in values for p in params) else None
            self._recording.append(SharedKernel(kernel.fn, kernel.parallel_extent, kernel.work_per_index,
                                                may_fail, positions))
        self._call(kernel, params, index, may_fail)

    def emit_shared(self, op: ir.Operation, index: int, emit) -> None:
        """``emit(self, index, op)``, or a call of the kernel emitted for an earlier op with
        the same structural key (see kernel_key.py)."""
        buffers = [self.buffer_of(v) for v in (*op.results, *op.operands)]
        key = kernel_key(op, buffers)
        shared = self._shared.get(key)
        if shared is not None and not self.check_sharing:
            params = [buffers[position] for position in shared.positions]
            self._call(shared, params, index, shared.may_fail)
            return
        self._recording, self._recording_buffers = [], buffers
        started = time.perf_counter()
        try:
            emit(self, index, op)
            recorded = self._recording
        finally:
            self._recording = self._recording_buffers = None
        self.emission_seconds.append((index, time.perf_counter() - started))
        if len(recorded) != 1 or recorded[0].positions is None:
            return
        if shared is not None and recorded[0].fn is not shared.fn:
            raise CodegenError(f"kernel sharing: '{op.name}' at op {index} has the key of {shared.fn.name} "
                               f"but emits {recorded[0].fn.name}")
        self._shared.setdefault(key, recorded[0])

    def _call(self, kernel, params: list, index: int, may_fail: bool) -> None:
        """Call ``kernel`` (a Kernel or SharedKernel) on ``params`` from the entry."""
        main = self._main
        pointers = [main.pointer(p) for p in params]
        started = main.now() if self.profile else None
        if kernel.parallel_extent is None:
            status = main.b.call(kernel.fn, pointers + [main.dims, main.error_record, const_i64(0), const_i64(0)])
        else:
            status = self._dispatch(kernel, pointers)
        if self.profile:
            self._count(started, kernel.fn.name, index)
        if may_fail:
            failed = main.b.icmp_signed("!=", status, ll.Constant(I32, 0))
            with main.b.if_then(failed, likely=False):
                record = main.error_record
                main.b.store(const_i64(index), main.b.gep(record, [const_i64(1)]))
                main.b.ret(status)

    @property
    def kernel_counts(self) -> tuple:
        """(kernels emitted, distinct kernel functions kept): after ``emit()``."""
        return self._kernel_count, len(self._kernel_texts)

    def _deduplicate(self, fn: ll.Function) -> ll.Function:
        """The first kernel whose LLVM text equals ``fn``'s (but for its name), dropping
        ``fn``; or ``fn`` itself. Structurally identical fusions (the layers of a deep
        model) then share one function, and LLVM optimises and compiles it once."""
        text = str(fn).replace(f"@{fn.get_reference()[1:]}(", "@(", 1)
        original = self._kernel_texts.setdefault(text, fn)
        if original is not fn:
            del self.module.globals[fn.name]
        return original

    def _count(self, started, kernel_name: str, index: int) -> None:
        """counters[k] += (elapsed ns, 1) for this call site."""
        main = self._main
        b = main.b
        slot = len(self.profile_kernels)
        self.profile_kernels.append((kernel_name, index))
        elapsed = b.sub(main.now(), started)
        counters = b.load(main.profile_counters)
        for offset, amount in ((0, elapsed), (1, const_i64(1))):
            pointer = b.gep(counters, [const_i64(2 * slot + offset)])
            b.store(b.add(b.load(pointer), amount), pointer)

    def _dispatch(self, kernel: Kernel, pointers: list):
        """Run a kernel over [0, extent): directly, or in chunks on the pool when large."""
        from .parallel import declare_parallel_for, kernel_task

        main = self._main
        b = main.b
        extent = main.dim(kernel.parallel_extent)
        static_work = _static_product(kernel.parallel_extent, kernel.work_per_index)
        if static_work is not None and static_work < PARALLEL_WORK:  # small at every run: no branch
            return b.call(kernel.fn, pointers + [main.dims, main.error_record, const_i64(0), extent])
        status_slot = main.status_slot
        b.store(ll.Constant(I32, 0), status_slot)

        def run_parallel():
            task, ctx, tasks = kernel_task(self, main, kernel, pointers, extent, status_slot)
            b.call(declare_parallel_for(self.module), [task, ctx, tasks])

        if static_work is not None:
            run_parallel()
            return b.load(status_slot)
        work = b.mul(extent, main.dim(kernel.work_per_index))
        large = b.icmp_signed(">=", work, const_i64(PARALLEL_WORK))
        with b.if_else(large) as (parallel, serial):
            with parallel:
                run_parallel()
            with serial:
                direct = b.call(kernel.fn, pointers + [main.dims, main.error_record, const_i64(0), extent])
                b.store(direct, status_slot)
        return b.load(status_slot)

    def _copy_outputs(self) -> None:
        main = self._main
        for j, value in enumerate(self.returned):
            if self.buffer_of(value) == ("out", j):
                continue
            size = main.bytes_of(value.type)
            main.memcpy(main.pointer(("out", j)), main.pointer(self.buffer_of(value)), size)


def llvm_level(op: ir.Operation) -> int:
    """LLVM's -O level for ``op``'s kernel: 2, or 3 for kernels that reduce (row and input
    fusions, reductions). Measured on this machine: -O2 gives the same speed as -O3 on the
    elementwise, mlp, mlp_train and cnn_train benchmarks and the 100-layer MLP's training
    step, for about 20% less LLVM time per kernel. Reductions keep -O3: their inner loops
    are where O3's extra unrolling could pay (the layernorm row fusion measured the same
    either way), and they are few."""
    if op.name == "fusion":
        return 3 if op.attrs.get("kind") in ("row", "input") else 2
    return 3 if ir.op_info(op.name).category == "reduction" else 2


def _static_product(a: Dim, b: Dim) -> Optional[int]:
    """a * b when both are known at compile time, else None."""
    return a * b if isinstance(a, int) and isinstance(b, int) else None


class _MainContext:
    """Builder state of the entry function: buffer pointers and dims, computed once."""

    def __init__(self, program: Program, builder: ll.IRBuilder, args, dims):
        self.program = program
        self.b = builder
        self.args = args
        self.dims = dims
        self._pointers: dict = {}
        self._dims: dict = {}
        self._slots: dict = {}
        self.error_record = self.b.bitcast(self._slot(program.error_slot), I64P)
        self.status_slot = self.b.alloca(I32, name="status")
        if program.profile:
            self.profile_counters = ll.GlobalVariable(program.module, I64P, name=PROFILE_GLOBAL)
            self.profile_counters.initializer = ll.Constant(I64P, None)
            self.timespec = self.b.alloca(ll.ArrayType(I64, 2), name="timespec")

    @contextlib.contextmanager
    def scope(self):
        """Values computed inside (addresses, dims, loaded slots) are forgotten after: they
        live in a branch or loop body that does not dominate what follows."""
        saved = (dict(self._pointers), dict(self._dims), dict(self._slots))
        try:
            yield
        finally:
            self._pointers, self._dims, self._slots = saved

    def now(self):
        """CLOCK_MONOTONIC in nanoseconds (profiling only)."""
        b = self.b
        clock_gettime = intrinsic(self.program.module, "clock_gettime", I32, [ll.IntType(32), I64P])
        fields = b.bitcast(self.timespec, I64P)
        b.call(clock_gettime, [ll.Constant(ll.IntType(32), CLOCK_MONOTONIC), fields])
        seconds = b.load(fields)
        nanoseconds = b.load(b.gep(fields, [const_i64(1)]))
        return b.add(b.mul(seconds, const_i64(1_000_000_000)), nanoseconds)

    def _slot(self, index: int):
        """args[index], loaded once (in straight-line code: it dominates every later use)."""
        if index not in self._slots:
            self._slots[index] = self.b.load(self.b.gep(self.args, [const_i64(index)]))
        return self._slots[index]

    def dim(self, d: Dim):
        if isinstance(d, int):
            return const_i64(d)
        if d not in self._dims:
            total = None
            for monomial, coeff in ordered_terms(d):
                term = None if coeff == 1 else const_i64(coeff)
                for atom in monomial:
                    factor = self._atom(atom)
                    term = factor if term is None else self.b.mul(term, factor)
                term = const_i64(1) if term is None else term
                total = term if total is None else self.b.add(total, term)
            self._dims[d] = const_i64(0) if total is None else total
        return self._dims[d]

    def _atom(self, atom):
        """A symbol's value (loaded once) or a floor division's."""
        if atom not in self._dims:
            if isinstance(atom, str):
                index = self.program.symbol_index[atom]
                self._dims[atom] = self.b.load(self.b.gep(self.dims, [const_i64(index)]))
            else:
                self._dims[atom] = floor_div(self.b, self.dim(atom.num), self.dim(atom.den))
        return self._dims[atom]

    def bytes_of(self, t) -> object:
        t = t.tensor if isinstance(t, ir.RefType) else t
        return self.dim(value_bytes(t))

    def pointer(self, buffer: tuple):
        if buffer in self._pointers:
            return self._pointers[buffer]
        kind = buffer[0]
        if kind == "arg":
            pointer = self._slot(buffer[1])
        elif kind == "out":
            pointer = self._slot(self.program.num_args + buffer[1])
        elif kind == "arena":
            base = self._slot(self.program.arena_slot)
            pointer = self.b.gep(base, [self.dim(buffer[2])], inbounds=True)
        elif kind == "data":
            pointer = self.b.bitcast(self.program._data[buffer[1]], I8P)
        elif kind == "const":
            op = self.program.constant_ops[buffer[1]]
            where = self.program._constant_location(op)
            if isinstance(where, int):
                base = self._slot(self.program.weights_slot)
                pointer = self.b.gep(base, [const_i64(where)], inbounds=True)
            else:
                pointer = self.b.bitcast(where, I8P)
        else:
            raise CodegenError(f"unknown buffer {buffer}")
        self._pointers[buffer] = pointer
        return pointer

    def memcpy(self, destination, source, size) -> None:
        fn = intrinsic(self.b.module, "llvm.memcpy.p0.p0.i64", ll.VoidType(), [I8P, I8P, I64, I1])
        self.b.call(fn, [destination, source, size, ll.Constant(I1, 0)])
