"""The compiler's Python side is linear in the size of the program (issue 19).

Work is counted, not timed: ``WorkCounter`` counts the Python lines executed inside the
tfc package (deterministic, whatever the machine's load). For each workload the same
program is built at two sizes about 10x apart, in the same regime (many kernels at both
sizes), and every stage's work must grow about as much as the program does: a stage that
rescans the function per op would grow ~100x.
"""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.compiler import full_pipeline
from tfc.ir import parse_module
from tfc.passes.canonicalize import Canonicalize
from tfc.passes.const_fold import ConstFold
from tfc.passes.cse import CSE
from tfc.passes.dce import DCE
from tfc.passes.lower import FeedSpec, lower_graph
from tfc.passes.manager import PassManager, WorkCounter

SLACK = 1.5  # allowed work growth over the program's growth (constant overheads, dict resizes)


def _sin_chain_gradient(n: int):
    """dx of y = sin(y) + 1 applied n times: what the issue's N=2000 case builds."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = x
        for _ in range(n):
            y = tf.sin(y) + 1.0
        (grad,) = tf.gradients(y, x)
    return graph, [grad], [], {x: np.ones(8, np.float32)}


def _mlp_training_step(layers: int):
    """Dense 16->16 relu layers, a layer norm every 4th, softmax cross entropy, Adam."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 16], name="x")
        labels = tf.placeholder(tf.float32, [None, 4], name="labels")
        h = x
        for i in range(layers):
            h = tf.layers.dense(h, 16, activation=tf.nn.relu, name=f"dense{i}")
            if i % 4 == 3:
                mean, var = tf.nn.moments(h, axes=[1], keep_dims=True)
                h = (h - mean) * tf.rsqrt(var + 1e-5)
        logits = tf.layers.dense(h, 4, name="logits")
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    feeds = {x: np.zeros((8, 16), np.float32), labels: np.zeros((8, 4), np.float32)}
    return graph, [], [train], feeds


def _work(build, size: int) -> dict:
    """Work of each stage for one size: graph construction, lowering, every pass."""
    with WorkCounter() as counter:
        graph, fetches, targets, feeds = build(size)
    work = {"graph": counter.lines}
    specs = [FeedSpec(t, t.dtype.base_dtype, v.shape) for t, v in feeds.items()]
    with WorkCounter() as counter:
        lowered = lower_graph(fetches, targets, specs)
    work["lower"] = counter.lines
    ops = lowered.module.op_count()
    report = PassManager(full_pipeline(), verify="end", count_work=True).run(lowered.module)
    work.update(report.work())
    with WorkCounter() as counter:
        from tfc.ir.verifier import verify

        verify(lowered.module)
    work["verify"] = counter.lines
    return {"ops": ops, "graph_ops": len(graph.get_operations()), "work": work}


def _assert_linear(small: dict, large: dict) -> None:
    growth = large["ops"] / small["ops"]
    assert growth > 5, (small, large)  # the sizes really differ
    report = []
    for stage, work in large["work"].items():
        ratio = work / max(small["work"][stage], 1)
        report.append(f"{stage}: {small['work'][stage]} -> {work} lines (x{ratio:.1f})")
    for stage, work in large["work"].items():
        ratio = work / max(small["work"][stage], 1)
        assert ratio < SLACK * growth, (f"{stage} grew x{ratio:.1f} for a program x{growth:.1f} larger:\n"
                                        + "\n".join(report))


def test_sin_chain_gradient_compiles_in_linear_work():
    small, large = _work(_sin_chain_gradient, 100), _work(_sin_chain_gradient, 600)
    assert set(small["work"]) >= {"graph", "lower", "canonicalize", "const_fold", "cse", "dce", "fusion",
                                  "buffer_assign", "verify"}
    _assert_linear(small, large)


def test_mlp_training_step_compiles_in_linear_work():
    small, large = _work(_mlp_training_step, 4), _work(_mlp_training_step, 40)
    _assert_linear(small, large)


# -- each simplification pass on synthetic IR with something to do at every op ----------------
def _simplifiable(n: int) -> str:
    """n blocks of: x*1 (canonicalize), 2+3 (const_fold), a duplicate (cse), a dead op (dce)."""
    lines = ["%one = constant dense<1.0> : f32[]", "%two = constant dense<2.0> : f32[]",
             "%three = constant dense<3.0> : f32[]"]
    prev = "%x"
    for i in range(n):
        lines += [f"%b{i} = broadcast %one {{dims=[]}} : f32[s0]",
                  f"%m{i} = mul {prev}, %b{i} : f32[s0]",
                  f"%c{i} = add %two, %three : f32[]",
                  f"%cb{i} = broadcast %c{i} {{dims=[]}} : f32[s0]",
                  f"%e{i} = exp %m{i} : f32[s0]",
                  f"%f{i} = exp %m{i} : f32[s0]",
                  f"%dead{i} = tanh %e{i} : f32[s0]",
                  f"%s{i} = add %e{i}, %f{i} : f32[s0]",
                  f"%y{i} = sub %s{i}, %cb{i} : f32[s0]"]
        prev = f"%y{i}"
    body = "".join(f"  {line}\n" for line in lines)
    return f"func @main(%x: f32[s0]) -> (f32[s0]) {{\n{body}  return {prev}\n}}\n"


@pytest.mark.parametrize("make_pass", [Canonicalize, ConstFold, CSE, DCE], ids=lambda p: p.name)
def test_each_simplification_pass_is_linear(make_pass):
    work = {}
    for n in (40, 400):
        module = parse_module(_simplifiable(n))
        report = PassManager([make_pass()], verify=False, count_work=True).run(module)
        assert report[0].changed
        work[n] = report[0].work
    assert work[400] < SLACK * 10 * work[40], work
