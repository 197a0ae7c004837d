"""tests/codegen/test_runtime_checks.py re-run on GPU programs (host emulation, see emulation.py)."""
import pytest

from .. import test_runtime_checks as cpu_tests
from .emulation import patch, rerun

rerun(cpu_tests, globals())


@pytest.fixture(autouse=True)
def _gpu_programs(monkeypatch):
    patch(monkeypatch, cpu_tests)
