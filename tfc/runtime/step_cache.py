"""The persistent step cache: a Session step's native code and description, keyed by graph.

With ``TFC_CACHE_DIR`` set, the object cache (tfc/codegen/jit.py) is keyed by the LLVM IR,
so a new process still lowers, optimises and emits the IR before it can hit. This cache
sits in front of all of that: its key is computed from the TF graph alone, so a hit
skips lowering, the passes, IR emission and LLVM, and loads the object straight into an
MCJIT engine.

The key (sha256) covers, deliberately over-inclusively (a wrong hit is a silent wrong
result):
- the compiler: ``jit.compiler_version()``, the host target (triple, CPU, features), a
  hash of the tfc package's source (a changed lowering or pass recompiles), the numpy,
  protobuf and Python versions (constant folding runs numpy), the TFC_* environment
  variables but TFC_CACHE_DIR and TFC_NUM_THREADS (read at run time only), FORMAT;
- the step: fetched tensor names, target op names; each fed tensor in argument order
  (name, dtype, static shape, which run-time dims are 1 — what becomes its argument
  type) and the op producing it; every op of the pruned subgraph (``lower.prune``) in its
  order: name, type, device, inputs, control inputs, every attribute (values encoded
  exactly; protobufs by their deterministic serialisation) and each output's dtype and
  static shape (variables' types, ``set_shape``); the seeds of seeded random ops.
  A step with an attribute of a type this module cannot encode exactly, or with an
  unseeded random op (the session draws its seeds at random), is not cached.

Left out: where ops were created (file:line). It reaches no code, only error messages,
and those blame the graph op of that name in the session's own graph. The key assumes
that lowering reads nothing of the graph beyond the pruned ops and the fed tensors (and
their producers): a lowering that looks further must widen ``step_key``.

The value (one file ``<key>.step`` per key, written atomically with a checksum by
``jit.cache_store``): this module's header, a JSON description (the Executable's
``describe()``: signature, symbols, arena size, op names and locations, constraints;
and the Session's mapping: feeds, fetches, targets and ref slots by graph name, the refs
read and written), then its blobs: the MCJIT objects (``object.0``, ``object.1``, ...: the
program's compile units, linked again on load), and the Executable's compiled fast
path (``fast_path_code()``: marshalled Python, used only if it matches the signature).
An entry that cannot be read, fails its checksum or does not fit the step is ignored
(and rewritten by the compile that follows).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
import sys
from typing import Optional

import numpy as np

FORMAT = 2  # bump when the description or anything the key leaves implicit changes
SUFFIX = ".step"
_MAGIC = b"TFCSTEP1"
# Environment variables that cannot change compiled code (read when a program runs).
_RUNTIME_ONLY_ENV = ("TFC_CACHE_DIR", "TFC_NUM_THREADS")


class Uncacheable(Exception):
    """This step cannot be keyed exactly (it is compiled, and not cached)."""


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic collector off meanwhile: with a large graph in the heap, each full
    collection that the key's tuples or the description's lists trigger costs tens of ms."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# -- the key --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    """sha256 of every .py file of the tfc package (paths and contents)."""
    import tfc

    root = os.path.dirname(os.path.abspath(tfc.__file__))
    h = hashlib.sha256()
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _compiler_fingerprint() -> str:
    from tfc.codegen.jit import compiler_version
    from tfc.codegen.target import host_target

    try:
        from google.protobuf import __version__ as protobuf_version
    except ImportError:  # pragma: no cover - protobuf is a dependency
        protobuf_version = "?"
    target = host_target()
    return "\0".join([f"step format {FORMAT}", compiler_version(), target.triple, target.cpu, target.features,
                      _source_hash(), f"numpy {np.__version__}", f"protobuf {protobuf_version}",
                      f"python {sys.version}"])


def fingerprint() -> str:
    """Everything about this process that the compiled code may depend on."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TFC_") and k not in _RUNTIME_ONLY_ENV)
    return _compiler_fingerprint() + "\0" + repr(env)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _identity(value):
    return value  # str, bool, int, float, None: repr tells them apart, and is exact (floats round-trip)


def _encode_sequence(value):
    return (type(value).__name__, tuple([_encode(v) for v in value]))


def _encode_bytes(value: bytes):
    return value if len(value) <= 256 else ("bytes", _digest(value))


def _encoders() -> dict:
    from tfc.frontend.dtypes import DType
    from tfc.frontend.tensor_shape import Dimension, TensorShape

    return {str: _identity, bool: _identity, int: _identity, float: _identity, type(None): _identity,
            list: _encode_sequence, tuple: _encode_sequence, bytes: _encode_bytes,
            DType: lambda v: ("dtype", v.name), TensorShape: lambda v: ("shape", _shape(v)),
            Dimension: lambda v: ("dim", v.value)}


_ENCODERS: dict = {}


def _encode(value):
    """An exact encoding of an attribute value whose repr is canonical (Uncacheable otherwise)."""
    encoder = _ENCODERS.get(type(value))
    if encoder is not None:
        return encoder(value)
    if not _ENCODERS:
        _ENCODERS.update(_encoders())
        return _encode(value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise Uncacheable("an object array attribute")
        return ("ndarray", value.dtype.str, value.shape, _digest(np.ascontiguousarray(value).tobytes()))
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, repr(value.item()))
    serialize = getattr(value, "SerializeToString", None)
    descriptor = getattr(value, "DESCRIPTOR", None)
    if serialize is not None and descriptor is not None:  # a protobuf message (TensorProto, AttrValue...)
        data = serialize(deterministic=True)
        return ("proto", descriptor.full_name, data if len(data) <= 256 else _digest(data))
    kind = type(value)
    raise Uncacheable(f"an attribute of type {kind.__module__}.{kind.__qualname__}")


def _shape(shape) -> Optional[tuple]:
    dims = shape.dims
    return None if dims is None else tuple([d.value for d in dims])


def _outputs(op) -> tuple:
    return tuple([(t.dtype.name, _shape(t.shape)) for t in op._outputs])


def _describe_op(op) -> tuple:
    attrs = op._attrs
    return (op._name, op._type, op._device,
            tuple([(t._op._name, t._value_index) for t in op._inputs]),
            tuple([c._name for c in op._control_inputs]),
            tuple([(name, _encode(attrs[name])) for name in sorted(attrs)]),
            _outputs(op))


def step_key(fetches, targets, fed, feed_arrays: dict, rng_seed, precision: str = "f32") -> tuple:
    """(key or None when the step cannot be cached, the pruned ops in lowering order).

    ``fed``: the fed tensors in argument order; ``feed_arrays``: tensor -> the value the
    step is compiled for (its rank and which dims are 1 shape the program);
    ``rng_seed(op)``: the seeds the session gives a random op; ``precision``: the
    session's ("f32", or "bf16": a different program, so a different key)."""
    from tfc.passes.lower import prune

    with gc_paused():  # the encoding allocates ~100k small tuples: no full collections meanwhile
        return _step_key(prune(fetches, targets, fed), fetches, targets, fed, feed_arrays, rng_seed, precision)


def _step_key(ops, fetches, targets, fed, feed_arrays: dict, rng_seed, precision: str = "f32") -> tuple:
    try:
        parts = [fingerprint(),
                 tuple([(t._op._name, t._value_index) for t in fetches]),
                 tuple([op._name for op in targets])]
        if precision != "f32":  # (f32 keys stay those of before precisions existed)
            parts.append(("precision", precision))
        for t in fed:
            shape = np.shape(feed_arrays[t])
            parts.append(("feed", t._op._name, t._value_index, t.dtype.name, _shape(t.shape),
                          tuple([d == 1 for d in shape]), _describe_op(t._op)))
        for op in ops:
            parts.append(_describe_op(op))
            attrs = op._attrs
            if "seed" in attrs or "seed2" in attrs:
                if not (attrs.get("seed") or attrs.get("seed2")):
                    raise Uncacheable(f"unseeded random op {op._name}")
                parts.append(("seeds", tuple(rng_seed(op))))
    except Uncacheable:
        return None, ops
    return _digest(repr(parts).encode()), ops


# -- entries --------------------------------------------------------------------------------
def encode_entry(description: dict, blobs: dict) -> bytes:
    """The header, the JSON description (which lists the blobs' names and sizes), the blobs."""
    names = list(blobs)
    description = dict(description, blobs=[[name, len(blobs[name])] for name in names])
    text = json.dumps(description, separators=(",", ":")).encode()
    return b"".join([_MAGIC, len(text).to_bytes(8, "little"), text] + [blobs[name] for name in names])


def decode_entry(payload: bytes) -> Optional[tuple]:
    """(description, {blob name: bytes}) of an entry, or None when it is not one of this format."""
    head = len(_MAGIC) + 8
    if len(payload) < head or not payload.startswith(_MAGIC):
        return None
    size = int.from_bytes(payload[len(_MAGIC):head], "little")
    if head + size > len(payload):
        return None
    try:
        description = json.loads(payload[head:head + size])
        if not isinstance(description, dict) or description.get("format") != FORMAT:
            return None
        blobs, offset = {}, head + size
        for name, length in description["blobs"]:
            blobs[name] = payload[offset:offset + length]
            offset += length
    except (ValueError, TypeError, KeyError):
        return None
    if offset != len(payload):
        return None
    return description, blobs


def load(key: str) -> Optional[tuple]:
    """(description, blobs) stored for ``key``, or None (missing, corrupt, other format)."""
    from tfc.codegen import jit

    payload = jit.cache_load(key, suffix=SUFFIX)
    if payload is None:
        return None
    entry = decode_entry(payload)
    if entry is None or entry[0].get("key") != key:
        return None
    return entry


def store(key: str, description: dict, blobs: dict) -> None:
    """Write the entry for ``key`` (atomically; failures are ignored, as for objects)."""
    from tfc.codegen import jit

    jit.cache_store(key, encode_entry(dict(description, format=FORMAT, key=key), blobs), suffix=SUFFIX)


def objects_of(code) -> Optional[list]:
    """The object files of JIT-compiled ``code``, from the object cache (None without them)."""
    from tfc.codegen import jit

    keys = getattr(code, "object_keys", None) or []
    payloads = [jit.cache_load(key) for key in keys]
    return payloads if payloads and all(p is not None for p in payloads) else None
