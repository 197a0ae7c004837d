"""Between-graph replication: a ps process and two worker processes, each worker building its
own graph with tf.train.replica_device_setter and training it with
tf.train.MonitoredTrainingSession (the chief initializes and checkpoints, the other waits for
it), until StopAtStepHook stops them; then the checkpoint restores."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import tfc.compat.v1 as tf

from dist_helpers import HERE, free_port, read_log, start_process, stop_process

LAST_STEP = 24


def finish(process) -> dict:
    line = process.stdout.readline()
    assert line, f"the trainer died: {read_log(process)}"
    return json.loads(line)


def test_monitored_training_sessions_with_replica_device_setter(tmp_path):
    ports = [free_port() for _ in range(3)]
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}", f"localhost:{ports[2]}"]}
    scripts = os.path.join(HERE, "tfc_scripts")
    trainer = os.path.join(scripts, "trainer.py")
    checkpoint_dir = str(tmp_path / "ckpt")
    processes = []
    try:
        ps, _ = start_process(sys.executable, os.path.join(scripts, "task.py"), json.dumps(spec), "ps", 0)
        processes.append(ps)
        # the chief first: it initializes the variables on the ps (the other would wait 30 s for them)
        chief, _ = start_process(sys.executable, trainer, json.dumps(spec), 0, checkpoint_dir, LAST_STEP)
        processes.append(chief)
        other, _ = start_process(sys.executable, trainer, json.dumps(spec), 1, checkpoint_dir, LAST_STEP)
        processes.append(other)
        for process in (chief, other):
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [finish(chief), finish(other)]
        assert sum(r["steps"] for r in results) >= LAST_STEP  # one global step each, from both workers
        for result in results:  # (how the steps split between them is up to the scheduler)
            if result["steps"] >= 2:
                assert result["last"] < result["first"]  # it learnt
        final = results[1] if results[1]["global_step"] >= results[0]["global_step"] else results[0]
        assert final["global_step"] >= LAST_STEP

        # the chief's last checkpoint, restored into a graph of this process
        latest = tf.train.latest_checkpoint(checkpoint_dir)
        assert latest is not None and os.path.exists(latest + ".index")
        with tf.Graph().as_default():
            global_step = tf.train.get_or_create_global_step()
            w = tf.get_variable("w", [3, 1])
            b = tf.get_variable("b", [1])
            with tf.Session() as sess:
                tf.train.Saver().restore(sess, latest)
                saved = sess.run({"w": w, "b": b, "global_step": global_step})
        assert saved["global_step"] >= LAST_STEP and int(latest.rsplit("-", 1)[1]) <= saved["global_step"]
        assert np.isfinite(saved["w"]).all() and not np.all(saved["w"] == 0.0)

        # a new chief on a ps whose variables are gone restores that checkpoint
        stop_process(chief)
        stop_process(other)
        tf.Session.reset(ps_target(spec))
        again, start = start_process(sys.executable, trainer, json.dumps(spec), 0, checkpoint_dir, LAST_STEP)
        processes.append(again)
        restored = json.loads(start)
        assert restored == {"w": saved["w"].tolist(), "b": saved["b"].tolist(),
                            "global_step": int(saved["global_step"])}
        again.stdin.write("go\n")
        again.stdin.flush()
        assert finish(again)["steps"] == 1  # as TF's StopAtStepHook: it looks at the step after one run
    finally:
        for process in processes:
            stop_process(process)


def ps_target(spec) -> str:
    return "grpc://" + spec["ps"][0]
