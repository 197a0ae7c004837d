"""python -m benchmarks.single: one workload, some peers, checked against numpy."""
from __future__ import annotations

from benchmarks.single import main


def test_the_lstm_workload_runs_on_tfc_and_matches_numpy(capsys):
    assert main(["lstm", "numpy", "tfc", "--reps", "2", "--tiny"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("lstm numpy: median ") and "(ok, max rel err 0.0e+00)" in lines[0]
    assert lines[1].startswith("lstm tfc: median ") and "(ok, " in lines[1]


def test_it_runs_as_a_user_runs_it_in_a_fresh_process():
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-m", "benchmarks.single", "lstm", "tfc", "--reps", "1", "--tiny"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lstm tfc: median ") and "(ok, " in done.stdout
