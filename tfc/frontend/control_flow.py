"""TF1 control flow (v1: Switch/Merge/Enter/Exit/NextIteration/LoopCond): tf.cond, tf.case
and tf.while_loop, built with TensorFlow 1.15's exact graph structure and names.

Follows tensorflow/python/ops/control_flow_ops.py of r1.15 (control flow v2 off):

- ``tf.cond`` makes ``cond/Switch`` (pred, pred), the pivots ``cond/switch_t`` /
  ``cond/switch_f`` and ``cond/pred_id``, builds each branch inside a :class:`CondContext`
  and joins the outputs with ``cond/Merge``, ``cond/Merge_1``... A tensor from outside a
  branch enters it through a ``Switch`` created when the first op of the branch uses it
  (named after that op: ``cond/mul/Switch``); a branch returning an outside tensor
  directly switches it in under the cond's scope (``cond/Switch_1``).
- ``tf.while_loop`` builds a :class:`WhileContext`: per loop variable ``Enter`` ->
  ``Merge`` -> (cond) -> ``LoopCond`` -> ``Switch`` -> ``Identity`` -> (body) ->
  ``NextIteration`` (back into the Merge) and ``Exit``; loop-invariant tensors the loop
  uses enter through ``Enter`` ops with ``is_constant=True`` (``while/mul/Enter``).

Every op created inside a branch or a loop records its context in
``op._control_flow_context`` (the graph's current context when it was created; see the
``Graph.create_op`` hook that calls ``ctx.AddOp(op)``). Contexts nest through
``outer_context``. Besides TF's own attributes the contexts keep what a lowering of the
whole construct needs (documented on each class).

The gradients of the primitives are TF 1.15's (control_flow_grad.py): a cond's Merge and
Switch become a Switch and a Merge (``cond_grad``); a while loop's become a backprop
while loop (``gradients/while/...``) built with the loop state of
``tfc/frontend/control_flow_state.py``: Exit -> Enter (``b_exit``), Switch -> Merge
(``b_switch``, its back edge added on the second visit), Merge -> Switch on the backprop
loop's pivot, NextIteration -> identity, Enter -> Exit (a loop variable) or an
accumulation loop (``b_acc``, a loop invariant). :class:`WhileContext` carries TF's
backprop machinery: ``grad_state``, the forward and backprop loop counters
(``AddForwardLoopCounter``, ``AddBackpropLoopCounter``), ``AddBackpropAccumulator``, and
``AddValue``/``AddOp`` fetching forward values through stacks while building a backprop
loop.
"""
from __future__ import annotations

import builtins
import collections
import functools

from . import dtypes
from .convert import convert_to_tensor
from .graph import GraphKeys, Operation, Tensor, colocate_with, control_dependencies, get_default_graph, name_scope
from .op_helper import apply_op
from .ops import inference_context as ic
from .registry import Attr, OpType, register
from .tensor_shape import TensorShape


# =============================================================================================
# the primitive op types
# =============================================================================================
# Shape functions follow tensorflow/core/ops/control_flow_ops.cc. The ops are lowered as
# whole constructs (a cond, a while loop), never one by one: their per-op lowering only
# reports where the op came from.
def _lower_control_flow_primitive(ctx, op, *inputs):
    """Refuse a control-flow primitive reached on its own (see the module comment)."""
    del inputs
    file, line = op.location
    where = f"created at {file}:{line}" if file else "created at an unknown location"
    ctx.fail(f"'{op.name}' (op type {op.type}, {where}) is a TF1 control-flow primitive: tf.cond / tf.case / "
             f"tf.while_loop are lowered as a whole construct, not op by op, and this {op.type} is not part of "
             f"a construct the compiler recognised")


def _switch_infer(op) -> list:
    """SwitchShape: pred must be a scalar; both outputs have the data's shape."""
    ic.with_rank(ic.as_dims(op._inputs[1].shape), 0)
    return [op._inputs[0].shape, op._inputs[0].shape]


def _merge_infer(op) -> list:
    """MergeShape: input 0's shape with every dim that differs in another input made
    unknown (unknown rank if a rank differs or is unknown); value_index is a scalar."""
    out = ic.as_dims(op._inputs[0].shape)
    if out is not None:
        for t in op._inputs[1:]:
            dims = ic.as_dims(t.shape)
            if dims is None or len(dims) != len(out):
                out = None
                break
            out = [d if d == e else None for d, e in zip(out, dims)]
    return [out, []]


def _enter_infer(op) -> list:
    """Enter: unknown shape unless is_constant (then the input's); tf.while_loop sets the
    shape of its loop-variable Enters (the input's, or the shape invariant) afterwards."""
    return [op._inputs[0].shape if op._attrs["is_constant"] else None]


def _unchanged_infer(op) -> list:
    return [op._inputs[0].shape]


def _loop_cond_infer(op) -> list:
    """UnchangedShapeWithRank(c, 0)."""
    ic.with_rank(ic.as_dims(op._inputs[0].shape), 0)
    return [[]]


def _switch_grad(op, *grads):
    """TF 1.15's _SwitchGrad.

    A loop's Switch is visited twice: first from its Exit (``grads[0]``), when the
    backprop Merge ``b_switch`` is made with that gradient on both inputs (recorded in the
    grad state's ``switch_map``), then from the body (``grads[1]``), which becomes the
    Merge's back edge (a NextIteration). A cond's Switch: Merge the two branches'
    gradients (``cond_grad``; the untaken branch's is zeros made behind a Switch, see
    ``zeros_like_outside_loop``); the predicate gets none."""
    context = op._control_flow_context
    grad_ctxt = get_default_graph()._get_control_flow_context()
    if isinstance(context, WhileContext):
        merge_grad = grad_ctxt.grad_state.switch_map.get(op)
        if merge_grad is not None:
            if grads[1] is not None:
                _AddNextAndBackEdge(merge_grad, grads[1], enforce_shape_invariant=False)
            return None, None
        if grads[0] is not None:
            merge_grad = merge([grads[0], grads[0]], name="b_switch")[0]
            grad_ctxt.grad_state.switch_map[op] = merge_grad
            return merge_grad, None
        return None, None
    if isinstance(context, CondContext):
        if grads[1 - context.branch] is None:
            return None, None
        return merge(list(grads), name="cond_grad")[0], None
    false_grad = switch(grads[0], op._inputs[1])[0]
    true_grad = switch(grads[1], op._inputs[1])[1]
    return merge([false_grad, true_grad])[0], None


def _merge_grad(op, grad, _):
    """TF 1.15's _MergeGrad. A loop's Merge: a Switch of the gradient on the backprop
    loop's LoopCond. A cond's Merge: a Switch of the gradient on the cond's predicate
    (``cond_grad``); inside a loop being differentiated, on the predicate's value for the
    iteration (kept on a stack in the forward loop, popped in the backprop loop)."""
    from .ops import math_ops

    context = get_output_context(op._inputs[0].op)
    grad_ctxt = get_default_graph()._get_control_flow_context()
    if isinstance(context, WhileContext):
        return list(_SwitchRefOrTensor(grad, grad_ctxt.pivot))
    if isinstance(context, CondContext):
        pred = context.pred
        if grad_ctxt is not None and grad_ctxt.grad_state is not None:
            grad_state = grad_ctxt.grad_state
            real_pred = grad_state.history_map.get(pred.name)
            if real_pred is None:
                grad_ctxt = grad_state.grad_context
                grad_ctxt.Exit()
                history_pred = grad_state.AddForwardAccumulator(pred)
                grad_ctxt.Enter()
                real_pred = grad_state.AddBackpropAccumulatedValue(history_pred, pred)
                grad_state.history_map[pred.name] = real_pred
            pred = real_pred
        return list(_SwitchRefOrTensor(grad, pred, name="cond_grad"))
    conditions = [math_ops.equal(op.outputs[1], i) for i in range(len(op._inputs))]
    return [_SwitchRefOrTensor(grad, conditions[i])[1] for i in range(len(op._inputs))]


def _exit_grad(op, grad):
    """TF 1.15's _ExitGrad: the gradient enters the backprop loop (``b_exit``, an Enter of
    the backprop frame); None when the loop has ``back_prop=False``."""
    grad_ctxt = get_default_graph()._get_control_flow_context()
    if not grad_ctxt.back_prop:
        return None
    if op._control_flow_context.grad_state is not None:
        raise TypeError("Second-order gradient for while loops not supported.")
    grad_ctxt.AddName(grad.name)
    grad_ctxt.Enter()
    result = _Enter(grad, grad_ctxt.name, is_constant=False, parallel_iterations=grad_ctxt.parallel_iterations,
                    name="b_exit")
    grad_ctxt.loop_enters.append(result)
    grad_ctxt.Exit()
    return result


def _next_iteration_grad(op, grad):
    """TF 1.15's _NextIterationGrad: the identity (the backprop NextIteration is added by
    the Switch's gradient)."""
    return grad


def _enter_grad(op, grad):
    """TF 1.15's _EnterGrad. A loop variable's Enter: the gradient leaves the backprop
    loop through an Exit. A loop invariant's (``is_constant``) Enter: the sum of every
    iteration's gradient, accumulated by a loop variable of the backprop loop (``b_acc``).
    Outside a backprop loop (or with ``back_prop=False``) the gradient passes through."""
    grad_ctxt = get_default_graph()._get_control_flow_context()
    if grad_ctxt is None or not grad_ctxt.back_prop or grad_ctxt.grad_state is None:
        return grad
    if op._attrs["is_constant"]:
        if not isinstance(grad, Tensor):
            raise TypeError(f"Type {type(grad)} not supported,must be Tensor or Indexed Slices")
        return grad_ctxt.AddBackpropAccumulator(op, grad)
    result = exit(grad)
    grad_ctxt.loop_exits.append(result)
    grad_ctxt.ExitResult([result])
    return result


def _loop_cond_grad(op, grad):
    """TF 1.15's _LoopCondGrad: no gradient flows to a loop's predicate."""
    return None


def zeros_like_outside_loop(op, index: int):
    """TF 1.15's ZerosLikeOutsideLoop: the zero gradient of output ``index`` of ``op``.
    For a cond's Switch the zeros are made behind a new Switch of its input, on the branch
    that did not use it, so they exist exactly when that branch runs."""
    from .ops import array_ops
    from .graph import control_dependencies

    value = op.outputs[index]
    context = op._control_flow_context if op.type in ("Switch", "RefSwitch") else None
    if not isinstance(context, CondContext):
        return array_ops.zeros_like(value, optimize=False)
    switch_value = switch(op._inputs[0], context.pred)[1 - context.branch]
    pivot = array_ops.identity(switch_value)
    zeros_shape = array_ops.shape_internal(switch_value, optimize=False)
    with control_dependencies([pivot]):
        return array_ops.zeros(zeros_shape, dtype=value.dtype.base_dtype)


def _primitive(type_name: str, inputs: list, outputs: list, attrs: dict, infer, doc: str, gradient) -> type:
    cls = type(type_name, (OpType,), {"inputs": inputs, "outputs": outputs, "attrs": attrs,
                                       "infer": staticmethod(infer), "gradient": staticmethod(gradient),
                                       "lower": staticmethod(_lower_control_flow_primitive), "__doc__": doc})
    return register(cls)


_T = {"T": Attr("type")}
_ENTER_ATTRS = {"T": Attr("type"), "frame_name": Attr("string"), "is_constant": Attr("bool", False),
                "parallel_iterations": Attr("int", 10)}
Switch = _primitive("Switch", ["data: T", "pred: bool"], ["output_false: T", "output_true: T"], _T,
                    _switch_infer, "Forwards data to output_true if pred, else to output_false.", _switch_grad)
RefSwitch = _primitive("RefSwitch", ["data: Ref(T)", "pred: bool"], ["output_false: Ref(T)", "output_true: Ref(T)"],
                       _T, _switch_infer, "Switch of a ref (a variable switched into a cond branch).", _switch_grad)
Merge = _primitive("Merge", ["inputs: N * T"], ["output: T", "value_index: int32"],
                   {"T": Attr("type"), "N": Attr("int")}, _merge_infer,
                   "Forwards the one available input, and its index.", _merge_grad)
RefMerge = _primitive("RefMerge", ["inputs: N * Ref(T)"], ["output: Ref(T)", "value_index: int32"],
                      {"T": Attr("type"), "N": Attr("int")}, _merge_infer, "Merge of refs.", _merge_grad)
Enter = _primitive("Enter", ["data: T"], ["output: T"], _ENTER_ATTRS, _enter_infer,
                   "Makes data available in the child frame frame_name.", _enter_grad)
RefEnter = _primitive("RefEnter", ["data: Ref(T)"], ["output: Ref(T)"], _ENTER_ATTRS, _enter_infer,
                      "Enter of a ref.", _enter_grad)
Exit = _primitive("Exit", ["data: T"], ["output: T"], _T, _unchanged_infer,
                  "Makes data available to the parent frame.", _exit_grad)
RefExit = _primitive("RefExit", ["data: Ref(T)"], ["output: Ref(T)"], _T, _unchanged_infer, "Exit of a ref.",
                     _exit_grad)
NextIteration = _primitive("NextIteration", ["data: T"], ["output: T"], _T, _unchanged_infer,
                           "Makes data available to the next iteration.", _next_iteration_grad)
RefNextIteration = _primitive("RefNextIteration", ["data: Ref(T)"], ["output: Ref(T)"], _T, _unchanged_infer,
                              "NextIteration of a ref.", _next_iteration_grad)
LoopCond = _primitive("LoopCond", ["input: bool"], ["output: bool"], {}, _loop_cond_infer,
                      "The loop-termination condition of a while loop (a scalar bool).", _loop_cond_grad)


# =============================================================================================
# nest (tensorflow/python/util/nest.py of TF 1.15, for lists, tuples, namedtuples, dicts)
# =============================================================================================
def _is_sequence(value) -> bool:
    return isinstance(value, (list, builtins.tuple, dict, collections.abc.Mapping))


def _is_namedtuple(value) -> bool:
    return isinstance(value, builtins.tuple) and hasattr(value, "_fields")


def _items(value) -> list:
    """The children of a sequence in nest's order (dicts by sorted key)."""
    if isinstance(value, (dict, collections.abc.Mapping)):
        return [value[key] for key in sorted(value)]
    return list(value)


def flatten(structure) -> list:
    if _is_sequence(structure):
        return [leaf for item in _items(structure) for leaf in flatten(item)]
    return [structure]


def _sequence_like(instance, args):
    if isinstance(instance, (dict, collections.abc.Mapping)):
        result = dict(zip(sorted(instance), args))
        return type(instance)((key, result[key]) for key in instance)
    if _is_namedtuple(instance):
        return type(instance)(*args)
    return type(instance)(args)


def _packed(structure, flat: list, index: int):
    packed = []
    for item in _items(structure):
        if _is_sequence(item):
            index, child = _packed(item, flat, index)
            packed.append(_sequence_like(item, child))
        else:
            packed.append(flat[index])
            index += 1
    return index, packed


def pack_sequence_as(structure, flat_sequence):
    flat_sequence = list(flat_sequence)
    if not _is_sequence(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat_sequence)} > 1")
        return flat_sequence[0]
    expected = len(flatten(structure))
    if expected != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {expected} elements, but flat_sequence had "
                         f"{len(flat_sequence)} elements.  Structure: {structure}, flat_sequence: {flat_sequence}.")
    _, packed = _packed(structure, flat_sequence, 0)
    return _sequence_like(structure, packed)


def _py_str(value) -> str:
    """TF's PyObjectToString."""
    return f"type={type(value).__name__} str={value}"


def _structure_mismatch(o1, o2, check_types: bool):
    """(message, is_type_error) of TF's AssertSameStructureHelper, or None."""
    seq1, seq2 = _is_sequence(o1), _is_sequence(o2)
    if seq1 != seq2:
        seq, non_seq = (o1, o2) if seq1 else (o2, o1)
        return (f'Substructure "{_py_str(seq)}" is a sequence, while substructure "{_py_str(non_seq)}" is not',
                False)
    if not seq1:
        return None
    if check_types:
        type1, type2 = type(o1), type(o2)
        same_namedtuple = (_is_namedtuple(o1) and _is_namedtuple(o2) and type1.__name__ == type2.__name__
                           and o1._fields == o2._fields)
        if type1 is not type2 and not same_namedtuple:
            return (f"The two namedtuples don't have the same sequence type. First structure {_py_str(o1)} has type "
                    f"{type1.__name__}, while second structure {_py_str(o2)} has type {type2.__name__}", True)
        if isinstance(o1, dict) and set(o1) != set(o2):
            return (f"The two dictionaries don't have the same set of keys. First structure has keys "
                    f"{_py_str(list(o1))}, while second structure has keys {_py_str(list(o2))}", False)
    items1, items2 = _items(o1), _items(o2)
    if len(items1) != len(items2):
        return (f"The two structures don't have the same number of elements. First structure: {_py_str(o1)}. "
                f"Second structure: {_py_str(o2)}", False)
    for a, b in zip(items1, items2):
        mismatch = _structure_mismatch(a, b, check_types)
        if mismatch:
            return mismatch
    return None


def assert_same_structure(nest1, nest2, check_types: bool = True) -> None:
    """nest.assert_same_structure with TF 1.15's messages (ValueError, TypeError for types)."""
    mismatch = _structure_mismatch(nest1, nest2, check_types)
    if mismatch:
        message, is_type_error = mismatch
        error = TypeError if is_type_error else ValueError
        raise error(f"The two structures don't have the same nested structure.\n\nFirst structure: {_py_str(nest1)}"
                    f"\n\nSecond structure: {_py_str(nest2)}\n\nMore specifically: {message}")


def map_structure(func, *structures, check_types: bool = True):
    for other in structures[1:]:
        assert_same_structure(structures[0], other, check_types=check_types)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


# =============================================================================================
# the primitive ops' Python wrappers
# =============================================================================================
def _outputs(op_type: str, inputs: list, attrs=None, name=None) -> list:
    return apply_op(op_type, inputs, attrs, name=name).outputs


def switch(data, pred, dtype=None, name=None):
    """(output_false, output_true): ``data`` forwarded to the output ``pred`` selects."""
    with name_scope(name, "Switch", [data, pred]) as scope:
        data = convert_to_tensor(data, dtype=dtype, name="data", as_ref=True)
        pred = convert_to_tensor(pred, name="pred")
        return builtins.tuple(_outputs("Switch", [data, pred], name=scope))


def ref_switch(data, pred, name=None):
    return builtins.tuple(_outputs("RefSwitch", [data, pred], name=name))


def _SwitchRefOrTensor(data, pred, name="Switch"):  # noqa: N802 - TF's name
    data = convert_to_tensor(data, name="data")
    with colocate_with(data, ignore_existing=True):
        if data.dtype.is_ref_dtype:
            return ref_switch(data, pred, name=name)
        return switch(data, pred, name=name)


def merge(inputs, name=None):
    """(output, value_index): a Merge (RefMerge when every input is a ref)."""
    if any(inp is None for inp in inputs):
        raise ValueError(f"At least one of the merge inputs is None: {inputs}")
    with name_scope(name, "Merge", inputs) as scope:
        inputs = [convert_to_tensor(inp, as_ref=True) for inp in inputs]
        op_type = "RefMerge" if all(t.dtype.is_ref_dtype for t in inputs) else "Merge"
        return builtins.tuple(_outputs(op_type, [inputs], name=scope))


def _Enter(data, frame_name, is_constant=False, parallel_iterations=10, use_ref=True,  # noqa: N802
           use_input_shape=True, name=None) -> Tensor:
    data = convert_to_tensor(data, as_ref=True)
    op_type = "RefEnter" if data.dtype.is_ref_dtype and use_ref else "Enter"
    result = _outputs(op_type, [data], {"frame_name": frame_name, "is_constant": is_constant,
                                        "parallel_iterations": parallel_iterations}, name=name)[0]
    if use_input_shape:
        result.set_shape(data.get_shape())
    return result


def exit(data, name=None) -> Tensor:  # noqa: A001 - TF's name
    data = convert_to_tensor(data, as_ref=True)
    return _outputs("RefExit" if data.dtype.is_ref_dtype else "Exit", [data], name=name)[0]


def _NextIteration(data, name=None) -> Tensor:  # noqa: N802
    data = convert_to_tensor(data, as_ref=True)
    return _outputs("RefNextIteration" if data.dtype.is_ref_dtype else "NextIteration", [data], name=name)[0]


def loop_cond(pred, name=None) -> Tensor:
    return _outputs("LoopCond", [pred], name=name)[0]


def _Identity(data, name=None) -> Tensor:  # noqa: N802
    data = convert_to_tensor(data, as_ref=True)
    return _outputs("RefIdentity" if data.dtype.is_ref_dtype else "Identity", [data], name=name)[0]


def _identity(data, name=None) -> Tensor:
    return _outputs("Identity", [data], name=name)[0]


# =============================================================================================
# control_flow_util
# =============================================================================================
def _is_loop_exit(op) -> bool:
    return op.type in ("Exit", "RefExit")


def _is_loop_enter(op) -> bool:
    return op.type in ("Enter", "RefEnter")


def _is_loop_constant_enter(op) -> bool:
    return _is_loop_enter(op) and bool(op._attrs.get("is_constant"))


def get_output_context(op):
    """The context of ``op``'s outputs (an Exit's outputs belong to the outer context)."""
    ctxt = op._control_flow_context
    if ctxt is not None and _is_loop_exit(op):
        ctxt = ctxt.outer_context
    return ctxt


def _is_containing_context(ctxt, maybe_containing) -> bool:
    while ctxt is not maybe_containing:
        if ctxt is None:
            return False
        ctxt = ctxt.outer_context
    return True


def op_in_context(op, ctxt) -> bool:
    return _is_containing_context(op._control_flow_context, ctxt)


def _is_switch(op) -> bool:
    return op.type in ("Switch", "RefSwitch")


def _is_cond_switch(op) -> bool:
    """TF's IsCondSwitch: a Switch whose every consumer is in a cond (an Enter's consumer
    counted in the Enter's outer context)."""
    if not _is_switch(op) or not op.outputs:
        return False
    is_cond_switch = True
    for o in op.outputs:
        for c in o.consumers():
            ctxt = c._control_flow_context
            if _is_loop_enter(c):
                ctxt = ctxt.outer_context
            is_cond_switch = is_cond_switch and ctxt is not None and ctxt.IsCondContext()
    return is_cond_switch


def _is_loop_switch(op) -> bool:
    """TF's IsLoopSwitch: the Switch of a while loop's variable (not a cond's Switch)."""
    if _is_switch(op):
        ctxt = op._control_flow_context
        return ctxt is not None and ctxt.IsWhileContext() and not _is_cond_switch(op)
    return False


def get_loop_constant_enter(value):
    """TF's GetLoopConstantEnter: the ``is_constant`` Enter ``value`` forwards (through
    Switch / Identity), or None."""
    op = value.op
    while op.type in ("Switch", "RefSwitch", "Identity", "RefIdentity"):
        op = op.inputs[0].op
    return op if _is_loop_constant_enter(op) else None


def get_while_context(op):
    """TF's util.GetWhileContext: the innermost while loop ``op`` is in, or None."""
    ctxt = op._control_flow_context
    if ctxt is not None:
        ctxt = ctxt.GetWhileContext()
    return ctxt


# =============================================================================================
# contexts
# =============================================================================================
class ControlFlowContext:
    """Base of CondContext and WhileContext (TF's ControlFlowContext).

    ``outer_context``: the context this one was created in (None at top level);
    ``_values``: names of the tensors seen in this context; ``_external_values``: outside
    tensor name -> the tensor standing for it inside (a Switch/Enter output);
    ``_nested_contexts``: the contexts created inside this one.
    """

    def __init__(self):
        self._graph = get_default_graph()
        self._nested_contexts: list = []
        self._outer_context = self._graph._get_control_flow_context()
        if self._outer_context is not None:
            self._outer_context._nested_contexts.append(self)
        self._context_stack: list = []
        self._values: set = set()
        self._external_values: dict = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def outer_context(self):
        return self._outer_context

    @property
    def nested_contexts(self) -> list:
        return list(self._nested_contexts)

    @property
    def external_values(self) -> dict:
        """Outside tensor name -> the tensor that stands for it in this context."""
        return dict(self._external_values)

    def AddName(self, name: str) -> None:  # noqa: N802 - TF's method names
        self._values.add(name)

    def Enter(self) -> None:  # noqa: N802
        graph = get_default_graph()
        self._context_stack.append(graph._get_control_flow_context())
        graph._set_control_flow_context(self)

    def Exit(self) -> None:  # noqa: N802
        graph = get_default_graph()
        graph._set_control_flow_context(self._context_stack.pop())

    def ExitResult(self, result) -> None:  # noqa: N802
        """Make the result tensors known to the outer context."""
        if self._outer_context is not None:
            for x in flatten(result):
                self._outer_context.AddName(x.name)

    def GetWhileContext(self):  # noqa: N802
        if self._outer_context is not None:
            return self._outer_context.GetWhileContext()
        return None

    @property
    def grad_state(self):
        """The _GradLoopState of the backprop while loop this context is (in), or None
        (TF's CondContext.grad_state; WhileContext overrides it)."""
        while_ctxt = self.GetWhileContext()
        return while_ctxt.grad_state if while_ctxt is not None else None

    def _RemoveExternalControlEdges(self, op):  # noqa: N802
        """Drop control inputs of ``op`` from outside the enclosing while loop; returns
        (internal, external) control inputs."""
        while_ctxt = self.GetWhileContext()
        if while_ctxt is None:
            internal, external = op.control_inputs, []
        else:
            internal, external = [], []
            for x in op.control_inputs:
                ctxt = get_output_context(x)
                if ctxt is not None and ctxt.GetWhileContext() is while_ctxt:
                    internal.append(x)
                else:
                    external.append(x)
        if len(internal) != len(op.control_inputs):
            op._remove_all_control_inputs()
            op._add_control_inputs(internal)
        return internal, external

    def AddInnerOp(self, op) -> None:  # noqa: N802
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def GetControlPivot(self):  # noqa: N802
        return None

    def IsWhileContext(self) -> bool:  # noqa: N802
        return False

    def IsCondContext(self) -> bool:  # noqa: N802
        return False

    def __str__(self) -> str:
        return self.name


class CondContext(ControlFlowContext):
    """One branch of a tf.cond (TF's CondContext).

    TF's attributes: ``pred`` (the ``cond/pred_id`` tensor), ``pivot`` (``cond/switch_t``
    for branch 1, ``cond/switch_f`` for branch 0; ops of the branch without inputs get it
    as a control input), ``branch`` (1 = true_fn, 0 = false_fn), ``outer_context``,
    ``name`` (``cond/cond_text``, ``cond/cond_text_1``), ``external_values`` (outside
    tensor name -> the Switch output used inside; the pred maps to itself).

    Added by tfc for lowering the construct: ``switches`` (list of (outside tensor, the
    Switch output standing for it in this branch), in creation order, the pred's own
    ``cond/Switch`` excluded), ``branch_outputs`` (the flat list of tensors this branch
    returns, in nest order; each is the data input of one Merge), ``merges`` (the cond's
    Merge ops, shared by both branches; Merge i has inputs (false output i, true output
    i)), ``other_branch`` (the context of the other branch), ``switch_op`` (the
    ``cond/Switch`` op of the predicate).
    """

    def __init__(self, pred, pivot, branch, name="cond_text"):
        self._name = get_default_graph().unique_name(name)
        super().__init__()
        self._pred = pred
        self._pivot = pivot
        self._branch = branch
        self._values.add(pred.name)
        self._external_values[pred.name] = pred
        self._values.add(pivot.name)
        pivot.op._set_control_flow_context(self)
        self.switches: list = []
        self.branch_outputs: list = []
        self.merges: list = []
        self.other_branch = None
        self.switch_op = None

    @property
    def pred(self) -> Tensor:
        return self._pred

    @property
    def pivot(self) -> Tensor:
        return self._pivot

    @property
    def branch(self) -> int:
        return self._branch

    @property
    def back_prop(self) -> bool:
        while_ctxt = self.GetWhileContext()
        return while_ctxt.back_prop if while_ctxt is not None else False

    def GetControlPivot(self):  # noqa: N802
        return self._pivot

    def IsCondContext(self) -> bool:  # noqa: N802
        return True

    def AddValue(self, val: Tensor) -> Tensor:  # noqa: N802
        """The tensor that stands for ``val`` in this branch (switching it in if outside)."""
        if val.name in self._values:
            result = self._external_values.get(val.name)
            return val if result is None else result
        result = val
        self._values.add(val.name)
        if self._outer_context is not None:
            result = self._outer_context.AddValue(val)
            self._values.add(result.name)
            self._external_values[result.name] = result
        with control_dependencies(None):
            result = _SwitchRefOrTensor(result, self._pred)[self._branch]
            if self._outer_context is not None:
                self._outer_context.AddInnerOp(result.op)
        result.graph.prevent_fetching(result.op)
        result.op._set_control_flow_context(self)
        ctxt = self
        while ctxt is not None:
            ctxt._values.add(result.name)
            ctxt = ctxt._outer_context
        self._external_values[val.name] = result
        self.switches.append((val, result))
        return result

    def AddOp(self, op: Operation) -> None:  # noqa: N802
        self._AddOpInternal(op)

    def _AddOpInternal(self, op: Operation) -> None:  # noqa: N802
        if not op.inputs:
            self._RemoveExternalControlEdges(op)
            if not any(op_in_context(c, self) for c in op.control_inputs):
                op._add_control_input(self._pivot.op)
        else:
            for index, x in enumerate(op.inputs):
                if op.type == "Merge" and x.op.type == "NextIteration":
                    real_x = x
                else:
                    real_x = self.AddValue(x)
                if real_x is not x:
                    op._update_input(index, real_x)
            self._RemoveExternalControlEdges(op)
        ctxt = self
        while ctxt is not None:
            ctxt._values.update(t.name for t in op.outputs)
            ctxt = ctxt._outer_context
        if self._outer_context is not None or not _is_loop_exit(op):
            op.graph.prevent_fetching(op)
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def _ProcessOutputTensor(self, val: Tensor) -> Tensor:  # noqa: N802
        real_val = val
        if val.name not in self._values:
            # The branch returns an outside tensor (lambda: x): switch it in here.
            self._values.add(val.name)
            if self._outer_context is not None:
                real_val = self._outer_context.AddValue(val)
                self._values.add(real_val.name)
                self._external_values[real_val.name] = real_val
            real_val = _SwitchRefOrTensor(real_val, self._pred)[self._branch]
            self._external_values[val.name] = real_val
            self.switches.append((val, real_val))
        else:
            external_val = self._external_values.get(val.name)
            if external_val is not None:
                real_val = external_val
        return real_val

    def _BuildCondTensor(self, v):  # noqa: N802
        if isinstance(v, Operation):
            from .ops.control_flow_ops import with_dependencies

            return with_dependencies([v], self._pivot)
        return self._ProcessOutputTensor(convert_to_tensor(v))

    def BuildCondBranch(self, fn):  # noqa: N802
        """Call ``fn`` in this context: (its result, the flat list of branch outputs)."""
        original_result = fn()
        if original_result is None:
            return None, None
        result = map_structure(self._BuildCondTensor, original_result)
        if not isinstance(result, (list, builtins.tuple)):
            result = [result]
        return original_result, result


class WhileContext(ControlFlowContext):
    """A tf.while_loop (TF's WhileContext); ops of the cond and body functions belong to it.

    TF's attributes: ``name`` (the frame name, e.g. ``while/while_context``, the Enter
    ops' ``frame_name``), ``maximum_iterations`` (the scalar tensor, or None),
    ``parallel_iterations``, ``back_prop``, ``swap_memory``, ``pivot`` (the LoopCond
    output), ``_pivot_for_pred`` (the first Merge output: control input of input-less ops
    in the cond function), ``_pivot_for_body`` (the first Identity: same for the body),
    ``loop_enters`` / ``loop_exits`` (Enter / Exit outputs, one per flat loop variable),
    ``outer_context``, ``external_values``, ``grad_state`` (for the backprop loop
    tf.gradients builds for a forward loop, its ``control_flow_state.GradLoopState``; None
    for a forward loop). tf.gradients adds the forward iteration counter (``f_count``) to a
    forward loop's ``loop_enters`` / ``loop_exits``; a backprop loop's hold its counter
    (``b_count``), the gradients entering (``b_exit``) and the accumulators (``b_acc``).

    Added by tfc for lowering the construct, one entry per flat loop variable (with
    ``maximum_iterations`` the iteration counter is loop variable 0): ``loop_merges`` (the
    Merge outputs: input 0 the Enter, input 1 the NextIteration), ``loop_switches`` (the
    Switch ops: output 0 goes to the Exit, output 1 to the body), ``loop_identities``
    (the Identity outputs the body function received), ``loop_next_iterations`` (the
    NextIteration outputs; their input is the body's result), ``body_outputs`` (the
    tensors the body returned, flat), ``loop_cond_op`` (the LoopCond op; its input is the
    cond function's result), ``captured`` (list of (outside tensor, its Enter output with
    ``is_constant=True``) for the loop invariants the loop uses, in creation order).
    """

    def __init__(self, maximum_iterations=None, parallel_iterations=10, back_prop=True, swap_memory=False,
                 name="while_context", grad_state=None):
        super().__init__()
        self._grad_state = grad_state
        if not isinstance(parallel_iterations, int) or parallel_iterations <= 0:
            raise ValueError(f"`parallel_iterations` must be a positive integer: {parallel_iterations}")
        self._name = get_default_graph().unique_name(name)
        self._maximum_iterations = maximum_iterations
        self._parallel_iterations = parallel_iterations
        self._back_prop = back_prop
        self._swap_memory = swap_memory
        self._pivot_for_pred = None
        self._pivot_for_body = None
        self._pivot = None
        self._loop_exits: list = []
        self._loop_enters: list = []
        self.loop_merges: list = []
        self.loop_switches: list = []
        self.loop_identities: list = []
        self.loop_next_iterations: list = []
        self.body_outputs: list = []
        self.loop_cond_op = None
        self.captured: list = []

    @property
    def maximum_iterations(self):
        return self._maximum_iterations

    @property
    def parallel_iterations(self) -> int:
        return self._parallel_iterations

    @property
    def back_prop(self) -> bool:
        return self._back_prop

    @property
    def swap_memory(self) -> bool:
        return self._swap_memory

    @property
    def pivot(self):
        return self._pivot

    @property
    def loop_enters(self) -> list:
        return self._loop_enters

    @property
    def loop_exits(self) -> list:
        return self._loop_exits

    @property
    def grad_state(self):
        """For a backprop loop, its _GradLoopState (control_flow_state.py); else None."""
        return self._grad_state

    def GetWhileContext(self):  # noqa: N802
        return self

    def GetControlPivot(self):  # noqa: N802
        return self._pivot_for_body if self._pivot_for_body is not None else self._pivot_for_pred

    def IsWhileContext(self) -> bool:  # noqa: N802
        return True

    def AddValue(self, val: Tensor) -> Tensor:  # noqa: N802
        """The tensor standing for ``val`` in the loop (an ``is_constant`` Enter if outside)."""
        result = val
        new_value = val.name not in self._values and val.op._control_flow_context is not self
        if new_value:
            self._values.add(val.name)
            # Building a backprop loop: a value of its forward loop is fetched from the
            # history the forward loop keeps of it (GetRealValue).
            grad_ctxt = get_default_graph()._get_control_flow_context()
            if grad_ctxt is not None:
                grad_ctxt = grad_ctxt.GetWhileContext()
                if grad_ctxt is not None and grad_ctxt.grad_state is not None:
                    forward_ctxt = get_while_context(val.op)
                    if _is_loop_exit(val.op):
                        forward_ctxt = forward_ctxt.outer_context
                        if forward_ctxt is not None:
                            forward_ctxt = forward_ctxt.GetWhileContext()
                    if forward_ctxt is grad_ctxt.grad_state.forward_context:
                        real_val = grad_ctxt.grad_state.GetRealValue(val)
                        self._external_values[val.name] = real_val
                        return real_val
            if self._outer_context is not None:
                result = self._outer_context.AddValue(val)
            with control_dependencies(None):
                enter = _Enter(result, self._name, is_constant=True, parallel_iterations=self._parallel_iterations)
                enter.graph.prevent_feeding(enter)
                if self._outer_context is not None:
                    self._outer_context.AddInnerOp(enter.op)
            self._FixControlInputsAndContext([enter])
            self._values.add(enter.name)
            self._external_values[val.name] = enter
            self.captured.append((val, enter))
            result = enter
        else:
            actual = self._external_values.get(val.name)
            if actual is not None:
                result = actual
        return result

    def AddOp(self, op: Operation) -> None:  # noqa: N802
        """TF's WhileContext.AddOp: a Shape/Size/Rank built in a backprop loop on a value of
        its forward loop is moved into the value's context (the forward loop then keeps the
        small result instead of the tensor)."""
        if op.type in ("Shape", "Size", "Rank"):
            grad_ctxt = get_default_graph()._get_control_flow_context()
            if grad_ctxt is not None:
                grad_ctxt = grad_ctxt.GetWhileContext()
                if grad_ctxt is not None and grad_ctxt.grad_state is not None:
                    if get_while_context(op.inputs[0].op) is grad_ctxt.grad_state.forward_context:
                        op_input_ctxt = op.inputs[0].op._control_flow_context
                        op._set_control_flow_context(op_input_ctxt)
                        op_input_ctxt._AddOpInternal(op)
                        return
        self._AddOpInternal(op)

    def _AddOpInternal(self, op: Operation) -> None:  # noqa: N802
        if not op.inputs:
            control_inputs, external_inputs = self._RemoveExternalControlEdges(op)
            if not control_inputs:
                op._add_control_input(self.GetControlPivot().op)
        else:
            for index, x in enumerate(op.inputs):
                real_x = self.AddValue(x)
                if real_x is not x:
                    op._update_input(index, real_x)
            _, external_inputs = self._RemoveExternalControlEdges(op)
            self._MaybeAddControlDependency(op)
        for x in op.outputs:
            self._values.add(x.name)
        if external_inputs:
            # Control inputs from outside the loop: pull them in as the data input of an
            # Identity in the loop (TF ignores the ones without outputs).
            with control_dependencies(None):
                self.Enter()
                external_inputs = [_identity(x.outputs[0]).op for x in external_inputs if x.outputs]
                self.Exit()
            op._add_control_inputs(external_inputs)
        if self._outer_context is not None or not _is_loop_exit(op):
            op.graph.prevent_fetching(op)
            for x in op.outputs:
                op.graph.prevent_feeding(x)
        if self._outer_context is not None:
            self._outer_context.AddInnerOp(op)

    def _MaybeAddControlDependency(self, op: Operation) -> None:  # noqa: N802
        """An op whose inputs are all loop invariants runs once per iteration: pivot it."""
        if op.control_inputs:
            return
        if all(_is_loop_constant_enter(x.op) for x in op.inputs):
            op._add_control_input(self.GetControlPivot().op)

    def AddForwardLoopCounter(self, outer_grad_state):  # noqa: N802
        """TF's AddForwardLoopCounter: a loop variable counting this (forward) loop's
        iterations (``f_count``: ``n = 0; while (pivot) n++``), added when a gradient
        through the loop is built; called in this loop's outer context. Returns (the
        count's Exit, its NextIteration: the count for the next iteration)."""
        from .ops import math_ops
        from .ops.constant_op import constant

        n = constant(0, name="f_count")
        if outer_grad_state is not None:
            # The pushes of one run of a nested loop come before the next run's.
            outer_add_op = outer_grad_state.forward_index.op.inputs[0].op
            n.op._add_control_input(outer_add_op)
        self.Enter()
        self.AddName(n.name)
        enter_n = _Enter(n, self._name, is_constant=False, parallel_iterations=self._parallel_iterations,
                         name="f_count")
        self.loop_enters.append(enter_n)
        merge_n = merge([enter_n, enter_n])[0]
        switch_n = switch(merge_n, self._pivot)
        index = math_ops.add(switch_n[1], 1)
        next_n = _NextIteration(index)
        merge_n.op._update_input(1, next_n)
        total_iterations = exit(switch_n[0], name="f_count")
        self.loop_exits.append(total_iterations)
        self.ExitResult([total_iterations])
        self.Exit()
        return total_iterations, next_n

    def AddBackpropLoopCounter(self, count, outer_grad_state):  # noqa: N802
        """TF's AddBackpropLoopCounter: this backprop loop's own counter and condition
        (``b_count``: ``n = count; while (n >= 1) n--``), which set its pivots; called in
        its outer context. Returns the NextIteration of the decremented count (the decremented
        count itself is the body's pivot)."""
        from .ops import math_ops
        from .ops.constant_op import constant

        one = constant(1, name="b_count")
        self.Enter()
        self.AddName(count.name)
        enter_count = _Enter(count, self._name, is_constant=False, parallel_iterations=self._parallel_iterations,
                             name="b_count")
        self.loop_enters.append(enter_count)
        merge_count = merge([enter_count, enter_count])[0]
        self._pivot_for_pred = merge_count
        pred = math_ops.greater_equal(merge_count, one)
        self._pivot = loop_cond(pred, name="b_count")
        switch_count = switch(merge_count, self._pivot)
        index = math_ops.subtract(switch_count[1], one)
        self._pivot_for_body = index
        next_count = _NextIteration(index)
        merge_count.op._update_input(1, next_count)
        final_zero = exit(switch_count[0], name="b_count")
        self.loop_exits.append(final_zero)
        if outer_grad_state is not None:
            # The pops of one run of a nested loop come before the next run's.
            outer_grad_state.grad_sync._add_control_input(final_zero.op)
        self.ExitResult([final_zero])
        self.Exit()
        return next_count

    def AddBackpropAccumulator(self, op, grad):  # noqa: N802
        """TF's AddBackpropAccumulator: the gradient of a loop invariant (the
        ``is_constant`` Enter ``op``) summed over the iterations by a loop variable of this
        backprop loop (``b_acc``: ``acc = 0; while (pivot) acc += grad``). The zeros it
        starts from have the gradient's static shape, else the invariant's runtime shape
        (in a nested backprop loop, that shape kept on the outer loop's stack). Called in
        this backprop context (left and re-entered, as TF does)."""
        from .ops import array_ops, math_ops
        from .ops.constant_op import constant

        self.Exit()
        shape = grad.get_shape()
        if shape.is_fully_defined():
            if self.outer_context is not None:
                self.outer_context.Enter()
            acc = constant(0, grad.dtype, shape=shape.as_list(), name="b_acc")
            if self.outer_context is not None:
                self.outer_context.Exit()
        else:
            value = op.inputs[0]
            if isinstance(self.outer_context, WhileContext) and self.outer_context.grad_state is not None:
                forward_ctxt = self.grad_state.forward_context
                forward_ctxt.outer_context.Enter()
                zeros_shape = array_ops.shape_internal(value, optimize=False)
                forward_ctxt.outer_context.Exit()
                outer_grad_state = self.grad_state.outer_grad_state
                history_zeros_shape = outer_grad_state.AddForwardAccumulator(zeros_shape)
                self.outer_context.Enter()
                real_shape = outer_grad_state.AddBackpropAccumulatedValue(history_zeros_shape, zeros_shape)
                acc = array_ops.zeros(real_shape, grad.dtype)
                self.outer_context.Exit()
            else:
                if self.outer_context is not None:
                    self.outer_context.Enter()
                zeros_shape = array_ops.shape_internal(value, optimize=False)
                acc = array_ops.zeros(zeros_shape, grad.dtype)
                if self.outer_context is not None:
                    self.outer_context.Exit()
        self.Enter()
        self.AddName(acc.name)
        enter_acc = _Enter(acc, self._name, is_constant=False, parallel_iterations=self._parallel_iterations,
                           name="b_acc")
        self.loop_enters.append(enter_acc)
        merge_acc = merge([enter_acc, enter_acc], name="b_acc")[0]
        switch_acc_false, switch_acc_true = switch(merge_acc, self._pivot)
        add_acc = math_ops.add(switch_acc_true, grad)
        next_acc = _NextIteration(add_acc)
        merge_acc.op._update_input(1, next_acc)
        result_acc = exit(switch_acc_false, name="b_acc")
        self.loop_exits.append(result_acc)
        self.ExitResult([result_acc])
        return result_acc

    def _FixControlInputsAndContext(self, enters: list) -> None:  # noqa: N802
        graph = get_default_graph()
        for x in enters:
            inp_op = x.op.inputs[0].op
            control_inputs = graph._control_dependencies_for_inputs([inp_op])
            outer_control_inputs = []
            for op in control_inputs:
                keep = True
                op_ctxt = get_output_context(op)
                outer_ctxt = self.outer_context
                outer_while = None if outer_ctxt is None else outer_ctxt.GetWhileContext()
                while outer_ctxt is not op_ctxt:
                    if outer_ctxt is None or outer_ctxt is outer_while:
                        keep = False
                        break
                    outer_ctxt = outer_ctxt.outer_context
                if keep:
                    outer_control_inputs.append(op)
            x.op._set_control_flow_context(self)
            x.op._add_control_inputs(outer_control_inputs)
            graph._record_op_seen_by_control_dependencies(x.op)

    def _InitializeValues(self, values) -> None:  # noqa: N802
        self._values = set()
        for x in values:
            if not isinstance(x, Tensor):
                raise TypeError(f"Type {type(x)} not supported")
            self._values.add(x.name)

    def _BuildLoop(self, pred, body, original_loop_vars, loop_vars, shape_invariants):  # noqa: N802
        self._InitializeValues(loop_vars)
        real_vars = loop_vars
        if self._outer_context is not None:
            real_vars = [self._outer_context.AddValue(x) for x in loop_vars]
        with control_dependencies(None):
            enter_vars = [_Enter(x, self._name, is_constant=False, parallel_iterations=self._parallel_iterations,
                                 use_input_shape=(shape_invariants is None)) for x in real_vars]
            for x in enter_vars:
                x.graph.prevent_feeding(x)
                if self._outer_context is not None:
                    self._outer_context.AddInnerOp(x.op)
        # The closest enclosing control pivot gates loop-invariant entering values.
        outer_context = self._outer_context
        control_pivot = None
        while outer_context is not None and control_pivot is None:
            control_pivot = outer_context.GetControlPivot()
            outer_context = outer_context._outer_context
        if control_pivot is not None:
            for var in enter_vars:
                if _is_loop_constant_enter(var.op.inputs[0].op):
                    var.op._add_control_input(control_pivot.op)
        _SetShapeInvariants(real_vars, enter_vars, shape_invariants)
        self._FixControlInputsAndContext(enter_vars)
        self._InitializeValues(enter_vars)
        self._loop_enters = enter_vars

        merge_vars = [merge([x, x])[0] for x in enter_vars]
        self._pivot_for_pred = merge_vars[0]
        self.loop_merges = merge_vars
        packed_vars = _flows_to_tensor_arrays(original_loop_vars, pack_sequence_as(original_loop_vars, merge_vars))
        c = convert_to_tensor(pred(*packed_vars))
        self._pivot = loop_cond(c, name="LoopCond")
        self.loop_cond_op = self._pivot.op
        switch_vars = [_SwitchRefOrTensor(x, self._pivot) for x in merge_vars]
        self.loop_switches = [s[0].op for s in switch_vars]

        vars_for_body = [_Identity(x[1]) for x in switch_vars]
        self._pivot_for_body = vars_for_body[0]
        self.loop_identities = vars_for_body
        packed_vars_for_body = _flows_to_tensor_arrays(original_loop_vars,
                                                       pack_sequence_as(original_loop_vars, vars_for_body))
        body_result = body(*packed_vars_for_body)
        if not _is_sequence(body_result):
            body_result = [body_result]
        # TF forces the first level to a list: inputs are typically lists, outputs tuples.
        assert_same_structure(list(packed_vars_for_body), list(body_result))
        original_body_result = body_result
        result = [convert_to_tensor(_tensor_array_to_flow(x)) for x in flatten(body_result)]
        if len(merge_vars) != len(result):
            raise ValueError(f"Number of inputs and outputs of body must match loop_vars: {len(merge_vars)}, "
                             f"{len(result)}")
        self.body_outputs = result
        self.loop_next_iterations = [_AddNextAndBackEdge(m, v) for m, v in zip(merge_vars, result)]
        exit_vars = [exit(x[0]) for x in switch_vars]
        self._loop_exits = exit_vars
        self.ExitResult(exit_vars)
        return original_body_result, exit_vars

    def BuildLoop(self, pred, body, loop_vars, shape_invariants, return_same_structure):  # noqa: N802
        original_loop_vars = loop_vars
        flat = [_tensor_array_to_flow(x) for x in flatten(loop_vars)]  # a TensorArray loops as its flow
        loop_vars = [convert_to_tensor(x) for x in flat]
        if shape_invariants is None:
            shape_invariants = [x.shape for x in loop_vars]
        try:
            self.Enter()
            original_body_result, exit_vars = self._BuildLoop(pred, body, original_loop_vars, loop_vars,
                                                              shape_invariants)
        finally:
            self.Exit()
        packed_exit_vars = _flows_to_tensor_arrays(original_body_result, pack_sequence_as(original_body_result,
                                                                                          exit_vars))
        if return_same_structure:
            return packed_exit_vars
        return packed_exit_vars[0] if len(exit_vars) == 1 else packed_exit_vars


# =============================================================================================
# loop helpers
# =============================================================================================
def _tensor_array_to_flow(value):
    """TF's _convert_tensorarray_to_flow: a TensorArray loop variable loops as its flow."""
    from .tensor_array import TensorArray

    return value.flow if isinstance(value, TensorArray) else value


def _flows_to_tensor_arrays(structure, values):
    """TF's _convert_flows_to_tensorarrays: where ``structure`` has a TensorArray, the value
    (its flow in the loop) becomes a TensorArray with that flow."""
    from .tensor_array import TensorArray

    flat_structure, flat_values = flatten(structure), flatten(values)
    converted = [ta._with_flow(v) if isinstance(ta, TensorArray) else v for ta, v in zip(flat_structure, flat_values)]
    return pack_sequence_as(structure, converted)


def _ShapeLessThanOrEqual(shape1, shape2) -> bool:  # noqa: N802
    if shape2.dims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    for dim1, dim2 in zip(shape1.dims, shape2.dims):
        if dim2.value is not None and dim1.value != dim2.value:
            return False
    return True


def _get_shape_invariant(var, shape=None):
    if shape is None:
        return var.shape
    return shape


def _SetShapeInvariants(input_vars, enter_vars, shapes) -> None:  # noqa: N802
    if shapes is None:
        return
    flat_shapes = flatten(shapes)
    if not all(isinstance(s, TensorShape) for s in flat_shapes):
        raise ValueError("`shapes` must be a (possibly nested) list of shapes.")
    for inp, var, shape in zip(input_vars, enter_vars, flat_shapes):
        if not _ShapeLessThanOrEqual(inp.get_shape(), shape):
            raise ValueError(f"The shape invariant specified for {inp.name} is not compatible with the initial shape "
                             f"of the loop variable. It enters the loop with shape {inp.get_shape()}, but the "
                             f"specified shape invariant is {shape}.")
        var.set_shape(shape)


def _EnforceShapeInvariant(merge_var, next_var) -> None:  # noqa: N802
    m_shape = merge_var.get_shape()
    n_shape = next_var.get_shape()
    if not _ShapeLessThanOrEqual(n_shape, m_shape):
        enter = merge_var.op.inputs[0].op
        input_t = enter.inputs[0]
        raise ValueError(f"Input tensor '{input_t.name}' enters the loop with shape {input_t.shape}, but has shape "
                         f"{n_shape} after one iteration. To allow the shape to vary across iterations, use the "
                         f"`shape_invariants` argument of tf.while_loop to specify a less-specific shape.")


def _AddNextAndBackEdge(m, v, enforce_shape_invariant=True):  # noqa: N802
    v = convert_to_tensor(v)
    v = _NextIteration(v)
    if enforce_shape_invariant:
        _EnforceShapeInvariant(m, v)
    if v.dtype.base_dtype != m.dtype.base_dtype:
        from .errors import InvalidArgumentError

        raise InvalidArgumentError(
            None, None, f"Input 1 of node {m.op.name} was passed {v.dtype.base_dtype.name} from {v.name} incompatible "
                        f"with expected {m.dtype.base_dtype.name}.")
    m.op._update_input(1, v)
    return v


# =============================================================================================
# tf.cond, tf.case, tf.while_loop
# =============================================================================================
def _unpack_if_singleton(res):
    if isinstance(res, (list, builtins.tuple)) and len(res) == 1:
        return res[0]
    return res


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.cond (v1): ``true_fn()`` if ``pred`` else ``false_fn()``, as a Switch/Merge graph."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    elif true_fn is None:
        raise TypeError("cond(): true_fn argument required")
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    elif false_fn is None:
        raise TypeError("cond(): false_fn argument required")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: a Python if (tfc/frontend/eager)
        from .eager.control_flow import cond as eager_cond

        return eager_cond(pred, true_fn, false_fn, strict)

    with name_scope(name, "cond", [pred]):
        if isinstance(pred, bool):
            raise TypeError("pred must not be a Python bool")
        p_2, p_1 = switch(pred, pred)
        pivot_1 = _identity(p_1, name="switch_t")
        pivot_2 = _identity(p_2, name="switch_f")
        pred = _identity(pred, name="pred_id")
        for tensor in [p_1, p_2, pivot_1, pivot_2, pred]:
            tensor.graph.prevent_fetching(tensor.op)

        context_t = CondContext(pred, pivot_1, branch=1)
        try:
            context_t.Enter()
            orig_res_t, res_t = context_t.BuildCondBranch(true_fn)
            if orig_res_t is None:
                raise ValueError("true_fn must have a return value.")
            context_t.ExitResult(res_t)
        finally:
            context_t.Exit()

        context_f = CondContext(pred, pivot_2, branch=0)
        try:
            context_f.Enter()
            orig_res_f, res_f = context_f.BuildCondBranch(false_fn)
            if orig_res_f is None:
                raise ValueError("false_fn must have a return value.")
            context_f.ExitResult(res_f)
        finally:
            context_f.Exit()

        if not strict:
            orig_res_t = _unpack_if_singleton(orig_res_t)
            orig_res_f = _unpack_if_singleton(orig_res_f)
        try:
            assert_same_structure(orig_res_t, orig_res_f)
        except (TypeError, ValueError):
            # TF maps a cast over both structures first, which raises nest's own error.
            map_structure(lambda a, b: None, orig_res_t, orig_res_f)
            map_structure(lambda a, b: None, res_t, res_f)
            try:
                assert_same_structure(orig_res_t, orig_res_f)
            except TypeError as e:
                raise TypeError(f"Incompatible return types of true_fn and false_fn: {e}") from None
            except ValueError as e:
                raise ValueError(f"Incompatible return values of true_fn and false_fn: {e}") from None

        if not res_t:
            raise ValueError("true_fn and false_fn must return at least one result.")
        res_t_flat = flatten(res_t)
        res_f_flat = flatten(res_f)
        for x, y in zip(res_t_flat, res_f_flat):
            if x.dtype.base_dtype != y.dtype.base_dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: {x.dtype.name}, "
                                 f"{y.dtype.name}")
        merges = [merge(pair)[0] for pair in zip(res_f_flat, res_t_flat)]

        for ctxt, other, outputs in ((context_t, context_f, res_t_flat), (context_f, context_t, res_f_flat)):
            ctxt.branch_outputs = outputs
            ctxt.merges = [m.op for m in merges]
            ctxt.other_branch = other
            ctxt.switch_op = p_1.op
        if context_t.outer_context is None:
            get_default_graph().add_to_collection(GraphKeys.COND_CONTEXT, context_t)
            get_default_graph().add_to_collection(GraphKeys.COND_CONTEXT, context_f)

        merges = pack_sequence_as(orig_res_t, merges)
        if not strict:
            merges = _unpack_if_singleton(merges)
        return merges


def _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive, name):
    if not isinstance(pred_fn_pairs, (list, builtins.tuple, dict)):
        raise TypeError("fns must be a list, tuple, or dict")
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    for pred_fn_pair in pred_fn_pairs:
        if not isinstance(pred_fn_pair, builtins.tuple) or len(pred_fn_pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pred_fn_pair
        if isinstance(pred, Tensor):
            if pred.dtype != dtypes.bool:
                raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        else:
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    predicates, actions = zip(*pred_fn_pairs) if pred_fn_pairs else ((), ())
    return predicates, actions


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case (v1): nested conds, the first pair's outermost (``case/cond/cond/...``).
    Without a default, the last pair's action is the default, behind Asserts that no other
    predicate is true and that its own is; ``exclusive=True`` first asserts that at most one
    of the (other) predicates is true (TF 1.15's _case_helper)."""
    from .check_ops import assert_at_most_n_true, case_default_action

    predicates, actions = _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive, name)
    with name_scope(name, "case", [predicates]):
        if default is None:
            default, predicates, actions = case_default_action(predicates, actions)
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn, strict=strict)
        if exclusive:
            with control_dependencies([assert_at_most_n_true(predicates, n=1, msg="Input error: exclusive=True")]):
                return fn()
        return fn()


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,  # noqa: C901
               swap_memory=False, name=None, maximum_iterations=None, return_same_structure=False):
    """tf.while_loop (v1): repeat ``body`` while ``cond``; a WhileContext loop."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: a Python loop (tfc/frontend/eager)
        from .eager.control_flow import while_loop as eager_while_loop

        return eager_while_loop(cond, body, loop_vars, maximum_iterations, return_same_structure)

    with name_scope(name, "while", loop_vars):
        if not loop_vars:
            raise ValueError("No loop variables provided")
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if maximum_iterations is not None:
            from .ops.constant_op import constant
            from .ops.math_ops import logical_and

            maximum_iterations = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if maximum_iterations.shape.ndims != 0:
                raise ValueError(f"maximum_iterations must be a scalar, saw shape: {maximum_iterations.shape}")
            counter = constant(0, dtype=maximum_iterations.dtype, name="iteration_counter")
            orig_cond, orig_body = cond, body
            if try_to_pack:
                loop_vars = (counter, loop_vars[0])
                cond = lambda i, lv: logical_and(i < maximum_iterations, orig_cond(lv))  # noqa: E731
                body = lambda i, lv: (i + 1, orig_body(lv))  # noqa: E731
            else:
                loop_vars = (counter, loop_vars)
                cond = lambda i, lv: logical_and(i < maximum_iterations, orig_cond(*lv))  # noqa: E731
                body = lambda i, lv: (i + 1, orig_body(*lv))  # noqa: E731
            try_to_pack = False

        if shape_invariants is not None:
            if maximum_iterations is not None:
                shape_invariants = (TensorShape([]), shape_invariants)
            assert_same_structure(loop_vars, shape_invariants, check_types=False)
            shape_invariants = map_structure(_get_shape_invariant, loop_vars, shape_invariants)

        loop_context = WhileContext(maximum_iterations=maximum_iterations, parallel_iterations=parallel_iterations,
                                    back_prop=back_prop, swap_memory=swap_memory)
        if loop_context.outer_context is None:
            get_default_graph().add_to_collection(GraphKeys.WHILE_CONTEXT, loop_context)
        result = loop_context.BuildLoop(cond, body, loop_vars, shape_invariants, return_same_structure)
        if maximum_iterations is not None:
            return result[1]
        return result


TF_EXPORTS = ["cond", "case", "while_loop"]
