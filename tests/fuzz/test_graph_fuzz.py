"""The graph fuzzer (tfc.testing.fuzz): a bounded seeded run, and the fuzzer's own parts.

The bounded run compiles a few hundred random TF1 programs (fixed seeds; every fourth
compiled with every kernel split across the thread pool) and compares each with the
evaluator on the unoptimised IR. A failure is shrunk and its runnable reproducer is the
assertion message. ``python -m benchmarks.fuzz --minutes N`` is the long run.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.passes import fusion as fusion_pass
from tfc.testing import fuzz
from tfc.testing.fuzz import Failure, Outcome, Program, check_seed, compare, generate, reproducer, shrink_failure
from tfc.testing.fuzz_ops import KINDS, Node

SEEDS = range(150)
MAX_STEPS = 6
PARALLEL_EVERY = 4
SHRINK_SECONDS = 20.0
MAX_REPORTED = 2


def test_fuzzed_graphs_compile_to_what_the_evaluator_computes():
    failures: dict = {}
    refused = []
    for seed in SEEDS:
        parallel = seed % PARALLEL_EVERY == 0
        program, outcome = check_seed(seed, MAX_STEPS, parallel)
        if outcome.kind == "refused":
            refused.append((seed, outcome.detail))
        elif outcome.failed:
            failures.setdefault(outcome.signature, []).append(Failure(seed, outcome, program, parallel))
    if failures:
        reports = []
        for signature, found in list(failures.items())[:MAX_REPORTED]:
            shrunk = shrink_failure(found[0], max_seconds=SHRINK_SECONDS)
            seeds = ", ".join(str(f.seed) for f in found)
            reports.append(f"{signature} at seeds {seeds}; the first, shrunk:\n{shrunk.report()}")
        total = sum(len(found) for found in failures.values())
        pytest.fail(f"{total} of {len(SEEDS)} fuzzed programs fail (max_steps={MAX_STEPS}):\n\n" + "\n\n".join(reports))
    # tfc declines a few valid graphs by design (UnsupportedOpsError); the generator avoids
    # the known cases, so many refusals mean it drifted into testing nothing.
    assert len(refused) <= len(SEEDS) // 20, refused


def test_generation_is_deterministic_and_seeds_differ():
    assert fuzz.source(generate(7)) == fuzz.source(generate(7))
    assert fuzz.feeds_source(generate(7)) == fuzz.feeds_source(generate(7))
    assert len({fuzz.source(generate(seed)) for seed in range(20)}) == 20


def test_generator_covers_the_catalogue():
    programs = [generate(seed, MAX_STEPS) for seed in SEEDS]
    kinds = {node.kind for p in programs for node in p.nodes}
    assert kinds == set(KINDS)
    placeholders = [p.nodes[i].params for p in programs for i in p.placeholders()]
    assert sum(not all(p["static"]) for p in placeholders) > len(programs) // 4  # symbolic dims
    assert sum(p.has_second_run() for p in programs) > len(programs) // 10
    assert sum(p["dtype"] == "int32" for p in placeholders) > len(programs) // 20
    assert sum(any(n.kind == "gradient" for n in p.nodes) for p in programs) > len(programs) // 10
    assert all(p.valid() for p in programs)


def _self_combine(n: int = 4) -> Program:
    """``s = x - reduce_max(x, 1, keepdims=True); s + transpose(s)`` (the row-fusion bug)."""
    nodes = (Node("placeholder", (), {"dtype": "float32", "shape": (n, n), "static": (True, True), "seed": 3}),
             Node("reduce", (0,), {"fn": "max", "axis": 1, "keepdims": True}),
             Node("binary", (0, 1), {"fn": "sub"}),
             Node("transpose", (2,), {"perm": None}),
             Node("binary", (2, 3), {"fn": "add"}))
    return Program(nodes, (4,))


def test_source_is_tf1_code():
    assert fuzz.source(_self_combine()) == (
        "v0 = tf.placeholder(tf.float32, [4, 4])\n"
        "v1 = tf.reduce_max(v0, axis=1, keepdims=True)\n"
        "v2 = v0 - v1\n"
        "v3 = tf.transpose(v2)\n"
        "v4 = v2 + v3\n")


def test_the_fuzzer_finds_and_shrinks_a_reintroduced_row_fusion_bug(monkeypatch):
    """With the row-fusion legality check disabled (the bug users hit), the self-combine
    pattern fails, and a padded program shrinks back to a handful of nodes."""
    monkeypatch.setattr(fusion_pass, "_row_misalignment", lambda *args, **kwargs: None)
    program = _self_combine()
    outcome = fuzz.run_program(program)
    assert outcome.kind == "mismatch", outcome
    padded_nodes = program.nodes + (Node("unary", (4,), {"fn": "tanh"}),
                                    Node("placeholder", (), {"dtype": "float32", "shape": (4, 4),
                                                             "static": (False, True), "seed": 9}),
                                    Node("binary", (5, 6), {"fn": "mul"}),
                                    Node("reduce", (6,), {"fn": "sum", "axis": None, "keepdims": False}))
    padded = Program(padded_nodes, (7, 8))
    padded_outcome = fuzz.run_program(padded)
    assert padded_outcome.kind == "mismatch"
    shrunk = shrink_failure(Failure(0, padded_outcome, padded), max_seconds=30).shrunk
    assert fuzz.run_program(shrunk).kind == "mismatch"
    assert len(shrunk.nodes) <= 5
    assert len(shrunk.fetches) == 1


def test_shrink_removes_everything_the_predicate_does_not_need():
    def has_transpose(p: Program) -> bool:
        return any(n.kind == "transpose" for n in p.nodes)

    program = next(p for p in map(generate, range(100)) if has_transpose(p) and len(p.nodes) > 6)
    shrunk = fuzz.shrink(program, has_transpose)
    kinds = sorted(n.kind for n in shrunk.nodes)
    assert kinds == ["placeholder", "transpose"]
    assert all(d == 1 for d in shrunk.nodes[0].params["shape"])
    assert all(shrunk.nodes[0].params["static"])


def test_reproducer_runs_and_prints_what_session_run_returns():
    program = _self_combine(3)
    outcome = fuzz.run_program(program)
    assert outcome.ok
    text = reproducer(program, outcome)
    printed = io.StringIO()
    with tf.Graph().as_default(), contextlib.redirect_stdout(printed):
        exec(compile(text, "<reproducer>", "exec"), {})
    assert printed.getvalue().strip() == str(outcome.got)
    assert np.allclose(outcome.got[0], outcome.got[0].T)
    assert "# expected (tfc.ir.evaluate on the unoptimised IR):" in text


def test_second_run_reuses_the_compiled_program_at_other_sizes():
    nodes = (Node("placeholder", (), {"dtype": "float32", "shape": (2, 3), "static": (False, True), "seed": 1,
                                      "rerun": (5, 3)}),
             Node("softmax", (0,), {"fn": "softmax", "axis": -1}))
    program = Program(nodes, (1,))
    assert program.valid()
    assert fuzz.run_program(program).ok
    assert program.second_run().types()[1].shape == (5, 3)
    assert "feeds2 = {v0: rand(1, (5, 3), 'float32')}" in reproducer(program, Outcome("ok"))
    static_change = Program((nodes[0].with_params(rerun=(5, 4)), nodes[1]), (1,))
    assert not static_change.valid()


@pytest.mark.parametrize("expected, got, perturbed, ok", [
    (np.float32([1.0, 2.0]), np.float32([1.0, 2.00001]), [], True),
    (np.float32([1.0, 2.0]), np.float32([1.0, 2.01]), [], False),
    (np.float32([np.nan, np.inf]), np.float32([np.nan, np.inf]), [], True),
    (np.float32([np.nan, 1.0]), np.float32([1.0, 1.0]), [], False),
    (np.float32([np.inf]), np.float32([-np.inf]), [], False),
    (np.float32([1.0]), np.float32([np.nan]), [], False),
    # a value that moves by 0.1 when the feeds move by 1e-5 is ill-conditioned: no complaint
    (np.float32([1.0]), np.float32([1.5]), [np.float32([1.1])], True),
    # ... but a stable one must agree
    (np.float32([1.0, 7.0]), np.float32([1.5, 7.0]), [np.float32([1.0, 7.1])], False),
    # a NaN that appears only when the feeds move is not a stable NaN
    (np.float32([0.0]), np.float32([np.nan]), [np.float32([np.nan])], True),
    (np.int32([1, 2]), np.int32([1, 2]), [], True),
    (np.int32([1, 2]), np.int32([1, 3]), [], False),
    (np.int32([1, 2]), np.int32([1, 3]), [np.int32([1, 4])], True),
    (np.float32([1.0]), np.float64([1.0]), [], False),
    (np.float32([1.0]), np.float32([[1.0]]), [], False),
])
def test_compare(expected, got, perturbed, ok):
    assert (compare(expected, got, perturbed) is None) == ok



def test_a_symmetric_pad_of_a_mean_compiles_each_concatenated_piece_apart():
    """Seeds 71054 and 72009: a SYMMETRIC pad (a concatenation of reversed slices along the
    last dim) of ``x + mean(x, 0)`` with symbolic dims. The loop kernel writing the pieces
    one by one reused the mean's divisor computed inside the first piece's loop in the
    next one ("Instruction does not dominate all uses")."""
    nodes = (Node("placeholder", (), {"dtype": "float32", "shape": (2, 1), "static": (False, False), "seed": 611905}),
             Node("reduce", (0,), {"fn": "mean", "axis": 0, "keepdims": False}),
             Node("binary", (0, 1), {"fn": "add"}),
             Node("pad", (2,), {"pads": ((1, 0), (0, 1)), "mode": "SYMMETRIC"}))
    program = Program(nodes, (3,))
    assert program.valid()
    outcome = fuzz.run_program(program)
    assert outcome.ok, outcome
    assert outcome.got[0].shape == (3, 2)
    np.testing.assert_allclose(outcome.got[0], outcome.expected[0])
