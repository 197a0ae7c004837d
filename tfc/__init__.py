"""tfc: TensorFlow 1.x's programming model on a real compiler.

``import tfc.compat.v1 as tf`` (or ``import tfc as tf``) gives the TF1 API; every
``Session.run`` compiles the subgraph it needs to native code. ``tfc.compile`` compiles
part of a graph once for repeated calls; ``tfc.load`` runs an artifact it saved;
``tfc.ir`` is the IR package.
"""
from __future__ import annotations

import importlib
import importlib.util

__version__ = "0.1.0"


def __getattr__(name):
    if name == "load":  # the artifact loader: numpy and ctypes only, not the compiler or the TF namespace
        from tfc.aot_runtime import load

        return load
    if _is_submodule(name):
        return importlib.import_module(f"{__name__}.{name}")
    from tfc import _api

    namespace = _api.build()
    if name in namespace:
        globals().update(namespace)
        return namespace[name]
    from tfc._missing import missing

    missing("", name, __name__)  # "tfc does not implement tf.foo yet" for a TF1 name, else Python's error


def _is_submodule(name: str) -> bool:
    """A module file of the package (not a TF namespace such as ``nn``: those live in
    sys.modules without a spec once the API is built)."""
    try:
        return importlib.util.find_spec(f"{__name__}.{name}") is not None
    except ValueError:
        return False


def __dir__():
    from tfc import _api

    return sorted(set(globals()) | set(_api.build()))
