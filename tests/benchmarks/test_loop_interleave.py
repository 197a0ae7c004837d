"""benchmarks/loop_interleave.py, run as a user runs it: one line per interleave count,
each with a time per call and cycles per 8 elements (the counts' results agree, or it fails)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_each_interleave_count_gets_its_line():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.loop_interleave", "--elements", "4096", "--counts", "1,4",
                           "--rounds", "3"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for count, line in zip((1, 4), lines):
        assert re.fullmatch(rf"interleave {count}: +[0-9.]+ us per call, +[0-9.]+ cycles per 8 elements", line), line
