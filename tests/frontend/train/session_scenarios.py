"""Training-session scenarios run the same way by real TensorFlow and by tfc.

tests/fixtures/make_tf_monitored_session.py runs every scenario with TensorFlow
(``tensorflow.compat.v1``) and writes what happened to tests/fixtures/tf_monitored_session.json;
the tests in this folder run them with ``tfc.compat.v1`` and compare. Each scenario takes
the ``tf`` module and a fresh directory and returns plain JSON data: fetched values, the
files written (event files as ``<events>``), the ``checkpoint`` state file, the
``tensorflow`` logger's lines and the events of the event files, with the directory
replaced by ``<DIR>`` and timings by ``<t>``.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time

import numpy as np

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "tf_monitored_session.json")

# Lines of the TF record that tfc does not print, on purpose:
# - TF 2.x's CheckpointSaverHook logs "Calling checkpoint listeners before/after saving
#   checkpoint N..." around a save; TF 1.15 does not.
# - TF's Saver logs deprecation warnings of its own helpers (get_checkpoint_mtimes,
#   remove_checkpoint) with TF-internal file names and lines.
# - "It seems that global step ... has not been increased" from StepCounterHook comes from
#   a race in TF: the global step's read and the train op's increment run in one
#   Session.run with nothing ordering them, so TF sometimes reads the new value (the
#   records of several runs differ in these lines only). tfc reads before the increment.
TF2_ONLY_LOG_LINES = re.compile(r"^INFO:Calling checkpoint listeners (before|after) saving checkpoint \d+\.\.\.$")
_NOT_EXPECTED = (TF2_ONLY_LOG_LINES, re.compile(r"^WARNING:From saver\.py:\d+: "),
                 re.compile(r"^WARNING:It seems that global step \(tf\.train\.get_global_step\) has not been "
                            r"increased\."))


def _strip(data):
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_strip(v) for v in data if not (isinstance(v, str) and any(p.match(v) for p in _NOT_EXPECTED))]
    return data


def recorded(name: str):
    """What TensorFlow did in scenario ``name`` (tests/fixtures/tf_monitored_session.json),
    without the lines tfc does not print (see above)."""
    import json

    with open(FIXTURE) as f:
        return _strip(json.load(f)[name])


def run(tf, name: str, directory) -> dict:
    """Run scenario ``name`` with ``tf`` in ``directory``; the result as JSON data."""
    import json

    workdir = os.path.realpath(str(directory))
    return json.loads(json.dumps(SCENARIOS[name](tf, workdir)))


# -- recording helpers ---------------------------------------------------------------------
class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.levelname}:{record.getMessage()}")


@contextlib.contextmanager
def captured_logs(tf, workdir):
    """The ``tensorflow`` logger's lines (INFO and up) while the block runs, normalized."""
    tf.logging.set_verbosity(tf.logging.INFO)
    logger = logging.getLogger("tensorflow")
    handler = _Lines()
    logger.addHandler(handler)
    out: list = []
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        out.extend(normalize(line, workdir) for line in handler.lines)


def normalize(text: str, workdir: str) -> str:
    text = text.replace(workdir, "<DIR>")
    text = re.sub(r"^(WARNING:From )(\S+):(\d+):", lambda m: f"{m[1]}{os.path.basename(m[2])}:{m[3]}:", text)
    text = re.sub(r"\(\d+\.\d+ sec\)", "(<t> sec)", text)
    text = re.sub(r" object at 0x[0-9a-f]+>", " object at <address>>", text)
    text = re.sub(r"/sec: [0-9.e+-]+(inf)?", "/sec: <rate>", text)
    return text


def files(directory: str) -> list:
    """The directory's files; its event files (one per writer, named by the second it
    opened: TF overwrites one of the same second) are one ``<events>`` entry."""
    return sorted({"<events>" if name.startswith("events.out.tfevents.") else name for name in os.listdir(directory)})


def state_file(directory: str, workdir: str) -> str:
    with open(os.path.join(directory, "checkpoint")) as f:
        return f.read().replace(workdir, "<DIR>")


def events(tf, directory: str, workdir: str) -> list:
    """[[step, what]] of every event in the directory's event files (in file order)."""
    tf.summary.FileWriterCache.clear()  # close (flush) the writers hooks share
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.startswith("events.out.tfevents."):
            continue
        for event in tf.train.summary_iterator(os.path.join(directory, name)):
            kind = event.WhichOneof("what")
            if kind == "session_log":
                log = event.session_log
                what = ["session_log", int(log.status), log.checkpoint_path.replace(workdir, "<DIR>")]
            elif kind == "summary":
                what = ["summary"] + [[v.tag, "<rate>" if v.tag.endswith("/sec") else round(float(v.simple_value), 5)]
                                      for v in event.summary.value]
            else:
                what = [kind]
            out.append([int(event.step), what])
    return out


def _model(tf, with_summary=False):
    """A 2-parameter linear least squares trained by gradient descent, with a global step."""
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    y = tf.constant([[1.0], [2.0]])
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer(0.1))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y), name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
    if with_summary:
        tf.summary.scalar("loss", loss)
    return w, loss, global_step, train_op


def _f(value):
    """JSON data of a fetched value (bytes decoded)."""
    value = np.asarray(value).tolist()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value.decode() if isinstance(value, bytes) else value


def _error(e) -> list:
    return [type(e).__name__, str(e)]


# -- scenarios -----------------------------------------------------------------------------
def mts_checkpoints(tf, workdir):
    """MonitoredTrainingSession: StopAtStepHook(num_steps=5), checkpoints every 2 steps,
    summaries and step counts every 2 steps; then a second session on the same directory
    restores step 5 and runs to last_step=8 (max_to_keep=5 drops model.ckpt-0)."""
    out = {}
    d = os.path.join(workdir, "train")
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf, with_summary=True)
        hooks = [tf.train.StopAtStepHook(num_steps=5),
                 tf.train.LoggingTensorHook({"loss": loss, "step": global_step}, every_n_iter=2)]
        steps = []
        with captured_logs(tf, workdir) as logs:
            with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=hooks, save_checkpoint_steps=2,
                                                   save_summaries_steps=2, log_step_count_steps=2) as sess:
                while not sess.should_stop():
                    steps.append(_f(sess.run([train_op, global_step, loss])[1:]))
        out["first"] = {"steps": steps, "logs": logs, "files": files(d), "state": state_file(d, workdir),
                        "events": events(tf, d, workdir),
                        "w": _f(tf.train.load_variable(d, "w")),
                        "global_step": _f(tf.train.load_variable(d, "global_step")),
                        "read_tensor": tf.get_collection("global_step_read_op_cache")[0].name}
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        steps = []
        with captured_logs(tf, workdir) as logs:
            with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=[tf.train.StopAtStepHook(last_step=8)],
                                                   save_checkpoint_steps=2, save_summaries_steps=None,
                                                   log_step_count_steps=None) as sess:
                while not sess.should_stop():
                    steps.append(_f(sess.run([train_op, global_step, loss])[1:]))
        out["second"] = {"steps": steps, "logs": logs, "files": files(d), "state": state_file(d, workdir),
                         "w": _f(tf.train.load_variable(d, "w"))}
    return out


def mts_defaults(tf, workdir):
    """MonitoredTrainingSession's defaults: checkpoints every 600 s (so at creation and at
    the end), summaries every 100 steps, step counts every 100 steps; 3 steps run."""
    d = os.path.join(workdir, "defaults")
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf, with_summary=True)
        with captured_logs(tf, workdir) as logs:
            with tf.train.MonitoredTrainingSession(checkpoint_dir=d) as sess:
                for _ in range(3):
                    sess.run(train_op)
                stopped = sess.should_stop()
        return {"logs": logs, "files": files(d), "state": state_file(d, workdir), "should_stop": stopped,
                "events": events(tf, d, workdir), "global_step": _f(tf.train.load_variable(d, "global_step"))}


def mts_worker_times_out(tf, workdir):
    """A non-chief MonitoredTrainingSession whose model nobody initializes: max_wait_secs=0."""
    with tf.Graph().as_default():
        _model(tf)
        try:
            tf.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0)
        except Exception as e:  # noqa: BLE001 - what it raises is the result
            return _error(e)
    return None


def logging_hooks(tf, workdir):
    """LoggingTensorHook with a dict (sorted tags), names (given order), an array value
    (numpy suppress=True), a formatter, at_end, every_n_iter=3; 4 runs."""
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        small = tf.constant([1e-9, 123456.789, -2.5], name="small")
        hooks = [tf.train.LoggingTensorHook({"w": w, "step": global_step}, every_n_iter=3),
                 tf.train.LoggingTensorHook(["loss", "small"], every_n_iter=2),
                 tf.train.LoggingTensorHook({"step": global_step}, every_n_iter=2,
                                            formatter=lambda values: "formatted step=%d" % values["step"]),
                 tf.train.LoggingTensorHook({"loss": loss}, at_end=True)]
        with captured_logs(tf, workdir) as logs:
            with tf.train.SingularMonitoredSession(hooks=hooks) as sess:
                for _ in range(4):
                    sess.run(train_op)
        errors = []
        for kwargs in ({}, {"every_n_iter": 0}, {"every_n_iter": 1, "every_n_secs": 1}):
            try:
                tf.train.LoggingTensorHook({"loss": loss}, **kwargs)
            except ValueError as e:
                errors.append(_error(e))
        return {"logs": logs, "errors": errors}


def nan_hooks(tf, workdir):
    """NanTensorHook: a NaN loss raises NanLossDuringTrainingError, or only stops."""
    out = {}
    for fail in (True, False):
        with tf.Graph().as_default():
            w, loss, global_step, train_op = _model(tf)
            nan_loss = loss * tf.constant(float("nan"))
            hook = tf.train.NanTensorHook(nan_loss, fail_on_nan_loss=fail)
            result = {}
            with captured_logs(tf, workdir) as logs:
                try:
                    with tf.train.MonitoredSession(hooks=[hook]) as sess:
                        sess.run(train_op)
                        result["should_stop"] = sess.should_stop()
                except Exception as e:  # noqa: BLE001
                    result["error"] = _error(e)
                    result["is_runtime_error"] = isinstance(e, RuntimeError)
            result["logs"] = logs
            out["fail" if fail else "stop"] = result
    return out


def _recorder_class(tf):
    class Recorder(tf.train.SessionRunHook):
        """Records the calls it gets."""

        def __init__(self, calls):
            self.calls = calls

        def begin(self):
            self.calls.append("begin")

        def after_create_session(self, session, coord):
            self.calls.append("after_create_session")

        def before_run(self, run_context):
            self.calls.append("before_run")

        def after_run(self, run_context, run_values):
            self.calls.append("after_run")

        def end(self, session):
            self.calls.append("end")

    return Recorder


def hooks_misc(tf, workdir):
    """Hook order, FinalOpsHook, FeedFnHook, run_step_fn, listeners, SummarySaverHook,
    StepCounterHook, and a _RecoverableSession that recreates its session after an
    AbortedError."""
    out = {}
    d = os.path.join(workdir, "misc")
    Recorder = _recorder_class(tf)
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf, with_summary=True)
        p = tf.placeholder(tf.float32, [], name="p")
        doubled = p * 2.0
        calls = []
        final = tf.train.FinalOpsHook({"w": w, "step": global_step})
        feeds = iter([1.0, 2.0, 3.0])
        feed_hook = tf.train.FeedFnHook(lambda: {p: next(feeds)})

        class Listener(tf.train.CheckpointSaverListener):
            def begin(self):
                calls.append("listener.begin")

            def before_save(self, session, global_step_value):
                calls.append("listener.before_save %d" % global_step_value)

            def after_save(self, session, global_step_value):
                calls.append("listener.after_save %d" % global_step_value)
                return global_step_value >= 3

            def end(self, session, global_step_value):
                calls.append("listener.end %d" % global_step_value)

        saver_hook = tf.train.CheckpointSaverHook(d, save_steps=3, listeners=[Listener()])
        summary_hook = tf.train.SummarySaverHook(save_steps=2, output_dir=d, summary_op=tf.summary.merge_all())
        counter_hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=d)
        values = []
        with captured_logs(tf, workdir) as logs:
            with tf.train.MonitoredSession(hooks=[Recorder(calls), final, feed_hook, saver_hook, summary_hook,
                                                  counter_hook]) as sess:
                while not sess.should_stop():
                    values.append(_f(sess.run([train_op, doubled, global_step])[1:]))
        final_values = {k: _f(v) for k, v in final.final_ops_values.items()}
        out["hooks"] = {"calls": calls, "values": values, "final": final_values,
                        "logs": logs, "files": files(d), "events": events(tf, d, workdir)}

    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        calls = []
        raised = []

        class Preempt(tf.train.SessionRunHook):
            def after_create_session(self, session, coord):
                calls.append("after_create_session %d" % session.run(global_step))

            def before_run(self, run_context):
                if not raised:
                    raised.append(True)
                    raise tf.errors.AbortedError(None, None, "preempted")

        with captured_logs(tf, workdir) as logs:
            with tf.train.MonitoredSession(hooks=[Preempt()]) as sess:
                step = _f(sess.run([train_op, global_step])[1])
        out["recovery"] = {"calls": calls, "step": step, "logs": logs}

    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        seen = []

        def step_fn(step_context):
            seen.append(_f(step_context.session.run(global_step)))
            value = step_context.run_with_hooks(global_step)
            if value >= 0:
                step_context.run_with_hooks(train_op)
            if len(seen) == 2:
                step_context.request_stop()
            return _f(value)

        returned = []
        with tf.train.MonitoredSession() as sess:
            while not sess.should_stop():
                returned.append(sess.run_step_fn(step_fn))
        errors = []
        with tf.train.MonitoredSession() as sess:
            try:
                sess.run_step_fn(lambda ctx: None)
            except ValueError as e:
                errors.append(_error(e))
        out["step_fn"] = {"seen": seen, "returned": returned, "errors": errors}
    return out


def scaffold(tf, workdir):
    """What Scaffold.finalize() builds for a graph with a variable, a global step and a summary."""
    with tf.Graph().as_default() as graph:
        w, loss, global_step, train_op = _model(tf, with_summary=True)
        local = tf.Variable(0.5, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        s = tf.train.Scaffold().finalize()
        out = {"init_op": s.init_op.name, "ready_op": s.ready_op.name,
               "ready_for_local_init_op": s.ready_for_local_init_op.name, "local_init_op": s.local_init_op.name,
               "summary_op": s.summary_op.name, "finalized": graph.finalized,
               "saver": [s.saver.saver_def.filename_tensor_name, s.saver.saver_def.save_tensor_name,
                         s.saver.saver_def.restore_op_name, s.saver.saver_def.sharded,
                         s.saver.saver_def.max_to_keep],
               "collections": {key: len(tf.get_collection(key)) for key in (
                   tf.GraphKeys.INIT_OP, tf.GraphKeys.READY_OP, tf.GraphKeys.READY_FOR_LOCAL_INIT_OP,
                   tf.GraphKeys.LOCAL_INIT_OP, tf.GraphKeys.SUMMARY_OP, tf.GraphKeys.SAVERS)}}
        with tf.Session() as sess:
            out["ready_before"] = _f(sess.run(s.ready_op))
            out["ready_for_local_before"] = _f(sess.run(s.ready_for_local_init_op))
            sess.run(s.init_op)
            out["ready_after_init"] = _f(sess.run(s.ready_op))
            out["ready_for_local_after_init"] = _f(sess.run(s.ready_for_local_init_op))
            sess.run(s.local_init_op)
            out["ready_after_local_init"] = _f(sess.run(s.ready_op))
        try:
            tf.constant(1.0)
        except RuntimeError as e:
            out["finalized_error"] = str(e)
        del local
    return out


def session_manager(tf, workdir):
    """SessionManager: the errors prepare_session/wait_for_session raise, recover_session."""
    out = {}
    d = os.path.join(workdir, "sm")
    with tf.Graph().as_default():
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2.0, name="b")
        ready = tf.report_uninitialized_variables()
        init_a = tf.variables_initializer([a], name="init_a")
        manager = tf.train.SessionManager(ready_op=ready, recovery_wait_secs=0.01)
        for name, call in (("no_init", lambda: manager.prepare_session("")),
                           ("partial_init", lambda: manager.prepare_session("", init_op=init_a)),
                           ("wait", lambda: manager.wait_for_session("", max_wait_secs=0))):
            try:
                call()
                out[name] = None
            except Exception as e:  # noqa: BLE001
                out[name] = _error(e)
        saver = tf.train.Saver()
        sess = manager.prepare_session("", init_op=tf.global_variables_initializer())
        sess.run(b.assign(5.0))
        saver.save(sess, os.path.join(d, "model.ckpt"), global_step=7)
        sess.close()
        with captured_logs(tf, workdir) as logs:
            sess, recovered = manager.recover_session("", saver=saver, checkpoint_dir=d)
            out["recovered"] = [recovered, _f(sess.run(b))]
            sess.close()
            sess, recovered = manager.recover_session("", saver=saver, checkpoint_dir=os.path.join(workdir, "none"))
            out["not_recovered"] = [recovered, _f(sess.run(ready))]
            sess.close()
            sess = manager.prepare_session("", init_op=init_a, saver=saver, checkpoint_dir=d)
            out["prepared_from_checkpoint"] = [_f(sess.run(a)), _f(sess.run(b)), _f(sess.run(ready))]
            sess.close()
        out["logs"] = logs
    return out


def coordinator(tf, workdir):
    """Coordinator: exceptions reported through request_stop/stop_on_exception and raised by
    join, clean stops, a straggler thread, clear_stop; LooperThread."""
    out = {}
    coord = tf.train.Coordinator()
    out["initial"] = coord.should_stop()
    try:
        raise ValueError("first")
    except ValueError as e:
        coord.request_stop(e)
    try:
        raise KeyError("second")
    except KeyError as e:
        coord.request_stop(e)
    out["after_request"] = coord.should_stop()
    try:
        coord.raise_requested_exception()
    except Exception as e:  # noqa: BLE001
        out["raised"] = _error(e)
    try:
        coord.join([])
    except Exception as e:  # noqa: BLE001
        out["join"] = _error(e)
    out["joined"] = coord.joined
    coord.clear_stop()
    out["cleared"] = [coord.should_stop(), coord.joined]

    clean = tf.train.Coordinator()
    try:
        raise tf.errors.OutOfRangeError(None, None, "end of input")
    except tf.errors.OutOfRangeError as e:
        clean.request_stop(e)
    clean.join([])
    out["clean_stop"] = clean.should_stop()

    thread_coord = tf.train.Coordinator()

    def worker():
        with thread_coord.stop_on_exception():
            raise RuntimeError("in a thread")

    t = threading.Thread(target=worker, name="worker")
    t.start()
    try:
        thread_coord.join([t])
    except Exception as e:  # noqa: BLE001
        out["thread_error"] = _error(e)

    slow_coord = tf.train.Coordinator()
    release = threading.Event()
    straggler = threading.Thread(target=lambda: release.wait(5.0), name="straggler")
    straggler.start()
    slow_coord.request_stop()
    try:
        slow_coord.join([straggler], stop_grace_period_secs=0.05)
    except Exception as e:  # noqa: BLE001
        out["straggler"] = _error(e)
    release.set()
    straggler.join()

    loop_coord = tf.train.Coordinator()
    counts = []

    def target(n):
        counts.append(n)
        if len(counts) == 3:
            loop_coord.request_stop()

    looper = tf.train.LooperThread.loop(loop_coord, None, target, args=(7,))
    loop_coord.join([looper])
    out["looper"] = [counts, looper.daemon, looper.is_alive()]
    try:
        tf.train.LooperThread(loop_coord, None, args=(1,))
    except ValueError as e:
        out["looper_error"] = _error(e)
    return out


def timer(tf, workdir):
    """SecondOrStepTimer by steps, and by seconds (50 ms)."""
    steps = tf.train.SecondOrStepTimer(every_steps=3)
    out = {"steps": []}
    for step in range(8):
        trigger = steps.should_trigger_for_step(step)
        if trigger:
            elapsed = steps.update_last_triggered_step(step)
            out["steps"].append([step, elapsed[1]])
    secs = tf.train.SecondOrStepTimer(every_secs=0.05)
    seq = [secs.should_trigger_for_step(1)]
    secs.update_last_triggered_step(1)
    seq += [secs.should_trigger_for_step(1), secs.should_trigger_for_step(2)]
    time.sleep(0.06)
    seq += [secs.should_trigger_for_step(1), secs.should_trigger_for_step(2)]
    out["secs"] = seq
    errors = []
    for kwargs in ({}, {"every_secs": 1, "every_steps": 1}):
        try:
            tf.train.SecondOrStepTimer(**kwargs)
        except ValueError as e:
            errors.append(_error(e))
    out["errors"] = errors
    return out


def supervisor(tf, workdir):
    """Supervisor.managed_session: no services (save_model_secs=0, save_summaries_secs=0),
    summary_computed and an explicit save; restore from that logdir; the default services
    (a checkpoint at the start); an exception raised inside."""
    out = {}
    d = os.path.join(workdir, "sv")
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf, with_summary=True)
        with captured_logs(tf, workdir) as logs:
            sv = tf.train.Supervisor(logdir=d, save_model_secs=0, save_summaries_secs=0)
            values = []
            with sv.managed_session() as sess:
                values.append(sv.should_stop())
                for _ in range(3):
                    values.append(_f(sess.run([train_op, global_step])[1]))
                sv.summary_computed(sess, sess.run(sv.summary_op))
                path = sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
            values.append(sv.should_stop())
        out["first"] = {"values": values, "path": path.replace(workdir, "<DIR>"), "files": files(d),
                        "state": state_file(d, workdir), "logs": [line for line in logs],
                        "events": events(tf, d, workdir), "save_path": sv.save_path.replace(workdir, "<DIR>"),
                        "global_step": sv.global_step.name, "ready_op": sv.ready_op.name,
                        "init_op": sv.init_op.name, "summary_op": sv.summary_op.name}
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        with captured_logs(tf, workdir) as logs:
            sv = tf.train.Supervisor(logdir=d, save_model_secs=0, save_summaries_secs=0)
            with sv.managed_session() as sess:
                restored = [_f(sess.run(global_step)), _f(sess.run(w))]
        out["restored"] = {"values": restored, "logs": logs}
    d2 = os.path.join(workdir, "sv_services")
    with tf.Graph().as_default():
        w, loss, global_step, train_op = _model(tf)
        sv = tf.train.Supervisor(logdir=d2)
        with sv.managed_session() as sess:
            deadline = time.time() + 10
            while not os.path.exists(os.path.join(d2, "model.ckpt-0.index")) and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # the thread writes the state file after the checkpoint
            for _ in range(2):
                sess.run(train_op)
        out["services"] = {"files": files(d2), "state": state_file(d2, workdir)}
    with tf.Graph().as_default():
        _model(tf)
        sv = tf.train.Supervisor(logdir=None)
        try:
            with sv.managed_session():
                raise ValueError("boom")
        except ValueError as e:
            out["exception"] = [_error(e), sv.should_stop()]
    return out


def supervisor_seed(tf, workdir):
    """Seed 000's model (bg_dist.py) on one machine, as the seed drives it: a Supervisor
    given init_op, summary_op=None, saver and an int32 global step, managed_session, a
    loop on sv.should_stop(), sv.stop(); the checkpoint thread saves once at the start."""
    d = os.path.join(workdir, "train_logs")
    train_x = np.linspace(-1.0, 1.0, 10)
    train_y = 2.0 * train_x + 10.0
    with tf.Graph().as_default():
        X = tf.placeholder("float")
        Y = tf.placeholder("float")
        w = tf.Variable(0.0, name="weight")
        b = tf.Variable(0.0, name="bias")
        loss = tf.square(Y - tf.multiply(X, w) - b)
        global_step = tf.Variable(0)
        train_op = tf.train.AdagradOptimizer(0.01).minimize(loss, global_step=global_step)
        saver = tf.train.Saver()
        summary_op = tf.summary.merge_all()
        init_op = tf.global_variables_initializer()
        printed = []
        with captured_logs(tf, workdir) as logs:
            sv = tf.train.Supervisor(is_chief=True, logdir=d, init_op=init_op, summary_op=summary_op, saver=saver,
                                     global_step=global_step, save_model_secs=600)
            with sv.managed_session() as sess:
                deadline = time.time() + 10
                while not os.path.exists(os.path.join(d, "model.ckpt-0.index")) and time.time() < deadline:
                    time.sleep(0.01)
                time.sleep(0.05)
                step = 0
                epoch = 0
                while not sv.should_stop() and epoch < 3:
                    for x, y in zip(train_x, train_y):
                        _, step = sess.run([train_op, global_step], feed_dict={X: x, Y: y})
                    loss_value = sess.run(loss, feed_dict={X: x, Y: y})
                    printed.append("步驟: {}, loss: {}".format(step, loss_value))
                    epoch += 1
            sv.stop()
        return {"printed": printed, "files": files(d), "state": state_file(d, workdir),
                "logs": sorted(line for line in logs if not line.startswith("WARNING:From ")),
                "summary_op": summary_op, "global_step": sv.global_step.name}


def scaffold_graph(tf, workdir):
    """Every op (name, type, inputs, control inputs, device) once a StopAtStepHook began
    (the global step's read tensor: a cond on IsVariableInitialized) and a Scaffold with an
    unsharded Saver finalized (init, ready and local-init ops)."""
    with tf.Graph().as_default() as graph:
        tf.get_variable("w", [2, 1], initializer=tf.constant_initializer(0.1))
        tf.train.get_or_create_global_step()
        tf.train.StopAtStepHook(num_steps=1).begin()
        tf.train.Scaffold(saver=tf.train.Saver()).finalize()
        return [[op.name, op.type, [t.name for t in op.inputs], [c.name for c in op.control_inputs], op.device]
                for op in graph.get_operations()]


def string_ops(tf, workdir):
    """Reshape, GatherV2 and ConcatV2 of strings (a ready op's ops), IsVariableInitialized,
    and report_uninitialized_variables without variables."""
    out = {}
    with tf.Graph().as_default():
        names = tf.constant(["a", "b", "c", "d", "e", "f"])
        index = tf.placeholder(tf.int32, [None])
        cases = {"reshape": tf.reshape(names, [2, 3]), "reshape_inferred": tf.reshape(names, [-1, 2]),
                 "gather": tf.gather(names, index), "gather_axis1": tf.gather(tf.reshape(names, [2, 3]), index, axis=1),
                 "concat": tf.concat([names, tf.constant(["z"])], 0),
                 "concat_axis1": tf.concat([tf.reshape(names, [3, 2]), tf.reshape(names, [3, 2])], 1)}
        bad = {"reshape_bad": tf.reshape(names, tf.placeholder_with_default([4, 2], [2])),
               "gather_bad": tf.gather(names, index)}
        v = tf.Variable(3, name="v")
        empty = tf.report_uninitialized_variables([])
        with tf.Session() as sess:
            for key, tensor in cases.items():
                out[key] = [_f(row) for row in sess.run(tensor, {index: [2, 0]})]
            for key, tensor in bad.items():
                try:
                    sess.run(tensor, {index: [1, 6]})
                except tf.errors.InvalidArgumentError as e:
                    # (TF 2.x puts "Graph execution error:" and where the node was made first)
                    lines = [line for line in e.message.splitlines() if line.startswith(("indices[", "Input to"))]
                    out[key] = lines[0] if lines else e.message
            initialized = [_f(sess.run(tf.is_variable_initialized(v)))]
            sess.run(v.initializer)
            initialized.append(_f(sess.run(tf.is_variable_initialized(v))))
            out["is_variable_initialized"] = initialized
            out["report_empty"] = [empty.name, _f(sess.run(empty))]
    return out


SCENARIOS = {f.__name__: f for f in (string_ops, mts_checkpoints, mts_defaults, mts_worker_times_out, logging_hooks,
                                     nan_hooks, hooks_misc, scaffold, session_manager, coordinator, timer, supervisor,
                                     supervisor_seed, scaffold_graph)}
