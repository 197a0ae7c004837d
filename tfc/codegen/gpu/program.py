"""The GPU program: the CPU backend's kernels, each run by a grid of threads, and a plan.

Kernels are the ones the CPU backend emits (the same fused, buffer-planned IR, the same
``Elemental`` index arithmetic and scalar math), except the contraction family (dot,
conv and their output fusions), which has GPU kernels of its own (gpu/contraction.py):
the CPU ones call a thread pool, ``malloc`` and the prebuilt GEMM.

Every kernel declares the independent range of its outermost loop
(``Kernel.parallel_range``: elements of a loop fusion, rows of a reduction, output tiles
of a dot). On the CPU the entry splits that range over a thread pool; here a *grid
function* hands its items to the threads of a CUDA grid, one item per thread per step
of a grid-stride loop::

    i32 grid.K(bufs..., i64* dims, i64* err, i64 extent, i64 thread, i64 threads)
        for (i = thread; i < extent; i += threads)
            if ((status = K(bufs..., dims, err, i, i + 1)) != 0) return status
        return 0

Kernels without a parallel range run as one item on one thread. The grid function is
target-neutral: the PTX entry calls it with the thread's global index
(``ctaid.x * ntid.x + tid.x``), and the host emulation entry calls it for every
``thread`` of the same grid in turn (tests run GPU programs on the CPU this way, so the
index math, grid-stride loops and tails are checked against the evaluator without a GPU).
Items are independent by construction (the CPU pool already runs them in any order on
any thread), so running them one thread at a time is a faithful emulation.

Both entries record a failure as the CPU entry does: the first non-zero status is stored
(``cmpxchg``) in the run's status word and the op's index in the error record.

The host side is the plan (gpu/plan.py): launches, copies, ``if`` and ``while``.
"""
from __future__ import annotations

import re
from llvmlite import ir as ll

from tfc import ir
from tfc import program_errors as checks

from ..llvm_util import I32, I64, I64P, I8P, CodegenError, const_i64, counted_loop
from ..program import Program
from .plan import If, Launch, PlanBuilder, While

ENTRY_PREFIX = "tfc_"
HOST_PREFIX = "host_"  # the host emulation's entries


def entry_name(kernel_name: str) -> str:
    """A PTX-safe entry name for a kernel function (PTX identifiers have no dots)."""
    return ENTRY_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", kernel_name)


class GpuProgram(Program):
    """Emits a program's kernels and grid functions into ``module`` and its ``plan``.

    After ``build()``: ``plan`` (steps), ``constants`` (the bytes of each ``("const", k)``
    buffer), ``kernels`` ({entry name: number of buffer params}) and
    ``module_text(target)`` for ``"ptx"`` or ``"host"`` (the emulation)."""

    def __init__(self, function: ir.Function, arch: str = "sm_90"):
        super().__init__(function, entry_name="tfc_gpu_plan", vector_bits=128)
        self.host_calls_allowed = False
        self.arch = arch
        self.plan: list = []
        self.constants: list = []  # bytes, one per ("const", k)
        self._constant_index: dict = {}
        self.kernels: dict = {}  # entry name -> number of buffer params
        self._grids: dict = {}  # kernel function name -> its grid function
        self._cooperative: dict = {}  # GPU kernel function name -> (its host function, threads per block)
        self._entries: dict = {}  # target -> the functions only its module text holds

    # -- target hooks (see kernels.emit_op) -----------------------------------------------------
    def kernel_emitter(self, kind: str):
        if kind == "contraction":
            from . import contraction

            return contraction.emit
        if kind == "reduction":
            from . import reduction

            return reduction.emit
        if kind == "loop":
            from . import loop

            return loop.emit
        if kind == "row":
            from . import row

            return row.emit
        if kind == "scatter_add":
            from . import scatter

            return scatter.emit
        if kind in ("reduce_window", "select_and_scatter"):
            from . import windows

            return windows.EMITTERS[kind]
        if kind == "call":
            return _refuse_call
        return None

    def control_emitter(self, name: str):
        return {"if": _emit_if, "while": _emit_while}.get(name)

    # -- buffers --------------------------------------------------------------------------------
    def plan_buffer(self, buffer: tuple) -> tuple:
        """A program buffer as the plan names it (see plan.py)."""
        kind = buffer[0]
        if kind in ("arg", "out", "stage"):
            return buffer
        if kind == "arena":
            return ("arena", buffer[2])
        if kind == "const":
            op = self.constant_ops[buffer[1]]
            data = self._constant_array(op).tobytes()
        elif kind == "data":
            data = buffer[1][2]
        else:
            raise CodegenError(f"unknown buffer {buffer}")
        if data not in self._constant_index:
            self._constant_index[data] = len(self.constants)
            self.constants.append(data)
        return ("const", self._constant_index[data])

    def scratch_buffer(self, size) -> tuple:
        """A buffer of ``size`` bytes (a dim) for one op's kernels during the run (a stage
        buffer of the plan), to pass as an ``extra`` kernel param."""
        return self._main.stage(size)

    # -- the plan -------------------------------------------------------------------------------
    def build(self) -> None:
        from .. import kernels

        self._main = PlanBuilder(self)
        for index, op in enumerate(self.ops):
            kernels.emit_op(self, self._main, index, op)
        self._copy_outputs()
        self.plan = self._main.steps
        for name in list(self._grids) + list(self._cooperative):
            self._check_calls(self.module.globals[name])

    def _check_calls(self, fn: ll.Function) -> None:
        """Kernels may call LLVM intrinsics, the C math functions libdevice provides and
        device ``malloc``/``free``; anything else (the CPU's thread pool, its GEMM) cannot
        run on the GPU: refuse, naming the op and where it was created."""
        from .ptx import device_function

        for callee in set(_CALLEE.findall(str(fn))):
            if not device_function(callee):
                op = self.indexed_ops[self.kernel_ops[fn.name]]
                where = f" (created at {op.loc.file}:{op.loc.line})" if op.loc is not None and op.loc.file else ""
                name = op.loc.name if op.loc is not None and op.loc.name else op.name
                raise CodegenError(f"the GPU backend cannot compile '{name}'{where}: its {op.name} kernel calls "
                                   f"@{callee}, a host function")

    def call_cooperative(self, gpu_kernel, host_kernel, params: list, index: int, threads: int) -> None:
        """Launch a cooperative kernel (block.py) emitted as ``gpu_kernel`` (PTX) and
        ``host_kernel`` (its emulation), one item per block of ``threads``."""
        host_kernel.finish()
        host_fn = self._deduplicate(host_kernel.fn)
        gpu_kernel.finish()
        gpu_kernel.fn = self._deduplicate(gpu_kernel.fn)
        self._cooperative.setdefault(gpu_kernel.fn.name, (host_fn, threads))
        self.call_kernel(gpu_kernel, params, index)

    def _call(self, kernel, params: list, index: int, may_fail: bool) -> None:
        """Record a launch of ``kernel`` (a Kernel or SharedKernel) instead of a call."""
        cooperative = self._cooperative.get(kernel.fn.name)
        if cooperative is None:
            self._grid_of(kernel.fn)
        elif may_fail:
            raise CodegenError(f"cooperative kernel {kernel.fn.name} cannot report errors")
        name = entry_name(kernel.fn.name)
        self.kernels[name] = len(params)
        op = self.indexed_ops[index]
        what = op.loc.name if op.loc is not None and op.loc.name else op.name
        self._main.steps.append(Launch(name, [self.plan_buffer(p) for p in params], kernel.parallel_extent,
                                       index, may_fail, what, None if cooperative is None else cooperative[1]))

    def _grid_of(self, fn: ll.Function) -> ll.Function:
        if fn.name not in self._grids:
            fn.attributes.discard("noinline")
            fn.attributes.add("alwaysinline")
            self._grids[fn.name] = _emit_grid(self.module, fn)
        return self._grids[fn.name]

    # -- modules --------------------------------------------------------------------------------
    def module_text(self, target: str) -> str:
        """The program's LLVM module with one entry per kernel for ``target``: "ptx" (CUDA
        kernels named as the plan names them) or "host" (the emulation: ``host_<name>``,
        ``void (bufs..., dims, err, extent, status, site, threads)`` running every thread
        of the grid). One build serves both: each target's entries are made once, and the
        other target's are left out of the text."""
        if target not in ("ptx", "host"):
            raise ValueError(f"unknown GPU module target {target!r}")
        if target not in self._entries:
            prefix = HOST_PREFIX if target == "host" else ""
            entries = {_emit_entry(self.module, grid, prefix + entry_name(name), target)
                       for name, grid in self._grids.items()}
            for name, (host_fn, _) in self._cooperative.items():
                kernel = self.module.globals[name] if target == "ptx" else host_fn
                entries.add(_emit_block_entry(self.module, kernel, prefix + entry_name(name), target))
            self._entries[target] = entries
        other = {fn.name for t, fns in self._entries.items() if t != target for fn in fns}
        if target == "host":  # the GPU side of cooperative kernels, shared memory and NVVM intrinsics
            other |= set(self._cooperative)
            other |= {name for name in self.module.globals if name.startswith(("llvm.nvvm.", "tfc.shared."))}
        else:
            other |= {host_fn.name for host_fn, _ in self._cooperative.values()}
        hidden = {name: self.module.globals.pop(name) for name in other if name in self.module.globals}
        try:
            text = str(self.module)
        finally:
            self.module.globals.update(hidden)
        if target == "ptx":
            kernels = sorted((fn for fn in self._entries["ptx"] if fn.name.startswith(ENTRY_PREFIX)),
                             key=lambda fn: fn.name)
            text += "\n" + kernel_annotations(kernels, len(self.module.metadata) + 1000)
        return text


# -- grid functions and entries ---------------------------------------------------------------------
def _emit_grid(module: ll.Module, fn: ll.Function) -> ll.Function:
    """``grid.K``: the items ``thread, thread + threads, ...`` below ``extent`` (module docstring)."""
    buffers = len(fn.args) - 4
    grid_type = ll.FunctionType(I32, [I8P] * buffers + [I64P, I64P, I64, I64, I64])
    grid = ll.Function(module, grid_type, name=f"grid.{fn.name}")
    grid.linkage = "internal"
    grid.attributes.add("alwaysinline")
    *bufs, dims, err, extent, thread, threads = grid.args
    entry = grid.append_basic_block("entry")
    head = grid.append_basic_block("item.head")
    body = grid.append_basic_block("item.body")
    failed = grid.append_basic_block("item.failed")
    done = grid.append_basic_block("done")
    b = ll.IRBuilder(entry)
    b.branch(head)
    b.position_at_end(head)
    item = b.phi(I64, name="item")
    item.add_incoming(thread, entry)
    b.cbranch(b.icmp_signed("<", item, extent), body, done)
    b.position_at_end(body)
    status = b.call(fn, list(bufs) + [dims, err, item, b.add(item, const_i64(1))])
    following = b.add(item, threads, name="item.next")
    item.add_incoming(following, body)
    b.cbranch(b.icmp_signed("!=", status, ll.Constant(I32, 0)), failed, head)
    b.position_at_end(failed)
    b.ret(status)
    b.position_at_end(done)
    b.ret(ll.Constant(I32, 0))
    return grid


def _emit_entry(module: ll.Module, grid: ll.Function, name: str, target: str) -> ll.Function:
    buffers = len(grid.args) - 5
    params = [I8P] * buffers + [I64P, I64P, I64, I64P, I64] + ([I64] if target == "host" else [])
    entry = ll.Function(module, ll.FunctionType(ll.VoidType(), params), name=name)
    args = list(entry.args)
    bufs, (dims, err, extent, status, site) = args[:buffers], args[buffers:buffers + 5]
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    if target == "ptx":
        thread, threads = _global_thread(b, module)
        _run_thread(b, grid, bufs, dims, err, extent, status, site, thread, threads)
        b.ret_void()
        return entry
    threads = args[-1]
    head = entry.append_basic_block("thread.head")
    body = entry.append_basic_block("thread.body")
    done = entry.append_basic_block("done")
    start = b.block
    b.branch(head)
    b.position_at_end(head)
    thread = b.phi(I64, name="thread")
    thread.add_incoming(const_i64(0), start)
    b.cbranch(b.icmp_signed("<", thread, threads), body, done)
    b.position_at_end(body)
    _run_thread(b, grid, bufs, dims, err, extent, status, site, thread, threads)
    thread.add_incoming(b.add(thread, const_i64(1)), b.block)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return entry


def _emit_block_entry(module: ll.Module, kernel: ll.Function, name: str, target: str) -> ll.Function:
    """The entry of a cooperative kernel (block.py): on the GPU every thread of block
    ``ctaid.x`` runs items ``ctaid.x, ctaid.x + nctaid.x, ...`` below ``extent`` with its
    ``tid.x``; the host entry runs every item once (its kernel runs the whole block).
    Same parameters as the item kernels' entries; the status word is never written."""
    buffers = len(kernel.args) - 4
    params = [I8P] * buffers + [I64P, I64P, I64, I64P, I64] + ([I64] if target == "host" else [])
    entry = ll.Function(module, ll.FunctionType(ll.VoidType(), params), name=name)
    bufs, (dims, err, extent) = list(entry.args[:buffers]), entry.args[buffers:buffers + 3]
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    if target == "ptx":
        kernel.attributes.discard("noinline")
        kernel.attributes.add("alwaysinline")
        first, step, thread = (_sreg(b, module, n) for n in ("ctaid.x", "nctaid.x", "tid.x"))
    else:
        first, step, thread = const_i64(0), const_i64(1), const_i64(0)
    with counted_loop(b, first, extent, "item", step=step) as item:
        b.call(kernel, bufs + [dims, err, item, thread])
    b.ret_void()
    return entry


def kernel_annotations(entries: list, first_id: int) -> str:
    """``!nvvm.annotations`` marking ``entries`` as CUDA kernels: what every LLVM's NVPTX
    backend reads (LLVM 20 and newer turn it into the ``ptx_kernel`` calling
    convention). Text, appended to the PTX target's module only."""
    ids = [f"!{first_id + i}" for i in range(len(entries))]
    lines = [f"!nvvm.annotations = !{{{', '.join(ids)}}}"]
    for node, entry in zip(ids, entries):
        lines.append(f'{node} = !{{{entry.type} @"{entry.name}", !"kernel", i32 1}}')
    return "\n".join(lines) + "\n"


def _run_thread(b, grid, bufs, dims, err, extent, status_word, site, thread, threads) -> None:
    """Run ``thread``'s items; on failure keep the first status and the op's index."""
    status = b.call(grid, list(bufs) + [dims, err, extent, thread, threads])
    with b.if_then(b.icmp_signed("!=", status, ll.Constant(I32, 0)), likely=False):
        wide = b.sext(status, I64)
        result = b.cmpxchg(status_word, const_i64(0), wide, "monotonic", "monotonic")
        first = b.extract_value(result, 1)
        with b.if_then(first):
            b.store(site, b.gep(err, [const_i64(checks.OP)]))


def _sreg(b: ll.IRBuilder, module: ll.Module, name: str):
    """A PTX special register (``tid.x``, ``ctaid.x``...) as i64."""
    fn = module.globals.get(f"llvm.nvvm.read.ptx.sreg.{name}")
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(I32, []), name=f"llvm.nvvm.read.ptx.sreg.{name}")
    return b.zext(b.call(fn, []), I64)


def _global_thread(b: ll.IRBuilder, module: ll.Module) -> tuple:
    """(this thread's index in the grid, the grid's thread count), as i64."""
    block, size = _sreg(b, module, "ctaid.x"), _sreg(b, module, "ntid.x")
    thread = b.add(b.mul(block, size), _sreg(b, module, "tid.x"))
    return thread, b.mul(_sreg(b, module, "nctaid.x"), size)


# -- control flow: plan steps -------------------------------------------------------------------------
def _emit_if(program: GpuProgram, main: PlanBuilder, index: int, op: ir.Operation) -> None:
    from ..kernels.control import _copy, _emit_ops

    step = If(program.plan_buffer(program.buffer_of(op.operands[0])))
    for region, steps in zip(op.regions, (step.then, step.otherwise)):
        with main.record(steps):
            _emit_ops(program, main, index, region)
            _copy(program, main, region.ops[-1].operands, op.results)
    main.steps.append(step)


def _emit_while(program: GpuProgram, main: PlanBuilder, index: int, op: ir.Operation) -> None:
    from ..kernels.control import _copy, _emit_ops

    carried = op.attrs["carried"]
    condition, body = op.regions
    state = list(op.results)
    _copy(program, main, op.operands[:carried], state)
    staging = _staging(program, main, body.ops[-1].operands, state)
    step = While(predicate=program.plan_buffer(program.buffer_of(condition.ops[-1].operands[0])))
    with main.record(step.condition):
        _emit_ops(program, main, index, condition)
    with main.record(step.body):
        _emit_ops(program, main, index, body)
        _copy(program, main, body.ops[-1].operands, state, staging)
    main.steps.append(step)


def _staging(program: GpuProgram, main: PlanBuilder, sources, destinations) -> dict:
    """Stage buffers for yielded values living in another loop variable's buffer (see
    kernels/control.py's ``_staging``)."""
    targets = {program.buffer_of(d) for d in destinations}
    scratch = {}
    for k, (source, destination) in enumerate(zip(sources, destinations)):
        buffer = program.buffer_of(source)
        if buffer in targets and buffer != program.buffer_of(destination):
            scratch[k] = main.stage(main.bytes_of(source.type))
    return scratch


def _refuse_call(program, index: int, op: ir.Operation) -> None:
    callee = str(op.attrs.get("callee", "?")).lstrip("@")
    raise CodegenError(f"call @{callee}: the GPU backend compiles a single function; inline the callee first")


_CALLEE = re.compile(r'call [^@]*@"?([-\w.$]+)"?\(')
