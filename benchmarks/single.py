"""Time one workload for some peers in this Python, for peers that live in other virtual
environments (TensorFlow and JAX without tfc, tfc without them):

    python -m benchmarks.single lstm tfc numpy
    /path/tf-venv/bin/python -m benchmarks.single lstm tf_graph tf_xla    (PYTHONPATH=this checkout)
    /path/jax-venv/bin/python -m benchmarks.single lstm jax

Each peer's first call is checked against numpy's result; then the median of ``--reps``
timed calls (after 3 warm-up calls) is printed, one line per peer.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv=None) -> int:
    from .workloads import WORKLOADS

    parser = argparse.ArgumentParser(prog="python -m benchmarks.single", description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("peers", nargs="+", help="tfc numpy tf_graph tf_xla jax")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--tiny", action="store_true", help="tiny problem sizes (for tests)")
    args = parser.parse_args(argv)
    workload = WORKLOADS[args.workload](tiny=args.tiny)
    reference = workload.build_numpy()()
    for peer in args.peers:
        step = getattr(workload, f"build_{peer}")()
        check = workload.check({"numpy": reference, peer: step()})[peer]
        for _ in range(3):
            step()
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        print(f"{args.workload} {peer}: median {statistics.median(times) * 1e3:.2f} ms "
              f"({'ok' if check.ok else 'WRONG: ' + check.message}, max rel err {check.max_rel_err:.1e})")
    workload.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
