"""tf.train.SyncReplicasOptimizer (TF 1.15's python/training/sync_replicas_optimizer.py).

Synchronous data-parallel training over replicas (typically between-graph: each worker
process builds the same graph, variables on the ps tasks):

- each replica computes its gradients and, instead of applying them, pushes them into one
  ConditionalAccumulator per variable (on the variable's device, shared by every replica
  through ``shared_name`` ``<variable name>/grad_accum``), tagged with its local step
  (``sync_rep_local_step``, a local variable); an accumulator drops stale gradients (a local
  step older than its own);
- then it waits for a token in ``sync_token_q`` (a FIFOQueue on the global step's device)
  and sets its local step to the token (the global step of the update it waited for);
- the chief runs the chief queue runner (``get_chief_queue_runner``): it takes the average
  of ``replicas_to_aggregate`` gradients from each accumulator, applies them with the
  wrapped optimizer (which increments the global step), then enqueues
  ``max(total_num_replicas, replicas_to_aggregate)`` tokens holding the new global step.

``make_session_run_hook(is_chief, num_tokens=-1)`` gives the hook that does the set-up
in a MonitoredSession: it checks ``ready_for_local_init_op`` (the global variables are
initialized), runs the local init op (``chief_init_op`` on the chief: the local step and the
accumulators' steps set to the global step; ``local_step_init_op`` elsewhere), fills the
token queue with ``num_tokens`` tokens (``replicas_to_aggregate`` for -1) and starts the
chief queue runner on the chief.

Gradients are averaged, not summed: scale the learning rate with the number of replicas
accordingly. tfc runs the queues and accumulators as host ops (tfc/frontend/data_flow_ops.py);
a dequeue waiting for its token lets go of the session and honours the step's deadline.
"""
from __future__ import annotations

from .. import dtypes
from .. import tf_logging as logging
from ..graph import GraphKeys, Tensor, colocate_with, control_dependencies, device, name_scope
from .optimizer import Optimizer
from .session_run_hook import SessionRunHook


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the gradients of ``replicas_to_aggregate`` replicas, then applies them with
    ``opt`` (see the module docstring)."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        logging.info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s", replicas_to_aggregate,
                     total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step = None
        self._sync_token_queue = None
        # the op synchronizing the replicas, run by the chief's queue runner
        self._chief_queue_runner = None
        # [(accumulator, device)]: the chief sets their step to the global step
        self._accumulator_list = []

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's compute_gradients (clip per replica here if you want)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The replicas' train op: push the gradients to the accumulators, then wait for a
        token and set the local step to it. Builds the chief's synchronization op too."""
        from ..data_flow_ops import ConditionalAccumulator, FIFOQueue
        from ..ops.array_ops import fill
        from ..ops.control_flow_ops import group, no_op
        from ..ops.state_ops import assign
        from ..variables import Variable, global_variables, report_uninitialized_variables
        from .queue_runner import QueueRunner

        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        train_ops = []
        aggregated_grad = []
        var_list = []

        # the local anchor is placed on this worker task (the current device); the local step
        # is colocated with it, so that it does not go to a ps task
        local_anchor = no_op()
        with colocate_with(local_anchor):
            self._local_step = Variable(initial_value=0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                        dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

        with name_scope(None, self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with device(var.device):
                    if grad is None:
                        aggregated_grad.append(None)  # pass-through
                        continue
                    if isinstance(grad, Tensor):
                        grad_accum = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                            shared_name=var.name + "/grad_accum")
                        train_ops.append(grad_accum.apply_grad(grad, local_step=self._local_step))
                        aggregated_grad.append(grad_accum.take_grad(self._replicas_to_aggregate))
                    elif type(grad).__name__ == "IndexedSlices":
                        raise NotImplementedError(
                            f"tfc does not implement tf.SparseConditionalAccumulator yet: SyncReplicasOptimizer "
                            f"needs one for the IndexedSlices gradient of {var.name}")
                    else:
                        raise ValueError("Unknown grad type!")
                    self._accumulator_list.append((grad_accum, var.device))

            aggregated_grads_and_vars = zip(aggregated_grad, var_list)

            # the update goes where the global step is
            with device(global_step.device), name_scope(""):
                update_op = self._opt.apply_gradients(aggregated_grads_and_vars, global_step)

            # the token queue, and a dummy one for the chief's queue runner: closing the real
            # one when the runner stops would leave it closed on the ps for later sessions
            with device(global_step.device), name_scope(""):
                sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q",
                                             shared_name="sync_token_q")
                self._sync_token_queue = sync_token_queue
                dummy_queue = FIFOQueue(1, dtypes.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue")

            with device(global_step.device), name_scope(""):
                # replicas wait for a token before their next step
                with control_dependencies(train_ops):
                    token = sync_token_queue.dequeue()
                train_op = assign(self._local_step, token)

                with control_dependencies([update_op]):
                    # the tokens of the next step, once the variables are updated
                    tokens = fill([self._tokens_per_step], global_step)
                    sync_op = sync_token_queue.enqueue_many((tokens,))

                if self._variable_averages is not None:
                    with control_dependencies([sync_op]), name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)

                self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op])
            for accum, dev in self._accumulator_list:
                with device(dev):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    def get_chief_queue_runner(self):
        """The QueueRunner the chief runs: aggregate, apply, bump the global step, hand out tokens."""
        if self._gradients_applied is False:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def variables(self):
        """The wrapped optimizer's variables (not the local step)."""
        return self._opt.variables()

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def get_init_tokens_op(self, num_tokens=-1):
        """The op filling ``sync_token_q`` with ``num_tokens`` tokens (``replicas_to_aggregate``
        for -1): at least ``replicas_to_aggregate - total_num_replicas`` are needed."""
        from ..ops.array_ops import fill
        from ..ops.control_flow_ops import no_op

        if self._gradients_applied is False:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError("Too few tokens to finish the first step: %d (given) vs %d (needed)"
                             % (num_tokens, tokens_needed))
        if num_tokens > 0:
            with device(self._global_step.device), name_scope(""):
                tokens = fill([num_tokens], self._global_step)
                init_tokens = self._sync_token_queue.enqueue_many((tokens,))
        else:
            init_tokens = no_op(name="no_init_tokens")
        return init_tokens

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook initializing the synchronization in a MonitoredSession."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the SyncReplicasOptimizer's local init (chief_init_op or local_step_init_op) once
    the model is ready for it, fills the token queue and starts the chief queue runner."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        if self._sync_optimizer._gradients_applied is False:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        if self._is_chief:
            self._local_init_op = self._sync_optimizer.chief_init_op
            self._ready_for_local_init_op = self._sync_optimizer.ready_for_local_init_op
            self._q_runner = self._sync_optimizer.get_chief_queue_runner()
            self._init_tokens_op = self._sync_optimizer.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = self._sync_optimizer.local_step_init_op
            self._ready_for_local_init_op = self._sync_optimizer.ready_for_local_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session, coord):
        """Runs the SyncReplicasOptimizer's initialization ops."""
        from .session_manager import _ready

        local_init_success, msg = _ready(self._ready_for_local_init_op, session,
                                         "Model is not ready for SyncReplicasOptimizer local init.")
        if not local_init_success:
            raise RuntimeError("Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                               "Init op: %s, error: %s" % (self._local_init_op.name, msg))
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)


EXPORTS = {"SyncReplicasOptimizer": SyncReplicasOptimizer}
