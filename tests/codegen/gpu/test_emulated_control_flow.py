"""tests/codegen/test_control_flow.py re-run on GPU programs (host emulation, see emulation.py)."""
import pytest

from .. import test_control_flow as cpu_tests
from .emulation import patch, rerun

rerun(cpu_tests, globals())


@pytest.fixture(autouse=True)
def _gpu_programs(monkeypatch):
    patch(monkeypatch, cpu_tests)
