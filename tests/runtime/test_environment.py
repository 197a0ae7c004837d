"""tfc's environment variables (tfc/_env.py): a value tfc cannot use is an error naming the
variable, wherever it is read (the JIT's thread pool, the artifact loader, the compile cache)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tfc import _env, aot_runtime
from tfc.codegen import jit, parallel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_bad_thread_counts_name_the_variable(monkeypatch, value):
    monkeypatch.setenv("TFC_NUM_THREADS", value)
    message = f"TFC_NUM_THREADS='{value}': expected a positive whole number of threads"
    for read in (_env.num_threads, parallel.default_pool_size, aot_runtime.default_pool_size):
        with pytest.raises(_env.EnvironmentVariableError) as info:
            read()
        assert str(info.value) == message
    assert issubclass(_env.EnvironmentVariableError, ValueError)


def test_thread_count_values(monkeypatch):
    monkeypatch.setenv("TFC_NUM_THREADS", " 3 ")
    assert (parallel.default_pool_size(), aot_runtime.default_pool_size()) == (3, 3)
    monkeypatch.setenv("TFC_NUM_THREADS", "")
    assert _env.num_threads() is None
    assert parallel.default_pool_size() == len(os.sched_getaffinity(0))


def test_cache_dir_must_be_a_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "new"))
    assert jit.cache_dir() == str(tmp_path / "new")  # made on first store
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("TFC_CACHE_DIR", str(afile))
    with pytest.raises(_env.EnvironmentVariableError) as info:
        jit.cache_dir()
    assert str(info.value) == (f"TFC_CACHE_DIR='{afile}' is not a folder (it names a file); point it at a folder "
                               "for compiled code, or unset it")
    monkeypatch.setenv("TFC_CACHE_DIR", "")
    assert jit.cache_dir() is None


def test_session_run_reports_a_bad_thread_count():
    """The JIT's thread pool is sized once per process, so this runs in a fresh one."""
    program = textwrap.dedent("""
        import numpy as np
        import tfc.compat.v1 as tf
        x = tf.placeholder(tf.float32, [2])
        with tf.Session() as sess:
            try:
                sess.run(x * 2.0, {x: np.ones(2, np.float32)})
            except ValueError as e:
                print(type(e).__name__, e)
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env=dict(os.environ, TFC_NUM_THREADS="abc"))
    assert result.stdout == "EnvironmentVariableError TFC_NUM_THREADS='abc': expected a positive whole number of " \
                            "threads\n", result.stderr
