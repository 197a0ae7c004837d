"""tf.train: optimizers, their training ops, the global step and learning-rate schedules,
and the training-session utilities (coordinator.py, session_run_hook.py,
basic_session_run_hooks.py, session_manager.py, monitored_session.py, supervisor.py).

``EXPORTS`` is what this package adds to the ``tf.train`` namespace (tfc/_api.py merges
it with the saver's names). Importing the package registers the training op types
(ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyAdam, ApplyRMSProp,
ApplyCenteredRMSProp).
"""
from __future__ import annotations

from . import learning_rate_decay, slot_creator, training_ops, training_util
from .learning_rate_decay import (cosine_decay, cosine_decay_restarts, exponential_decay, inverse_time_decay,
                                  linear_cosine_decay, natural_exp_decay, piecewise_constant, polynomial_decay)
from .optimizer import Optimizer
from .optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer,
                         RMSPropOptimizer)
from .training_util import (assert_global_step, create_global_step, get_global_step, get_or_create_global_step,
                            global_step)
from . import basic_session_run_hooks, coordinator, monitored_session, session_manager, session_run_hook, supervisor
from . import input, queue_runner, sync_replicas_optimizer  # noqa: A004 - TF's module name

# The training-session utilities: coordinator, hooks, MonitoredSession, SessionManager, Supervisor.
_SESSION_EXPORTS = {
    "Coordinator": coordinator.Coordinator,
    "LooperThread": coordinator.LooperThread,
    "SessionRunHook": session_run_hook.SessionRunHook,
    "SessionRunArgs": session_run_hook.SessionRunArgs,
    "SessionRunContext": session_run_hook.SessionRunContext,
    "SessionRunValues": session_run_hook.SessionRunValues,
    "SecondOrStepTimer": basic_session_run_hooks.SecondOrStepTimer,
    "LoggingTensorHook": basic_session_run_hooks.LoggingTensorHook,
    "StopAtStepHook": basic_session_run_hooks.StopAtStepHook,
    "CheckpointSaverListener": basic_session_run_hooks.CheckpointSaverListener,
    "CheckpointSaverHook": basic_session_run_hooks.CheckpointSaverHook,
    "StepCounterHook": basic_session_run_hooks.StepCounterHook,
    "NanLossDuringTrainingError": basic_session_run_hooks.NanLossDuringTrainingError,
    "NanTensorHook": basic_session_run_hooks.NanTensorHook,
    "SummarySaverHook": basic_session_run_hooks.SummarySaverHook,
    "GlobalStepWaiterHook": basic_session_run_hooks.GlobalStepWaiterHook,
    "FinalOpsHook": basic_session_run_hooks.FinalOpsHook,
    "FeedFnHook": basic_session_run_hooks.FeedFnHook,
    "Scaffold": monitored_session.Scaffold,
    "SessionCreator": monitored_session.SessionCreator,
    "ChiefSessionCreator": monitored_session.ChiefSessionCreator,
    "WorkerSessionCreator": monitored_session.WorkerSessionCreator,
    "MonitoredSession": monitored_session.MonitoredSession,
    "SingularMonitoredSession": monitored_session.SingularMonitoredSession,
    "MonitoredTrainingSession": monitored_session.MonitoredTrainingSession,
    "SessionManager": session_manager.SessionManager,
    "Supervisor": supervisor.Supervisor,
}

EXPORTS = {
    "Optimizer": Optimizer,
    "GradientDescentOptimizer": GradientDescentOptimizer,
    "MomentumOptimizer": MomentumOptimizer,
    "AdagradOptimizer": AdagradOptimizer,
    "AdamOptimizer": AdamOptimizer,
    "RMSPropOptimizer": RMSPropOptimizer,
    "global_step": global_step,
    "get_global_step": get_global_step,
    "create_global_step": create_global_step,
    "get_or_create_global_step": get_or_create_global_step,
    "assert_global_step": assert_global_step,
    "exponential_decay": exponential_decay,
    "natural_exp_decay": natural_exp_decay,
    "inverse_time_decay": inverse_time_decay,
    "polynomial_decay": polynomial_decay,
    "piecewise_constant": piecewise_constant,
    "piecewise_constant_decay": piecewise_constant,
    "cosine_decay": cosine_decay,
    "cosine_decay_restarts": cosine_decay_restarts,
    "linear_cosine_decay": linear_cosine_decay,
    **_SESSION_EXPORTS,
    **queue_runner.EXPORTS,  # QueueRunner, add_queue_runner, start_queue_runners, tf.train.queue_runner
    **input.EXPORTS,  # tf.train.batch, shuffle_batch, string_input_producer...
    **sync_replicas_optimizer.EXPORTS,
}

__all__ = list(EXPORTS) + ["learning_rate_decay", "training_ops", "training_util", "EXPORTS"]
