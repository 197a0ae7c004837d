"""tf.train.ExponentialMovingAverage and assign_moving_average (TF 1.15's
python/training/moving_averages.py, graph mode, default distribution strategy).

``apply`` makes one slot per variable or tensor (``v/ExponentialMovingAverage``, created
under ``init_scope`` by slot_creator: initialised to the variable's initial value, or to
zeros for a tensor) and, inside the name scope ``ExponentialMovingAverage``, one
``AssignMovingAvg`` update per slot: ``avg -= (avg - value) * (1 - decay)``. With
``num_updates`` the decay is ``min(decay, (1 + num_updates) / (10 + num_updates))``. With
``zero_debias`` the averages of tensors are debiased as TF does (variables
``<avg>/biased`` and ``<avg>/local_step``: ``avg = biased / (1 - decay^step)``).
"""
from __future__ import annotations

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import GraphKeys, add_to_collection, get_default_graph, init_scope, name_scope
from ..ops import math_ops, state_ops
from . import slot_creator


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay), as an AssignSub named after the scope
    ``AssignMovingAvg`` (zero-debiased through ``<variable>/biased`` when asked)."""
    with name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        decay = convert_to_tensor(1.0 - decay, name="decay")
        if decay.dtype != variable.dtype.base_dtype:
            decay = math_ops.cast(decay, variable.dtype.base_dtype)
        if zero_debias:
            return _zero_debias(variable, value, decay, scope)
        return state_ops.assign_sub(variable, (variable - value) * decay, name=scope)


def _zero_debias(unbiased_var, value, decay, scope):
    """TF's _zero_debias: ``biased`` and ``local_step`` variables in the variable scope of
    the average; the average is assigned biased / (1 - (1 - decay)^local_step)."""
    from ..initializers import zeros_initializer
    from ..variable_scope import get_variable, get_variable_scope, variable_scope

    with variable_scope(unbiased_var.name[:-len(":0")], values=[unbiased_var, value, decay]):
        with init_scope():
            biased_initializer = zeros_initializer()
            local_step_initializer = zeros_initializer()

        def _maybe_get_unique(name):
            if get_variable_scope().reuse:
                return name
            vs_vars = [x.op.name for x in get_variable_scope().global_variables()]
            full_name = get_variable_scope().name + "/" + name
            if full_name not in vs_vars:
                return name
            idx = 1
            while full_name + "_%d" % idx in vs_vars:
                idx += 1
            return name + "_%d" % idx

        biased_var = get_variable(_maybe_get_unique("biased"), initializer=biased_initializer,
                                  shape=unbiased_var.get_shape(), dtype=unbiased_var.dtype.base_dtype,
                                  trainable=False)
        local_step = get_variable(_maybe_get_unique("local_step"), shape=[], dtype=unbiased_var.dtype.base_dtype,
                                  initializer=local_step_initializer, trainable=False)
    update_biased = state_ops.assign_sub(biased_var, (biased_var - value) * decay)
    update_local_step = local_step.assign_add(1)
    bias_factor = 1 - math_ops.pow(1.0 - decay, update_local_step)
    return state_ops.assign(unbiased_var, update_biased / bias_factor, name=scope)


def _ref_key(v):
    return id(v)


class ExponentialMovingAverage:
    """Maintains moving averages of variables (and tensors) by exponential decay."""

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}
        self._keep: dict = {}  # id -> the variable or tensor (keeps the id valid)

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Create the averages of ``var_list`` (the trainable variables when None) and
        return the op updating them all (a group named ``ExponentialMovingAverage``)."""
        from ..ops.control_flow_ops import group
        from ..variables import Variable, trainable_variables

        if var_list is None:
            var_list = trainable_variables()
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64]:
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            if _ref_key(var) not in self._averages:
                with init_scope():
                    if isinstance(var, Variable):
                        avg = slot_creator.create_slot(var, var.initialized_value(), self.name,
                                                       colocate_with_primary=True)
                        add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                    else:
                        avg = slot_creator.create_zeros_slot(
                            var, self.name,
                            colocate_with_primary=(var.op.type in ["Variable", "VariableV2", "VarHandleOp"]))
                        if self._zero_debias:
                            zero_debias_true.add(id(avg))
                self._averages[_ref_key(var)] = avg
                self._keep[_ref_key(var)] = var
        with name_scope(self.name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = []
            for var in var_list:
                avg = self._averages[_ref_key(var)]
                zero_debias = id(avg) in zero_debias_true
                updates.append(assign_moving_average(avg, var, decay, zero_debias=zero_debias))
            return group(*updates, name=scope)

    def average(self, var):
        """The variable holding the average of ``var`` (None if it has none)."""
        return self._averages.get(_ref_key(var), None)

    def average_name(self, var):
        """The name of the average of ``var`` (what it would be when it has none yet)."""
        if _ref_key(var) in self._averages:
            return self._averages[_ref_key(var)].name[:-len(":0")]
        return get_default_graph().unique_name(var.name[:-len(":0")] + "/" + self.name, mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable}: the averages' names map to the variables (so a
        Saver restores the averages into them), the other global variables keep theirs."""
        from ..variables import global_variables, moving_average_variables, trainable_variables

        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables()
            moving_avg_variables += moving_average_variables()
        unique = {id(v): v for v in moving_avg_variables}
        for v in unique.values():
            name_map[self.average_name(v)] = v
        moving_avg_variable_names = {v.name for v in unique.values()}
        for v in global_variables():
            if v.name not in moving_avg_variable_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


EXPORTS = {"ExponentialMovingAverage": ExponentialMovingAverage}
