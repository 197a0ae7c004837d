"""tf.train.Optimizer (TF 1.15's python/training/optimizer.py, graph mode).

``minimize`` = ``compute_gradients`` (tf.gradients of the loss for the variables' refs,
gated per op or for the whole graph) + ``apply_gradients``, which builds exactly TF's
graph: slots and non-slot variables created under ``init_scope``, then inside the name
scope ``<name>`` (the optimizer's name, uniquified): ``_prepare`` (hyper-parameter
constants such as ``GradientDescent/learning_rate``), one ``update_<var>`` scope per
variable, colocated with it, holding the training op (``GradientDescent/update_w/
ApplyGradientDescent``), and ``_finish``: a group named after the scope
(``GradientDescent``), or, with a global step, a group ``update`` followed by the
``AssignAdd`` of the step named after the scope. The returned op joins the TRAIN_OP
collection.
"""
from __future__ import annotations

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import GraphKeys, Tensor, colocate_with, control_dependencies, get_collection_ref
from ..graph import get_default_graph, init_scope, name_scope
from ..trackable import OptimizerTrackable
from . import slot_creator


def _var_key(var):
    """The key of ``var`` in the slot dictionaries: (graph, op name); an eager variable's
    unique id (eager names are not unique)."""
    if hasattr(var, "_unique_id"):
        return var._unique_id
    if hasattr(var, "op"):
        return (var.op.graph, var.op.name)
    return id(var)


def _is_variable(v) -> bool:
    from ..variables import Variable

    return isinstance(v, Variable)


class _RefVariableProcessor:
    """A tf.Variable: gradients are taken for its ref, updates applied by _apply_dense."""

    def __init__(self, v):
        self._v = v

    def __str__(self):
        return f"<_RefVariableProcessor({self._v})>"

    def target(self):
        return self._v._ref()

    def update_op(self, optimizer, g):
        if not isinstance(g, Tensor):
            raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
        update_op = optimizer._apply_dense(g, self._v)
        if self._v.constraint is not None:
            with control_dependencies([update_op]):
                return self._v.assign(self._v.constraint(self._v))
        return update_op


class _TensorProcessor:
    """A plain Tensor: it has gradients but cannot be updated."""

    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v

    def update_op(self, optimizer, g):
        raise NotImplementedError("Trying to update a Tensor ", self._v)


def _get_processor(v):
    if _is_variable(v):
        return _RefVariableProcessor(v)
    if isinstance(v, Tensor):
        return _TensorProcessor(v)
    raise NotImplementedError("Trying to optimize unsupported type ", v)


def _flatten(values) -> list:
    if isinstance(values, dict):
        return [leaf for key in sorted(values) for leaf in _flatten(values[key])]
    if isinstance(values, (list, tuple)):
        return [leaf for item in values for leaf in _flatten(item)]
    return [values]


def _eager_or_trace():
    """'eager' when executing eagerly, 'trace' inside a defun trace, else None."""
    graph = get_default_graph()
    if getattr(graph, "_is_eager", False):
        return "eager"
    return "trace" if getattr(graph, "_init_scope_graph", None) is not None else None


def _tape_gradients(loss, var_list, grad_loss) -> list:
    """TF 1.x's compute_gradients of a callable loss: a GradientTape watching ``var_list``
    (else the variables the loss reads)."""
    from ..eager.tape import GradientTape

    with GradientTape() as tape:
        if var_list is not None:
            var_list = _flatten(var_list)
            tape.watch(var_list)
        loss_value = loss()
    if var_list is None:
        var_list = list(tape.watched_variables())
    if not var_list:
        raise ValueError("No variables to optimize.")
    grads = tape.gradient(loss_value, var_list, grad_loss)
    return list(zip(grads, var_list))


class Optimizer(OptimizerTrackable):  # OptimizerTrackable: object-based checkpoints
    """Base class for optimizers; subclasses implement _create_slots, _prepare,
    _apply_dense and (optionally) _finish."""

    # Values for gate_gradients.
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        # {slot_name: {_var_key(variable): slot variable}}
        self._slots: dict = {}
        # {(name, graph): variable}
        self._non_slot_dict: dict = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API ------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        """compute_gradients then apply_gradients: the op that updates ``var_list``
        (and increments ``global_step`` when given)."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not support gradients, "
                f"between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """A list of (gradient, variable) pairs; the gradient is None where ``loss``
        does not depend on the variable."""
        from ..gradients import gradients
        from ..ops.control_flow_ops import tuple as grad_tuple
        from ..variables import trainable_variables

        if callable(loss) and _eager_or_trace():
            return _tape_gradients(loss, var_list, grad_loss)  # TF 1.x: a GradientTape (tfc/frontend/eager)
        if callable(loss):
            loss = loss()
        elif _eager_or_trace() == "eager":
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a function when eager "
                               "execution is enabled.")
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             f"Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([grad_loss])
        if var_list is None:
            var_list = trainable_variables() + list(get_default_graph().get_collection(
                GraphKeys.TRAINABLE_RESOURCE_VARIABLES))
        else:
            var_list = _flatten(var_list)
        var_list += get_default_graph().get_collection("streaming_model_ports")  # GraphKeys._STREAMING_MODEL_PORTS
        processors = [_get_processor(v) for v in var_list]
        if not var_list:
            raise ValueError("No variables to optimize.")
        var_refs = [p.target() for p in processors]
        grads = gradients(loss, var_refs, grad_ys=grad_loss, gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = grad_tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None and v.dtype != dtypes.resource])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The op applying the gradients (and incrementing ``global_step`` when given)."""
        grads_and_vars = tuple(grads_and_vars)  # repeat iteration works
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for pair in grads_and_vars:
            g, v = pair
            if g is not None:
                try:
                    g = convert_to_tensor(g)
                except TypeError:
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}") from None
                if not isinstance(g, Tensor):
                    raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
            converted.append((g, v, _get_processor(v)))
        converted = tuple(converted)
        var_list = [v for g, v, _ in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {([str(v) for _, v, _ in converted],)}.")
        with init_scope():
            self._create_slots(var_list)
        update_ops = []
        with name_scope(name, self._name) as name:
            self._prepare()
            for grad, var, processor in converted:
                if grad is None:
                    continue
                scope_name = var.op.name
                with name_scope("update_" + scope_name), colocate_with(var):
                    update_ops.append(processor.update_op(self, grad))
            if global_step is None:
                apply_updates = self._finish(update_ops, name)
            else:
                from ..ops.state_ops import assign_add

                with control_dependencies([self._finish(update_ops, "update")]):
                    with colocate_with(global_step):
                        apply_updates = assign_add(global_step, 1, name=name)
            if isinstance(apply_updates, Tensor):
                apply_updates = apply_updates.op
            train_op = get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_op:
                train_op.append(apply_updates)
            return apply_updates

    def get_slot(self, var, name):
        """The slot variable ``name`` created for ``var``, or None."""
        named_slots = self._slots.get(name, None)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var), None)

    def get_slot_names(self) -> list:
        return sorted(self._slots.keys())

    def variables(self) -> list:
        """The optimizer's variables in the default graph (slots and non-slot ones), by name."""
        current_graph = get_default_graph()

        def from_current_graph(variable):
            return variable.op.graph is current_graph

        optimizer_variables = [v for v in self._non_slot_variables() if from_current_graph(v)]
        for variable_dict in self._slots.values():
            for slot_for_variable in variable_dict.values():
                if from_current_graph(slot_for_variable):
                    optimizer_variables.append(slot_for_variable)
        return sorted(optimizer_variables, key=lambda v: v.name)

    # -- non-slot variables ----------------------------------------------------------------
    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable of the optimizer itself (Adam's beta1_power), one per graph,
        colocated with ``colocate_with``."""
        from ..graph import colocate_with as colocate
        from ..variables import Variable

        primary = colocate_with
        key = (name, primary.graph)
        v = self._non_slot_dict.get(key, None)
        if v is None:
            with colocate(primary):
                v = Variable(initial_value, name=name, trainable=False)
            self._handle_deferred_dependencies(name=name, trackable=v)  # restore from a checkpoint waiting for it
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slot_dict.get((name, graph), None)

    def _non_slot_variables(self):
        return self._non_slot_dict.values()

    def _assert_valid_dtypes(self, tensors) -> None:
        valid_dtypes = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid_dtypes:
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: {[v for v in valid_dtypes]}.")

    # -- what subclasses implement -----------------------------------------------------------
    def _valid_dtypes(self):
        return [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]

    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _apply_sparse(self, grad, var):
        raise NotImplementedError()

    def _finish(self, update_ops, name_scope):
        from ..ops.control_flow_ops import group

        return group(*update_ops, name=name_scope)

    # -- slot helpers for subclasses -----------------------------------------------------------
    def _slot_dict(self, slot_name) -> dict:
        named_slots = self._slots.get(slot_name, None)
        if named_slots is None:
            named_slots = {}
            self._slots[slot_name] = named_slots
        return named_slots

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot(var, val, op_name)
            self._restore_slot_variable(slot_name, var, named_slots[_var_key(var)])  # checkpoint waiting for it
        return named_slots[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name, op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot_with_initializer(var, initializer, shape, dtype,
                                                                                 op_name)
            self._restore_slot_variable(slot_name, var, named_slots[_var_key(var)])  # checkpoint waiting for it
        return named_slots[_var_key(var)]

    def _zeros_slot(self, var, slot_name, op_name):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
            self._restore_slot_variable(slot_name, var, named_slots[_var_key(var)])  # checkpoint waiting for it
        return named_slots[_var_key(var)]

    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

