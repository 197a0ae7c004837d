"""Loading a GPU artifact (tfc/codegen/gpu/aot.py): no compiler, no llvmlite.

The files are checked (the manifest's own hash, every file's size and sha256), the plan
is read, and the model is the CPU loader's ``LoadedModel`` (the same feeds, fetch
structure, shape binding and error messages) calling a ``GpuCode`` instead of a library:
the PTX is loaded by the CUDA driver at the first call (without a GPU that call raises
"no CUDA device/driver was found").
"""
from __future__ import annotations

import json
import os

import numpy as np

from tfc.aot_runtime import ArtifactError, LoadedModel, manifest_digest, verify_files

FORMAT = "tfc-aot-cuda"
FORMAT_VERSION = 1


def load_gpu(directory: str, manifest: dict, device=None) -> LoadedModel:
    """``device``: a device for the plan's launches (tests pass an emulated one); default:
    the CUDA device, with the artifact's PTX loaded."""
    from tfc.codegen.gpu.plan import from_json
    from tfc.runtime.executable import _compile_dim, dim_from_json

    from .executable import CudaDevice, GpuCode

    if manifest.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(f"{directory}: GPU artifact format version {manifest.get('format_version')} is not "
                            f"supported by this tfc (it reads version {FORMAT_VERSION}); rebuild the artifact")
    if manifest.get("manifest_sha256") != manifest_digest(manifest):
        raise ArtifactError(f"{directory}/manifest.json was modified after the artifact was built: its content "
                            "does not match its manifest_sha256")
    verify_files(directory, manifest)
    try:
        with open(os.path.join(directory, manifest["plan"])) as f:
            plan = json.load(f)
        steps = from_json(plan["steps"])
        kernels = {str(k): int(v) for k, v in plan["kernels"].items()}
        with open(os.path.join(directory, manifest["weights"]["file"]), "rb") as f:
            blob = f.read()
        constants = [blob[offset:offset + size] for offset, size in plan["constants"]]
        arena = dim_from_json(plan["arena_bytes"])
        with open(os.path.join(directory, manifest["library"])) as f:
            ptx = f.read()
    except (KeyError, TypeError, ValueError, OSError) as e:
        raise ArtifactError(f"{directory}: the GPU plan cannot be read ({type(e).__name__}: {e}); rebuild the "
                            "artifact") from None
    symbols = list(manifest["symbols"])

    def shapes(entries) -> list:
        return [(np.dtype(t["dtype"]), [_compile_dim(dim_from_json(d), symbols) for d in t["shape"]])
                for t in entries]

    args = shapes(manifest["inputs"]) + shapes(manifest["states"])
    refs = range(len(manifest["inputs"]), len(args))
    code = GpuCode(device or (lambda: CudaDevice(ptx, kernels, name=manifest.get("name", "tfc"))), steps, constants,
                   kernels, args, shapes(manifest["outputs"]), refs, arena, symbols)
    model = LoadedModel(directory, manifest, None, np.zeros(0, np.uint8), entry=code.entry)
    model.gpu_code = code
    return model
