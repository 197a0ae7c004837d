"""What every workload provides, and the shared plumbing for TF1-style sessions.

A workload makes its inputs once (seeded numpy arrays) and builds, for each peer, a
zero-argument callable that runs one step on those inputs and returns the result:

    build_numpy()     plain numpy (the reference)
    build_tfc()       ``import tfc.compat.v1 as tf``; a graph, ``tf.Session.run``
    build_tf_graph()  the same TF1 graph code on ``tensorflow.compat.v1`` in a Session
    build_tf_xla()    ``tf.function(jit_compile=True)`` on TensorFlow 2 ops
    build_jax()       ``jax.jit``

tfc and TF graph mode share one ``tf1_graph(tf)`` method: it is written once against the
TF1 API and run by both. Data inputs are fed through placeholders (``feed_dict``), weights
are variables, as a TF1 user writes it. XLA and JAX get device arrays made beforehand.

``check(results)`` compares each peer's result with numpy's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Check:
    ok: bool
    max_abs_err: float
    max_rel_err: float  # max abs error / max |reference|
    message: str = ""
    note: str = ""  # more about the result, for the report's notes (e.g. the bf16 rows' accuracy)

    def as_dict(self) -> dict:
        out = {"ok": self.ok, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
               "message": self.message}
        if self.note:
            out["note"] = self.note
        return out


class Workload:
    name = ""  # --workloads key
    title = ""  # one-line description for the report
    rtol = 1e-5  # elementwise relative tolerance
    atol = 1e-5  # absolute tolerance, as a fraction of max |reference|

    def __init__(self, tiny: bool = False, seed: int = 0):
        self.tiny = tiny
        self.rng = np.random.default_rng(seed)
        self._closers: list = []
        self.setup()

    # -- to override --------------------------------------------------------------------------
    def setup(self) -> None:
        """Make the inputs (numpy arrays on self)."""

    def describe(self) -> str:
        """Sizes, for the report."""
        return ""

    def build_numpy(self):
        raise NotImplementedError

    def tf1_graph(self, tf):
        """Build the step with the TF1 API ``tf`` (tfc.compat.v1 or tensorflow.compat.v1) in the
        current default graph; return (fetch, feed_dict)."""
        raise NotImplementedError

    def build_tf_xla(self):
        raise NotImplementedError

    def build_jax(self):
        raise NotImplementedError

    # -- TF1 sessions -------------------------------------------------------------------------
    def build_tfc(self):
        import tfc.compat.v1 as tf

        return self._session_step(tf)

    def build_tf_graph(self):
        from .. import peers

        tf = peers.import_tensorflow()
        tf1 = tf.compat.v1
        return self._session_step(tf1, config=peers.tf_session_config(tf1))

    def _session_step(self, tf, config=None):
        graph = tf.Graph()
        with graph.as_default():
            fetch, feed_dict = self.tf1_graph(tf)
            variables = tf.global_variables()
            init = tf.variables_initializer(variables) if variables else None
        session = tf.Session(graph=graph, config=config) if config is not None else tf.Session(graph=graph)
        self._closers.append(session.close)
        if init is not None:
            session.run(init)
        return lambda: session.run(fetch, feed_dict)

    # -- checking ------------------------------------------------------------------------------
    def check(self, results: dict) -> dict:
        """{peer: Check} for every peer in ``results`` (peer -> step result) against results['numpy']."""
        reference = np.asarray(results["numpy"])
        return {peer: self.compare(value, reference) for peer, value in results.items()}

    def compare(self, value, reference: np.ndarray) -> Check:
        try:
            value = np.asarray(value)
        except Exception as e:  # noqa: BLE001
            return Check(False, float("nan"), float("nan"), f"result is not an array: {e}")
        if value.shape != reference.shape:
            return Check(False, float("nan"), float("nan"), f"shape {value.shape} != numpy's {reference.shape}")
        scale = float(np.max(np.abs(reference))) if reference.size else 0.0
        diff = np.abs(value.astype(np.float64) - reference.astype(np.float64))
        max_abs = float(np.max(diff)) if diff.size else 0.0
        if not np.all(np.isfinite(value)) and np.all(np.isfinite(reference)):
            return Check(False, max_abs, float("nan"), "non-finite values where numpy has none")
        ok = bool(np.allclose(value, reference, rtol=self.rtol, atol=self.atol * max(scale, 1e-30)))
        max_rel = max_abs / scale if scale else max_abs
        message = "" if ok else f"differs from numpy beyond rtol={self.rtol:g}, atol={self.atol:g}*max|ref|"
        return Check(ok, max_abs, max_rel, message)

    def close(self) -> None:
        for close in reversed(self._closers):
            try:
                close()
            except Exception:  # noqa: BLE001
                pass
        self._closers.clear()


def weights(rng, *shape, scale=None) -> np.ndarray:
    """He-style random float32 weights (fan-in = product of all but the last dim)."""
    fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
    scale = np.sqrt(2.0 / fan_in) if scale is None else scale
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def normal(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)
