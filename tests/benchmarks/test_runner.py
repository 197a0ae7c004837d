"""The benchmark runner: a --quick --tiny pass over every workload (tfc and numpy; the
TensorFlow and JAX columns are hidden as "not installed"), and the timing/formatting helpers."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import peers, report, runner  # noqa: E402
from benchmarks.__main__ import WORKLOAD_NAMES, main  # noqa: E402
from benchmarks.timing import Timing, TimingConfig, measure, percentile  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402

PEER_COLUMNS = ("TF graph", "TF XLA", "JAX jit")


@pytest.fixture
def no_framework_peers(monkeypatch):
    """Run as on a machine without tensorflow and jax, whatever this one has."""
    real = peers.is_installed
    monkeypatch.setattr(peers, "is_installed", lambda peer: peer in ("numpy", "tfc") and real(peer))
    for var in ("TF_CPP_MIN_LOG_LEVEL", "JAX_PLATFORMS"):  # main() sets these defaults; restore them after
        monkeypatch.setenv(var, os.environ.get(var, ""))
        monkeypatch.delenv(var)


# the bf16 rows' sessions say once that bf16 is emulated on this CPU (tested in tests/runtime)
@pytest.mark.filterwarnings("ignore::tfc.codegen.bf16.Bf16EmulationWarning")
def test_quick_tiny_run_covers_every_workload(no_framework_peers, tmp_path, capsys):
    path = tmp_path / "bench.json"
    code = main(["--quick", "--tiny", "--json", str(path)])
    out = capsys.readouterr().out

    table = out.split("median time per step")[1].split("ratio = peer median")[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert set(WORKLOAD_NAMES) <= set(rows), table
    for name in WORKLOAD_NAMES:
        cells = [c.strip() for c in rows[name].strip("|").split("|")]
        assert cells[1].endswith("s") and "WRONG" not in rows[name], rows[name]  # tfc: a time
        assert cells[2].endswith("x)"), rows[name]  # numpy: time (ratio)
        assert cells[3:] == ["not installed"] * 3, rows[name]
    header = table.splitlines()[1]
    assert all(label in header for label in PEER_COLUMNS)

    document = json.loads(path.read_text())
    assert [r["workload"] for r in document["results"]] == list(WORKLOAD_NAMES)
    for result in document["results"]:
        for peer in ("numpy", "tfc"):
            entry = result["peers"][peer]
            assert entry["status"] == "ok", (result["workload"], peer, entry.get("error"), entry.get("check"))
            assert entry["check"]["ok"] is True
            assert len(entry["samples_s"]) == entry["reps"] >= 3
            assert entry["p10_s"] <= entry["median_s"] <= entry["p90_s"]
        for peer in ("tf_graph", "tf_xla", "jax"):
            assert result["peers"][peer] == {"status": "not installed", "first_run_s": None}
    assert document["machine"]["versions"]["numpy"]
    assert code == 0, out


def test_python_dash_m_entry_point(tmp_path):
    path = tmp_path / "scalar.json"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--tiny", "--workloads", "scalar_add", "--peers", "tfc",
         "--min-time", "0.01", "--json", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "| scalar_add" in completed.stdout
    assert json.loads(path.read_text())["results"][0]["peers"]["tfc"]["status"] == "ok"


def test_bad_workload_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--workloads", "nope"])
    assert exit_info.value.code == 2
    assert "unknown workload nope" in capsys.readouterr().err


def test_workload_registry_matches_cli():
    assert tuple(WORKLOADS) == WORKLOAD_NAMES
    for cls in WORKLOADS.values():
        for method in ("build_numpy", "build_tfc", "build_tf_graph", "build_tf_xla", "build_jax", "check"):
            assert callable(getattr(cls, method)), (cls.name, method)


def test_check_flags_wrong_results():
    workload = WORKLOADS["elementwise"](tiny=True)
    reference = workload.build_numpy()()
    checks = workload.check({"numpy": reference, "good": reference + 1e-9, "bad": reference + 1.0,
                             "shape": reference[:-1]})
    assert checks["numpy"].ok and checks["good"].ok
    assert not checks["bad"].ok and checks["bad"].max_abs_err == pytest.approx(1.0)
    assert not checks["shape"].ok and "shape" in checks["shape"].message


# -- formatting and timing -----------------------------------------------------------------------
def test_format_seconds():
    assert report.format_seconds(2.0) == "2.00 s"
    assert report.format_seconds(0.191) == "191 ms"
    assert report.format_seconds(1.234e-3) == "1.23 ms"
    assert report.format_seconds(20.64e-6) == "20.6 us"
    assert report.format_seconds(52.8e-9) == "52.8 ns"
    assert report.format_seconds(None) == "-"


def test_ratio_and_format_ratio():
    assert report.ratio(2e-3, 1e-3) == pytest.approx(2.0)  # peer twice as slow: tfc faster, > 1
    assert report.ratio(None, 1e-3) is None and report.ratio(1e-3, None) is None
    assert report.format_ratio(2.0) == "2.00x"
    assert report.format_ratio(0.35) == "0.35x"
    assert report.format_ratio(0.0026) == "0.003x"
    assert report.format_ratio(12.34) == "12.3x"
    assert report.format_ratio(150.0) == "150x"
    assert report.format_ratio(None) == "-"


def test_median_and_percentiles():
    timing = Timing(samples=[5.0, 1.0, 4.0, 2.0, 3.0])
    assert timing.median == 3.0
    assert timing.p10 == pytest.approx(1.4)  # numpy.percentile's linear interpolation
    assert timing.p90 == pytest.approx(4.6)
    assert percentile([7.0], 90) == 7.0


def test_summary_cells_and_table():
    def timed(seconds, status=runner.OK):
        return runner.PeerResult("x", status, timing=Timing(samples=[seconds]))

    result = runner.WorkloadResult("matmul", "matmul", "")
    result.peers = {"numpy": timed(2e-3), "tfc": timed(1e-3),
                    "tf_graph": runner.PeerResult("tf_graph", runner.NOT_INSTALLED),
                    "tf_xla": runner.PeerResult("tf_xla", runner.ERROR, error="build: boom"),
                    "jax": timed(0.5e-3, runner.MISMATCH)}
    table = report.summary_table([result], list(peers.PEERS))
    header, rule, row = table.splitlines()
    assert [c.strip() for c in header.strip("|").split("|")] == ["workload", "tfc", "numpy", "TF graph",
                                                                 "TF XLA", "JAX jit"]
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "matmul", "1.00 ms", "2.00 ms (2.00x)", "not installed", "error", "500 us (0.50x) WRONG"]
    assert rule.startswith("|---")


def test_measure_stops_at_min_time_or_max_reps():
    now = [0.0]

    def clock():
        return now[0]

    def step():  # every call takes 0.125 s of fake time (exact in binary)
        now[0] += 0.125

    by_time = measure(step, TimingConfig(warmup=0, min_time=1.0, max_reps=1000, min_reps=3), clock=clock)
    assert by_time.number == 1 and by_time.reps == 8
    assert by_time.median == 0.125
    by_reps = measure(step, TimingConfig(warmup=0, min_time=100.0, max_reps=4, min_reps=3), clock=clock)
    assert by_reps.reps == 4
    at_least = measure(step, TimingConfig(warmup=0, min_time=0.0, max_reps=1, min_reps=3), clock=clock)
    assert at_least.reps == 3


def test_measure_batches_very_short_steps():
    now = [0.0]

    def step():  # 1 us of fake time per call: batched so that a sample lasts >= 20 us
        now[0] += 1e-6

    timing = measure(step, TimingConfig(warmup=0, min_time=0.0, max_reps=5, min_reps=5), clock=lambda: now[0])
    assert timing.number == 100
    assert timing.median == pytest.approx(1e-6)


def test_a_failing_peer_is_reported_and_the_run_goes_on(monkeypatch):
    class Broken(WORKLOADS["scalar_add"]):
        name = "broken"

        def build_tfc(self):
            raise NotImplementedError("no lowering for Frobnicate\nsecond line")

    class Wrong(WORKLOADS["scalar_add"]):
        name = "wrong"

        def build_tfc(self):
            return lambda: self.a - self.b

    monkeypatch.setitem(WORKLOADS, "broken", Broken)
    monkeypatch.setitem(WORKLOADS, "wrong", Wrong)
    monkeypatch.setattr(peers, "is_installed", lambda peer: peer in ("numpy", "tfc"))
    config = TimingConfig(warmup=0, min_time=0.0, max_reps=3, min_reps=3)
    results = runner.run(["broken", "wrong", "scalar_add"], ["tfc", "numpy", "jax"], config)
    broken, wrong, fine = (r.peers for r in results)
    assert broken["tfc"].status == runner.ERROR
    assert broken["tfc"].error == "build: NotImplementedError: no lowering for Frobnicate"
    assert broken["numpy"].status == runner.OK and broken["jax"].status == runner.NOT_INSTALLED
    assert wrong["tfc"].status == runner.MISMATCH and wrong["tfc"].timed
    assert fine["tfc"].status == runner.OK
    assert [(w, p) for w, p, _ in runner.failures(results)] == [("broken", "tfc"), ("wrong", "tfc")]
    table = report.summary_table(results, ["tfc", "numpy", "jax"])
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in table.splitlines()[2:]}
    assert rows["broken"][1] == "error" and rows["wrong"][1].endswith("WRONG")
    assert "Frobnicate" in report.failure_lines(results)
