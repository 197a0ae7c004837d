"""The standard SessionRunHooks (TF 1.15's python/training/basic_session_run_hooks.py).

Each class follows the TF 1.15 class of the same name, down to its log lines (through
tf.logging, the ``tensorflow`` logger) and the order of its session runs:

- ``SecondOrStepTimer``: triggers the first time, then after ``every_steps`` steps or
  ``every_secs`` seconds (``time.time()``).
- ``LoggingTensorHook``: ``INFO: loss = 0.25, step = 3 (0.004 sec)``: ``tag = value``
  joined by ", " (tags sorted for a dict, in the given order for a list), the seconds
  since the last line after the first, numpy printing with ``suppress=True``.
- ``StopAtStepHook``: fetches the global step's read tensor with every run; stops once
  ``last_step`` (or the step at session creation + ``num_steps``) is reached.
- ``CheckpointSaverHook``: writes ``graph.pbtxt``, the graph and meta graph events, and
  saves ``<basename>-<step>`` at session creation, every ``save_steps``/``save_secs`` and
  at the end (unless that step was just saved), with a CHECKPOINT SessionLog event each.
- ``StepCounterHook``, ``NanTensorHook``, ``SummarySaverHook``, ``GlobalStepWaiterHook``,
  ``FinalOpsHook``, ``FeedFnHook``.
"""
from __future__ import annotations

import os
import time

import numpy as np

from .. import errors
from .. import tf_logging as logging
from ..graph import GraphKeys, get_collection, get_default_graph
from . import training_util
from .session_run_hook import SessionRunArgs, SessionRunHook


def _summary_writer_cache():
    from ..summary import FileWriterCache

    return FileWriterCache


class _HookTimer:
    """Base timer for deciding when a hook triggers."""

    def reset(self):
        pass

    def should_trigger_for_step(self, step):
        raise NotImplementedError

    def update_last_triggered_step(self, step):
        """``(elapsed_secs, elapsed_steps)`` since the last trigger; ``(None, None)`` the first time."""
        raise NotImplementedError

    def last_triggered_step(self):
        raise NotImplementedError


class SecondOrStepTimer(_HookTimer):
    """Triggers at most once every ``every_secs`` seconds or every ``every_steps`` steps."""

    def __init__(self, every_secs=None, every_steps=None):
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if self._every_secs is None and self._every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if (self._every_secs is not None) and (self._every_steps is not None):
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_triggered_time + self._every_secs:
            return True
        if self._every_steps is not None and step >= self._last_triggered_step + self._every_steps:
            return True
        return False

    def update_last_triggered_step(self, step):
        current_time = time.time()
        if self._last_triggered_time is None:
            elapsed_secs = elapsed_steps = None
        else:
            elapsed_secs = current_time - self._last_triggered_time
            elapsed_steps = step - self._last_triggered_step
        self._last_triggered_time = current_time
        self._last_triggered_step = step
        return elapsed_secs, elapsed_steps

    def last_triggered_step(self):
        return self._last_triggered_step


class NeverTriggerTimer(_HookTimer):
    """A timer that never triggers."""

    def should_trigger_for_step(self, step):
        return False

    def update_last_triggered_step(self, step):
        return None, None

    def last_triggered_step(self):
        return None


class LoggingTensorHook(SessionRunHook):
    """Logs tensors every N local steps, every N seconds, or at the end (INFO)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = tensors
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = NeverTriggerTimer() if only_log_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(tensor) for tag, tensor in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return SessionRunArgs(self._current_tensors)
        return None

    def _log_tensors(self, tensor_values):
        original = np.get_printoptions()
        np.set_printoptions(suppress=True)
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter:
            logging.info(self._formatter(tensor_values))
        else:
            stats = ["%s = %s" % (tag, tensor_values[tag]) for tag in self._tag_order]  # str(), not format()
            if elapsed_secs is not None:
                logging.info("%s (%.3f sec)", ", ".join(stats), elapsed_secs)
            else:
                logging.info("%s", ", ".join(stats))
        np.set_printoptions(**original)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            values = session.run(self._current_tensors)
            self._log_tensors(values)


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step`` (or ``num_steps`` more
    than it was when the session was created)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            global_step = session.run(self._global_step_tensor)
            self._last_step = global_step + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        global_step = run_values.results + 1
        if global_step >= self._last_step:
            # The fetched value is the step before this run's train op: check the real one.
            step = run_context.session.run(self._global_step_tensor)
            if step >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Callbacks around the saves of a CheckpointSaverHook; ``after_save`` returning True
    requests a stop."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoints every N steps or seconds (TF 1.15: and at session creation and end).

    ``save_graph_def`` (TF 2.x's argument, True in TF 1.15) also writes ``graph.pbtxt`` and
    the ``.meta`` files.
    """

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None, checkpoint_basename="model.ckpt",
                 scaffold=None, listeners=None, save_graph_def=True):
        logging.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._steps_per_run = 1
        self._save_graph_def = save_graph_def

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        self._summary_writer = _summary_writer_cache().get(self._checkpoint_dir)
        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        from ..saver import export_meta_graph

        global_step = session.run(self._global_step_tensor)
        # The graph is written here, not in begin(): other hooks may add to it in theirs.
        graph = get_default_graph()
        if self._save_graph_def:
            training_util.write_graph(graph.as_graph_def(add_shapes=True), self._checkpoint_dir, "graph.pbtxt")
            saver = self._get_saver()
            saver_def = saver.saver_def if saver else None
            meta_graph_def = export_meta_graph(graph_def=graph.as_graph_def(add_shapes=True), saver_def=saver_def)
            self._summary_writer.add_graph(graph)
            self._summary_writer.add_meta_graph(meta_graph_def)
        # The checkpoint saved here is the state at step "global_step".
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)  # the value after the train op
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session):
        last_step = session.run(self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step) -> bool:
        """Save a checkpoint for ``step``; True when a listener asks to stop."""
        from tfc.protos import SessionLog

        logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step, write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(SessionLog(status=SessionLog.CHECKPOINT,
                                                        checkpoint_path=self._save_path), step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logging.info("A CheckpointSaverListener requested that training be stopped. listener: "
                             f"{listener}")
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(f"No items in collection {GraphKeys.SAVERS}. Please add a saver to the collection or "
                               "provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                               "use by passing it to the constructor.")
        self._saver = savers[0]
        return savers[0]


class StepCounterHook(SessionRunHook):
    """Logs (and writes as the summary ``global_step/sec``) the steps per second."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._steps_per_run = 1

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer_cache().get(self._output_dir)
        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StepCounterHook.")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        from tfc.protos import Summary

        steps_per_sec = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            summary = Summary(value=[Summary.Value(tag=self._summary_tag, simple_value=steps_per_sec)])
            self._summary_writer.add_summary(summary, global_step)
        logging.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale_global_step == self._last_global_step:
            # Some optimizers do not increase the global step every run: warn the first 5 times.
            logging.log_first_n(
                logging.WARN,
                "It seems that global step (tf.train.get_global_step) has not been increased. Current value (could "
                "be stable): %s vs previous value: %s. You could increase the global step by passing "
                "tf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize.", 5,
                stale_global_step, self._last_global_step)
        self._last_global_step = stale_global_step


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fetches the loss with every run; NaN raises NanLossDuringTrainingError (or only
    requests a stop, with a warning, when ``fail_on_nan_loss`` is False)."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            failure_message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(failure_message)
                raise NanLossDuringTrainingError
            logging.warning(failure_message)
            run_context.request_stop()


class SummarySaverHook(SessionRunHook):
    """Writes the summary op's output every N steps or seconds (a START SessionLog first)."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None and summary_op is None) or (scaffold is not None and summary_op is not None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer_cache().get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary and self._get_summary_op() is not None:
            requests["summary"] = self._get_summary_op()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        from tfc.protos import SessionLog

        if not self._summary_writer:
            return
        stale_global_step = run_values.results["global_step"]
        global_step = stale_global_step + 1
        if self._next_step is None or self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            if "summary" in run_values.results:
                for summary in run_values.results["summary"]:
                    self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        """The summary tensors to fetch, as a list (the scaffold's summary op by default)."""
        summary_op = None
        if self._summary_op is not None:
            summary_op = self._summary_op
        elif self._scaffold.summary_op is not None:
            summary_op = self._scaffold.summary_op
        if summary_op is None:
            return None
        if not isinstance(summary_op, list):
            return [summary_op]
        return summary_op


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches ``wait_until_step`` (polling
    every 0.5 s)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use _GlobalStepWaiterHook.")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = run_context.session.run(self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                logging.info("Waiting for global step %d before starting training. Current step is %d.",
                             self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(0.5)


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; ``final_ops_values`` holds the results."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            try:
                self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
            except (errors.OutOfRangeError, StopIteration):
                logging.warning(
                    "An OutOfRangeError or StopIteration exception is raised by the code in FinalOpsHook. This "
                    "typically means the Ops running by the FinalOpsHook have a dependency back to some input "
                    "source, which should not happen. For example, for metrics in tf.estimator.Estimator, all "
                    "metrics functions return two Ops: `value_op` and  `update_op`. Estimator.evaluate calls the "
                    "`update_op` for each batch of the data in input source and, once it is exhausted, it call the "
                    "`value_op` to get the metric values. The `value_op` here should have dependency back to "
                    "variables reading only, rather than reading another batch from input. Otherwise, the "
                    "`value_op`, executed by `FinalOpsHook`, triggers another data reading, which ends "
                    "OutOfRangeError/StopIteration. Please fix that.")
                raise


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` to every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


def _as_graph_element(obj):
    """A tensor of the default graph for ``obj`` (a tensor, or a name: ``"loss"`` means
    ``"loss:0"`` and must name a single-output op)."""
    graph = get_default_graph()
    if not isinstance(obj, str):
        if not hasattr(obj, "graph") or obj.graph != graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to current graph {graph}.")
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        pass
    else:
        raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple outputs (at least 2).")
    return element
