"""Passes over the IR, one per file, and the pass manager (see DESIGN.md, "Passes").

``PassManager(pipeline).run(module)`` runs a named pipeline from ``PIPELINES`` (or a list
of passes) and returns a ``PassReport``. Lowering from a graph lives in ``lower.py`` and
is imported on its own (it depends on the frontend; the passes here need only the IR).
"""
from .manager import (PIPELINES, FixedPoint, Pass, PassManager, PassRecord, PassReport, PassVerificationError,
                      default_pipeline, folder_dump, run_pipeline, simplify_pipeline)
from .canonicalize import Canonicalize
from .const_fold import ConstFold
from .cse import CSE
from .dce import DCE
from .inline_branches import InlineBranches
from .loop_dce import LoopDCE

__all__ = [
    "PIPELINES", "FixedPoint", "Pass", "PassManager", "PassRecord", "PassReport", "PassVerificationError",
    "default_pipeline", "folder_dump", "run_pipeline", "simplify_pipeline",
    "Canonicalize", "ConstFold", "CSE", "DCE", "InlineBranches", "LoopDCE",
]
