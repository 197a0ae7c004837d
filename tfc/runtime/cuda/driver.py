"""The process-wide CUDA drivers: ``driver(ordinal=0)`` opens GPU ``ordinal`` once (its primary
context), ``available()`` asks whether GPU 0 opens.

Two bindings implement ``Driver``: cuda-python (``CudaPythonDriver``, tried first) and pycuda
(``PyCudaDriver``). ``TFC_CUDA_DRIVER=cuda-python|pycuda`` forces one. When neither gives a
device, ``driver()`` raises ``NoCudaDevice`` ("no CUDA device/driver was found: <why>"). The
outcome, a driver or the reason for its absence, is cached per TFC_CUDA_DRIVER value and ordinal,
so asking again costs a dict lookup; the first opening happens under a lock, so threads share one
driver per device.

The binding-neutral pieces (error mapping, argument packing, the abstract classes) live in
``_base`` and are re-exported here.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, Union

from tfc.frontend import errors
from tfc.runtime.cuda._base import (  # noqa: F401  (re-exported)
    NO_DEVICE_PREFIX,
    Driver,
    Event,
    Function,
    KernelArgs,
    Module,
    NoCudaDevice,
    Stream,
    check_result,
    cuda_error,
    dims3,
    host_bytes,
    oom_message,
    pack_kernel_args,
)
from tfc.runtime.cuda._cuda_python import CudaPythonDriver
from tfc.runtime.cuda._pycuda import PyCudaDriver

ENV_VAR = "TFC_CUDA_DRIVER"

# Binding name -> Driver class, in the order "auto" tries them.
BACKENDS = {"cuda-python": CudaPythonDriver, "pycuda": PyCudaDriver}
_ALIASES = {"": "auto", "auto": "auto", "cuda-python": "cuda-python", "cuda_python": "cuda-python",
            "cuda": "cuda-python", "pycuda": "pycuda"}

_lock = threading.Lock()
_cache: Dict[tuple, Union[Driver, str]] = {}  # (TFC_CUDA_DRIVER value, ordinal) -> driver, or why none


def driver(ordinal: int = 0) -> Driver:
    """The process-wide driver for GPU ``ordinal``; NoCudaDevice (cached, cheap to repeat) when none."""
    key = (os.environ.get(ENV_VAR, "").strip(), ordinal)
    outcome = _cache.get(key)
    if outcome is None:
        with _lock:
            outcome = _cache.get(key)
            if outcome is None:
                outcome = _cache[key] = _open(*key)
    if isinstance(outcome, str):
        raise NoCudaDevice.because(outcome)
    return outcome


def available() -> bool:
    """True iff ``driver()`` opens and reports at least one device."""
    try:
        return driver().device_count() > 0
    except errors.OpError:
        return False


def reset_driver_cache() -> None:
    """Forget the cached outcome of ``driver()`` (for tests; live drivers are not closed)."""
    with _lock:
        _cache.clear()


def _open(choice: str, ordinal: int = 0) -> Union[Driver, str]:
    """Open the driver ``choice`` asks for on GPU ``ordinal``: a Driver, or the reason there is none."""
    backend = _ALIASES.get(choice.lower())
    if backend is None:
        return f"{ENV_VAR}={choice!r} is not one of {', '.join(BACKENDS)} (or empty for either)"
    names = list(BACKENDS) if backend == "auto" else [backend]
    reasons = {}
    for name in names:
        try:
            return BACKENDS[name](ordinal) if ordinal else BACKENDS[name]()
        except NoCudaDevice as exc:
            reasons[name] = exc.reason
        except Exception as exc:  # a binding failing in an unforeseen way still means "no device"
            reasons[name] = f"{name} failed to open the device ({type(exc).__name__}: {exc})"
    return _combine(reasons, forced=backend != "auto")


def _combine(reasons: Dict[str, str], forced: bool) -> str:
    """One sentence out of each binding's reason for failing."""
    if all(r.startswith(f"{name} is not installed") for name, r in reasons.items()):
        missing = " and ".join(reasons)
        verb = "is" if len(reasons) == 1 else "are"
        text = f"{missing} {verb} not installed"
    else:
        text = "; ".join(f"{name}: {r}" if not r.startswith(name) else r for name, r in reasons.items())
    return f"{text} ({ENV_VAR}={next(iter(reasons))})" if forced else text
