"""The seeds' distributed programs (examples/distributed/) run through launch.py on
localhost and print what the seeds show: seed 000's server.py + client.py, and seed 004's
ps / chief worker / worker2 files (a short run: --max_steps). Seed 000's bg_dist.py trains
until its loss is under 70 (~30,000 steps, minutes): it is run by hand, not here."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "examples", "distributed")
SECTION = re.compile(r"^==== (\S+) \((.*)\) ====$")
EPOCH = re.compile(r"^Epoch: (\d+) cost= (\S+) W= \[(\S+)\] b= \[(\S+)\]$")


def launch(tmp_path, *args, timeout=120):
    """Runs launch.py; returns (its exit code, {task: (status, output lines)}, stdout)."""
    done = subprocess.run([sys.executable, os.path.join(DIST, "launch.py"), "--workdir", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=DIST)
    sections, current = {}, None
    for line in done.stdout.splitlines():
        match = SECTION.match(line)
        if match:
            current = match.group(1)
            sections[current] = (match.group(2), [])
        elif current is not None and not line.startswith("launch: "):
            sections[current][1].append(line)
    return done.returncode, sections, done.stdout + done.stderr


def test_server_and_client(tmp_path):
    """Seed 000: client.py runs `y = tf.assign(b, (a*b + a/b) * a)` on server.py's task and
    prints [4.875 126.45] (the seed: `[   4.875       126.45000458]`, older numpy)."""
    code, tasks, text = launch(tmp_path, "server.py", "--ps", "0", "--workers", "1", "--client", "client.py",
                               "--hosts-only", "--timeout", "60")
    assert code == 0, text
    assert tasks["worker:0"][0] == "stopped by the launcher", text  # server.join() serves until stopped
    status, lines = tasks["client"]
    assert status == "exit 0", text
    numbers = np.array([float(v) for v in lines[-1].strip("[] ").split()], np.float32)
    assert numbers.tolist() == [4.875, np.float32(126.45000458)], text  # the seed's value
    assert os.listdir(tmp_path / "basic_tmp"), "the client's FileWriter wrote no event file"


def test_book_ps_and_two_workers(tmp_path):
    """Seed 004 (实例20): the ps prints "waiting...." and serves; the chief (task 0) prints
    "sess ok", the global step it starts from (0), "Epoch: N cost= ... W= [..] b= [..]"
    for its even global steps, " Finished!"; worker2 (task 1, started once the chief's
    session is up) starts from the global step the chief reached, and its steps and the
    chief's interleave (the book: 循环的次数并不是连续的)."""
    code, tasks, text = launch(tmp_path, "--hosts-only", "--ps-script", "ps_4_15.py", "--worker-script",
                               "worker_4_16.py", "--worker-script", "worker2_4_17.py", "--after-chief", "sess ok",
                               "--timeout", "90", "--", "--max_steps=120")
    assert code == 0, text
    assert tasks["ps:0"] == ("stopped by the launcher", ["waiting...."]), text
    printed = {}
    for name in ("worker:0", "worker:1"):
        status, lines = tasks[name]
        assert status == "exit 0", text
        lines = [line for line in lines if not line.startswith(("WARNING", "Instructions", "Please switch", " ", "/"))
                 or line == " Finished!"]
        assert lines[0] == "sess ok" and re.fullmatch(r"\d+", lines[1]), text
        assert lines[-1] == " Finished!", text
        epochs = [EPOCH.match(line) for line in lines[2:-1]]
        assert epochs and all(epochs), text
        printed[name] = (int(lines[1]), [int(m.group(1)) for m in epochs])
        assert all(n % 2 == 1 for n in printed[name][1]), text  # printed when the global step is even
        assert max(printed[name][1]) >= 120, text  # ran at least to --max_steps
    assert printed["worker:0"][0] == 0, text  # the chief initialized the variables
    # sess.run([train_op, global_step]) returns the step before its update, as TF's ps sends
    # it: the chief's first step prints "Epoch: 1", as the seed shows
    assert printed["worker:0"][1][0] == 1, text
    steps0, steps1 = set(printed["worker:0"][1]), set(printed["worker:1"][1])
    # one global step counter, on the ps: the workers print different steps (two reading the
    # same step before either updates it, as in TF, is rare; two counters would print the same)
    assert len(steps0 | steps1) > 0.75 * (len(steps0) + len(steps1)), text
    checkpoints = os.listdir(tmp_path / "log" / "mnist_with_summaries")
    assert any(name.startswith("sv.cpk-") for name in checkpoints), checkpoints
    assert any(name.startswith("events.") for name in os.listdir(tmp_path / "log" / "super")), "no summaries"
