"""The `tfc` command as a user runs it: GraphDef inputs, and every mistake reported on one
line of stderr with a non-zero exit status, never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model_pb(tmp_path_factory) -> str:
    """input [?,784] -> logits = input @ w + b, as a binary GraphDef (the README's command)."""
    path = tmp_path_factory.mktemp("pb") / "model.pb"
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None, 784], name="input")
        w = tf.constant(np.full([784, 10], 0.5, np.float32), name="w")
        b = tf.constant(np.arange(10, dtype=np.float32), name="b")
        tf.add(tf.matmul(x, w), b, name="logits")
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return str(path)


@pytest.fixture(scope="module")
def variables_pb(tmp_path_factory):
    """A GraphDef with a variable (out = input @ w) and a checkpoint holding w."""
    folder = tmp_path_factory.mktemp("vars")
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None, 4], name="input")
        w = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="w")
        tf.matmul(x, w, name="out")
        with tf.Session() as sess:
            sess.run(w.initializer)
            prefix = tf.train.Saver().save(sess, str(folder / "ckpt"))
    (folder / "vars.pb").write_bytes(graph.as_graph_def().SerializeToString())
    return str(folder / "vars.pb"), prefix


def run_cli(*args, env=None):
    environment = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tfc.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=120)


# -- in a fresh process, as a user runs it -----------------------------------------------------
def test_readme_dump_ir_command_on_a_graph_def(model_pb):
    result = run_cli("dump-ir", model_pb, "--fetch", "logits", "--feed", "input:f32[?,784]")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "// ----- IR after lower (5 ops) -----"
    assert lines[1] == "func @main(%input: f32[s0,784]) -> (f32[s0,10]) {"
    assert '  %1 = dot %input, %0 {contract=[[1], [0]]} : f32[s0,10] loc("MatMul")' in lines
    assert "// ----- pass timings -----" in lines


@pytest.mark.parametrize("args, status, message", [
    (["dump-ir", "nope.pb", "--fetch", "logits"], 1, "tfc dump-ir: nope.pb: no such file"),
    (["dump-ir", "{pb}", "--fetch", "logits", "--bogus"], 2,
     "tfc dump-ir: error: unrecognized arguments: --bogus (see tfc dump-ir --help)"),
    (["dump-ir", "{pb}", "--fetch", "logits", "--feed", "input:f32[?,785]"], 1,
     "tfc dump-ir: --feed input:f32[?,785] does not fit input:0, whose shape is [?,784]"),
])
def test_a_mistake_is_one_line_on_stderr(model_pb, args, status, message):
    result = run_cli(*[a.format(pb=model_pb) for a in args])
    assert (result.returncode, result.stdout, result.stderr) == (status, "", message + "\n")


# -- every mistake, in process ----------------------------------------------------------------
def cli_error(args) -> str:
    with pytest.raises(SystemExit) as info:
        main(args)
    assert isinstance(info.value.code, str), info.value.code  # a message: Python prints it, exit status 1
    assert "\n" not in info.value.code
    return info.value.code


@pytest.mark.parametrize("extra, message", [
    (["--fetch", "nope"], "tfc dump-ir: --fetch nope: The name 'nope:0' refers to a Tensor which does not exist. "
                          "The operation, 'nope', does not exist in the graph."),
    (["--fetch", "logits:3"], "tfc dump-ir: --fetch logits:3: The name 'logits:3' refers to a Tensor which does not "
                              "exist. The operation, 'logits', exists but only has 1 outputs."),
    (["--fetch", "logits", "--passes", "fus(ion"],
     "tfc dump-ir: bad --passes regex 'fus(ion': missing ), unterminated subpattern at position 3"),
    (["--fetch", "logits", "--feed", "input:i32[?,784]"], "tfc dump-ir: --feed input:i32[?,784]: input:0 is float32, "
                                                          "not int32"),
    (["--fetch", "logits", "--feed", "input:f32[?]"],
     "tfc dump-ir: --feed input:f32[?] does not fit input:0, whose shape is [?,784]"),
    (["--fetch", "logits", "--feed", "nope:f32[?]"],
     "tfc dump-ir: --feed nope:f32[?]: The name 'nope:0' refers to a Tensor which does not exist. The operation, "
     "'nope', does not exist in the graph."),
    (["--fetch", "logits", "--feed", "input:f32[?,x]"],
     "tfc dump-ir: bad --feed 'input:f32[?,x]'; expected NAME:TYPE[DIMS] like input:f32[?,784] (TYPE one of f16, "
     "f32, f64, i8, i16, i32, i64, u8, pred; a dim is a number or ?)"),
    (["--fetch", "logits", "--feed", "input"],
     "tfc dump-ir: bad --feed 'input'; expected NAME:TYPE[DIMS] like input:f32[?,784] (TYPE one of f16, f32, f64, "
     "i8, i16, i32, i64, u8, pred; a dim is a number or ?)"),
])
def test_dump_ir_mistakes(model_pb, extra, message):
    assert cli_error(["dump-ir", model_pb, *extra]) == message


def test_input_file_mistakes(tmp_path):
    assert cli_error(["dump-ir", str(tmp_path), "--fetch", "y"]) == f"tfc dump-ir: {tmp_path}: not a file"
    garbage = tmp_path / "model.pb"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0fnot a graph")
    assert cli_error(["aot", str(garbage), "--fetch", "y", "-o", str(tmp_path / "out")]).startswith(
        f"tfc aot: {garbage} is not a valid GraphDef: ")
    script = tmp_path / "model.py"
    script.write_text("import tfc.compat.v1 as tf\n\nx = tf.placeholder(tf.float32, [2])\ny = x * undefined\n")
    assert cli_error(["dump-ir", str(script), "--fetch", "y"]) == \
        f"tfc dump-ir: {script}:4: NameError: name 'undefined' is not defined"


def test_usage_mistakes_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["dump-ir", "model.pb"])
    assert info.value.code == 2
    assert capsys.readouterr().err == ("tfc dump-ir: error: the following arguments are required: --fetch "
                                       "(see tfc dump-ir --help)\n")
    with pytest.raises(SystemExit) as info:
        main(["frob"])
    assert info.value.code == 2
    err = capsys.readouterr().err  # argparse's wording of the choices differs between Python versions
    assert err.startswith("tfc: error: argument command: invalid choice: 'frob'") and \
        err.endswith(" (see tfc --help)\n") and err.count("\n") == 1


def test_aot_of_a_graph_def_with_variables_needs_a_checkpoint(variables_pb, tmp_path, capsys):
    path, prefix = variables_pb
    assert cli_error(["aot", path, "--fetch", "out", "-o", str(tmp_path / "a")]) == (
        f"tfc aot: {path} has variables (w) whose values a GraphDef does not hold; freeze the graph (variables to "
        "constants) or give --checkpoint PREFIX")
    assert cli_error(["aot", path, "--fetch", "out", "-o", str(tmp_path / "a"), "--checkpoint", prefix + "x"]) == \
        f"tfc aot: The passed save_path is not a valid checkpoint: {prefix}x"
    assert main(["aot", path, "--fetch", "out", "-o", str(tmp_path / "a"), "--checkpoint", prefix]) == 0
    assert "  output out: float32[s0, 2]" in capsys.readouterr().out.splitlines()
    np.testing.assert_array_equal(tfc.load(str(tmp_path / "a"))(np.ones([1, 4], np.float32)), [[12.0, 16.0]])


def test_bad_cache_dir_is_one_line(model_pb, tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", model_pb)
    assert cli_error(["aot", model_pb, "--fetch", "logits", "-o", str(tmp_path / "a")]) == (
        f"tfc aot: TFC_CACHE_DIR='{model_pb}' is not a folder (it names a file); point it at a folder for compiled "
        "code, or unset it")
