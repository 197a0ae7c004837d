"""``python -m benchmarks`` / ``tfc bench``: time tfc against numpy and the installed peers.

Thread settings must reach the peers' libraries before they load, so this module imports
nothing heavy until the arguments are parsed.
"""
from __future__ import annotations

import argparse
import sys

from .peers import PEERS as PEER_NAMES  # light: no numpy, tensorflow or jax

WORKLOAD_NAMES = ("scalar_add", "elementwise", "mlp", "mlp_bf16", "matmul", "layernorm", "cnn", "cnn_bf16",
                  "mlp_train", "cnn_train", "lstm", "lstm_train")


def _names(text: str, allowed, what: str) -> list:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or '(none)'}; "
                                         f"choose from {', '.join(allowed)}")
    return names


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time tfc (tf.Session.run on compiled code) against numpy and, when installed, TensorFlow "
                    "graph mode, TensorFlow XLA (tf.function(jit_compile=True)) and JAX jit, on the same "
                    "data. Prints medians and peer/tfc ratios (>1: tfc is faster).")
    parser.add_argument("--workloads", type=lambda t: _names(t, WORKLOAD_NAMES, "workload"),
                        default=list(WORKLOAD_NAMES), help="comma-separated: " + ",".join(WORKLOAD_NAMES))
    parser.add_argument("--peers", type=lambda t: _names(t, PEER_NAMES, "peer"), default=list(PEER_NAMES),
                        help="comma-separated: " + ",".join(PEER_NAMES) + " (numpy always runs: it is the "
                             "reference)")
    parser.add_argument("--quick", action="store_true",
                        help="a fast pass: 1 warm-up call, ~0.05 s or 20 samples per peer")
    parser.add_argument("--tiny", action="store_true", help="tiny problem sizes (for tests; not for numbers)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="threads for tfc (TFC_NUM_THREADS) and the peers (numpy BLAS, TensorFlow, JAX "
                             "when N=1). Default: each library's own default")
    parser.add_argument("--min-time", type=float, default=None, metavar="S",
                        help="time each peer until its samples add up to S seconds (default 1.0)")
    parser.add_argument("--max-reps", type=int, default=None, metavar="N",
                        help="...or N samples, whichever comes first (default 1000)")
    parser.add_argument("--min-reps", type=int, default=None, metavar="N", help="at least N samples (default 5)")
    parser.add_argument("--warmup", type=int, default=None, metavar="N",
                        help="untimed calls after the first (compiling) one (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input data")
    parser.add_argument("--json", metavar="PATH", help="write every raw sample and the machine to PATH")
    parser.add_argument("--verbose", "-v", action="store_true", help="print progress and full tracebacks")
    compile_group = parser.add_argument_group(
        "compile time (--compile)", "first-step (compile) times of deep MLPs and gradient chains, each "
                                    "measurement in a fresh process; see benchmarks/compile_time.py")
    compile_group.add_argument("--compile", action="store_true",
                               help="run the compile-time benchmark instead of the step-time workloads")
    compile_group.add_argument("--models", type=_sizes, default=None, metavar="L,L",
                               help="layer counts of the MLP models (default 10,40,100,200; --tiny: 2)")
    compile_group.add_argument("--chains", type=_sizes, default=None, metavar="N,N",
                               help="lengths of the sin chains (default 250,500,1000,2000; --tiny: 10)")
    compile_group.add_argument("--steady-reps", type=int, default=10, metavar="N",
                               help="steps timed after the first (median reported; default 10)")
    compile_group.add_argument("--child-timeout", type=float, default=900.0, metavar="S",
                               help="give up on one measurement after S seconds (default 900)")
    compile_group.add_argument("--cache", action="store_true",
                               help="add a 'tfc cached' column: a second process with TFC_CACHE_DIR filled by a "
                                    "first one")
    compile_group.add_argument("--peer-python", metavar="PYTHON[,PYTHON]",
                               help="interpreters with tensorflow/jax for the peers this one lacks (default "
                                    "$TFC_BENCH_PEER_PYTHON)")
    return parser.parse_args(argv)


def _sizes(text: str) -> list:
    try:
        sizes = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be >= 1")
    return sizes


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--":  # `tfc bench -- --quick`
        argv = argv[1:]
    args = parse_args(argv)

    from . import peers

    thread_notes = peers.set_threads(args.threads)  # before numpy/tensorflow/jax are loaded
    if args.compile:
        from . import compile_time

        return compile_time.main(args, argv)

    from . import report, runner
    from .timing import TimingConfig

    config = TimingConfig.quick() if args.quick else TimingConfig()
    overrides = {"min_time": args.min_time, "max_reps": args.max_reps, "min_reps": args.min_reps,
                 "warmup": args.warmup}
    config = TimingConfig(**{**config.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    peer_names = [p for p in PEER_NAMES if p in args.peers]

    def log(message):
        if args.verbose:
            print(f"[bench] {message}", file=sys.stderr, flush=True)

    machine = report.machine_info(thread_notes)
    if not args.verbose:
        print(f"running {len(args.workloads)} workload(s) on {', '.join(peer_names)}"
              f"{' (tiny sizes)' if args.tiny else ''}...", file=sys.stderr, flush=True)
    results = runner.run(args.workloads, peer_names, config, tiny=args.tiny, seed=args.seed, log=log)
    print(report.full_report(results, peer_names, machine, config, verbose=args.verbose))
    if args.json:
        report.write_json(args.json, report.to_json(results, peer_names, machine, config, argv))
        print(f"\nwrote {args.json}")
    return 1 if runner.failures(results) else 0


if __name__ == "__main__":
    sys.exit(main())
