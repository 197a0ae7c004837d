"""bf16 rows: the mlp and cnn workloads with bfloat16 matmul/convolution operands.

``mlp_bf16`` and ``cnn_bf16`` run the same graphs as ``mlp`` and ``cnn`` in a session
whose ConfigProto turns on TF's ``auto_mixed_precision_onednn_bfloat16`` rewriter option:

- tfc: ``precision="bf16"`` (tfc/codegen/bf16.py): every matmul/conv operand is rounded to
  bfloat16 and multiplied in f32 (an emulation: tfc has no native bf16 kernels; on CPUs
  without AMX-BF16/AVX512-BF16 none could run anyway);
- TF graph: the same option. TF applies it only on CPUs with native bf16 (AVX512-BF16 or
  AMX) and silently ignores it elsewhere; the note says which happened (a result equal to
  f32 means it was not applied);
- TF XLA and JAX: the same emulation written out (operands through
  ``cast(cast(x, bfloat16), float32)`` / ``lax.reduce_precision(x, 8, 7)``, both round to
  nearest even).

The numpy reference stays the f32 one, so "max rel err" is the accuracy change against f32
(max |bf16 - f32| / max |f32|); the check accepts bf16's error (operands off by up to
2^-8 relative, products by 2^-7). Each peer's note adds the max abs error, the argmax
(classification) agreement with f32 on the benchmark batch, and for the emulating peers
the error against a numpy reference that rounds the operands the same way (f32 accuracy:
only the summation order differs).
"""
from __future__ import annotations

import numpy as np

from .base import Check
from .cnn import CNN, conv2d_same, max_pool_2x2
from .mlp import MLP, _softmax

# RewriterConfig.Toggle.ON, the same number in tfc's and TF's protos
_TOGGLE_ON = 1
# Closer to f32 than this (max rel err) and a peer did not round at all.
_UNCHANGED = 1e-5


def round_bf16(a) -> np.ndarray:
    """f32 -> the nearest bfloat16 value (ties to even) as f32, NaN unchanged."""
    a = np.asarray(a, np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, rounded)


def _bf16_config(tf1, base=None):
    config = base if base is not None else tf1.ConfigProto()
    config.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 = _TOGGLE_ON
    return config


class _Bf16Rows:
    """What the bf16 variants share: sessions with the option on, the check against f32."""

    rtol = 5e-2
    atol = 3e-2  # of max |f32 result|: a few bf16 roundings

    def build_tfc(self):
        import tfc.compat.v1 as tf

        return self._session_step(tf, config=_bf16_config(tf))

    def build_tf_graph(self):
        from .. import peers

        tf1 = peers.import_tensorflow().compat.v1
        return self._session_step(tf1, config=_bf16_config(tf1, peers.tf_session_config(tf1)))

    def tf_operand(self, tf):
        """XLA's matmul/conv operands through bfloat16 and back (round to nearest even)."""
        return lambda t: tf.cast(tf.cast(t, tf.bfloat16), tf.float32)

    def jax_operand(self, jax):
        """JAX's matmul/conv operands rounded to bfloat16's 8 exponent and 7 mantissa bits."""
        return lambda a: jax.lax.reduce_precision(a, exponent_bits=8, mantissa_bits=7)

    def bf16_numpy(self) -> np.ndarray:
        """The numpy forward pass with every matmul/conv operand rounded to bf16 (f32 BLAS
        products: its summation order differs from the peers', and a different last bit of an
        activation can round it to the other bf16 neighbour, so the agreement is ~1e-4, not
        f32's 1e-7, on the full-size workloads)."""
        raise NotImplementedError

    def check(self, results: dict) -> dict:
        reference = np.asarray(results["numpy"])
        emulated = None
        checks = {}
        for peer, value in results.items():
            check = self.compare(value, reference)
            if peer != "numpy" and check.max_rel_err == check.max_rel_err:  # (not NaN: comparable)
                value = np.asarray(value)
                agreement = float(np.mean(value.argmax(-1) == reference.argmax(-1)))
                note = f"vs f32: max abs err {check.max_abs_err:.2e}, argmax agreement {agreement:.1%}"
                if check.max_rel_err < _UNCHANGED:
                    note += "; equal to f32: bf16 not applied"
                    if peer == "tf_graph":
                        note += " (TF uses bf16 only with AVX512-BF16 or AMX)"
                else:
                    if emulated is None:
                        emulated = self.bf16_numpy()
                    scale = float(np.max(np.abs(emulated))) or 1.0
                    off = float(np.max(np.abs(value.astype(np.float64) - emulated))) / scale
                    note += f"; vs numpy with bf16-rounded operands: max rel err {off:.1e}"
                check = Check(check.ok, check.max_abs_err, check.max_rel_err, check.message, note)
            checks[peer] = check
        return checks


class MLPBf16(_Bf16Rows, MLP):
    name = "mlp_bf16"
    title = "MLP relu/softmax, bf16 matmuls (auto_mixed_precision_onednn_bfloat16)"

    def bf16_numpy(self) -> np.ndarray:
        h = self.x
        for i, (w, b) in enumerate(self.params):
            h = round_bf16(h) @ round_bf16(w) + b
            h = np.maximum(h, 0) if i < len(self.params) - 1 else _softmax(h)
        return h


class CNNBf16(_Bf16Rows, CNN):
    name = "cnn_bf16"
    title = "small CNN forward, bf16 convolutions and matmul (auto_mixed_precision_onednn_bfloat16)"

    def bf16_numpy(self) -> np.ndarray:
        def conv(x, w):
            return conv2d_same(round_bf16(x), round_bf16(w))

        h = max_pool_2x2(np.maximum(conv(self.x, self.w1) + self.b1, 0))
        h = max_pool_2x2(np.maximum(conv(h, self.w2) + self.b2, 0))
        return round_bf16(h.reshape(-1, self.flat)) @ round_bf16(self.wd) + self.bd
