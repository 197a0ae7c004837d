"""benchmarks/session_overhead.py: the layers it times exist and are ordered as the calls nest."""
from __future__ import annotations

import builtins

from benchmarks import session_overhead


def test_the_layers_are_measured_innermost_first(monkeypatch):
    real_import = builtins.__import__

    def no_jax(name, *args, **kwargs):  # the row set without peers installed
        if name == "jax":
            raise ImportError("jax is not installed here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jax)
    rows = session_overhead.measure(calls=50, rounds=1)
    names = [name for name, _ in rows]
    assert names == ["ctypes call", "argument binding", "feed binding", "fast path", "session.run", "session.run, general path",
                     "numpy a + b"]
    seconds = dict(rows)
    assert all(0 < value < 1e-2 for value in seconds.values())
