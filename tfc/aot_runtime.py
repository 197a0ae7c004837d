"""``tfc.load(dir)``: run an ahead-of-time artifact (``CompiledGraph.save``, ``tfc aot``).

Needs only numpy and ctypes: no llvmlite, no compiler, no graph. Before anything runs it
checks the artifact: the manifest's own hash, the size and sha256 of every file (the
library and the weights must be among them), the weights header, the architecture and the
CPU features the code was compiled for (against /proc/cpuinfo), and the signature the
library embeds (``SIGNATURE_SYMBOL``) against the manifest, so a manifest edited and
re-hashed cannot make the loader call the code with other shapes, dtypes or slots. Each
failure is an ``ArtifactError`` saying what is wrong.

The loaded model is called like the ``tfc.compile`` result it was saved from: feeds
positionally (or by name as keywords), results in the structure of the fetches, the same
errors for values of the wrong shape. It is thread-safe: each call takes its own slots,
dims, arena and error record from a free list, so threads run calls in parallel (a model
with RNG state runs one call at a time, so every call draws fresh numbers).
"""
from __future__ import annotations

import ast
import collections
import ctypes
import hashlib
import json
import os
import platform
import struct
import threading
from typing import Optional

import numpy as np

try:
    from tfc import program_errors  # the codes and messages (numpy only)
except ImportError:  # the loader copied on its own: errors name their code, not TF's message
    program_errors = None

FORMAT = "tfc-aot"
FORMAT_VERSION = 2  # 2: the library embeds its signature (SIGNATURE_SYMBOL)
MANIFEST = "manifest.json"
SIGNATURE_SYMBOL = "tfc_signature"  # const char[]: signature_text(embedded_signature(...)), NUL-terminated
WEIGHTS_MAGIC = b"TFCWGHT1"
ARENA_ALIGN = 64
ERROR_RECORD_SIZE = program_errors.RECORD_SIZE if program_errors else 32  # int64 slots

# LLVM x86 feature name -> /proc/cpuinfo flag, for the features compiled code can use.
# (Other features in the manifest, e.g. system ones, are not checked.)
X86_CPUINFO_FLAGS = {
    "cmov": "cmov", "cx8": "cx8", "fxsr": "fxsr", "mmx": "mmx", "sse": "sse", "sse2": "sse2", "sse3": "pni",
    "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sse4a": "sse4a", "cx16": "cx16",
    "sahf": "lahf_lm", "popcnt": "popcnt", "avx": "avx", "avx2": "avx2", "fma": "fma", "fma4": "fma4",
    "xop": "xop", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe",
    "adx": "adx", "aes": "aes", "pclmul": "pclmulqdq", "sha": "sha_ni", "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq", "gfni": "gfni", "avx512f": "avx512f", "avx512bw": "avx512bw",
    "avx512cd": "avx512cd", "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq", "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16", "avx512vp2intersect": "avx512_vp2intersect", "avxvnni": "avx_vnni",
}
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


class ArtifactError(RuntimeError):
    """The folder is not a usable artifact: missing, modified, truncated or built for another CPU."""


class ShapeBindingError(ValueError):
    """An argument's shape does not fit the compiled program (as tfc.runtime.executable's)."""


class _SourceOp:
    """What an error needs of the graph op it blames: its name and where it was defined."""

    def __init__(self, name: str, frames):
        self.name = name
        self._user_frames = [tuple(f) for f in frames]


def _program_error(error_class: str, message: str, op: Optional[dict] = None) -> Exception:
    """tf.errors.<error_class> blaming ``op`` (a ValueError when the loader was copied on its own)."""
    source = _SourceOp(op["op"], op.get("defined_at", ())) if op and op.get("op") else None
    try:
        from tfc.frontend import errors
    except ImportError:
        return ValueError(message)
    return getattr(errors, error_class)(None, source, message)


def _invalid_argument(message: str, op: Optional[dict] = None) -> Exception:
    source = _SourceOp(op["op"], op.get("defined_at", ())) if op and op.get("op") else None
    try:
        from tfc.frontend.errors import InvalidArgumentError
    except ImportError:  # the loader copied on its own
        return ValueError(message)
    return InvalidArgumentError(None, source, message)


# -- checks -------------------------------------------------------------------------------------
def manifest_digest(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _gpu_manifest(directory: str) -> Optional[dict]:
    """The manifest when ``directory`` holds a GPU artifact, else None."""
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as f:
            manifest = json.loads(f.read().decode())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == "tfc-aot-cuda" else None


def read_manifest(directory: str) -> dict:
    path = os.path.join(directory, MANIFEST)
    if not os.path.isdir(directory):
        raise ArtifactError(f"{directory}: no such artifact folder")
    try:
        with open(path, "rb") as f:
            manifest = json.loads(f.read().decode())
    except FileNotFoundError:
        raise ArtifactError(f"{directory} is not a tfc artifact: it has no {MANIFEST}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{path} is not valid JSON ({e}): the manifest is damaged") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"{path} is not a tfc artifact manifest (format {manifest.get('format')!r})"
                            if isinstance(manifest, dict) else f"{path} is not a tfc artifact manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(f"{path}: artifact format version {manifest.get('format_version')} is not supported "
                            f"by this tfc (it reads version {FORMAT_VERSION}); rebuild the artifact")
    if manifest.get("manifest_sha256") != manifest_digest(manifest):
        raise ArtifactError(f"{path} was modified after the artifact was built: its content does not match its "
                            "manifest_sha256")
    check_manifest(manifest, path)
    return manifest


# -- the manifest's schema ----------------------------------------------------------------------
# The fields the loader reads, with their JSON types, checked before anything reads them: a
# manifest edited and re-hashed by hand gets an ArtifactError naming the field (e.g.
# "target.features[3] must be a string, got list"), never a TypeError or KeyError from the
# code that uses it. Fields the loader does not read (name, header, error_codes...) are not
# checked. The signature fields are compared with the library's embedded signature later.
class _Int:
    """A JSON integer (not a boolean), at least ``minimum`` unless that is None."""

    def __init__(self, minimum: Optional[int] = 0):
        self.minimum = minimum


class _List:
    """A JSON list whose every item matches ``item``."""

    def __init__(self, item):
        self.item = item


class _Tuple:
    """A JSON list of exactly ``len(items)`` values, each matching its schema."""

    def __init__(self, *items):
        self.items = items


class _Object:
    """A JSON object with these fields (others are allowed); ``optional`` ones may be absent."""

    def __init__(self, fields: dict, optional: tuple = ()):
        self.fields = fields
        self.optional = optional


class _Map:
    """A JSON object whose every value matches ``value``."""

    def __init__(self, value):
        self.value = value


class _OneOf:
    def __init__(self, *options):
        self.options = options


_DIM = _OneOf(_Int(None), str)  # a static dim, or the text of a symbolic one ("s0", "64*s0+64")
_FRAME = _Tuple(str, _OneOf(_Int(None), None), str)  # (file, line, function)
_TENSOR = {"name": str, "dtype": str, "shape": _List(_DIM), "slot": _Int()}
MANIFEST_SCHEMA = _Object({
    "files": _Map(_Object({"bytes": _Int(), "sha256": str})),
    "library": str,
    "weights": _Object({"file": str, "header_bytes": _Int(32), "data_bytes": _Int()}),
    "target": _Object({"triple": str, "cpu": str, "features": _List(str)}),
    "exports": _List(str),
    "entry": str,
    "symbols": _List(str),
    "inputs": _List(_Object({**_TENSOR, "tensor": str, "op": str, "arg": str, "tf_shape": _List(_OneOf(_Int(), None)),
                             "tf_shape_text": str})),
    "states": _List(_Object({**_TENSOR, "kind": str, "shape": _List(_Int())})),
    "outputs": _List(_Object({**_TENSOR, "tensor": str})),
    "structure": dict,
    "arena_bytes": _DIM,
    "slots": _Object({"count": _Int(), "arena": _Int(), "error": _Int(), "weights": _Int()}),
    "constraints": _List(_Object({"dims": _List(str), "message": str, "op": _OneOf(str, None),
                                  "defined_at": _List(_FRAME)})),
    "op_names": _List(str),
    "op_sources": _List(_Object({"op": str, "defined_at": _List(_FRAME)}, optional=("op", "defined_at"))),
}, optional=("op_sources",))


def check_manifest(manifest: dict, path: str = MANIFEST) -> None:
    """Refuse a manifest whose fields the loader reads are missing or of the wrong type
    (``MANIFEST_SCHEMA``), or whose feeds' TF shapes contradict their compiled shapes."""
    problem = _schema_problem(manifest, MANIFEST_SCHEMA, "")
    if problem is None:
        problem = _feed_shape_problem(manifest["inputs"])
    if problem is not None:
        raise ArtifactError(f"{path}: {problem}")


def _schema_problem(value, schema, where: str) -> Optional[str]:
    """What is wrong with ``value`` at ``where`` (the first problem), or None."""
    if isinstance(schema, _OneOf):
        if any(_schema_problem(value, option, where) is None for option in schema.options):
            return None
    elif isinstance(schema, _Int):
        if isinstance(value, int) and not isinstance(value, bool) and (schema.minimum is None
                                                                       or value >= schema.minimum):
            return None
    elif isinstance(schema, (_List, _Tuple)):
        if isinstance(value, list) and (isinstance(schema, _List) or len(value) == len(schema.items)):
            items = [schema.item] * len(value) if isinstance(schema, _List) else schema.items
            for i, (item, item_schema) in enumerate(zip(value, items)):
                problem = _schema_problem(item, item_schema, f"{where}[{i}]")
                if problem is not None:
                    return problem
            return None
    elif isinstance(schema, _Object):
        if isinstance(value, dict):
            for name, field_schema in schema.fields.items():
                field = f"{where}.{name}" if where else name
                if name not in value:
                    if name in schema.optional:
                        continue
                    return f"{field} is missing"
                problem = _schema_problem(value[name], field_schema, field)
                if problem is not None:
                    return problem
            return None
    elif isinstance(schema, _Map):
        if isinstance(value, dict):
            for key, item in value.items():
                problem = _schema_problem(item, schema.value, f"{where}[{json.dumps(key)}]")
                if problem is not None:
                    return problem
            return None
    elif schema is None:
        if value is None:
            return None
    elif isinstance(value, schema) and not isinstance(value, bool):
        return None
    return f"{where or 'the manifest'} must be {_describe(schema)}, got {_describe_value(value)}"


def _describe(schema) -> str:
    if isinstance(schema, _OneOf):
        return " or ".join(_describe(option) for option in schema.options)
    if isinstance(schema, _Int):
        if schema.minimum is None:
            return "an integer"
        return "a non-negative integer" if schema.minimum == 0 else f"an integer >= {schema.minimum}"
    if isinstance(schema, _List):
        return "a list"
    if isinstance(schema, _Tuple):
        return f"a list of {len(schema.items)} items"
    if isinstance(schema, (_Object, _Map)) or schema is dict:
        return "an object"
    if schema is None:
        return "null"
    return {str: "a string", list: "a list"}.get(schema, schema.__name__)


def _describe_value(value) -> str:
    """A wrong value in a message: a scalar as JSON, else its JSON kind (and a list's length)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, str):
        return "a string"
    return _json_text(value)


def _feed_shape_problem(inputs: list) -> Optional[str]:
    """A feed's TF shape (what feeding checks) must agree with its compiled shape (what the
    code was built for): the same rank, and every static TF dim is the compiled dim."""
    for i, t in enumerate(inputs):
        tf_shape, shape = t["tf_shape"], t["shape"]
        if len(tf_shape) != len(shape):
            return (f"inputs[{i}].tf_shape has rank {len(tf_shape)}, but inputs[{i}].shape (the compiled shape) has "
                    f"rank {len(shape)}")
        for axis, (tf_dim, dim) in enumerate(zip(tf_shape, shape)):
            if tf_dim is not None and tf_dim != dim:
                return (f"inputs[{i}].tf_shape[{axis}] is {tf_dim}, but inputs[{i}].shape[{axis}] (the compiled "
                        f"dim) is {_json_text(dim)}")
    return None


def verify_files(directory: str, manifest: dict) -> None:
    """Every file the manifest lists exists with its size and sha256; the library and the
    weights file are listed."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ArtifactError(f"artifact {directory}: {MANIFEST} lists no files (\"files\" is {files!r}); the manifest "
                            "is damaged: rebuild the artifact")
    for name in (manifest.get("library"), (manifest.get("weights") or {}).get("file")):
        if name not in files:
            raise ArtifactError(f"artifact {directory}: {MANIFEST} does not list {name!r} among its files; the "
                                "manifest is damaged: rebuild the artifact")
    for name, expected in files.items():
        path = os.path.join(directory, name)
        try:
            size = os.path.getsize(path)
        except (OSError, ValueError):  # ValueError: a name with a NUL byte
            raise ArtifactError(f"artifact {directory}: {name} is missing") from None
        if size != expected["bytes"]:
            state = "truncated" if size < expected["bytes"] else "larger than built"
            raise ArtifactError(f"artifact {directory}: {name} is {state} ({size} bytes, the manifest says "
                                f"{expected['bytes']}); rebuild or recopy the artifact")
        if _sha256(path) != expected["sha256"]:
            raise ArtifactError(f"artifact {directory}: {name} was modified (its sha256 does not match the "
                                "manifest); rebuild or recopy the artifact")


def embedded_signature(manifest: dict, weights_sha256: str) -> dict:
    """What the library embeds about itself: every manifest field the loader trusts when it
    calls the code (tensor names, dtypes, symbolic shapes and slots, the arena size, the
    slot layout, the entry, the fetch structure, the weights layout and hash)."""
    def tensors(key: str, fields: tuple) -> list:
        return [{f: t[f] for f in fields} for t in manifest[key]]

    weights = manifest["weights"]
    return {
        "entry": manifest["entry"],
        "symbols": manifest["symbols"],
        "inputs": tensors("inputs", ("name", "tensor", "op", "dtype", "shape", "slot")),
        "states": tensors("states", ("name", "kind", "dtype", "shape", "slot")),
        "outputs": tensors("outputs", ("name", "tensor", "dtype", "shape", "slot")),
        "structure": manifest["structure"],
        "arena_bytes": manifest["arena_bytes"],
        "slots": manifest["slots"],
        "weights": {"file": weights["file"], "header_bytes": weights["header_bytes"],
                    "data_bytes": weights["data_bytes"], "sha256": weights_sha256},
    }


def signature_text(signature: dict) -> str:
    """The canonical JSON of a signature (ASCII: it is a C string in the library)."""
    return json.dumps(signature, sort_keys=True, separators=(",", ":"))


def read_embedded_signature(directory: str, manifest: dict, library) -> dict:
    """The signature the library was built with (``SIGNATURE_SYMBOL``)."""
    try:
        address = ctypes.addressof(ctypes.c_char.in_dll(library, SIGNATURE_SYMBOL))
    except ValueError:
        raise ArtifactError(f"artifact {directory}: {manifest['library']} does not embed its signature "
                            f"({SIGNATURE_SYMBOL}); rebuild the artifact") from None
    try:
        return json.loads(ctypes.string_at(address).decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise ArtifactError(f"artifact {directory}: the signature {manifest['library']} embeds is not valid JSON "
                            f"({e})") from None


def check_signature(directory: str, manifest: dict, library) -> None:
    """The manifest says what the library was built with: the first field that differs is
    named in the ArtifactError."""
    built = read_embedded_signature(directory, manifest, library)
    try:
        claimed = embedded_signature(manifest, manifest["files"][manifest["weights"]["file"]]["sha256"])
    except KeyError as e:  # check_manifest refuses these first; kept for manifests built by hand
        raise ArtifactError(f"artifact {directory}: {MANIFEST} lacks the field {e.args[0]!r} of the "
                            "signature") from None
    except TypeError as e:
        raise ArtifactError(f"artifact {directory}: {MANIFEST} has a signature field of the wrong type "
                            f"({e})") from None
    difference = _first_difference(claimed, built, "")
    if difference is not None:
        path, in_manifest, in_library = difference
        raise ArtifactError(f"artifact {directory}: {MANIFEST} does not match the signature {manifest['library']} "
                            f"was built with: {path} is {_json_text(in_manifest)} in {MANIFEST} but "
                            f"{_json_text(in_library)} in {manifest['library']}; rebuild the artifact")


_MISSING = object()


def _first_difference(a, b, path: str) -> Optional[tuple]:
    """(path, a's value, b's value) where two JSON values first differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = _first_difference(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if type(a) is type(b) and a == b:
        return None
    return path, a, b


def _json_text(value) -> str:
    if value is _MISSING:
        return "absent"
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def host_cpu_flags() -> Optional[set]:
    """The CPU flags of /proc/cpuinfo, or None where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return None


def check_target(target: dict, host_flags: Optional[set] = None, machine: Optional[str] = None) -> None:
    """Refuse code for another architecture or for CPU features this host lacks."""
    arch = target["triple"].split("-")[0]
    machine = machine or platform.machine()
    if _ARCH.get(arch, arch) != _ARCH.get(machine.lower(), machine.lower()):
        raise ArtifactError(f"the artifact was built for {target['triple']}, but this machine is {machine}")
    if _ARCH.get(arch) != "x86_64":
        return
    flags = host_cpu_flags() if host_flags is None else host_flags
    if flags is None:
        return
    missing = sorted({f for f in target["features"]
                      if f in X86_CPUINFO_FLAGS and X86_CPUINFO_FLAGS[f] not in flags})
    if missing:
        raise ArtifactError(f"the artifact was built for CPU '{target['cpu']}' and needs CPU features this machine "
                            f"lacks: {', '.join(missing)}. Rebuild it for a baseline this machine has (e.g. "
                            "`tfc aot ... --target-cpu x86-64-v2`) or on this machine")


# -- dims ---------------------------------------------------------------------------------------
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.USub,
            ast.Constant, ast.Name, ast.Load)


def _dim_function(d, symbols: list):
    """A function of the tuple of symbol values computing dim ``d`` (an int or its text)."""
    if isinstance(d, int):
        return lambda values, d=d: d
    try:
        tree = ast.parse(str(d), mode="eval")
    except (SyntaxError, ValueError):
        raise ArtifactError(f"bad dimension expression {d!r} in the manifest") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED) or (isinstance(node, ast.Constant) and type(node.value) is not int):
            raise ArtifactError(f"bad dimension expression {d!r} in the manifest")
        if isinstance(node, ast.Name) and node.id not in symbols:
            raise ArtifactError(f"dimension {d!r} uses an unknown symbol {node.id!r}")
    code = compile(tree, "<dim>", "eval")
    names = list(symbols)
    return lambda values: eval(code, {"__builtins__": {}}, dict(zip(names, values)))  # noqa: S307 - checked


# -- the model ----------------------------------------------------------------------------------
class _CallContext:
    """The memory one call writes (slots, dims, arena, error record): one call at a time."""

    __slots__ = ("slots", "dims", "error", "arena", "runs")

    def __init__(self, slots: dict, num_symbols: int, weights: np.ndarray):
        self.slots = (ctypes.c_void_p * slots["count"])()
        self.dims = (ctypes.c_int64 * max(1, num_symbols))()
        self.error = np.zeros(ERROR_RECORD_SIZE, dtype=np.int64)
        self.slots[slots["error"]] = self.error.ctypes.data
        if slots.get("weights") is not None:  # (a GPU artifact's constants live on the device)
            self.slots[slots["weights"]] = weights.ctypes.data
        self.arena = np.empty(0, dtype=np.uint8)
        self.runs = 0

    def grow_arena(self, size: int, arena_slot: int) -> None:
        self.arena = np.empty(size + ARENA_ALIGN, dtype=np.uint8)
        address = self.arena.__array_interface__["data"][0]
        self.slots[arena_slot] = address + (-address % ARENA_ALIGN)


class LoadedModel:
    """A loaded artifact: call it like the ``tfc.compile`` result it was saved from.

    Thread-safe: calls from several threads run in parallel, each with its own
    ``_CallContext``; a model with state (RNG counters) runs one call at a time."""

    def __init__(self, directory: str, manifest: dict, library, weights: np.ndarray, entry=None):
        """``entry``: what runs the program, ``entry(slots, dims) -> status`` (default: the
        library's entry; a GPU artifact passes its plan's runner)."""
        self.directory = directory
        self.manifest = manifest
        self._library = library
        self._weights = weights
        self.symbols = list(manifest["symbols"])
        self.inputs = manifest["inputs"]
        self.outputs = manifest["outputs"]
        if entry is None:
            entry = getattr(library, manifest["entry"])
            entry.restype = ctypes.c_int32
            entry.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)]
        self._entry = entry
        self._dtypes = [np.dtype(t["dtype"]) for t in self.inputs]
        self._states = [np.zeros(t["shape"], dtype=t["dtype"]) for t in manifest["states"]]
        self._out = [(np.dtype(t["dtype"]), [_dim_function(d, self.symbols) for d in t["shape"]])
                     for t in self.outputs]
        self._binders, self._checks = [], []
        for i, t in enumerate(self.inputs):
            for axis, d in enumerate(t["shape"]):
                if isinstance(d, int):
                    continue
                if d in self.symbols:
                    self._binders.append((i, axis, self.symbols.index(d)))
                else:
                    self._checks.append((i, axis, _dim_function(d, self.symbols)))
        self._arena_size = _dim_function(manifest["arena_bytes"], self.symbols)
        self._slot_arena = manifest["slots"]["arena"]
        self._contexts: list = []  # every context made (for ``runs``)
        self._free: list = []  # the contexts no call is using; list.pop/append are atomic
        self._state_lock = threading.Lock() if self._states else None
        self._structure = manifest["structure"]

    def _new_context(self) -> _CallContext:
        context = _CallContext(self.manifest["slots"], len(self.symbols), self._weights)
        self._contexts.append(context)
        return context

    @property
    def runs(self) -> int:
        """Calls that reached the compiled code, over all threads."""
        return sum(context.runs for context in list(self._contexts))

    def __repr__(self) -> str:
        def sig(t):
            return f"{t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]"
        return (f"<tfc.LoadedModel {self.directory!r} ({', '.join(sig(t) for t in self.inputs)}) -> "
                f"({', '.join(sig(t) for t in self.outputs)})>")

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        outputs = self.run(self._feed_values(args, kwargs))
        return _build(self._structure, [o[()] if o.ndim == 0 else o for o in outputs])

    def _feed_values(self, args, kwargs) -> list:
        if len(args) > len(self.inputs):
            raise TypeError(f"expected at most {len(self.inputs)} feed values, got {len(args)}")
        values = list(args)
        for t in self.inputs[len(args):]:
            for key in (t["tensor"], t["op"], t["name"]):
                if key in kwargs:
                    values.append(kwargs.pop(key))
                    break
            else:
                raise TypeError(f"missing a value for feed '{t['op']}'")
        if kwargs:
            raise TypeError(f"unknown feeds: {', '.join(kwargs)}")
        out = []
        for t, dtype, value in zip(self.inputs, self._dtypes, values):
            array = np.asarray(value, dtype=dtype, order="C")
            tf_shape = t["tf_shape"]
            if len(tf_shape) != array.ndim or any(d is not None and d != n for d, n in zip(tf_shape, array.shape)):
                raise ValueError(f"Cannot feed value of shape {array.shape!r} for Tensor {t['tensor']!r}, which has "
                                 f"shape {t['tf_shape_text']!r}")
            out.append(array)
        return out

    def run(self, values) -> list:
        """One run on arrays in signature order (exact dtypes, C order); returns the output arrays."""
        bound = self._bind(values)
        outputs = [np.empty([f(bound) for f in dims], dtype=dtype) for dtype, dims in self._out]
        free = self._free
        try:
            context = free.pop()
        except IndexError:
            context = self._new_context()
        try:
            if self._state_lock is None:
                self._call(context, values, outputs, bound)
            else:
                with self._state_lock:
                    self._call(context, values, outputs, bound)
        finally:
            free.append(context)
        return outputs

    def _call(self, context: _CallContext, values, outputs: list, bound: tuple) -> None:
        arena_size = self._arena_size(bound)
        if context.arena.size < arena_size + ARENA_ALIGN:
            context.grow_arena(arena_size, self._slot_arena)
        slots = context.slots
        position = 0
        for value in values:
            slots[position] = value.__array_interface__["data"][0]
            position += 1
        for state in self._states:
            slots[position] = state.__array_interface__["data"][0]
            position += 1
        for out in outputs:
            slots[position] = out.__array_interface__["data"][0]
            position += 1
        dims = context.dims
        for i, size in enumerate(bound):
            dims[i] = size
        status = self._entry(slots, dims)
        context.runs += 1
        if status != 0:
            self._raise(status, context.error)

    def _bind(self, values) -> tuple:
        if len(values) != len(self.inputs):
            raise ShapeBindingError(f"expected {len(self.inputs)} arguments, got {len(values)}")
        for t, dtype, value in zip(self.inputs, self._dtypes, values):
            if not isinstance(value, np.ndarray) or value.dtype != dtype or not value.flags.c_contiguous:
                raise ShapeBindingError(f"argument '{t['arg']}' must be a C-contiguous {dtype} array")
            if value.ndim != len(t["shape"]):
                raise ShapeBindingError(f"argument '{t['arg']}' must have rank {len(t['shape'])}, got shape "
                                        f"{value.shape}")
            for axis, d in enumerate(t["shape"]):
                if isinstance(d, int) and value.shape[axis] != d:
                    self._mismatch(t, value, axis, d)
        bound: list = [None] * len(self.symbols)
        for i, axis, position in self._binders:
            size = values[i].shape[axis]
            if bound[position] is None:
                bound[position] = size
            elif bound[position] != size:
                self._mismatch(self.inputs[i], values[i], axis, bound[position])
        for i, axis, fn in self._checks:
            if fn(bound) != values[i].shape[axis]:
                self._mismatch(self.inputs[i], values[i], axis, fn(bound))
        return tuple(bound)

    def _mismatch(self, t: dict, value, axis: int, expected) -> None:
        d = t["shape"][axis]
        for c in self.manifest["constraints"]:
            if not isinstance(d, int) and d in c["dims"]:
                raise _invalid_argument(f"{c['message']} (at run time, '{t['arg']}' has shape {list(value.shape)})",
                                        c)
        raise ShapeBindingError(f"argument '{t['arg']}' dim {axis} is {value.shape[axis]}, but the program "
                                f"needs {expected} (shape {list(value.shape)} vs. "
                                f"[{', '.join(map(str, t['shape']))}])")

    def _raise(self, status: int, error: np.ndarray) -> None:
        """The error a failed run reported (tfc/program_errors.py), naming the op."""
        op_index = int(error[1])
        names = self.manifest["op_names"]
        op_name = names[op_index] if 0 <= op_index < len(names) else "?"
        described = program_errors.describe(status, error) if program_errors else None
        if described is None:
            described = "InvalidArgumentError", f"compiled program failed with status {status}"
        error_class, message = described
        sources = self.manifest.get("op_sources") or []
        raise _program_error(error_class, f"{message} (in '{op_name}')",
                             sources[op_index] if 0 <= op_index < len(sources) else None)


def _build(node: dict, values: list):
    if "tensor" in node:
        return values[node["tensor"]]
    if "op" in node:
        return None
    if "list" in node:
        return [_build(c, values) for c in node["list"]]
    if "tuple" in node:
        return tuple(_build(c, values) for c in node["tuple"])
    if "namedtuple" in node:
        cls = collections.namedtuple(node["type"], node["fields"])
        return cls(*[_build(c, values) for c in node["namedtuple"]])
    items = [(k, _build(v, values)) for k, v in node["dict"]]
    if node.get("type") == "OrderedDict":
        return collections.OrderedDict(items)
    if node.get("type") == "defaultdict":
        out = collections.defaultdict(None)
        out.update(items)
        return out
    return dict(items)


def default_pool_size() -> int:
    try:
        from tfc._env import default_pool_size as configured_pool_size
    except ImportError:  # the loader copied on its own: TFC_NUM_THREADS is used when valid
        text = os.environ.get("TFC_NUM_THREADS", "").strip()
        return int(text) if text.isdigit() and int(text) > 0 else max(1, os.cpu_count() or 1)
    return configured_pool_size()


def _read_weights(directory: str, manifest: dict) -> np.ndarray:
    """The weights data (after the header) in 64-byte aligned memory."""
    spec = manifest["weights"]
    path = os.path.join(directory, spec["file"])
    header = spec["header_bytes"]
    total = header + spec["data_bytes"]
    size = os.path.getsize(path)
    if size != total:
        raise ArtifactError(f"artifact {directory}: {spec['file']} has {size} bytes, but the weights need {total} "
                            f"({header}-byte header + {spec['data_bytes']} bytes of data)")
    buffer = np.empty(total + 2 * ARENA_ALIGN, dtype=np.uint8)
    start = (-(buffer.ctypes.data + header)) % ARENA_ALIGN
    view = buffer[start:start + total]
    with open(path, "rb") as f:
        if f.readinto(memoryview(view)) != total:
            raise ArtifactError(f"artifact {directory}: could not read {spec['file']}")
    head = view[:header].tobytes()
    magic, _version, _align, data_bytes, _count = struct.unpack("<8sIIQQ", head[:32])
    if magic != WEIGHTS_MAGIC or data_bytes != spec["data_bytes"]:
        raise ArtifactError(f"artifact {directory}: {spec['file']} is not this model's weights file")
    data = view[header:]
    data.flags.writeable = False
    return data


def _exports(library, symbol: str) -> bool:
    try:
        getattr(library, symbol)
    except (AttributeError, ValueError):  # ValueError: a name with a NUL byte
        return False
    return True


def load(directory: str, num_threads: Optional[int] = None, check_cpu: bool = True) -> LoadedModel:
    """Load an artifact folder written by ``CompiledGraph.save`` or ``tfc aot``.

    Raises ArtifactError when the folder is not a valid artifact (missing or modified files,
    a damaged manifest, a manifest that does not match the signature the library embeds) or
    was built for an architecture or CPU features this host lacks.
    ``num_threads`` sizes the library's thread pool (default: TFC_NUM_THREADS, else the
    cores this process may use)."""
    directory = os.fspath(directory)
    gpu = _gpu_manifest(directory)
    if gpu is not None:  # a GPU artifact (tfc/codegen/gpu/aot.py)
        from tfc.runtime.cuda.artifact import load_gpu

        return load_gpu(directory, gpu)
    manifest = read_manifest(directory)
    verify_files(directory, manifest)
    if check_cpu:
        check_target(manifest["target"])
    weights = _read_weights(directory, manifest)
    path = os.path.abspath(os.path.join(directory, manifest["library"]))
    try:
        library = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise ArtifactError(f"artifact {directory}: cannot load {manifest['library']}: {e}") from None
    for symbol in manifest["exports"]:
        if not _exports(library, symbol):
            raise ArtifactError(f"artifact {directory}: {manifest['library']} does not export {symbol}")
    check_signature(directory, manifest, library)
    set_size = library.tfc_pool_set_size
    set_size.restype = None
    set_size.argtypes = [ctypes.c_int64]
    set_size(num_threads or default_pool_size())
    return LoadedModel(directory, manifest, library, weights)
