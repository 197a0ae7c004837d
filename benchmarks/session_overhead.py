"""Where the time of a repeated ``session.run`` goes, layer by layer, for the scalar add
of the ``scalar_add`` workload (``a + b`` on two fed float32 scalars).

    python -m benchmarks.session_overhead
    python -m benchmarks.session_overhead --json overhead.json

Rows, each the median over rounds of the mean over calls, from the innermost layer out:

- ``ctypes call``: the compiled program's entry point called through ctypes on bound
  arguments (the floor: the native add is a few nanoseconds of it);
- ``direct call``: the repeated-run fast path (tfc/runtime/fast_run.py) as this step
  takes it: the two feed values copied into kept buffers, the call, the 0-d result;
- ``session.run``: the whole public call;
- ``argument binding``: the executable's generated checks (dtypes and shapes, the shape
  symbols, the argument slots), without the call, which a step the direct call does
  not apply to (variables, large feeds, non-scalar results) takes instead;
- ``feed binding``: that checked path converting and copying the two feed values;
- ``checked fast path`` and ``session.run, checked fast path``: a repeat through those
  checks (what this step took before the direct call);
- ``session.run, general path``: the whole call with the plan's fast path removed (feed
  conversion, the plan and step lookups, the call, the fetch);
- with JAX installed, ``jax.jit`` of the same add on device arrays, waited for; numpy's
  ``a + b`` on two np.float32 for scale.
"""
from __future__ import annotations

import argparse
import json

from .timing import per_call_median


def _time(fn, calls: int, rounds: int) -> float:
    """Median over rounds of the mean seconds per call."""
    return per_call_median(fn, calls, rounds, warmup=min(calls, 500))


def measure(calls: int = 20000, rounds: int = 9) -> list:
    """[(layer, seconds per call)], innermost first."""
    import numpy as np

    import tfc.compat.v1 as tf

    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        b = tf.placeholder(tf.float32, [], name="b")
        total = tf.add(a, b, name="sum")
    session = tf.Session(graph=graph)
    feeds = {a: np.float32(1.25), b: np.float32(-0.5)}
    session.run(total, feeds)
    session.run(total, feeds)
    (plan,) = session._run_plans.values()
    fast = plan.fast
    if fast is None:
        raise RuntimeError("the scalar add did not take the repeated-run fast path")
    executable, context = fast.executable, fast.context
    fast._bind_feeds(feeds)
    args = list(fast.args)
    slots, dims, cache, kept = context.slots, context.dims, context.cache, fast.kept_outputs
    entry = executable.code.entry
    rows = [
        ("ctypes call", _time(lambda: entry(slots, dims), calls, rounds)),
        ("direct call", _time(lambda: fast._direct(session, feeds), calls, rounds)),
        ("session.run", _time(lambda: session.run(total, feeds), calls, rounds)),
        ("argument binding", _time(lambda: executable._fast(args, slots, dims, cache, kept), calls, rounds)),
        ("feed binding", _time(lambda: fast._bind_feeds(feeds), calls, rounds)),
    ]
    fast.direct_feeds, fast.direct_ready = None, False
    rows += [("checked fast path", _time(lambda: fast(session, feeds), calls, rounds)),
             ("session.run, checked fast path", _time(lambda: session.run(total, feeds), calls, rounds))]
    plan.fast = None  # (plan.fast_considered stays True: the session does not build it again)
    rows.append(("session.run, general path", _time(lambda: session.run(total, feeds), calls, rounds)))
    session.close()
    x, y = np.float32(1.25), np.float32(-0.5)
    rows.append(("numpy a + b", _time(lambda: x + y, calls, rounds)))
    try:
        import jax
    except ImportError:
        return rows
    add = jax.jit(lambda p, q: p + q)
    p, q = jax.device_put(x), jax.device_put(y)
    rows.append(("JAX jit (waited for)", _time(lambda: add(p, q).block_until_ready(), calls // 4, rounds)))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9, help="rounds (the median is reported)")
    parser.add_argument("--json", metavar="PATH", help="write the rows to PATH")
    options = parser.parse_args(argv)
    rows = measure(options.calls, options.rounds)
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1e6:8.2f} us")
    if options.json:
        with open(options.json, "w") as f:
            json.dump([{"layer": name, "seconds": seconds} for name, seconds in rows], f, indent=1)


if __name__ == "__main__":
    main()
