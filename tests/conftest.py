"""Suite-wide settings."""
import os

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
