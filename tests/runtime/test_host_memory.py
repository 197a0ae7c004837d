"""tfc/runtime/host_memory.py: a tfc server keeps large allocations mapped (glibc), and
TFC_MALLOC_TUNING=0 leaves malloc alone."""
from __future__ import annotations

import sys

import pytest

from tfc import _env
from tfc.runtime import host_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_server_tunes_malloc(monkeypatch):
    import tfc.compat.v1 as tf

    monkeypatch.delenv(_env.MALLOC_TUNING, raising=False)
    server = tf.train.Server.create_local_server()
    server.stop()
    assert host_memory._applied == [True]
    assert host_memory.keep_large_allocations_mapped() is True  # once per process


def test_tuning_off_leaves_malloc_alone(monkeypatch):
    monkeypatch.setenv(_env.MALLOC_TUNING, "0")
    assert host_memory._tune() is False


def test_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv(_env.MALLOC_TUNING, "yes")
    with pytest.raises(_env.EnvironmentVariableError, match=r"TFC_MALLOC_TUNING='yes': expected 0 or 1"):
        _env.malloc_tuning()
