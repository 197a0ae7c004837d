"""`tfc aot` on a SavedModel directory (its tag set and signature choose the inputs and
outputs) and on a GraphDef with `--checkpoint`, both written by TensorFlow
(tests/fixtures/tf_saved_models)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tfc
from tfc.cli import main
from tfc.protos import SavedModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tf_saved_models")


def test_aot_of_a_tensorflow_saved_model_uses_its_serving_signature(tmp_path, capsys):
    expected = np.load(os.path.join(FIXTURES, "mlp", "expected.npz"))
    out = str(tmp_path / "mlp")
    assert main(["aot", os.path.join(FIXTURES, "mlp"), "-o", out]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:4] == ["  input  x: float32[s0, 4]", "  output logits_BiasAdd: float32[s0, 3]",
                            "  output probabilities: float32[s0, 3]"]
    assert not any("note:" in line for line in printed)
    logits, probabilities = tfc.load(out)(expected["x"])
    np.testing.assert_allclose(logits, expected["logits"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(probabilities, expected["probabilities"], rtol=1e-6, atol=1e-7)


def test_aot_of_another_signature_of_a_text_saved_model(tmp_path, capsys):
    expected = np.load(os.path.join(FIXTURES, "cond", "expected.npz"))
    out = str(tmp_path / "scaled")
    assert main(["aot", os.path.join(FIXTURES, "cond"), "--tag-set", "serve", "--signature-def", "scaled",
                 "--feed", "x:f32[?,3]", "-o", out]) == 0
    assert capsys.readouterr().out.splitlines()[1:3] == ["  input  x: float32[s0, 3]", "  output z: float32[s0, 3]"]
    np.testing.assert_array_equal(tfc.load(out)(expected["x"]), expected["z"])


def test_aot_of_a_graph_def_with_variables_from_a_tensorflow_checkpoint(tmp_path):
    """The GraphDef of TF's SavedModel as a .pb, its variables/ checkpoint as --checkpoint."""
    expected = np.load(os.path.join(FIXTURES, "mlp", "expected.npz"))
    saved_model = SavedModel()
    saved_model.ParseFromString(open(os.path.join(FIXTURES, "mlp", "saved_model.pb"), "rb").read())
    graph_def = saved_model.meta_graphs[0].graph_def
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
    (tmp_path / "mlp.pb").write_bytes(graph_def.SerializeToString())
    out = str(tmp_path / "artifact")
    assert main(["aot", str(tmp_path / "mlp.pb"), "--fetch", "probabilities", "--checkpoint",
                 os.path.join(FIXTURES, "mlp", "variables", "variables"), "-o", out]) == 0
    np.testing.assert_allclose(tfc.load(out)(expected["x"]), expected["probabilities"], rtol=1e-6, atol=1e-7)


def test_aot_saved_model_errors(tmp_path):
    cond = os.path.join(FIXTURES, "cond")
    with pytest.raises(SystemExit) as info:
        main(["aot", cond, "--signature-def", "nope", "-o", str(tmp_path / "a")])
    assert str(info.value) == (f"tfc aot: {cond}: no SignatureDef 'nope' in the MetaGraphDef tagged serve; it has: "
                               "scaled, serving_default")
    with pytest.raises(SystemExit) as info:
        main(["aot", cond, "--tag-set", "serve,gpu", "-o", str(tmp_path / "a")])
    assert str(info.value) == (f"tfc aot: {cond}: MetaGraphDef associated with tags 'serve', 'gpu' could not be found "
                               "in SavedModel. To inspect available tag-sets in the SavedModel, please use the "
                               "SavedModel CLI: `saved_model_cli`; available_tags: [{'serve'}, {'train'}]")
    with pytest.raises(SystemExit) as info:
        main(["aot", FIXTURES, "-o", str(tmp_path / "a")])
    assert str(info.value) == (f"tfc aot: {FIXTURES}: a directory without saved_model.pb or saved_model.pbtxt (not "
                               "a SavedModel)")
    with pytest.raises(SystemExit) as info:
        main(["aot", cond, "--checkpoint", "x", "-o", str(tmp_path / "a")])
    assert str(info.value) == (f"tfc aot: {cond} is a SavedModel, which holds its variables; --checkpoint is for a "
                               "GraphDef (.pb)")
    graph_pb = os.path.join(ROOT, "tests", "fixtures", "graphs", "cnn.pb")
    with pytest.raises(SystemExit) as info:
        main(["aot", graph_pb, "-o", str(tmp_path / "a")])
    assert str(info.value) == (f"tfc aot: {graph_pb}: give the tensors to compute with --fetch (a SavedModel "
                               "directory names them in its signature)")
    assert not os.path.exists(tmp_path / "a")


def test_the_tfc_command_compiles_a_saved_model_in_a_fresh_process(tmp_path):
    # As a user runs it: the installed `tfc` entry point (python -m tfc.cli), a new process.
    import subprocess
    import sys

    out = str(tmp_path / "mlp")
    done = subprocess.run([sys.executable, "-m", "tfc.cli", "aot", os.path.join(FIXTURES, "mlp"), "-o", out],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "  input  x: float32[s0, 4]" in done.stdout.splitlines()
    expected = np.load(os.path.join(FIXTURES, "mlp", "expected.npz"))
    _, probabilities = tfc.load(out)(expected["x"])
    np.testing.assert_allclose(probabilities, expected["probabilities"], rtol=1e-6, atol=1e-7)
