"""python -m benchmarks.distributed: a tiny run of the tfc peer (1 ps + 2 workers, three
processes) in a fresh process; TensorFlow's peer is not run here (it takes its venv and
~10 s to start)."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def test_a_tiny_tfc_run_reports_step_times_cpu_and_the_bytes_moved(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / "dist.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.distributed", "--peers", "tfc", "--sizes", "16,8,4",
                           "--batch", "2", "--steps", "3", "--warmup", "1", "--json", str(out)], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("between-graph MLP 16-8-4, batch 2, SGD; 1 ps + 2 workers on localhost")
    assert lines[1].startswith("tfc: median step worker 0 ") and " worker 1 " in lines[1]
    assert "CPU ms per step (of both workers' steps): ps:0 " in lines[1]
    result = json.loads(out.read_text())
    params = 4 * (16 * 8 + 8 + 8 * 4 + 4)
    assert result["param_bytes"] == params
    (tfc,) = result["results"]
    assert len(tfc["times_s"]) == 2 and all(len(t) == 3 for t in tfc["times_s"])
    assert sorted(tfc["cpu_s_per_step"]) == ["ps:0", "worker:0", "worker:1"]
    assert all(seconds > 0 for seconds in tfc["cpu_s_per_step"].values())
    # each step pulls the variables from the ps and pushes their gradients back: nothing more
    assert tfc["task_bytes_per_step"] == 2 * params
    # and the client hands its batch (x, y) to its master and gets the loss back
    assert tfc["client_bytes_per_step"] == 4 * (2 * 16 + 2 * 4) + 4
