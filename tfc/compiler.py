"""The compiler driver: IR module -> optimised, fused, buffer-planned IR -> native code.

``compile_module`` is the one path every caller takes (Session.run, tfc.compile, the
tests): the pass pipeline (verified once at the end, or after every pass with
``verify="each"`` / ``TFC_VERIFY_EACH=1``), LLVM code generation, JIT compilation, and an
Executable that calls the result.

``CompileResult.timings`` says where the time went, in seconds: ``passes``, ``codegen``
(LLVM IR emission), ``runtime`` (the prebuilt GEMM/conv runtime, compiled once per
process), ``llvm_parse``, ``llvm_opt``, ``llvm_codegen`` (MCJIT: instruction selection,
object emission, linking) or ``cache_load`` (persistent cache hit).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from tfc import ir


def full_pipeline(precision: str = "f32") -> list:
    """simplify to a fixed point (and with ``precision="bf16"``, round contraction
    operands to bfloat16), fuse, clean up, then plan buffers."""
    from tfc.passes.buffer_assign import BufferAssign
    from tfc.passes.dce import DCE
    from tfc.passes.fusion import Fusion
    from tfc.passes.manager import default_pipeline

    return default_pipeline(precision) + [Fusion(), DCE(), BufferAssign()]


@dataclass
class CompileResult:
    module: ir.Module
    executable: object
    report: object
    program: object  # the codegen Program (None without native code)
    timings: dict = field(default_factory=dict)
    fusion: object = None
    kernels: dict = field(default_factory=dict)  # calls, emitted, distinct, slowest: [(seconds, what)]
    target: str = "cpu"  # or "cuda"
    arch: Optional[str] = None  # the CUDA architecture (target "cuda")
    _ptx: Optional[str] = None

    @property
    def ptx(self) -> str:
        """The PTX module of a ``target="cuda"`` program (made now if the program was only
        emulated so far)."""
        if self.target != "cuda":
            raise ValueError("this program was compiled for the CPU; compile with target='cuda' for PTX")
        if self._ptx is None:
            from tfc.codegen.gpu.ptx import compile_ptx

            self._ptx = compile_ptx(self.program.module_text("ptx"), self.program.kernels, self.arch)
        return self._ptx

    @property
    def llvm_ir(self) -> str:
        """The program's LLVM IR, one module (before LLVM's optimisation)."""
        return str(self.program.module) if self.program is not None else ""

    def fusion_report(self) -> str:
        return self.fusion.report() if self.fusion is not None else ""

    def timing_table(self, slowest: int = 5) -> str:
        """Where the compile time went: each phase, each pass, and the kernels that took
        longest to emit (what ``tfc dump-ir --timings`` prints)."""
        rows = [("lowering (graph -> IR)", self.timings["lowering"])] if "lowering" in self.timings else []
        rows += [("passes", self.timings.get("passes", 0.0))]
        records = getattr(self.report, "records", [])
        rows += [(f"  {r.stage}", r.seconds) for r in records]
        if records:
            rows.append(("  verification, dump hooks", self.timings.get("passes", 0.0) - sum(r.seconds for r in records)))
        for key, label in TIMING_PHASES:
            if key in self.timings:
                rows.append((label, self.timings[key]))
            if key == "llvm_units" and key in self.timings:
                rows += [(f"  {label}", self.timings[k]) for k, label in UNIT_PHASES if k in self.timings]
        total = sum(self.timings.get(key, 0.0) for key in ("lowering", "passes", *dict(TIMING_PHASES)))
        width = max(len(name) for name, _ in rows + [("total", 0)])
        lines = [f"{'phase'.ljust(width)}  {'ms':>9}", f"{'-' * width}  {'-' * 9}"]
        lines += [f"{name.ljust(width)}  {seconds * 1e3:9.3f}" for name, seconds in rows]
        lines += [f"{'-' * width}  {'-' * 9}", f"{'total'.ljust(width)}  {total * 1e3:9.3f}"]
        if self.kernels:
            k = self.kernels
            lines.append(f"kernels: {k['calls']} calls, {k['emitted']} emitted, {k['distinct']} distinct "
                         f"LLVM functions (identical kernels are shared)")
            for seconds, what in k["slowest"][:slowest]:
                lines.append(f"  {seconds * 1e3:8.3f} ms to emit  {what}")
            if "units" in k:
                units, compiled = k["units"]
                lines.append(f"compile units: {units} ({compiled} compiled by LLVM, the others found in a cache)")
                for seconds, what in k["slowest_units"][:slowest]:
                    lines.append(f"  {seconds * 1e3:8.3f} ms in LLVM  {what}")
        return "\n".join(lines) + "\n"


# (timings key, label) of the phases after the passes, in order; wall-clock seconds
TIMING_PHASES = (("codegen", "LLVM IR emission"), ("runtime", "runtime module (once per process)"),
                 ("llvm_parse", "LLVM parse + verify"), ("llvm_opt", "LLVM optimisation"),
                 ("llvm_codegen", "machine code (MCJIT)"), ("llvm_units", "LLVM, compile units (wall)"),
                 ("llvm_link", "MCJIT link"), ("ptx", "PTX (libdevice, -O3, NVPTX)"),
                 ("cache_load", "object cache load"),
                 ("memory_cache", "in-process code cache"))
# the compile threads' seconds, summed over units (shown under llvm_units, not in the total)
UNIT_PHASES = (("unit_parse", "parse + verify (thread s)"), ("unit_opt", "optimisation (thread s)"),
               ("unit_codegen", "instruction selection (thread s)"))


def compile_module(module: ir.Module, dump: Optional[Callable] = None, constraints=(), source_ops=None,
                   op_names=None, native: bool = True, profile: bool = False,
                   verify: Optional[str] = None, target: str = "cpu", arch: Optional[str] = None,
                   emulate: bool = False, precision: str = "f32", device_ordinal: int = 0) -> CompileResult:
    """Optimise ``module`` in place and compile its ``main`` to native code.

    ``native=False`` stops after the passes (for IR dumps): no executable. ``profile``: the
    code times each kernel call (``executable.profile()``). ``verify``: "each", "end" or
    "none" (default: ``passes.manager.default_verify()``, "end" unless TFC_VERIFY_EACH=1).
    Python's cyclic garbage collector is paused meanwhile (``passes.manager.gc_paused``).

    ``target="cuda"``: a GPU program (tfc/codegen/gpu) for ``arch`` (default: the device's,
    else sm_80) whose executable runs on the CUDA device (raising NoCudaDevice when there
    is none), or with ``emulate=True`` on the host emulation of its thread grids;
    ``device_ordinal``: the GPU it runs on (its driver, allocator or emulated device).

    ``precision``: "f32" (default) or "bf16": the operands of every f32 dot/conv are
    rounded to bfloat16 and the products accumulated in f32 (tfc/codegen/bf16.py; there
    are no native bf16 kernels, which the first bf16 compile of a process warns about).
    """
    from tfc.codegen.bf16 import check_precision, warn_bf16_emulated
    from tfc.passes.manager import gc_paused

    if target not in ("cpu", "cuda"):
        raise ValueError(f"unknown target {target!r}: 'cpu' or 'cuda'")
    if check_precision(precision) == "bf16":
        warn_bf16_emulated()
    with gc_paused():
        if target == "cuda":
            return _compile_cuda(module, dump, constraints, source_ops, op_names, native, verify, arch, emulate,
                                 precision, device_ordinal)
        return _compile_module(module, dump, constraints, source_ops, op_names, native, profile, verify, precision)


EMULATED_ARCH = "sm_80"  # the emulation stands in for any GPU: no driver is asked


def default_arch(ordinal: int = 0) -> str:
    """The CUDA architecture of GPU ``ordinal`` when there is one, else sm_80."""
    from tfc.runtime.cuda import available, driver

    if available():
        major, minor = (driver(ordinal) if ordinal else driver()).compute_capability()
        return f"sm_{major}{minor}"
    return EMULATED_ARCH


def _compile_cuda(module, dump, constraints, source_ops, op_names, native, verify, arch, emulate,
                  precision="f32", ordinal=0) -> CompileResult:
    from tfc.codegen.gpu.program import GpuProgram
    from tfc.codegen.gpu.ptx import compile_ptx
    from tfc.passes.fusion import Fusion
    from tfc.passes.manager import PassManager, default_verify
    from tfc.runtime.cuda.executable import CudaDevice, emulated_device, gpu_executable

    pipeline = full_pipeline(precision)
    start = time.perf_counter()
    report = PassManager(pipeline, verify=verify or default_verify(), dump=dump).run(module)
    timings = {"passes": time.perf_counter() - start}
    fusion = next((p for p in pipeline if isinstance(p, Fusion)), None)
    arch = arch or (EMULATED_ARCH if emulate else default_arch(ordinal))
    if not native:
        return CompileResult(module, None, report, None, timings, fusion, target="cuda", arch=arch)
    function = module.main
    start = time.perf_counter()
    program = GpuProgram(function, arch)
    program.build()
    timings["codegen"] = time.perf_counter() - start
    result = CompileResult(module, None, report, program, timings, fusion, target="cuda", arch=arch)
    start = time.perf_counter()
    if emulate:
        device = emulated_device(program.module_text("host"), program.kernels, ordinal)
        timings["llvm_codegen"] = time.perf_counter() - start
    else:
        ptx = result._ptx = compile_ptx(program.module_text("ptx"), program.kernels, arch)
        timings["ptx"] = time.perf_counter() - start

        def device():
            return CudaDevice(ptx, program.kernels, ordinal=ordinal)

    names = op_names or [_op_label(op) for op in program.indexed_ops]
    result.executable = gpu_executable(function, program, device, names, constraints, source_ops)
    emitted, distinct = program.kernel_counts
    result.kernels = {"calls": len(program.kernels), "emitted": emitted, "distinct": distinct, "slowest": []}
    return result


def _compile_module(module, dump, constraints, source_ops, op_names, native, profile, verify,
                    precision="f32") -> CompileResult:
    from tfc.codegen.jit import compile_ir, compile_units
    from tfc.codegen.program import Program
    from tfc.passes.buffer_assign import arena_bytes
    from tfc.passes.fusion import Fusion
    from tfc.passes.manager import PassManager, default_verify
    from tfc.runtime.executable import Executable

    pipeline = full_pipeline(precision)
    start = time.perf_counter()
    report = PassManager(pipeline, verify=verify or default_verify(), dump=dump).run(module)
    timings = {"passes": time.perf_counter() - start}
    function = module.main
    fusion = next((p for p in pipeline if isinstance(p, Fusion)), None)
    if not native:
        return CompileResult(module, None, report, None, timings, fusion)
    from tfc.codegen.parallel import jit_runtime, link_runtime
    from tfc.codegen.units import Splitter

    start = time.perf_counter()
    jit_runtime()  # the symbols programs link against (once per process)
    timings["runtime"] = time.perf_counter() - start
    start = time.perf_counter()
    program = Program(function, profile=profile)
    splitter = Splitter(program.module, program.entry_name, program.kernel_levels)
    program.build()
    units = splitter.finish()
    timings["codegen"] = time.perf_counter() - start
    start = time.perf_counter()
    link_runtime(program.module)  # a GEMM of another element type, the first time one is used
    timings["runtime"] += time.perf_counter() - start
    if units is None:
        code = compile_ir(str(program.module))
    else:
        code = compile_units(units, program.entry_name)
    timings.update(code.timings)
    top_ops = [op for op in function.body.ops if op.name != "return"]
    emitted, distinct = program.kernel_counts
    slowest = sorted(program.emission_seconds, key=lambda row: -row[1])
    kernels = {"calls": sum(1 for op in top_ops if op.name not in ("constant", "read", "assign")),
               "emitted": emitted, "distinct": distinct,
               "slowest": [(seconds, _op_summary(program.indexed_ops[i])) for i, seconds in slowest[:10]]}
    if units is not None:
        kernel_names = {symbol: name for name, symbol in splitter.renamed.items()}

        def unit_summary(name: str) -> str:
            if name == program.entry_name:
                return f"{name} (the entry: glue, one call per kernel)"
            index = program.kernel_ops.get(kernel_names.get(name))
            return _op_summary(program.indexed_ops[index]) if index is not None else name

        kernels["units"] = code.units
        kernels["slowest_units"] = [(seconds, unit_summary(name)) for name, seconds in
                                    sorted(code.unit_seconds, key=lambda row: -row[1])[:10]]
    names = op_names or [_op_label(op) for op in program.indexed_ops]
    executable = Executable(function, code, program.symbols, arena_bytes(function), names, constraints,
                            source_ops, host_calls=program.host_calls)
    if profile:
        executable.enable_profile(program.profile_kernels, [_op_summary(program.indexed_ops[i]) for _, i in
                                                            program.profile_kernels])
    return CompileResult(module, executable, report, program, timings, fusion, kernels)


def _op_summary(op: ir.Operation) -> str:
    """What a top-level op computes, for profiles: 'fusion[loop]: tanh, logistic, mul (add_1 @ x.py:4)'."""
    if op.name == "fusion":
        members = [m.name for m in op.regions[0].ops if m.name not in ("constant", "broadcast", "yield")]
        shown = ", ".join(dict.fromkeys(members))
        what = f"fusion[{op.attrs.get('kind')}]: {shown}"
    else:
        what = op.name
    where = ""
    if op.loc is not None and op.loc.name:
        where = op.loc.name + (f" @ {op.loc.file}:{op.loc.line}" if getattr(op.loc, "file", None) else "")
    return f"{what} ({where})" if where else what


def _op_label(op: ir.Operation) -> str:
    if op.loc is not None and op.loc.name:
        return op.loc.name
    return op.name
