"""test_block.py, test_gemm.py and test_transpose.py (the cooperative kernels: block
reductions, row fusions, the shared-memory GEMM, implicit-GEMM conv, tiled transposes) re-run on the CUDA device (skipped without
one): the GPU must give the bits the emulation gives, e.g. a row sum in the documented
butterfly order, and the GEMM the per-thread kernel's."""
import pytest

from tfc.runtime.cuda import available

from . import test_block, test_gemm, test_transpose
from .emulation import rerun

pytestmark = pytest.mark.skipif(not available(), reason="no CUDA device")
EMULATION_ONLY = {"test_no_phase_reads_what_another_thread_of_it_writes",  # thread order: the emulation's
                  "test_phases_do_not_nest_and_barriers_stay_out_of_phases",  # no kernel runs
                  "test_threads_follow_the_row_length"}
rerun(test_block, globals(), skip=EMULATION_ONLY)
rerun(test_gemm, globals())
rerun(test_transpose, globals())


@pytest.fixture(autouse=True)
def _on_the_device(monkeypatch):
    monkeypatch.setattr(test_block, "EMULATE", False)
    monkeypatch.setattr(test_gemm, "EMULATE", False)
    monkeypatch.setattr(test_transpose, "EMULATE", False)
