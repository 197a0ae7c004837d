"""GPU artifacts (``tfc aot --target cuda``, ``CompiledGraph.save(target="cuda")``): the files,
the manifest, a loader that needs no compiler, and the plan they carry run (on the host
emulation here, on the GPU in the device checks) to the compiled program's results."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.aot_runtime import ArtifactError
from tfc.codegen.gpu.ptx import libdevice_path, ptxas_path
from tfc.frontend import errors
from tfc.runtime.cuda import available

pytestmark = pytest.mark.skipif(libdevice_path() is None, reason="libdevice is not installed")


def _compiled(native=False, **kwargs):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 5], name="x")
        w = tf.constant(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))
        logits = tf.matmul(x, w) + tf.constant([0.1, 0.2, 0.3])
        probabilities = tf.nn.softmax(logits, name="probabilities")
        total = tf.reduce_sum(tf.tanh(logits), name="total")
        return tfc.compile({"p": probabilities, "t": total}, feeds=[x], native=native, **kwargs)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("gpu") / "model")
    manifest = _compiled().save(directory, name="net", target="cuda", arch="sm_80")
    return directory, manifest


def test_the_folder_holds_ptx_plan_constants_and_a_manifest(artifact):
    directory, manifest = artifact
    expected = {"net.ptx", "net.plan.json", "net.constants", "manifest.json"} | ({"net.cubin"} if ptxas_path() else set())
    assert set(os.listdir(directory)) == expected
    assert manifest["format"] == "tfc-aot-cuda" and manifest["target"] == {"kind": "cuda", "arch": "sm_80"}
    assert [t["name"] for t in manifest["inputs"]] == ["x"] and manifest["inputs"][0]["shape"] == ["s0", 5]
    with open(os.path.join(directory, "net.ptx")) as f:
        ptx = f.read()
    plan = json.load(open(os.path.join(directory, "net.plan.json")))
    for kernel in plan["kernels"]:
        assert f".entry {kernel}(" in ptx
    assert {step["launch"] for step in plan["steps"] if "launch" in step} == set(plan["kernels"])
    # the softmax and the total's chunks are cooperative kernels: their launches carry a block size
    assert sorted(step["block"] or 0 for step in plan["steps"] if "launch" in step)[-2:] == [32, 256]


def test_the_loader_needs_no_compiler(artifact):
    directory, _ = artifact
    script = ("import sys; sys.modules['llvmlite'] = None\n"
              "import tfc, numpy as np\n"
              f"model = tfc.load({directory!r})\n"
              "print(type(model).__name__, [t['name'] for t in model.inputs])\n"
              "assert not any(m.startswith('llvmlite') for m in sys.modules if sys.modules[m] is not None)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "LoadedModel ['x']"


def test_without_a_gpu_the_first_call_says_so(artifact):
    if available():
        pytest.skip("this machine has a GPU")
    model = tfc.load(artifact[0])
    with pytest.raises(errors.NotFoundError, match="^no CUDA device/driver was found"):
        model(np.ones((2, 5), np.float32))


def test_the_artifacts_plan_runs_to_the_programs_results(artifact):
    """The saved plan, kernels table and constants, run on the host emulation of the same
    kernels, give the CPU program's results (the artifact's data is faithful)."""
    from tfc.codegen.gpu.program import GpuProgram
    from tfc.runtime.cuda.artifact import load_gpu
    from tfc.runtime.cuda.executable import emulated_device
    from tfc.aot_runtime import _gpu_manifest

    directory, _ = artifact
    compiled = _compiled()
    program = GpuProgram(compiled.module.main, "sm_80")
    program.build()
    device = emulated_device(program.module_text("host"), program.kernels)
    model = load_gpu(directory, _gpu_manifest(directory), device=device)
    reference = _compiled(native=True)
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    got, want = model(x), reference(x)
    np.testing.assert_allclose(got["p"], want["p"], rtol=1e-6)
    np.testing.assert_allclose(got["t"], want["t"], rtol=1e-5)
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        model(np.ones((2, 4), np.float32))


def test_a_modified_plan_is_refused(artifact, tmp_path):
    import shutil

    directory = str(tmp_path / "copy")
    shutil.copytree(artifact[0], directory)
    with open(os.path.join(directory, "net.plan.json"), "a") as f:
        f.write(" ")
    with pytest.raises(ArtifactError, match="net.plan.json is larger than built"):
        tfc.load(directory)


def test_tfc_aot_target_cuda(tmp_path, capsys):
    from tfc.cli import main

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / "mlp"
    assert main(["aot", os.path.join(root, "examples", "mlp.py"), "--fetch", "probabilities", "-o", str(out),
                 "--target", "cuda", "--arch", "sm_90"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"wrote {out}/ for CUDA sm_90\n")
    assert "model.ptx" in text and "model.plan.json" in text
