"""What the runner prints and writes: the machine, the summary table (medians and
peer/tfc ratios), the detail table (p10/p90, repetitions, first-run time, check), the
failures, and the JSON file with every raw sample."""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys

from . import peers as peers_mod
from .runner import ERROR, MISMATCH, NOT_INSTALLED, OK

RATIO_NOTE = "ratio = peer median / tfc median: >1 means tfc is faster, <1 means the peer is faster."


# -- numbers ---------------------------------------------------------------------------------
def format_seconds(seconds) -> str:
    """Seconds with 3 significant digits in a readable unit: 812 ns, 12.3 us, 4.56 ms, 1.23 s."""
    if seconds is None or seconds != seconds:  # None or NaN
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{_three_digits(seconds / scale)} {unit}"
    return f"{_three_digits(seconds / 1e-9)} ns"


def _three_digits(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(peer_seconds, tfc_seconds):
    """peer / tfc, or None when either is missing or tfc's is zero."""
    if peer_seconds is None or tfc_seconds is None or tfc_seconds <= 0:
        return None
    return peer_seconds / tfc_seconds


def format_ratio(value) -> str:
    """2.31x; 3 significant digits; '-' when there is no ratio."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    if value >= 0.1:
        return f"{value:.2f}x"
    return f"{value:.3f}x"


# -- the machine -----------------------------------------------------------------------------
def machine_info(thread_notes=()) -> dict:
    info = {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": peers_mod.versions(),
        "numpy_blas": _numpy_blas(),
        "threads": peers_mod.threads(),
        "thread_notes": list(thread_notes),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    try:
        import llvmlite.binding as llvm

        info["llvm_host_cpu"] = llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001
        info["llvm_host_cpu"] = None
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numpy_blas():
    try:
        import numpy

        config = numpy.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older numpy: no dict mode
        return None


def format_machine(info: dict) -> str:
    v = info["versions"]
    lines = [
        f"machine: {info['cpu']}, {info['logical_cpus']} logical CPUs ({info['usable_cpus']} usable)"
        + (f", LLVM host CPU {info['llvm_host_cpu']}" if info.get("llvm_host_cpu") else ""),
        f"         {info['platform']}, Python {info['python']}"
        + (f", load average {info['load_average'][0]:.2f} at start" if info.get("load_average") else ""),
        "versions: " + ", ".join(
            f"{name} {v.get(key) or 'not installed'}"
            for name, key in (("tfc", "tfc"), ("numpy", "numpy"), ("llvmlite", "llvmlite"), ("LLVM", "llvm"),
                              ("tensorflow", "tensorflow"), ("jax", "jax"), ("jaxlib", "jaxlib"))),
    ]
    if info.get("numpy_blas"):
        lines.append(f"numpy BLAS: {info['numpy_blas']}")
    threads = info.get("threads")
    lines.append("threads: " + (f"{threads} for tfc and for the peers where they have a knob" if threads else
                                "tfc's pool and the peers' pools at their defaults (all usable cores)"))
    for note in info.get("thread_notes", []):
        lines.append(f"         {note}")
    return "\n".join(lines)


# -- tables ----------------------------------------------------------------------------------
def _median(result):
    return result.timing.median if result is not None and result.timed else None


def summary_cell(result, tfc_median, is_tfc: bool) -> str:
    if result is None:
        return "-"
    if result.status == NOT_INSTALLED:
        return "not installed"
    if not result.timed:
        return "error"
    text = format_seconds(result.timing.median)
    if not is_tfc:
        text += f" ({format_ratio(ratio(result.timing.median, tfc_median))})"
    if result.status == MISMATCH:
        text += " WRONG"
    elif result.status == ERROR:
        text += " (unchecked)"
    return text


def summary_table(results, peer_names) -> str:
    columns = ["tfc"] + [p for p in peer_names if p != "tfc"] if "tfc" in peer_names else list(peer_names)
    header = ["workload"] + [peers_mod.LABELS.get(p, p) for p in columns]
    rows = []
    for w in results:
        tfc_median = _median(w.peers.get("tfc"))
        rows.append([w.name] + [summary_cell(w.peers.get(p), tfc_median, p == "tfc") for p in columns])
    return markdown_table(header, rows)


def detail_table(results, peer_names) -> str:
    header = ["workload", "peer", "median", "p10", "p90", "reps", "first run", "max rel err", "check"]
    rows = []
    for w in results:
        for peer in peer_names:
            r = w.peers.get(peer)
            if r is None or r.status == NOT_INSTALLED:
                continue
            label = peers_mod.LABELS.get(peer, peer)
            if not r.timed:
                rows.append([w.name, label, "error", "", "", "", "", "", r.error[:60]])
                continue
            t = r.timing
            reps = f"{t.reps}" + (f"x{t.number}" if t.number > 1 else "")
            check = {OK: "ok", MISMATCH: "WRONG", ERROR: "unchecked"}[r.status]
            rel = f"{r.check.max_rel_err:.1e}" if r.check is not None else "-"
            rows.append([w.name, label, format_seconds(t.median), format_seconds(t.p10), format_seconds(t.p90),
                         reps, format_seconds(r.first_run_s), rel, check])
    return markdown_table(header, rows)


def markdown_table(header, rows) -> str:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    right = [False] + [True] * (len(header) - 1)

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) if r else str(c).ljust(w)
                                 for c, w, r in zip(cells, widths, right)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if r else "-") for w, r in zip(widths, right)) + "|"
    return "\n".join([line(header), rule] + [line(row) for row in rows])


def workload_legend(results) -> str:
    return "\n".join(f"  {w.name:<12} {w.title}: {w.description}" for w in results)


def failure_lines(results, verbose: bool = False) -> str:
    lines = []
    for w in results:
        for peer, r in w.peers.items():
            label = peers_mod.LABELS.get(peer, peer)
            if r.status == ERROR:
                lines.append(f"  {w.name} / {label}: {r.error}")
                if verbose and r.traceback:
                    lines.append("    " + r.traceback.rstrip().replace("\n", "\n    "))
            elif r.status == MISMATCH:
                lines.append(f"  {w.name} / {label}: result differs from numpy: max abs err "
                             f"{r.check.max_abs_err:.3g}, max rel err {r.check.max_rel_err:.3g} ({r.check.message})")
    return "\n".join(lines)


def note_lines(results) -> str:
    """One line per checked result with a note (the bf16 rows: accuracy against f32)."""
    lines = []
    for w in results:
        for peer, r in w.peers.items():
            if r.check is not None and getattr(r.check, "note", ""):
                lines.append(f"  {w.name} / {peers_mod.LABELS.get(peer, peer)}: {r.check.note}")
    return "\n".join(lines)


def full_report(results, peer_names, machine: dict, config, verbose: bool = False) -> str:
    parts = [format_machine(machine),
             f"timing: warm-up {config.warmup} call(s) after a first (compiling) run, then repeat until "
             f"{config.min_time:g} s or {config.max_reps} samples (at least {config.min_reps})",
             "", "workloads:", workload_legend(results), "",
             "median time per step, and peer/tfc ratio in parentheses:", summary_table(results, peer_names),
             RATIO_NOTE, "", "details:", detail_table(results, peer_names)]
    notes = note_lines(results)
    if notes:
        parts += ["", "notes:", notes]
    failed = failure_lines(results, verbose)
    if failed:
        parts += ["", "failures:" + ("" if verbose else " (tracebacks: --verbose or --json)"), failed]
    return "\n".join(parts)


def to_json(results, peer_names, machine: dict, config, argv) -> dict:
    return {
        "machine": machine,
        "argv": list(argv),
        "timing_config": {"warmup": config.warmup, "min_time_s": config.min_time, "max_reps": config.max_reps,
                          "min_reps": config.min_reps, "min_sample_time_s": config.min_sample_time},
        "peers": list(peer_names),
        "ratio": "peer median / tfc median (>1: tfc faster)",
        "results": [w.as_dict() for w in results],
    }


def write_json(path: str, document: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        json.dump(document, f, indent=1, default=str)
        f.write("\n")
