"""tf.nn.rnn_cell (TF 1.15): RNNCell, BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell,
MultiRNNCell, DropoutWrapper, ResidualWrapper, DeviceWrapper and LSTMStateTuple.

TF 1.15's cells (tensorflow/python/ops/rnn_cell_impl.py and rnn_cell_wrapper_impl.py) are
legacy ``tf.layers`` layers; here they subclass tfc's ``layers.Layer``, which manages
variables through ``variable_scope``/``get_variable`` the same way, so a TF1 user sees the
same graph:

- Variables. A ``LayerRNNCell`` (BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell) creates
  ``kernel`` and ``bias`` with ``add_variable`` in ``build`` on its first call, in the
  variable scope ``variable_scope(None, default_name=<snake_case class name>)`` opened
  under the current one: ``basic_lstm_cell/kernel:0`` when called directly,
  ``rnn/basic_lstm_cell/kernel:0`` from ``static_rnn``, ``basic_lstm_cell_1/...`` for a
  second unnamed cell; ``name=`` or ``scope=`` names it. Later calls reuse the variables
  and run in the name scope captured on the first call (``basic_lstm_cell/MatMul_1``).
- Other cells (MultiRNNCell, a user's RNNCell subclass) are called through
  ``RNNCell.__call__``: the enclosing variable scope is re-entered with a custom getter
  that records the variables the call creates (``trainable_weights``); MultiRNNCell
  opens ``cell_<i>`` scopes (``rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel``).
- Zero states: ``<ClassName>ZeroState/zeros`` built from ``_concat`` exactly as TF (a Const
  prefix and suffix, ConcatV2, Fill, and the two static Consts TF leaves behind).
- Wrappers never open a layer scope: DropoutWrapper's dropouts are ``dropout/...`` ops in
  the caller's name scope, seeded from ``seed`` and a salt as TF (``_gen_seed``); with
  every keep_prob 1.0 it adds only its three ``DropoutWrapperInit/Const`` ops, as TF.

Differences from TF: ``num_unit_shards`` / ``num_proj_shards`` (partitioned kernels) are
refused; a custom getter given by the user on an enclosing scope is replaced, not chained,
while an ``RNNCell.__call__`` runs (only the weight bookkeeping differs).
"""
from __future__ import annotations

import collections
import hashlib

from . import dtypes
from .clip_ops import clip_by_value
from .convert import convert_to_tensor
from .graph import Tensor, get_default_graph, name_scope
from .layers import InputSpec, Layer, _get_activation, _get_initializer
from .ops import math_ops, nn_ops
from .ops.constant_op import constant
from .tensor_shape import TensorShape
from .tensor_util import constant_value
from .variable_scope import get_variable_scope, variable_scope

array_ops = math_ops.array_ops

_BIAS_VARIABLE_NAME = "bias"
_WEIGHTS_VARIABLE_NAME = "kernel"

ASSERT_LIKE_RNNCELL_ERROR_REGEXP = "is not an RNNCell"


# =====================================================================================
# nest (the parts of tensorflow/python/util/nest.py the cells use)
# =====================================================================================
def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x) -> bool:
    """Lists, tuples (namedtuples included) and dicts are structures; anything else a leaf."""
    return isinstance(x, (list, tuple, dict))


def _yield_value(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def _sequence_like(instance, args):
    if isinstance(instance, dict):
        return type(instance)((k, v) for k, v in zip(sorted(instance), args))
    if _is_namedtuple(instance):
        return type(instance)(*args)
    return type(instance)(args)


def flatten(structure) -> list:
    if not is_nested(structure):
        return [structure]
    out = []
    for item in _yield_value(structure):
        out.extend(flatten(item))
    return out


def pack_sequence_as(structure, flat_sequence):
    flat_sequence = list(flat_sequence)

    def pack(s, index):
        if not is_nested(s):
            return flat_sequence[index], index + 1
        items = []
        for sub in _yield_value(s):
            item, index = pack(sub, index)
            items.append(item)
        return _sequence_like(s, items), index

    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat_sequence)} > 1")
        return flat_sequence[0]
    packed, used = pack(structure, 0)
    if used != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {used} elements, but flat_sequence had "
                         f"{len(flat_sequence)} elements.")
    return packed


def map_structure(fn, *structures):
    flats = [flatten(s) for s in structures]
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    return pack_sequence_as(structures[0], [fn(*args) for args in zip(*flats)])


def assert_same_structure(nest1, nest2) -> None:
    if is_nested(nest1) != is_nested(nest2):
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: {nest1}"
                         f"\n\nSecond structure: {nest2}")
    if not is_nested(nest1):
        return
    if len(_yield_value(nest1)) != len(_yield_value(nest2)):
        raise ValueError(f"The two structures don't have the same sequence length. Input structure has length "
                         f"{len(_yield_value(nest1))}, while shallow structure has length "
                         f"{len(_yield_value(nest2))}.")
    for a, b in zip(_yield_value(nest1), _yield_value(nest2)):
        assert_same_structure(a, b)


def _map_structure_up_to(shallow, fn, *structures):
    """nest.map_structure_up_to: ``fn`` on the sub-structures at the leaves of ``shallow``."""
    if not is_nested(shallow):
        return fn(*structures)
    items = [_map_structure_up_to(s, fn, *subs)
             for s, *subs in zip(_yield_value(shallow), *[_yield_value(x) for x in structures])]
    return _sequence_like(shallow, items)


def _get_traverse_shallow_structure(traverse_fn, structure):
    """nest.get_traverse_shallow_structure."""
    to_traverse = traverse_fn(structure)
    if not is_nested(structure):
        if not isinstance(to_traverse, bool):
            raise TypeError(f"traverse_fn returned structure: {to_traverse} for non-structure: {structure}")
        return to_traverse
    level_traverse = []
    if isinstance(to_traverse, bool):
        if not to_traverse:
            return False
        for branch in _yield_value(structure):
            level_traverse.append(_get_traverse_shallow_structure(traverse_fn, branch))
    elif not is_nested(to_traverse):
        raise TypeError(f"traverse_fn returned a non-bool scalar: {to_traverse} for input: {structure}")
    else:
        for t, branch in zip(_yield_value(to_traverse), _yield_value(structure)):
            if not isinstance(t, bool):
                raise TypeError(f"traverse_fn didn't return a depth=1 structure of bools.  saw: {to_traverse}  "
                                f"for structure: {structure}")
            level_traverse.append(_get_traverse_shallow_structure(traverse_fn, branch) if t else False)
    return _sequence_like(structure, level_traverse)


def _enumerated_map_structure_up_to(shallow_structure, map_fn, *args):
    ix = [0]

    def enumerated_fn(*inner_args):
        r = map_fn(ix[0], *inner_args)
        ix[0] += 1
        return r

    return _map_structure_up_to(shallow_structure, enumerated_fn, *args)


# =====================================================================================
# Helpers
# =====================================================================================
def _hasattr(obj, attr_name) -> bool:
    try:
        getattr(obj, attr_name)
    except AttributeError:
        return False
    return True


def assert_like_rnncell(cell_name, cell) -> None:
    """Raises a TypeError if ``cell`` is not like an RNNCell (TF's message)."""
    conditions = [_hasattr(cell, "output_size"), _hasattr(cell, "state_size"),
                  _hasattr(cell, "get_initial_state") or _hasattr(cell, "zero_state"), callable(cell)]
    errors = ["'output_size' property is missing", "'state_size' property is missing",
              "either 'zero_state' or 'get_initial_state' method is required", "is not callable"]
    if not all(conditions):
        errors = [error for error, cond in zip(errors, conditions) if not cond]
        raise TypeError("The argument {!r} ({}) is not an RNNCell: {}.".format(cell_name, cell, ", ".join(errors)))


def _concat(prefix, suffix, static=False):
    """rnn_cell_impl._concat: ``prefix`` and ``suffix`` (int, TensorShape or Tensor) as one
    shape: a Tensor (ConcatV2 of two int32 vectors) or, with ``static``, a list."""
    if isinstance(prefix, Tensor):
        p = prefix
        p_static = constant_value(prefix)
        if p.shape.ndims == 0:
            p = array_ops.expand_dims(p, 0)
        elif p.shape.ndims != 1:
            raise ValueError(f"prefix tensor must be either a scalar or vector, but saw tensor: {p}")
    else:
        p = TensorShape(prefix)
        p_static = p.as_list() if p.ndims is not None else None
        p = constant(p.as_list(), dtype=dtypes.int32) if p.is_fully_defined() else None
    if isinstance(suffix, Tensor):
        s = suffix
        s_static = constant_value(suffix)
        if s.shape.ndims == 0:
            s = array_ops.expand_dims(s, 0)
        elif s.shape.ndims != 1:
            raise ValueError(f"suffix tensor must be either a scalar or vector, but saw tensor: {s}")
    else:
        s = TensorShape(suffix)
        s_static = s.as_list() if s.ndims is not None else None
        s = constant(s.as_list(), dtype=dtypes.int32) if s.is_fully_defined() else None
    if static:
        if p_static is not None and not isinstance(p_static, list):
            p_static = list(p_static.reshape(-1)) if hasattr(p_static, "reshape") else [p_static]
        if s_static is not None and not isinstance(s_static, list):
            s_static = list(s_static.reshape(-1)) if hasattr(s_static, "reshape") else [s_static]
        shape = TensorShape(p_static).concatenate(s_static)
        return shape.as_list() if shape.ndims is not None else None
    if p is None or s is None:
        raise ValueError(f"Provided a prefix or suffix of None: {prefix} and {suffix}")
    return array_ops.concat((p, s), 0)


def _zero_state_tensors(state_size, batch_size, dtype):
    """Zeros of shape [batch_size] + s for every s in ``state_size`` (same structure)."""
    def get_state_shape(s):
        c = _concat(batch_size, s)
        size = array_ops.zeros(c, dtype=dtype)
        c_static = _concat(batch_size, s, static=True)
        size.set_shape(c_static)
        return size

    return map_structure(get_state_shape, state_size)


def _check_supported_dtypes(dtype) -> None:
    if dtype is None:
        return
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_complex):
        raise ValueError(f"RNN cell only supports floating point inputs, but saw dtype: {dtype}")


def _check_rnn_cell_input_dtypes(inputs) -> None:
    for t in flatten(inputs):
        _check_supported_dtypes(t.dtype)


def _shape_tuple(inputs_shape) -> tuple:
    """A build() input shape as the tuple TF's shape_type_conversion gives ``build``."""
    return tuple(TensorShape(inputs_shape).as_list())


def _last_dim(inputs_shape):
    """The static size of the last axis of a build() input shape (TensorShape or list)."""
    dims = TensorShape(inputs_shape).as_list()
    return dims[-1]


def _activation_or_tanh(activation):
    return _get_activation(activation) if activation else math_ops.tanh


def _initializer_or_none(identifier):
    return _get_initializer(identifier)


# =====================================================================================
# RNNCell
# =====================================================================================
class RNNCell(Layer):
    """Abstract object representing an RNN cell: ``(output, next_state) = call(input, state)``
    with ``state_size``, ``output_size`` and ``zero_state``."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
        self._is_tf_rnn_cell = True

    def __call__(self, inputs, state, scope=None):
        """Run the cell on ``inputs`` from ``state`` (in ``scope``, or the variable scope that
        was current at the first call, re-entered with the weight-recording getter)."""
        if scope is not None:
            with variable_scope(scope, custom_getter=self._rnn_get_variable) as scope:
                return Layer.__call__(self, inputs, state, scope=scope)
        captured = getattr(self, "rnncell_scope", None)
        if captured is None:
            captured = get_variable_scope()
            self.rnncell_scope = captured
        with variable_scope(captured, custom_getter=self._rnn_get_variable):
            return Layer.__call__(self, inputs, state)

    def _rnn_get_variable(self, getter, *args, **kwargs):
        from .variables import trainable_variables

        variable = getter(*args, **kwargs)
        trainable = any(variable is v for v in trainable_variables())
        if trainable and all(variable is not v for v in self._trainable_weights):
            self._trainable_weights.append(variable)
        elif not trainable and all(variable is not v for v in self._non_trainable_weights):
            self._non_trainable_weights.append(variable)
        return variable

    @property
    def state_size(self):
        """size(s) of state(s) used by this cell: an int, a TensorShape or a tuple of them."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        """Integer or TensorShape: size of outputs produced by this cell."""
        raise NotImplementedError("Abstract method")

    def build(self, _):
        pass

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = convert_to_tensor(inputs, name="inputs")
            if batch_size is not None:
                static_batch_size = constant_value(batch_size) if isinstance(batch_size, Tensor) else batch_size
                if inputs.shape.dims[0].value != static_batch_size:
                    raise ValueError("batch size from input tensor is different from the input param. Input tensor "
                                     f"batch: {inputs.shape.dims[0].value}, batch_size: {batch_size}")
            if dtype is not None and inputs.dtype != dtype:
                raise ValueError("dtype from input tensor is different from the input param. Input tensor dtype: "
                                 f"{inputs.dtype}, dtype: {dtype}")
            batch_size = inputs.shape.dims[0].value or array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("batch_size and dtype cannot be None while constructing initial state: "
                             f"batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zero-filled state tensor(s) of shape [batch_size, s] for each s in state_size, in
        the name scope ``<ClassName>ZeroState``."""
        state_size = self.state_size
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return _zero_state_tensors(state_size, batch_size, dtype)


class LayerRNNCell(RNNCell):
    """An RNNCell that acts like a ``tf.layers`` layer: variables made in ``build``."""

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        return Layer.__call__(self, inputs, state, *args, scope=scope, **kwargs)

    def _input_depth(self, inputs_shape) -> int:
        """The inputs' last dim (TF's error when unknown), after checking the cell's dtype."""
        if _last_dim(inputs_shape) is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {_shape_tuple(inputs_shape)}")
        _check_supported_dtypes(self.dtype)
        return _last_dim(inputs_shape)


# =====================================================================================
# BasicRNNCell, GRUCell
# =====================================================================================
class BasicRNNCell(LayerRNNCell):
    """The most basic RNN cell: ``output = new_state = act(W [input, state] + b)``."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        self.input_spec = InputSpec(ndim=2)
        self._num_units = num_units
        self._activation = _activation_or_tanh(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        input_depth = self._input_depth(inputs_shape)
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[input_depth + self._num_units,
                                                                         self._num_units])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[self._num_units],
                                       initializer=_zeros(self.dtype))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        output = self._activation(gate_inputs)
        return output, output

    def get_config(self):
        config = {"num_units": self._num_units, "activation": self._activation, "reuse": self._reuse}
        return dict(list(super().get_config().items()) + list(config.items()))


def _zeros(dtype):
    from .initializers import zeros_initializer

    return zeros_initializer(dtype=dtypes.as_dtype(dtype or dtypes.float32))


def _constant_init(value, dtype):
    from .initializers import constant_initializer

    return constant_initializer(value, dtype=dtypes.as_dtype(dtype or dtypes.float32))


class GRUCell(LayerRNNCell):
    """Gated Recurrent Unit cell (Cho et al. 2014): ``gates/`` (reset r, update u) and
    ``candidate/`` kernels and biases; ``h' = u * h + (1 - u) * act(W_c [x, r * h] + b_c)``."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None, bias_initializer=None,
                 name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        self.input_spec = InputSpec(ndim=2)
        self._num_units = num_units
        self._activation = _activation_or_tanh(activation)
        self._kernel_initializer = _initializer_or_none(kernel_initializer)
        self._bias_initializer = _initializer_or_none(bias_initializer)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        input_depth = self._input_depth(inputs_shape)
        self._gate_kernel = self.add_variable(
            f"gates/{_WEIGHTS_VARIABLE_NAME}", shape=[input_depth + self._num_units, 2 * self._num_units],
            initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            f"gates/{_BIAS_VARIABLE_NAME}", shape=[2 * self._num_units],
            initializer=(self._bias_initializer if self._bias_initializer is not None
                         else _constant_init(1.0, self.dtype)))
        self._candidate_kernel = self.add_variable(
            f"candidate/{_WEIGHTS_VARIABLE_NAME}", shape=[input_depth + self._num_units, self._num_units],
            initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            f"candidate/{_BIAS_VARIABLE_NAME}", shape=[self._num_units],
            initializer=(self._bias_initializer if self._bias_initializer is not None else _zeros(self.dtype)))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._gate_kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._gate_bias)
        value = math_ops.sigmoid(gate_inputs)
        r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
        r_state = r * state
        candidate = math_ops.matmul(array_ops.concat([inputs, r_state], 1), self._candidate_kernel)
        candidate = nn_ops.bias_add(candidate, self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h

    def get_config(self):
        config = {"num_units": self._num_units, "kernel_initializer": self._kernel_initializer,
                  "bias_initializer": self._bias_initializer, "activation": self._activation,
                  "reuse": self._reuse}
        return dict(list(super().get_config().items()) + list(config.items()))


# =====================================================================================
# LSTM cells
# =====================================================================================
_LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class LSTMStateTuple(_LSTMStateTuple):
    """Tuple used by LSTM cells for ``state_size``, ``zero_state`` and the output state:
    ``(c, h)``, the cell state and the output."""
    __slots__ = ()

    @property
    def dtype(self):
        (c, h) = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


class BasicLSTMCell(LayerRNNCell):
    """Basic LSTM recurrent network cell (no peepholes, no clipping, no projection), with
    ``forget_bias`` added to the forget gate; gates i, j, f, o from one kernel."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        self.input_spec = InputSpec(ndim=2)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation_or_tanh(activation)

    @property
    def state_size(self):
        return (LSTMStateTuple(self._num_units, self._num_units) if self._state_is_tuple
                else 2 * self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        input_depth = self._input_depth(inputs_shape)
        h_depth = self._num_units
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[input_depth + h_depth, 4 * self._num_units])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * self._num_units],
                                       initializer=_zeros(self.dtype))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        sigmoid = math_ops.sigmoid
        one = constant(1, dtype=dtypes.int32)
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(value=state, num_or_size_splits=2, axis=one)
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, h], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        i, j, f, o = array_ops.split(value=gate_inputs, num_or_size_splits=4, axis=one)
        forget_bias_tensor = constant(self._forget_bias, dtype=f.dtype)
        add = math_ops.add
        multiply = math_ops.multiply
        new_c = add(multiply(c, sigmoid(add(f, forget_bias_tensor))), multiply(sigmoid(i), self._activation(j)))
        new_h = multiply(self._activation(new_c), sigmoid(o))
        if self._state_is_tuple:
            new_state = LSTMStateTuple(new_c, new_h)
        else:
            new_state = array_ops.concat([new_c, new_h], 1)
        return new_h, new_state

    def get_config(self):
        config = {"num_units": self._num_units, "forget_bias": self._forget_bias,
                  "state_is_tuple": self._state_is_tuple, "activation": self._activation, "reuse": self._reuse}
        return dict(list(super().get_config().items()) + list(config.items()))


class LSTMCell(LayerRNNCell):
    """Long short-term memory cell (Hochreiter & Schmidhuber 1997) with optional peepholes
    (``w_f_diag``, ``w_i_diag``, ``w_o_diag``), cell clipping and a projection layer
    (``projection/kernel``) with its clipping."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None, num_proj=None,
                 proj_clip=None, num_unit_shards=None, num_proj_shards=None, forget_bias=1.0, state_is_tuple=True,
                 activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self.dtype)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError("LSTMCell: num_unit_shards / num_proj_shards (partitioned kernels) are not "
                                      "supported by tfc")
        self.input_spec = InputSpec(ndim=2)
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = _initializer_or_none(initializer)
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation_or_tanh(activation)
        if num_proj:
            self._state_size = LSTMStateTuple(num_units, num_proj) if state_is_tuple else num_units + num_proj
            self._output_size = num_proj
        else:
            self._state_size = LSTMStateTuple(num_units, num_units) if state_is_tuple else 2 * num_units
            self._output_size = num_units

    @property
    def state_size(self):
        return self._state_size

    @property
    def output_size(self):
        return self._output_size

    def build(self, inputs_shape):
        input_depth = self._input_depth(inputs_shape)
        h_depth = self._num_units if self._num_proj is None else self._num_proj
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[input_depth + h_depth, 4 * self._num_units],
                                         initializer=self._initializer)
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * self._num_units],
                                       initializer=_zeros(self.dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", shape=[self._num_units], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", shape=[self._num_units], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", shape=[self._num_units], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(f"projection/{_WEIGHTS_VARIABLE_NAME}",
                                                  shape=[self._num_units, self._num_proj],
                                                  initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            (c_prev, m_prev) = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, self._num_units])
            m_prev = array_ops.slice(state, [0, self._num_units], [-1, num_proj])
        input_size = inputs.get_shape().with_rank(2).dims[1].value
        if input_size is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        lstm_matrix = math_ops.matmul(array_ops.concat([inputs, m_prev], 1), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = array_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else array_ops.concat([c, m], 1)
        return m, new_state

    def get_config(self):
        config = {"num_units": self._num_units, "use_peepholes": self._use_peepholes, "cell_clip": self._cell_clip,
                  "initializer": self._initializer, "num_proj": self._num_proj, "proj_clip": self._proj_clip,
                  "num_unit_shards": self._num_unit_shards, "num_proj_shards": self._num_proj_shards,
                  "forget_bias": self._forget_bias, "state_is_tuple": self._state_is_tuple,
                  "activation": self._activation, "reuse": self._reuse}
        return dict(list(super().get_config().items()) + list(config.items()))


# =====================================================================================
# Wrappers
# =====================================================================================
def _default_dropout_state_filter_visitor(substate):
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


class _RNNCellWrapperV1(RNNCell):
    """Base of the wrappers: holds ``cell``; calling the wrapper calls the cell directly
    (no scope of its own)."""

    def __init__(self, cell, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert_like_rnncell("cell", cell)
        self.cell = cell

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        raise NotImplementedError

    def __call__(self, inputs, state, scope=None):
        return self._call_wrapped_cell(inputs, state, cell_call_fn=self.cell.__call__, scope=scope)

    @property
    def wrapped_cell(self):
        return self.cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self.cell.zero_state(batch_size, dtype)

    def get_config(self):
        config = {"cell": {"class_name": self.cell.__class__.__name__, "config": self.cell.get_config()}}
        return dict(list(super().get_config().items()) + list(config.items()))


class DropoutWrapper(_RNNCellWrapperV1):
    """Dropout on the inputs, outputs and (by default the ``h`` part of) the state of
    ``cell``: ``nn.dropout`` with rate ``1 - keep_prob`` and a seed derived from ``seed``;
    keep probabilities of 1.0 add no dropout ops."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None, **kwargs):
        super().__init__(cell, dtype=dtype, **kwargs)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not supported by tfc")
        self._dropout_state_filter = dropout_state_filter_visitor or _default_dropout_state_filter_visitor
        with name_scope("DropoutWrapperInit"):
            for prob, attr in [(input_keep_prob, "input_keep_prob"), (state_keep_prob, "state_keep_prob"),
                               (output_keep_prob, "output_keep_prob")]:
                tensor_prob = convert_to_tensor(prob)
                const_prob = constant_value(tensor_prob)
                if const_prob is not None:
                    if const_prob < 0 or const_prob > 1:
                        raise ValueError("Parameter %s must be between 0 and 1: %d" % (attr, const_prob))
                    setattr(self, f"_{attr}", float(const_prob))
                else:
                    setattr(self, f"_{attr}", tensor_prob)
        self._variational_recurrent = variational_recurrent
        self._input_size = input_size
        self._seed = seed
        self._recurrent_input_noise = None
        self._recurrent_state_noise = None
        self._recurrent_output_noise = None

    def _gen_seed(self, salt_prefix, index):
        if self._seed is None:
            return None
        salt = "%s_%d" % (salt_prefix, index)
        string = (str(self._seed) + salt).encode("utf-8")
        return int(hashlib.md5(string).hexdigest()[:8], 16) & 0x7FFFFFFF

    def build(self, inputs_shape):
        self.cell.build(inputs_shape)
        self.built = True

    def _dropout(self, values, salt_prefix, recurrent_noise, keep_prob, shallow_filtered_substructure=None):
        if shallow_filtered_substructure is None:
            shallow_filtered_substructure = values

        def dropout(i, do_dropout, v):
            if not isinstance(do_dropout, bool) or do_dropout:
                return nn_ops.dropout_v2(v, rate=1. - keep_prob, seed=self._gen_seed(salt_prefix, i))
            return v

        return _enumerated_map_structure_up_to(shallow_filtered_substructure, dropout,
                                               shallow_filtered_substructure, values)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        def _should_dropout(p):
            return (not isinstance(p, float)) or p < 1

        if _should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._recurrent_input_noise, self._input_keep_prob)
        output, new_state = cell_call_fn(inputs, state, **kwargs)
        if _should_dropout(self._state_keep_prob):
            shallow_filtered_substructure = _get_traverse_shallow_structure(self._dropout_state_filter, new_state)
            new_state = self._dropout(new_state, "state", self._recurrent_state_noise, self._state_keep_prob,
                                      shallow_filtered_substructure)
        if _should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._recurrent_output_noise, self._output_keep_prob)
        return output, new_state

    def get_config(self):
        config = {"input_keep_prob": self._input_keep_prob, "output_keep_prob": self._output_keep_prob,
                  "state_keep_prob": self._state_keep_prob, "variational_recurrent": self._variational_recurrent,
                  "input_size": self._input_size, "seed": self._seed}
        return dict(list(super().get_config().items()) + list(config.items()))


class ResidualWrapper(_RNNCellWrapperV1):
    """Adds the cell's inputs to its outputs (``residual_fn(inputs, outputs)``, default
    ``inputs + outputs``)."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        outputs, new_state = cell_call_fn(inputs, state, **kwargs)

        def assert_shape_match(inp, out):
            inp.get_shape().assert_is_compatible_with(out.get_shape())

        def default_residual_fn(inputs, outputs):
            assert_same_structure(inputs, outputs)
            map_structure(assert_shape_match, inputs, outputs)
            return map_structure(lambda inp, out: inp + out, inputs, outputs)

        res_outputs = (self._residual_fn or default_residual_fn)(inputs, outputs)
        return res_outputs, new_state


class DeviceWrapper(_RNNCellWrapperV1):
    """Runs the cell (and builds its zero state) on ``device``."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            with get_default_graph().device(self._device):
                return self.cell.zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        with get_default_graph().device(self._device):
            return cell_call_fn(inputs, state, **kwargs)

    def get_config(self):
        config = {"device": self._device}
        return dict(list(super().get_config().items()) + list(config.items()))


# =====================================================================================
# MultiRNNCell
# =====================================================================================
class MultiRNNCell(RNNCell):
    """RNN cell composed sequentially of ``cells`` (each in a ``cell_<i>`` variable scope);
    the state is the tuple of their states."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = cells
        for cell_number, cell in enumerate(self._cells):  # object-based checkpoints: TF's "cell-<i>" dependencies
            if isinstance(cell, Layer):
                self._track_trackable(cell, name="cell-%d" % (cell_number,))
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple:
            if any(is_nested(c.state_size) for c in self._cells):
                raise ValueError("Some cells return tuples of states, but the flag state_is_tuple is not set.  State "
                                 f"sizes are: {[c.state_size for c in self._cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        weights = []
        for cell in self._cells:
            if isinstance(cell, Layer):
                weights += cell.trainable_weights
        return weights

    @property
    def non_trainable_weights(self):
        weights = []
        for cell in self._cells:
            if isinstance(cell, Layer):
                weights += cell.non_trainable_weights
        if not self.trainable:
            trainable_weights = []
            for cell in self._cells:
                if isinstance(cell, Layer):
                    trainable_weights += cell.trainable_weights
            return trainable_weights + weights
        return weights

    def call(self, inputs, state):
        cur_state_pos = 0
        cur_inp = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with variable_scope("cell_%d" % i):
                if self._state_is_tuple:
                    if not is_nested(state):
                        raise ValueError(f"Expected state to be a tuple of length {len(self.state_size)}, but "
                                         f"received: {state}")
                    cur_state = state[i]
                else:
                    cur_state = array_ops.slice(state, [0, cur_state_pos], [-1, cell.state_size])
                    cur_state_pos += cell.state_size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        new_states = tuple(new_states) if self._state_is_tuple else array_ops.concat(new_states, 1)
        return cur_inp, new_states


EXPORTS = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "DropoutWrapper",
           "ResidualWrapper", "DeviceWrapper", "LSTMStateTuple"]
