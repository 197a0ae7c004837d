"""Timing one zero-argument step: warm up, then repeat until a time budget or a
repetition cap is reached, and summarise the samples (median, p10, p90).

Steps much shorter than the clock's resolution (a numpy scalar add takes ~100 ns) are
timed in batches of ``number`` calls, like :mod:`timeit`; every sample is the time of one
call (the batch time divided by ``number``). The garbage collector is off while timing.
"""
from __future__ import annotations

import gc
import math
import statistics
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingConfig:
    """How long to time each (workload, peer) pair."""

    warmup: int = 2  # untimed calls after the first (compiling) call
    min_time: float = 1.0  # stop once the timed calls add up to this many seconds...
    max_reps: int = 1000  # ...or after this many samples, whichever comes first
    min_reps: int = 5  # but never fewer samples than this
    min_sample_time: float = 20e-6  # batch calls so that one sample lasts at least this long

    @classmethod
    def quick(cls) -> "TimingConfig":
        return cls(warmup=1, min_time=0.05, max_reps=20, min_reps=3)


@dataclass
class Timing:
    """Seconds per call, one entry per sample; ``number`` calls were averaged in each."""

    samples: list = field(default_factory=list)
    number: int = 1

    @property
    def reps(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p10(self) -> float:
        return percentile(self.samples, 10)

    @property
    def p90(self) -> float:
        return percentile(self.samples, 90)

    def summary(self) -> dict:
        return {"median_s": self.median, "p10_s": self.p10, "p90_s": self.p90, "reps": self.reps,
                "calls_per_sample": self.number, "samples_s": list(self.samples)}


def percentile(values, q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def first_call(step):
    """Run ``step`` once (for compiled peers: trace + compile + run); return (result, seconds)."""
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def measure(step, config: TimingConfig, clock=time.perf_counter) -> Timing:
    """Time ``step`` (already called once by :func:`first_call`) under ``config``."""
    for _ in range(config.warmup):
        step()
    number = _calls_per_sample(step, config.min_sample_time, clock)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        timing = Timing(number=number)
        spent = 0.0
        while timing.reps < config.min_reps or (spent < config.min_time and timing.reps < config.max_reps):
            start = clock()
            for _ in range(number):
                step()
            elapsed = clock() - start
            spent += elapsed
            timing.samples.append(elapsed / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return timing


def _calls_per_sample(step, min_sample_time: float, clock) -> int:
    """1 for steps that take longer than ``min_sample_time``; otherwise a power of 10 that does."""
    number = 1
    while number < 1_000_000:
        start = clock()
        for _ in range(number):
            step()
        if clock() - start >= min_sample_time:
            return number
        number *= 10
    return number


def per_call_median(fn, calls: int, rounds: int, warmup: int) -> float:
    """Median over ``rounds`` of the mean seconds per call of ``calls`` calls, after
    ``warmup`` calls (the overhead benchmarks' loops of one tiny step)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)
