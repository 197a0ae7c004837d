"""Ahead-of-time GPU artifacts: a compiled graph's GPU program as a folder that runs
without the compiler (``tfc aot --target cuda``, ``CompiledGraph.save(target="cuda")``).

``build_gpu_artifact(compiled, directory)`` writes:

  <name>.ptx        the PTX module (one entry per kernel), for ``arch``; the driver JITs
                    it for the GPU it runs on
  <name>.cubin      the same assembled by ``ptxas`` for ``arch`` (when ptxas is installed)
  <name>.plan.json  the launch plan (tfc/codegen/gpu/plan.py), the kernels' parameter
                    counts, the constants' layout and the temp arena's size
  <name>.constants  the program's constants, at the offsets the plan gives
  manifest.json     the signature (tfc/codegen/aot.py's: inputs, states, outputs with
                    symbolic dims, slots, fetch structure, op names), the arch, versions,
                    and the size and sha256 of every file; ``manifest_sha256`` covers the
                    manifest itself

``tfc.load(directory)`` runs it with the CUDA driver layer (cuda-python or pycuda), numpy
and ctypes: tfc/runtime/cuda/artifact.py.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional

FORMAT = "tfc-aot-cuda"
FORMAT_VERSION = 1


def build_gpu_artifact(compiled, directory: str, name: str = "model", arch: Optional[str] = None) -> dict:
    from tfc.codegen.aot import (AOTError, MANIFEST, _compiler_version, _file_digest, _signature, _tfc_version,
                                 _write, manifest_digest)
    from tfc.compiler import default_arch
    from tfc.passes.buffer_assign import arena_bytes
    from tfc.runtime.executable import _dim_json

    from .plan import to_json
    from .program import GpuProgram
    from .ptx import assemble, compile_ptx, ptxas_path

    for slot in compiled.lowered.refs:
        if slot.kind == "variable":
            raise AOTError(f"variable '{slot.name}' is an argument of the program: an artifact cannot hold "
                           "variables; compile with freeze_variables=True (and a session holding their values)")
    arch = arch or default_arch()
    function = compiled.module.main
    timings = {}
    start = time.perf_counter()
    program = GpuProgram(function, arch)
    program.build()
    timings["codegen"] = time.perf_counter() - start
    start = time.perf_counter()
    ptx = compile_ptx(program.module_text("ptx"), program.kernels, arch)
    timings["ptx"] = time.perf_counter() - start
    files = {"ptx": f"{name}.ptx", "plan": f"{name}.plan.json", "constants": f"{name}.constants"}
    os.makedirs(directory, exist_ok=True)
    _write(os.path.join(directory, files["ptx"]), ptx.encode())
    if ptxas_path() is not None:
        start = time.perf_counter()
        files["cubin"] = f"{name}.cubin"
        _write(os.path.join(directory, files["cubin"]), assemble(ptx, arch))
        timings["ptxas"] = time.perf_counter() - start
    layout, blob = [], bytearray()
    for data in program.constants:
        offset = -(-len(blob) // 64) * 64
        blob.extend(b"\0" * (offset - len(blob)))
        layout.append([offset, len(data)])
        blob.extend(data)
    _write(os.path.join(directory, files["constants"]), bytes(blob))
    plan = {"steps": to_json(program.plan), "kernels": program.kernels, "constants": layout,
            "arena_bytes": _dim_json(arena_bytes(function)), "arch": arch}
    _write(os.path.join(directory, files["plan"]), (json.dumps(plan, indent=1) + "\n").encode())
    signature = _signature(compiled, function, program)
    signature["arena_bytes"] = 0  # the temp arena lives on the device (the plan's arena_bytes)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "tfc_version": _tfc_version(),
        "compiler": _compiler_version(),
        "target": {"kind": "cuda", "arch": arch},
        "library": files["ptx"],
        "weights": {"file": files["constants"]},
        "plan": files["plan"],
        **signature,
    }
    manifest["files"] = {f: _file_digest(os.path.join(directory, f)) for f in files.values()}
    manifest["build_seconds"] = {k: round(v, 4) for k, v in timings.items()}
    manifest["manifest_sha256"] = manifest_digest(manifest)
    _write(os.path.join(directory, MANIFEST), (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest
