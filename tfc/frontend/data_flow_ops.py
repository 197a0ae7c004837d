"""TF1 queues and conditional accumulators (TF 1.15's python/ops/data_flow_ops.py), as host ops.

``tf.FIFOQueue``, ``tf.PaddingFIFOQueue``, ``tf.RandomShuffleQueue`` (also ``tf.queue.*``,
``tf.io.*``) and ``tf.ConditionalAccumulator`` build TF's graph: a handle op
(``FIFOQueueV2``, ``PaddingFIFOQueueV2``, ``RandomShuffleQueueV2``,
``ResourceConditionalAccumulator``) and the ops that use it (``QueueEnqueueV2``,
``QueueEnqueueManyV2``, ``QueueDequeueV2``, ``QueueDequeueManyV2``,
``QueueDequeueUpToV2``, ``QueueCloseV2``, ``QueueIsClosedV2``, ``QueueSizeV2``,
``ResourceAccumulatorApplyGradient``, ``ResourceAccumulatorTakeGradient``,
``ResourceAccumulatorNumAccumulated``, ``ResourceAccumulatorSetGlobalStep``; the ref-handle
versions of TF graphs older than 1.13 run too). They hold state across steps, so they are
host ops (tfc/runtime/host.py): they run in Python around the compiled program, on
resources that live in the session, or in the task of a cluster that holds them
(tfc/runtime/host_resources.py; shared by ``shared_name`` as variables are).

A dequeue on an empty queue, an enqueue on a full one and a ``take_grad`` short of
gradients block until another step (another thread's ``sess.run``, a QueueRunner, another
client of the task) lets them go on; while blocked they let go of the session's lock, and
they end with TF's errors: OutOfRangeError when the queue is closed with too few elements
("FIFOQueue '_0_fifo_queue' is closed and has insufficient elements (requested 1, current
size 0)"), DeadlineExceededError at the step's deadline (``RunOptions.timeout_in_ms`` /
``operation_timeout_in_ms``), CancelledError when the session closes
(tfc/runtime/step_context.py).
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from tfc.runtime import step_context
from tfc.runtime.host_resources import handle_value, parse_handle, scope_of, store_of

from . import dtypes as _dtypes
from . import errors
from .convert import convert_to_tensor
from .graph import get_default_graph, name_scope
from .registry import Attr, OpType, register
from .tensor_shape import Dimension, TensorShape, as_shape, dimension_value, unknown_shape

_INT32_MAX = 2**31 - 1


# -- helpers ---------------------------------------------------------------------------------------
def _text(value) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


def _session():
    from tfc.runtime.host import current_session

    return current_session()


def _shape_text(shape) -> str:
    """TF's TensorShape / PartialTensorShape DebugString: [2,3], [?,3], <unknown>."""
    if isinstance(shape, TensorShape):
        if shape.dims is None:
            return "<unknown>"
        return "[" + ",".join("?" if d.value is None else str(d.value) for d in shape.dims) + "]"
    return "[" + ",".join(str(d) for d in shape) + "]"


def _types_text(types) -> str:
    return ", ".join(_dtypes.as_dtype(t).base_dtype.name for t in types)


def _np_value(value, dtype):
    """``value`` as a fresh array of ``dtype`` (strings: an object array of bytes)."""
    if dtype == _dtypes.string:
        array = np.array(value, dtype=object, copy=True)
        return array
    return np.array(value, dtype=dtype.as_numpy_dtype, copy=True)


def _fits(shape: TensorShape, actual) -> bool:
    if shape.dims is None:
        return True
    if len(shape.dims) != len(actual):
        return False
    return all(d.value is None or d.value == a for d, a in zip(shape.dims, actual))


def _lookup(op, handle, kind):
    container, name = parse_handle(handle)
    resource = store_of(_session()).lookup(container, name)
    if resource is None:
        raise errors.NotFoundError(None, op, f"Resource {container or 'localhost'}/{name}/{kind} does not exist.")
    if not isinstance(resource, _RESOURCE_CLASSES[kind]):
        raise errors.InvalidArgumentError(None, op, f"Resource '{name}' is a {resource.kind}, not a {kind}")
    return resource


def _create(op, factory):
    session = _session()
    attrs = op._attrs
    container, shared = _text(attrs.get("container")), _text(attrs.get("shared_name"))
    resource, name = store_of(session).get_or_create(container, shared, scope_of(session), op.name,
                                                      lambda name: factory(name, op))
    resource.check_compatible(op)
    return handle_value(container, name)


def _handle_source(op):
    """The handle op (FIFOQueueV2...) behind ``op``'s first input, through Identities."""
    source = op.inputs[0].op
    while source.type in ("Identity", "RefIdentity") and source.inputs:
        source = source.inputs[0].op
    return source


def _queue_shapes(op) -> list:
    """The component shapes the queue behind ``op`` declares ([] when unknown)."""
    source = _handle_source(op)
    shapes = source._attrs.get("shapes") if source.type in _QUEUE_OP_TYPES else None
    return [TensorShape(s) for s in shapes] if shapes else []


# -- the resources ---------------------------------------------------------------------------------
class _Queue:
    """A queue's elements (tuples of arrays) and its waiters."""

    kind = "FIFOQueue"

    def __init__(self, name: str, op):
        attrs = op._attrs
        self.name = name
        self.dtypes = [_dtypes.as_dtype(t).base_dtype for t in attrs["component_types"]]
        self.shapes = [TensorShape(s) for s in (attrs.get("shapes") or [])]
        capacity = int(attrs.get("capacity", -1))
        self.requested_capacity = capacity
        self.capacity = _INT32_MAX if capacity < 0 else capacity
        self._cond = threading.Condition(threading.Lock())
        self._items: collections.deque = collections.deque()
        self._closed = False
        self._cancel_enqueues = False
        self._cancelled = None  # why the queue is gone (reset, session closed)

    # what the op asked for must match a shared queue (TF's QueueBase::MatchesNodeDef)
    def check_compatible(self, op) -> None:
        attrs = op._attrs
        if op.type.replace("V2", "") != self.kind:
            raise errors.InvalidArgumentError(None, op, f"Shared queue '{self.name}' is a {self.kind}, but "
                                                        f"{op.name} requested a {op.type.replace('V2', '')}")
        capacity = int(attrs.get("capacity", -1))
        if capacity != self.requested_capacity:
            raise errors.InvalidArgumentError(None, op, f"Shared queue '{self.name}' has capacity "
                                                        f"{self.requested_capacity} but requested capacity was "
                                                        f"{capacity}")
        types = [_dtypes.as_dtype(t).base_dtype for t in attrs["component_types"]]
        if types != self.dtypes:
            raise errors.InvalidArgumentError(None, op, f"Shared queue '{self.name}' has component types "
                                                        f"{_types_text(self.dtypes)} but requested component "
                                                        f"types were {_types_text(types)}")
        shapes = [TensorShape(s) for s in (attrs.get("shapes") or [])]
        if [s.as_proto().SerializeToString() for s in shapes] != \
                [s.as_proto().SerializeToString() for s in self.shapes]:
            raise errors.InvalidArgumentError(
                None, op, f"Shared queue '{self.name}' has component shapes "
                          f"{', '.join(_shape_text(s) for s in self.shapes)} but requested component shapes were "
                          f"{', '.join(_shape_text(s) for s in shapes)}")

    # -- validation --
    def _element(self, op, values) -> tuple:
        if len(values) != len(self.dtypes):
            raise errors.InvalidArgumentError(None, op, f"Expected {len(self.dtypes)} components for the queue "
                                                        f"'{self.name}', got {len(values)}")
        element = tuple(_np_value(v, t) for v, t in zip(values, self.dtypes))
        for i, (value, shape) in enumerate(zip(element, self.shapes)):
            if not _fits(shape, value.shape):
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch in tuple component {i}. Expected "
                                                            f"{_shape_text(shape)}, got {_shape_text(value.shape)}")
        return element

    def elements_of_batch(self, op, values) -> list:
        values = [np.asarray(v, dtype=object if t == _dtypes.string else None) for v, t in zip(values, self.dtypes)]
        if len(values) != len(self.dtypes):
            raise errors.InvalidArgumentError(None, op, f"Expected {len(self.dtypes)} components for the queue "
                                                        f"'{self.name}', got {len(values)}")
        for i, value in enumerate(values):
            if value.ndim < 1:
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch in tuple component {i}. Expected "
                                                            f"[batch_size,...], got {_shape_text(value.shape)}")
        batch = values[0].shape[0]
        for i, value in enumerate(values[1:], 1):
            if value.shape[0] != batch:
                raise errors.InvalidArgumentError(
                    None, op, f"All input tensors must have the same size in the 0th dimension. Component 0 has "
                              f"{batch}, and component {i} has {value.shape[0]}")
        for i, (value, shape) in enumerate(zip(values, self.shapes)):
            if not _fits(shape, value.shape[1:]):
                expected = TensorShape([batch]).concatenate(shape)
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch in tuple component {i}. Expected "
                                                            f"{_shape_text(expected)}, got "
                                                            f"{_shape_text(value.shape)}")
        return [self._element(op, [value[j] for value in values]) for j in range(batch)]

    # -- the operations --
    def enqueue(self, op, elements: list) -> None:
        pending = collections.deque(elements)
        with self._cond:
            self._check_enqueue(op)
            self._put(pending)
            if not pending:
                return
        with step_context.Waiter(op, "Enqueue operation") as waiter:
            with self._cond:
                while True:
                    self._check_enqueue(op, pending=True)
                    self._put(pending)
                    if not pending:
                        return
                    waiter.wait(self._cond)

    def _check_enqueue(self, op, pending: bool = False) -> None:
        if self._cancelled:
            raise errors.CancelledError(None, op, f"Enqueue operation was cancelled: {self._cancelled}")
        if pending and self._cancel_enqueues:
            raise errors.CancelledError(None, op, "Enqueue operation was cancelled")
        if self._closed and not pending:
            raise errors.CancelledError(None, op, f"{self.kind} '{self.name}' is closed.")

    def _put(self, pending) -> None:
        added = False
        while pending and len(self._items) < self.capacity:
            self._items.append(pending.popleft())
            added = True
        if added:
            self._cond.notify_all()

    def dequeue(self, op, n: int, allow_small: bool = False) -> list:
        """``n`` elements (fewer, at least one, for ``allow_small`` once the queue is closed)."""
        with self._cond:
            taken = self._take(op, n, allow_small)
            if taken is not None:
                return taken
        with step_context.Waiter(op, "Dequeue operation") as waiter:
            with self._cond:
                while True:
                    taken = self._take(op, n, allow_small)
                    if taken is not None:
                        return taken
                    waiter.wait(self._cond)

    def _available(self) -> int:
        return len(self._items)

    def _take(self, op, n: int, allow_small: bool):
        if self._cancelled:
            raise errors.CancelledError(None, op, f"Dequeue operation was cancelled: {self._cancelled}")
        if self._available() >= n:
            taken = [self._pop() for _ in range(n)]
        elif self._closed:
            if allow_small and self._items:
                taken = [self._pop() for _ in range(len(self._items))]
            else:
                raise errors.OutOfRangeError(None, op, f"{self.kind} '{self.name}' is closed and has insufficient "
                                                       f"elements (requested {n}, current size {len(self._items)})")
        else:
            return None
        if taken:
            self._cond.notify_all()
        return taken

    def _pop(self):
        return self._items.popleft()

    def batch(self, op, elements: list) -> list:
        """The components of ``elements`` stacked along a new first dim."""
        out = []
        for i, dtype in enumerate(self.dtypes):
            shape = self.shapes[i]
            if not elements:
                dims = [0] + [d.value or 0 for d in shape.dims]
                out.append(np.zeros(dims, dtype=object if dtype == _dtypes.string else dtype.as_numpy_dtype))
                continue
            out.append(np.stack([element[i] for element in elements]))
        return out

    def require_shapes(self, op) -> None:
        if not self.shapes:
            raise errors.InvalidArgumentError(None, op, f"{self.kind}'s DequeueMany and DequeueUpTo require the "
                                                        "components to have specified shapes.")

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self._cond:
            self._closed = True
            if cancel_pending_enqueues:
                self._cancel_enqueues = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._cond:
            return self._closed

    def size(self) -> int:
        with self._cond:
            return len(self._items)

    def cancel(self, reason: str) -> None:
        """The queue is gone (its container was reset, its session closed): waiters end."""
        with self._cond:
            self._cancelled = reason
            self._cond.notify_all()


class _PaddingQueue(_Queue):
    kind = "PaddingFIFOQueue"

    def batch(self, op, elements: list) -> list:
        out = []
        for i, dtype in enumerate(self.dtypes):
            shape = self.shapes[i]
            rank = len(shape.dims)
            if elements:
                dims = [max(element[i].shape[axis] for element in elements) for axis in range(rank)]
            else:
                dims = [d.value or 0 for d in shape.dims]
            is_string = dtype == _dtypes.string
            batch = np.full([len(elements)] + dims, b"" if is_string else 0,
                            dtype=object if is_string else dtype.as_numpy_dtype)
            for j, element in enumerate(elements):
                value = element[i]
                batch[(j,) + tuple(slice(0, d) for d in value.shape)] = value
            out.append(batch)
        return out


class _RandomShuffleQueue(_Queue):
    kind = "RandomShuffleQueue"

    def __init__(self, name: str, op):
        super().__init__(name, op)
        attrs = op._attrs
        self.min_after_dequeue = int(attrs.get("min_after_dequeue", 0))
        seed, seed2 = int(attrs.get("seed", 0) or 0), int(attrs.get("seed2", 0) or 0)
        if seed == 0 and seed2 == 0:
            self._random = np.random.RandomState()
        else:
            self._random = np.random.RandomState([seed & 0xFFFFFFFF, seed2 & 0xFFFFFFFF])
        self._items = []  # (a list: an element is taken from anywhere)

    def _available(self) -> int:
        return len(self._items) - (0 if self._closed else self.min_after_dequeue)

    def _pop(self):
        index = int(self._random.randint(len(self._items)))
        items = self._items
        items[index], items[-1] = items[-1], items[index]
        return items.pop()


class _Accumulator:
    """A conditional accumulator: the sum of the gradients applied at its time step or later."""

    kind = "ConditionalAccumulator"

    def __init__(self, name: str, op):
        attrs = op._attrs
        self.name = name
        self.dtype = _dtypes.as_dtype(attrs["dtype"]).base_dtype
        self.shape = TensorShape(attrs.get("shape")) if attrs.get("shape") is not None else unknown_shape()
        self.reduction = _text(attrs.get("reduction_type")) or "MEAN"
        self._cond = threading.Condition(threading.Lock())
        self._sum = None
        self._count = 0
        self._global_step = 0
        self._cancelled = None

    def check_compatible(self, op) -> None:
        dtype = _dtypes.as_dtype(op._attrs["dtype"]).base_dtype
        if dtype != self.dtype:
            raise errors.InvalidArgumentError(None, op, f"Shared accumulator '{self.name}' has dtype "
                                                        f"{self.dtype.name} but requested dtype was {dtype.name}")

    def apply(self, op, local_step: int, gradient) -> None:
        gradient = _np_value(gradient, self.dtype)
        with self._cond:
            if local_step < self._global_step:
                return  # a stale gradient: silently dropped
            expected = self.shape if self._sum is None else TensorShape(self._sum.shape)
            if not _fits(expected, gradient.shape):
                raise errors.InvalidArgumentError(None, op, f"Shape mismatch: expected {_shape_text(expected)}, "
                                                            f"got {_shape_text(gradient.shape)}")
            if self._sum is None:
                self._sum = gradient
            else:
                self._sum += gradient
            self._count += 1
            self._cond.notify_all()

    def take(self, op, num_required: int):
        if num_required < 1:
            raise errors.InvalidArgumentError(None, op, f"Argument num_required must be positive, but was "
                                                        f"{num_required}")
        with self._cond:
            taken = self._try_take(op, num_required)
            if taken is not None:
                return taken
        with step_context.Waiter(op, "TakeGrad operation") as waiter:
            with self._cond:
                while True:
                    taken = self._try_take(op, num_required)
                    if taken is not None:
                        return taken
                    waiter.wait(self._cond)

    def _try_take(self, op, num_required: int):
        if self._cancelled:
            raise errors.CancelledError(None, op, f"TakeGrad operation was cancelled: {self._cancelled}")
        if self._count < num_required:
            return None
        total, count = self._sum, self._count
        if self.reduction == "MEAN":
            if self.dtype.is_floating or self.dtype.is_complex:
                total = total / np.asarray(count, dtype=total.dtype)
            else:
                total = np.trunc(total / count).astype(total.dtype)
        self._sum, self._count = None, 0
        self._global_step += 1
        return np.asarray(total, dtype=self.dtype.as_numpy_dtype)

    def set_global_step(self, step: int) -> None:
        with self._cond:
            self._global_step = int(step)  # (TF only warns when the step goes back)

    def num_accumulated(self) -> int:
        with self._cond:
            return self._count

    def cancel(self, reason: str) -> None:
        with self._cond:
            self._cancelled = reason
            self._cond.notify_all()


_RESOURCE_CLASSES = {"Queue": _Queue, "ConditionalAccumulator": _Accumulator}


# -- op types ------------------------------------------------------------------------------------
class _HostOp(OpType):
    host_only = True
    stateful = True
    not_differentiable = True


_QUEUE_ATTRS = {"component_types": Attr("list(type)"), "shapes": Attr("list(shape)", []),
                "capacity": Attr("int", -1), "container": Attr("string", ""), "shared_name": Attr("string", "")}
_QUEUE_CLASSES = {"FIFOQueue": _Queue, "PaddingFIFOQueue": _PaddingQueue, "RandomShuffleQueue": _RandomShuffleQueue}
_QUEUE_OP_TYPES = set()


def _queue_handle_type(type_name: str, ref: bool):
    queue_class = _QUEUE_CLASSES[type_name.replace("V2", "")]
    attrs = dict(_QUEUE_ATTRS)
    if queue_class is _RandomShuffleQueue:
        attrs.update({"min_after_dequeue": Attr("int", 0), "seed": Attr("int", 0), "seed2": Attr("int", 0)})

    def infer(op):
        return [TensorShape([2]) if ref else TensorShape([])]

    def host(op):
        return [_create(op, queue_class)]

    cls = type(type_name, (_HostOp,), {
        "__doc__": f"A {queue_class.kind}'s handle (the queue lives in the session or the task).",
        "inputs": [], "outputs": ["handle: Ref(string)" if ref else "handle: resource"], "attrs": attrs,
        "infer": staticmethod(infer), "host": staticmethod(host)})
    _QUEUE_OP_TYPES.add(type_name)
    return register(cls)


for _name in ("FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"):
    _queue_handle_type(_name + "V2", ref=False)
    _queue_handle_type(_name, ref=True)


def _handle_spec(ref: bool) -> str:
    return "handle: Ref(string)" if ref else "handle: resource"


def _define(type_name: str, ref: bool, inputs: list, outputs: list, attrs: dict, infer, host, doc: str):
    cls = type(type_name, (_HostOp,), {
        "__doc__": doc, "inputs": [_handle_spec(ref)] + inputs, "outputs": outputs, "attrs": attrs,
        "infer": staticmethod(infer), "host": staticmethod(host)})
    return register(cls)


def _enqueue_host(op, handle, *components):
    queue = _lookup(op, handle, "Queue")
    queue.enqueue(op, [queue._element(op, list(components))])
    return []


def _enqueue_many_host(op, handle, *components):
    queue = _lookup(op, handle, "Queue")
    queue.enqueue(op, queue.elements_of_batch(op, list(components)))
    return []


def _dequeue_host(op, handle):
    queue = _lookup(op, handle, "Queue")
    (element,) = queue.dequeue(op, 1)
    return list(element)


def _dequeue_many_host(op, handle, n, allow_small=False):
    queue = _lookup(op, handle, "Queue")
    n = int(np.asarray(n))
    if n < 0:
        raise errors.InvalidArgumentError(None, op, f"Request {'DequeueUpTo' if allow_small else 'DequeueMany'} "
                                                    f"operation with n < 0: {n}")
    queue.require_shapes(op)
    return queue.batch(op, queue.dequeue(op, n, allow_small))


def _dequeue_up_to_host(op, handle, n):
    return _dequeue_many_host(op, handle, n, allow_small=True)


def _dequeue_shapes(op, batch):
    shapes = _queue_shapes(op)
    count = len(op._attrs["component_types"])
    if not shapes:
        return [unknown_shape()] * count
    if batch is False:
        return shapes
    return [TensorShape([batch]).concatenate(s) for s in shapes]


def _constant_n(op):
    from .tensor_util import constant_value

    value = constant_value(op.inputs[1])
    return None if value is None else int(value)


for _ref in (False, True):
    _v2 = "" if _ref else "V2"
    _define("QueueEnqueue" + _v2, _ref, ["components: Tcomponents"], [],
            {"Tcomponents": Attr("list(type)"), "timeout_ms": Attr("int", -1)},
            lambda op: [], _enqueue_host, "Enqueues one element (blocks while the queue is full).")
    _define("QueueEnqueueMany" + _v2, _ref, ["components: Tcomponents"], [],
            {"Tcomponents": Attr("list(type)"), "timeout_ms": Attr("int", -1)},
            lambda op: [], _enqueue_many_host, "Enqueues the slices of its components along dim 0.")
    _define("QueueDequeue" + _v2, _ref, [], ["components: component_types"],
            {"component_types": Attr("list(type)"), "timeout_ms": Attr("int", -1)},
            lambda op: _dequeue_shapes(op, False), _dequeue_host,
            "Dequeues one element (blocks while the queue is empty and open).")
    _define("QueueDequeueMany" + _v2, _ref, ["n: int32"], ["components: component_types"],
            {"component_types": Attr("list(type)"), "timeout_ms": Attr("int", -1)},
            lambda op: _dequeue_shapes(op, _constant_n(op)), _dequeue_many_host,
            "Dequeues n elements, concatenated along a new dim 0.")
    _define("QueueDequeueUpTo" + _v2, _ref, ["n: int32"], ["components: component_types"],
            {"component_types": Attr("list(type)"), "timeout_ms": Attr("int", -1)},
            lambda op: _dequeue_shapes(op, None), _dequeue_up_to_host,
            "Dequeues n elements, or fewer (at least one) once the queue is closed.")
    _define("QueueClose" + _v2, _ref, [], [], {"cancel_pending_enqueues": Attr("bool", False)},
            lambda op: [], lambda op, handle: _lookup(op, handle, "Queue").close(
                bool(op._attrs.get("cancel_pending_enqueues", False))) or [],
            "Closes the queue: enqueues fail from now on, dequeues once it is empty.")
    _define("QueueSize" + _v2, _ref, [], ["size: int32"], {}, lambda op: [TensorShape([])],
            lambda op, handle: [np.array(_lookup(op, handle, "Queue").size(), dtype=np.int32)],
            "The number of elements in the queue.")
_define("QueueIsClosedV2", False, [], ["is_closed: bool"], {}, lambda op: [TensorShape([])],
        lambda op, handle: [np.array(_lookup(op, handle, "Queue").is_closed())], "Whether the queue is closed.")
_define("QueueIsClosed", True, [], ["is_closed: bool"], {}, lambda op: [TensorShape([])],
        lambda op, handle: [np.array(_lookup(op, handle, "Queue").is_closed())], "Whether the queue is closed.")


_ACCUMULATOR_ATTRS = {"dtype": Attr("type"), "shape": Attr("shape"), "container": Attr("string", ""),
                      "shared_name": Attr("string", ""), "reduction_type": Attr("string", "MEAN")}


def _accumulator_shape(op):
    source = _handle_source(op)
    shape = source._attrs.get("shape") if source.type in ("ConditionalAccumulator",
                                                           "ResourceConditionalAccumulator") else None
    return TensorShape(shape) if shape is not None else unknown_shape()


def _apply_host(op, handle, local_step, gradient):
    _lookup(op, handle, "ConditionalAccumulator").apply(op, int(np.asarray(local_step)), gradient)
    return []


def _take_host(op, handle, num_required):
    return [_lookup(op, handle, "ConditionalAccumulator").take(op, int(np.asarray(num_required)))]


for _ref, _prefix in ((False, "Resource"), (True, "")):
    register(type(_prefix + "ConditionalAccumulator", (_HostOp,), {
        "__doc__": "A conditional accumulator's handle (it lives in the session or the task).",
        "inputs": [], "outputs": [_handle_spec(_ref)], "attrs": _ACCUMULATOR_ATTRS,
        "infer": staticmethod(lambda op: [TensorShape([2])]),  # (TF's shape function: a 2-vector)
        "host": staticmethod(lambda op: [_create(op, _Accumulator)])}))
    _define(_prefix + "AccumulatorApplyGradient", _ref, ["local_step: int64", "gradient: dtype"], [],
            {"dtype": Attr("type")}, lambda op: [], _apply_host,
            "Adds a gradient to the accumulator, unless it is stale (local_step < the accumulator's step).")
    _define(_prefix + "AccumulatorTakeGradient", _ref, ["num_required: int32"], ["average: dtype"],
            {"dtype": Attr("type")}, lambda op: [_accumulator_shape(op)], _take_host,
            "The average of num_required or more gradients (blocks until there are); resets the "
            "accumulator and advances its step.")
    _define(_prefix + "AccumulatorNumAccumulated", _ref, [], ["num_accumulated: int32"], {},
            lambda op: [TensorShape([])],
            lambda op, handle: [np.array(_lookup(op, handle, "ConditionalAccumulator").num_accumulated(),
                                         dtype=np.int32)],
            "The number of gradients accumulated since the last take.")
    _define(_prefix + "AccumulatorSetGlobalStep", _ref, ["new_global_step: int64"], [], {}, lambda op: [],
            lambda op, handle, step: _lookup(op, handle, "ConditionalAccumulator").set_global_step(
                int(np.asarray(step))) or [],
            "Sets the accumulator's time step.")


# -- the Python API --------------------------------------------------------------------------------
def _as_type_list(dtypes):
    if isinstance(dtypes, (list, tuple)):
        return [_dtypes.as_dtype(d) for d in dtypes]
    return [_dtypes.as_dtype(dtypes)]


def _as_shape_list(shapes, dtypes, unknown_dim_allowed=False, unknown_rank_allowed=False):
    if unknown_dim_allowed:
        if (not isinstance(shapes, (list, tuple)) or not shapes
                or any(shape is None or isinstance(shape, int) for shape in shapes)):
            raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError(f"Shapes must be a TensorShape or a list or tuple of TensorShapes, got {type(shapes)} "
                        "instead.")
    if all(shape is None or isinstance(shape, int) for shape in shapes):
        shapes = [shapes]  # a single shape
    shapes = [as_shape(shape) for shape in shapes]
    if not unknown_dim_allowed and any(not shape.is_fully_defined() for shape in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if not unknown_rank_allowed and any(shape.dims is None for shape in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes):
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes, received "
                         f"len(names)={len(names)},len(dtypes)={len(dtypes)}")
    return list(names)


def _create_op(op_type, inputs, attrs, name):
    return get_default_graph().create_op(op_type, inputs, name=name, attrs=attrs)


class QueueBase:
    """Base class of the queues: enqueue, enqueue_many, dequeue, dequeue_many, dequeue_up_to,
    close, is_closed, size (tf.queue.QueueBase)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        if shapes is not None:
            if len(shapes) != len(dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes, received "
                                 f"len(shapes)={len(shapes)}, len(dtypes)={len(dtypes)}")
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(dtypes):
                raise ValueError(f"Queue names must have the same length as dtypes,received len(names)={len(names)},"
                                 f"len {len(dtypes)}")
            self._names = names
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = self._queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues):
        raise NotImplementedError("tfc does not implement QueueBase.from_list yet (a queue chosen at run time)")

    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self):
        return self._queue_ref.op.name

    @property
    def dtypes(self):
        return self._dtypes

    @property
    def shapes(self):
        return self._shapes

    @property
    def names(self):
        return self._names

    def _is_ref(self) -> bool:
        return self._queue_ref.dtype != _dtypes.resource

    def _op_type(self, base: str) -> str:
        return base if self._is_ref() else base + "V2"

    def _check_enqueue_dtypes(self, vals):
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                                 f"{sorted(vals.keys())},Queue: {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        # (zip: TF enqueues the first len(dtypes) values and ignores the rest)
        return [convert_to_tensor(val, dtype=dtype, name="component_%d" % i)
                for i, (val, dtype) in enumerate(zip(vals, self._dtypes))]

    @staticmethod
    def _scope_vals(vals):
        if isinstance(vals, (list, tuple)):
            return vals
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def enqueue(self, vals, name=None):
        """The op enqueuing one element (it blocks while the queue is full)."""
        with name_scope(name, "%s_enqueue" % self._name, self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes):
                val.get_shape().assert_is_compatible_with(shape)
            return _create_op(self._op_type("QueueEnqueue"), [self._queue_ref] + vals,
                              {"Tcomponents": [v.dtype.base_dtype for v in vals]}, scope)

    def enqueue_many(self, vals, name=None):
        """The op enqueuing the slices of ``vals`` along their first dim."""
        with name_scope(name, "%s_EnqueueMany" % self._name, self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = Dimension(dimension_value(vals[0].get_shape().with_rank_at_least(1)[0]))
            for val, shape in zip(vals, self._shapes):
                val_batch_dim = Dimension(dimension_value(val.get_shape().with_rank_at_least(1)[0]))
                batch_dim = batch_dim.merge_with(val_batch_dim)
                val.get_shape()[1:].assert_is_compatible_with(shape)
            return _create_op(self._op_type("QueueEnqueueMany"), [self._queue_ref] + vals,
                              {"Tcomponents": [v.dtype.base_dtype for v in vals]}, scope)

    def _dequeue_return_value(self, tensors):
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    def dequeue(self, name=None):
        """One element (blocks while the queue is empty; OutOfRangeError once it is closed)."""
        if name is None:
            name = "%s_Dequeue" % self._name
        op = _create_op(self._op_type("QueueDequeue"), [self._queue_ref], {"component_types": self._dtypes}, name)
        for output, shape in zip(op.outputs, self._shapes):
            output.set_shape(shape)
        return self._dequeue_return_value(list(op.outputs))

    def dequeue_many(self, n, name=None):
        """``n`` elements concatenated along a new first dim."""
        from .tensor_util import constant_value

        if name is None:
            name = "%s_DequeueMany" % self._name
        with name_scope(name) as scope:
            n_tensor = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        op = _create_op(self._op_type("QueueDequeueMany"), [self._queue_ref, n_tensor],
                        {"component_types": self._dtypes}, scope)
        value = constant_value(op.inputs[1])
        batch_dim = Dimension(None if value is None else int(value))
        for output, shape in zip(op.outputs, self._shapes):
            output.set_shape(TensorShape([batch_dim]).concatenate(shape))
        return self._dequeue_return_value(list(op.outputs))

    def dequeue_up_to(self, n, name=None):
        """``n`` elements, or fewer (at least one) when the queue is closed."""
        if name is None:
            name = "%s_DequeueUpTo" % self._name
        with name_scope(name) as scope:
            n_tensor = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        op = _create_op(self._op_type("QueueDequeueUpTo"), [self._queue_ref, n_tensor],
                        {"component_types": self._dtypes}, scope)
        for output, shape in zip(op.outputs, self._shapes):
            output.set_shape(TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(list(op.outputs))

    def close(self, cancel_pending_enqueues=False, name=None):
        """The op closing the queue (with ``cancel_pending_enqueues``, blocked enqueues fail)."""
        if name is None:
            name = "%s_Close" % self._name
        return _create_op(self._op_type("QueueClose"), [self._queue_ref],
                          {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}, name)

    def is_closed(self, name=None):
        if name is None:
            name = "%s_Is_Closed" % self._name
        return _create_op(self._op_type("QueueIsClosed"), [self._queue_ref], {}, name).outputs[0]

    def size(self, name=None):
        if name is None:
            name = "%s_Size" % self._name
        return _create_op(self._op_type("QueueSize"), [self._queue_ref], {}, name).outputs[0]


def _queue_op(op_type, dtypes, shapes, capacity, shared_name, name, **extra):
    attrs = {"component_types": dtypes, "shapes": shapes or [], "capacity": int(capacity),
             "shared_name": shared_name or "", **extra}
    return get_default_graph().create_op(op_type, [], name=name, attrs=attrs).outputs[0]


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        queue_ref = _queue_op("FIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, queue_ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose components may have unknown dims: dequeue_many pads them (zeros,
    empty strings) to the largest element's."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received {len(dtypes)} dtypes and "
                             f"{len(shapes)} shapes.")
        queue_ref = _queue_op("PaddingFIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, queue_ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order, keeping at least
    ``min_after_dequeue`` of them until it is closed."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None, shared_name=None,
                 name="random_shuffle_queue"):
        import hashlib

        from .ops.random_ops import get_seed

        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # a graph seed and a shared name: seed2 from them alone (TF's rule)
            string = (str(seed1) + shared_name).encode("utf-8")
            seed2 = int(hashlib.md5(string).hexdigest()[:8], 16) & 0x7FFFFFFF
        queue_ref = _queue_op("RandomShuffleQueueV2", dtypes, shapes, capacity, shared_name, name,
                              min_after_dequeue=int(min_after_dequeue), seed=int(seed1), seed2=int(seed2))
        super().__init__(dtypes, shapes, names, queue_ref)


class ConditionalAccumulatorBase:
    """A conditional accumulator (num_accumulated, set_global_step)."""

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = dtype
        self._shape = TensorShape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = accumulator_ref
        self._name = self._accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self):
        return self._accumulator_ref

    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    def _op_type(self, base: str) -> str:
        return ("Resource" + base) if self._accumulator_ref.dtype == _dtypes.resource else base

    def num_accumulated(self, name=None):
        """The number of gradients accumulated since the last take_grad."""
        if name is None:
            name = "%s_NumAccumulated" % self._name
        return _create_op(self._op_type("AccumulatorNumAccumulated"), [self._accumulator_ref], {}, name).outputs[0]

    def set_global_step(self, new_global_step, name=None):
        """The op setting the accumulator's time step."""
        from .ops.math_ops import cast

        step = cast(convert_to_tensor(new_global_step), _dtypes.int64)
        return _create_op(self._op_type("AccumulatorSetGlobalStep"), [self._accumulator_ref, step], {},
                          name or self._op_type("AccumulatorSetGlobalStep"))


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Averages the gradients applied at its time step or later: ``apply_grad(grad, local_step)``
    (a stale gradient, local_step < the accumulator's step, is dropped), ``take_grad(n)``
    (blocks until n gradients arrived; returns their mean, resets, advances the step)."""

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator", reduction_type="MEAN"):
        attrs = {"dtype": _dtypes.as_dtype(dtype), "shape": TensorShape(shape) if shape is not None else
                 unknown_shape(), "shared_name": shared_name or "", "reduction_type": reduction_type}
        accumulator_ref = get_default_graph().create_op("ResourceConditionalAccumulator", [], name=name,
                                                        attrs=attrs).outputs[0]
        super().__init__(_dtypes.as_dtype(dtype), shape, accumulator_ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """The op adding ``grad`` (dropped when ``local_step`` is stale)."""
        from .ops.math_ops import cast

        grad = convert_to_tensor(grad, self._dtype)
        grad.get_shape().assert_is_compatible_with(self._shape)
        local_step = cast(convert_to_tensor(local_step), _dtypes.int64)
        op_type = self._op_type("AccumulatorApplyGradient")
        return _create_op(op_type, [self._accumulator_ref, local_step, grad], {"dtype": self._dtype},
                          name or op_type)

    def take_grad(self, num_required, name=None):
        """The average of at least ``num_required`` gradients (blocks until there are)."""
        op_type = self._op_type("AccumulatorTakeGradient")
        with name_scope(name or op_type) as scope:
            required = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        out = _create_op(op_type, [self._accumulator_ref, required], {"dtype": self._dtype}, scope).outputs[0]
        out.set_shape(self._shape)
        return out


def _release_session(session) -> None:
    from tfc.runtime.host_resources import release_session

    release_session(session)


def _install() -> None:
    from tfc.runtime.host import on_session_close

    on_session_close(_release_session)


_install()

TF_EXPORTS = {"QueueBase": QueueBase, "FIFOQueue": FIFOQueue, "PaddingFIFOQueue": PaddingFIFOQueue,
              "RandomShuffleQueue": RandomShuffleQueue, "ConditionalAccumulator": ConditionalAccumulator,
              "ConditionalAccumulatorBase": ConditionalAccumulatorBase}
QUEUE_EXPORTS = {"QueueBase": QueueBase, "FIFOQueue": FIFOQueue, "PaddingFIFOQueue": PaddingFIFOQueue,
                 "RandomShuffleQueue": RandomShuffleQueue}
IO_EXPORTS = {"QueueBase": QueueBase, "PaddingFIFOQueue": PaddingFIFOQueue, "RandomShuffleQueue": RandomShuffleQueue}
