"""The shared-memory tiled GEMM (tfc/codegen/gpu/gemm.py) on the host emulation: tails
in M, N and K, batches, transposed operands, fused epilogues, f64; bit for bit what the
item kernel (one thread per register tile, contraction.py) computes, since both sum each
output in increasing k with one fma per step; and PTX that ptxas accepts."""
import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.codegen.gpu import block, gemm
from tfc.codegen.gpu import ptx as ptx_module
from tfc.codegen.gpu.plan import Launch

from ..helpers import func

EMULATE = True  # test_device_cooperative.py runs these tests on a CUDA device with False
needs_ptxas = pytest.mark.skipif(ptx_module.ptxas_path() is None, reason="ptxas is not installed")


def _compile(build, feeds_shapes, dtype=tf.float32, arch=None, emulate=None):
    graph = tf.Graph()
    with graph.as_default():
        feeds = [tf.placeholder(dtype, shape) for shape in feeds_shapes]
        fetches = build(*feeds)
        emulate = EMULATE if emulate is None else emulate
        arch = arch or ("sm_80" if emulate else None)  # on a device: its own
        return tfc.compile(fetches, feeds=feeds, target="cuda", arch=arch, emulate=emulate)


def _dot_blocks(compiled) -> list:
    return [step.block for step in compiled.result.program.plan
            if isinstance(step, Launch) and ("dot" in step.kernel or "fusion" in step.kernel)]


def _item_kernel_result(monkeypatch, build, feeds_shapes, inputs, dtype=tf.float32):
    with monkeypatch.context() as patch:
        patch.setattr(gemm, "applies", lambda core: False)
        compiled = _compile(build, feeds_shapes, dtype)
        assert _dot_blocks(compiled) == [None] * len(_dot_blocks(compiled))
        return compiled(*inputs)


def _cpu_result(build, feeds_shapes, inputs):
    graph = tf.Graph()
    with graph.as_default():
        feeds = [tf.placeholder(tf.float32, shape) for shape in feeds_shapes]
        return tfc.compile(build(*feeds), feeds=feeds)(*inputs)[0]


def _dense(x, w):
    return [tf.nn.relu(tf.matmul(x, w) + tf.cast(tf.range(tf.shape(w)[1]), x.dtype) * 0.25)]


@pytest.mark.parametrize("m, k, n", [(130, 200, 150), (64, 17, 64), (257, 33, 129), (70, 1, 300), (65, 0, 64),
                                     (200, 40, 100)])
def test_dense_layers_match_numpy_and_the_item_kernel_bit_for_bit(m, k, n, monkeypatch):
    shapes = [[None, k], [k, n]]
    compiled = _compile(_dense, shapes)
    assert _dot_blocks(compiled) == [gemm.THREADS]
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    (got,) = compiled(x, w)
    np.testing.assert_allclose(got, np.maximum(x @ w + np.arange(n) * 0.25, 0), rtol=1e-4, atol=1e-4)
    (item,) = _item_kernel_result(monkeypatch, _dense, shapes, [x, w])
    np.testing.assert_array_equal(got, item)


def test_tile_shapes_follow_the_sizes():
    assert gemm.LARGE[0] * gemm.LARGE[1] // (gemm.LARGE[3] * gemm.LARGE[4]) == gemm.THREADS
    assert gemm.SMALL[0] * gemm.SMALL[1] // (gemm.SMALL[3] * gemm.SMALL[4]) == gemm.THREADS
    assert gemm.NARROW[0] * gemm.NARROW[1] // (gemm.NARROW[3] * gemm.NARROW[4]) == gemm.THREADS
    assert gemm.MEDIUM[0] * gemm.MEDIUM[1] // (gemm.MEDIUM[3] * gemm.MEDIUM[4]) == gemm.THREADS
    narrow = _compile(lambda x, w: [tf.matmul(x, w)], [[None, 8], [8, 40]])
    (launch,) = [s for s in narrow.result.program.plan if isinstance(s, Launch)]
    assert str(launch.extent) == "2*((s0+127)//128)"  # 128 x 32 tiles: N = 40 < 64
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((150, 8)).astype(np.float32), rng.standard_normal((8, 40)).astype(np.float32)
    np.testing.assert_allclose(narrow(x, w)[0], x @ w, rtol=1e-5, atol=1e-5)
    thin_layer = _compile(lambda x, w: [tf.matmul(x, w)], [[None, 8], [8, 10]])
    assert _dot_blocks(thin_layer) == [None]  # N = 10 < 32 and K = 8: the item kernel
    wide = _compile(lambda x, w: [tf.matmul(x, w)], [[None, 8], [8, 100]])
    (launch,) = [s for s in wide.result.program.plan if isinstance(s, Launch)]
    assert str(launch.extent) == "2*((s0+127)//128)"  # 128 x 64 tiles: N = 100 < 128
    w_wide = rng.standard_normal((8, 100)).astype(np.float32)
    np.testing.assert_allclose(wide(x, w_wide)[0], x @ w_wide, rtol=1e-5, atol=1e-5)
    few_rows = _compile(lambda x, w: [tf.matmul(x, w)], [[100, 8], [8, 300]])
    (launch,) = [s for s in few_rows.result.program.plan if isinstance(s, Launch)]
    assert str(launch.extent) == "10"  # 64 x 64 tiles: M = 100 < 128 (2 x 5)


@pytest.mark.parametrize("transpose_a, transpose_b", [(True, False), (False, True), (True, True)])
def test_transposed_operands(transpose_a, transpose_b, monkeypatch):
    m, k, n = 90, 37, 80
    shapes = [[k, m] if transpose_a else [m, k], [n, k] if transpose_b else [k, n]]

    def build(a, b):
        return [tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)]

    compiled = _compile(build, shapes)
    assert gemm.THREADS in _dot_blocks(compiled)
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    (got,) = compiled(a, b)
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, _item_kernel_result(monkeypatch, build, shapes, [a, b])[0])


def test_batched_f64_with_infinities(monkeypatch):
    shapes = [[3, 70, 40], [3, 40, 90]]

    def build(a, b):
        return [tf.matmul(a, b)]

    compiled = _compile(build, shapes, tf.float64)
    assert _dot_blocks(compiled) == [gemm.THREADS]
    rng = np.random.default_rng(8)
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    a[1, 5, 7] = np.inf
    b[2, 0, 3] = np.nan
    (got,) = compiled(a, b)
    with np.errstate(invalid="ignore"):
        expected = a @ b
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got, _item_kernel_result(monkeypatch, build, shapes, [a, b], tf.float64)[0])


def test_an_empty_batch_launches_nothing():
    compiled = _compile(_dense, [[None, 16], [16, 64]])
    (got,) = compiled(np.zeros((0, 16), np.float32), np.ones((16, 64), np.float32))
    assert got.shape == (0, 64)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_gemm_assembles_with_two_shared_tiles(arch):
    compiled = _compile(_dense, [[None, 256], [256, 256]], arch=arch, emulate=False)
    program = compiled.result.program
    text = ptx_module.compile_ptx(program.module_text("ptx"), program.kernels, arch)
    tiles = [line for line in text.splitlines() if ".shared" in line and "tfc_" in line]
    assert len(tiles) == 2, tiles  # A's and B's k-slices: distinct arrays
    assert "ld.shared" in text and "bar.sync" in text and "fma.rn.f32" in text
    assert ptx_module.assemble(text, arch)[:4] == b"\x7fELF"
    split = _compile(lambda x, dy: [tf.matmul(x, dy, transpose_a=True)], [[None, 300], [None, 200]], arch=arch,
                     emulate=False).result.program
    assert ptx_module.assemble(ptx_module.compile_ptx(split.module_text("ptx"), split.kernels, arch), arch)


# -- convolutions as implicit GEMMs ----------------------------------------------------------------
CONVS = {
    "SAME 3x3 + bias + relu": ([None, 9, 10, 5], [3, 3, 5, 64], dict(strides=[1, 1, 1, 1], padding="SAME"), True),
    "VALID 5x5 stride 2, 70 channels": ([None, 13, 12, 3], [5, 5, 3, 70], dict(strides=[1, 2, 2, 1],
                                                                              padding="VALID"), False),
    "5x5 from 1 channel to 32": ([None, 12, 12, 1], [5, 5, 1, 32], dict(strides=[1, 1, 1, 1], padding="SAME"),
                                 True),
    "atrous 3x3 rate 2": ([None, 11, 11, 4], [3, 3, 4, 64], dict(strides=[1, 1, 1, 1], padding="SAME",
                                                                 dilations=[1, 2, 2, 1]), False),
}


@pytest.mark.parametrize("case", list(CONVS))
def test_convolutions_match_the_cpu_and_the_item_kernel_bit_for_bit(case, monkeypatch):
    x_shape, w_shape, options, epilogue = CONVS[case]

    def build(x, w):
        y = tf.nn.conv2d(x, w, **options)
        return [tf.nn.relu(y + 0.5) if epilogue else y]

    shapes = [x_shape, w_shape]
    compiled = _compile(build, shapes)
    assert gemm.THREADS in _dot_blocks(compiled) or any(
        s.block == gemm.THREADS for s in compiled.result.program.plan if isinstance(s, Launch))
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal([3] + x_shape[1:]).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    (got,) = compiled(x, w)
    np.testing.assert_allclose(got, _cpu_result(build, shapes, [x, w]), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, _item_kernel_result(monkeypatch, build, shapes, [x, w])[0])


def test_the_input_gradient_of_a_strided_conv():
    """conv2d_transpose: a conv over the stride-dilated input (lhs dilation)."""
    def build(y, w):
        return [tf.nn.conv2d_transpose(y, w, tf.stack([tf.shape(y)[0], 9, 9, 64]), [1, 2, 2, 1], "SAME")]

    shapes = [[None, 5, 5, 6], [3, 3, 64, 6]]
    compiled = _compile(build, shapes)
    assert any(s.block == gemm.THREADS for s in compiled.result.program.plan if isinstance(s, Launch))
    rng = np.random.default_rng(11)
    y = rng.standard_normal((2, 5, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 6)).astype(np.float32)
    (got,) = compiled(y, w)
    np.testing.assert_allclose(got, _cpu_result(build, shapes, [y, w]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype, vector, loads", [(tf.float32, "ld.shared.v4", 4), (tf.float64, "ld.shared.v2", 8)])
def test_a_thread_reads_its_tile_values_as_vectors(dtype, vector, loads, monkeypatch):
    """Each thread's 8 rows and 8 columns of a 128 x 128 tile are two runs of 4 (f32; 4
    runs of 2 for f64), each one vector load from shared memory per step of k, where the
    interleaved layout took 16 scalar loads; the outputs are the same bits."""
    shapes = [[300, 200], [200, 260]]
    compiled = _compile(lambda a, b: [tf.matmul(a, b)], shapes, dtype, arch="sm_90", emulate=False)
    text = compiled.ptx
    assert text.count(vector) == loads and "ld.shared.b" not in text.replace(vector, "")
    rng = np.random.default_rng(18)
    inputs = [rng.standard_normal(shape).astype(dtype.as_numpy_dtype) for shape in shapes]
    (got,) = _compile(lambda a, b: [tf.matmul(a, b)], shapes, dtype)(*inputs)
    monkeypatch.setattr(gemm, "SHARED_VECTOR_BYTES", 0)
    interleaved = _compile(lambda a, b: [tf.matmul(a, b)], shapes, dtype, arch="sm_90", emulate=False)
    assert vector not in interleaved.ptx
    np.testing.assert_array_equal(got, _compile(lambda a, b: [tf.matmul(a, b)], shapes, dtype)(*inputs)[0])


# -- split contractions ----------------------------------------------------------------------------
def _launch_list(compiled) -> list:
    return [(step.block, str(step.extent)) for step in compiled.result.program.plan if isinstance(step, Launch)]


def test_a_weight_gradient_splits_its_long_contraction(monkeypatch):
    """x^T dy over a batch: 6 output tiles, so 43 blocks per tile (towards 256) each sum a part of the
    batch into partials, and a second launch adds the parts in order and applies the
    epilogue (here the SGD update)."""
    def build(x, dy):
        return [tf.constant(np.ones((300, 200), np.float32)) - 0.1 * tf.matmul(x, dy, transpose_a=True)]

    shapes = [[None, 300], [None, 200]]
    compiled = _compile(build, shapes)
    assert _launch_list(compiled) == [(gemm.THREADS, str(6 * -(-gemm.TARGET_BLOCKS // 6))), (None, "60000")]
    rng = np.random.default_rng(12)
    inputs = [rng.standard_normal((1000, 300)).astype(np.float32), rng.standard_normal((1000, 200)).astype(np.float32)]
    (got,) = compiled(*inputs)
    np.testing.assert_allclose(got, 1 - 0.1 * (inputs[0].T.astype(np.float64) @ inputs[1]), rtol=1e-5, atol=1e-4)
    if EMULATE:  # the same bits with the emulation's threads in the other order: no race
        monkeypatch.setenv(block.DESCENDING_ENV, "1")
        np.testing.assert_array_equal(_compile(build, shapes)(*inputs)[0], got)
    for batch in (0, 1, 7):  # parts past the end of a short batch add nothing
        small = [a[:batch] for a in inputs]
        np.testing.assert_allclose(compiled(*small)[0], 1 - 0.1 * (small[0].T.astype(np.float64) @ small[1]),
                                   rtol=1e-5, atol=1e-5)


def test_a_conv_filter_gradient_splits_over_the_batch_pixels():
    def build(x, w):
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        return tf.gradients(tf.reduce_sum(y * y), [w])

    shapes = [[None, 10, 10, 8], [3, 3, 8, 64]]
    compiled = _compile(build, shapes)
    # the filter gradient: [8*3*3, 64] in 64 x 64 tiles (2), times 128 parts of the s0*100 pixels
    assert (gemm.THREADS, str(2 * gemm.MAX_SPLIT)) in _launch_list(compiled)
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 10, 10, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 64)).astype(np.float32)
    np.testing.assert_allclose(compiled(x, w)[0], _cpu_result(build, shapes, [x, w]), rtol=2e-4, atol=2e-3)


def test_narrow_products_with_long_contractions_take_tiles(monkeypatch):
    """A 10-output dense layer over 300 inputs (128 x 32 tiles of an unknown batch of rows,
    split in parts by a count known at run time) and its weight gradient summed over the
    batch (64 x 10 outputs: one tile in 128 parts), where a thread per output would walk
    the whole contraction alone."""
    def build(x, w, dy):
        return [tf.matmul(x, w), tf.matmul(x[:, :64], dy, transpose_a=True)]

    shapes = [[None, 300], [300, 10], [None, 10]]
    compiled = _compile(build, shapes)
    launches = _launch_list(compiled)
    rows = launches[1][1][len("10*"):]
    assert launches[:2] == [(gemm.THREADS, f"((2*(({rows}+127)//128)+256)//(2*(({rows}+127)//128)+64))*"
                                           f"(({rows}+127)//128)"), (None, f"10*{rows}")]
    assert launches[-2:] == [(gemm.THREADS, str(gemm.MAX_SPLIT)), (None, "640")]
    rng = np.random.default_rng(16)
    inputs = [rng.standard_normal((200, 300)).astype(np.float32), rng.standard_normal((300, 10)).astype(np.float32),
              rng.standard_normal((200, 10)).astype(np.float32)]
    dense, gradient = compiled(*inputs)
    np.testing.assert_allclose(dense, inputs[0].astype(np.float64) @ inputs[1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gradient, inputs[0][:, :64].T.astype(np.float64) @ inputs[2], rtol=1e-4, atol=1e-4)
    if EMULATE:  # the same bits with the emulation's threads in the other order: no race
        monkeypatch.setenv(block.DESCENDING_ENV, "1")
        again = _compile(build, shapes)(*inputs)
        np.testing.assert_array_equal(again[0], dense)
        np.testing.assert_array_equal(again[1], gradient)


def test_a_one_channel_conv_filter_gradient_splits_into_small_tiles():
    """The first layer of a CNN: its filter gradient is [5*5*1, 32] (M = 25 < 64) summed
    over every pixel of the batch: one 64 x 64 tile in 128 parts."""
    def build(x, w):
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        return tf.gradients(tf.reduce_sum(y * y), [w])

    shapes = [[None, 12, 12, 1], [5, 5, 1, 32]]
    compiled = _compile(build, shapes)
    assert (gemm.THREADS, str(gemm.MAX_SPLIT)) in _launch_list(compiled)
    rng = np.random.default_rng(17)
    x = rng.standard_normal((3, 12, 12, 1)).astype(np.float32)
    w = rng.standard_normal((5, 5, 1, 32)).astype(np.float32)
    np.testing.assert_allclose(compiled(x, w)[0], _cpu_result(build, shapes, [x, w]), rtol=2e-4, atol=2e-3)


def test_how_many_parts():
    from tfc import ir as tfc_ir
    from tfc.ir.dims import dim_eval

    def dot(m, n, k):
        text = func(f"(%a: f32[{k},{m}], %b: f32[{k},{n}]) -> (f32[{m},{n}])",
                    f'%0 = dot %a, %b {{contract=[[0], [0]]}} : f32[{m},{n}]', "return %0")
        return next(op for op in tfc_ir.parse(text).functions["main"].body.ops if op.name == "dot")

    assert gemm.split_count(dot(784, 512, "s0")) == -(-gemm.TARGET_BLOCKS // 28)  # 7 x 4 tiles, any batch
    assert gemm.split_count(dot("s1", 512, "s0")) == 1  # tiles unknown: as many as rows
    assert gemm.split_count(dot(784, 512, 256)) == 256 // (8 * gemm.MIN_PART_TILES)  # a short contraction
    assert gemm.split_count(dot(2048, 2048, 4096)) == 1  # 256 tiles fill the GPU
    # a known contraction over rows known only at run time: parts = (256 + 2c) // (2c + 256 // limit)
    parts = gemm.split_count(dot("s0", 10, 3136))  # 128 x 32 tiles, limit 3136 // 64 = 49
    assert str(parts) == "(2*((s0+127)//128)+256)//(2*((s0+127)//128)+5)"
    assert [dim_eval(parts, {"s0": rows}) for rows in (1, 256, 4096, 16384, 10 ** 6)] == [36, 28, 4, 1, 1]
    assert gemm.split_count(dot("s0", 512, 784)) == 1  # wide: as many tiles as rows


def test_half_precision_accumulates_in_f32(monkeypatch):
    """f16 operands widen to f32 in shared memory; sums round once: the item kernel's bits,
    and for a split contraction the parts add in f32."""
    shapes = [[None, 96], [96, 80]]
    compiled = _compile(_dense, shapes, tf.float16)
    assert _dot_blocks(compiled) == [gemm.THREADS]
    rng = np.random.default_rng(15)
    x = rng.standard_normal((70, 96)).astype(np.float16)
    w = rng.standard_normal((96, 80)).astype(np.float16)
    (got,) = compiled(x, w)
    assert got.dtype == np.float16
    want = np.maximum(x.astype(np.float64) @ w + np.arange(80) * 0.25, 0)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-2)
    np.testing.assert_array_equal(got, _item_kernel_result(monkeypatch, _dense, shapes, [x, w], tf.float16)[0])
    gradient = _compile(lambda a, b: [tf.matmul(a, b, transpose_a=True)], [[None, 130], [None, 140]], tf.float16)
    assert [extent for _, extent in _launch_list(gradient)] == [str(4 * -(-gemm.TARGET_BLOCKS // 4)), str(130 * 140)]
    a = rng.standard_normal((500, 130)).astype(np.float16)
    b = rng.standard_normal((500, 140)).astype(np.float16)
    np.testing.assert_allclose(gradient(a, b)[0].astype(np.float64), a.T.astype(np.float64) @ b, rtol=3e-3,
                               atol=5e-2)
