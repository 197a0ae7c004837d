"""TF1 queue-based input pipelines (TF 1.15's python/training/input.py): ``tf.train.batch``,
``shuffle_batch``, ``batch_join``, ``shuffle_batch_join`` (and their ``maybe_`` forms with a
constant ``keep_input``), ``input_producer``, ``string_input_producer``,
``range_input_producer``, ``slice_input_producer`` and ``limit_epochs``.

Each builds TF's graph: a queue (FIFOQueue, PaddingFIFOQueue with ``dynamic_pad``,
RandomShuffleQueue for the shuffling batches), its enqueue op run by a QueueRunner added to
the QUEUE_RUNNERS collection (``tf.train.start_queue_runners``, or a MonitoredSession,
starts them), a ``fraction_of_<capacity>_full`` summary, and the dequeue. ``limit_epochs``
counts with a local variable and ``CountUpTo`` (a host op here: OutOfRangeError "Reached
limit of N" when done), which closes the queues downstream when the epochs run out.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, errors
from ..convert import convert_to_tensor
from ..graph import GraphKeys, Tensor, control_dependencies, get_default_graph, name_scope
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape
from .queue_runner import QueueRunner, add_queue_runner


@register
class CountUpTo(OpType):
    """Increments a variable until it reaches ``limit`` (then OutOfRangeError); returns the
    value before the increment. Runs on the host, on the session's variable buffer."""

    inputs = ["ref: Ref(T)"]
    outputs = ["output: T"]
    attrs = {"limit": Attr("int"), "T": Attr("type")}
    host_only = True
    stateful = True
    not_differentiable = True

    def infer(op):
        return [op.inputs[0].shape]

    def host(op, value):
        from tfc.runtime.host import current_session

        source = op.inputs[0].op
        while source.type in ("Identity", "RefIdentity") and source.inputs:
            source = source.inputs[0].op
        store = current_session()._variables.values
        current = store.get(source.name)
        if current is None:
            raise errors.FailedPreconditionError(None, op, f"Attempting to use uninitialized value {source.name}")
        limit = int(op._attrs["limit"])
        before = np.array(current, copy=True)
        if before >= limit:
            raise errors.OutOfRangeError(None, op, f"Reached limit of {limit}")
        store[source.name] = np.asarray(before + 1, dtype=before.dtype)
        return [before]


def limit_epochs(tensor, num_epochs=None, name=None):
    """``tensor``, which may be evaluated ``num_epochs`` times (then OutOfRangeError)."""
    from ..variables import Variable

    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError("num_epochs must be > 0 not %d." % num_epochs)
    with name_scope(name, "limit_epochs", [tensor]) as name:
        zero64 = convert_to_tensor(0, dtype=dtypes.int64)
        epochs = Variable(zero64, name="epochs", trainable=False, collections=[GraphKeys.LOCAL_VARIABLES])
        counter = get_default_graph().create_op("CountUpTo", [epochs._ref()], name="CountUpTo",
                                                attrs={"limit": int(num_epochs), "T": dtypes.int64}).outputs[0]
        with control_dependencies([counter]):
            from ..ops.array_ops import identity

            return identity(tensor, name=name)


def _summary_scalar(name, value):
    from ..summary import scalar

    scalar(name, value)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None, capacity=32,
                   shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A queue of the rows of ``input_tensor`` (shuffled, ``num_epochs`` times), filled by a
    QueueRunner."""
    from ..data_flow_ops import FIFOQueue
    from ..ops.math_ops import cast
    from ..ops.random_extra_ops import random_shuffle

    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(TensorShape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or `element_shape` must be "
                             "specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype], shapes=[element_shape],
                      shared_name=shared_name, name=name)
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            _summary_scalar(summary_name, cast(q.size(), dtypes.float32) * (1. / capacity))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                          name=None, cancel_op=None):
    """A queue of strings (file names, typically) for an input pipeline."""
    from ..check_ops import Assert
    from ..ops.array_ops import identity, size
    from ..ops.math_ops import greater

    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not string_tensor:
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as name:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes.string)
        with control_dependencies([Assert(greater(size(string_tensor), 0), [not_null_err])]):
            string_tensor = identity(string_tensor)
        return input_producer(input_tensor=string_tensor, shuffle=shuffle, seed=seed, num_epochs=num_epochs,
                              capacity=capacity, shared_name=shared_name, name=name,
                              summary_name="fraction_of_%d_full" % capacity, cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None):
    """A queue of the integers 0 .. limit - 1."""
    from ..ops.selection_ops import range as range_

    with name_scope(name, "input_producer", [limit]) as name:
        range_tensor = range_(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              "fraction_of_%d_full" % capacity, name)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                         name=None):
    """One slice (along dim 0) of each tensor of ``tensor_list`` per dequeue."""
    from ..ops.array_ops import shape
    from ..ops.selection_ops import gather

    with name_scope(name, "input_producer", tensor_list):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                                     capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensor_list]


# -- batching ----------------------------------------------------------------------------------
def _as_tensor_list(tensors):
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _as_tensor_list_list(tensors_list):
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        expected_keys = set(tensors_list[0].keys())
        for tensors in tensors_list[1:]:
            if set(tensors.keys()) != expected_keys:
                raise ValueError("All dictionaries in tensors_list must have the same keys")
        return [_as_tensor_list(tensors) for tensors in tensors_list]
    return [list(tensors) if isinstance(tensors, (list, tuple)) else [tensors] for tensors in tensors_list]


def _as_original_type(original_tensors, tensor_list):
    if isinstance(original_tensors, dict):
        if len(original_tensors) == 1:
            tensor_list = [tensor_list]  # (one component: the dequeue gave a tensor, not a list)
        return {k: tensor_list[i] for i, k in enumerate(sorted(original_tensors, key=str))}
    return tensor_list


def _validate(tensor_list):
    tensor_list = [convert_to_tensor(t) for t in tensor_list]
    if not tensor_list:
        raise ValueError("Expecting at least one tensor")
    return tensor_list


def _validate_join(tensor_list_list):
    tensor_list_list = [[convert_to_tensor(t) for t in tl] for tl in tensor_list_list]
    if not tensor_list_list:
        raise ValueError("Expecting at least one input")
    return tensor_list_list


def _keep_input(keep_input, enqueue_many) -> bool:
    """``keep_input`` as a Python bool: tfc takes a constant one (a predicate known only when
    the step runs would put the enqueue in a tf.cond, which host ops cannot be in yet)."""
    from ..tensor_util import constant_value

    if isinstance(keep_input, bool):
        return keep_input
    value = constant_value(convert_to_tensor(keep_input, dtype=dtypes.bool))
    if value is None or np.ndim(value) != 0:
        raise NotImplementedError("tfc's queue-based batching takes a constant scalar `keep_input` only (the "
                                  "enqueue would be in a tf.cond otherwise)")
    return bool(value)


def _merge_shapes(shape_list, enqueue_many):
    shape_list = [TensorShape(s) for s in shape_list]
    if enqueue_many:
        shape_list = [s.with_rank_at_least(1)[1:] for s in shape_list]
    merged = shape_list.pop()
    for s in shape_list:
        merged = merged.merge_with(s)
    return merged.as_list()


def _shapes(tensor_list_list, shapes, enqueue_many):
    if shapes is None:
        len0 = len(tensor_list_list[0])
        for tl in tensor_list_list:
            for i in range(len0):
                if tl[i].shape.ndims is None:
                    raise ValueError("Cannot infer Tensor's rank: %s" % tl[i])
        shapes = [_merge_shapes([tl[i].shape.as_list() for tl in tensor_list_list], enqueue_many)
                  for i in range(len0)]
    return shapes


def _dtypes(tensor_list_list):
    all_types = [[t.dtype.base_dtype for t in tl] for tl in tensor_list_list]
    types = all_types[0]
    for other_types in all_types[1:]:
        if other_types != types:
            raise TypeError("Expected types to be consistent: %s vs. %s." %
                            (", ".join(x.name for x in types), ", ".join(x.name for x in other_types)))
    return types


def _enqueue_ops(queue, tensor_list_list, threads, enqueue_many, keep_input):
    from ..ops.control_flow_ops import no_op

    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    ops = []
    for tensor_list in tensor_list_list:
        op = enqueue_fn(tensor_list) if keep_input else no_op()
        ops.extend([op] * threads)
    add_queue_runner(QueueRunner(queue, ops))


def _which_queue(dynamic_pad):
    from ..data_flow_ops import FIFOQueue, PaddingFIFOQueue

    return PaddingFIFOQueue if dynamic_pad else FIFOQueue


def _dequeue(queue, batch_size, allow_smaller_final_batch, name):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _batch(tensors, batch_size, keep_input, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
           dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    from ..ops.math_ops import cast

    tensor_list = _as_tensor_list(tensors)
    with name_scope(name, "batch", list(tensor_list) + [keep_input]) as name:
        tensor_list = _validate(tensor_list)
        keep = _keep_input(keep_input, enqueue_many)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)
        _enqueue_ops(queue, [tensor_list], num_threads, enqueue_many, keep)
        _summary_scalar("fraction_of_%d_full" % capacity, cast(queue.size(), dtypes.float32) * (1. / capacity))
        return _as_original_type(tensors, _dequeue(queue, batch_size, allow_smaller_final_batch, name))


def _batch_join(tensors_list, batch_size, keep_input, capacity=32, enqueue_many=False, shapes=None,
                dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    from ..ops.math_ops import cast

    tensor_list_list = _as_tensor_list_list(tensors_list)
    with name_scope(name, "batch_join", [t for tl in tensor_list_list for t in tl] + [keep_input]) as name:
        tensor_list_list = _validate_join(tensor_list_list)
        keep = _keep_input(keep_input, enqueue_many)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)
        _enqueue_ops(queue, tensor_list_list, 1, enqueue_many, keep)
        _summary_scalar("fraction_of_%d_full" % capacity, cast(queue.size(), dtypes.float32) * (1. / capacity))
        return _as_original_type(tensors_list[0], _dequeue(queue, batch_size, allow_smaller_final_batch, name))


def _shuffle_batch(tensors_list, join, batch_size, capacity, min_after_dequeue, keep_input, num_threads=1, seed=None,
                   enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    from ..data_flow_ops import RandomShuffleQueue
    from ..ops.math_ops import cast, maximum

    tensor_list_list = _as_tensor_list_list(tensors_list) if join else [_as_tensor_list(tensors_list)]
    flat = [t for tl in tensor_list_list for t in tl]
    with name_scope(name, "shuffle_batch_join" if join else "shuffle_batch", flat + [keep_input]) as name:
        if capacity <= min_after_dequeue:
            raise ValueError("capacity %d must be bigger than min_after_dequeue %d." % (capacity, min_after_dequeue))
        tensor_list_list = _validate_join(tensor_list_list) if join else [_validate(tensor_list_list[0])]
        keep = _keep_input(keep_input, enqueue_many)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed, dtypes=types,
                                   shapes=shapes, shared_name=shared_name)
        _enqueue_ops(queue, tensor_list_list, 1 if join else num_threads, enqueue_many, keep)
        full = cast(maximum(0, queue.size() - min_after_dequeue), dtypes.float32) * (1. / (capacity - min_after_dequeue))
        _summary_scalar("fraction_over_%d_of_%d_full" % (min_after_dequeue, capacity - min_after_dequeue), full)
        original = tensors_list[0] if join else tensors_list
        return _as_original_type(original, _dequeue(queue, batch_size, allow_smaller_final_batch, name))


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
          allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of ``batch_size`` of ``tensors`` (one element per enqueue, or their slices
    with ``enqueue_many``), through a queue filled by ``num_threads`` QueueRunner threads."""
    return _batch(tensors, batch_size, True, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
                dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    return _batch(tensors, batch_size, keep_input, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
               allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches from several lists of tensors, one QueueRunner thread each."""
    return _batch_join(tensors_list, batch_size, True, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False, shapes=None,
                     dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    return _batch_join(tensors_list, batch_size, keep_input, capacity, enqueue_many, shapes, dynamic_pad,
                       allow_smaller_final_batch, shared_name, name)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None, enqueue_many=False,
                  shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of ``tensors`` in a random order (a RandomShuffleQueue keeping
    ``min_after_dequeue`` elements to mix)."""
    return _shuffle_batch(tensors, False, batch_size, capacity, min_after_dequeue, True, num_threads, seed,
                          enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input, num_threads=1, seed=None,
                        enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    return _shuffle_batch(tensors, False, batch_size, capacity, min_after_dequeue, keep_input, num_threads, seed,
                          enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None, enqueue_many=False,
                       shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    return _shuffle_batch(tensors_list, True, batch_size, capacity, min_after_dequeue, True, 1, seed, enqueue_many,
                          shapes, allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input, seed=None,
                             enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None,
                             name=None):
    return _shuffle_batch(tensors_list, True, batch_size, capacity, min_after_dequeue, keep_input, 1, seed,
                          enqueue_many, shapes, allow_smaller_final_batch, shared_name, name)


EXPORTS = {"batch": batch, "maybe_batch": maybe_batch, "batch_join": batch_join, "maybe_batch_join": maybe_batch_join,
           "shuffle_batch": shuffle_batch, "maybe_shuffle_batch": maybe_shuffle_batch,
           "shuffle_batch_join": shuffle_batch_join, "maybe_shuffle_batch_join": maybe_shuffle_batch_join,
           "input_producer": input_producer, "string_input_producer": string_input_producer,
           "range_input_producer": range_input_producer, "slice_input_producer": slice_input_producer,
           "limit_epochs": limit_epochs}
