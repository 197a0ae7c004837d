"""``tf.contrib.summary`` (TF 1.x's summary writers) in eager mode, inside a defun, and in a
graph: event files TensorBoard's reader reads, with the tags, steps and values TF 1.x
writes (``simple_value`` scalars, TF's default histogram, ``family/scope/family/name``
tags, the global step by default, nothing recorded unless asked to)."""
import os

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe
import tfc.contrib.summary as summary
from tfc.frontend.summary import histogram_proto, summary_iterator


def _read(logdir: str) -> EventAccumulator:
    accumulator = EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def _scalars(accumulator, tag) -> list:
    return [(e.step, e.value) for e in accumulator.Scalars(tag)]


def test_scalars_and_histograms_written_eagerly(tmp_path):
    logdir = str(tmp_path)
    step = tf.train.get_or_create_global_step()
    writer = summary.create_file_writer(logdir, flush_millis=10000)
    assert summary.scalar("no_writer", 1.0) is None  # no default writer: nothing, None
    (name,) = os.listdir(logdir)
    assert name.startswith("events.out.tfevents.") and name.endswith(".v2")
    with writer.as_default():
        assert not summary.scalar("not_recording", 1.0).numpy()  # TF 1.x's contrib default
        with summary.always_record_summaries():
            for i in range(3):
                step.assign_add(1)
                assert summary.scalar("loss", 0.25 * i).numpy()
                with tf.name_scope("train"):
                    summary.scalar("accuracy", tf.constant(i, tf.int64), family="metrics")
                summary.histogram("weights", np.arange(4.0) * i, step=10 + i)
        with summary.record_summaries_every_n_global_steps(2):
            for i in range(4):
                step.assign_add(1)
                summary.scalar("every_2", float(i))
        with summary.never_record_summaries():
            summary.scalar("never", 1.0)
    events = list(summary_iterator(os.path.join(logdir, name)))  # flushed when as_default() exited
    assert events[0].file_version == "brain.Event:2"
    accumulator = _read(logdir)
    assert sorted(accumulator.Tags()["scalars"]) == ["every_2", "loss", "metrics/train/metrics/accuracy"]
    assert _scalars(accumulator, "loss") == [(1, 0.0), (2, 0.25), (3, 0.5)]
    assert _scalars(accumulator, "metrics/train/metrics/accuracy") == [(1, 0.0), (2, 1.0), (3, 2.0)]
    assert _scalars(accumulator, "every_2") == [(4, 0.0), (6, 2.0)]
    histograms = accumulator.Histograms("weights")
    assert [h.step for h in histograms] == [10, 11, 12]
    want = histogram_proto(np.arange(4.0) * 2)
    got = histograms[2].histogram_value
    assert (got.num, got.sum, got.sum_squares, got.min, got.max) == (want.num, want.sum, want.sum_squares,
                                                                   want.min, want.max)
    assert list(got.bucket_limit) == list(want.bucket_limit) and list(got.bucket) == list(want.bucket)
    with writer.as_default(), summary.always_record_summaries(), \
            pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: bad"):
        summary.histogram("bad", [1.0, float("nan")])
    writer.close()


def test_summaries_inside_a_defun_write_at_every_call(tmp_path):
    writer = summary.create_file_writer(str(tmp_path))

    @tfe.defun
    def step(x):
        with summary.always_record_summaries():
            summary.scalar("doubled", x * 2.0, step=5)
            summary.histogram("x", x, step=5)
        return x + 1.0

    with writer.as_default():
        assert step(tf.constant(3.0)).numpy() == 4.0
        step(tf.constant(4.0))
    assert step.stats["traces"] == 1
    accumulator = _read(str(tmp_path))
    assert _scalars(accumulator, "doubled") == [(5, 6.0), (5, 8.0)]
    assert [h.histogram_value.sum for h in accumulator.Histograms("x")] == [3.0, 4.0]


def test_graph_mode_summary_ops(tmp_path):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [])
        writer = summary.create_file_writer(str(tmp_path), name="graph_writer")
        with writer.as_default(), summary.record_summaries_every_n_global_steps(2):
            summary.scalar("x", x)
        increment = tf.assign_add(step, 1)
        flush = writer.flush()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), summary.summary_writer_initializer_op()])
            for i in range(4):
                sess.run(summary.all_summary_ops(), {x: 1.5 * i})
                sess.run(increment)
            sess.run(flush)
    assert _scalars(_read(str(tmp_path)), "x") == [(0, 0.0), (2, 3.0)]
    assert summary.all_summary_ops() is None
    with pytest.raises(AttributeError, match="tfc does not implement tf.contrib.summary.image yet"):
        summary.image  # noqa: B018
