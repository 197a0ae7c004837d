"""The artifact from C (examples/aot_c) and from the `tfc aot` command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from aot_helpers import ROOT, c_pattern

EXAMPLE = os.path.join(ROOT, "examples", "aot_c")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                              reason="needs a C compiler (cc) and make")


def _build_and_run_c(artifact: str, build: str, batch: int) -> dict:
    subprocess.run(["make", "-s", "-C", EXAMPLE, f"BUILD={build}", f"ARTIFACT={artifact}", "program"], check=True,
                   capture_output=True, text=True)
    out = subprocess.run([os.path.join(build, "run"), artifact, str(batch)], check=True, capture_output=True,
                         text=True).stdout
    outputs, current = {}, None
    for line in out.splitlines():
        if line.startswith("output "):
            _, name, _dtype, dims = line.split()
            current = outputs[name] = {"shape": [int(d) for d in dims.strip("[]").split(",") if d], "values": []}
        else:
            current["values"].append(float(line))
    return {k: np.array(v["values"], np.float32).reshape(v["shape"]) for k, v in outputs.items()}


@needs_cc
@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_the_c_program_prints_what_session_run_computes(which, request, tmp_path):
    built = request.getfixturevalue(which)
    batch = 3
    shape = [batch] + [d for d in built.feeds[0].shape.as_list()[1:]]
    expected = built.reference(c_pattern(shape))
    outputs = _build_and_run_c(built.directory, str(tmp_path / "build"), batch)
    (name, value), = outputs.items()
    assert name == built.fetches.op.name
    assert value.shape == expected.shape
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


_NAMED = r'''
#include <stdio.h>
#include "model.h"

int main(int argc, char **argv) {
  (void)argc;
  void *weights = model_load_weights(argv[1]);
  if (!weights) return 1;
  float x[2 * 32];
  for (int i = 0; i < 2 * 32; i++) x[i] = (float)((i % 13) - 6) / 8.0f;
  model_io io = {0};
  io.x = x; io.x_shape[0] = 2; io.x_shape[1] = 32;
  if (model_run(&io, weights) != 0) { fprintf(stderr, "%s\n", io.message); return 2; }
  printf("%lld %lld\n", (long long)io.probabilities_shape[0], (long long)io.probabilities_shape[1]);
  for (int i = 0; i < 20; i++) printf("%.9g\n", (double)io.probabilities[i]);
  model_free_outputs(&io);
  io.x_shape[1] = 31;
  int status = model_run(&io, weights);
  printf("%d %s\n", status, io.message);
  model_free_weights(weights);
  return 0;
}
'''


@needs_cc
def test_the_named_c_interface(mlp, tmp_path):
    source = tmp_path / "named.c"
    source.write_text(_NAMED)
    program = tmp_path / "named"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", f"-I{mlp.directory}", "-o", str(program),
                    str(source), f"-L{mlp.directory}", "-lmodel", f"-Wl,-rpath,{mlp.directory}"], check=True)
    lines = subprocess.run([str(program), os.path.join(mlp.directory, "model.weights")], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    assert lines[0] == "2 10"
    expected = mlp.reference(c_pattern([2, 32]))
    np.testing.assert_allclose(np.array(lines[1:21], np.float32).reshape(2, 10), expected, rtol=1e-5, atol=1e-6)
    assert lines[21] == "-1 input 'x' dim 1 is 31, but the program needs 32"


def test_tfc_aot_command_with_a_portable_cpu_baseline(tmp_path, capsys):
    from tfc.cli import _load_graph, main

    out = str(tmp_path / "artifact")
    assert main(["aot", os.path.join(EXAMPLE, "model.py"), "--fetch", "probabilities", "--feed", "x:f32[?,16]",
                 "--target-cpu", "x86-64-v2", "-o", out]) == 0
    printed = capsys.readouterr().out
    assert "input  x: float32[s0, 16]" in printed and "exports: tfc_main, tfc_pool_set_size, tfc_signature" in printed
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    assert manifest["target"]["cpu"] == "x86-64-v2"
    assert "sse4.2" in manifest["target"]["features"] and "avx" not in manifest["target"]["features"]
    graph = _load_graph(os.path.join(EXAMPLE, "model.py"))
    x = np.random.RandomState(0).randn(5, 16).astype(np.float32)
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = sess.run("probabilities:0", {"x:0": x})
    np.testing.assert_allclose(tfc.load(out)(x), expected, rtol=1e-5, atol=1e-6)


def test_tfc_aot_command_errors(tmp_path):
    from tfc.cli import main

    model = os.path.join(EXAMPLE, "model.py")
    with pytest.raises(SystemExit, match="bad --feed"):
        main(["aot", model, "--fetch", "probabilities", "--feed", "x:f32(?,16)", "-o", str(tmp_path / "a")])
    with pytest.raises(SystemExit, match="is float32, not int32"):
        main(["aot", model, "--fetch", "probabilities", "--feed", "x:i32[?,16]", "-o", str(tmp_path / "a")])
    with pytest.raises(SystemExit, match="unknown target CPU 'pentium9'"):
        main(["aot", model, "--fetch", "probabilities", "--target-cpu", "pentium9", "-o", str(tmp_path / "a")])


def test_tfc_aot_command_on_a_graphdef_frozen_by_tensorflow(tmp_path):
    from tfc.cli import main

    fixtures = os.path.join(ROOT, "tests", "fixtures", "graphs")
    data = np.load(os.path.join(fixtures, "cnn.npz"))
    out = str(tmp_path / "cnn")
    fetches = [arg for name in data["output_names"] for arg in ("--fetch", str(name))]
    assert main(["aot", os.path.join(fixtures, "cnn.pb"), *fetches, "-o", out]) == 0
    logits, gap = tfc.load(out)(data["in0"])
    np.testing.assert_allclose(logits, data["out0"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gap, data["out1"], rtol=1e-4, atol=1e-5)
