"""precision="bf16": tfc.compile(..., precision="bf16") and a Session whose ConfigProto turns
on TF's auto_mixed_precision_onednn_bfloat16 (tfc/codegen/bf16.py,
tfc/passes/bf16_precision.py).

Tolerances: bfloat16 keeps 8 significant bits, so rounding an operand changes it by at
most u = 2^-8 of its magnitude (half an ulp; 1.00390625 -> 1.0 is a tie that reaches it)
and a product of two rounded operands by at most (1 + u)^2 - 1 < 2^-7 of |x_i * w_i|. So
one bf16 matmul is within 2^-7 * (|x| @ |w|) of the f32 one (plus f32 rounding). Against a
numpy reference that rounds the operands the same way the results agree to f32 accuracy
(only the summation order differs), and exactly where every partial sum is exact in f32.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.codegen import bf16
from tfc.ir import parse_module
from tfc.protos import config_pb2, rewriter_config_pb2

U = 2.0 ** -8  # bf16's unit roundoff


def round_bf16(a: np.ndarray) -> np.ndarray:
    """numpy reference: round f32 to bfloat16 (nearest, ties to even), NaN unchanged."""
    a = np.asarray(a, np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, rounded)


def matmul_bf16(x, w) -> np.ndarray:
    """bf16 x bf16 products summed exactly enough (f64), as f32."""
    return (round_bf16(x).astype(np.float64) @ round_bf16(w).astype(np.float64)).astype(np.float32)


def conv_bf16(x, w, rounding=round_bf16) -> np.ndarray:
    """VALID, stride-1 NHWC conv of the rounded operands, in f64, as f32."""
    kh, kw = w.shape[:2]
    windows = np.lib.stride_tricks.sliding_window_view(rounding(x).astype(np.float64), (kh, kw), axis=(1, 2))
    out = np.einsum("nhwcij,ijco->nhwo", windows, rounding(w).astype(np.float64))
    return out.astype(np.float32)


def _no_rounding(a):
    return np.asarray(a, np.float32)


@pytest.fixture(autouse=True)
def quiet_bf16_warning():
    """Every test may compile in bf16: the once-per-process warning is expected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bf16.Bf16EmulationWarning)
        yield


def _exact_operands(rng, shape) -> np.ndarray:
    """m / 256 with |m| < 512: 9-bit values (bf16 rounds about half of those in [256, 512)),
    whose products are multiples of 2^-16 below 2^2: sums of up to 32 of them are exact in f32."""
    return (rng.integers(-511, 512, shape) / 256).astype(np.float32)


def test_matmul_and_conv_equal_a_reference_that_rounds_the_operands():
    rng = np.random.default_rng(0)
    x, w = _exact_operands(rng, (6, 32)), _exact_operands(rng, (32, 5))
    images, kernel = _exact_operands(rng, (2, 7, 7, 3)), _exact_operands(rng, (3, 3, 3, 4))  # 27 terms
    with tf.Graph().as_default():
        px = tf.placeholder(tf.float32, [None, 32])
        pi = tf.placeholder(tf.float32, [None, 7, 7, 3])
        mm = tf.matmul(px, tf.constant(w))
        conv = tf.nn.conv2d(pi, tf.constant(kernel), strides=[1, 1, 1, 1], padding="VALID")
        compiled = tfc.compile([mm, conv], [px, pi], precision="bf16")
        default = tfc.compile([mm, conv], [px, pi])
        got_mm, got_conv = compiled(x, images)
        f32_mm, f32_conv = default(x, images)
    np.testing.assert_array_equal(got_mm, matmul_bf16(x, w))
    np.testing.assert_array_equal(got_conv, conv_bf16(images, kernel))
    np.testing.assert_array_equal(f32_mm, (x.astype(np.float64) @ w).astype(np.float32))  # f32 path: unrounded
    np.testing.assert_array_equal(f32_conv, conv_bf16(images, kernel, _no_rounding))
    assert not np.array_equal(got_mm, f32_mm) and not np.array_equal(got_conv, f32_conv)
    bound = 2 * U * (np.abs(x) @ np.abs(w))  # (1 + u)^2 - 1 < 2u per product
    assert np.all(np.abs(got_mm - f32_mm) <= bound)


def _mlp(rng, sizes):
    weights = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    biases = [(0.1 * rng.standard_normal(b)).astype(np.float32) for b in sizes[1:]]
    return weights, biases


def _f32_matmul(a, b):
    return (a.astype(np.float64) @ b).astype(np.float32)


def _check_stages(stages, inputs, layers, scale):
    """Each stage's result against numpy computing that layer from the program's own input
    to it (the previous stage): a last-bit difference in an activation (summation order)
    may round it to the other bf16 neighbour, so layers are compared one at a time."""
    for got, x, layer in zip(stages, inputs, layers):
        np.testing.assert_allclose(got, layer(x), rtol=1e-5, atol=1e-5 * scale)


def test_mlp_is_within_bf16_error_of_f32_and_matches_the_rounding_reference():
    rng = np.random.default_rng(1)
    weights, biases = _mlp(rng, [64, 128, 64, 10])
    x = rng.standard_normal((32, 64)).astype(np.float32)
    with tf.Graph().as_default():
        px = tf.placeholder(tf.float32, [None, 64])
        h, stages = px, []
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = tf.matmul(h, tf.constant(w)) + tf.constant(b)
            if i < len(weights) - 1:
                h = tf.nn.relu(h)
            stages.append(h)
        got = tfc.compile(stages, [px], precision="bf16")(x)
        f32 = tfc.compile(stages, [px])(x)

    def layer(i, matmul):
        def apply(a):
            out = matmul(a, weights[i]) + biases[i]
            return np.maximum(out, 0) if i < len(weights) - 1 else out
        return apply

    exact_f32 = x
    for i in range(len(weights)):
        exact_f32 = layer(i, _f32_matmul)(exact_f32)
    scale = np.abs(exact_f32).max()
    _check_stages(got, [x] + got[:-1], [layer(i, matmul_bf16) for i in range(3)], scale)
    _check_stages(f32, [x] + f32[:-1], [layer(i, _f32_matmul) for i in range(3)], scale)
    error = np.abs(got[-1] - f32[-1]).max() / scale
    assert 1e-4 < error < 3 * 4 * U  # changed, by a few bf16 roundings (3 layers, 2u per product)
    assert np.mean(got[-1].argmax(1) == f32[-1].argmax(1)) >= 0.9


def test_conv_net_is_within_bf16_error_of_f32_and_matches_the_rounding_reference():
    rng = np.random.default_rng(2)
    k1 = (rng.standard_normal((3, 3, 3, 8)) / np.sqrt(27)).astype(np.float32)
    k2 = (rng.standard_normal((3, 3, 8, 8)) / np.sqrt(72)).astype(np.float32)
    dense = (rng.standard_normal((4 * 4 * 8, 10)) / np.sqrt(128)).astype(np.float32)
    images = rng.standard_normal((8, 8, 8, 3)).astype(np.float32)
    with tf.Graph().as_default():
        pi = tf.placeholder(tf.float32, [None, 8, 8, 3])
        h1 = tf.nn.relu(tf.nn.conv2d(pi, tf.constant(k1), strides=[1, 1, 1, 1], padding="VALID"))
        h2 = tf.nn.relu(tf.nn.conv2d(h1, tf.constant(k2), strides=[1, 1, 1, 1], padding="VALID"))
        logits = tf.matmul(tf.reshape(h2, [-1, 4 * 4 * 8]), tf.constant(dense))
        got = tfc.compile([h1, h2, logits], [pi], precision="bf16")(images)
        f32 = tfc.compile([h1, h2, logits], [pi])(images)

    def layers(conv, matmul):
        return [lambda a: np.maximum(conv(a, k1), 0), lambda a: np.maximum(conv(a, k2), 0),
                lambda a: matmul(a.reshape(-1, 4 * 4 * 8), dense)]

    exact_f32 = images
    for apply in layers(lambda a, b: conv_bf16(a, b, _no_rounding), _f32_matmul):
        exact_f32 = apply(exact_f32)
    scale = np.abs(exact_f32).max()
    _check_stages(got, [images] + got[:-1], layers(conv_bf16, matmul_bf16), scale)
    _check_stages(f32, [images] + f32[:-1], layers(lambda a, b: conv_bf16(a, b, _no_rounding), _f32_matmul), scale)
    error = np.abs(got[-1] - f32[-1]).max() / scale
    assert 1e-4 < error < 3 * 4 * U
    assert np.mean(got[-1].argmax(1) == f32[-1].argmax(1)) >= 0.75


def test_gradient_matmuls_and_convolutions_are_rounded_too():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2])
        kernel = tf.Variable(np.ones((3, 3, 2, 4), np.float32))
        w = tf.Variable(np.ones((64, 3), np.float32))
        h = tf.reshape(tf.nn.relu(tf.nn.conv2d(x, kernel, [1, 1, 1, 1], "VALID")), [-1, 64])
        loss = tf.reduce_sum(tf.matmul(h, w) ** 2)
        grads = tf.gradients(loss, [kernel, w, x])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            compiled = tfc.compile(grads, [x], session=sess, freeze_variables=True, native=False,
                                   precision="bf16")
    module = parse_module(compiled.ir("bf16_precision"))
    contractions = [op for op in module.main.walk() if op.name in ("dot", "conv")]
    assert len(contractions) >= 5  # forward conv and matmul, their input and weight gradients
    for op in contractions:
        assert all(v.defining_op is not None and v.defining_op.name == "round_bf16" for v in op.operands), op


def test_unknown_precisions_are_refused_with_the_choices():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with pytest.raises(ValueError, match=r"'f32', 'bf16'"):
            tfc.compile(x * 2.0, [x], precision="fp16")


def test_the_emulation_warning_is_issued_once_and_names_what_the_cpu_lacks(monkeypatch):
    monkeypatch.setattr(bf16, "_warned", False)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 2])
        y = tf.matmul(x, x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tfc.compile(y, [x], precision="bf16")
            tfc.compile(y * 2.0, [x], precision="bf16")
            tfc.compile(y, [x])
    messages = [str(w.message) for w in caught if issubclass(w.category, bf16.Bf16EmulationWarning)]
    assert messages == [bf16.emulation_message()]
    support = bf16.host_bf16_support()
    if not support.native:
        assert "AMX-BF16" in messages[0] and "AVX512-BF16" in messages[0]
        assert "rounded to bfloat16 and multiplied in float32 (bf16 accuracy, no bf16 speedup)" in messages[0]


def test_detection_reads_the_feature_flags_and_asks_for_amx_only_when_the_cpu_has_it():
    asked = []

    def request():
        asked.append(True)
        return ""

    none = bf16.bf16_support({"avx2": True, "fma": True}, request_amx=request)
    assert not none.native and not asked and none.lacking() == "AMX-BF16 or AVX512-BF16"
    avx512 = bf16.bf16_support({"avx512bf16": True, "amx-bf16": False}, request_amx=request)
    assert avx512.avx512_bf16 and not avx512.amx_bf16 and not asked
    assert "has AVX512-BF16 but tfc has no native bf16 kernels" in bf16.emulation_message(avx512)
    amx = bf16.bf16_support({"amx-bf16": True, "amx-tile": True}, request_amx=request)
    assert amx.amx_bf16 and asked == [True]
    refused = bf16.bf16_support({"amx-bf16": True, "amx-tile": True}, request_amx=lambda: "refused")
    assert not refused.amx_bf16 and "AMX-BF16 (refused)" in bf16.emulation_message(refused)
    assert bf16.host_bf16_support() is bf16.host_bf16_support()  # detected once


# -- sessions --------------------------------------------------------------------------------
def _bf16_config(field: str = "auto_mixed_precision_onednn_bfloat16"):
    config = config_pb2.ConfigProto()
    setattr(config.graph_options.rewrite_options, field, rewriter_config_pb2.RewriterConfig.ON)
    return config


def _session_run(config, x_value, w_value):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 32])
        w = tf.Variable(w_value)
        y = tf.matmul(x, w)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(y, {x: x_value}), dict(sess.stats)


@pytest.mark.parametrize("field", ["auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl"])
def test_a_session_with_the_rewriter_option_runs_in_bf16(field):
    rng = np.random.default_rng(3)
    x, w = _exact_operands(rng, (4, 32)), _exact_operands(rng, (32, 3))
    got, _ = _session_run(_bf16_config(field), x, w)
    np.testing.assert_array_equal(got, matmul_bf16(x, w))
    default, _ = _session_run(None, x, w)  # no config, or options off: f32, as before
    np.testing.assert_array_equal(default, (x.astype(np.float64) @ w).astype(np.float32))
    off = _bf16_config(field)
    setattr(off.graph_options.rewrite_options, field, rewriter_config_pb2.RewriterConfig.OFF)
    np.testing.assert_array_equal(_session_run(off, x, w)[0], default)


def test_tf_config_bytes_select_bf16():
    """The field numbers are TF's: ConfigProto bytes serialized by TF 2.21 (graph_options (10)
    { rewrite_options (10) { 31 or 25: ON } }) parse with the option on."""
    for field, data in (("auto_mixed_precision_onednn_bfloat16", b"R\x05R\x03\xf8\x01\x01"),
                        ("auto_mixed_precision_mkl", b"R\x05R\x03\xc8\x01\x01")):
        assert _bf16_config(field).SerializeToString() == data
        assert bf16.precision_of_config(config_pb2.ConfigProto.FromString(data)) == "bf16"
    assert bf16.precision_of_config(config_pb2.ConfigProto()) == "f32"
    assert bf16.precision_of_config(None) == "f32"


def test_the_persistent_step_cache_keeps_f32_and_bf16_steps_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(4)
    x, w = _exact_operands(rng, (4, 32)), _exact_operands(rng, (32, 3))
    f32, stats = _session_run(None, x, w)
    assert stats["step_cache_hits"] == 0
    got, stats = _session_run(_bf16_config(), x, w)
    assert stats["step_cache_hits"] == 0  # the f32 entries do not serve a bf16 session
    np.testing.assert_array_equal(got, matmul_bf16(x, w))
    again, stats = _session_run(_bf16_config(), x, w)
    assert stats["step_cache_hits"] == stats["compiles"] > 0  # its own entries do
    np.testing.assert_array_equal(again, got)
    np.testing.assert_array_equal(_session_run(None, x, w)[0], f32)


def test_the_gpu_program_rounds_the_same_way_in_its_host_emulation():
    rng = np.random.default_rng(5)
    x, w = _exact_operands(rng, (4, 32)), _exact_operands(rng, (32, 8))
    with tf.Graph().as_default():
        px = tf.placeholder(tf.float32, [None, 32])
        y = tf.nn.relu(tf.matmul(px * 1.5, tf.constant(w)))  # the rounding fuses with the multiply
        got = tfc.compile(y, [px], target="cuda", emulate=True, precision="bf16")(x)
    np.testing.assert_array_equal(got, np.maximum(matmul_bf16(x * np.float32(1.5), w), 0))
