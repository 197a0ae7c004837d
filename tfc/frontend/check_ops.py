"""tf.Assert (the ``Assert`` op) and the assertions of TF 1.15's check_ops.py built on it
(``tf.assert_equal``, ``tf.debugging.assert_less``, ``assert_rank``...), with TF 1.15's
graphs, names and messages.

``tf.Assert(condition, data)`` opens the name scope ``Assert``, converts ``data``
(``Assert/Const``...) and, when every datum is a string or an int32 (TF assumes those live
on the host), creates the op ``Assert/Assert`` directly; otherwise it guards the op with
``tf.cond(condition, no_op, <Assert>, name="AssertGuard")``, so ``Assert/AssertGuard/Assert``
sits in the false branch (its data switched in: ``Assert/AssertGuard/Assert/Switch_1``...)
and the returned op is the cond's ``Merge``. The op's string data from Python strings is
converted inside it (``Assert/AssertGuard/Assert/data_0``).

Compiled, an Assert is a ``check`` of kind ``assert`` (tfc/ir/ops.py): data known while
compiling (the strings, constants) is formatted into the check's text as TF prints it, and
the rest are the check's operands, summarized when the condition is false. Session.run then
raises InvalidArgumentError with TF's message, ``assertion failed: [msg] [1 2 3...]``,
naming the Assert op; passing, the check costs one branch.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .convert import convert_to_tensor
from .errors import InvalidArgumentError
from .graph import Tensor, get_default_graph, name_scope
from .registry import Attr, OpType, register


# =============================================================================================
# the op
# =============================================================================================
@register
class AssertOp(OpType):
    """Asserts that ``condition`` is true; else the run fails with ``data`` summarized."""

    type_name = "Assert"
    inputs = ["condition: bool", "data: T"]  # T is a list(type): one input per datum
    outputs = []
    attrs = {"T": Attr("list(type)"), "summarize": Attr("int", 3)}
    stateful = True
    not_differentiable = True
    takes_string_constants = True  # its string data are messages, read while compiling

    def infer(op):
        """NoOutputs (TF checks the condition's shape when the op runs)."""
        return []

    def lower(ctx, op, condition, *data):
        """A ``check`` of kind ``assert``: data known now is formatted into its text."""
        from tfc import program_errors

        summarize = op._attrs["summarize"]
        shape = tuple(condition.type.shape)
        if any(not isinstance(d, int) for d in shape):
            ctx.fail(f"the condition of an Assert must be a scalar; its shape {list(shape)} is only known at run time")
        if not (len(shape) == 0 or shape == (1,)):  # TF accepts a legacy scalar ([1])
            failed = ctx.constant(np.array(False))
            shape_text = "[" + ",".join(str(d) for d in shape) + "]"
            ctx.b.op("check", [failed], {"kind": "assert", "text": [f"In[0] should be a scalar: {shape_text}"]})
            return []
        known = ctx.static(condition)
        if known is not None and known.dtype != object and bool(np.asarray(known).reshape(-1)[0]):
            return []  # it holds
        condition = ctx.reshape(condition, ())
        text, values = ["assertion failed: "], []
        for i, (tensor, value) in enumerate(zip(op._inputs[1:], data)):
            text[-1] += "["
            if tensor.dtype.base_dtype == dtypes.string:
                strings = ctx.string_value(value)
                if strings is None:
                    ctx.fail(f"the string data of an Assert must be constants (the compiler computes no strings): "
                             f"'{tensor.name}' is not")
                text[-1] += program_errors.summarize_value(strings, summarize)
            else:
                static = ctx.static(value)
                if static is not None and static.dtype != object:
                    array = np.asarray(static).astype(value.type.elem.np_dtype).reshape(tuple(value.type.shape))
                    text[-1] += program_errors.summarize_value(array, summarize)
                else:
                    values.append(value)
                    text.append("")
            text[-1] += "]" if i == len(data) - 1 else "] "
        runtime_dims = sum(1 for v in values for d in v.type.shape if not isinstance(d, int))
        if len(values) + runtime_dims > program_errors.MAX_DIMS:
            ctx.fail(f"an Assert shows at most {program_errors.MAX_DIMS} run-time values and dims in its message; "
                     f"this one has {len(values)} values with {runtime_dims} run-time dims")
        ctx.b.op("check", [condition, *values], {"kind": "assert", "text": text, "summarize": summarize})
        return []


def _assert(condition, data, summarize=None, name=None):
    """gen_logging_ops._assert: the Assert op, its data converted as ``data_<i>``."""
    with name_scope(name, "Assert", [condition, data]) as scope:
        condition = convert_to_tensor(condition, dtype=dtypes.bool, name="condition")
        tensors = [convert_to_tensor(value, name=f"data_{i}") for i, value in enumerate(data)]
        attrs = {"T": [t.dtype.base_dtype for t in tensors]}
        if summarize is not None:
            attrs["summarize"] = summarize
        return get_default_graph().create_op("Assert", [condition] + tensors, name=scope, attrs=attrs)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """tf.Assert: an op that fails the run with ``data`` summarized when ``condition`` is
    false (TF 1.15's control_flow_ops.Assert; see the module comment for its graph)."""
    if getattr(get_default_graph(), "_is_eager", False):  # eager mode: checked now; TF 1.x returns None
        _assert(condition, data, summarize)
        return None
    with name_scope(name, "Assert", [condition, data]) as name:
        xs = [convert_to_tensor(x) for x in data]
        if all(x.dtype.base_dtype in (dtypes.string, dtypes.int32) for x in xs):
            return _assert(condition, data, summarize, name="Assert")
        from .control_flow import cond
        from .ops.control_flow_ops import no_op

        condition = convert_to_tensor(condition, name="Condition")

        def true_assert():
            return _assert(condition, data, summarize, name="Assert")

        guarded_assert = cond(condition, no_op, true_assert, name="AssertGuard")
        return guarded_assert.op


# =============================================================================================
# check_ops (TF 1.15)
# =============================================================================================
def _maybe_constant_value_string(t) -> str:
    from .tensor_util import constant_value

    if not isinstance(t, Tensor):
        return str(t)
    value = constant_value(t)
    if value is not None:
        return str(value)
    return t


def _assert_static(condition, data) -> None:
    """Raises InvalidArgumentError with the data when a statically known check fails."""
    if not condition:
        data_static = [_maybe_constant_value_string(x) for x in data]
        raise InvalidArgumentError(None, None, "\n".join(str(d) for d in data_static))


def _label(tensor) -> str:
    """How messages name a tensor: its name; in eager mode (no names) its shape and dtype,
    as TF 1.x's _shape_and_dtype_str."""
    if getattr(get_default_graph(), "_is_eager", False):
        return f"shape={tensor.shape} dtype={tensor.dtype.name}"
    return tensor.name


def _binary_assert(symbol: str, scope_name: str, op_func, merged: bool, x, y, data, summarize, message, name,
                   static_func=None):
    """The assertions comparing x and y element-wise (TF 1.15's assert_less & co.: each
    builds the same graph). ``merged``: TF 1.15's message misses a comma there, so the
    condition text and ``x (...) = `` are one string."""
    from .ops import math_ops
    from .ops.control_flow_ops import no_op
    from .tensor_util import constant_value

    message = message or ""
    with name_scope(name, scope_name, [x, y, data]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if static_func is not None and x is y:
            return no_op()
        if data is None:
            condition_text = f"Condition x {symbol} y did not hold element-wise:"
            if merged:
                data = [message, condition_text + f"x ({_label(x)}) = ", x, f"y ({_label(y)}) = ", y]
            else:
                data = [message, condition_text, f"x ({_label(x)}) = ", x, f"y ({_label(y)}) = ", y]
        condition = math_ops.reduce_all(op_func(x, y))
        if static_func is not None:
            x_static, y_static = constant_value(x), constant_value(y)
            if x_static is not None and y_static is not None:
                _assert_static(np.all(static_func(x_static, y_static)), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_equal (v1): x == y element-wise; checked now when both are constants."""
    from .ops import math_ops

    return _binary_assert("==", "assert_equal", math_ops.equal, False, x, y, data, summarize, message, name,
                          static_func=np.equal)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_none_equal (v1): x != y for every element."""
    from .ops import math_ops

    message = message or ""
    with name_scope(name, "assert_none_equal", [x, y, data]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [message, "Condition x != y did not hold for every single element:", f"x ({_label(x)}) = ", x,
                    f"y ({_label(y)}) = ", y]
        condition = math_ops.reduce_all(math_ops.not_equal(x, y))
        return Assert(condition, data, summarize=summarize)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_less (v1): x < y element-wise."""
    from .ops import math_ops

    return _binary_assert("<", "assert_less", math_ops.less, False, x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_less_equal (v1): x <= y element-wise."""
    from .ops import math_ops

    return _binary_assert("<=", "assert_less_equal", math_ops.less_equal, True, x, y, data, summarize, message,
                          name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_greater (v1): x > y element-wise."""
    from .ops import math_ops

    return _binary_assert(">", "assert_greater", math_ops.greater, True, x, y, data, summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """tf.assert_greater_equal (v1): x >= y element-wise."""
    from .ops import math_ops

    return _binary_assert(">=", "assert_greater_equal", math_ops.greater_equal, True, x, y, data, summarize,
                          message, name)


def _sign_assert(scope_name: str, condition_text: str, compare, x, data, summarize, message, name,
                 merged: bool = False):
    """assert_negative & co.: a comparison with zero (``ops.convert_to_tensor(0)``, the
    scope's ``Const``) through assert_less / assert_less_equal. ``merged``: TF 1.15's
    message misses a comma, so the condition text and ``x (...) = `` are one string."""
    message = message or ""
    with name_scope(name, scope_name, [x, data]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            label = f"x ({_label(x)}) = "
            data = [message, condition_text + label, x] if merged else [message, condition_text, label, x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        return compare(x, zero, data, summarize)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_negative (v1): x < 0 element-wise."""
    return _sign_assert("assert_negative", "Condition x < 0 did not hold element-wise:",
                        lambda x, zero, data, s: assert_less(x, zero, data=data, summarize=s),
                        x, data, summarize, message, name)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_positive (v1): x > 0 element-wise (as ``assert_less(0, x)``)."""
    return _sign_assert("assert_positive", "Condition x > 0 did not hold element-wise:",
                        lambda x, zero, data, s: assert_less(zero, x, data=data, summarize=s),
                        x, data, summarize, message, name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_non_negative (v1): x >= 0 element-wise (as ``assert_less_equal(0, x)``)."""
    return _sign_assert("assert_non_negative", "Condition x >= 0 did not hold element-wise:",
                        lambda x, zero, data, s: assert_less_equal(zero, x, data=data, summarize=s),
                        x, data, summarize, message, name)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """tf.assert_non_positive (v1): x <= 0 element-wise."""
    return _sign_assert("assert_non_positive", "Condition x <= 0 did not hold element-wise:",
                        lambda x, zero, data, s: assert_less_equal(x, zero, data=data, summarize=s),
                        x, data, summarize, message, name, merged=True)


def assert_type(tensor, tf_type, message=None, name=None):
    """tf.assert_type (v1): a static dtype check; returns a NoOp."""
    from .ops.control_flow_ops import no_op

    message = message or ""
    with name_scope(name, "assert_type", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{message}  {_label(tensor)} must be of type {tf_type}")
        return no_op("statically_determined_correct_type")


def assert_integer(x, message=None, name=None):
    """tf.assert_integer (v1): a static dtype check; returns a NoOp."""
    from .ops.control_flow_ops import no_op

    message = message or ""
    with name_scope(name, "assert_integer", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(f'{message}  Expected "x" to be integer type.  Found: {_label(x)} of dtype {x.dtype}')
        return no_op("statically_determined_was_integer")


def _assert_rank_condition(x, rank, static_condition, dynamic_condition, data, summarize):
    """The rank check: static when both ranks are known (a NoOp, or ValueError), else an
    Assert on ``Rank(x)`` (and, for a rank tensor of unknown value, that it is a scalar)."""
    from .ops import array_ops
    from .ops.control_flow_ops import no_op, with_dependencies
    from .tensor_util import constant_value

    assert_type(rank, dtypes.int32)
    rank_static = constant_value(rank)
    if rank_static is not None:
        if rank_static.ndim != 0:
            raise ValueError("Rank must be a scalar.")
        x_rank_static = x.get_shape().ndims
        if x_rank_static is not None:
            if not static_condition(x_rank_static, rank_static):
                raise ValueError("Static rank condition failed", x_rank_static, rank_static)
            return no_op(name="static_checks_determined_all_ok")
    condition = dynamic_condition(array_ops.rank(x), rank)
    if rank_static is None:
        this_data = ["Rank must be a scalar. Received rank: ", rank]
        rank_check = assert_rank(rank, 0, data=this_data)
        condition = with_dependencies([rank_check], condition)
    return Assert(condition, data, summarize=summarize)


def _rank_assert(scope_name: str, what: str, static_condition, dynamic_condition, x, rank, data, summarize,
                 message, name):
    from .ops import array_ops

    with name_scope(name, scope_name, (x, rank) + tuple(data or [])):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = message or ""
        name = _label(x)
        if data is None:
            data = [message, f"Tensor {name} must have {what}", rank, "Received shape: ", array_ops.shape(x)]
        try:
            assert_op = _assert_rank_condition(x, rank, static_condition, dynamic_condition, data, summarize)
        except ValueError as e:
            if e.args[0] == "Static rank condition failed":
                raise ValueError(f"{message}.  Tensor {name} must have {what} {int(e.args[2])}.  Received rank "
                                 f"{e.args[1]}, shape {x.get_shape()}") from None
            raise
    return assert_op


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """tf.assert_rank (v1): ValueError now when x's rank is known and wrong, a NoOp when it
    is known and right, else an Assert on the run-time rank."""
    from .ops import math_ops

    return _rank_assert("assert_rank", "rank", lambda actual, given: actual == given, math_ops.equal, x, rank,
                        data, summarize, message, name)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """tf.assert_rank_at_least (v1)."""
    from .ops import math_ops

    return _rank_assert("assert_rank_at_least", "rank at least", lambda actual, given: actual >= given,
                        math_ops.greater_equal, x, rank, data, summarize, message, name)


# =============================================================================================
# tf.case's assertions (TF 1.15's control_flow_ops._case_helper)
# =============================================================================================
def assert_at_most_n_true(predicates, n: int, msg: str):
    """An Assert that at most ``n`` of the scalar bool ``predicates`` are true."""
    from .ops import concat_ops, math_ops
    from .ops.constant_op import constant

    preds_c = concat_ops.stack(predicates, name="preds_c")
    num_true_conditions = math_ops.reduce_sum(math_ops.cast(preds_c, dtypes.int32), name="num_true_conds")
    condition = math_ops.less_equal(num_true_conditions, constant(n, name="n_true_conds"))
    preds_names = ", ".join(getattr(p, "name", "?") for p in predicates)
    error_msg = [f"{msg}: more than {n} conditions ({preds_names}) evaluated as True:", preds_c]
    return Assert(condition, data=error_msg, summarize=len(predicates))


def case_default_action(predicates, actions) -> tuple:
    """tf.case without a default: the last pair's action becomes the default, run after
    Asserts that no other predicate is true and that its own is. Returns (default, the
    other predicates, the other actions)."""
    from .graph import control_dependencies
    from .ops import concat_ops

    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]
    other_predicates, other_actions = predicates[:k], actions[:k]

    def default_action():
        others_msg = (f"Implementation error: selected default action #{k} was called, but some of other "
                      f"predicates are True: ")
        default_msg = ("Input error: None of conditions evaluated as True:",
                       concat_ops.stack(predicates, name="preds_c"))
        with control_dependencies([assert_at_most_n_true(other_predicates, n=0, msg=others_msg),
                                   Assert(predicate, data=default_msg)]):
            return action()

    return default_action, other_predicates, other_actions


_ASSERTIONS = ["assert_equal", "assert_none_equal", "assert_less", "assert_less_equal", "assert_greater",
               "assert_greater_equal", "assert_negative", "assert_positive", "assert_non_negative",
               "assert_non_positive", "assert_rank", "assert_rank_at_least", "assert_type", "assert_integer"]
TF_EXPORTS = ["Assert"] + _ASSERTIONS
DEBUGGING_EXPORTS = ["Assert"] + _ASSERTIONS
