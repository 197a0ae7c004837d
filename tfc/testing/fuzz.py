"""A graph-level fuzzer in the spirit of NNSmith: random well-typed TF1 programs, run
through the whole compiler and checked against the evaluator.

``generate(seed)`` (:mod:`tfc.testing.fuzz_gen`) builds a :class:`Program`
(:mod:`tfc.testing.fuzz_program`: nodes of the catalogue in :mod:`tfc.testing.fuzz_ops`)
from a seeded numpy generator: elementwise math with broadcasting, reductions, softmax /
layer-norm patterns, values combined with transformed copies of themselves, slices,
transposes, reshapes, reverses, concat, pad, tile, gathers, matmul, conv2d, pooling,
shapes as values and gradients, over float32 (mostly) and int32, with static and
symbolic (placeholder ``None``) dims. A program is also TF1 Python source: the text
:func:`source` prints is exactly what :func:`run_program` executes, so a failure's
reproducer is the program itself.

``run_program`` builds the graph, runs the fetches with ``Session.run`` (lowering, the
whole pass pipeline, LLVM codegen; a second time in the same session at other sizes of
the symbolic dims when the program has a second run) and compares with :func:`tfc.ir.evaluate` on the
*unoptimised* lowered IR. Floats agree within a tolerance that grows with how much the
evaluator's own result moves when the feeds are perturbed by 1e-5 (relative): a sum
with cancellation or a ``floor`` at a boundary cannot tell rounding from a bug, a wrong
row can. NaN and infinity positions must match where they are stable; integers are exact.

``shrink(program)`` delta-debugs a failure: keep one fetch, bypass ops, cut subgraphs
into placeholders, make dims static, shrink shapes, simplify functions, for as long as
the program fails the same way. :func:`reproducer` prints the result as a runnable
script.
"""
from __future__ import annotations

import contextlib
import inspect
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import numpy as np

import tfc.compat.v1 as tf
from tfc.codegen import program as codegen_program
from tfc.ir import evaluate
from tfc.passes.lower import FeedSpec, UnsupportedOpsError, lower_graph

from .fuzz_gen import generate
from .fuzz_ops import Node, VType
from .fuzz_program import Program, feeds_source, fetches_source, rand, source

# =====================================================================================
# Running and comparing
# =====================================================================================
@contextlib.contextmanager
def parallel_everywhere():
    """Compile every kernel to split its work over the thread pool, however small (the
    chunking code otherwise runs only on large tensors)."""
    saved = codegen_program.PARALLEL_WORK
    codegen_program.PARALLEL_WORK = 1
    try:
        yield
    finally:
        codegen_program.PARALLEL_WORK = saved


@dataclass
class Outcome:
    """``kind``: "ok"; "refused" (lowering raised UnsupportedOpsError: tfc declines the
    graph with its documented "cannot compile" error, e.g. a symbolic dim it cannot prove
    equal to another); the failures: "mismatch" (compiled != evaluator), "run"
    (Session.run raised), "oracle" (lowering or evaluating the unoptimised IR raised
    anything else), "build" (building the graph raised), "shape" (a static or evaluated
    shape disagrees with the program's types)."""

    kind: str
    detail: str = ""
    error: str = ""  # the exception's type, for errors
    expected: list = field(default_factory=list)
    got: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "refused")

    @property
    def signature(self) -> str:
        return f"{self.kind}:{self.error}" if self.error else self.kind


def _error_outcome(kind: str, e: BaseException) -> Outcome:
    message = " ".join(line.strip() for line in str(e).strip().splitlines()[:3])
    return Outcome(kind, f"{type(e).__name__}: {message}"[:400], type(e).__name__)


def build(program: Program):
    """(graph, namespace) with the program's graph built by executing its source."""
    graph = tf.Graph()
    namespace = {"tf": tf, "np": np, "rand": rand}
    with graph.as_default():
        exec(compile(source(program), "<fuzz program>", "exec"), namespace)
    return graph, namespace


def _feed_values(program: Program, namespace: dict) -> dict:
    feeds = {}
    for i in program.placeholders():
        p = program.nodes[i].params
        feeds[namespace[f"v{i}"]] = rand(p["seed"], p["shape"], p["dtype"], p.get("special", False))
    return feeds


def _check_static_shapes(program: Program, types: list, namespace: dict) -> Optional[str]:
    for i, t in enumerate(types):
        tensor = namespace[f"v{i}"]
        if tensor is None:
            return f"v{i} is None"
        if tensor.dtype.base_dtype.name != t.dtype:
            return f"v{i}: graph dtype {tensor.dtype.name}, expected {t.dtype}"
        dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
        if dims is None or len(dims) != t.rank:
            return f"v{i}: graph shape {tensor.shape} for a value of shape {t.shape}"
        for d, (n, known) in enumerate(zip(t.shape, t.static)):
            if dims[d] is not None and dims[d] != n:
                return f"v{i}: graph shape {tensor.shape} for a value of shape {t.shape}"
            if known and dims[d] is None:
                return f"v{i}: graph shape {tensor.shape} does not know dim {d} (= {n})"
    return None


def oracle(fetches: list, feeds: dict, perturb: int = 2) -> tuple:
    """(results, perturbed results): the evaluator on the unoptimised lowered IR, once on
    ``feeds`` and ``perturb`` times on float feeds scaled by 1 + 1e-5 * N(0, 1)."""
    specs = [FeedSpec(t, t.dtype.base_dtype, np.shape(v)) for t, v in feeds.items()]
    lowered = lower_graph(fetches, (), specs)
    args = [feeds[t] for t in lowered.feeds]
    expected = evaluate(lowered.module, [a.copy() for a in args])
    rng = np.random.default_rng(0)
    perturbed = []
    if any(a.dtype.kind == "f" for a in args):
        for _ in range(perturb):
            moved = [(a * (1 + 1e-5 * rng.standard_normal(a.shape))).astype(a.dtype) if a.dtype.kind == "f" else a
                     for a in args]
            with np.errstate(all="ignore"):
                perturbed.append(evaluate(lowered.module, moved))
    return expected, perturbed


RTOL, ATOL, NOISE_FACTOR = 1e-4, 1e-5, 10.0


def _value_class(a: np.ndarray) -> np.ndarray:
    """0 finite, 1 NaN, 2 +inf, 3 -inf."""
    return np.where(np.isnan(a), 1, np.where(np.isposinf(a), 2, np.where(np.isneginf(a), 3, 0)))


def compare(expected: np.ndarray, got, perturbed: list) -> Optional[str]:
    """None when ``got`` agrees with ``expected``; else what differs (see the module doc)."""
    got = np.asarray(got)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if expected.dtype.kind != "f":
        unstable = np.zeros(expected.shape, bool)
        for p in perturbed:
            unstable |= p != expected
        bad = (got != expected) & ~unstable
    else:
        e, g = expected.astype(np.float64), got.astype(np.float64)
        e_class = _value_class(e)
        unstable = np.zeros(e.shape, bool)
        noise = np.zeros(e.shape)
        with np.errstate(all="ignore"):
            for p in perturbed:
                p = p.astype(np.float64)
                unstable |= _value_class(p) != e_class
                noise = np.maximum(noise, np.where(e_class == 0, np.abs(p - e), 0.0))
            tolerance = ATOL + RTOL * np.abs(e) + NOISE_FACTOR * np.nan_to_num(noise)
            close = np.abs(g - e) <= tolerance
        bad = np.where(e_class == 0, ~close, _value_class(g) != e_class) & ~unstable
    if not bad.any():
        return None
    positions = np.argwhere(bad)[:4]
    shown = ", ".join(f"{tuple(int(i) for i in pos)}: {got[tuple(pos)]!r} != {expected[tuple(pos)]!r}"
                      for pos in positions)
    return f"{int(bad.sum())} of {bad.size} elements differ ({shown})"


def run_program(program: Program) -> Outcome:
    """Run ``program`` compiled and on the evaluator, and compare (then, if the program has
    a second run, the same on the second run's feeds, in the same session)."""
    try:
        graph, namespace = build(program)
    except Exception as e:  # noqa: BLE001 - any failure to build a valid program is a finding
        return _error_outcome("build", e)
    problem = _check_static_shapes(program, program.types(), namespace)
    if problem:
        return Outcome("shape", problem)
    runs = [program, program.second_run()] if program.has_second_run() else [program]
    with tf.Session(graph=graph) as session:
        for k, run in enumerate(runs):
            outcome = _run_once(run, namespace, session, "" if k == 0 else "second run (feeds2): ")
            if not outcome.ok:
                return outcome
    return outcome


def _run_once(program: Program, namespace: dict, session, label: str) -> Outcome:
    types = program.types()
    fetches = [namespace[f"v{i}"] for i in program.fetches]
    feeds = _feed_values(program, namespace)
    try:
        expected, perturbed = oracle(fetches, feeds)
    except UnsupportedOpsError as e:
        return _error_outcome("refused", e)
    except Exception as e:  # noqa: BLE001
        return _error_outcome("oracle", e)
    for i, value in zip(program.fetches, expected):
        if value.shape != types[i].shape or value.dtype != np.dtype(types[i].dtype):
            return Outcome("shape", f"{label}v{i}: the evaluator gives {value.dtype}{list(value.shape)}, expected "
                                    f"{types[i].dtype}{list(types[i].shape)}")
    try:
        got = [np.asarray(x) for x in session.run(fetches, feeds)]
    except Exception as e:  # noqa: BLE001
        outcome = _error_outcome("run", e)
        outcome.detail = label + outcome.detail
        outcome.expected = expected
        return outcome
    for k, (i, e, g) in enumerate(zip(program.fetches, expected, got)):
        problem = compare(e, g, [p[k] for p in perturbed])
        if problem:
            return Outcome("mismatch", f"{label}v{i}: {problem}", "", expected, got)
    return Outcome("ok", expected=expected, got=got)


# =====================================================================================
# Shrinking
# =====================================================================================
def _redirect(program: Program, old: int, new: int) -> Program:
    nodes = tuple(n.with_inputs(new if j == old else j for j in n.inputs) for n in program.nodes)
    fetches = tuple(new if f == old else f for f in program.fetches)
    return Program(nodes, fetches, program.seed)


def _replace(program: Program, i: int, node: Node) -> Program:
    nodes = program.nodes[:i] + (node,) + program.nodes[i + 1:]
    return Program(nodes, program.fetches, program.seed)


def _placeholder_for(t: VType, seed: int) -> Node:
    return Node("placeholder", (), {"dtype": t.dtype, "shape": t.shape, "static": t.static, "seed": seed})


SIMPLER_FN = {"unary": ("neg", "ineg", "abs"), "binary": ("add", "iadd", "mul"), "reduce": ("sum",),
              "softmax": ("softmax",), "pool": ("max_pool",)}


def candidates(program: Program) -> Iterator[Program]:
    """Smaller or simpler variants of ``program``, most promising first."""
    if len(program.fetches) > 1:
        for f in program.fetches:
            yield Program(program.nodes, (f,), program.seed)
    if program.has_second_run():
        yield program.without_second_run()
    types = program.types()
    inner = [i for i, n in enumerate(program.nodes) if n.inputs]
    for i in reversed(inner):
        for j in dict.fromkeys(program.nodes[i].inputs):
            yield _redirect(program, i, j)
    for i in inner:
        yield _replace(program, i, _placeholder_for(types[i], 1000 + i))
    yield from _leaf_simplifications(program)
    yield from _shape_shrinks(program)
    for i in inner:
        node = program.nodes[i]
        for fn in SIMPLER_FN.get(node.kind, ()):
            if node.params.get("fn") not in SIMPLER_FN[node.kind] and fn != node.params.get("fn"):
                yield _replace(program, i, node.with_params(fn=fn))
        for key in ("keepdims", "exclusive", "reverse", "ta", "tb", "scalar_first", "special"):
            if node.params.get(key):
                yield _replace(program, i, node.with_params(**{key: False}))


def _leaf_simplifications(program: Program) -> Iterator[Program]:
    for i in program.leaves():
        node = program.nodes[i]
        p = node.params
        if node.kind == "constant":
            yield _replace(program, i, Node("placeholder", (), {**p, "static": (True,) * len(p["shape"])}))
        if p.get("special"):
            yield _replace(program, i, node.with_params(special=False))
        if node.kind == "placeholder" and not all(p["static"]):
            yield _replace(program, i, node.with_params(static=(True,) * len(p["shape"])))


def _with_shape(node: Node, shape: tuple) -> Node:
    return node.with_params(shape=tuple(shape))


def _shape_shrinks(program: Program) -> Iterator[Program]:
    leaves = program.leaves()
    sizes = sorted({d for i in leaves for d in program.nodes[i].params["shape"] if d > 1}, reverse=True)
    for d in sizes:
        for smaller in dict.fromkeys([1, d // 2, d - 1]):
            if 1 <= smaller < d:
                nodes = list(program.nodes)
                for i in leaves:
                    shape = nodes[i].params["shape"]
                    nodes[i] = _with_shape(nodes[i], tuple(smaller if x == d else x for x in shape))
                yield Program(tuple(nodes), program.fetches, program.seed)
    for i in leaves:
        shape = program.nodes[i].params["shape"]
        for axis, d in enumerate(shape):
            for smaller in dict.fromkeys([1, d - 1]):
                if 1 <= smaller < d:
                    new_shape = shape[:axis] + (smaller,) + shape[axis + 1:]
                    yield _replace(program, i, _with_shape(program.nodes[i], new_shape))


def shrink(program: Program, fails: Callable[[Program], bool], max_runs: int = 300,
           max_seconds: float = 60.0) -> Program:
    """The smallest variant of ``program`` found for which ``fails`` holds (greedy: take the
    first candidate that still fails, start over, until none does or the budget is spent)."""
    deadline = time.monotonic() + max_seconds
    tried: set = set()
    runs = 0
    current = program.live()
    improved = True
    while improved and runs < max_runs and time.monotonic() < deadline:
        improved = False
        for candidate in candidates(current):
            candidate = candidate.live()
            if not candidate.valid():
                continue
            key = source(candidate) + feeds_source(candidate) + fetches_source(candidate) + \
                (feeds_source(candidate.second_run()) if candidate.has_second_run() else "")
            if key in tried:
                continue
            tried.add(key)
            runs += 1
            if fails(candidate):
                current, improved = candidate, True
                break
            if runs >= max_runs or time.monotonic() >= deadline:
                break
    return current


def same_failure(outcome: Outcome) -> Callable[[Program], bool]:
    """A ``fails`` predicate for :func:`shrink`: the program fails with the same signature."""
    def fails(candidate: Program) -> bool:
        try:
            return run_program(candidate).signature == outcome.signature
        except Exception:  # noqa: BLE001 - a candidate that crashes the harness is not the same failure
            return False
    return fails


# =====================================================================================
# Reproducers and campaigns
# =====================================================================================
def _array_text(values: list) -> str:
    with np.printoptions(precision=6, threshold=64, linewidth=100):
        return "\n".join(f"#   {line}" for v in values for line in repr(np.asarray(v)).splitlines())


def reproducer(program: Program, outcome: Outcome, parallel: bool = False) -> str:
    """A runnable TF1 script that shows the failure."""
    lines = [f"# tfc graph fuzzer: {outcome.signature}" + (f" (seed {program.seed})" if program.seed is not None
                                                           else ""),
             f"# {outcome.detail}",
             "import numpy as np",
             "import tfc.compat.v1 as tf",
             "",
             "",
             inspect.getsource(rand).rstrip(),
             "",
             "",
             source(program).rstrip(),
             feeds_source(program).rstrip()]
    if program.has_second_run():
        lines.append(feeds_source(program.second_run(), "feeds2").rstrip())
    lines.append(fetches_source(program).rstrip())
    if parallel:
        lines += ["from tfc.testing.fuzz import parallel_everywhere  # every kernel split over the thread pool",
                  "with parallel_everywhere(), tf.Session() as sess:"]
    else:
        lines.append("with tf.Session() as sess:")
    lines.append("    print(sess.run(fetches, feeds))")
    if program.has_second_run():
        lines.append("    print(sess.run(fetches, feeds2))")
    if outcome.expected:
        lines.append("# expected (tfc.ir.evaluate on the unoptimised IR):")
        lines.append(_array_text(outcome.expected))
    if outcome.got:
        lines.append("# got (Session.run):")
        lines.append(_array_text(outcome.got))
    return "\n".join(lines) + "\n"


@dataclass
class Failure:
    seed: int
    outcome: Outcome
    program: Program
    parallel: bool = False
    shrunk: Optional[Program] = None
    shrunk_outcome: Optional[Outcome] = None

    def report(self) -> str:
        if self.shrunk is not None:
            return reproducer(self.shrunk, self.shrunk_outcome, self.parallel)
        return reproducer(self.program, self.outcome, self.parallel)


def _mode(parallel: bool):
    return parallel_everywhere() if parallel else contextlib.nullcontext()


def check_seed(seed: int, max_steps: int = 5, parallel: bool = False) -> tuple:
    """(program, outcome) for the program of ``seed`` (``parallel``: compiled under
    :func:`parallel_everywhere`)."""
    program = generate(seed, max_steps)
    with _mode(parallel):
        return program, run_program(program)


def shrink_failure(failure: Failure, max_runs: int = 300, max_seconds: float = 60.0) -> Failure:
    with _mode(failure.parallel):
        shrunk = shrink(failure.program, same_failure(failure.outcome), max_runs, max_seconds)
        failure.shrunk, failure.shrunk_outcome = shrunk, run_program(shrunk)
    return failure


def fingerprint(failure: Failure) -> tuple:
    """What makes two failures the same for de-duplication: the signature and the kinds of
    ops (with their functions) in the shrunk program."""
    program = failure.shrunk or failure.program
    ops = sorted({n.kind + (f".{n.params['fn']}" if "fn" in n.params else "") for n in program.nodes
                  if n.kind not in ("placeholder", "constant")})
    return (failure.outcome.signature, tuple(ops))
