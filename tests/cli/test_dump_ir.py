"""`tfc dump-ir`: the IR after lowering and each pass, diffs, fusion report, dumps."""
from __future__ import annotations

import os

import tfc.compat.v1 as tf
from tfc.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples", "mlp.py")


def test_after_all_prints_every_stage(capsys):
    assert main(["dump-ir", MLP, "--fetch", "probabilities", "--after-all"]) == 0
    out = capsys.readouterr().out
    stages = [line.split("after ")[1].split(" (")[0] for line in out.splitlines()
              if line.startswith("// ----- IR after")]
    assert stages[0] == "lower"
    assert stages[-1] == "buffer_assign"
    assert {"canonicalize.1", "const_fold.1", "cse.1", "dce.1", "fusion"} <= set(stages)
    assert 'func @main(%x: f32[s0,784], %mlp.w1: ref<f32[784,256]>' in out
    assert 'loc("mlp/MatMul"("mlp.py":16))' in out
    assert 'kind="output"' in out
    assert "// ----- pass timings -----" in out and "total" in out


def test_diff_and_fusion_report(capsys):
    assert main(["dump-ir", MLP, "--fetch", "probabilities", "--passes", "fusion", "--diff", "--fusion-report"]) == 0
    out = capsys.readouterr().out
    assert "// ----- diff lower -> fusion" in out
    assert "+  %" in out and "fusion" in out
    report = out.split("// ----- fusion report -----")[1]
    assert "output fusion" in report and "mlp.py:16" in report


def test_dump_to_writes_numbered_files_and_an_index(tmp_path, capsys):
    target = tmp_path / "ir"
    assert main(["dump-ir", MLP, "--fetch", "probabilities", "--dump-to", str(target)]) == 0
    files = sorted(os.listdir(target))
    assert files[0] == "0000.lower.tfcir" and "index.txt" in files
    index = (target / "index.txt").read_text().splitlines()
    assert index[0].startswith("0000.lower.tfcir\tlower\t")
    assert len(index) == len(files) - 1
    assert (target / "0000.lower.tfcir").read_text().startswith("func @main(")


def test_graph_def_input_with_feed_types(tmp_path, capsys):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, name="input")
        tf.nn.softmax(tf.matmul(x, tf.ones([3, 2])), name="softmax")
    path = tmp_path / "model.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    assert main(["dump-ir", str(path), "--fetch", "softmax", "--feed", "input:f32[?,3]"]) == 0
    out = capsys.readouterr().out
    assert "func @main(%input: f32[s0,3]) -> (f32[s0,2])" in out


def test_timings_compile_natively_and_show_every_phase(capsys):
    assert main(["dump-ir", MLP, "--fetch", "probabilities", "--timings"]) == 0
    table = capsys.readouterr().out.split("// ----- compile timings (dump hooks included) -----\n")[1]
    phases = [line.rsplit(None, 1)[0].strip() for line in table.splitlines()[2:] if line and line[0] != "-"
              and not line.startswith(("kernels", "total"))]
    assert phases[:2] == ["lowering (graph -> IR)", "passes"]
    assert {"canonicalize.1", "fusion", "buffer_assign", "verification, dump hooks", "LLVM IR emission",
            "LLVM, compile units (wall)", "optimisation (thread s)", "instruction selection (thread s)",
            "MCJIT link"} <= set(phases)
    assert "kernels: 3 calls, 3 emitted, 3 distinct LLVM functions (identical kernels are shared)" in table
    assert "ms to emit  fusion[row]: add, reduce, sub, exp, div (probabilities @ mlp.py:18)" in table


def test_compiled_graph_timings_name_each_phase():
    import numpy as np
    import tfc

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8])
        h = x
        for _ in range(4):
            h = tf.layers.dense(h, 8, activation=tf.nn.relu)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            compiled = tfc.compile(h, feeds=[x], session=sess)
            timings = compiled.timings
            assert compiled(np.ones((2, 8), np.float32)).shape == (2, 8)
    assert list(timings)[:2] == ["lowering", "passes"]
    assert {"codegen", "llvm_units", "llvm_link", "unit_opt", "unit_codegen"} <= set(timings) or "memory_cache" in timings
    assert all(seconds >= 0 for seconds in timings.values())
    # four identical dense layers: one emitted kernel for the first, one shared by the others
    assert compiled.result.kernels["calls"] == 4 and compiled.result.kernels["distinct"] == 1
