"""tf.train.SessionRunHook and its arguments (TF 1.15's python/training/session_run_hook.py).

A MonitoredSession calls, for each hook: ``begin()`` (the graph may still change),
``after_create_session(session, coord)`` (after every session creation, recoveries
included), ``before_run(run_context)`` (may return a ``SessionRunArgs`` adding fetches,
feeds and options to the run), ``after_run(run_context, run_values)`` (not called when
the run raised) and ``end(session)`` (not called when the session closes on an error
other than OutOfRangeError/StopIteration).
"""
from __future__ import annotations

import collections


class SessionRunHook:
    """Hook to extend calls to MonitoredSession.run(); every method does nothing here."""

    def begin(self):
        """Called once before using the session (the graph can still be changed)."""

    def after_create_session(self, session, coord):  # noqa: ARG002 - TF's signature
        """Called when a new session has been created (the graph is finalized)."""

    def before_run(self, run_context):  # noqa: ARG002
        """Called before each run(); may return a SessionRunArgs to add to it."""
        return None

    def after_run(self, run_context, run_values):  # noqa: ARG002
        """Called after each run() with the results of what before_run asked for."""

    def end(self, session):  # noqa: ARG002
        """Called at the end of the session."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches (any fetch structure), feeds, RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run being made: its original arguments and session; hooks may request a stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        """``SessionRunArgs(fetches, feed_dict)`` of the caller's run()."""
        return self._original_args

    @property
    def session(self):
        """The TensorFlow session running it."""
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """The MonitoredSession's ``should_stop()`` becomes True after this run."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """The results of the fetches a hook's SessionRunArgs asked for (same structure), with
    the run's RunOptions and RunMetadata."""
