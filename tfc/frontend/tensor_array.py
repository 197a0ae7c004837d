"""tf.TensorArray in graph mode (TF 1.15's ``_GraphTensorArray``): the TensorArrayV3 family
of ops (a resource handle and a float ``flow`` tensor threading the writes), with TF's
names (``TensorArray``, ``TensorArrayWrite/TensorArrayWriteV3``,
``TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3``,
``TensorArrayStack/TensorArrayGatherV3``...).

Compiled, a TensorArray is a value, not a resource: its ``flow`` stands for the whole array
(``[size, *element_shape]``), a write or scatter makes a new array, a read or gather reads
one, and a while loop carries the array as the loop variable TF carries the flow as
(``tfc/passes/lower_control.py``). The handle only names which array an op works on.
"""
from __future__ import annotations

import contextlib

from . import dtypes
from .convert import convert_to_tensor
from .graph import Tensor, colocate_with, get_default_graph, name_scope
from .op_helper import apply_op
from .registry import Attr, OpType, lowering_in, register
from .tensor_shape import TensorShape, unknown_shape


# -- the ops ----------------------------------------------------------------------------------
def _lowering(name: str):
    """The entry's lowering: ``tfc.passes.lower_arrays.<name>``."""
    return lowering_in("tfc.passes.lower_arrays", name)


@register
class TensorArrayV3(OpType):
    """A new array of ``size`` elements: its handle and its first flow."""

    inputs = ["size: int32"]
    outputs = ["handle: resource", "flow: float32"]
    attrs = {"dtype": Attr("type"), "element_shape": Attr("shape", TensorShape(None)),
             "dynamic_size": Attr("bool", False), "clear_after_read": Attr("bool", True),
             "identical_element_shapes": Attr("bool", False), "tensor_array_name": Attr("string", "")}
    not_differentiable = True

    def infer(op):
        return [[2], []]

    lower = _lowering("new_array")


@register
class TensorArrayWriteV3(OpType):
    inputs = ["handle: resource", "index: int32", "value: T", "flow_in: float32"]
    outputs = ["flow_out: float32"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return [[]]

    lower = _lowering("array_write")

    def gradient(op, flow):
        """TF's _TensorArrayWriteGrad: read the value's gradient from the gradient array."""
        return _write_or_scatter_grad(op, flow, "read")


@register
class TensorArrayReadV3(OpType):
    inputs = ["handle: resource", "index: int32", "flow_in: float32"]
    outputs = ["value: dtype"]
    attrs = {"dtype": Attr("type")}

    def infer(op):
        return [unknown_shape()]

    lower = _lowering("array_read")

    def gradient(op, grad):
        """TF's _TensorArrayReadGrad: write ``grad`` into the gradient array; the flow's
        gradient is that write's flow."""
        return _read_or_gather_grad(op, grad, "write")


@register
class TensorArrayGatherV3(OpType):
    inputs = ["handle: resource", "indices: int32", "flow_in: float32"]
    outputs = ["value: dtype"]
    attrs = {"dtype": Attr("type"), "element_shape": Attr("shape", TensorShape(None))}

    def infer(op):
        indices = op._inputs[1].shape
        element = op._attrs["element_shape"]
        if indices.dims is None or element.dims is None:
            return [unknown_shape()]
        return [TensorShape(indices.as_list() + element.as_list())]

    lower = _lowering("array_gather")

    def gradient(op, grad):
        """TF's _TensorArrayGatherGrad: scatter ``grad`` into the gradient array."""
        return _read_or_gather_grad(op, grad, "scatter")


@register
class TensorArrayScatterV3(OpType):
    inputs = ["handle: resource", "indices: int32", "value: T", "flow_in: float32"]
    outputs = ["flow_out: float32"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return [[]]

    lower = _lowering("array_scatter")

    def gradient(op, flow):
        """TF's _TensorArrayScatterGrad: gather the values' gradients from the gradient array."""
        return _write_or_scatter_grad(op, flow, "gather")


@register
class TensorArraySizeV3(OpType):
    inputs = ["handle: resource", "flow_in: float32"]
    outputs = ["size: int32"]
    not_differentiable = True

    def infer(op):
        return [[]]

    lower = _lowering("array_size")


@register
class TensorArrayCloseV3(OpType):
    inputs = ["handle: resource"]
    outputs = []
    not_differentiable = True

    def lower(ctx, op, *inputs):
        return []


@register
class TensorArrayGradV3(OpType):
    """The gradient array of ``handle`` for ``source`` (TF makes one per source and shares it;
    its flow threads the gradient writes, see ``lower_arrays.array_grad``)."""

    inputs = ["handle: resource", "flow_in: float32"]
    outputs = ["grad_handle: resource", "flow_out: float32"]
    attrs = {"source": Attr("string")}
    stateful = True
    not_differentiable = True

    def infer(op):
        return [[2], []]

    lower = _lowering("array_grad")


# -- TF 2's TensorList ops (what While bodies of TF 2 graphs hold instead of TensorArrays) ----
def _list_element_shape(op, index: int):
    """The element shape an ``element_shape`` input (-1: unknown dim) holds, or unknown."""
    from .tensor_util import constant_value

    known = constant_value(op._inputs[index])
    if known is None or known.ndim == 0:  # not constant, or a scalar -1: unknown rank
        return unknown_shape()
    return TensorShape([None if d < 0 else int(d) for d in known.reshape(-1)])


class _TensorListOp(OpType):
    not_differentiable = True


@register
class TensorListReserve(_TensorListOp):
    inputs = ["element_shape: shape_type", "num_elements: int32"]
    outputs = ["handle: variant"]
    attrs = {"element_dtype": Attr("type"), "shape_type": Attr("type")}

    def infer(op):
        return [[]]

    lower = _lowering("list_reserve")


@register
class TensorListFromTensor(_TensorListOp):
    inputs = ["tensor: element_dtype", "element_shape: shape_type"]
    outputs = ["output_handle: variant"]
    attrs = {"element_dtype": Attr("type"), "shape_type": Attr("type")}

    def infer(op):
        return [[]]

    lower = _lowering("list_from_tensor")


@register
class TensorListGetItem(_TensorListOp):
    inputs = ["input_handle: variant", "index: int32", "element_shape: int32"]
    outputs = ["item: element_dtype"]
    attrs = {"element_dtype": Attr("type")}

    def infer(op):
        return [_list_element_shape(op, 2)]

    lower = _lowering("list_get_item")


@register
class TensorListSetItem(_TensorListOp):
    inputs = ["input_handle: variant", "index: int32", "item: element_dtype"]
    outputs = ["output_handle: variant"]
    attrs = {"element_dtype": Attr("type"), "resize_if_index_out_of_bounds": Attr("bool", False)}

    def infer(op):
        return [[]]

    lower = _lowering("list_set_item")


@register
class TensorListStack(_TensorListOp):
    inputs = ["input_handle: variant", "element_shape: int32"]
    outputs = ["tensor: element_dtype"]
    attrs = {"element_dtype": Attr("type"), "num_elements": Attr("int", -1)}

    def infer(op):
        element = _list_element_shape(op, 1)
        if element.dims is None:
            return [unknown_shape()]
        count = op._attrs.get("num_elements", -1)
        return [TensorShape([None if count < 0 else count] + element.as_list())]

    lower = _lowering("list_stack")


@register
class TensorListLength(_TensorListOp):
    inputs = ["input_handle: variant"]
    outputs = ["length: int32"]

    def infer(op):
        return [[]]

    lower = _lowering("list_length")


# -- the Python object ------------------------------------------------------------------------
class TensorArray:
    """tf.TensorArray (graph mode): each write returns a new TensorArray sharing the handle,
    with the write's flow."""

    def __new__(cls, *args, **kwargs):
        if cls is TensorArray and getattr(get_default_graph(), "_is_eager", False):  # eager mode: a list
            from .eager.tensor_array import EagerTensorArray

            return EagerTensorArray(*args, **kwargs)
        return object.__new__(cls)

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None,
                 colocate_with_first_write_call=True, name=None):
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot provide both `handle` and `tensor_array_name` arguments at the same time.")
        if handle is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a `handle` and `size` arguments at the same time.")
        self._dynamic_size = dynamic_size or False
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._colocate_with_first_write_call = colocate_with_first_write_call
        self._colocate_with = [] if colocate_with_first_write_call else None
        self._element_shape = [TensorShape(element_shape)]
        self._infer_shape = infer_shape
        self._size = size
        with name_scope(name, "TensorArray", [handle, size, flow]) as scope:
            if handle is not None:
                if flow is None:
                    raise ValueError("flow must not be None if handle is not None.")
                self._handle, self._flow = handle, flow
            else:
                attrs = {"dtype": self._dtype, "element_shape": TensorShape(element_shape),
                         "identical_element_shapes": infer_shape, "dynamic_size": self._dynamic_size,
                         "clear_after_read": True if clear_after_read is None else clear_after_read,
                         "tensor_array_name": tensor_array_name or ""}
                size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
                op = apply_op("TensorArrayV3", [size], attrs, name=scope)
                self._handle, self._flow = op.outputs

    @property
    def flow(self) -> Tensor:
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape[0]

    def _check_element_shape(self, shape: TensorShape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self.element_shape} ")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    def _with_flow(self, flow) -> "TensorArray":
        new = TensorArray(self._dtype, handle=self._handle, flow=flow, infer_shape=self._infer_shape,
                          colocate_with_first_write_call=self._colocate_with_first_write_call)
        new._dynamic_size = self._dynamic_size
        new._size = self._size
        new._colocate_with = self._colocate_with
        new._element_shape = self._element_shape  # shared, as in TF
        return new

    @contextlib.contextmanager
    def _maybe_colocate_with(self, value):
        """Writes colocate with the array's first written value (TF's
        colocate_with_first_write_call)."""
        if not self._colocate_with_first_write_call:
            yield
            return
        if not self._colocate_with:
            self._colocate_with.append(value)
        with colocate_with(self._colocate_with[0]):
            yield

    def identity(self) -> "TensorArray":
        from .ops.array_ops import identity

        return self._with_flow(identity(self._flow))

    def grad(self, source: str, flow=None, name=None) -> "TensorArray":
        """The gradient array of this array for the gradient computation ``source``
        (``TensorArrayGrad/TensorArrayGradV3``; its flow ``gradient_flow`` waits for it);
        it shares this array's element shape."""
        from .graph import control_dependencies
        from .ops.array_ops import identity

        if flow is None:
            flow = self.flow
        with name_scope(name, "TensorArrayGrad", [self._handle]):
            with colocate_with(self._handle):
                g_handle = apply_op("TensorArrayGradV3", [self._handle, flow], {"source": source},
                                    name=name).outputs[0]
                with control_dependencies([g_handle]):
                    flow = identity(flow, name="gradient_flow")
                g = TensorArray(dtype=self._dtype, handle=g_handle, flow=flow, infer_shape=self._infer_shape,
                                colocate_with_first_write_call=False)
                g._element_shape = self._element_shape
                return g

    def read(self, index, name=None) -> Tensor:
        value = apply_op("TensorArrayReadV3", [self._handle, index, self._flow], {"dtype": self._dtype},
                         name=name).outputs[0]
        if self._element_shape:
            value.set_shape(self._element_shape[0])
        return value

    def write(self, index, value, name=None) -> "TensorArray":
        with name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            self._check_element_shape(value.shape)
            with self._maybe_colocate_with(value):
                flow = apply_op("TensorArrayWriteV3", [self._handle, index, value, self._flow],
                                name=name).outputs[0]
            return self._with_flow(flow)

    def stack(self, name=None) -> Tensor:
        from .ops.selection_ops import range as tf_range

        with colocate_with(self._handle):
            with name_scope(name, "TensorArrayStack", [self._handle]):
                value = self.gather(tf_range(0, self.size()), name=name)
                size = _constant_value(self._size)
                if self.element_shape.dims is not None and not self._dynamic_size and size is not None:
                    value.set_shape(TensorShape([size] + self.element_shape.as_list()))
                return value

    def gather(self, indices, name=None) -> Tensor:
        element_shape = self._element_shape[0] if self._element_shape else unknown_shape()
        value = apply_op("TensorArrayGatherV3", [self._handle, indices, self._flow],
                         {"dtype": self._dtype, "element_shape": element_shape}, name=name).outputs[0]
        if self.element_shape.dims is not None:
            value.set_shape(TensorShape([None] + self.element_shape.as_list()))
        return value

    def unstack(self, value, name=None) -> "TensorArray":
        from .ops.array_ops import shape
        from .ops.selection_ops import range as tf_range

        with name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            num_elements = shape(value)[0]
            return self.scatter(indices=tf_range(0, num_elements), value=value, name=name)

    def scatter(self, indices, value, name=None) -> "TensorArray":
        with name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
            if value.shape.dims is not None:
                self._check_element_shape(TensorShape(value.shape.as_list()[1:]))
            with self._maybe_colocate_with(value):
                flow = apply_op("TensorArrayScatterV3", [self._handle, indices, value, self._flow],
                                name=name).outputs[0]
            return self._with_flow(flow)

    def size(self, name=None) -> Tensor:
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=dtypes.int32)
        return apply_op("TensorArraySizeV3", [self._handle, self._flow], name=name).outputs[0]

    def close(self, name=None):
        return apply_op("TensorArrayCloseV3", [self._handle], name=name)


# -- gradients (TF's tensor_array_grad.py) ---------------------------------------------------
def _grad_source(op_or_tensor) -> str:
    """TF's _GetGradSource: the name scope of the tf.gradients call that made
    ``op_or_tensor`` (``gradients``, ``gradients_1``, ``outer/gradients``...): one gradient
    array per forward array and gradients() call."""
    name_tokens = op_or_tensor.name.split("/")
    grad_pos = [i for i, x in enumerate(name_tokens) if x.startswith("gradients")]
    if not grad_pos:
        raise ValueError(f"Expected op/tensor name to start with gradients (excluding scope), got: "
                         f"{op_or_tensor.name}. This means that a tf.gradients op with this op in its dependency "
                         f"path has a custom name that does not start with 'gradients'. Please make sure all calls "
                         f"to tf.gradients that have non-empty `name` arguments use names that start with "
                         f"'gradients'.")
    return "/".join(name_tokens[:grad_pos[-1] + 1])


def _read_or_gather_grad(op, grad, method: str) -> list:
    """The gradient of a TensorArrayReadV3 / GatherV3: ``grad`` written / scattered at the
    op's index / indices into the gradient array (made after the forward flow the op read)."""
    handle, index, flow = op.inputs
    g = TensorArray(dtype=op._attrs["dtype"], handle=handle, flow=flow,
                    colocate_with_first_write_call=False).grad(source=_grad_source(grad), flow=flow)
    return [None, None, getattr(g, method)(index, grad).flow]


def _write_or_scatter_grad(op, flow, method: str) -> list:
    """The gradient of a TensorArrayWriteV3 / ScatterV3 (``flow``: the gradient of its flow
    out): the value's gradient read / gathered from the gradient array once the gradient
    flow has come (``write_barrier``, after ``flow_out``, an identity of the forward flow)."""
    from .graph import control_dependencies
    from .ops.array_ops import identity

    handle, index = op.inputs[0], op.inputs[1]
    grad_source = _grad_source(flow)
    flow_out = identity(op.outputs[0], "flow_out")
    with control_dependencies([flow_out]):
        flow = identity(flow, "write_barrier")
    g = TensorArray(dtype=op._attrs["T"], handle=handle, flow=flow,
                    colocate_with_first_write_call=False).grad(source=grad_source, flow=flow)
    return [None, None, getattr(g, method)(index), flow]


def _constant_value(value):
    """The int a size is known to be, or None."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Tensor):
        from .tensor_util import constant_value

        known = constant_value(value)
        return None if known is None else int(known)
    return int(value)


TF_EXPORTS = ["TensorArray"]
