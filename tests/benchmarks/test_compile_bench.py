"""The compile-time benchmark (``python -m benchmarks --compile``) at tiny sizes: its table,
its JSON, and the values its children check against numpy."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import compile_models, compile_time  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402


def _rows(text: str, title: str) -> dict:
    """{first cell: [cells]} of the markdown table that follows ``title``."""
    lines = text.split(title, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    rows = {}
    for line in lines[start + 2:]:  # after the header and the rule
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_tiny_compile_run_prints_first_steps_breakdown_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "must-not-be-used"))
    path = tmp_path / "compile.json"
    code = main(["--compile", "--tiny", "--peers", "tfc", "--cache", "--steady-reps", "2", "--json", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out

    header = out.split("\n\n")[1].splitlines()[0]
    assert [c.strip() for c in header.strip("|").split("|")][:4] == ["workload", "graph ops", "tfc", "tfc cached"]
    rows = _rows(out, "graph build not included (own column)")
    assert set(rows) == {"mlp L=2", "chain N=10"}
    for cells in rows.values():
        workload, graph_ops, first, cached, per_k, build, steady = cells
        assert int(graph_ops) > 10
        for cell in (first, cached, per_k, build):
            assert cell.endswith("s") and "WRONG" not in cell, cells
        assert steady.endswith("s"), cells
    breakdown = _rows(out, "where the time goes")
    assert set(breakdown) == {"mlp L=2", "chain N=10"}
    assert "problems:" not in out
    assert not (tmp_path / "must-not-be-used").exists()  # TFC_CACHE_DIR is unset in the children

    document = json.loads(path.read_text())
    assert document["benchmark"] == "compile" and "machine" in document
    by_case = {(r["kind"], r["size"]): r["peers"] for r in document["results"]}
    assert set(by_case) == {("mlp", 2), ("chain", 10)}
    mlp = by_case[("mlp", 2)]["tfc"]
    assert mlp["value_ok"] and abs(mlp["loss"] - compile_models.reference("mlp", 2)) < 1e-4
    for peers in by_case.values():
        fresh, cached = peers["tfc"], peers["tfc_cached"]
        for result in (fresh, cached):
            assert result["value_ok"] and result["first_s"] > 0 and result["steady_s"] > 0
            assert result["build_s"] > 0 and result["graph_ops"] == fresh["graph_ops"]
        assert {"passes", "codegen", "llvm_units", "llvm_link", "unit_opt", "unit_codegen"} <= set(fresh["timings"])
        assert "step_cache_load" in cached["timings"] and "llvm_opt" not in cached["timings"]
        assert fresh["ir_ops"] > 0 and fresh["top_level_ops"] > 0


def test_peers_that_cannot_run_are_marked_not_installed(monkeypatch):
    monkeypatch.setattr(compile_time, "peer_python", lambda peer, override=None: None)
    results = compile_time.run([2], [], ["tfc", "jax"])
    row = results[("mlp", 2)]
    assert row["tfc"]["error"] == row["jax"]["error"] == "not installed"
    text = compile_time.format_report(results, ["tfc", "jax"])
    assert "| mlp L=2 " in text and "not installed" in text and "problems:" not in text
    assert not compile_time.failed(results)


def test_child_checks_its_first_step_against_numpy():
    result = compile_time.child("tfc", "chain", 3, steady_reps=1)
    assert result["value_ok"] and result["max_abs_err"] < 1e-6
    assert result["graph_ops"] > 3 * 3 and result["first_s"] > 0 and result["steady_s"] > 0


def test_numpy_references():
    x = compile_models.chain_data()
    np.testing.assert_allclose(compile_models.reference("chain", 1), np.cos(x.astype(np.float64)))
    two = compile_models.reference("chain", 2)
    np.testing.assert_allclose(two, np.cos(np.sin(x.astype(np.float64)) + 1) * np.cos(x.astype(np.float64)))
    loss = compile_models.reference("mlp", 4)  # one layer norm (after layer 3)
    assert np.isfinite(loss) and 0.5 < loss < 10  # ~log(10) for near-uniform predictions
