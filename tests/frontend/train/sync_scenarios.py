"""Queue, accumulator, SyncReplicasOptimizer and input-pipeline scenarios run with TensorFlow (by
tests/fixtures/make_sync_replicas.py, writing tests/fixtures/sync_replicas.json) and with tfc
(tests/frontend/train/test_sync_replicas.py), which compares the two.

Each scenario takes the ``tf`` module (``tensorflow.compat.v1`` in graph mode with
reference variables, or ``tfc.compat.v1``) and returns JSON values. Error messages are
reduced to TF's own status text (TF 2.x wraps it in "Graph execution error: Detected at
node..."), and anonymous resource numbers (``'_3_fifo_queue'``) to ``'_N_fifo_queue'``: they
count the resources the process made before.
"""
import re
import threading

import numpy as np

STEPS = 4
LEARNING_RATE = 0.1
TRUE_W = np.array([[1.0], [-2.0], [0.5]], np.float32)


def status_text(message: str) -> str:
    """The status message of a TF error, without TF 2.x's decorations."""
    match = re.search(r"\nNode: '[^']*'\n(.*)", message, re.S)
    if match:
        message = match.group(1)
    message = message.split("\n\t [[")[0]
    return re.sub(r"'_\d+_", "'_N_", message.strip())


def outcome(sess, fetches, **kwargs):
    """["ok", value] or [error class name, status text]."""
    try:
        value = sess.run(fetches, **kwargs)
    except Exception as e:  # noqa: BLE001 - recorded
        return [type(e).__name__, status_text(getattr(e, "message", str(e)))]
    return ["ok", to_json(value)]


def to_json(value):
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode()
    array = np.asarray(value)
    if array.dtype.kind in "OS":
        return to_json(array.tolist()) if array.ndim else to_json(array.item())
    return array.tolist()


def queues(tf):
    """FIFO order, batches, names, padding, closing, errors."""
    out = {}
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, [tf.int32, tf.float32], shapes=[[], [2]])
        enqueue_many = q.enqueue_many([[1, 2, 3], [[1.0, 1.5], [2.0, 2.5], [3.0, 3.5]]])
        one = q.enqueue([4, [4.0, 4.5]])
        size = q.size()
        dequeue = q.dequeue()
        dequeue_many = q.dequeue_many(2)
        up_to = q.dequeue_up_to(3)
        close = q.close()
        closed = q.is_closed()
        named = tf.FIFOQueue(3, [tf.int32, tf.string], shapes=[[], []], names=["n", "s"], shared_name="named_q")
        named_again = tf.FIFOQueue(3, [tf.int32, tf.string], shapes=[[], []], names=["n", "s"],
                                   shared_name="named_q", name="again")
        named_put = named.enqueue({"n": 7, "s": "seven"})
        named_get = named_again.dequeue()
        named_close = named.close()
        named_get_closed = named_again.dequeue()
        unshaped = tf.FIFOQueue(3, tf.float32)
        unshaped_put = unshaped.enqueue([5.0, 6.0])  # (the values past the components are ignored)
        unshaped_get_many = unshaped.dequeue_many(1)
        unshaped_get = unshaped.dequeue()
        padding = tf.PaddingFIFOQueue(5, [tf.int32, tf.string], shapes=[[None], [None]])
        pad_a = padding.enqueue([[1, 2, 3], ["a"]])
        pad_b = padding.enqueue([[4], ["b", "c"]])
        pad_get = padding.dequeue_many(2)
        shuffle = tf.RandomShuffleQueue(10, 0, tf.int32, shapes=[[]], seed=7)
        shuffle_put = shuffle.enqueue_many([list(range(6))])
        shuffle_close = shuffle.close()
        shuffle_get = shuffle.dequeue_up_to(10)
        shuffle_get_again = shuffle.dequeue()
        out["names"] = [q.name, named.name, padding.name, shuffle.name, q.dtypes[1].name,
                        [str(s) for s in q.shapes], named.names]
        out["ops"] = [[op.name, op.type] for op in tf.get_default_graph().get_operations() if op.type != "Const"]
        with tf.Session() as sess:
            out["run"] = [
                outcome(sess, enqueue_many), outcome(sess, size), outcome(sess, one), outcome(sess, size),
                outcome(sess, dequeue), outcome(sess, dequeue_many), outcome(sess, closed), outcome(sess, close),
                outcome(sess, closed), outcome(sess, one), outcome(sess, up_to), outcome(sess, up_to),
                outcome(sess, dequeue), outcome(sess, dequeue_many),
                outcome(sess, named_put), outcome(sess, named_get), outcome(sess, named_close),
                outcome(sess, named_get_closed),
                outcome(sess, unshaped_put), outcome(sess, unshaped_get_many), outcome(sess, unshaped_get),
                outcome(sess, pad_a), outcome(sess, pad_b), outcome(sess, pad_get),
                outcome(sess, shuffle_put), outcome(sess, shuffle_close),
            ]
            values = sess.run(shuffle_get)
            out["shuffled"] = sorted(values.tolist())
            out["shuffle_after"] = outcome(sess, shuffle_get_again)
    return out


def accumulators(tf):
    """Averages, stale gradients, the time step, errors."""
    out = {}
    with tf.Graph().as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc")
        step = tf.placeholder(tf.int64, [])
        grad = tf.placeholder(tf.float32, [None])
        apply = acc.apply_grad(grad, local_step=step)
        take = acc.take_grad(2)
        count = acc.num_accumulated()
        set_step = acc.set_global_step(3)
        take_zero = acc.take_grad(0)
        total = tf.ConditionalAccumulator(tf.float32, shape=[2], reduction_type="SUM", name="total")
        total_apply = total.apply_grad([1.0, 2.0])
        total_take = total.take_grad(1)
        out["ops"] = [[op.name, op.type] for op in tf.get_default_graph().get_operations() if op.type != "Const"]
        out["shapes"] = [str(take.shape), acc.name, acc.dtype.name]
        with tf.Session() as sess:
            run = []
            for g, s in (([1.0, 2.0], 0), ([3.0, 5.0], 0)):
                run.append(outcome(sess, apply, feed_dict={grad: g, step: s}))
            run += [outcome(sess, count), outcome(sess, take), outcome(sess, count)]
            for g, s in (([1.0, 2.0], 0), ([7.0, 7.0], 1), ([2.0, 2.0], 5)):  # step 0 is stale now
                run.append(outcome(sess, apply, feed_dict={grad: g, step: s}))
            run += [outcome(sess, count), outcome(sess, take), outcome(sess, set_step)]
            run.append(outcome(sess, apply, feed_dict={grad: [1.0, 1.0], step: 2}))  # stale after set_global_step
            run.append(outcome(sess, apply, feed_dict={grad: [1.0, 1.0], step: 3}))
            run.append(outcome(sess, count))
            run.append(outcome(sess, apply, feed_dict={grad: [1.0, 1.0, 1.0], step: 3}))
            run.append(outcome(sess, take_zero))
            run += [outcome(sess, total_apply), outcome(sess, total_apply), outcome(sess, total_take)]
            out["run"] = run
    return out


def _drain(tf, sess, fetches, limit=50):
    """Run ``fetches`` until OutOfRangeError: [values..., [error class, message]]."""
    out = []
    for _ in range(limit):
        try:
            out.append(to_json(sess.run(fetches)))
        except tf.errors.OutOfRangeError as e:
            out.append(["OutOfRangeError", status_text(e.message)])
            break
    return out


def input_pipelines(tf):
    """tf.train.batch and the input producers, fed by their QueueRunner threads, until the
    epochs run out."""
    out = {}
    with tf.Graph().as_default() as graph:
        numbers = tf.train.range_input_producer(5, num_epochs=2, shuffle=False)
        batched = tf.train.batch([numbers.dequeue() * 10], batch_size=3, allow_smaller_final_batch=True)
        names = tf.train.string_input_producer(["a", "b", "c"], num_epochs=1, shuffle=False, capacity=4)
        name = names.dequeue()
        first, second = tf.train.slice_input_producer([tf.constant([1, 2, 3]), tf.constant([[1.0], [2.0], [3.0]])],
                                                      num_epochs=1, shuffle=False)
        rows = tf.train.limit_epochs(tf.constant([[1, 2], [3, 4]]), num_epochs=1)
        padded = tf.train.batch({"row": rows, "n": tf.constant([7, 8])}, batch_size=2, enqueue_many=True,
                                shapes=[[], [None]], dynamic_pad=True, name="padded")
        joined = tf.train.batch_join([[tf.constant(1)], [tf.constant(2)]], batch_size=4)
        shuffled = tf.train.shuffle_batch([tf.train.limit_epochs(tf.range(8), 1)], batch_size=8, capacity=16,
                                          min_after_dequeue=2, enqueue_many=True, seed=1,
                                          allow_smaller_final_batch=True)
        out["shapes"] = [str(t.shape) for t in (batched, name, first, second, padded["row"], padded["n"], joined,
                                                 shuffled)]
        out["ops"] = [[op.name, op.type] for op in graph.get_operations() if op.type != "Const"]
        out["queue_runners"] = [[qr.name, [op.name for op in qr.enqueue_ops]]
                                for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)]
        out["summaries"] = [t.op.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)]
        meta = tf.train.export_meta_graph()
        with tf.Graph().as_default():  # the queue runners travel as QueueRunnerDefs
            tf.train.import_meta_graph(meta, import_scope="again")
            out["imported_queue_runners"] = [
                [qr.name, [op.name for op in qr.enqueue_ops], qr.close_op.name, qr.cancel_op.name,
                 [cls.__name__ for cls in qr.queue_closed_exception_types]]
                for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            out["batched"] = _drain(tf, sess, batched)
            out["names"] = _drain(tf, sess, name)
            out["slices"] = _drain(tf, sess, [first, second])
            out["padded"] = _drain(tf, sess, padded)
            got = sess.run(joined).tolist()  # (which thread's elements come first is up to the scheduler)
            out["joined"] = [len(got), set(got) <= {1, 2}]
            got = sess.run(shuffled).tolist()
            out["shuffled"] = [sorted(got), got != sorted(got)]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return out


def worker_data(index):
    rng = np.random.RandomState(index)
    xs = rng.rand(8, 3).astype(np.float32)
    ys = (xs @ TRUE_W + 0.25).astype(np.float32)
    return xs, ys


def build_sync_model(tf, replicas=2, prefix=""):
    """The model both workers train: a linear regression, GradientDescent(0.1) wrapped in a
    SyncReplicasOptimizer aggregating ``replicas`` gradients (``prefix``: of the variables'
    names, e.g. on a cluster that other tests use too)."""
    if prefix:
        global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name=prefix + "global_step",
                                  collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.GLOBAL_STEP])
    else:
        global_step = tf.train.get_or_create_global_step()
    w = tf.get_variable(prefix + "w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable(prefix + "b", [1], initializer=tf.zeros_initializer())
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LEARNING_RATE),
                                         replicas_to_aggregate=replicas, total_num_replicas=replicas)
    train_op = opt.minimize(loss, global_step=global_step)
    return {"global_step": global_step, "w": w, "b": b, "x": x, "y": y, "loss": loss, "opt": opt,
            "train_op": train_op}


def sync_replicas_threads(tf, steps=STEPS):
    """One session, the chief's hook (no initial tokens), two worker threads in lockstep
    (a barrier between steps): each step averages one gradient of each worker."""
    out = {}
    with tf.Graph().as_default() as graph:
        model = build_sync_model(tf)
        opt = model["opt"]
        hook = opt.make_session_run_hook(True, num_tokens=0)
        hook.begin()
        init = tf.global_variables_initializer()
        local_init = tf.local_variables_initializer()
        local_step = graph.get_tensor_by_name("sync_rep_local_step:0")
        out["ops"] = [[op.name, op.type] for op in graph.get_operations()
                      if not op.name.startswith(("gradients", "report_uninitialized"))]
        out["collections"] = {"local_variables": [v.name for v in tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES)],
                              "queue_runners": len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS))}
        sess = tf.Session()
        sess.run([init, local_init])
        coord = tf.train.Coordinator()
        hook.after_create_session(sess, coord)
        barrier = threading.Barrier(2)
        losses = [[], []]
        failures = []

        def worker(index):
            xs, ys = worker_data(index)
            try:
                for _ in range(steps):
                    _, value = sess.run([model["train_op"], model["loss"]], {model["x"]: xs, model["y"]: ys})
                    losses[index].append(float(value))
                    barrier.wait(60)
            except Exception as e:  # noqa: BLE001 - reported
                failures.append(repr(e))
                barrier.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        values = sess.run({"w": model["w"], "b": model["b"], "global_step": model["global_step"],
                           "local_step": local_step})
        out["values"] = to_json(values)
        out["losses"] = losses
        out["failures"] = failures
        coord.request_stop()
        sess.close()  # cancels the chief's take_grad, waiting for the next gradients
        coord.join(stop_grace_period_secs=10)
    return out


def reference_sync_sgd(steps=STEPS):
    """What synchronous SGD averaging both workers' gradients gives (numpy, float64)."""
    w = np.zeros((3, 1))
    b = np.zeros(1)
    data = [worker_data(i) for i in range(2)]
    for _ in range(steps):
        grads_w, grads_b = [], []
        for xs, ys in data:
            err = xs.astype(np.float64) @ w + b - ys
            grads_w.append(2.0 * xs.T @ err / len(xs))
            grads_b.append(2.0 * err.sum(axis=0) / len(xs))
        w = w - LEARNING_RATE * np.mean(grads_w, axis=0)
        b = b - LEARNING_RATE * np.mean(grads_b, axis=0)
    return {"w": w.tolist(), "b": b.tolist()}


SCENARIOS = {"queues": queues, "accumulators": accumulators, "sync_replicas_threads": sync_replicas_threads,
             "input_pipelines": input_pipelines}
