"""``tfc demo``: what it prints, its check against numpy, and numpy's BLAS pinned to tfc's
thread count for the comparison."""
from __future__ import annotations

import re

import numpy as np

from tfc import demo


def test_demo_checks_against_numpy_and_times_both_with_the_same_threads():
    """``tfc demo`` as a user runs it: the installed command, in a fresh process."""
    import shutil
    import subprocess
    import sys

    command = shutil.which("tfc")
    argv = [command, "demo"] if command else [sys.executable, "-m", "tfc.cli", "demo"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("tfc demo: a 784-256-10 MLP (relu, softmax) built with the TF1 API\n")
    assert re.search(r"native result vs numpy: max abs difference \d\.\d\de-\d\d -> OK", out)
    from tfc.codegen.parallel import default_pool_size

    threads = default_pool_size()
    header = re.search(r"batch 256, median of 30 runs, in turns \(tfc: (\d+) threads; numpy: (.*)\):", out)
    assert header and int(header.group(1)) == threads
    assert header.group(2) in (f"{threads} BLAS threads", "its BLAS's own threads")
    assert re.search(r"ratio \(numpy/tfc\) +\d+\.\d\dx", out)
    assert "session: 33 runs, 2 compilations" in out


def test_numpy_blas_threads_are_set_inside_the_block_and_restored():
    blas = demo._numpy_openblas()
    with demo.numpy_blas_threads(1) as inside:
        if blas is None:
            assert inside is None
        else:
            assert inside == 1 == blas[1]()
            a = np.ones((64, 64))
            assert (a @ a)[0, 0] == 64.0
    if blas is not None:
        before = blas[1]()
        with demo.numpy_blas_threads(1):
            pass
        assert blas[1]() == before
