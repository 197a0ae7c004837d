"""The graph fuzzer on GPU programs: random TF1 programs built under ``tf.device("/gpu:0")``
run by a session whose GPU is the host emulation (TFC_GPU_EMULATION=1), compared with the
evaluator on the unoptimised IR. A failure's reproducer is the assertion message (run it
with TFC_GPU_EMULATION=1, or on a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.testing import fuzz
from tfc.runtime.cuda import available as cuda_available
from tfc.testing.fuzz import check_seed

SEEDS = range(1000, 1060)
STRESS_SEEDS = range(1100, 1140)
DEVICE_SEEDS = range(1200, 1260)
MAX_STEPS = 6


def _build_on_gpu(program):
    graph = tf.Graph()
    namespace = {"tf": tf, "np": np, "rand": fuzz.rand}
    with graph.as_default(), tf.device("/gpu:0"):
        exec(compile(fuzz.source(program), "<fuzz program>", "exec"), namespace)
    return graph, namespace


def _assert_seeds_agree(seeds, where: str) -> None:
    """Every seed's program computes what the evaluator computes; at most 5% refused."""
    failures, refused = [], []
    for seed in seeds:
        program, outcome = check_seed(seed, MAX_STEPS)
        if outcome.kind == "refused":
            refused.append(seed)
        elif outcome.failed:
            failures.append(f"seed {seed}: {outcome.kind}: {outcome.detail}\n{fuzz.source(program)}")
    assert not failures, f"{len(failures)} of {len(seeds)} fail {where}:\n\n" + "\n\n".join(failures[:2])
    assert len(refused) <= len(seeds) // 20, refused


def test_fuzzed_graphs_on_the_gpu_compute_what_the_evaluator_computes(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    monkeypatch.setattr(fuzz, "build", _build_on_gpu)
    _assert_seeds_agree(SEEDS, "on the GPU")


def test_fuzzed_graphs_through_the_cooperative_kernels_at_every_size(monkeypatch):
    """The same, with the cooperative kernels' size thresholds at their least, so the small
    fuzzed dots and convs take the shared-memory GEMM (split too), and every reduction over
    an innermost dim a block per output: their tails composed with everything else."""
    from tfc.codegen.gpu import gemm, reduction

    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    monkeypatch.setattr(fuzz, "build", _build_on_gpu)
    monkeypatch.setattr(gemm, "MIN_ROWS", 1)
    monkeypatch.setattr(gemm, "MIN_COLUMNS", 1)
    monkeypatch.setattr(gemm, "MIN_PART_TILES", 1)
    monkeypatch.setattr(reduction, "ROW_BLOCKS_FROM", 1)
    emitted = []
    original = gemm.emit
    monkeypatch.setattr(gemm, "emit", lambda *args: emitted.append(args[2].name) or original(*args))
    failures = []
    for seed in STRESS_SEEDS:
        program, outcome = check_seed(seed, MAX_STEPS)
        if outcome.failed:
            failures.append(f"seed {seed}: {outcome.kind}: {outcome.detail}\n{fuzz.source(program)}")
    assert not failures, f"{len(failures)} of {len(STRESS_SEEDS)} fail on the GPU:\n\n" + "\n\n".join(failures[:2])
    assert len(emitted) >= 5, emitted  # the seeds do reach the GEMM


def test_the_fuzzed_programs_here_run_as_gpu_steps(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    graph, namespace = _build_on_gpu(fuzz.generate(SEEDS[0]))
    program = fuzz.generate(SEEDS[0])
    fetches = [namespace[f"v{i}"] for i in program.fetches]
    with tf.Session(graph=graph) as session:
        session.run(fetches, fuzz._feed_values(program, namespace))
        assert {step.target for step in session.compiled_steps()} == {"cuda"}


@pytest.mark.skipif(not cuda_available(), reason="no CUDA device/driver")
def test_fuzzed_graphs_on_a_cuda_device(monkeypatch):
    """The programs on a real GPU (scripts/gpu_check.sh runs this there): what the emulation
    cannot show, the NVPTX backend's own lowerings (its frem computed x - trunc(x/y) * y)
    and the driver."""
    monkeypatch.delenv("TFC_GPU_EMULATION", raising=False)
    monkeypatch.setattr(fuzz, "build", _build_on_gpu)
    _assert_seeds_agree(DEVICE_SEEDS, "on the device")
