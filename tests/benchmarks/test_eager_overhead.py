"""The eager-overhead benchmark (``python -m benchmarks.eager_overhead``) at tiny counts:
its rows and its JSON; it leaves the process in graph mode."""
from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import eager_overhead  # noqa: E402


def test_eager_overhead_rows(tmp_path, capsys):
    import tfc.compat.v1 as tf

    out = tmp_path / "eager.json"
    assert eager_overhead.main(["--calls", "20", "--steps", "2", "--rounds", "1", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    for row in ("tfc eager x + y", "tfc eager tf.add(x, y)", "numpy x + y"):
        assert results[row] > 0
    assert any(name.startswith("tfc defun Adam step") for name in results)
    assert any(name.startswith("tfc graph Adam step") for name in results)
    assert "tfc eager x + y" in capsys.readouterr().out
    assert not tf.executing_eagerly()
