"""``tfc.compile(..., target="cuda")``: the PTX, the run on the GPU (or the clear error
without one), and the host emulation of the same program."""
import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.frontend import errors
from tfc.runtime.cuda import available
from tfc.runtime.cuda.executable import LaunchConfig


def _graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        i = tf.placeholder(tf.int32, [None], name="i")
        h = tf.nn.relu(tf.matmul(x, tf.constant(np.arange(18, dtype=np.float32).reshape(6, 3) / 10)) - 1.0)
        rows = tf.gather(h, i)
        n, total = tf.while_loop(lambda n, t: n < 4, lambda n, t: (n + 1, t * 0.5 + tf.reduce_sum(rows)),
                                 [tf.constant(0), tf.constant(0.0)])
    return graph, x, i, [h, rows, total]


def test_without_a_gpu_the_program_compiles_and_says_it_cannot_run():
    if available():
        pytest.skip("this machine has a GPU")
    graph, x, i, fetches = _graph()
    with graph.as_default():
        program = tfc.compile(fetches, feeds=[x, i], target="cuda", arch="sm_80")
    assert program.target == "cuda" and ".target sm_80" in program.ptx
    with pytest.raises(errors.NotFoundError, match="^no CUDA device/driver was found: "):
        program(np.ones((2, 6), np.float32), np.array([0, 1], np.int32))


def test_the_emulated_program_computes_what_the_cpu_program_computes():
    graph, x, i, fetches = _graph()
    with graph.as_default():
        gpu = tfc.compile(fetches, feeds=[x, i], target="cuda", emulate=True)
        cpu = tfc.compile(fetches, feeds=[x, i])
    gpu.result.executable.code.config = LaunchConfig(block=32, max_blocks=2)
    rng = np.random.default_rng(0)
    for rows in (1, 7, 100):
        xv = rng.standard_normal((rows, 6)).astype(np.float32)
        iv = rng.integers(0, rows, size=rows + 3).astype(np.int32)
        for got, want in zip(gpu(xv, iv), cpu(xv, iv)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_failing_kernel_stops_the_program_with_the_cpu_message():
    graph, x, i, fetches = _graph()
    with graph.as_default():
        gpu = tfc.compile(fetches, feeds=[x, i], target="cuda", emulate=True)
        cpu = tfc.compile(fetches, feeds=[x, i])
    xv, iv = np.ones((3, 6), np.float32), np.array([0, 5], np.int32)
    messages = []
    for program in (gpu, cpu):
        with pytest.raises(errors.InvalidArgumentError) as caught:
            program(xv, iv)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "indices[1] = 5 is not in [0, 3)" in messages[0]


def test_variables_are_updated_by_the_gpu_program():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        step = tf.assign_add(v, tf.square(v))
        with tf.Session() as session:
            session.run(v.initializer)
            program = tfc.compile([step], target="cuda", emulate=True, session=session)
            assert program()[0].tolist() == [2.0, 6.0, 12.0]
            assert program()[0].tolist() == [6.0, 42.0, 156.0]
            assert session.run(v).tolist() == [6.0, 42.0, 156.0]


def test_an_unknown_target_is_refused():
    graph, x, i, fetches = _graph()
    with graph.as_default(), pytest.raises(ValueError, match="unknown target 'tpu'"):
        tfc.compile(fetches, feeds=[x, i], target="tpu")
