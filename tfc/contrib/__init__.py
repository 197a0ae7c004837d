"""TF 1.x's ``tf.contrib``: ``tfc.contrib.eager`` (``import tfc.contrib.eager as tfe``, TF1's
eager names), ``tfc.contrib.summary`` (TF1's summary writers, used in eager mode) and
``tfc.contrib.lookup`` (TF1's lookup tables and vocabulary helpers); every other contrib
module is one tfc does not implement."""
from __future__ import annotations

import importlib


def __getattr__(name):
    if name in ("eager", "summary", "lookup"):
        return importlib.import_module(f"tfc.contrib.{name}")
    if name.startswith("__"):
        raise AttributeError(f"module 'tfc.contrib' has no attribute {name!r}")
    from tfc._missing import NotImplementedYet

    raise NotImplementedYet(f"tf.contrib.{name}")
