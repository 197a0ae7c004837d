"""TF 1.15.5's version constants: ``tf.VERSION``, ``tf.GIT_VERSION``, ``tf.COMPILER_VERSION``,
``tf.GRAPH_DEF_VERSION`` (the GraphDef producer version tfc writes, tfc/frontend/graph_io.py),
``tf.GRAPH_DEF_VERSION_MIN_CONSUMER`` / ``_MIN_PRODUCER``, also under ``tf.version``.

They name the TensorFlow API tfc follows; ``tfc.__version__`` is tfc's own package version.
"""
from __future__ import annotations

from .graph_io import GRAPH_DEF_VERSION

VERSION = "1.15.5"
GIT_VERSION = "v1.15.4-39-g3db52be"
COMPILER_VERSION = "7.3.1 20180303"
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0

TF_EXPORTS = ["COMPILER_VERSION", "GIT_VERSION", "GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER",
              "GRAPH_DEF_VERSION_MIN_PRODUCER", "VERSION"]
VERSION_EXPORTS = TF_EXPORTS
