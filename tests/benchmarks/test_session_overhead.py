"""benchmarks/session_overhead.py, run as a user runs it: the layers it times exist, the
direct call's first, then the checked path's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_layers_are_measured_innermost_first(tmp_path):
    out = tmp_path / "overhead.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.session_overhead", "--calls", "50", "--rounds", "1",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())
    names = [row["layer"] for row in rows]
    assert names[:9] == ["ctypes call", "direct call", "session.run", "argument binding", "feed binding",
                         "checked fast path", "session.run, checked fast path", "session.run, general path",
                         "numpy a + b"]
    assert names[9:] in ([], ["JAX jit (waited for)"])  # JAX's row where it is installed
    assert all(0 < row["seconds"] < 1e-2 for row in rows)
    assert proc.stdout.splitlines()[0].startswith("ctypes call")
