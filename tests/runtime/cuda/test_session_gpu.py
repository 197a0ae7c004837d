"""Sessions placing ops on /gpu:0: the GPU program path (with TFC_GPU_EMULATION=1, the
host emulation stands in for the CUDA device), device-resident variables, TF's placement
rules and messages, and soft placement on a machine without a GPU."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors
from tfc.runtime.cuda import available

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture
def emulated_gpu(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.delenv("TFC_GPU_EMULATION", raising=False)
    if available():
        pytest.skip("this machine has a GPU")


def _train(device: str, steps: int = 4, config=None):
    """(losses, final weights, the session's compiled step targets) of a small regression."""
    graph = tf.Graph()
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((16, 5)).astype(np.float32)
    yv = rng.standard_normal((16, 2)).astype(np.float32)
    with graph.as_default():
        with tf.device(device):
            x = tf.placeholder(tf.float32, [None, 5], name="x")
            y = tf.placeholder(tf.float32, [None, 2], name="y")
            w = tf.Variable(tf.constant(np.linspace(-1, 1, 10, dtype=np.float32).reshape(5, 2)), name="w")
            b = tf.Variable(tf.zeros([2]), name="b")
            prediction = tf.tanh(tf.matmul(x, w) + b)
            loss = tf.reduce_mean(tf.square(prediction - y))
            train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        with tf.Session(config=config) as session:
            session.run(tf.global_variables_initializer())
            losses = [session.run([loss, train], {x: xv, y: yv})[0] for _ in range(steps)]
            weights = session.run(w)
            targets = sorted({step.target for step in session.compiled_steps()})
            on_device = session._variables.values.device is not None and \
                session._variables.values.device.on_device("w")
            host_w = session._variables.values.get("w").copy()
    return np.array(losses), weights, targets, on_device, host_w


def test_a_training_loop_on_the_gpu_matches_the_cpu(emulated_gpu):
    losses, weights, targets, on_device, host_w = _train("/gpu:0")
    cpu_losses, cpu_weights, cpu_targets, _, _ = _train("/cpu:0")
    assert targets == ["cuda"] and cpu_targets == ["cpu"]
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(weights, cpu_weights, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    assert on_device  # the GPU steps left the newest w in device memory
    np.testing.assert_array_equal(host_w, weights)  # reading the host value copied it back


def test_device_placement_log_names_the_gpu(emulated_gpu, capfd):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/device:GPU:0"):
            a = tf.constant([1.0, 2.0], name="a")
            b = tf.multiply(a, 3.0, name="b")
        c = tf.add(b, 1.0, name="c")
        with tf.device("/cpu:0"):
            d = tf.negative(c, name="d")
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as session:
            np.testing.assert_array_equal(session.run(d), [-4.0, -7.0])
            # d runs on the CPU: the step is split (tests/runtime/cuda/test_session_split.py)
            [step] = session.compiled_steps()
            assert step.target == "split"
            assert [(stage.device, [op.name for op in stage.ops]) for stage in step.stages] == \
                [("GPU", ["b", "c"]), ("CPU", ["d"])]
    lines = capfd.readouterr().err.splitlines()
    assert f"b: (Mul): {GPU}" in lines
    assert f"c: (Add): {GPU}" in lines  # no device: the GPU, as TF places it
    assert f"d: (Neg): {CPU}" in lines


def test_list_devices_includes_the_gpu(emulated_gpu):
    with tf.Session(graph=tf.Graph()) as session:
        devices = session.list_devices()
    assert [(d.name, d.device_type) for d in devices] == [(CPU, "CPU"), (GPU, "GPU")]
    assert devices[1].memory_limit_bytes == 1 << 30


def test_a_gpu_that_does_not_exist_lists_the_devices_there_are(emulated_gpu):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:1"):
            a = tf.constant(1.0, name="a")
        with tf.Session() as session:
            with pytest.raises(errors.InvalidArgumentError) as caught:
                session.run(a)
    assert str(caught.value).startswith(
        f"Cannot assign a device for operation a: {{{{node a}}}} was explicitly assigned to "
        f"/device:GPU:1 but available devices are [ {CPU}, {GPU} ].")


def test_without_a_gpu_hard_placement_fails_and_soft_placement_runs_on_the_cpu(no_gpu):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            a = tf.constant([1.0, 4.0], name="a")
            b = tf.sqrt(a, name="b")
        with tf.Session() as session:
            with pytest.raises(errors.InvalidArgumentError, match=r"available devices are \[ " + CPU + r" \]"):
                session.run(b)
    losses, weights, targets, _, _ = _train("/gpu:0", config=tf.ConfigProto(allow_soft_placement=True))
    cpu_losses, cpu_weights, _, _, _ = _train("")
    assert targets == ["cpu"]
    np.testing.assert_array_equal(losses, cpu_losses)
    np.testing.assert_array_equal(weights, cpu_weights)


def test_cpu_and_gpu_steps_take_turns_on_one_variable(emulated_gpu):
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        total = tf.reduce_sum(v, name="total")  # all on the CPU
        increment = tf.assign_add(v, [1.0, 1.0])  # on the CPU
        with tf.device("/gpu:0"):
            double = tf.assign(v, v * 2.0)
        with tf.Session() as session:
            session.run(v.initializer)
            session.run(double)
            session.run(double)
            device = session._variables.values.device
            assert device.on_device("v")  # the host copy is stale, and not copied yet
            assert session.run(total) == pytest.approx(12.0)  # a CPU step: copied back first
            assert not device.on_device("v")
            session.run(increment)  # the host copy is newer now
            session.run(double)  # uploaded before the GPU step
            assert session.run(total) == pytest.approx(28.0)  # (4 + 1) * 2 + (8 + 1) * 2
            assert sorted({step.target for step in session.compiled_steps()}) == ["cpu", "cuda"]


def test_a_training_loop_on_the_cuda_device_matches_the_cpu(monkeypatch):
    monkeypatch.delenv("TFC_GPU_EMULATION", raising=False)
    if not available():
        pytest.skip("no CUDA device")
    losses, weights, targets, on_device, host_w = _train("/gpu:0", steps=6)
    cpu_losses, cpu_weights, _, _, _ = _train("/cpu:0", steps=6)
    assert targets == ["cuda"]
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(weights, cpu_weights, rtol=1e-5, atol=1e-6)
    assert on_device
    np.testing.assert_array_equal(host_w, weights)
