"""benchmarks/loop_machine_code.py: tfc's kernel taken out as an object file and called
from C computes what numpy does (the XLA half needs jax, which the test venv lacks)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import loop_machine_code

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CALLER = r"""
#include <stdint.h>
#include <stdio.h>
""" + loop_machine_code.RUNTIME_STUBS + r"""
int tfc_tanh_4096(float *, const float *, void *, void *, long, long);
int main(void) {
  static float in[4096], out[4096];
  for (int i = 0; i < 4096; i++) in[i] = (i - 2048) / 256.0f;
  int status = tfc_tanh_4096(out, in, 0, 0, 0, 4096);
  for (int i = 0; i < 4096; i++) printf("%.9g\n", out[i]);
  return status;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_tfc_kernel_object_called_from_c_matches_numpy(tmp_path):
    symbol = loop_machine_code.tfc_object("tanh", loop_machine_code.EXPRESSIONS["tanh"][0], 4096, str(tmp_path))
    assert symbol == "tfc_tanh_4096"
    (tmp_path / "caller.c").write_text(CALLER)
    subprocess.run(["cc", "-O2", "-no-pie", "-o", "caller", "caller.c", f"{symbol}.o", "-lm"], cwd=tmp_path, check=True,
                   capture_output=True)
    done = subprocess.run([os.path.join(tmp_path, "caller")], capture_output=True, text=True, check=True)
    got = np.array(done.stdout.split(), dtype=np.float32)
    x = (np.arange(4096, dtype=np.float32) - 2048) / np.float32(256)
    want = np.tanh((x * np.float32(1.5) + np.float32(0.5)).astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2.4e-7, atol=0)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None or shutil.which("cc") is None,
                    reason="needs jax and a C compiler")
def test_the_command_prints_both_compilers_rows_with_outputs_that_agree():
    done = subprocess.run([sys.executable, "-m", "benchmarks.loop_machine_code", "--elements", "4096", "--rounds", "5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [line.strip("|").split("|") for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert [cells[0].strip() for cells in rows[1:]] == ["full", "tanh", "sigmoid"]
    for cells in rows[1:]:
        assert int(cells[1]) == 4096
        assert float(cells[2]) > 0 and float(cells[3]) > 0
        assert float(cells[5]) < 1e-5  # XLA's call frame read as meant: the outputs agree
