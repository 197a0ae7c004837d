"""The bf16 rows (mlp_bf16, cnn_bf16) at tiny sizes: tfc runs them in a session with
auto_mixed_precision_onednn_bfloat16 on, and the check reports the accuracy change
against f32 (and says when a peer did not apply bf16 at all)."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import report  # noqa: E402
from benchmarks.runner import OK, PeerResult, WorkloadResult  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402
from benchmarks.workloads.bf16 import round_bf16  # noqa: E402


@pytest.mark.parametrize("name", ["mlp_bf16", "cnn_bf16"])
def test_tfc_runs_the_bf16_row_and_the_check_reports_the_change_against_f32(name):
    workload = WORKLOADS[name](tiny=True, seed=1)
    try:
        reference = workload.build_numpy()()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the once-per-process bf16 emulation warning
            got = workload.build_tfc()()
    finally:
        workload.close()
    checks = workload.check({"numpy": reference, "tfc": got, "tf_graph": reference.copy()})
    tfc = checks["tfc"]
    assert tfc.ok and 1e-5 < tfc.max_rel_err < 0.05, tfc  # changed by bf16, within its error
    assert "vs f32: max abs err" in tfc.note and "argmax agreement" in tfc.note
    emulated = float(tfc.note.split("bf16-rounded operands: max rel err ")[1])
    assert emulated < 1e-5  # tiny sizes: no activation near a rounding boundary
    assert "bf16 not applied (TF uses bf16 only with AVX512-BF16 or AMX)" in checks["tf_graph"].note
    assert checks["numpy"].note == ""
    result = WorkloadResult(name, workload.title, "", {"tfc": PeerResult("tfc", OK, check=tfc)})
    assert f"{name} / tfc: vs f32" in report.note_lines([result])


def test_round_bf16_reference():
    bits = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F800001], np.uint32)
    assert round_bf16(bits.view(np.float32)).view(np.uint32).tolist() == [0x3F800000, 0x3F820000, 0x7F800000,
                                                                         0x7F800001]
