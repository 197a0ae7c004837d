"""The compile-time benchmark: how long the first step takes, for tfc and the peers.

    python -m benchmarks --compile                      # L = 10, 40, 100, 200 and the chains
    python -m benchmarks --compile --models 10,40 --chains 250,500 --peers tfc,tf_graph
    python -m benchmarks --compile --cache              # + tfc's second process (TFC_CACHE_DIR)

Workloads (``compile_models``): ``mlp L`` (L dense 64->64 relu layers, a layer norm
every 4th, softmax cross entropy, Adam; batch 32) and ``chain N`` (the gradient of N
``sin(y) + 1`` ops).

Every measurement runs in a fresh process (``python -m benchmarks.compile_time --child``):
nothing is warm (no compiled kernels, no imported-and-used code paths beyond the imports
themselves) and ``TFC_CACHE_DIR`` is unset, except for the ``tfc cached`` column, where a
first process fills a new cache folder and a second one, timed, reads it. What a child
times:

- build: constructing the graph (TF1 graph with ``tf.gradients`` and the optimizer), or
  setting up the traced function (XLA, JAX); reported separately, not in the first step;
- init: the TF1 variable initialisation run (not in the first step either);
- first step: the first ``sess.run([train_op, loss])`` / first call of the jitted
  function: lowering, optimisation, code generation and the run itself;
- steady: the median of later steps.

``per 1k ops`` is tfc's first step per 1,000 graph ops. The tfc breakdown table splits
tfc's first step into what ``CompileResult.timings`` records (passes, LLVM IR emission,
the prebuilt runtime, LLVM parse / optimisation / MCJIT code generation) and the rest
(lowering, session work, the run). Each child checks its first step's value against
numpy (the initial loss, or dy/dx) and says so.

For peers not importable by this Python, ``--peer-python`` (or ``TFC_BENCH_PEER_PYTHON``)
names interpreters that have them, separated by commas (virtual environments with
tensorflow and/or jax); each peer runs in the first one that can import its framework.
The children import ``benchmarks`` from this checkout (``PYTHONPATH``), not tfc.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from . import peers as peers_mod

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_PREFIX = "TFC_BENCH_RESULT "
PEER_PYTHON_ENV = "TFC_BENCH_PEER_PYTHON"
MODELS = (10, 40, 100, 200)
CHAINS = (250, 500, 1000, 2000)
TINY_MODELS = (2,)
TINY_CHAINS = (10,)
COMPILE_PEERS = ("tfc", "tf_graph", "tf_xla", "jax")
CACHED = "tfc_cached"
LABELS = {**peers_mod.LABELS, CACHED: "tfc cached"}
# What tfc's compile timings are shown as, in order (CompileResult.timings keys).
# Wall-clock phases add up (with 'other') to the first step; the unit_* columns are the
# compile threads' seconds summed over units (they overlap each other: not in the sum).
BREAKDOWN = (("passes", "passes"), ("codegen", "LLVM IR emission"), ("runtime", "runtime"),
             ("llvm_parse", "LLVM parse"), ("llvm_opt", "LLVM opt"), ("llvm_codegen", "MCJIT"),
             ("llvm_units", "LLVM units (wall)"), ("llvm_link", "MCJIT link"),
             ("cache_load", "object cache load"), ("step_cache_load", "step cache load"),
             ("unit_opt", "opt (thread s)"), ("unit_codegen", "isel (thread s)"))
TOLERANCE = {"mlp": (1e-4, 0.0), "chain": (1e-3, 1e-30)}  # rtol, atol of the first step's value


# -- the child: one measurement in this process ----------------------------------------------
def child(peer: str, kind: str, size: int, seed: int = 0, steady_reps: int = 10, threads=None) -> dict:
    """Build, run once (timed: the first step), check against numpy, time later steps."""
    peers_mod.set_threads(threads)
    import numpy as np

    from . import compile_models

    result = {"peer": peer, "kind": kind, "size": size}
    built = compile_models.BUILDERS["tfc" if peer == CACHED else peer](kind, size, seed)
    session = built.session if peer in ("tfc", CACHED) else None
    known = set(session._cache) if session is not None else set()
    start = time.perf_counter()
    value = built.step()
    result["first_s"] = time.perf_counter() - start
    result["build_s"] = built.build_s
    result["init_s"] = built.init_s
    value = np.asarray(value, dtype=np.float64)
    expected = np.asarray(compile_models.reference(kind, size, seed), dtype=np.float64)
    rtol, atol = TOLERANCE[kind]
    result["value_ok"] = bool(value.shape == expected.shape and np.all(np.isfinite(value)) and
                              np.allclose(value, expected, rtol=rtol, atol=atol))
    result["max_abs_err"] = float(np.max(np.abs(value - expected))) if value.shape == expected.shape else None
    if kind == "mlp":
        result["loss"] = float(value)
    if session is not None:
        result.update(_tfc_details(session, known))
    samples = []
    for i in range(steady_reps + 2):
        start = time.perf_counter()
        built.step()
        if i >= 2:  # two warm-up steps
            samples.append(time.perf_counter() - start)
    result["steady_s"] = float(np.median(samples)) if samples else None
    result["graph_ops"] = int(built.graph_ops())
    return result


def _tfc_details(session, known: set) -> dict:
    """Compile timings and IR sizes of the programs the first step compiled."""
    timings: dict = {}
    ir_ops = kernels = 0
    for key, step in session._cache.items():
        if key in known:
            continue
        for name, seconds in step.timings.items():
            timings[name] = timings.get(name, 0.0) + seconds
        if step.result is None:  # loaded from the step cache: no IR
            continue
        report = step.result.report
        if report is not None and len(report):
            ir_ops += report[0].ops_before
        kernels += sum(1 for op in step.result.module.main.body.ops if op.name not in ("return", "constant"))
    return {"timings": timings, "ir_ops": ir_ops, "top_level_ops": kernels}


def child_main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compile_time --child")
    parser.add_argument("peer", choices=COMPILE_PEERS + (CACHED,))
    parser.add_argument("kind", choices=("mlp", "chain"))
    parser.add_argument("size", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steady-reps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    result = child(args.peer, args.kind, args.size, args.seed, args.steady_reps, args.threads)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


# -- the parent: one fresh process per measurement -------------------------------------------
def peer_python(peer: str, override=None):
    """The interpreter that runs ``peer``: this one when it can import the peer's framework,
    else the first of ``override`` / $TFC_BENCH_PEER_PYTHON (interpreters separated by
    commas) that can; None when none can."""
    if peers_mod.is_installed("tfc" if peer == CACHED else peer):
        return sys.executable
    module = {"tf_graph": "tensorflow", "tf_xla": "tensorflow", "jax": "jax"}.get(peer)
    others = [p for p in (override or os.environ.get(PEER_PYTHON_ENV) or "").split(",") if p.strip()]
    if module is None:
        return None
    for other in others:
        try:
            probe = subprocess.run([other.strip(), "-c", f"import importlib.util, sys; "
                                                         f"sys.exit(importlib.util.find_spec({module!r}) is None)"],
                                   capture_output=True)
        except OSError:
            continue
        if probe.returncode == 0:
            return other.strip()
    return None


def run_child(python: str, peer: str, kind: str, size: int, seed: int, steady_reps: int, threads,
              timeout: float, cache_dir=None) -> dict:
    """One measurement in a fresh process: its result dict, or {"error": ...}."""
    env = dict(os.environ)
    env.pop("TFC_CACHE_DIR", None)
    if cache_dir is not None:
        env["TFC_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = [python, "-m", "benchmarks.compile_time", "--child", peer, kind, str(size), "--seed", str(seed),
               "--steady-reps", str(steady_reps)]
    if threads is not None:
        command += ["--threads", str(threads)]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"peer": peer, "kind": kind, "size": size, "error": f"timeout (> {timeout:g} s)"}
    wall = time.perf_counter() - start
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
            result["process_s"] = wall
            return result
    tail = (done.stderr or done.stdout).strip().splitlines()
    return {"peer": peer, "kind": kind, "size": size,
            "error": f"exit {done.returncode}: {tail[-1] if tail else 'no output'}",
            "stderr": "\n".join(tail[-30:])}


def cases(models, chains) -> list:
    return [("mlp", L) for L in models] + [("chain", N) for N in chains]


def run(models, chains, peer_names, seed=0, steady_reps=10, threads=None, timeout=900.0, cache=False,
        peer_python_override=None, log=lambda message: None) -> dict:
    """{(kind, size): {peer: result}} for every case and peer (``tfc_cached`` with cache)."""
    columns = [p for p in COMPILE_PEERS if p in peer_names]
    if cache and "tfc" in columns:
        columns.insert(columns.index("tfc") + 1, CACHED)
    pythons = {p: peer_python(p, peer_python_override) for p in columns}
    results: dict = {}
    for kind, size in cases(models, chains):
        row = results.setdefault((kind, size), {})
        for peer in columns:
            python = pythons[peer]
            if python is None:
                row[peer] = {"peer": peer, "kind": kind, "size": size, "error": "not installed"}
                continue
            log(f"{kind} {size}: {LABELS[peer]}...")
            if peer == CACHED:
                with tempfile.TemporaryDirectory(prefix="tfc-bench-cache-") as folder:
                    fill = run_child(python, "tfc", kind, size, seed, 0, threads, timeout, folder)
                    if "error" in fill:
                        row[peer] = {**fill, "error": f"filling the cache: {fill['error']}"}
                        continue
                    row[peer] = run_child(python, CACHED, kind, size, seed, steady_reps, threads, timeout, folder)
            else:
                row[peer] = run_child(python, peer, kind, size, seed, steady_reps, threads, timeout)
            log(f"{kind} {size}: {LABELS[peer]}: {_short(row[peer])}")
    return results


def _short(result: dict) -> str:
    if "error" in result:
        return result["error"]
    return f"first step {_seconds(result['first_s'])}, build {_seconds(result['build_s'])}"


# -- the report ------------------------------------------------------------------------------
def _seconds(value) -> str:
    from .report import format_seconds

    return format_seconds(value)


def _cell(result) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return "not installed" if result["error"] == "not installed" else "ERROR"
    text = _seconds(result["first_s"])
    return text if result.get("value_ok", True) else text + " WRONG"


def case_name(kind: str, size: int) -> str:
    return f"mlp L={size}" if kind == "mlp" else f"chain N={size}"


def format_report(results: dict, peer_names) -> str:
    columns = [p for p in COMPILE_PEERS if p in peer_names]
    has_cache = any(CACHED in row for row in results.values())
    if has_cache and "tfc" in columns:
        columns.insert(columns.index("tfc") + 1, CACHED)
    lines = ["compile time: the first step (first sess.run / jitted call: compile + run), each in a fresh "
             "process; graph build not included (own column)", ""]
    header = ["workload", "graph ops", *(LABELS[p] for p in columns), "tfc per 1k ops", "tfc build",
              "steady step: " + " / ".join(LABELS[p] for p in columns if p != CACHED)]
    rows = []
    for (kind, size), row in results.items():
        tfc = row.get("tfc") or {}
        ops = tfc.get("graph_ops") or next((r.get("graph_ops") for r in row.values() if r.get("graph_ops")), None)
        per_k = tfc["first_s"] / tfc["graph_ops"] * 1000 if "first_s" in tfc and tfc.get("graph_ops") else None
        steady = " / ".join(_seconds(row.get(p, {}).get("steady_s")) for p in columns if p != CACHED)
        rows.append([case_name(kind, size), str(ops or "-"), *(_cell(row.get(p)) for p in columns),
                     _seconds(per_k), _seconds(tfc.get("build_s")), steady])
    lines += _table(header, rows)
    breakdown = [(key, row["tfc"]) for key, row in results.items() if "timings" in row.get("tfc", {})]
    if breakdown:
        lines += ["", "tfc first step, where the time goes (CompileResult.timings; 'other' = lowering, session, "
                      "the run)", ""]
        keys = [(k, label) for k, label in BREAKDOWN if any(k in r["timings"] for _, r in breakdown)]
        header = ["workload", "first step", *(label for _, label in keys), "other", "IR ops", "top-level ops"]
        rows = []
        for (kind, size), r in breakdown:
            t = r["timings"]
            other = r["first_s"] - sum(t.get(k, 0.0) for k, _ in keys if not k.startswith("unit_"))
            rows.append([case_name(kind, size), _seconds(r["first_s"]), *(_seconds(t.get(k)) for k, _ in keys),
                         _seconds(max(other, 0.0)), str(r.get("ir_ops", "-")), str(r.get("top_level_ops", "-"))])
        lines += _table(header, rows)
    errors = [(key, p, r) for key, row in results.items() for p, r in row.items()
              if "error" in r and r["error"] != "not installed"]
    wrong = [(key, p, r) for key, row in results.items() for p, r in row.items() if r.get("value_ok") is False]
    if errors or wrong:
        lines += ["", "problems:"]
        lines += [f"  {case_name(*key)} {LABELS[p]}: {r['error']}" for key, p, r in errors]
        lines += [f"  {case_name(*key)} {LABELS[p]}: first-step value differs from numpy's (max abs err "
                  f"{r['max_abs_err']:.3g})" for key, p, r in wrong]
    return "\n".join(lines) + "\n"


def _table(header, rows) -> list:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]


def to_json(results: dict, machine: dict, argv) -> dict:
    return {"benchmark": "compile", "argv": list(argv), "machine": machine,
            "results": [{"kind": kind, "size": size, "peers": row} for (kind, size), row in results.items()]}


def failed(results: dict) -> bool:
    return any(("error" in r and r["error"] != "not installed") or r.get("value_ok") is False
               for row in results.values() for r in row.values())


def main(args, argv) -> int:
    """``python -m benchmarks --compile`` (``args`` from benchmarks.__main__.parse_args)."""
    from . import report

    models = args.models if args.models is not None else (TINY_MODELS if args.tiny else MODELS)
    chains = args.chains if args.chains is not None else (TINY_CHAINS if args.tiny else CHAINS)
    peer_names = [p for p in args.peers if p in COMPILE_PEERS]

    def log(message):
        if args.verbose:
            print(f"[bench] {message}", file=sys.stderr, flush=True)

    if not args.verbose:
        print(f"compile benchmark: {len(cases(models, chains))} case(s) on {', '.join(peer_names)}, one process "
              f"each...", file=sys.stderr, flush=True)
    results = run(models, chains, peer_names, seed=args.seed, steady_reps=args.steady_reps, threads=args.threads,
                  timeout=args.child_timeout, cache=args.cache, peer_python_override=args.peer_python, log=log)
    print(format_report(results, peer_names))
    if args.json:
        report.write_json(args.json, to_json(results, report.machine_info(), argv))
        print(f"wrote {args.json}")
    return 1 if failed(results) else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child_main(sys.argv[2:]))
    from .__main__ import main as bench_main

    sys.exit(bench_main(["--compile", *sys.argv[1:]]))
