"""Sessions on several GPUs (in-graph replication): ops on /gpu:i run on GPU i, a step on
several devices runs as device stages (tfc/runtime/device_split.py), tensors between two
GPUs go through the host. ``TFC_GPU_EMULATION=N`` stands in for N GPUs; with N > 1 an
emulated GPU refuses memory of another one, so a buffer handed across GPUs shows."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors
from tfc.runtime.cuda.executable import EmulatedDevice

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU = PREFIX + "CPU:0"


def GPU(i):
    return f"{PREFIX}GPU:{i}"


@pytest.fixture(autouse=True)
def four_gpus(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "4")


def test_list_devices_lists_every_gpu(monkeypatch):
    with tf.Session(graph=tf.Graph()) as session:
        devices = session.list_devices()
    assert [(d.name, d.device_type) for d in devices] == \
        [(CPU, "CPU"), (GPU(0), "GPU"), (GPU(1), "GPU"), (GPU(2), "GPU"), (GPU(3), "GPU")]
    assert [d.memory_limit_bytes for d in devices[1:]] == [1 << 30] * 4
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")  # one GPU, as before
    with tf.Session(graph=tf.Graph()) as session:
        assert [d.name for d in session.list_devices()] == [CPU, GPU(0)]


def test_in_graph_replication_seed_program(capfd):
    """The seed program: a tower on GPU:2 and one on GPU:3, their add_n on the CPU."""
    graph = tf.Graph()
    with graph.as_default():
        c = []
        for d in ['/device:GPU:2', '/device:GPU:3']:
            with tf.device(d):
                a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
                b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
                c.append(tf.matmul(a, b))
        with tf.device('/cpu:0'):
            total = tf.add_n(c)
    with tf.Session(graph=graph, config=tf.ConfigProto(log_device_placement=True)) as session:
        print(session.run(total))
        [step] = session.compiled_steps()
        assert [stage.device for stage in step.stages] == ["GPU:2", "GPU:3", "CPU"]
        assert [(program.target, program.ordinal) for program in step.compiled_stages()] == \
            [("cuda", 2), ("cuda", 3), ("cpu", 0)]
        assert sorted((t.name, src, dst) for t, src, dst in step.crossings) == \
            [("MatMul:0", "GPU:2", "CPU"), ("MatMul_1:0", "GPU:3", "CPU")]
    out, err = capfd.readouterr()
    assert out == "[[ 44.  56.]\n [ 98. 128.]]\n"
    assert err.splitlines() == [
        f"Const: (Const): {GPU(2)}", f"Const_1: (Const): {GPU(2)}", f"MatMul: (MatMul): {GPU(2)}",
        f"Const_2: (Const): {GPU(3)}", f"Const_3: (Const): {GPU(3)}", f"MatMul_1: (MatMul): {GPU(3)}",
        f"AddN: (AddN): {CPU}"]


def _towers(devices):
    """Two towers, each the loss and gradients of half the batch on its device; the
    variables on the CPU, where the gradients are averaged and applied. Every value is a
    dyadic fraction, exact on either device."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        y = tf.placeholder(tf.float32, [4, 2], name="y")
        with tf.device("/cpu:0"):
            w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 4, name="w")
            b = tf.Variable([0.5, -0.5], name="b")
        opt = tf.train.GradientDescentOptimizer(0.0625)
        grads = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope(f"tower_{i}"):
                xs, ys = x[2 * i:2 * i + 2], y[2 * i:2 * i + 2]
                loss = tf.reduce_sum(tf.square(tf.matmul(xs, w) + b - ys)) / 2.0
                grads.append(opt.compute_gradients(loss, [w, b]))
        with tf.device("/cpu:0"):
            averaged = [(tf.add_n([tower[k][0] for tower in grads]) / 2.0, grads[0][k][1]) for k in range(2)]
            train = opt.apply_gradients(averaged)
        init = tf.global_variables_initializer()
    return graph, x, y, w, b, train, init


XV = np.array([[1, 0, 2], [0, 1, 1], [2, 1, 0], [1, 1, 1]], np.float32)
YV = np.array([[1, 2], [0, 1], [2, 0], [1, 1]], np.float32)
W3 = np.array([[0.0522918701171875, 0.10352325439453125], [0.38629150390625, 0.621856689453125],
               [0.5787353515625, 1.1624984741210938]], np.float32)  # (exact float32 values)
B3 = np.array([0.2864990234375, -0.6313552856445312], np.float32)


def _train(devices, log=False):
    graph, x, y, w, b, train, init = _towers(devices)
    with tf.Session(graph=graph, config=tf.ConfigProto(log_device_placement=log)) as session:
        session.run(init)
        before = dict(EmulatedDevice.launch_counts)
        for _ in range(3):
            session.run(train, {x: XV, y: YV})
        launched = {i: n - before.get(i, 0) for i, n in EmulatedDevice.launch_counts.items()
                    if n != before.get(i, 0)}
        steps = [step for step in session.compiled_steps() if step.target == "split"]
        return session.run([w, b]), steps, launched


def test_two_tower_training_matches_the_cpu(capfd):
    (gpu_w, gpu_b), [step], launched = _train(["/gpu:0", "/gpu:1"], log=True)
    assert [stage.device for stage in step.stages] == ["CPU", "GPU", "GPU:1", "CPU"]
    assert [(program.target, program.ordinal) for program in step.compiled_stages()] == \
        [("cpu", 0), ("cuda", 0), ("cuda", 1), ("cpu", 0)]
    # each GPU stage ran on its own emulated GPU, the same kernels on each
    programs = step.compiled_stages()
    assert [programs[i].executable.code.device.ordinal for i in (1, 2)] == [0, 1]
    per_run = len(programs[1].executable.code.device.launches) // 3
    assert per_run > 0 and launched == {0: 3 * per_run, 1: 3 * per_run}
    assert len(programs[2].executable.code.device.launches) == 3 * per_run
    # the variables' reads go up to both GPUs, each tower's two gradients come down
    grad = "tower_{0}/gradients/tower_{0}/{1}_grad/tuple/control_dependency_1:0"
    assert sorted((t.name, src, dst) for t, src, dst in step.crossings) == [
        ("b/read:0", "CPU", "GPU"), ("b/read:0", "CPU", "GPU:1"),
        (grad.format(0, "MatMul"), "GPU", "CPU"), (grad.format(0, "add"), "GPU", "CPU"),
        (grad.format(1, "MatMul"), "GPU:1", "CPU"), (grad.format(1, "add"), "GPU:1", "CPU"),
        ("w/read:0", "CPU", "GPU"), ("w/read:0", "CPU", "GPU:1")]
    lines = capfd.readouterr().err.splitlines()
    for line in (f"tower_0/MatMul: (MatMul): {GPU(0)}", f"tower_1/MatMul: (MatMul): {GPU(1)}",
                 f"w: (VariableV2): {CPU}", f"w/read: (Identity): {CPU}", f"AddN: (AddN): {CPU}",
                 f"GradientDescent/update_w/ApplyGradientDescent: (ApplyGradientDescent): {CPU}"):
        assert line in lines
    (cpu_w, cpu_b), none, _ = _train([None, None])
    assert none == []  # one CPU program
    np.testing.assert_array_equal(gpu_w, cpu_w)
    np.testing.assert_array_equal(gpu_b, cpu_b)
    np.testing.assert_array_equal(gpu_w, W3)
    np.testing.assert_array_equal(gpu_b, B3)


def test_a_step_on_gpu_0_alone_is_one_gpu_program_as_before():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        with tf.device("/gpu:0"):
            y = tf.add(x * 3.0, 1.0, name="y")
    with tf.Session(graph=graph) as session:
        for _ in range(2):
            np.testing.assert_array_equal(session.run(y, {x: [1.0, -2.0]}), [4.0, -5.0])
        [step] = session.compiled_steps()
        assert (step.target, step.ordinal, step.executable.code.device.ordinal) == ("cuda", 0, 0)
        assert (session.stats["compiles"], session.stats["cache_hits"]) == (1, 1)


def test_tensors_between_gpus_go_through_the_host():
    """GPU:0 -> GPU:1 -> GPU:0: ``a`` stays in GPU 0's memory for its later stage there and
    is downloaded for GPU 1 (the emulation refuses a pointer to another GPU's memory)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        with tf.device("/gpu:0"):
            a = tf.multiply(x, 2.0, name="a")
        with tf.device("/gpu:1"):
            b = tf.add(a, 1.0, name="b")
        with tf.device("/gpu:0"):
            c = tf.multiply(a, b, name="c")
    xv = np.array([[1, 2], [3, -4]], np.float32)
    with tf.Session(graph=graph) as session:
        for _ in range(2):
            np.testing.assert_array_equal(session.run(c, {x: xv}), (2 * xv) * (2 * xv + 1))
        [step] = session.compiled_steps()
        assert [(stage.device, [op.name for op in stage.ops]) for stage in step.stages] == \
            [("GPU", ["a"]), ("GPU:1", ["b"]), ("GPU", ["c"])]
        assert [(t.name, src, dst) for t, src, dst in step.crossings] == \
            [("a:0", "GPU", "GPU:1"), ("b:0", "GPU:1", "GPU")]
        assert step.stages[0].device_read == {0} and step.stages[0].resident_outputs == set()
        assert step.stages[2].resident_inputs == {[t.name for t in step.stages[2].inputs].index("a:0")}
        assert session.stats["device_copies"] == 4


def test_an_emulated_gpu_refuses_another_gpus_memory():
    zero, one = EmulatedDevice(None, {}, 0), EmulatedDevice(None, {}, 1)
    buffer = one.alloc(16)
    data = np.arange(4, dtype=np.float32)
    one.upload(buffer.ptr, data.ctypes.data, 16)
    with pytest.raises(errors.InternalError, match=r"^a download on the emulated /device:GPU:0 was given memory of "
                                                   r"/device:GPU:1 \(address 0x[0-9a-f]+\)$"):
        zero.download(data.ctypes.data, buffer.ptr, 16)
    with pytest.raises(errors.InternalError, match="an upload on the emulated /device:GPU:1 was given host memory"):
        one.upload(data.ctypes.data, data.ctypes.data, 16)


def test_variables_on_a_gpu_stay_there_and_move_through_the_host():
    """A variable on GPU:1 is trained there (a step wholly on GPU 1: one stage), read by a
    GPU:0 step (downloaded, uploaded to GPU 0), and read back on the host."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
            bump = tf.assign_add(v, [0.5, 0.25], name="bump")
        with tf.device("/gpu:0"):
            doubled = tf.multiply(v, 2.0, name="doubled")
    with tf.Session(graph=graph) as session:
        session.run(v.initializer)
        session.run(bump)
        session.run(bump)
        [init_step, bump_step] = [s for s in session.compiled_steps() if s.target == "split"]
        assert [stage.device for stage in bump_step.stages] == ["GPU:1"]
        values = session._variables.values
        assert sorted(values.devices) == [1] and values.devices[1].on_device("v")
        np.testing.assert_array_equal(session.run(doubled), [4.0, 5.0])
        assert sorted(values.devices) == [0, 1]
        np.testing.assert_array_equal(session.run(v), [2.0, 2.5])
        session.run(bump)  # GPU 1's copy is newest again: GPU 0's is stale
        assert values.devices[1].on_device("v") and not values.devices[0].on_device("v")
        np.testing.assert_array_equal(session.run(doubled), [5.0, 5.5])


def test_a_gpu_past_the_count_is_tfs_error_or_the_cpu_under_soft_placement():
    graph = tf.Graph()
    with graph.as_default():
        one, two = tf.constant(1.0), tf.constant(2.0)
        with tf.device("/gpu:4"):
            a = tf.add(one, two, name="a")
    devices = ", ".join([CPU] + [GPU(i) for i in range(4)])
    with tf.Session(graph=graph) as session:
        with pytest.raises(errors.InvalidArgumentError) as info:
            session.run(a)
    assert info.value.message == (
        "Cannot assign a device for operation a: {{node a}} was explicitly assigned to /device:GPU:4 but "
        f"available devices are [ {devices} ]. Make sure the device specification refers to a valid device.")
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(graph=graph, config=config) as session:
        assert session.run(a) == 3.0
        assert [step.target for step in session.compiled_steps()] == ["cpu"]


def test_colocating_two_gpus_is_tfs_error():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            a = tf.add(tf.constant(1.0), 2.0, name="a")
        with tf.colocate_with(a):
            b = tf.multiply(a, 3.0, name="b")
        b.op._set_device("/device:GPU:1")  # (as an imported GraphDef can have it)
    with tf.Session(graph=graph) as session:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Cannot colocate nodes \{\{colocation_node a\}\} and \{\{colocation_node b\}\}: "
                                 r"Cannot merge devices with incompatible ids: '/device:GPU:0' and '/device:GPU:1'"):
            session.run(b)


# --- the driver layer, per ordinal (fake bindings: no GPU here) ---------------------------------


def _fake_binding(count: int, log: list):
    from stub_driver import StubDriver

    from tfc.runtime.cuda.driver import NoCudaDevice

    class Fake(StubDriver):
        def __init__(self, ordinal: int = 0):
            if ordinal >= count:
                raise NoCudaDevice.because(f"fake found {count} device(s), GPU:{ordinal} asked for")
            super().__init__(ordinal)
            log.append(("open", ordinal))

        def _make_current(self):
            log.append(("current", self.ordinal))

        def _leave_current(self):
            log.append(("leave", self.ordinal))

        def device_count(self): return count
        def device_name(self): return f"Fake {self.ordinal}"
        def compute_capability(self): return (9, 0)
        def total_memory(self): return (self.ordinal + 1) << 30
        def free_memory(self): self._ensure_context(); return 1 << 20

    return Fake


@pytest.fixture
def fake_driver(monkeypatch):
    from tfc.runtime.cuda import _base
    from tfc.runtime.cuda.driver import BACKENDS, reset_driver_cache

    log = []
    monkeypatch.setattr(_base._CURRENT, "driver", None, raising=False)  # no context current on this thread
    monkeypatch.setenv("TFC_CUDA_DRIVER", "cuda-python")
    monkeypatch.setitem(BACKENDS, "cuda-python", _fake_binding(3, log))
    reset_driver_cache()
    yield log
    reset_driver_cache()


def test_a_driver_per_ordinal_and_the_context_switches_between_them(fake_driver):
    from tfc.runtime.cuda import NoCudaDevice, driver

    zero, two = driver(), driver(2)
    assert (zero.ordinal, two.ordinal, driver(0) is zero, driver(2) is two) == (0, 2, True, True)
    assert fake_driver == [("open", 0), ("open", 2)]  # once each
    with pytest.raises(NoCudaDevice, match=r"fake found 3 device\(s\), GPU:3 asked for \(TFC_CUDA_DRIVER=cuda-"):
        driver(3)
    del fake_driver[:]
    zero.free_memory(), zero.free_memory(), two.free_memory(), zero.free_memory()
    assert fake_driver == [("current", 0), ("leave", 0), ("current", 2), ("leave", 2), ("current", 0)]


def test_gpu_devices_lists_every_device_the_driver_reports(fake_driver, monkeypatch):
    from tfc.runtime.cuda.devices import gpu_devices

    monkeypatch.delenv("TFC_GPU_EMULATION")
    assert [(gpu.index, gpu.memory_bytes, gpu.description) for gpu in gpu_devices()] == [
        (i, (i + 1) << 30, f"device: {i}, name: Fake {i}, compute capability: 9.0") for i in range(3)]
    with tf.Session(graph=tf.Graph()) as session:
        assert [(d.name, d.memory_limit_bytes) for d in session.list_devices()[1:]] == \
            [(GPU(i), (i + 1) << 30) for i in range(3)]
