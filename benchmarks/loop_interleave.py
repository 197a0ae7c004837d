"""How much interleaving vector iterations buys a loop of transcendental functions.

    python -m benchmarks.loop_interleave
    python -m benchmarks.loop_interleave --elements 65536 --counts 1,2,4,6,8 --rounds 200

Compiles the elementwise workload's loop (``tanh(x*1.5+0.5) * sigmoid(x) + x*x``) once per
interleave count (``tfc/codegen/kernels/loop.py``'s INTERLEAVE), then times the compiled
calls in turns on one thread (``TFC_NUM_THREADS=1`` is set before tfc loads) over an
input small enough to stay in cache, so the loop's own speed shows, not memory's. Prints
the median per call and the cycles per 8 elements at the clock given (``--ghz``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def measure(elements: int, counts: list, rounds: int) -> dict:
    """{interleave count: median seconds per call}."""
    import numpy as np

    import tfc
    import tfc.compat.v1 as tf
    from tfc.codegen.kernels import loop

    x = np.random.default_rng(0).standard_normal(elements).astype(np.float32)
    compiled = {}
    default = loop.INTERLEAVE, loop.INTERLEAVE_FROM
    loop.INTERLEAVE_FROM = 1  # every size takes the hint here
    try:
        for count in counts:
            loop.INTERLEAVE = count
            with tf.Graph().as_default():
                xp = tf.placeholder(tf.float32, [elements], name=f"x{count}")
                y = tf.tanh(xp * 1.5 + 0.5) * tf.sigmoid(xp) + xp * xp
                compiled[count] = tfc.compile(y, feeds=[xp])
    finally:
        loop.INTERLEAVE, loop.INTERLEAVE_FROM = default
    reference = compiled[counts[0]](x)
    samples = {count: [] for count in counts}
    for _ in range(rounds):
        for count, function in compiled.items():
            start = time.perf_counter()
            function(x)
            samples[count].append(time.perf_counter() - start)
    for count, function in compiled.items():
        np.testing.assert_allclose(function(x), reference, rtol=1e-6, atol=1e-6)
    return {count: statistics.median(times) for count, times in samples.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=65536)
    parser.add_argument("--counts", default="1,2,4,6", help="interleave counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--ghz", type=float, default=3.0, help="the clock, for cycles per 8 elements")
    options = parser.parse_args(argv)
    os.environ["TFC_NUM_THREADS"] = "1"
    counts = [int(c) for c in options.counts.split(",")]
    medians = measure(options.elements, counts, options.rounds)
    for count, seconds in medians.items():
        cycles = seconds * options.ghz * 1e9 / (options.elements / 8)
        print(f"interleave {count}: {seconds * 1e6:8.1f} us per call, {cycles:5.1f} cycles per 8 elements")


if __name__ == "__main__":
    main()
