"""The persistent compile cache (TFC_CACHE_DIR): object files keyed by IR, target and versions."""
from __future__ import annotations

import json
import os

import numpy as np

import tfc
import tfc.compat.v1 as tf
from tfc.codegen import jit
from tfc.codegen.parallel import jit_runtime


def _compile_small():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        w = tf.constant(np.arange(64, dtype=np.float32).reshape(8, 8) / 64)
        return tfc.compile(tf.tanh(tf.matmul(x, w)) * 3.0, feeds=[x])


def test_the_jit_loads_cached_objects(tmp_path, monkeypatch):
    jit_runtime()  # the once-per-process runtime module is not this test's entry
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    jit.clear_unit_cache()
    x = np.random.RandomState(0).randn(3, 8).astype(np.float32)
    first = _compile_small()
    code = first.result.executable.code
    assert not code.cached and code.units == (2, 2)  # the entry, one fusion (matmul, tanh, * 3)
    entries = sorted(os.listdir(tmp_path))
    assert len(entries) == 2 and all(e.endswith(".o") for e in entries)  # written atomically: no temp files
    jit.clear_unit_cache()  # from here on, objects come from the folder only
    second = _compile_small()
    code = second.result.executable.code
    assert code.cached and code.units == (2, 0) and "cache_load" in second.result.timings
    np.testing.assert_array_equal(second(x), first(x))
    # A damaged entry is ignored, its unit compiled again and the entry rewritten.
    path = tmp_path / entries[0]
    path.write_bytes(path.read_bytes()[:-10])
    jit.clear_unit_cache()
    third = _compile_small()
    assert third.result.executable.code.units == (2, 1)
    np.testing.assert_array_equal(third(x), first(x))
    jit.clear_unit_cache()
    assert _compile_small().result.executable.code.units == (2, 0)


def test_keys_cover_the_target_and_the_object_kind():
    from tfc.codegen.target import Target

    a = Target("x86_64-unknown-linux-gnu", "x86-64-v2", "+sse4.2")
    b = Target("x86_64-unknown-linux-gnu", "x86-64-v3", "+avx2")
    keys = {jit.cache_key("ir", a, "mcjit"), jit.cache_key("ir", b, "mcjit"), jit.cache_key("ir", a, "aot-pic"),
            jit.cache_key("ir2", a, "mcjit")}
    assert len(keys) == 4


def test_aot_builds_reuse_cached_objects(mlp, tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path / "cache"))
    one = mlp.exe.save(str(tmp_path / "one"))
    assert len(os.listdir(tmp_path / "cache")) == 1
    two = mlp.exe.save(str(tmp_path / "two"))
    assert two["build_seconds"]["llvm"] < one["build_seconds"]["llvm"]
    assert one["files"] == two["files"]
    with open(tmp_path / "two" / "manifest.json") as f:
        assert json.load(f)["files"] == one["files"]
    x = np.ones((2, 32), np.float32)
    np.testing.assert_array_equal(tfc.load(tmp_path / "two")(x), tfc.load(tmp_path / "one")(x))
