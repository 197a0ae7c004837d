"""Suite-wide settings."""
import os
import sys

# The Python processes of a run (pytest's workers, the examples, the cluster tasks, the
# CLI runs) compile tfc's sources once and then load the bytecode: where the environment
# turns bytecode writing off (PYTHONDONTWRITEBYTECODE), each of them would compile all of
# tfc and its test file again, ~1.3 s a process (the seed programs' tests: 52 s -> 28 s).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Kernel sharing (tfc/codegen/kernel_key.py) calls one emitted kernel for every op with
# the same structural key; in the suite every op is emitted anyway and a shared kernel
# must be the very function its op emits, so a key that misses something fails loudly.
os.environ.setdefault("TFC_CHECK_KERNEL_SHARING", "1")

# The compiler verifies the IR once, after its last pass; the suite verifies after every
# pass (and use lists with it), so a pass that breaks the IR is named where it breaks it.
os.environ.setdefault("TFC_VERIFY_EACH", "1")

# The suite is hermetic: a user's persistent cache folder must not serve (or receive) the
# tests' programs; the cache tests set TFC_CACHE_DIR themselves.
os.environ.pop("TFC_CACHE_DIR", None)
