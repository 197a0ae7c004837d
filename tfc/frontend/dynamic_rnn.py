"""tf.nn.dynamic_rnn and tf.nn.bidirectional_dynamic_rnn: an RNN cell run by one
``tf.while_loop`` over time, inputs read from and outputs written to TensorArrays, with
TensorFlow's graph (``rnn/transpose``, ``rnn/TensorArray``, ``rnn/while/...``,
``rnn/TensorArrayStack/TensorArrayGatherV3``, ``rnn/transpose_1``). Works with any cell
that has ``state_size``, ``output_size``, ``zero_state`` and ``__call__(inputs, state)``
(tf.nn.rnn_cell's). Compiled, the loop is one native loop (tfc/passes/lower_control.py).

With ``sequence_length`` (TF 1.15's graph): ``rnn/sequence_length`` (an Identity after a
cast to int32), ``rnn/CheckSeqLen`` behind an Assert that its shape is ``[batch_size]``,
the loop bounded by the longest length, and each step through ``rnn._rnn_step`` with
``skip_conditionals=True``: ``Select``s on ``time >= sequence_length`` give zeros as the
output and carry the state through for the rows whose sequence is over. The bidirectional
rnn then reverses each row up to its length with ReverseSequence (not the whole time axis).
"""
from __future__ import annotations

from . import dtypes
from .control_flow import flatten, pack_sequence_as, while_loop
from .convert import convert_to_tensor
from .graph import Tensor, control_dependencies, name_scope
from .tensor_array import TensorArray
from .tensor_shape import TensorShape


def _transpose_batch_time(x):
    """Swap the first two dims, keeping what is known of the static shape."""
    from .ops import array_ops, concat_ops, selection_ops

    static = x.shape
    if static.ndims is not None and static.ndims < 2:
        return x
    rank = array_ops.rank(x)
    perm = concat_ops.concat(([1, 0], selection_ops.range(2, rank)), axis=0)
    x_t = array_ops.transpose(x, perm)
    x_t.set_shape(TensorShape([static.dims[1].value, static.dims[0].value]).concatenate(static[2:]))
    return x_t


def _best_effort_input_batch_size(flat_input):
    from .ops import array_ops

    for input_ in flat_input:
        shape = input_.shape
        if shape.ndims is None:
            continue
        if shape.ndims < 2:
            raise ValueError(f"Input tensor should have rank >= 2. Received input={input_} of rank {shape.ndims}")
        batch_size = shape.dims[1].value
        if batch_size is not None:
            return batch_size
    return array_ops.shape(flat_input[0])[1]


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return explicit_dtype
    flat = flatten(state)
    if not flat:
        raise ValueError(f"Unable to infer dtype from argument state={state}.")
    if any(t.dtype != flat[0].dtype for t in flat):
        raise ValueError(f"Argument state={state} has tensors of different inferred dtypes. Unable to infer a single"
                         f" representative dtype. Dtypes received: {[t.dtype for t in flat]}")
    return flat[0].dtype


def _shape_of_size(size) -> TensorShape:
    if isinstance(size, Tensor):
        from .tensor_util import constant_value

        return TensorShape(constant_value(size))
    return TensorShape(size)


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None, parallel_iterations=None,
                swap_memory=False, time_major=False, scope=None):
    """(outputs, final_state) of ``cell`` over the time axis of ``inputs``."""
    from .ops import array_ops, math_ops
    from .variable_scope import variable_scope

    with variable_scope(scope or "rnn") as varscope:
        from .rnn import _should_cache

        if _should_cache() and varscope.caching_device is None:  # TF 1.15's dynamic_rnn
            varscope.set_caching_device(lambda op: op.device)
        flat_input = flatten(inputs)
        if not time_major:
            flat_input = [convert_to_tensor(t) for t in flat_input]
            flat_input = tuple(_transpose_batch_time(t) for t in flat_input)
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError(f"sequence_length must be a vector of length batch_size, but saw shape: "
                                 f"{sequence_length.shape}")
            sequence_length = array_ops.identity(sequence_length, name="sequence_length")  # to find it
        batch_size = _best_effort_input_batch_size(flat_input)
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If no initial_state is provided, argument `dtype` must be specified")
            state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            with control_dependencies([_assert_has_shape(sequence_length, [batch_size])]):
                sequence_length = array_ops.identity(sequence_length, name="CheckSeqLen")
        inputs = pack_sequence_as(inputs, list(flat_input))
        outputs, final_state = _dynamic_rnn_loop(cell, inputs, state, parallel_iterations, swap_memory, dtype,
                                                 sequence_length)
        if not time_major:
            outputs = pack_sequence_as(outputs, [_transpose_batch_time(t) for t in flatten(outputs)])
        return outputs, final_state


def _assert_has_shape(x, shape):
    """An Assert that ``x``'s run-time shape is ``shape`` (a list of ints or scalar tensors)."""
    from .check_ops import Assert
    from .ops import array_ops, concat_ops, math_ops

    x_shape = array_ops.shape(x)
    packed_shape = concat_ops.stack(shape)
    return Assert(math_ops.reduce_all(math_ops.equal(x_shape, packed_shape)),
                  [f"Expected shape for Tensor {x.name} is ", packed_shape, " but saw shape: ", x_shape])


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, swap_memory, dtype, sequence_length=None):
    from .ops import array_ops, math_ops

    state = initial_state
    flat_input = flatten(inputs)
    flat_output_size = flatten(cell.output_size)
    input_shape = array_ops.shape(flat_input[0])
    time_steps = input_shape[0]
    batch_size = _best_effort_input_batch_size(flat_input)
    inputs_got_shape = tuple(t.shape.with_rank_at_least(3) for t in flat_input)
    const_time_steps, const_batch_size = inputs_got_shape[0].as_list()[:2]
    for i, shape in enumerate(inputs_got_shape):
        if not shape[2:].is_fully_defined():
            raise ValueError(f"Input size (depth of inputs) must be accessible via shape inference, but saw value"
                             f" None for input={flat_input[i]}.")
    from .rnn_cell import _concat

    state_dtype = _infer_state_dtype(dtype, state)
    # TF makes the zero output (used with sequence_length) in any case.
    flat_zero_output = tuple(array_ops.zeros(_concat(batch_size, size), state_dtype) for size in flat_output_size)
    zero_output = pack_sequence_as(cell.output_size, list(flat_zero_output))
    if sequence_length is not None:
        min_sequence_length = math_ops.reduce_min(sequence_length)
        max_sequence_length = math_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    from .ops.constant_op import constant

    time = constant(0, dtype=dtypes.int32, name="time")
    with name_scope("dynamic_rnn") as scope:
        base_name = scope

    def create_ta(name, element_shape, dtype_):
        return TensorArray(dtype=dtype_, size=time_steps, element_shape=element_shape,
                           tensor_array_name=base_name + name)

    output_ta = tuple(create_ta(f"output_{i}", TensorShape([const_batch_size]).concatenate(_shape_of_size(size)),
                                state_dtype) for i, size in enumerate(flat_output_size))
    input_ta = tuple(create_ta(f"input_{i}", t.shape[1:], t.dtype) for i, t in enumerate(flat_input))
    input_ta = tuple(ta.unstack(t) for ta, t in zip(input_ta, flat_input))

    def time_step(time, output_ta_t, state):
        input_t = tuple(ta.read(time) for ta in input_ta)
        for input_, shape in zip(input_t, inputs_got_shape):
            input_.set_shape(shape[1:])
        input_t = pack_sequence_as(inputs, list(input_t))
        if sequence_length is not None:
            from .rnn import _rnn_step

            output, new_state = _rnn_step(time, sequence_length, min_sequence_length, max_sequence_length,
                                          zero_output, state, lambda: cell(input_t, state), cell.state_size,
                                          skip_conditionals=True)
        else:
            output, new_state = cell(input_t, state)
        output = flatten(output)
        output_ta_t = tuple(ta.write(time, out) for ta, out in zip(output_ta_t, output))
        return (time + 1, output_ta_t, new_state)

    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, output_final_ta, final_state = while_loop(lambda time, *_: time < loop_bound, time_step,
                                                 (time, output_ta, state), parallel_iterations=parallel_iterations,
                                                 maximum_iterations=time_steps, swap_memory=swap_memory)
    final_outputs = tuple(ta.stack() for ta in output_final_ta)
    for output, size in zip(final_outputs, flat_output_size):
        output.set_shape(TensorShape(_concat([const_time_steps, const_batch_size], size, static=True)))
    return pack_sequence_as(cell.output_size, list(final_outputs)), final_state


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None, initial_state_fw=None,
                              initial_state_bw=None, dtype=None, parallel_iterations=None, swap_memory=False,
                              time_major=False, scope=None):
    """((output_fw, output_bw), (state_fw, state_bw)): ``cell_fw`` over time, ``cell_bw``
    over reversed time (its outputs reversed back), under ``bidirectional_rnn/fw`` and
    ``/bw``."""
    from .ops import array_ops
    from .variable_scope import variable_scope

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = dynamic_rnn(cell_fw, inputs, sequence_length=sequence_length,
                                                     initial_state=initial_state_fw, dtype=dtype,
                                                     parallel_iterations=parallel_iterations,
                                                     swap_memory=swap_memory, time_major=time_major,
                                                     scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)

        def reverse(value):
            if sequence_length is not None:
                return array_ops.reverse_sequence(value, seq_lengths=sequence_length, seq_axis=time_axis,
                                                  batch_axis=batch_axis)
            return array_ops.reverse(value, axis=[time_axis])

        with variable_scope("bw") as bw_scope:
            inputs_reverse = pack_sequence_as(inputs, [reverse(t) for t in flatten(inputs)])
            tmp, output_state_bw = dynamic_rnn(cell_bw, inputs_reverse, sequence_length=sequence_length,
                                               initial_state=initial_state_bw, dtype=dtype,
                                               parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                                               time_major=time_major, scope=bw_scope)
    output_bw = pack_sequence_as(tmp, [reverse(t) for t in flatten(tmp)])
    return (output_fw, output_bw), (output_state_fw, output_state_bw)


NN_EXPORTS = ["dynamic_rnn", "bidirectional_dynamic_rnn"]
