"""The tf.data benchmark (``python -m benchmarks.data_pipeline``) at tiny counts: its rows,
summary and JSON."""
from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import data_pipeline  # noqa: E402


def test_data_pipeline_rows(tmp_path, capsys, monkeypatch):
    from benchmarks import peers

    monkeypatch.setattr(peers, "is_installed", lambda peer: False)  # tfc only, even where TF is installed
    out = tmp_path / "data.json"
    assert data_pipeline.main(["--examples", "600", "--steps", "2", "--rounds", "1", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    for row in ("tfc feed_dict step", "tfc tf.data step", "tfc get_next alone"):
        assert results["seconds"][row] > 0
    assert 0.0 <= results["summary"]["tfc"]["pipeline share"] < 1.0
    assert "pipeline share of a step" in capsys.readouterr().out
