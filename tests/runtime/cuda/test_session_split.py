"""Session steps split between the CPU and the GPU (tfc/runtime/device_split.py): ops pinned
to the CPU (or without a GPU kernel) run there, the rest on the GPU, in device stages that
copy only the tensors crossing between them. TFC_GPU_EMULATION=1 stands in for the GPU."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors
from tfc.frontend.registry import lookup_op_type
from tfc.runtime.cuda.executable import EmulatedDevice

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture(autouse=True)
def emulated_gpu(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")


def _sandwich(split: bool):
    """x -> GPU: a = 2x + 1, e = x * 3 -> CPU: b = sum(a, 1), m = max(b) -> GPU: c = e + b[:, None], d = c * m.
    Every value is an exact small float (the CPU and GPU agree bit for bit)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/gpu:0" if split else ""):
            a = tf.add(x * 2.0, 1.0, name="a")
            e = tf.multiply(x, 3.0, name="e")
        with tf.device("/cpu:0"):
            b = tf.reduce_sum(a, axis=1, name="b")
            m = tf.reduce_max(b, name="m")
        with tf.device("/gpu:0" if split else ""):
            c = tf.add(e, tf.expand_dims(b, 1), name="c")
            d = tf.multiply(c, m, name="d")
    return graph, x, a, e, b, m, c, d


XV = np.arange(6, dtype=np.float32).reshape(2, 3)


def _expected(xv):
    a = xv * 2 + 1
    b = a.sum(1)
    c = xv * 3 + b[:, None]
    return a, b, b.max(), c, c * b.max()


def test_a_cpu_block_between_gpu_ops_runs_in_three_stages():
    graph, x, a, e, b, m, c, d = _sandwich(split=True)
    with tf.Session(graph=graph) as session:
        got_c, got_d = session.run([c, d], {x: XV})
        [step] = session.compiled_steps()
        assert step.target == "split"
        assert [stage.device for stage in step.stages] == ["GPU", "CPU", "GPU"]
        assert [sorted(op.name for op in stage.ops) for stage in step.stages] == \
            [["a", "e", "mul"], ["b", "m"], ["ExpandDims", "c", "d"]]
        assert [program.target for program in step.compiled_stages()] == ["cuda", "cpu", "cuda"]
        assert session.stats["compiles"] == 3
        bigger = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0
        _, got_big = session.run([c, d], {x: bigger})  # another batch: no recompilation
        assert session.stats["compiles"] == 3
    _, _, _, want_c, want_d = _expected(XV)
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(got_d, want_d)
    np.testing.assert_array_equal(got_big, _expected(bigger)[4])
    cpu_graph, cx, *_, cc, cd = _sandwich(split=False)
    with tf.Session(graph=cpu_graph) as session:  # no op on the GPU: one CPU program, as before
        cpu_c, cpu_d = session.run([cc, cd], {cx: XV})
        assert [step.target for step in session.compiled_steps()] == ["cpu"]
    np.testing.assert_array_equal(got_c, cpu_c)
    np.testing.assert_array_equal(got_d, cpu_d)


def test_only_the_boundary_tensors_cross_devices(monkeypatch):
    downloads = []
    original = EmulatedDevice.download

    def download(self, destination, source, nbytes):
        downloads.append(nbytes)
        return original(self, destination, source, nbytes)

    monkeypatch.setattr(EmulatedDevice, "download", download)
    graph, x, a, e, b, m, c, d = _sandwich(split=True)
    with tf.Session(graph=graph) as session:
        session.run(d, {x: XV})
        [step] = session.compiled_steps()
        # a goes down to the CPU, b and m come up: e (GPU -> GPU) stays in device memory
        assert sorted((t.name, src, dst) for t, src, dst in step.crossings) == \
            [("a:0", "GPU", "CPU"), ("b:0", "CPU", "GPU"), ("m:0", "CPU", "GPU")]
        first = session.stats["device_copies"]
        assert first == 3
        downloads.clear()
        for _ in range(3):
            session.run(d, {x: XV})
        assert session.stats["device_copies"] == 3 + 3 * 3  # one copy per crossing edge per step
        # per step (the 8-byte status word read after a launch that may fail aside): a (2x3 floats, for
        # the CPU stage) and the fetched d; never e
        assert [n for n in downloads if n != 8] == [24, 24] * 3
        gpu_stage = step.stages[0]
        assert [t.name for t in gpu_stage.fetches] == ["a:0", "e:0"]
        assert gpu_stage.resident_outputs == {1}
        assert step.stages[2].resident_inputs == {[t.name for t in step.stages[2].inputs].index("e:0")}


def test_device_placement_log_names_both_devices(capfd):
    graph, x, a, e, b, m, c, d = _sandwich(split=True)
    with graph.as_default():
        with tf.device("/cpu:0"):
            f = tf.negative(d, name="f")
        g = tf.add(f, 1.0, name="g")  # no device: the GPU, as TF places it
    with tf.Session(graph=graph, config=tf.ConfigProto(log_device_placement=True)) as session:
        np.testing.assert_array_equal(session.run(g, {x: XV}), 1.0 - _expected(XV)[4])
        [step] = session.compiled_steps()
        assert [stage.device for stage in step.stages] == ["GPU", "CPU", "GPU", "CPU", "GPU"]
    lines = capfd.readouterr().err.splitlines()
    for line in (f"a: (Add): {GPU}", f"e: (Mul): {GPU}", f"b: (Sum): {CPU}", f"m: (Max): {CPU}",
                 f"c: (Add): {GPU}", f"d: (Mul): {GPU}", f"f: (Neg): {CPU}", f"g: (Add): {GPU}"):
        assert line in lines


def test_a_cpu_side_and_a_gpu_side_tensor_in_one_run():
    graph, x, a, e, b, m, c, d = _sandwich(split=True)
    with graph.as_default():
        with tf.device("/cpu:0"):
            counter = tf.Variable(10.0, name="counter")
            bump = tf.assign_add(counter, m, name="bump")  # on the CPU, with its variable
        with tf.device("/gpu:0"):
            scale = tf.Variable(2.0, name="scale")
            scaled = tf.multiply(d, scale, name="scaled")
    with tf.Session(graph=graph) as session:
        session.run(tf.variables_initializer([counter, scale]))
        got_b, got_e, got_bump, got_scaled = session.run([b, e, bump, scaled], {x: XV})
        values = session._variables.values
        assert values.device.on_device("scale")  # its initializer ran on the GPU (a stage of that step)
        assert [step.target for step in session.compiled_steps()] == ["split", "split"]
        assert "counter" not in values.device._buffers  # a CPU variable stays in host memory
        got_counter = session.run(counter)
    _, want_b, want_m, _, want_d = _expected(XV)
    np.testing.assert_array_equal(got_b, want_b)
    np.testing.assert_array_equal(got_e, XV * 3)
    assert got_bump == 10.0 + want_m == got_counter
    np.testing.assert_array_equal(got_scaled, want_d * 2.0)


def _train(mode: str, steps: int = 5):
    """(losses, w, b, per step kind [(target, stage devices, crossing tensors)], the GPU holds the newest w).

    mode "cpu": no device anywhere; "split": the input pipeline (a dataset, a cast, a one-hot) on
    the CPU, variables and model on /gpu:0; "cpu-variables": the variables on the CPU too."""
    graph = tf.Graph()
    rng = np.random.default_rng(7)
    features = rng.integers(0, 255, (32, 6)).astype(np.int32)
    labels = rng.integers(0, 3, 32).astype(np.int64)
    pipeline = "" if mode == "cpu" else "/cpu:0"
    variables = {"cpu": "", "split": "/gpu:0", "cpu-variables": "/cpu:0"}[mode]
    model = "" if mode == "cpu" else "/gpu:0"
    with graph.as_default():
        with tf.device(pipeline):
            dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8)
            fx, fy = dataset.make_one_shot_iterator().get_next()
            x = tf.subtract(tf.cast(fx, tf.float32) / 255.0, 0.5, name="x")
            y = tf.one_hot(fy, 3, name="y")
        with tf.device(variables):
            w = tf.Variable(tf.constant(np.linspace(-0.5, 0.5, 18, dtype=np.float32).reshape(6, 3)), name="w")
            b = tf.Variable(tf.zeros([3]), name="b")
        with tf.device(model):
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
            train = tf.train.MomentumOptimizer(0.5, 0.9).minimize(loss)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            losses = [session.run([loss, train])[0] for _ in range(steps)]
            device = session._variables.values.device
            on_device = device is not None and device.on_device("w")
            kinds = [(step.target, [s.device for s in getattr(step, "stages", [])],
                      sorted(t.name for t, _, _ in getattr(step, "crossings", [])))
                     for step in session.compiled_steps()]
            weights, bias = session.run([w, b])
    return np.array(losses), weights, bias, kinds, on_device


def test_a_training_step_with_the_input_pipeline_on_the_cpu_matches_the_cpu_session():
    losses, weights, bias, kinds, on_device = _train("split")
    cpu_losses, cpu_weights, cpu_bias, cpu_kinds, _ = _train("cpu")
    assert [k[0] for k in cpu_kinds] == ["cpu", "cpu"]
    # the initializer runs wholly on the GPU (one program, as before); the training step in two stages
    assert kinds == [("cuda", [], []), ("split", ["CPU", "GPU"], ["x:0", "y:0"])]
    assert on_device  # the model's variables live in device memory
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    np.testing.assert_allclose(weights, cpu_weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bias, cpu_bias, rtol=1e-5, atol=1e-7)
    assert losses[-1] != losses[0]


def test_variables_pinned_to_the_cpu_stay_there_and_their_values_cross():
    losses, weights, bias, kinds, on_device = _train("cpu-variables")
    cpu_losses, cpu_weights, cpu_bias, _, _ = _train("cpu")
    assert not on_device
    target, devices, crossings = kinds[1]
    assert (target, devices) == ("split", ["CPU", "GPU", "CPU"])
    # up: the batch and the variables' values; down: the two gradients the CPU applies
    assert crossings == ["b/read:0", "gradients/MatMul_grad/tuple/control_dependency_1:0",
                         "gradients/add_grad/tuple/control_dependency_1:0", "w/read:0", "x:0", "y:0"]
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    np.testing.assert_allclose(weights, cpu_weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bias, cpu_bias, rtol=1e-5, atol=1e-7)


def test_an_op_without_a_gpu_kernel_runs_on_the_cpu(monkeypatch, capfd):
    monkeypatch.setattr(lookup_op_type("Neg"), "gpu_kernel", False, raising=False)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            a = tf.multiply(tf.constant([1.0, 2.0]), 3.0, name="a")
        n = tf.negative(a, name="n")  # no device, no GPU kernel: the CPU
        with tf.device("/gpu:0"):
            out = tf.add(n, 1.0, name="out")
            pinned = tf.negative(a, name="pinned")
    with tf.Session(graph=graph, config=tf.ConfigProto(log_device_placement=True)) as session:
        np.testing.assert_array_equal(session.run(out), [-2.0, -5.0])
        assert [s.device for s in session.compiled_steps()[0].stages] == ["GPU", "CPU", "GPU"]
        with pytest.raises(errors.InvalidArgumentError, match="Could not satisfy explicit device specification "
                                                               "'/device:GPU:0' because no supported kernel for GPU"):
            session.run(pinned)
    assert f"n: (Neg): {CPU}" in capfd.readouterr().err.splitlines()
    with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=True)) as session:
        np.testing.assert_array_equal(session.run(pinned), [-3.0, -6.0])
        assert session.compiled_steps()[0].target == "split"


def test_a_cond_placed_on_both_devices_runs_on_one():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:0"):
            s = tf.reduce_sum(x, name="s")
        with tf.device("/gpu:0"):
            r = tf.cond(s > 0.0, lambda: x * 2.0, lambda: x - 1.0)
            out = tf.multiply(r, 3.0, name="out")
    with tf.Session(graph=graph) as session:
        np.testing.assert_array_equal(session.run(out, {x: [1.0, 2.0]}), [6.0, 12.0])
        np.testing.assert_array_equal(session.run(out, {x: [-1.0, -2.0]}), [-6.0, -9.0])
        [step] = session.compiled_steps()
        assert [stage.device for stage in step.stages] == ["CPU", "GPU"]


def test_a_cond_split_between_devices_is_refused_naming_the_edge():
    from tfc.passes.lower import prune
    from tfc.runtime import device_split

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        r = tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.multiply(x, 2.0, name="twice"), lambda: x - 1.0)
        out = tf.multiply(r, 3.0, name="out")
    ops = prune([out], [], [x])
    # what the placer never does (a cond goes to one device), forced: the branch's op on the CPU
    placement = {op: "CPU" if op.name == "cond/twice" else "GPU" for op in ops}
    with pytest.raises(errors.UnimplementedError, match="crosses between device stages inside a while loop or a "
                                                        "tf.cond branch") as caught:
        device_split.build(None, ops, placement, [out], [], [x], [], None)
    assert "'cond/twice' (CPU)" in str(caught.value)


def test_a_while_loop_on_the_gpu_between_cpu_ops():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        with tf.device("/cpu:0"):
            start = tf.abs(x, name="start")
        with tf.device("/gpu:0"):
            _, acc = tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * 2.0 + 1.0), [tf.constant(0), start])
        with tf.device("/cpu:0"):
            out = tf.reduce_sum(acc, name="out")
    with tf.Session(graph=graph) as session:
        got_out, got_acc = session.run([out, acc], {x: [1.0, -2.0, 3.0]})
        [step] = session.compiled_steps()
        assert [stage.device for stage in step.stages] == ["CPU", "GPU", "CPU"]
        assert sorted((t.name, src, dst) for t, src, dst in step.crossings) == \
            [("start:0", "CPU", "GPU"), ("while/Exit_1:0", "GPU", "CPU")]
    np.testing.assert_array_equal(got_acc, [31.0, 47.0, 63.0])  # ((|x| * 2 + 1) four times)
    assert got_out == 141.0


def test_split_steps_on_the_cuda_device(monkeypatch):
    from tfc.runtime.cuda import available

    monkeypatch.delenv("TFC_GPU_EMULATION", raising=False)
    if not available():
        pytest.skip("no CUDA device")
    graph, x, a, e, b, m, c, d = _sandwich(split=True)
    with tf.Session(graph=graph) as session:
        for _ in range(2):  # the second run passes e in device memory again
            got_c, got_d = session.run([c, d], {x: XV})
            np.testing.assert_array_equal(got_c, _expected(XV)[3])
            np.testing.assert_array_equal(got_d, _expected(XV)[4])
        assert session.stats["device_copies"] == 6
    losses, weights, bias, kinds, on_device = _train("split")
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    emulated_losses, emulated_weights, *_ = _train("split")
    assert kinds[1][:2] == ("split", ["CPU", "GPU"]) and on_device
    np.testing.assert_allclose(losses, emulated_losses, rtol=1e-5)
    np.testing.assert_allclose(weights, emulated_weights, rtol=1e-5, atol=1e-6)
