"""python -m benchmarks.distributed: a tiny run of the tfc peer (1 ps + 2 workers, three
processes); TensorFlow's peer is not run here (it takes its venv and ~10 s to start)."""
from __future__ import annotations

import json
import os

from benchmarks.distributed import main


def test_a_tiny_tfc_run_reports_step_times_and_the_bytes_moved(tmp_path, capsys):
    out = tmp_path / "dist.json"
    assert main(["--peers", "tfc", "--sizes", "16,8,4", "--batch", "2", "--steps", "3", "--warmup", "1",
                 "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("between-graph MLP 16-8-4, batch 2, SGD; 1 ps + 2 workers on localhost")
    assert lines[1].startswith("tfc: median step worker 0 ") and " worker 1 " in lines[1]
    result = json.loads(out.read_text())
    params = 4 * (16 * 8 + 8 + 8 * 4 + 4)
    assert result["param_bytes"] == params
    (tfc,) = result["results"]
    assert len(tfc["times_s"]) == 2 and all(len(t) == 3 for t in tfc["times_s"])
    # each step pulls the variables from the ps and pushes their gradients back: nothing more
    assert tfc["task_bytes_per_step"] == 2 * params
    # and the client sends its batch (x, y) to its master and gets the loss back
    assert tfc["client_bytes_per_step"] == 4 * (2 * 16 + 2 * 4) + 4


def test_the_command_runs_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-m", "benchmarks.distributed", "--peers", "tfc", "--sizes", "8,4,2",
                           "--batch", "2", "--steps", "2", "--warmup", "1"], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("tfc: median step worker 0 ")
