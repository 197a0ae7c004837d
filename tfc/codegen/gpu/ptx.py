"""LLVM module -> PTX through llvmlite's NVPTX target, with libdevice for the math.

1. Math calls become libdevice calls: ``llvm.exp.f32`` -> ``__nv_expf``, ``tanhf`` ->
   ``__nv_tanhf`` (NVPTX has no lowering for most transcendental intrinsics, and its
   ``exp2`` is the approximate ``ex2.approx``). Intrinsics NVPTX lowers exactly (sqrt,
   fma, fabs, floor, min/max...) stay; any other call is refused with a CodegenError
   rather than left to the backend (which aborts the process on some).
2. libdevice (``libdevice.10.bc``: the CUDA toolkit's, the ``nvidia-cuda-nvcc`` wheel's,
   Triton's, or ``TFC_LIBDEVICE``) is linked in when the module calls it, every function
   but the entries is internalised, and LLVM's -O3 runs (it inlines what libdevice
   provides and resolves ``__nvvm_reflect``), as XLA's nvptx_backend.cc does.
3. The NVPTX target machine for ``arch`` (``sm_80``, ``sm_90``...) emits the PTX, at the
   PTX ISA version LLVM picks for the arch (newer PTX than the driver knows fails to load).

``assemble`` runs ``ptxas`` on PTX (the check the tests make for every kernel kind).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional

from ..llvm_util import CodegenError

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
LIBDEVICE_ENV = "TFC_LIBDEVICE"

# llvm.<name>.f32/.f64 with no exact NVPTX lowering: libdevice's __nv_<name>f / __nv_<name>
_LIBDEVICE_INTRINSICS = {"exp", "exp2", "exp10", "log", "log2", "log10", "pow", "sin", "cos", "tan", "asin",
                         "acos", "atan", "sinh", "cosh", "tanh", "atan2"}
# C math functions the CPU kernels call by name (scalar.py's libm table), f32 spelled with 'f'
_LIBM = {"tanhf", "expm1f", "log1pf", "erff", "atan2f", "fmodf", "tanh", "expm1", "log1p", "erf", "atan2", "fmod"}
# intrinsics NVPTX lowers itself (the part of the name after "llvm.", up to the type suffix)
_NATIVE_INTRINSICS = {"fabs", "sqrt", "fma", "fmuladd", "floor", "ceil", "trunc", "rint", "round", "roundeven",
                      "nearbyint", "copysign", "minnum", "maxnum", "minimum", "maximum", "memcpy", "memset",
                      "memmove", "smax", "smin", "umax", "umin", "abs", "ctpop", "ctlz", "cttz", "fshl", "fshr",
                      "bswap", "bitreverse", "fptosi.sat", "fptoui.sat", "lifetime.start", "lifetime.end",
                      "assume", "expect", "is.fpclass", "sadd.with.overflow", "ssub.with.overflow",
                      "smul.with.overflow", "uadd.with.overflow", "usub.with.overflow", "umul.with.overflow"}
_DEVICE_RUNTIME = {"malloc", "free"}  # CUDA's device heap
# ``%r = frem [flags] float|double %x, %y``: NVPTX expands frem as x - trunc(x/y)*y, which is
# wrong once x/y rounds (17662742 rem 2.5 gives -0.5, not 2)
_FREM = re.compile(r'^(\s*%(?:"[^"]*"|[-\w.$]+) = )frem'
                   r" (?:(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc) )*"
                   r"(float|double) ([^,]+), (.+?)\s*$", re.M)
_FREM_FUNCTION = {"float": "fmodf", "double": "fmod"}
_REFERENCE = re.compile(r'@"([^"]+)"|@([-\w.$]+)')
_TYPE_SUFFIX = re.compile(r"\.(f16|f32|f64|v\d+f(?:16|32|64)|i\d+|p\d+(?:i\d+)?|p0)(?=\.|$)")


def _intrinsic_base(name: str) -> str:
    """``llvm.fptosi.sat.i32.f32`` -> ``fptosi.sat``; ``llvm.memcpy.p0.p0.i64`` -> ``memcpy``."""
    base = name[len("llvm."):]
    while True:
        stripped = _TYPE_SUFFIX.sub("", base, count=1) if _TYPE_SUFFIX.search(base) else base
        if stripped == base:
            return base
        base = stripped


def device_function(name: str) -> bool:
    """Can a kernel call ``name`` on the GPU?"""
    if name.startswith("llvm.nvvm."):
        return True
    if name.startswith("llvm."):
        base = _intrinsic_base(name)
        return base in _NATIVE_INTRINSICS or base in _LIBDEVICE_INTRINSICS
    return name in _LIBM or name in _DEVICE_RUNTIME or name.startswith("__nv_")


def _libdevice_name(name: str) -> Optional[str]:
    if name in _LIBM:
        return f"__nv_{name}"
    match = re.fullmatch(r"llvm\.([a-z0-9]+)\.(f32|f64)", name)
    if match and match.group(1) in _LIBDEVICE_INTRINSICS:
        return f"__nv_{match.group(1)}" + ("f" if match.group(2) == "f32" else "")
    return None


def exact_remainders(text: str) -> str:
    """``text`` with every scalar ``frem`` made a call of C's fmod/fmodf (libdevice's exact
    __nv_fmod/__nv_fmodf once ``to_libdevice`` renames it), declared where needed. A vector
    frem is refused: kernels for the GPU compute one element per lane."""
    used = set()

    def call(match):
        prefix, type_, x, y = match.groups()
        used.add(type_)
        return f"{prefix}call {type_} @{_FREM_FUNCTION[type_]}({type_} {x}, {type_} {y})"

    text = _FREM.sub(call, text)
    if re.search(r"= frem ", text):
        raise CodegenError("a vector frem reached the GPU module: NVPTX computes frem approximately, "
                           "and only scalar remainders become libdevice's exact fmod")
    for type_ in sorted(used):
        name = _FREM_FUNCTION[type_]
        if not re.search(rf"^declare [^\n]*@{name}\(", text, re.M):
            text += f"\ndeclare {type_} @{name}({type_}, {type_})\n"
    return text


def to_libdevice(text: str) -> str:
    """``text`` with every math call renamed to its libdevice function (declarations too)."""
    def rename(match):
        name = match.group(1) or match.group(2)
        new = _libdevice_name(name)
        return f"@{new}" if new is not None else match.group(0)

    return _REFERENCE.sub(rename, text)


@functools.lru_cache(maxsize=None)
def libdevice_path() -> Optional[str]:
    """Where libdevice.10.bc is (None when nowhere)."""
    candidates = [os.environ.get(LIBDEVICE_ENV)]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "nvvm", "libdevice", "libdevice.10.bc"))
    for module, relative in (("nvidia.cuda_nvcc", ("nvvm", "libdevice", "libdevice.10.bc")),
                             ("nvidia.cu13", ("nvvm", "libdevice", "libdevice.10.bc")),
                             ("triton", ("backends", "nvidia", "lib", "libdevice.10.bc"))):
        try:
            package = __import__(module, fromlist=["__path__"])
        except ImportError:
            continue
        for root in getattr(package, "__path__", []):
            candidates.append(os.path.join(root, *relative))
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "nvvm",
                                       "libdevice", "libdevice.10.bc"))
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    return None


@functools.lru_cache(maxsize=None)
def _initialize() -> None:
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(arch: str):
    import llvmlite.binding as llvm

    _initialize()
    if not re.fullmatch(r"sm_\d+a?", arch):
        raise CodegenError(f"unknown CUDA architecture '{arch}' (expected sm_80, sm_90...)")
    return llvm.Target.from_triple(NVPTX_TRIPLE).create_target_machine(cpu=arch, opt=3)


def compile_ptx(text: str, entries, arch: str = "sm_90", keep_ir: bool = False):
    """PTX for the LLVM module ``text`` whose kernels are ``entries`` (names). With
    ``keep_ir``: (ptx, the optimised LLVM IR)."""
    import llvmlite.binding as llvm

    from ..jit import optimize

    text = to_libdevice(exact_remainders(text))
    for name in {m.group(1) or m.group(2) for m in _REFERENCE.finditer(text)}:
        if name.startswith("llvm.") and not device_function(name):
            raise CodegenError(f"the NVPTX backend has no lowering for {name}")
    machine = target_machine(arch)
    module = llvm.parse_assembly(text)
    module.triple = NVPTX_TRIPLE
    module.data_layout = NVPTX_LAYOUT
    module.verify()
    if "@__nv_" in text:
        path = libdevice_path()
        if path is None:
            raise CodegenError("the program needs libdevice (libdevice.10.bc) for its math, and none was found: "
                               f"install the CUDA toolkit or nvidia-cuda-nvcc, or set {LIBDEVICE_ENV}")
        with open(path, "rb") as f:
            library = llvm.parse_bitcode(f.read())
        library.triple = NVPTX_TRIPLE
        library.data_layout = NVPTX_LAYOUT
        module.link_in(library)
    keep = set(entries)
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = llvm.Linkage.internal
    optimize(module, machine, 3)
    ptx = machine.emit_assembly(module)
    return (ptx, str(module)) if keep_ir else ptx


def ptxas_path() -> Optional[str]:
    found = shutil.which("ptxas")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "bin", "ptxas")):
            return os.path.join(home, "bin", "ptxas")
    return None


def assemble(ptx: str, arch: str = "sm_90", verbose: bool = False) -> bytes:
    """The cubin ``ptxas`` makes of ``ptx`` (raises CodegenError with its log on failure)."""
    ptxas = ptxas_path()
    if ptxas is None:
        raise CodegenError("ptxas was not found (install the CUDA toolkit or nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory(prefix="tfc-ptx-") as folder:
        source, output = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        command = [ptxas, "--gpu-name", arch, source, "-o", output] + (["-v"] if verbose else [])
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise CodegenError(f"ptxas rejected the PTX for {arch}:\n{result.stderr.strip()}")
        with open(output, "rb") as f:
            return f.read()
