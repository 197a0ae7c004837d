"""tf.constant and the Const op."""
from __future__ import annotations

from ..graph import get_default_graph
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape
from ..tensor_util import const_op_value, make_tensor_proto


@register
class Const(OpType):
    outputs = ["output: dtype"]
    attrs = {"value": Attr("tensor"), "dtype": Attr("type")}

    def infer(op):
        return [TensorShape([d.size for d in op._attrs["value"].tensor_shape.dim])]

    def lower(ctx, op):
        """A constant; strings (tf.Assert's messages) are compile-time values only."""
        value = const_op_value(op)
        if value.dtype == object:
            return [ctx.string_constant(value)]
        return [ctx.constant(value)]

    def host(op):
        """String constants (tags, file names) live on the host."""
        return [const_op_value(op)]

    not_differentiable = True


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """tf.constant: a Const op holding ``value`` (python float -> float32, int -> int32)."""
    eager_constant = getattr(get_default_graph(), "_eager_constant", None)  # eager mode (tfc/frontend/eager)
    if eager_constant is not None:
        tensor = eager_constant(value, dtype, shape, verify_shape)
        if tensor is not None:
            return tensor
    proto = make_tensor_proto(value, dtype=dtype, shape=shape, verify_shape=verify_shape)
    from .. import dtypes

    graph = get_default_graph()
    op = graph.create_op("Const", [], name=name,
                         attrs={"value": proto, "dtype": dtypes.as_dtype(proto.dtype)})
    return op.outputs[0]


TF_EXPORTS = ["constant"]
