"""bfloat16 support: what the host CPU offers, and the rounding tfc emits instead.

``precision="bf16"`` (``tfc.compile``, or a session whose ConfigProto turns on
``auto_mixed_precision_onednn_bfloat16``) gives the numerics of TF's oneDNN
auto-mixed-precision on CPU: the operands of every ``dot``/``conv`` are rounded to
bfloat16 (round to nearest even), their products accumulate in f32, everything else
stays f32 (tfc/passes/bf16_precision.py inserts the rounding as ``round_bf16`` ops).

Native bf16 arithmetic needs AMX-BF16 (tile matrix multiply, Sapphire Rapids and later;
Linux must also grant the process the AMX tile state) or AVX512-BF16 (``vdpbf16ps``,
Cooper Lake, Zen 4). tfc has no native bf16 kernels (none could be tested on the
machines it is developed on), so whatever :func:`host_bf16_support` finds, the operands
are rounded in f32 code and multiplied by the f32 kernels: the same results as bf16 x bf16
-> f32 products (a product of two 8-bit significands is exact in f32), no speedup.
:func:`warn_bf16_emulated` says so once per process.

:func:`emit_round_bf16` is the LLVM lowering of ``round_bf16`` (the elementwise codegen
calls it, so the rounding fuses into its producer's loop).
"""
from __future__ import annotations

import ctypes
import functools
import platform
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Mapping, Optional

from llvmlite import ir as ll

PRECISIONS = ("f32", "bf16")

# Linux: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) asks for the AMX tile data
# state (kernel 5.16+); without it the first AMX instruction faults.
_SYS_ARCH_PRCTL = 158  # x86-64 syscall number
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18


def check_precision(precision: str) -> str:
    """``precision`` if it is one tfc knows, else ValueError listing the choices."""
    if precision not in PRECISIONS:
        choices = ", ".join(repr(p) for p in PRECISIONS)
        raise ValueError(f"unknown precision {precision!r}: one of {choices} ('f32' is the default; 'bf16' rounds "
                         "matmul/convolution operands to bfloat16 and accumulates in float32)")
    return precision


# RewriterConfig.Toggle values that turn a rewriter on (TF's AutoMixedPrecisionEnabled)
_TOGGLE_ON, _TOGGLE_AGGRESSIVE = 1, 3
# The RewriterConfig toggles that select bfloat16 on CPU: TF's current name and the older one.
BF16_TOGGLES = ("auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl")


def precision_of_config(config) -> str:
    """The precision a session's ConfigProto asks for: "bf16" when
    ``graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16`` (or the older
    ``auto_mixed_precision_mkl``) is ON or AGGRESSIVE, else "f32". Works with tfc's
    ConfigProto and TF's (the same fields); None or a config without them gives "f32"."""
    rewrite = getattr(getattr(config, "graph_options", None), "rewrite_options", None)
    for name in BF16_TOGGLES:
        if getattr(rewrite, name, 0) in (_TOGGLE_ON, _TOGGLE_AGGRESSIVE):
            return "bf16"
    return "f32"


@dataclass(frozen=True)
class Bf16Support:
    """What the host offers for bf16 arithmetic (see the module docstring)."""

    avx512_bf16: bool  # the CPU has AVX512-BF16
    amx_bf16: bool  # the CPU has AMX-BF16 and AMX-TILE, and the OS lets this process use the tiles
    amx_note: str = ""  # why AMX is not usable when the CPU has it ("" otherwise)

    @property
    def native(self) -> bool:
        """Whether bf16 kernels could run natively here (tfc has none yet)."""
        return self.avx512_bf16 or self.amx_bf16

    def lacking(self) -> str:
        """The instruction sets this host lacks, in words."""
        missing = []
        if not self.amx_bf16:
            missing.append("AMX-BF16" + (f" ({self.amx_note})" if self.amx_note else ""))
        if not self.avx512_bf16:
            missing.append("AVX512-BF16")
        return " or ".join(missing)


def _request_amx_permission() -> str:
    """Ask Linux for the AMX tile data state: "" when granted, else why not."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return "not x86-64 Linux"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        rc = libc.syscall(ctypes.c_long(_SYS_ARCH_PRCTL), ctypes.c_long(_ARCH_REQ_XCOMP_PERM),
                          ctypes.c_ulong(_XFEATURE_XTILEDATA))
    except (OSError, AttributeError) as e:
        return f"arch_prctl unavailable: {e}"
    if rc != 0:
        return f"the kernel refused AMX tile data (arch_prctl errno {ctypes.get_errno()})"
    return ""


def bf16_support(features: Mapping[str, bool], request_amx=_request_amx_permission) -> Bf16Support:
    """The support that CPU feature flags (llvmlite's names: 'amx-bf16', 'amx-tile',
    'avx512bf16') describe; the AMX permission is requested only when the flags have AMX."""
    avx512 = bool(features.get("avx512bf16", False))
    amx_cpu = bool(features.get("amx-bf16", False)) and bool(features.get("amx-tile", False))
    note = request_amx() if amx_cpu else ""
    return Bf16Support(avx512_bf16=avx512, amx_bf16=amx_cpu and not note, amx_note=note)


@functools.lru_cache(maxsize=None)
def host_bf16_support() -> Bf16Support:
    """This host's bf16 support (detected once per process)."""
    from llvmlite import binding as llvm

    try:
        features = dict(llvm.get_host_cpu_features())
    except RuntimeError:  # llvmlite cannot read the features on this host
        features = {}
    return bf16_support(features)


def emulation_message(support: Optional[Bf16Support] = None) -> str:
    """What ``precision='bf16'`` does on this host, in one sentence."""
    support = support or host_bf16_support()
    if support.native:
        have = " and ".join(name for name, ok in (("AMX-BF16", support.amx_bf16),
                                                   ("AVX512-BF16", support.avx512_bf16)) if ok)
        return (f"precision='bf16': this CPU has {have} but tfc has no native bf16 kernels yet; "
                "matmul/convolution operands are rounded to bfloat16 and multiplied in float32 "
                "(bf16 accuracy, no bf16 speedup)")
    return (f"precision='bf16': this CPU has no {support.lacking()}; matmul/convolution operands are rounded "
            "to bfloat16 and multiplied in float32 (bf16 accuracy, no bf16 speedup)")


class Bf16EmulationWarning(UserWarning):
    """precision='bf16' runs as f32 code with rounded operands (no native bf16 kernels)."""


_warned = False
_warn_lock = threading.Lock()


def warn_bf16_emulated() -> bool:
    """Warn (once per process) that bf16 is emulated; True when this call warned."""
    global _warned
    with _warn_lock:
        if _warned:
            return False
        _warned = True
    warnings.warn(emulation_message(), Bf16EmulationWarning, stacklevel=3)
    return True


def reset_warning() -> None:
    """Let the next :func:`warn_bf16_emulated` warn again (tests)."""
    global _warned
    _warned = False


# -- codegen ---------------------------------------------------------------------------------
_I32 = ll.IntType(32)


def emit_round_bf16(b: ll.IRBuilder, x):
    """LLVM IR rounding the f32 ``x`` to the nearest bfloat16 (ties to even), as f32:
    ``bits + 0x7FFF + ((bits >> 16) & 1)``, then the low 16 bits cleared; NaN is passed
    through unchanged (the carry could make a small-payload NaN an infinity). Integer
    ops on the bits only: the loop vectorizer turns it into a few AVX2 instructions."""
    bits = b.bitcast(x, _I32)
    lowest_kept = b.and_(b.lshr(bits, ll.Constant(_I32, 16)), ll.Constant(_I32, 1))
    biased = b.add(b.add(bits, ll.Constant(_I32, 0x7FFF)), lowest_kept)
    rounded = b.bitcast(b.and_(biased, ll.Constant(_I32, -0x10000)), x.type)
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.select(is_nan, x, rounded)
