"""tf.nn.static_rnn and tf.nn.static_bidirectional_rnn (TF 1.15's tensorflow/python/ops/rnn.py):
the cell unrolled over a Python list of inputs, no loop ops.

``static_rnn`` opens ``variable_scope(scope or "rnn")`` (with a caching device, so the
variables' ``read`` ops are not colocated with them, as TF), builds the zero state there
(``rnn/BasicLSTMCellZeroState/...``), calls the cell once per step and marks the scope for
reuse after the first, so every step shares ``rnn/<cell>/kernel`` and the steps' ops are
``rnn/<cell>/MatMul``, ``MatMul_1``... With ``sequence_length`` each step is TF's
``_rnn_step``: a ``tf.cond`` on the longest length (past it: zeros and the state copied
through) and an inner cond on the shortest (past it: ``Select`` per batch row).
``static_bidirectional_rnn`` runs a forward rnn in ``bidirectional_rnn/fw`` and one over the
reversed inputs in ``bidirectional_rnn/bw`` (with ``sequence_length``: each row reversed up
to its length, a ReverseSequence of the stacked steps) and concatenates their outputs.
"""
from __future__ import annotations

from . import dtypes
from .convert import convert_to_tensor
from .graph import get_default_graph
from .ops import math_ops
from .rnn_cell import _concat, assert_like_rnncell, assert_same_structure, flatten, is_nested, pack_sequence_as
from .tensor_shape import TensorShape, dimension_at_index, dimension_value
from .variable_scope import variable_scope

array_ops = math_ops.array_ops


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return explicit_dtype
    if is_nested(state):
        inferred_dtypes = [element.dtype for element in flatten(state)]
        if not inferred_dtypes:
            raise ValueError(f"Unable to infer dtype from empty state: {state}")
        all_same = all(x == inferred_dtypes[0] for x in inferred_dtypes)
        if not all_same:
            raise ValueError(f"State has tensors of different inferred_dtypes. Unable to infer a single "
                             f"representative dtype. Dtypes: {inferred_dtypes}")
        return inferred_dtypes[0]
    return state.dtype


def _should_cache() -> bool:
    """Variables are read through a caching device except inside a while loop."""
    ctxt = get_default_graph()._get_control_flow_context()
    while ctxt is not None:
        if type(ctxt).__name__ == "WhileContext":
            return False
        ctxt = getattr(ctxt, "outer_context", None)
    return True


def _rnn_step(time, sequence_length, min_sequence_length, max_sequence_length, zero_output, state, call_cell,
              state_size, skip_conditionals=False):
    """One step of a dynamic-length rnn: the cell's outputs and state for the rows whose
    sequence is not over, zeros and the old state for the others (TF's graph: conds on the
    longest and shortest lengths, Select per row)."""
    from .control_flow import cond

    del state_size
    flat_state = flatten(state)
    flat_zero_output = flatten(zero_output)

    copy_cond = time >= sequence_length

    def _copy_one_through(output, new_output):
        if output.shape.ndims == 0:
            return new_output
        from .graph import colocate_with

        with colocate_with(new_output):
            return array_ops.where(copy_cond, output, new_output)

    def _copy_some_through(flat_new_output, flat_new_state):
        flat_new_output = [_copy_one_through(zero_output, new_output)
                           for zero_output, new_output in zip(flat_zero_output, flat_new_output)]
        flat_new_state = [_copy_one_through(state, new_state) for state, new_state in zip(flat_state, flat_new_state)]
        return flat_new_output + flat_new_state

    def _maybe_copy_some_through():
        new_output, new_state = call_cell()
        assert_same_structure(state, new_state)
        flat_new_state = flatten(new_state)
        flat_new_output = flatten(new_output)
        return cond(time < min_sequence_length, lambda: flat_new_output + flat_new_state,
                    lambda: _copy_some_through(flat_new_output, flat_new_state))

    if skip_conditionals:
        new_output, new_state = call_cell()
        assert_same_structure(state, new_state)
        final_output_and_state = _copy_some_through(flatten(new_output), flatten(new_state))
    else:
        def empty_update():
            return flat_zero_output + flat_state

        final_output_and_state = cond(time >= max_sequence_length, empty_update, _maybe_copy_some_through)

    if len(final_output_and_state) != len(flat_zero_output) + len(flat_state):
        raise ValueError("Internal error: state and output were not concatenated correctly.")
    final_output = final_output_and_state[:len(flat_zero_output)]
    final_state = final_output_and_state[len(flat_zero_output):]
    for output, flat_output in zip(final_output, flat_zero_output):
        output.set_shape(flat_output.get_shape())
    for substate, flat_substate in zip(final_state, flat_state):
        substate.set_shape(flat_substate.get_shape())
    final_output = pack_sequence_as(structure=zero_output, flat_sequence=final_output)
    final_state = pack_sequence_as(structure=state, flat_sequence=final_state)
    return final_output, final_state


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Creates a recurrent neural network specified by RNNCell ``cell``, unrolled over the
    list ``inputs`` (each [batch_size, input_size]); returns ``(outputs, state)``."""
    assert_like_rnncell("cell", cell)
    if not is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")

    outputs = []
    with variable_scope(scope or "rnn") as varscope:
        if _should_cache():
            if varscope.caching_device is None:
                varscope.set_caching_device(lambda op: op.device)

        first_input = inputs
        while is_nested(first_input):
            first_input = first_input[0]

        if first_input.get_shape().ndims != 1:
            input_shape = first_input.get_shape().with_rank_at_least(2)
            fixed_batch_size = input_shape.dims[0]
            flat_inputs = flatten(inputs)
            for flat_input in flat_inputs:
                input_shape = flat_input.get_shape().with_rank_at_least(2)
                batch_size, input_size = dimension_at_index(input_shape, 0), input_shape[1:]
                fixed_batch_size.assert_is_compatible_with(batch_size)
                for i, size in enumerate(input_size.dims):
                    if dimension_value(size) is None:
                        raise ValueError(f"Input size (dimension {i} of inputs) must be accessible via shape "
                                         "inference, but saw value None.")
        else:
            fixed_batch_size = first_input.get_shape().with_rank_at_least(1)[0]

        if dimension_value(fixed_batch_size):
            batch_size = dimension_value(fixed_batch_size)
        else:
            batch_size = array_ops.shape(first_input)[0]
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            if getattr(cell, "get_initial_state", None) is not None:
                state = cell.get_initial_state(inputs=None, batch_size=batch_size, dtype=dtype)
            else:
                state = cell.zero_state(batch_size, dtype)

        if sequence_length is not None:
            sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
            if sequence_length.get_shape().ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length batch_size")

            def _create_zero_output(output_size):
                size = _concat(batch_size, output_size)
                output = array_ops.zeros(size, _infer_state_dtype(dtype, state))
                shape = _concat(dimension_value(fixed_batch_size), output_size, static=True)
                output.set_shape(TensorShape(shape))
                return output

            output_size = cell.output_size
            flat_output_size = flatten(output_size)
            flat_zero_output = tuple(_create_zero_output(size) for size in flat_output_size)
            zero_output = pack_sequence_as(structure=output_size, flat_sequence=flat_zero_output)

            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            min_sequence_length = math_ops.reduce_min(sequence_length)
            max_sequence_length = math_ops.reduce_max(sequence_length)

        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_=input_, state=state):
                return cell(input_, state)

            if sequence_length is not None:
                (output, state) = _rnn_step(time=time, sequence_length=sequence_length,
                                            min_sequence_length=min_sequence_length,
                                            max_sequence_length=max_sequence_length, zero_output=zero_output,
                                            state=state, call_cell=call_cell, state_size=cell.state_size)
            else:
                (output, state) = call_cell()
            outputs.append(output)
        return (outputs, state)


def _reverse_seq(input_seq, lengths):
    """The list reversed; with ``lengths``, each row's first lengths[b] steps reversed: the
    steps stacked (time, batch, depth), a ReverseSequence on time, unstacked again."""
    from .ops import concat_ops

    if lengths is None:
        return list(reversed(input_seq))
    flat_input_seq = tuple(flatten(input_) for input_ in input_seq)
    flat_results = [[] for _ in range(len(input_seq))]
    for sequence in zip(*flat_input_seq):
        s_joined = concat_ops.stack(sequence)
        s_reversed = array_ops.reverse_sequence(s_joined, lengths, 0, 1)
        for r, flat_result in zip(concat_ops.unstack(s_reversed), flat_results):
            flat_result.append(r)
    return [pack_sequence_as(structure=input_, flat_sequence=flat_result)
            for input_, flat_result in zip(input_seq, flat_results)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None, initial_state_bw=None, dtype=None,
                             sequence_length=None, scope=None):
    """A bidirectional rnn: ``static_rnn(cell_fw)`` in ``fw/`` and ``static_rnn(cell_bw)`` over
    the reversed inputs in ``bw/``; returns ``(outputs, output_state_fw, output_state_bw)``
    with outputs the depth-concatenation of the two directions."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    if not is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, sequence_length,
                                                    scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length,
                                              scope=bw_scope)

    output_bw = _reverse_seq(tmp, sequence_length)
    flat_output_fw = flatten(output_fw)
    flat_output_bw = flatten(output_bw)
    flat_outputs = tuple(array_ops.concat([fw, bw], 1) for fw, bw in zip(flat_output_fw, flat_output_bw))
    outputs = pack_sequence_as(structure=output_fw, flat_sequence=flat_outputs)
    return (outputs, output_state_fw, output_state_bw)


NN_EXPORTS = ["static_rnn", "static_bidirectional_rnn"]
