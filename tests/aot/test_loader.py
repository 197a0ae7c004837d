"""tfc.load: numpy and ctypes only, exports only the documented symbols, refuses bad artifacts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import tfc
from aot_helpers import run_python
from tfc import aot_runtime
from tfc.aot_runtime import ArtifactError

_BLOCKED_LOAD = r'''
import sys

class BlockLlvmlite:
    def find_spec(self, name, path=None, target=None):
        if name == "llvmlite" or name.startswith("llvmlite."):
            raise ImportError("llvmlite is blocked in this test")
        return None

sys.meta_path.insert(0, BlockLlvmlite())
import numpy as np
import tfc

model = tfc.load(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], model(x))
try:
    model(np.zeros((2, 5), np.float32))
except ValueError as e:
    print("ERROR", type(e).__name__, e)
heavy = sorted(m for m in sys.modules if m.split(".")[0] == "llvmlite" or m in (
    "tfc.compiler", "tfc.codegen", "tfc.passes", "tfc.frontend.graph", "tfc._api", "tfc.ir"))
print("HEAVY", heavy)
'''


def test_load_runs_without_llvmlite_or_the_compiler(mlp, tmp_path):
    x = np.random.RandomState(3).randn(4, 32).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = run_python(_BLOCKED_LOAD, mlp.directory, tmp_path / "x.npy", tmp_path / "y.npy")
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), mlp.reference(x), rtol=1e-5, atol=1e-6)
    assert "HEAVY []" in out
    assert "ERROR ValueError Cannot feed value of shape (2, 5) for Tensor 'x:0', which has shape '(?, 32)'" in out


def test_only_the_documented_symbols_are_exported(mlp):
    if shutil.which("nm") is None:
        pytest.skip("nm is not installed")
    library = os.path.join(mlp.directory, "libmodel.so")
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert names == {"tfc_main", "tfc_pool_set_size", "tfc_signature"}
    manifest = json.load(open(os.path.join(mlp.directory, "manifest.json")))
    assert manifest["exports"] == ["tfc_main", "tfc_pool_set_size", "tfc_signature"]


@pytest.fixture
def copy(mlp, tmp_path):
    def make():
        target = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(mlp.directory, target)
        return target

    return make


def _rewrite_manifest(directory, change) -> None:
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    manifest["manifest_sha256"] = aot_runtime.manifest_digest(manifest)
    path.write_text(json.dumps(manifest))


def test_a_copied_artifact_loads(copy):
    model = tfc.load(copy())
    assert model(np.ones((2, 32), np.float32)).shape == (2, 10)


def test_truncated_library_is_refused(copy):
    d = copy()
    data = (d / "libmodel.so").read_bytes()
    (d / "libmodel.so").write_bytes(data[:len(data) // 2])
    with pytest.raises(ArtifactError, match=r"libmodel.so is truncated \(\d+ bytes, the manifest says \d+\)"):
        tfc.load(d)


def test_modified_library_is_refused(copy):
    d = copy()
    data = bytearray((d / "libmodel.so").read_bytes())
    data[-100] ^= 0xFF
    (d / "libmodel.so").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="libmodel.so was modified"):
        tfc.load(d)


def test_edited_manifest_is_refused(copy):
    d = copy()
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["inputs"][0]["shape"][1] = 31
    (d / "manifest.json").write_text(json.dumps(manifest, indent=1))
    with pytest.raises(ArtifactError, match="manifest.json was modified after the artifact was built"):
        tfc.load(d)
    (d / "manifest.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="is not valid JSON"):
        tfc.load(d)


def test_weights_of_the_wrong_size_are_refused(copy):
    d = copy()
    with open(d / "model.weights", "ab") as f:
        f.write(b"\0" * 64)
    with pytest.raises(ArtifactError, match="model.weights is larger than built"):
        tfc.load(d)
    # Even with a manifest re-signed for the new file, the weights must be what the program reads.
    size = (d / "model.weights").stat().st_size
    _rewrite_manifest(d, lambda m: m["files"]["model.weights"].update(
        bytes=size, sha256=aot_runtime._sha256(str(d / "model.weights"))))
    with pytest.raises(ArtifactError, match=r"model.weights has \d+ bytes, but the weights need \d+"):
        tfc.load(d)


def test_missing_files_and_foreign_folders_are_refused(copy, tmp_path):
    d = copy()
    os.remove(d / "model.h")
    with pytest.raises(ArtifactError, match="model.h is missing"):
        tfc.load(d)
    with pytest.raises(ArtifactError, match="is not a tfc artifact: it has no manifest.json"):
        tfc.load(tmp_path)
    with pytest.raises(ArtifactError, match="no such artifact folder"):
        tfc.load(tmp_path / "nowhere")


def test_cpu_features_the_host_lacks_are_refused(copy, monkeypatch):
    d = copy()
    _rewrite_manifest(d, lambda m: m["target"].update(cpu="x86-64-v4", features=["sse4.2", "avx2", "avx512f",
                                                                                  "avx512bw", "evex512"]))
    flags = {"sse", "sse2", "pni", "ssse3", "sse4_1", "sse4_2", "cx16", "popcnt", "lahf_lm", "cmov", "cx8", "fxsr",
             "mmx"}
    monkeypatch.setattr(aot_runtime, "host_cpu_flags", lambda: set(flags))
    with pytest.raises(ArtifactError, match=r"built for CPU 'x86-64-v4' and needs CPU features this machine "
                                            r"lacks: avx2, avx512bw, avx512f.*--target-cpu x86-64-v2"):
        tfc.load(d)
    with pytest.raises(ArtifactError, match="built for x86_64-unknown-linux-gnu, but this machine is aarch64"):
        aot_runtime.check_target({"triple": "x86_64-unknown-linux-gnu", "cpu": "x", "features": []},
                                 machine="aarch64")
    # The check compares LLVM feature names with /proc/cpuinfo's spellings.
    aot_runtime.check_target({"triple": "x86_64-pc-linux-gnu", "cpu": "x86-64-v2",
                              "features": ["sse3", "sse4.1", "sse4.2", "sahf", "64bit", "crc32"]},
                             host_flags={"pni", "sse4_1", "sse4_2", "lahf_lm"}, machine="x86_64")


def test_the_host_passes_its_own_check(mlp):
    manifest = json.load(open(os.path.join(mlp.directory, "manifest.json")))
    aot_runtime.check_target(manifest["target"])
