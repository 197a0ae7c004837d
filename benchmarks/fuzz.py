"""``python -m benchmarks.fuzz --minutes N [--seed S]``: a long graph-fuzzing campaign.

Runs the programs of consecutive seeds (tfc.testing.fuzz) for N minutes in worker
processes, so a segfault or a hang in compiled code costs one seed, not the campaign:
the seed is recorded as a crash (or timeout) with its unshrunk reproducer and a fresh
worker goes on from the next seed. Each failure is shrunk (once per kind of failure and
set of ops); at the end it prints graphs/s, totals, each distinct failure's reproducer
and the reasons tfc gave for the graphs it declines by design ("refused").
"""
from __future__ import annotations

import argparse
import multiprocessing
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from tfc.testing.fuzz import Failure, Outcome, check_seed, fingerprint, generate, reproducer, shrink_failure

GRAPH_TIMEOUT_S = 120.0  # one program, shrinking included


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz",
                                     description="Fuzz tfc with random TF1 graphs, compared with the evaluator.")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--max-steps", type=int, default=8, help="steps per program (each adds 1-6 ops; default 8)")
    parser.add_argument("--parallel-every", type=int, default=4, metavar="K",
                        help="compile every K-th seed with every kernel split over the thread pool (0: never)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--shrink-seconds", type=float, default=60.0, help="time to shrink one failure")
    parser.add_argument("--progress-seconds", type=float, default=30.0, help="how often to print progress")
    return parser.parse_args(argv)


# -- the worker ------------------------------------------------------------------------------------
def _prekey(program, outcome) -> tuple:
    kinds = sorted({n.kind + (f".{n.params['fn']}" if "fn" in n.params else "") for n in program.nodes
                    if n.kind not in ("placeholder", "constant")})
    return (outcome.signature, tuple(kinds))


def worker(connection, first: int, stride: int, max_steps: int, parallel_every: int, shrink_seconds: float):
    """Run seeds first, first + stride, ...; send ("start", seed) before each and
    ("done", seed, kind, signature, detail, key, report) after."""
    shrunk_keys: dict = {}  # prekey -> fingerprint
    seed = first
    while True:
        connection.send(("start", seed))
        parallel = bool(parallel_every) and seed % parallel_every == 0
        program, outcome = check_seed(seed, max_steps, parallel)
        key, report = None, ""
        if outcome.failed:
            prekey = _prekey(program, outcome)
            if prekey in shrunk_keys:
                key = shrunk_keys[prekey]
            else:
                failure = shrink_failure(Failure(seed, outcome, program, parallel), max_seconds=shrink_seconds)
                key = shrunk_keys[prekey] = fingerprint(failure)
                report = failure.report()
        connection.send(("done", seed, outcome.kind, outcome.signature, outcome.detail, key, report))
        seed += stride


# -- the campaign ----------------------------------------------------------------------------------
@dataclass
class Tally:
    graphs: int = 0
    kinds: Counter = field(default_factory=Counter)
    failures: dict = field(default_factory=dict)  # key -> {"seeds": [...], "report": str, "signature": str}
    refused: Counter = field(default_factory=Counter)
    elapsed: float = 0.0

    def record(self, seed: int, kind: str, signature: str, detail: str, key, report: str) -> None:
        self.graphs += 1
        self.kinds[kind] += 1
        if kind == "refused":
            self.refused[_reason(detail)] += 1
        elif kind != "ok":
            entry = self.failures.setdefault(key, {"seeds": [], "report": "", "signature": signature})
            entry["seeds"].append(seed)
            entry["report"] = entry["report"] or report

    def failing(self) -> int:
        return sum(len(entry["seeds"]) for entry in self.failures.values())


def _reason(detail: str) -> str:
    """A refusal's reason without the names and numbers that differ from graph to graph."""
    text = detail.split(": ", 2)[-1]
    text = re.sub(r"'[^']*'", "'…'", text)
    return re.sub(r"\d+", "N", text)[:160]


def _unshrunk_report(seed: int, max_steps: int, what: str) -> str:
    return reproducer(generate(seed, max_steps), Outcome(what, f"the worker process {what} on this program"))


class Worker:
    def __init__(self, context, first: int, stride: int, args):
        self.args = args
        self.stride = stride
        self.parent, child = context.Pipe()
        self.process = context.Process(target=worker, args=(child, first, stride, args.max_steps,
                                                            args.parallel_every, args.shrink_seconds), daemon=True)
        self.process.start()
        child.close()
        self.current = None
        self.next = first
        self.started = time.monotonic()

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


def _poll(w: Worker, tally: Tally, context, args) -> Worker:
    """Take the worker's messages; replace it if it died or hangs. Returns the live worker."""
    while w.parent.poll(0.2):
        try:
            message = w.parent.recv()
        except EOFError:
            break
        if message[0] == "start":
            w.current, w.started = message[1], time.monotonic()
        else:
            tally.record(*message[1:])
            w.current, w.next = None, message[1] + w.stride
    died = not w.process.is_alive()
    hung = w.current is not None and time.monotonic() - w.started > GRAPH_TIMEOUT_S
    if not (died or hung):
        return w
    w.stop()
    if w.current is None:  # died between programs (at start-up: a broken install)
        raise RuntimeError(f"the fuzz worker exited with code {w.process.exitcode} before seed {w.next}")
    what = "timed out" if hung else f"crashed (exit code {w.process.exitcode})"
    kind = "timeout" if hung else "crash"
    tally.record(w.current, kind, f"{kind}:{w.process.exitcode}", what, (kind, w.current),
                 _unshrunk_report(w.current, args.max_steps, what))
    return Worker(context, w.current + w.stride, w.stride, args)


def run(args) -> Tally:
    context = multiprocessing.get_context("spawn")
    workers = [Worker(context, args.seed + k, args.workers, args) for k in range(args.workers)]
    tally = Tally()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    next_progress = start + args.progress_seconds
    try:
        while time.monotonic() < deadline:
            workers = [_poll(w, tally, context, args) for w in workers]
            if time.monotonic() >= next_progress:
                elapsed = time.monotonic() - start
                print(f"[{elapsed:6.0f}s] {tally.graphs} graphs ({tally.graphs / elapsed:.1f}/s), "
                      f"{tally.failing()} failing in {len(tally.failures)} distinct ways, "
                      f"{tally.kinds['refused']} refused", flush=True)
                next_progress += args.progress_seconds
    finally:
        for w in workers:
            w.stop()
    tally.elapsed = time.monotonic() - start
    return tally


def report(tally: Tally, args) -> str:
    lines = [f"done: {tally.graphs} graphs in {tally.elapsed:.0f} s ({tally.graphs / tally.elapsed:.1f} graphs/s), "
             f"seeds from {args.seed}, max {args.max_steps} steps: " + ", ".join(
                 f"{n} {k}" for k, n in tally.kinds.most_common()),
             f"{tally.failing()} failing programs in {len(tally.failures)} distinct ways"]
    for n, (key, entry) in enumerate(tally.failures.items(), 1):
        seeds = entry["seeds"]
        shown = ", ".join(map(str, seeds[:20])) + (", ..." if len(seeds) > 20 else "")
        lines += ["", f"== failure {n} of {len(tally.failures)}: {entry['signature']}, {len(seeds)} program(s), "
                      f"seeds {shown} ==", entry["report"].rstrip()]
    if tally.refused:
        lines += ["", f"== refused by design (UnsupportedOpsError): {sum(tally.refused.values())} programs =="]
        lines += [f"{count:6d}  {reason}" for reason, count in tally.refused.most_common()]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    print(f"tfc graph fuzzer: {args.minutes:g} min, seeds from {args.seed}, max {args.max_steps} steps, "
          f"{args.workers} worker(s), every {args.parallel_every or 'no'}th seed parallel", flush=True)
    tally = run(args)
    print(report(tally, args), flush=True)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
