"""tf.train.MonitoredSession and friends (TF 1.15's python/training/monitored_session.py).

- ``Scaffold``: the init, ready, local-init and summary ops and the saver, taken from the
  graph's collections or built (and added to them) by ``finalize()``, which then
  finalizes the graph, as TF does.
- ``ChiefSessionCreator`` (restore or initialize, through a SessionManager) and
  ``WorkerSessionCreator`` (wait for the chief). Both make their session with
  ``Session(master, ...)``: ``master=''`` runs in this process; another target (a
  ``grpc://`` master) is for the Session class to connect to, nothing here changes.
- ``MonitoredSession``: calls the hooks' ``begin``, creates the session, calls
  ``after_create_session``, then runs with the hooks' fetches and feeds merged in;
  ``should_stop()`` once a hook asked; ``close()`` (or leaving the ``with``) calls the
  hooks' ``end`` unless an error other than OutOfRangeError/StopIteration is on its way
  out. It wraps the session as TF does: ``_RecoverableSession`` (recreates the session
  on AbortedError/UnavailableError) around ``_CoordinatedSession`` (a Coordinator whose
  reported exception is re-raised) around ``_HookedSession`` (the hooks).
- ``SingularMonitoredSession`` (no recovery, ``raw_session()``) and
  ``MonitoredTrainingSession`` (the chief's standard hooks: StepCounterHook,
  SummarySaverHook and CheckpointSaverHook when there is a directory).
"""
from __future__ import annotations

import abc
import functools
import inspect
import os

from .. import errors
from .. import tf_logging as logging
from ..graph import GraphKeys, add_to_collection, get_collection, get_default_graph
from . import basic_session_run_hooks
from . import session_manager as sm
from .coordinator import Coordinator
from .session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

# The errors after which a _RecoverableSession makes a new session.
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)

# Value that indicates no value was provided.
USE_DEFAULT = object()


# -- resources (TF 1.15's python/ops/resources.py; tfc has no resource objects yet) ----------
def _shared_resources() -> list:
    return get_collection(GraphKeys.RESOURCES)


def _local_resources() -> list:
    return get_collection(GraphKeys.LOCAL_RESOURCES)


def _initialize_resources(resource_list, name="init"):
    """A NoOp named ``init`` (a group of the resources' create ops if there are any)."""
    from ..ops.control_flow_ops import group, no_op

    if resource_list:
        return group(*[r.create for r in resource_list], name=name)
    return no_op(name=name)


def _report_uninitialized_resources(resource_list=None, name="report_uninitialized_resources"):
    """An empty string Const when there are no resources (as TF returns then)."""
    from ..graph import device, name_scope
    from ..ops.constant_op import constant
    from .. import dtypes

    if resource_list is None:
        resource_list = _shared_resources() + _local_resources()
    with name_scope(name):
        with device(os.environ.get("TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING", "/cpu:0")):
            if not resource_list:
                return constant([], dtype=dtypes.string)
            raise NotImplementedError("tfc has no resources to report on")


def _tables_initializer(name="init_all_tables"):
    """lookup_ops.tables_initializer: a group of the TABLE_INITIALIZERS, else a NoOp."""
    from ..ops.control_flow_ops import group, no_op

    initializers = get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return group(*initializers, name=name)
    return no_op(name=name)


def _get_saver_or_default():
    """saver._get_saver_or_default: the SAVERS collection's saver, else a new sharded one."""
    from ..saver import Saver

    savers = get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                               "use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    if saver is not None:
        add_to_collection(GraphKeys.SAVERS, saver)
    return saver


def _start_queue_runners(sess, coord) -> list:
    threads = []
    for qr in get_collection(GraphKeys.QUEUE_RUNNERS):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=True, start=True))
    return threads


def _fn_args(fn) -> tuple:
    """function_utils.fn_args: the positional parameter names (a bound method's self dropped)."""
    if isinstance(fn, functools.partial):
        args = _fn_args(fn.func)
        return tuple(a for a in args[len(fn.args):] if a not in (fn.keywords or {}))
    if not inspect.isfunction(fn) and not inspect.ismethod(fn) and callable(fn):
        fn = fn.__call__
    args = list(inspect.getfullargspec(fn).args)
    if inspect.ismethod(fn) and args:
        args.pop(0)
    return tuple(args)


class Scaffold:
    """The pieces a training session needs, from the graph's collections or built by
    ``finalize()`` (which also finalizes the graph and logs ``Graph was finalized.``)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")

            def coalesce(a, b):
                return a if a is not None else b

            init_op = coalesce(init_op, copy_from_scaffold.init_op)
            init_feed_dict = coalesce(init_feed_dict, copy_from_scaffold.init_feed_dict)
            init_fn = coalesce(init_fn, copy_from_scaffold._user_init_fn)
            ready_op = coalesce(ready_op, copy_from_scaffold.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op, copy_from_scaffold.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, copy_from_scaffold.local_init_op)
            summary_op = coalesce(summary_op, copy_from_scaffold.summary_op)
            saver = coalesce(saver, copy_from_scaffold.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> "Scaffold":
        """Create what is missing (as TF 1.15 builds it) and finalize the graph."""
        from ..ops.concat_ops import concat
        from ..ops.control_flow_ops import group
        from ..summary import merge_all
        from ..variables import global_variables, global_variables_initializer, report_uninitialized_variables

        if self._init_op is None:
            def default_init_op():
                return group(global_variables_initializer(), _initialize_resources(_shared_resources()))

            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP, default_init_op)
        if self._ready_op is None:
            def default_ready_op():
                return concat([report_uninitialized_variables(), _report_uninitialized_resources()], 0)

            self._ready_op = Scaffold.get_or_default("ready_op", GraphKeys.READY_OP, default_ready_op)
        if self._ready_for_local_init_op is None:
            def default_ready_for_local_init_op():
                return concat([report_uninitialized_variables(global_variables()),
                               _report_uninitialized_resources(_shared_resources())], 0)

            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP, default_ready_for_local_init_op)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", GraphKeys.LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        self._saver.build()
        get_default_graph().finalize()
        logging.info("Graph was finalized.")
        return self

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The only item of the collection, else ``default_constructor()`` (added to it)."""
        elements = get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                # (TF passes the names as extra RuntimeError arguments, unformatted.)
                raise RuntimeError('More than one item in the collection "%s". Please indicate which one to use by '
                                   "passing it to the tf.Scaffold constructor as:  tf.Scaffold(%s=item to use)",
                                   collection_key, arg_name)
            return elements[0]
        op = default_constructor()
        if op is not None:
            add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """group(local_variables_initializer(), tables_initializer(), local resources' init)."""
        from ..ops.control_flow_ops import group
        from ..variables import local_variables_initializer

        return group(local_variables_initializer(), _tables_initializer(),
                     _initialize_resources(_local_resources()))


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,  # noqa: N802 - TF's name
                             hooks=None, chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100, max_wait_secs=7200,
                             save_checkpoint_steps=USE_DEFAULT, summary_dir=None, save_graph_def=True):
    """A MonitoredSession for training (TF 1.15's MonitoredTrainingSession).

    The chief restores or initializes (ChiefSessionCreator) and gets, before ``hooks``:
    ``chief_only_hooks``, a StepCounterHook (every ``log_step_count_steps``) and a
    SummarySaverHook (every ``save_summaries_steps``, default 100, or
    ``save_summaries_secs``) writing to ``summary_dir`` (default ``checkpoint_dir``), and a
    CheckpointSaverHook (every ``save_checkpoint_secs``, default 600, or
    ``save_checkpoint_steps``) when there is a ``checkpoint_dir``. A non-chief waits for
    the chief (WorkerSessionCreator) and runs ``hooks`` only.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        session_creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                               max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=session_creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = []
    if chief_only_hooks:
        all_hooks.extend(chief_only_hooks)
    session_creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master,
                                          config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(basic_session_run_hooks.StepCounterHook(output_dir=summary_dir,
                                                                     every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(basic_session_run_hooks.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps, save_secs=save_summaries_secs,
                output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(basic_session_run_hooks.CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps, save_secs=save_checkpoint_secs, scaffold=scaffold,
                save_graph_def=save_graph_def))
    if hooks:
        all_hooks.extend(hooks)
    return MonitoredSession(session_creator=session_creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


class SessionCreator(metaclass=abc.ABCMeta):
    """A factory for tf.Session."""

    @abc.abstractmethod
    def create_session(self):
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class ChiefSessionCreator(SessionCreator):
    """Creates a Session for a chief: ``SessionManager.prepare_session`` (restore or init)."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config

    def _get_session_manager(self):
        if self._session_manager:
            return self._session_manager
        self._session_manager = sm.SessionManager(
            local_init_op=self._scaffold.local_init_op, ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op, graph=get_default_graph())
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path, config=self._config,
            init_op=self._scaffold.init_op, init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Creates a Session for a worker: ``SessionManager.wait_for_session`` (the chief
    initializes)."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def _get_session_manager(self):
        if self._session_manager:
            return self._session_manager
        self._session_manager = sm.SessionManager(
            local_init_op=self._scaffold.local_init_op, ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op, graph=get_default_graph())
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(self._master, config=self._config,
                                                            max_wait_secs=self._max_wait_secs)


class _MonitoredSession:
    """See MonitoredSession and SingularMonitoredSession."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph_was_finalized = get_default_graph().finalized
        self._hooks = hooks or []
        for h in self._hooks:
            h.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator=session_creator or ChiefSessionCreator(), hooks=self._hooks,
            stop_grace_period_secs=stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        """The graph that was launched in this session."""
        if self._tf_sess() is None:
            return None
        return self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Session.run with the hooks (same arguments and result)."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """``step_fn(step_context)``: it may run the raw session (``step_context.session``),
        run with the hooks (``run_with_hooks``) or ``request_stop()`` (StopIteration)."""
        step_fn_arguments = _fn_args(step_fn)
        if step_fn_arguments != ("step_context",) and step_fn_arguments != ("self", "step_context"):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and `step_context` "
                             f"arguments if it's an instance method. Got {step_fn_arguments} instead.")
        # run_with_hooks=None: the _CoordinatedSession's run, so preemption errors raised in
        # step_fn reach _RecoverableSession.run_step_fn.
        return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)

    class StepContext:
        """What a ``step_fn`` gets: the raw session, ``run_with_hooks`` and ``request_stop``."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            """Same as MonitoredSession.run."""
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            """Stop: raises StopIteration (a ``with`` MonitoredSession closes quietly)."""
            raise StopIteration("step_fn has requested the iterations to stop.")

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in [errors.OutOfRangeError, StopIteration]:
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None  # True suppresses the exception

    class _CoordinatedSessionCreator(SessionCreator):
        """Creates the session, a Coordinator (suppressing nothing), starts queue runners and
        calls the hooks' after_create_session; returns the wrapped session."""

        def __init__(self, session_creator, hooks, stop_grace_period_secs):
            self._session_creator = session_creator
            self._hooks = hooks
            self.coord = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self):
            self.tf_sess = self._session_creator.create_session()
            self.coord = Coordinator(clean_stop_exception_types=[])
            if get_collection(GraphKeys.QUEUE_RUNNERS):
                _start_queue_runners(self.tf_sess, self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                       self._stop_grace_period_secs)

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type:
                for h in self._hooks:
                    h.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    get_default_graph()._unsafe_unfinalize()

    def _is_closed(self) -> bool:
        return self._coordinated_creator.tf_sess is None

    def _tf_sess(self):
        """The underlying tf.Session."""
        return self._coordinated_creator.tf_sess


class MonitoredSession(_MonitoredSession):
    """A session-like object that initializes or restores, runs hooks, and recovers from
    AbortedError/UnavailableError by making a new session (TF's MonitoredSession)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True, stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession for one process (a ChiefSessionCreator, no recovery) whose raw
    Session is available (``raw_session()``)."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        session_creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                              checkpoint_dir=checkpoint_dir,
                                              checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(session_creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying tf.Session."""
        return self._tf_sess()


class _WrappedSession:
    """A wrapper around a Session (or another wrapper): ``should_stop()``, and a ``close()``
    that never raises a preemption error."""

    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(self._sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self):
        return self._sess.sess_str

    def should_stop(self) -> bool:
        """True once this session should not be used anymore (always once closed)."""
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        """The subclass's own stop condition."""
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                logging.error("An error occurred when attempting to close the session. This may be due to a "
                              "preemption in a connected worker or parameter server. Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        # run_with_hooks is None when called from the _CoordinatedSession: then it is self.run.
        run_with_hooks = run_with_hooks or self.run
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks))


_PREEMPTION_MESSAGE = ("An error was raised. This may be due to a preemption in a connected worker or parameter "
                       "server. The current session will be closed and a new session will be created. This error "
                       "may also occur due to a gRPC failure caused by high memory or network bandwidth usage in "
                       "the parameter servers. If this error occurs repeatedly, try increasing the number of "
                       "parameter servers assigned to the job. Error: %s")


class _RecoverableSession(_WrappedSession):
    """A session that is recreated (by its SessionCreator) when a run raises AbortedError
    or UnavailableError; the run is then tried again."""

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        _WrappedSession.__init__(self, self._create_session())

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                logging.info("An error was raised while a session was being created. This may be due to a "
                             "preemption of a connected worker or parameter server. A new session will be created. "
                             "This error may also occur due to a gRPC failure caused by high memory or network "
                             "bandwidth usage in the parameter servers. If this error occurs repeatedly, try "
                             "increasing the number of parameter servers assigned to the job. Error: %s", e)

    def _check_stop(self) -> bool:
        try:
            if self._sess:
                return self._sess._check_stop()
            return True
        except _PREEMPTION_ERRORS as e:
            logging.info("An error was raised while considering whether the session is complete. This may be due to "
                         "a preemption in a connected worker or parameter server. The current session will be "
                         "closed and a new session will be created. This error may also occur due to a gRPC "
                         "failure caused by high memory or network bandwidth usage in the parameter servers. If "
                         "this error occurs repeatedly, try increasing the number of parameter servers assigned to "
                         "the job. Error: %s", e)
            self.close()
            self._sess = self._create_session()
            return False  # a new session: the computation goes on
        except Exception:  # noqa: BLE001 - should_stop answers True rather than raising
            return True

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                logging.info(_PREEMPTION_MESSAGE, e)
                self.close()
                self._sess = None

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                run_with_hooks = self._sess.run
                return self._sess.run_step_fn(step_fn, raw_session, run_with_hooks)
            except _PREEMPTION_ERRORS as e:
                logging.info(_PREEMPTION_MESSAGE, e)
                self.close()
                self._sess = None


class _CoordinatedSession(_WrappedSession):
    """A session whose run errors are reported to a Coordinator: ``should_stop()`` re-raises
    the coordinator's exception; ``close()`` stops and joins its threads."""

    def __init__(self, sess, coord, stop_grace_period_secs=120):
        _WrappedSession.__init__(self, sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()  # an exception reported by a thread surfaces here
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
        finally:
            try:
                _WrappedSession.close(self)
            except Exception:  # noqa: BLE001 - join() already reported what matters
                pass

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception as original_exception:  # noqa: BLE001
            # A preemption reported to the coordinator is the root cause: raise it instead.
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001
                raise original_exception from None
            else:
                raise


class _HookedSession(_WrappedSession):
    """A session that calls the hooks around each run: their before_run fetches and feeds
    are merged into the run (``{'caller': fetches, hook: hook_fetches}``), after_run gets
    each hook's results, and a stop requested by a hook makes ``should_stop()`` True."""

    def __init__(self, sess, hooks):
        _WrappedSession.__init__(self, sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        from tfc.protos import RunMetadata, RunOptions

        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        run_context = SessionRunContext(original_args=SessionRunArgs(fetches, feed_dict), session=self._sess)
        options = options or RunOptions()
        feed_dict = self._call_hook_before_run(run_context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or RunMetadata()
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, SessionRunValues(results=outputs[hook] if hook in outputs else None,
                                                         options=options, run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict, user_feed_dict, options):
        """Add the hooks' fetches to ``fetch_dict``; the feeds to use (hooks' and user's)."""
        hook_feeds: dict = {}
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is not None:
                if request.fetches is not None:
                    fetch_dict[hook] = request.fetches
                if request.feed_dict:
                    self._raise_if_feeds_intersects(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                    hook_feeds.update(request.feed_dict)
                if request.options:
                    self._merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        self._raise_if_feeds_intersects(user_feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds

    def _raise_if_feeds_intersects(self, feeds1, feeds2, message):
        intersection = set(feeds1.keys()) & set(feeds2.keys())
        if intersection:
            raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))

    def _merge_run_options(self, options, incoming_options):
        """Merge RunOptions: the larger number, the OR of flags, the union of debug watches."""
        options.trace_level = max(options.trace_level, incoming_options.trace_level)
        options.timeout_in_ms = max(options.timeout_in_ms, incoming_options.timeout_in_ms)
        options.inter_op_thread_pool = max(options.inter_op_thread_pool, incoming_options.inter_op_thread_pool)
        options.output_partition_graphs = max(options.output_partition_graphs,
                                              incoming_options.output_partition_graphs)
        options.debug_options.debug_tensor_watch_opts.extend(incoming_options.debug_options.debug_tensor_watch_opts)
        options.debug_options.reset_disk_byte_usage = (options.debug_options.reset_disk_byte_usage or
                                                       incoming_options.debug_options.reset_disk_byte_usage)
        options.report_tensor_allocations_upon_oom = (options.report_tensor_allocations_upon_oom or
                                                      incoming_options.report_tensor_allocations_upon_oom)
