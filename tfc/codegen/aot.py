"""Ahead-of-time artifacts: a compiled graph as a folder that runs without the compiler.

``build_artifact(compiled, directory)`` writes:

  lib<name>.so     the program, its thread pool and GEMM routines (one LLVM object,
                   emitted position-independent for the artifact's target and linked
                   with the system linker); only ``EXPORTS`` are exported, among them
                   ``tfc_signature``: the canonical JSON of the signature it was built
                   for (aot_runtime.embedded_signature), which the loader compares with
                   the manifest
  <name>.h         C header: the entry, the named inputs/outputs with shapes and
                   dtypes, and inline helpers (bind shapes, output shapes, arena size,
                   load the weights, run)
  <name>.weights   the constants of at least ``EXTERNAL_MIN_BYTES`` bytes: a 64-byte
                   header (``WEIGHTS_MAGIC``, version, alignment, data bytes, count),
                   then the data; each constant 64-byte aligned at the offset the
                   manifest gives, counted from the end of the header
  manifest.json    signature (symbolic dims), calling convention, exported symbols,
                   target triple, CPU and features, versions, the weights layout and
                   the sha256 and size of every other file; ``manifest_sha256`` covers
                   the manifest itself (its canonical JSON without that field)

The entry is ``int32_t tfc_main(void **args, int64_t *dims)`` with
``args = [inputs..., states..., outputs..., arena, error record, weights]`` (see
tfc/codegen/program.py); ``tfc.load`` (tfc/aot_runtime.py) and the header's helpers
fill them. The compiler never runs at load time.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from typing import Optional

import numpy as np

from tfc import ir
from tfc import program_errors as checks
from tfc.aot_runtime import SIGNATURE_SYMBOL, embedded_signature, signature_text
from tfc.ir.dims import FloorDiv, SymExpr, dim_str

FORMAT = "tfc-aot"
FORMAT_VERSION = 2  # 2: the library embeds its signature (SIGNATURE_SYMBOL)
ENTRY = "tfc_main"
POOL_SIZE_SYMBOL = "tfc_pool_set_size"
EXPORTS = (ENTRY, POOL_SIZE_SYMBOL, SIGNATURE_SYMBOL)
WEIGHTS_MAGIC = b"TFCWGHT1"
WEIGHTS_HEADER = 64
MANIFEST = "manifest.json"

# Portable x86-64 baselines (the psABI micro-architecture levels), as LLVM feature names.
_X86_64 = ["cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "64bit"]
_X86_64_V2 = _X86_64 + ["cx16", "sahf", "popcnt", "crc32", "sse3", "ssse3", "sse4.1", "sse4.2"]
_X86_64_V3 = _X86_64_V2 + ["avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"]
_X86_64_V4 = _X86_64_V3 + ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "evex512"]
CPU_LEVELS = {"x86-64": _X86_64, "x86-64-v2": _X86_64_V2, "x86-64-v3": _X86_64_V3, "x86-64-v4": _X86_64_V4}

_C_TYPES = {"float16": "uint16_t", "float32": "float", "float64": "double", "int8": "int8_t", "int16": "int16_t",
            "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "bool": "uint8_t"}
_DTYPE_CODES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "int64": 9,
                "bool": 10, "float16": 19}  # TF's DataType enum values


class AOTError(RuntimeError):
    """An artifact cannot be built (unsupported graph, no linker, link failure...)."""


# -- targets ------------------------------------------------------------------------------------
def resolve_target(cpu: Optional[str] = None, features: Optional[str] = None):
    """The Target to build for: the host (default), an x86-64 level, or a CPU with features."""
    from .target import Target, host_target

    host = host_target()
    if cpu in (None, "", "host", "native"):
        if features:
            return Target(host.triple, host.cpu, features)
        return host
    if cpu in CPU_LEVELS and not host.triple.startswith("x86_64"):
        raise AOTError(f"--target-cpu {cpu} is an x86-64 baseline, but this host's target is {host.triple} "
                       "(artifacts are built for the host's architecture)")
    if features is None:
        if cpu not in CPU_LEVELS:
            raise AOTError(f"unknown target CPU {cpu!r} without features: use host, "
                           f"{', '.join(CPU_LEVELS)} or give --target-features (LLVM names, e.g. +avx2,+fma)")
        known = {f[1:] for f in host.features.split(",") if f}
        features = ",".join(f"+{f}" for f in CPU_LEVELS[cpu] if not known or f in known)
    return Target(host.triple, cpu, features)


def required_features(features: str) -> list:
    return sorted(f[1:] for f in features.split(",") if f.startswith("+"))


# -- building -----------------------------------------------------------------------------------
def build_artifact(compiled, directory: str, name: str = "model", target_cpu: Optional[str] = None,
                   target_features: Optional[str] = None) -> dict:
    """Write the artifact of a CompiledGraph (see the module docstring); returns the manifest."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise AOTError(f"artifact name {name!r} must be a C identifier")
    target = resolve_target(target_cpu, target_features)
    function = compiled.module.main
    lowered = compiled.lowered
    for slot in lowered.refs:
        if slot.kind == "variable":
            raise AOTError(f"variable '{slot.name}' is an argument of the program: an artifact cannot hold "
                           "variables; compile with freeze_variables=True (and a session holding their values)")
    timings = {}
    start = time.perf_counter()
    program, llvm_ir = _emit(function, target)
    timings["codegen"] = time.perf_counter() - start

    library = f"lib{name}.so"
    header = f"{name}.h"
    weights = f"{name}.weights"
    signature = _signature(compiled, function, program)
    layout = program.weights_layout()
    blob = program.weights_blob()
    weights_data = _weights_header(len(blob), len(layout)) + blob
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "tfc_version": _tfc_version(),
        "compiler": _compiler_version(),
        "target": {"triple": target.triple, "cpu": target.cpu, "features": required_features(target.features),
                   "feature_string": target.features},
        "entry": ENTRY,
        "exports": list(EXPORTS),
        "library": library,
        "header": header,
        **signature,
        "weights": {"file": weights, "header_bytes": WEIGHTS_HEADER, "data_bytes": len(blob), "align": 64,
                    "constants": layout},
    }
    # The JSON round trip gives the embedded text exactly what the loader computes from manifest.json.
    embedded = embedded_signature(json.loads(json.dumps(manifest)), hashlib.sha256(weights_data).hexdigest())
    llvm_ir += _string_constant(SIGNATURE_SYMBOL, signature_text(embedded))
    start = time.perf_counter()
    obj = compile_object(llvm_ir, target)
    timings["llvm"] = time.perf_counter() - start

    os.makedirs(directory, exist_ok=True)
    start = time.perf_counter()
    link_shared(obj, os.path.join(directory, library), EXPORTS)
    timings["link"] = time.perf_counter() - start
    _write(os.path.join(directory, weights), weights_data)
    _write(os.path.join(directory, header), generate_header(manifest).encode())
    manifest["files"] = {f: _file_digest(os.path.join(directory, f)) for f in (library, header, weights)}
    manifest["build_seconds"] = {k: round(v, 4) for k, v in timings.items()}
    manifest["manifest_sha256"] = manifest_digest(manifest)
    _write(os.path.join(directory, MANIFEST), (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def _emit(function: ir.Function, target) -> tuple:
    """The LLVM IR of the program with external constants and its own runtime."""
    from . import parallel
    from .program import Program

    program = Program(function, entry_name=ENTRY, external_constants=True, vector_bits=target.vector_bits)
    parallel.emit_runtime(program.module, target.vector_bits)
    return program, program.emit()


def compile_object(llvm_ir: str, target, exports=EXPORTS) -> bytes:
    """A position-independent ELF object for ``target`` (cached under TFC_CACHE_DIR).

    Every definition but ``exports`` gets internal linkage before optimisation (so LLVM
    may inline or drop it, and nothing else can be linked against)."""
    import llvmlite.binding as llvm

    from .jit import cache_key, cache_load, cache_store, optimize

    key = cache_key(llvm_ir, target, "aot-pic;exports=" + ",".join(exports))
    cached = cache_load(key)
    if cached is not None:
        return cached
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    keep = set(exports)
    for value in list(module.functions) + list(module.global_variables):
        if not value.is_declaration and value.name not in keep and value.linkage == llvm.Linkage.external:
            value.linkage = llvm.Linkage.internal
    machine = target.target_machine(opt=3, jit=False, reloc="pic", codemodel="default")
    module.triple = target.triple
    module.data_layout = str(machine.target_data)
    optimize(module, machine)
    obj = machine.emit_object(module)
    cache_store(key, obj)
    return obj


def find_linker() -> Optional[list]:
    """A command that links a shared library: $CC, cc, gcc or clang; else ld."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate.split()
    if shutil.which("ld"):
        return ["ld"]
    return None


def link_shared(obj: bytes, output: str, exports=EXPORTS) -> None:
    """Link ``obj`` into the shared library ``output`` exporting only ``exports``.

    Without any linker the object file is written beside ``output`` and AOTError raised."""
    linker = find_linker()
    object_path = os.path.join(os.path.dirname(output) or ".", "program.o")
    if linker is None:
        _write(object_path, obj)
        raise AOTError(f"no system linker found (looked for $CC, cc, gcc, clang and ld on PATH): cannot build "
                       f"{os.path.basename(output)}. Install a C toolchain (e.g. apt-get install gcc or binutils); "
                       f"the object file was written to {object_path} for linking elsewhere with "
                       f"`cc -shared -o {os.path.basename(output)} {os.path.basename(object_path)} -lpthread -lm`")
    with tempfile.TemporaryDirectory(prefix="tfc-link-") as work:
        obj_file = os.path.join(work, "program.o")
        script = os.path.join(work, "exports.map")
        _write(obj_file, obj)
        with open(script, "w") as f:
            f.write("{\n  global:\n" + "".join(f"    {e};\n" for e in exports) + "  local: *;\n};\n")
        temp_out = os.path.join(work, "lib.so")
        soname = os.path.basename(output)
        if linker == ["ld"]:
            attempts = [["ld", "-shared", "-o", temp_out, obj_file, f"--version-script={script}", "-soname", soname,
                         "-z", "noexecstack", "-lpthread", "-lm", "-lc"],
                        ["ld", "-shared", "-o", temp_out, obj_file, f"--version-script={script}", "-soname", soname,
                         "-z", "noexecstack"]]
        else:
            attempts = [linker + ["-shared", "-o", temp_out, obj_file, f"-Wl,--version-script={script}",
                                  f"-Wl,-soname,{soname}", "-Wl,-z,noexecstack", "-lpthread", "-lm"]]
        errors = []
        for command in attempts:
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode == 0:
                break
            errors.append(f"$ {' '.join(command)}\n{result.stderr.strip()}")
        else:
            raise AOTError("linking the shared library failed:\n" + "\n".join(errors))
        shutil.move(temp_out, output)


# -- the signature ------------------------------------------------------------------------------
def _signature(compiled, function: ir.Function, program) -> dict:
    from tfc.compiler import _op_label
    from tfc.passes.buffer_assign import arena_bytes

    lowered = compiled.lowered
    symbols = list(program.symbols)
    feeds = compiled.feeds
    args = list(function.args)
    inputs, states, outputs = [], [], []
    used = set()
    for i, tensor in enumerate(feeds):
        t = args[i].type
        inputs.append({"name": _unique(_c_name(tensor.op.name), used), "tensor": tensor.name, "op": tensor.op.name,
                       "arg": args[i].name_hint or "arg", "dtype": t.elem.np_dtype.name,
                       "shape": [_dim(d) for d in t.shape], "tf_shape": tensor.shape.as_list(),
                       "tf_shape_text": str(tensor.shape), "slot": i})
    for j, slot in enumerate(lowered.refs):
        arg = args[len(feeds) + j]
        t = arg.type.tensor if isinstance(arg.type, ir.RefType) else arg.type
        if any(not isinstance(d, int) for d in t.shape):
            raise AOTError(f"state '{slot.name}' has a symbolic shape; artifacts need static state shapes")
        states.append({"name": _unique(_c_name(slot.name), used), "kind": slot.kind, "source": slot.name,
                       "dtype": t.elem.np_dtype.name, "shape": list(t.shape), "slot": len(feeds) + j})
    for j, (tensor, t) in enumerate(zip(compiled._plan.tensors, function.result_types)):
        label = tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}_{tensor.value_index}"
        outputs.append({"name": _unique(_c_name(label), used), "tensor": tensor.name,
                        "dtype": t.elem.np_dtype.name, "shape": [_dim(d) for d in t.shape],
                        "slot": program.num_args + j})
    constraints = []
    for c in lowered.constraints:
        if not c.shapes:
            continue
        op = c.op
        constraints.append({"dims": [dim_str(c.a), dim_str(c.b)],
                            "message": f"Incompatible shapes: {_shape_text(c.shapes[0])} vs. "
                                       f"{_shape_text(c.shapes[1])}",
                            "op": getattr(op, "name", None),
                            "defined_at": [list(f) for f in getattr(op, "_user_frames", ())]})
    top_ops = program.indexed_ops  # what an error record's op index counts: region ops too
    return {
        "symbols": symbols,
        "inputs": inputs,
        "states": states,
        "outputs": outputs,
        "structure": _structure(compiled._plan.structure),
        "arena_bytes": _dim(arena_bytes(function)),
        "arena_align": 64,
        "slots": {"count": program.num_slots, "arena": program.arena_slot, "error": program.error_slot,
                  "weights": program.weights_slot},
        "constraints": constraints,
        "op_names": [_op_label(op) for op in top_ops],
        "op_sources": [_op_source(op) for op in top_ops],
        "error_codes": {str(code): entry.summary for code, entry in checks.CODES.items()},
    }


def _op_source(op: ir.Operation) -> dict:
    """The graph op a run-time error in ``op`` blames: its name and file:line (or {})."""
    loc = op.loc
    if loc is None or not loc.name:
        return {}
    return {"op": loc.name, "defined_at": [[loc.file, loc.line, "?"]] if loc.file else []}


def _string_constant(symbol: str, text: str) -> str:
    """LLVM IR defining ``const char symbol[]`` holding ``text`` (ASCII) and a NUL."""
    data = text.encode("ascii") + b"\0"
    body = "".join(chr(b) if 32 <= b < 127 and b not in (ord('"'), ord("\\")) else f"\\{b:02X}" for b in data)
    return f'\n@{symbol} = constant [{len(data)} x i8] c"{body}", align 1\n'


def _dim(d):
    return d if isinstance(d, int) else dim_str(d)


def _shape_text(shape) -> str:
    return "[" + ",".join(dim_str(d) if not isinstance(d, int) else str(d) for d in shape) + "]"


def _c_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "t"
    if name[0].isdigit():
        name = "t_" + name
    return name


def _unique(name: str, used: set) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}_{n}"
    used.add(candidate)
    return candidate


def _structure(node):
    """The fetch structure as JSON (tfc.runtime.fetch.FetchPlan.structure)."""
    kind = node[0]
    if kind == "tensor":
        return {"tensor": node[1]}
    if kind == "op":
        return {"op": None}
    _, container, children = node
    if kind == "dict":
        items = []
        for key, child in children:
            if not (key is None or isinstance(key, (str, int, float, bool))):
                raise AOTError(f"fetch dict key {key!r} cannot be saved (use str, int, float or bool keys)")
            items.append([key, _structure(child)])
        kinds = {dict: "dict", collections.OrderedDict: "OrderedDict", collections.defaultdict: "defaultdict"}
        return {"dict": items, "type": kinds.get(container, "dict")}
    if kind == "namedtuple":
        return {"namedtuple": [_structure(c) for c in children], "type": container.__name__,
                "fields": list(container._fields)}
    return {"tuple" if container is tuple else "list": [_structure(c) for c in children]}


# -- files --------------------------------------------------------------------------------------
def _weights_header(data_bytes: int, count: int) -> bytes:
    header = WEIGHTS_MAGIC + struct.pack("<IIQQ", 1, 64, data_bytes, count)
    return header + bytes(WEIGHTS_HEADER - len(header))


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _file_digest(path: str) -> dict:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return {"sha256": h.hexdigest(), "bytes": size}


def manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON, ``manifest_sha256`` left out."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _tfc_version() -> str:
    import tfc

    return tfc.__version__


def _compiler_version() -> str:
    from .jit import compiler_version

    return compiler_version()


# -- the C header -------------------------------------------------------------------------------
def _c_dim(d, symbols: list) -> str:
    if isinstance(d, int):
        return f"INT64_C({d})"
    if isinstance(d, str):
        from tfc.ir.dims import parse_dim

        d = parse_dim(d)
        if isinstance(d, int):
            return f"INT64_C({d})"
    terms = []
    for monomial, coeff in d.terms.items():
        factors = [f"INT64_C({coeff})"] if coeff != 1 or not monomial else []
        for atom in monomial:
            if isinstance(atom, str):
                factors.append(f"dims[{symbols.index(atom)}]")
            else:
                assert isinstance(atom, FloorDiv)
                factors.append(f"tfc_floordiv({_c_dim(atom.num, symbols)}, {_c_dim(atom.den, symbols)})")
        terms.append("*".join(factors))
    return "(" + " + ".join(terms) + ")"


def generate_header(m: dict) -> str:
    name = m["name"]
    P = name.upper()
    symbols = m["symbols"]
    inputs, states, outputs = m["inputs"], m["states"], m["outputs"]
    max_rank = max([1] + [len(t["shape"]) for t in inputs + states + outputs])
    slots = m["slots"]
    lines = []
    w = lines.append
    w(f"/* {name}.h: the C interface of lib{name}.so, generated by tfc {m['tfc_version']}. Do not edit.")
    w(" *")
    w(f" * Target: {m['target']['triple']}, CPU {m['target']['cpu']}.")
    w(" * Signature (s0, s1... are sizes bound at run time from the inputs' shapes):")
    for t in inputs:
        w(f" *   input  {t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]  (tensor {t['tensor']})")
    for t in states:
        w(f" *   state  {t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]  ({t['kind']}; zero it once)")
    for t in outputs:
        w(f" *   output {t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]  (tensor {t['tensor']})")
    w(" *")
    w(f" * Usage: void *weights = {name}_load_weights(\"{m['weights']['file']}\");  fill a {name}_io")
    w(f" * (inputs and their shapes), {name}_run(&io, weights), read the outputs, {name}_free_outputs(&io).")
    w(f" * Link with -l{name} (and -Wl,-rpath,<dir>). Call tfc_pool_set_size(n) once to use n threads.")
    w(" */")
    w(f"#ifndef TFC_{P}_H_")
    w(f"#define TFC_{P}_H_")
    w("")
    w("#include <stdint.h>")
    w("#include <stdio.h>")
    w("#include <stdlib.h>")
    w("#include <string.h>")
    w("")
    w("#ifdef __cplusplus")
    w('extern "C" {')
    w("#endif")
    w("")
    w("/* The exported symbols. args: [inputs..., states..., outputs..., arena, error record, weights];")
    w(" * dims: the values of the size symbols. Returns 0, or an error code (error record, int64_t[ERROR_RECORD_SIZE]:")
    w(" * bound, op index, position, value...; the layout is in tfc/program_errors.py). */")
    w(f"int32_t {ENTRY}(void **args, int64_t *dims);")
    w(f"void {POOL_SIZE_SYMBOL}(int64_t threads);")
    w("/* The signature the library was built for (canonical JSON): what tfc.load checks manifest.json against. */")
    w(f"extern const char {SIGNATURE_SYMBOL}[];")
    w("")
    w("#ifndef TFC_COMMON_DEFINED_")
    w("#define TFC_COMMON_DEFINED_")
    w("/* dtype codes: TensorFlow's DataType values. */")
    for dtype, code in sorted(_DTYPE_CODES.items(), key=lambda kv: kv[1]):
        w(f"#define TFC_DTYPE_{dtype.upper()} {code}")
    w("typedef struct {")
    w("  const char *name;   /* C name (fields of the _io struct) */")
    w("  const char *tensor; /* graph tensor name */")
    w("  int dtype;          /* TFC_DTYPE_* */")
    w("  int elem_bytes;")
    w("  int rank;")
    w("  const char *shape;  /* e.g. \"[s0, 784]\" */")
    w("  const int64_t *dims; /* rank entries: the static size, or -1 where it is bound at run time */")
    w("} tfc_tensor_info;")
    w("/* 64-byte aligned memory from malloc (any C standard); free it with tfc_aligned_free. */")
    w("static inline void *tfc_aligned_alloc(size_t size) {")
    w("  unsigned char *raw = (unsigned char *)malloc(size + 64 + sizeof(void *));")
    w("  if (!raw) return NULL;")
    w("  uintptr_t start = (uintptr_t)(raw + sizeof(void *));")
    w("  unsigned char *aligned = raw + sizeof(void *) + ((64 - start % 64) % 64);")
    w("  memcpy(aligned - sizeof(void *), &raw, sizeof(void *));")
    w("  return aligned;")
    w("}")
    w("static inline void tfc_aligned_free(void *p) {")
    w("  void *raw;")
    w("  if (!p) return;")
    w("  memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));")
    w("  free(raw);")
    w("}")
    w("static inline int64_t tfc_floordiv(int64_t a, int64_t b) {")
    w("  int64_t q = a / b;")
    w("  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;")
    w("}")
    w("#endif")
    w("")
    w(f"#define {P}_NUM_INPUTS {len(inputs)}")
    w(f"#define {P}_NUM_STATES {len(states)}")
    w(f"#define {P}_NUM_OUTPUTS {len(outputs)}")
    w(f"#define {P}_NUM_SYMBOLS {len(symbols)}")
    w(f"#define {P}_NUM_SLOTS {slots['count']}")
    w(f"#define {P}_SLOT_ARENA {slots['arena']}")
    w(f"#define {P}_SLOT_ERROR {slots['error']}")
    w(f"#define {P}_SLOT_WEIGHTS {slots['weights']}")
    w(f"#define {P}_MAX_RANK {max_rank}")
    w(f"#define {P}_WEIGHTS_FILE \"{m['weights']['file']}\"")
    w(f"#define {P}_WEIGHTS_HEADER_BYTES {WEIGHTS_HEADER}")
    w(f"#define {P}_WEIGHTS_DATA_BYTES INT64_C({m['weights']['data_bytes']})")
    w(f"#define {P}_ERROR_RECORD_SIZE {checks.RECORD_SIZE}")
    for code, entry in checks.CODES.items():
        w(f"#define {P}_ERROR_{entry.name} {code} /* {entry.summary} */")
    w(f"#define {P}_ERROR_SHAPE (-1) /* returned by {name}_run when an input shape does not fit */")
    w("")

    def infos(kind, tensors):
        for i, t in enumerate(tensors):
            values = ", ".join(f"INT64_C({d if isinstance(d, int) else -1})" for d in t["shape"]) or "0"
            w(f"static const int64_t {name}_{kind}_dims_{i}[] = {{{values}}};")
        w(f"static const tfc_tensor_info {name}_{kind}_info[] = {{")
        for i, t in enumerate(tensors):
            shape = "[" + ", ".join(map(str, t["shape"])) + "]"
            w(f"  {{\"{t['name']}\", \"{t.get('tensor', t.get('source', ''))}\", "
              f"TFC_DTYPE_{t['dtype'].upper()}, {np.dtype(t['dtype']).itemsize}, {len(t['shape'])}, "
              f"\"{shape}\", {name}_{kind}_dims_{i}}},")
        if not tensors:
            w("  {0, 0, 0, 0, 0, 0, 0}")
        w("};")

    infos("inputs", inputs)
    infos("states", states)
    infos("outputs", outputs)
    w("")
    w("/* The named interface: set the inputs (data and shape), call " + f"{name}_run. */")
    w("typedef struct {")
    for t in inputs:
        w(f"  const {_C_TYPES[t['dtype']]} *{t['name']}; int64_t {t['name']}_shape[{max(1, len(t['shape']))}];")
    for t in states:
        count = int(np.prod(t["shape"], dtype=np.int64)) if t["shape"] else 1
        w(f"  {_C_TYPES[t['dtype']]} {t['name']}[{count}]; /* state: zero it before the first run */")
    for t in outputs:
        w(f"  {_C_TYPES[t['dtype']]} *{t['name']}; int64_t {t['name']}_shape[{max(1, len(t['shape']))}];"
          " /* set by run (malloc) */")
    w(f"  int64_t error[{P}_ERROR_RECORD_SIZE];  /* on a non-zero status: bound, op index, position, value... */")
    w("  char message[256]; /* on a non-zero status: what went wrong */")
    w(f"}} {name}_io;")
    w("")
    # bind
    w("/* Checks the input shapes and computes the size symbols (dims[NUM_SYMBOLS]). */")
    w(f"static inline int {name}_bind(const int64_t *const *input_shapes, int64_t *dims, char *message, "
      "size_t message_size) {")
    w("  int bound[" + str(max(1, len(symbols))) + "] = {0};")
    w("  (void)bound; (void)dims;")
    for i, t in enumerate(inputs):
        for axis, d in enumerate(t["shape"]):
            if isinstance(d, int):
                w(f"  if (input_shapes[{i}][{axis}] != {d}) {{ snprintf(message, message_size, "
                  f"\"input '{t['name']}' dim {axis} is %lld, but the program needs {d}\", "
                  f"(long long)input_shapes[{i}][{axis}]); return -1; }}")
            elif d in symbols:
                s = symbols.index(d)
                w(f"  if (!bound[{s}]) {{ dims[{s}] = input_shapes[{i}][{axis}]; bound[{s}] = 1; }}")
                w(f"  else if (dims[{s}] != input_shapes[{i}][{axis}]) {{ snprintf(message, message_size, "
                  f"\"input '{t['name']}' dim {axis} is %lld, but the program needs %lld ({d})\", "
                  f"(long long)input_shapes[{i}][{axis}], (long long)dims[{s}]); return -1; }}")
    for i, t in enumerate(inputs):
        for axis, d in enumerate(t["shape"]):
            if not isinstance(d, int) and d not in symbols:
                w(f"  if (input_shapes[{i}][{axis}] != {_c_dim(d, symbols)}) {{ snprintf(message, message_size, "
                  f"\"input '{t['name']}' dim {axis} is %lld, but the program needs {d}\", "
                  f"(long long)input_shapes[{i}][{axis}]); return -1; }}")
    w("  return 0;")
    w("}")
    w("")
    w("/* The shape of output j for the given size symbols. */")
    w(f"static inline void {name}_output_shape(int j, const int64_t *dims, int64_t *shape) {{")
    w("  (void)dims; (void)shape;")
    w("  switch (j) {")
    for j, t in enumerate(outputs):
        body = " ".join(f"shape[{a}] = {_c_dim(d, symbols)};" for a, d in enumerate(t["shape"]))
        w(f"    case {j}: {body} break;")
    w("    default: break;")
    w("  }")
    w("}")
    w("")
    w("/* Bytes of temporary memory one run needs (pass it 64-byte aligned). */")
    w(f"static inline int64_t {name}_arena_bytes(const int64_t *dims) {{")
    w("  (void)dims;")
    w(f"  return {_c_dim(m['arena_bytes'], symbols)};")
    w("}")
    w("")
    w("/* Reads the weights file into 64-byte aligned memory; returns the pointer to pass to run, or NULL. */")
    w(f"static inline void *{name}_load_weights(const char *path) {{")
    w("  FILE *f = fopen(path, \"rb\");")
    w("  if (!f) { fprintf(stderr, \"" + name + ": cannot open weights file %s\\n\", path); return NULL; }")
    w(f"  size_t total = (size_t)({P}_WEIGHTS_HEADER_BYTES + {P}_WEIGHTS_DATA_BYTES);")
    w("  unsigned char *base = (unsigned char *)tfc_aligned_alloc(total);")
    w("  if (!base) { fclose(f); return NULL; }")
    w("  size_t got = fread(base, 1, total, f);")
    w("  int extra = fgetc(f);")
    w("  fclose(f);")
    w("  uint64_t size = 0;")
    w(f"  if (got == total) memcpy(&size, base + 16, 8);")
    w(f"  if (got != total || extra != EOF || memcmp(base, \"{WEIGHTS_MAGIC.decode()}\", 8) != 0 || "
      f"size != (uint64_t){P}_WEIGHTS_DATA_BYTES) {{")
    w("    fprintf(stderr, \"" + name + ": %s is not this model's weights file (expected %lld bytes)\\n\", path, "
      "(long long)total);")
    w("    tfc_aligned_free(base); return NULL;")
    w("  }")
    w(f"  return base + {P}_WEIGHTS_HEADER_BYTES;")
    w("}")
    w("")
    w(f"static inline void {name}_free_weights(void *weights) {{")
    w(f"  if (weights) tfc_aligned_free((unsigned char *)weights - {P}_WEIGHTS_HEADER_BYTES);")
    w("}")
    w("")
    w("/* One run on arrays: inputs/states/outputs in signature order. Outputs are allocated here (malloc;")
    w(" * the caller frees them) and their shapes written to output_shapes. Returns 0, ERROR_SHAPE, or the")
    w(" * program's error code (error: bound, op index, position, value...). */")
    w(f"static inline int {name}_run_arrays(const void *const *inputs, const int64_t *const *input_shapes,")
    w("                                    void *const *states, void **outputs,")
    w(f"                                    int64_t (*output_shapes)[{P}_MAX_RANK], const void *weights,")
    w("                                    int64_t *error, char *message, size_t message_size) {")
    w(f"  int64_t dims[{max(1, len(symbols))}] = {{0}};")
    w(f"  void *args[{P}_NUM_SLOTS];")
    w("  int i;")
    w("  (void)states;")
    w(f"  if ({name}_bind(input_shapes, dims, message, message_size) != 0) return {P}_ERROR_SHAPE;")
    w(f"  for (i = 0; i < {P}_NUM_INPUTS; i++) args[i] = (void *)inputs[i];")
    w(f"  for (i = 0; i < {P}_NUM_STATES; i++) args[{P}_NUM_INPUTS + i] = states[i];")
    w(f"  for (i = 0; i < {P}_NUM_OUTPUTS; i++) {{")
    w("    int64_t count = 1; int a;")
    w(f"    {name}_output_shape(i, dims, output_shapes[i]);")
    w(f"    for (a = 0; a < {name}_outputs_info[i].rank; a++) count *= output_shapes[i][a];")
    w(f"    outputs[i] = malloc((size_t)(count > 0 ? count : 1) * (size_t){name}_outputs_info[i].elem_bytes);")
    w(f"    args[{P}_NUM_INPUTS + {P}_NUM_STATES + i] = outputs[i];")
    w("  }")
    w(f"  int64_t arena_size = {name}_arena_bytes(dims);")
    w("  void *arena = tfc_aligned_alloc((size_t)arena_size);")
    w(f"  args[{P}_SLOT_ARENA] = arena;")
    w(f"  args[{P}_SLOT_ERROR] = error;")
    w(f"  args[{P}_SLOT_WEIGHTS] = (void *)weights;")
    w(f"  int32_t status = {ENTRY}(args, dims);")
    w("  tfc_aligned_free(arena);")
    w("  if (status != 0) snprintf(message, message_size, \"" + name +
      ": the program failed with status %d in op %lld\", (int)status, (long long)error[1]);")
    w("  return status;")
    w("}")
    w("")
    w(f"static inline int {name}_run({name}_io *io, const void *weights) {{")
    w(f"  const void *inputs[{max(1, len(inputs))}];")
    w(f"  const int64_t *input_shapes[{max(1, len(inputs))}];")
    w(f"  void *states[{max(1, len(states))}];")
    w(f"  void *outputs[{max(1, len(outputs))}];")
    w(f"  int64_t shapes[{max(1, len(outputs))}][{P}_MAX_RANK];")
    w("  int status, a;")
    w("  (void)a; (void)states; (void)inputs; (void)input_shapes;")
    for i, t in enumerate(inputs):
        w(f"  inputs[{i}] = io->{t['name']}; input_shapes[{i}] = io->{t['name']}_shape;")
    for i, t in enumerate(states):
        w(f"  states[{i}] = io->{t['name']};")
    w(f"  status = {name}_run_arrays(inputs, input_shapes, states, outputs, shapes, weights, io->error, "
      "io->message, sizeof io->message);")
    w("  if (status != 0 && status != " + f"{P}_ERROR_SHAPE) {{")
    w(f"    int j; for (j = 0; j < {P}_NUM_OUTPUTS; j++) free(outputs[j]);")
    w("  }")
    w("  if (status != 0) return status;")
    for j, t in enumerate(outputs):
        w(f"  io->{t['name']} = ({_C_TYPES[t['dtype']]} *)outputs[{j}];")
        w(f"  for (a = 0; a < {len(t['shape'])}; a++) io->{t['name']}_shape[a] = shapes[{j}][a];")
    w("  return 0;")
    w("}")
    w("")
    w(f"static inline void {name}_free_outputs({name}_io *io) {{")
    w("  (void)io;")
    for t in outputs:
        w(f"  free(io->{t['name']}); io->{t['name']} = 0;")
    w("}")
    w("")
    w("#ifdef __cplusplus")
    w("}")
    w("#endif")
    w("")
    w(f"#endif /* TFC_{P}_H_ */")
    return "\n".join(lines) + "\n"
