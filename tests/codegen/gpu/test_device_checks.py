"""tests/codegen/test_runtime_checks.py re-run on the CUDA device (skipped without one)."""
import pytest

from tfc.runtime.cuda import available

from .. import test_runtime_checks as cpu_tests
from .emulation import patch, rerun

pytestmark = pytest.mark.skipif(not available(), reason="no CUDA device")
rerun(cpu_tests, globals(), skip={"test_every_core_op_is_covered"})


@pytest.fixture(autouse=True)
def _gpu_programs(monkeypatch):
    patch(monkeypatch, cpu_tests, device=True)
