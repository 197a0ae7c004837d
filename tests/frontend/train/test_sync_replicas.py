"""Queues, ConditionalAccumulator and tf.train.SyncReplicasOptimizer in one process, against
TensorFlow's record (tests/fixtures/sync_replicas.json, written by
tests/fixtures/make_sync_replicas.py from the scenarios in sync_scenarios.py)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import sync_scenarios as sc
import tfc.compat.v1 as tf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sync_replicas.json")
# TF 1.15's chief QueueRunner runs on a dummy queue; TF 2.x's (the recording's) on sync_token_q
TF115_ONLY = [["dummy_queue", "FIFOQueueV2"], ["dummy_queue_Close", "QueueCloseV2"],
              ["dummy_queue_Close_1", "QueueCloseV2"]]
TF2_ONLY = [["sync_token_q_Close", "QueueCloseV2"], ["sync_token_q_Close_1", "QueueCloseV2"]]


@pytest.fixture(scope="module")
def recorded():
    with open(FIXTURE) as f:
        return json.load(f)


def test_queues_like_tensorflow(recorded):
    got, want = sc.queues(tf), recorded["queues"]
    assert got["run"][4] == ["ok", [1, [1.0, 1.5]]]  # first in, first out
    assert got["run"][11][0] == "OutOfRangeError"
    assert got == want


def test_accumulators_like_tensorflow(recorded):
    got, want = sc.accumulators(tf), recorded["accumulators"]
    assert got["run"][3] == ["ok", [2.0, 3.5]]  # the mean of [1, 2] and [3, 5]
    assert got["run"][9] == ["ok", [4.5, 4.5]]  # the stale [1, 2] dropped: the mean of [7, 7] and [2, 2]
    assert got == want


def test_sync_replicas_two_worker_threads_like_tensorflow(recorded):
    got, want = sc.sync_replicas_threads(tf), recorded["sync_replicas_threads"]
    assert got["failures"] == []
    assert got["values"]["global_step"] == want["values"]["global_step"] == sc.STEPS
    assert got["values"]["local_step"] == want["values"]["local_step"] == sc.STEPS
    for name in ("w", "b"):
        np.testing.assert_allclose(got["values"][name], want["values"][name], rtol=1e-6)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-6)
    reference = sc.reference_sync_sgd()  # the average of both workers' gradients at every step
    np.testing.assert_allclose(got["values"]["w"], reference["w"], rtol=1e-5)
    # TF's graph (nodes and types; the gradients are TF 1.15's, not TF 2's, in both)
    sync_ops = lambda ops: [op for op in ops if not op[0].startswith(("gradients", "report_uninitialized"))
                            and op[0] not in ("Mean", "Const", "loss")]  # noqa: E731
    assert [op for op in sync_ops(got["ops"]) if op not in TF115_ONLY] == \
        [op for op in sync_ops(want["ops"]) if op not in TF2_ONLY]
    assert got["collections"] == want["collections"] == {"local_variables": ["sync_rep_local_step:0"],
                                                         "queue_runners": 0}


def test_sync_replicas_optimizer_api_errors():
    with tf.Graph().as_default():
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=3,
                                             total_num_replicas=1)
        with pytest.raises(ValueError, match=r"Should be called after apply_gradients\(\)\."):
            opt.get_chief_queue_runner()
        with pytest.raises(ValueError, match=r"get_init_tokens_op\(\) should be called after apply_gradients"):
            opt.get_init_tokens_op()
        v = tf.Variable([1.0], name="v")
        with pytest.raises(ValueError, match="Global step is required to check staleness"):
            opt.apply_gradients([(tf.constant([1.0]), v)])
        with pytest.raises(ValueError, match="Must supply at least one variable"):
            opt.apply_gradients([], global_step=tf.train.get_or_create_global_step())
        opt.apply_gradients([(tf.constant([1.0]), v)], global_step=tf.train.get_or_create_global_step())
        with pytest.raises(ValueError, match=r"Too few tokens to finish the first step: 1 \(given\) vs 2 \(needed\)"):
            opt.get_init_tokens_op(1)
        assert opt.get_init_tokens_op().type == "QueueEnqueueManyV2"
        assert opt.get_init_tokens_op(2).type == "QueueEnqueueManyV2"
        runner = opt.get_chief_queue_runner()
        assert runner.queue.name == "dummy_queue" and [op.type for op in runner.enqueue_ops] == ["QueueEnqueueManyV2"]
        accumulator = tf.get_default_graph().get_operation_by_name("sync_replicas/conditional_accumulator")
        assert accumulator.get_attr("shared_name") in (b"v:0/grad_accum", "v:0/grad_accum")


def test_input_pipelines_like_tensorflow(recorded):
    got, want = sc.input_pipelines(tf), recorded["input_pipelines"]
    # two epochs of 0..4 (times 10) in batches of 3, the last one smaller, then the queues close
    assert got["batched"][:4] == [[0, 10, 20], [30, 40, 0], [10, 20, 30], [40]]
    assert got["batched"][4][0] == "OutOfRangeError"
    assert got["padded"][0] == {"n": [7, 8], "row": [[1, 2], [3, 4]]}
    assert got == want


def test_queue_runner_namespace():
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
    assert tf.train.queue_runner.start_queue_runners is tf.train.start_queue_runners
    assert tf.queue.FIFOQueue is tf.FIFOQueue and tf.io.PaddingFIFOQueue is tf.PaddingFIFOQueue
