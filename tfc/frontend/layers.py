"""tf.layers (TF 1.15): the legacy Layer base and Dense, Conv1D, Conv2D, Conv3D,
Conv2DTranspose, Conv3DTranspose, SeparableConv1D, SeparableConv2D, MaxPooling1D/2D/3D,
AveragePooling1D/2D/3D, Flatten, Dropout, BatchNormalization with their function forms.

TF 1.15's tf.layers classes are Keras layers (tensorflow/python/keras/layers/*.py) mixed
with the legacy ``tensorflow/python/layers/base.py`` Layer, which manages variables
through ``tf.variable_scope``/``tf.get_variable``. This module merges the two into one
class and builds the same graph:

- Naming. ``layer.name`` comes from Keras' per-graph ``unique_object_name`` with
  ``zero_based=False`` (the first unnamed Dense is ``dense_1``, then ``dense_2``), while the
  variable scope is opened with ``variable_scope(None, default_name='dense')`` on first use,
  so variables are ``dense/kernel:0``, ``dense_1/kernel:0``... and ops live in the name scope
  opened beside it (``dense/MatMul``, ``dense/BiasAdd``, ``dense/Relu``). A layer called
  again re-enters its name scope (``dense/MatMul_1``) and reuses its variables.
- ``name=`` given: the scope is captured in the constructor (``_scope=name``), and
  ``reuse=True`` / ``tf.AUTO_REUSE`` shares variables between layers of the same name.
- ``add_weight`` -> ``get_variable`` in the layer's variable scope; default initializers as
  Keras' ``add_weight`` (glorot_uniform for floats, zeros for ints), the scope's
  initializer first when the layer gives none; regularizer losses under
  ``<scope>/<weight>/Regularizer/`` in REGULARIZATION_LOSSES.
- Updates (BatchNormalization's moving averages) are ``AssignSub`` ops named
  ``<scope>/AssignMovingAvg`` and ``<scope>/AssignMovingAvg_1`` added to UPDATE_OPS after the
  call, as the legacy ``Layer.__call__`` does.

Differences from TF, by necessity:
- tfc has no ``tf.cond``: ``training`` must be a Python bool (or a tensor whose value is
  known statically, which TF's ``smart_cond`` resolves the same way); a placeholder
  ``training`` raises NotImplementedError.
- tfc has no FusedBatchNorm op: where TF 1.15 picks the fused kernel (4-D inputs, one axis
  1 or 3, fused=None/True) the layer reports ``fused=True`` but builds the composite graph;
  values match TF's fused path, including its Bessel-corrected moving variance and its
  epsilon floor of 1.001e-5, but the op names are those of the non-fused path.
- Conv1D/Conv2D/Conv3D with ``dilation_rate`` > 1 use the conv op's ``dilations`` attr (same
  values) instead of TF's SpaceToBatchND/BatchToSpaceND wrapping.
"""
from __future__ import annotations

import collections
import inspect
import re

import numpy as np

from . import dtypes
from .convert import convert_to_tensor
from .graph import GraphKeys, Operation, Tensor, colocate_with, get_collection_ref
from .graph import get_default_graph, name_scope
from .initializers import INITIALIZERS_EXPORTS, GlorotUniform, Initializer, ones_initializer, zeros_initializer
from .op_helper import apply_op
from .ops import math_ops, nn_ops, state_ops
from .tensor_shape import TensorShape, dimension_value
from .tensor_util import constant_value
from .trackable import LayerTrackable, no_automatic_dependency_tracking
from .variable_scope import VariableScope, variable_scope
from .variables import Variable

array_ops = math_ops.array_ops  # the array-op family (array_ops, concat_ops, selection_ops...)

# =====================================================================================
# Helpers (Keras backend, conv_utils, generic_utils)
# =====================================================================================
_UID_KEY = "keras_object_name_uids"


def _graph_uid_map() -> collections.defaultdict:
    """Keras' PER_GRAPH_OBJECT_NAME_UIDS entry of the default graph."""
    scratch = get_default_graph()._scratch
    if _UID_KEY not in scratch:
        scratch[_UID_KEY] = collections.defaultdict(int)
    return scratch[_UID_KEY]


def unique_object_name(name, name_uid_map=None, avoid_names=None, namespace="", zero_based=False) -> str:
    """keras.backend.unique_object_name (per graph)."""
    if name_uid_map is None:
        name_uid_map = _graph_uid_map()
    if avoid_names is None:
        avoid_names = set()
    proposed_name = None
    while proposed_name is None or proposed_name in avoid_names:
        name_key = (namespace, name)
        if zero_based:
            number = name_uid_map[name_key]
            proposed_name = f"{name}_{number}" if number else name
            name_uid_map[name_key] += 1
        else:
            name_uid_map[name_key] += 1
            proposed_name = f"{name}_{name_uid_map[name_key]}"
    return proposed_name


def _to_snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    if insecure[0] != "_":
        return insecure
    return "private" + insecure


def _normalize_tuple(value, n: int, name: str) -> tuple:
    if isinstance(value, int):
        return (value,) * n
    try:
        value_tuple = tuple(value)
    except TypeError:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}") from None
    if len(value_tuple) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value}")
    for single_value in value_tuple:
        try:
            int(single_value)
        except (ValueError, TypeError):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: {value} including "
                             f"element {single_value} of type {type(single_value)}") from None
    return value_tuple


def _normalize_padding(value) -> str:
    if isinstance(value, (list, tuple)):
        return value
    padding = value.lower()
    if padding not in {"valid", "same", "causal"}:
        raise ValueError('The `padding` argument must be one of "valid", "same" (or "causal", only for `Conv1D). '
                         f"Received: {padding}")
    return padding


def _normalize_data_format(value) -> str:
    if value is None:
        value = "channels_last"
    data_format = value.lower()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError('The `data_format` argument must be one of "channels_first", "channels_last". Received: '
                         f"{value}")
    return data_format


def _convert_data_format(data_format: str, ndim: int) -> str:
    if data_format == "channels_last":
        return {3: "NWC", 4: "NHWC", 5: "NDHWC"}[ndim]
    if data_format == "channels_first":
        return {3: "NCW", 4: "NCHW", 5: "NCDHW"}[ndim]
    raise ValueError(f"Invalid data_format: {data_format}")


def _flatten(structure) -> list:
    if isinstance(structure, (list, tuple)):
        out = []
        for item in structure:
            out.extend(_flatten(item))
        return out
    if isinstance(structure, dict):
        out = []
        for key in sorted(structure):
            out.extend(_flatten(structure[key]))
        return out
    return [structure]


def _map_structure(fn, structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map_structure(fn, item) for item in structure)
    if isinstance(structure, dict):
        return {key: _map_structure(fn, value) for key, value in structure.items()}
    return fn(structure)


def _get_initializer(identifier):
    """keras.initializers.get: None, an initializer (instance or class), a callable or a name."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in INITIALIZERS_EXPORTS:
            raise ValueError(f"Unknown initializer: {identifier}")
        found = INITIALIZERS_EXPORTS[identifier]
        return found() if inspect.isclass(found) else found
    if inspect.isclass(identifier) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}")


def _get_callable(identifier, what: str):
    """keras regularizers/constraints .get: None or a callable."""
    if identifier is None or callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret {what} identifier: {identifier}")


def _activation_by_name(name: str):
    def softmax(x):
        """keras.activations.softmax: nn.softmax for rank 2, else exp / sum over the last axis."""
        ndim = x.shape.ndims
        if ndim == 2:
            return nn_ops.softmax(x)
        if ndim is not None and ndim > 2:
            e = math_ops.exp(x - math_ops.reduce_max(x, axis=-1, keepdims=True))
            s = math_ops.reduce_sum(e, axis=-1, keepdims=True)
            return e / s
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")

    table = {"relu": nn_ops.relu, "relu6": nn_ops.relu6, "elu": nn_ops.elu, "selu": nn_ops.selu,
             "softplus": nn_ops.softplus, "softsign": nn_ops.softsign, "sigmoid": math_ops.sigmoid,
             "tanh": math_ops.tanh, "softmax": softmax, "linear": None}
    if name not in table:
        raise ValueError(f"Unknown activation function:{name}")
    return table[name]


def _get_activation(identifier):
    """keras.activations.get: None and 'linear' mean no activation op."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        return _activation_by_name(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier}")


def _smart_constant_value(pred):
    """tf_utils.constant_value / smart_module.smart_constant_value: a Python bool, or None
    for a tensor whose value is not known statically."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, int) and pred in (0, 1):
        return bool(pred)
    if isinstance(pred, Variable):
        return None
    if isinstance(pred, Tensor):
        value = constant_value(pred)
        return None if value is None else bool(value)
    raise TypeError(f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Found instead: {type(pred)}")


def _static_training(training, layer):
    """The Python value of ``training`` (TF's ``smart_cond`` picks the branch statically for
    these); a tensor of unknown value needs ``tf.cond``, which tfc does not have."""
    if training is None:
        raise NotImplementedError(
            f"Layer {layer.name}: training=None makes TF 1.15 use keras.backend.learning_phase() (a "
            "placeholder_with_default) and tf.cond, which tfc does not have; pass training=True or training=False")
    value = _smart_constant_value(training)
    if value is None:
        raise NotImplementedError(
            f"Layer {layer.name}: a `training` tensor whose value is not known when the graph is built needs "
            f"tf.cond (control flow), which tfc does not have; pass a Python bool instead (got {training!r})")
    return value


def _add_elements_to_collection(elements, collection_list) -> None:
    for name in _flatten(collection_list):
        collection = get_collection_ref(name)
        present = {id(e) for e in collection}
        for element in _flatten(elements):
            if id(element) not in present:
                collection.append(element)
                present.add(id(element))


# =====================================================================================
# InputSpec
# =====================================================================================
class InputSpec:
    """Specifies the ndim, dtype and shape of every input to a layer (keras InputSpec)."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None):
        self.dtype = dtypes.as_dtype(dtype).name if dtype is not None else None
        if shape is not None:
            self.ndim = len(shape)
            self.shape = shape
        else:
            self.ndim = ndim
            self.shape = None
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = axes or {}

    def __repr__(self) -> str:
        spec = [f"dtype={self.dtype}" if self.dtype else "", f"shape={self.shape}" if self.shape else "",
                f"ndim={self.ndim}" if self.ndim else "", f"max_ndim={self.max_ndim}" if self.max_ndim else "",
                f"min_ndim={self.min_ndim}" if self.min_ndim else "", f"axes={self.axes}" if self.axes else ""]
        return "InputSpec(%s)" % ", ".join(x for x in spec if x)


def _assert_input_compatibility(input_spec, inputs, layer_name: str) -> None:
    """keras.engine.input_spec.assert_input_compatibility, with its messages."""
    if not input_spec:
        return
    inputs = _flatten(inputs)
    for x in inputs:
        if not hasattr(x, "shape"):
            raise TypeError(f"Inputs to a layer should be tensors. Got: {x}")
    input_spec = _flatten(input_spec)
    if len(inputs) != len(input_spec):
        raise ValueError(f"Layer {layer_name} expects {len(input_spec)} inputs, but it received {len(inputs)} input "
                         f"tensors. Inputs received: {inputs}")
    for index, (x, spec) in enumerate(zip(inputs, input_spec)):
        if spec is None:
            continue
        prefix = f"Input {index} of layer {layer_name} is incompatible with the layer: "
        shape = TensorShape(x.shape)
        ndim = shape.ndims
        if (spec.ndim is not None or spec.min_ndim is not None or spec.max_ndim is not None) and ndim is None:
            raise ValueError(f"Input {index} of layer {layer_name} is incompatible with the layer: its rank is "
                             "undefined, but the layer requires a defined rank.")
        if spec.ndim is not None and ndim != spec.ndim:
            raise ValueError(f"{prefix}expected ndim={spec.ndim}, found ndim={ndim}. Full shape received: "
                             f"{shape.as_list()}")
        if spec.max_ndim is not None and ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{prefix}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{prefix}: expected min_ndim={spec.min_ndim}, found ndim={ndim}. Full shape received: "
                             f"{shape.as_list()}")
        if spec.dtype is not None and x.dtype.base_dtype.name != spec.dtype:
            raise ValueError(f"{prefix}expected dtype={spec.dtype}, found dtype={x.dtype}")
        if spec.axes and ndim is not None:
            dims = shape.as_list()
            for axis, value in spec.axes.items():
                if hasattr(value, "value"):
                    value = value.value
                if value is not None and dims[int(axis)] not in {value, None}:
                    raise ValueError(f"Input {index} of layer {layer_name} is incompatible with the layer: expected "
                                     f"axis {axis} of input shape to have value {value} but received input with "
                                     f"shape {dims}")
        if spec.shape is not None and ndim is not None:
            dims = shape.as_list()
            for spec_dim, dim in zip(spec.shape, dims):
                if spec_dim is not None and dim is not None and spec_dim != dim:
                    raise ValueError(f"Input {index} is incompatible with layer {layer_name}: expected shape="
                                     f"{spec.shape}, found shape={dims}")


# =====================================================================================
# Layer
# =====================================================================================
_ALLOWED_KWARGS = {"input_shape", "batch_input_shape", "batch_size", "weights", "activity_regularizer",
                   "autocast", "dynamic", "input_dim"}


class Layer(LayerTrackable):  # LayerTrackable: object-based checkpoints (tfc/frontend/trackable.py)
    """tf.layers.Layer: the legacy (variable-scope managed) Keras layer base.

    Arguments: trainable, name, dtype (None: the dtype of the first input). Subclasses
    implement ``build(input_shape)`` (creating weights with ``add_weight``) and
    ``call(inputs, ...)``; ``layer(inputs)`` / ``layer.apply(inputs)`` build on first use and
    run ``call`` in the layer's name scope.
    """

    @no_automatic_dependency_tracking
    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        activity_regularizer = kwargs.pop("activity_regularizer", None)
        for kwarg in kwargs:
            if kwarg not in _ALLOWED_KWARGS:
                raise TypeError("Keyword argument not understood:", kwarg)
        self._use_resource_variables = False
        self._trainable = trainable
        self.stateful = False
        self.built = False
        self.supports_masking = False
        self.input_spec = None
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._updates: list = []
        self._losses: list = []
        self._activity_regularizer = activity_regularizer
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype.name
        self._init_set_name(name)
        self._call_fn_args = list(inspect.signature(self.call).parameters)
        self._call_has_scope_arg = "scope" in self._call_fn_args
        self._expects_training_arg = "training" in self._call_fn_args
        if scope:
            with variable_scope(scope) as captured_scope:
                self._scope = captured_scope
        else:
            self._scope = None
        self._current_scope = None

    # -- naming ---------------------------------------------------------------------------
    def _init_set_name(self, name) -> None:
        if isinstance(name, VariableScope):
            base_name = name.name
            self._name, _ = self._make_unique_name()
        else:
            base_name = name
            self._name = name
        if not name:
            self._name, base_name = self._make_unique_name()
        self._base_name = base_name

    def _make_unique_name(self, name_uid_map=None, avoid_names=None, namespace="", zero_based=False):
        base_name = _to_snake_case(type(self).__name__)
        name = unique_object_name(base_name, name_uid_map=name_uid_map, avoid_names=avoid_names,
                                  namespace=namespace, zero_based=zero_based)
        return name, base_name

    @property
    def name(self) -> str:
        return self._name

    @property
    def scope_name(self) -> str:
        if not self._scope:
            raise ValueError(f'No name available for layer scope because the layer "{self._name}" has not been used '
                             "yet. The scope name  is determined the first time the layer instance is called. You "
                             "must therefore call the layer before querying `scope_name`.")
        return self._scope.name

    @property
    def graph(self):
        """Deprecated in TF 1.15 (tf.layers layers no longer track their graph): None."""
        return None

    def _name_scope(self) -> str:
        return self._current_scope.original_name_scope

    def _set_scope(self, scope=None) -> None:
        if self._scope is None:
            if self._reuse:
                with variable_scope(scope if scope is not None else self._base_name) as captured_scope:
                    self._scope = captured_scope
            else:
                with variable_scope(scope, default_name=self._base_name) as captured_scope:
                    self._scope = captured_scope

    # -- properties -----------------------------------------------------------------------
    @property
    def dtype(self):
        """The dtype name of the layer's weights ('float32'), None until the first call
        when none was given."""
        return self._dtype

    @property
    def _compute_dtype(self):
        return self._dtype

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        self._trainable = value

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    @property
    def variables(self) -> list:
        return self.weights

    @property
    def trainable_variables(self) -> list:
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list:
        return self.non_trainable_weights

    @property
    def updates(self) -> list:
        if not self.trainable and not self.stateful:
            return []
        return list(self._updates)

    @property
    def losses(self) -> list:
        return list(self._losses)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on {self.name}, but the layer isn't built. You can "
                             "build it manually via: `" + self.name + ".build(batch_input_shape)`.")
        return int(sum(np.prod(w.shape.as_list()) for w in self.weights))

    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}

    # -- weights, updates, losses -----------------------------------------------------------
    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None, trainable=None,
                   constraint=None, use_resource=None, synchronization=None, aggregation=None, partitioner=None,
                   **kwargs):
        """get_variable(name) in the layer's variable scope (reusing once built or with
        ``_reuse``); the variable joins trainable_weights or non_trainable_weights."""
        for kwarg in kwargs:
            if kwarg not in ("experimental_autocast", "getter", "collections", "caching_device"):
                raise TypeError("Unknown keyword argument:", kwarg)
        from .variable_scope import get_variable
        from .variables import global_variables, trainable_variables

        on_read = synchronization is not None and str(synchronization).upper().endswith("ON_READ")
        if on_read:
            if trainable:
                raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only for "
                                 "non-trainable variables. You have specified trainable=True and "
                                 "synchronization=VariableSynchronization.ON_READ.")
            trainable = False
        elif trainable is None:
            trainable = True
        existing_variables = set(map(id, global_variables()))
        if dtype is None:
            dtype = self.dtype or dtypes.float32
        dtype = dtypes.as_dtype(dtype)
        if self._dtype is None:
            self._dtype = dtype.base_dtype.name
        if shape is None:
            shape = ()
        self._set_scope(None)
        reuse = self.built or self._reuse
        prev_len_trainable = len(self._trainable_weights)
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with name_scope(self._name_scope()):
                if initializer is None:
                    initializer = scope.initializer
                initializer = _get_initializer(initializer)
                if initializer is None:
                    if dtype.is_floating:
                        initializer = GlorotUniform()
                    elif dtype.is_integer or dtype.is_unsigned or dtype.is_bool:
                        initializer = zeros_initializer()
                    else:
                        raise ValueError(f"An initializer for variable {name} of type {dtype.base_dtype} is "
                                         f"required for layer {self.name}")
                variable = get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                                        trainable=trainable and self.trainable, constraint=constraint,
                                        partitioner=partitioner, use_resource=use_resource)
                if trainable:
                    self._trainable_weights.append(variable)
                else:
                    self._non_trainable_weights.append(variable)
                if isinstance(variable, Variable):  # a checkpoint dependency named after the weight (Keras)
                    self._track_trackable(variable, name=name, overwrite=True)
                regularizer = _get_callable(regularizer, "regularizer")
                if regularizer and id(variable) not in existing_variables:
                    self._handle_weight_regularization(name, variable, regularizer)
                # A custom getter or the variable scope may have overridden `trainable`.
                eager = getattr(get_default_graph(), "_is_eager", False)  # TF: no collections to consult
                if trainable and self.trainable and not eager and variable not in trainable_variables():
                    extra = self._trainable_weights[prev_len_trainable:]
                    self._trainable_weights = self._trainable_weights[:prev_len_trainable]
                    self._non_trainable_weights += extra
        return variable

    add_variable = add_weight

    def _handle_weight_regularization(self, name, variable, regularizer) -> None:
        def loss_for_variable():
            with name_scope(name + "/Regularizer"):
                return regularizer(variable)

        self.add_loss(loss_for_variable)

    def add_loss(self, losses, inputs=None):
        """Keras add_loss plus TF1's REGULARIZATION_LOSSES collection (callables are called now)."""
        new_losses = []
        for loss in _flatten(losses):
            if callable(loss):
                loss = loss()
            if loss is None:
                continue
            if not isinstance(loss, Tensor):
                loss = convert_to_tensor(loss, dtype=dtypes.float32)
            loss._unconditional_loss = inputs is None
            new_losses.append(loss)
        self._losses.extend(new_losses)
        _add_elements_to_collection(new_losses, GraphKeys.REGULARIZATION_LOSSES)

    def add_update(self, updates, inputs=None):
        """Graph-mode Keras add_update: callables run now; tensors contribute their op."""
        del inputs
        for update in _flatten(updates):
            if callable(update):
                update = update()
            if isinstance(update, Operation):
                pass
            elif hasattr(update, "op"):
                update = update.op
            else:
                update = convert_to_tensor(update)
            self._updates.append(update)

    def get_updates_for(self, inputs):
        return self.updates

    def get_losses_for(self, inputs):
        return self.losses

    # -- building and calling ---------------------------------------------------------------
    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def compute_output_shape(self, input_shape):
        raise NotImplementedError

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        _assert_input_compatibility(self.input_spec, inputs, self.name)
        input_list = _flatten(inputs)
        if input_list and self._dtype is None:
            try:
                self._dtype = input_list[0].dtype.base_dtype.name
            except AttributeError:
                pass
        input_shapes = None
        if all(hasattr(x, "shape") for x in input_list):
            input_shapes = _map_structure(lambda x: TensorShape(x.shape), inputs)
        self.build(input_shapes)
        self.built = True

    def _handle_activity_regularization(self, inputs, outputs) -> None:
        if not self._activity_regularizer:
            return
        with name_scope("ActivityRegularizer"):
            for output in _flatten(outputs):
                activity_loss = self._activity_regularizer(output)
                batch_size = math_ops.cast(array_ops.shape(output)[0], activity_loss.dtype)
                self.add_loss(activity_loss / batch_size, inputs=inputs)

    def _keras_call(self, inputs, *args, **kwargs):
        """keras Layer.__call__ in graph mode: convert inputs, check the input spec, then
        build and call in the layer's name scope."""
        def convert_non_tensor(x):
            if isinstance(x, (np.ndarray, float, int)):
                return convert_to_tensor(x)
            return x

        if any(isinstance(x, (np.ndarray, float, int)) for x in _flatten(inputs)):
            inputs = _map_structure(convert_non_tensor, inputs)
        if "training" in kwargs and not self._expects_training_arg:
            kwargs.pop("training")
        _assert_input_compatibility(self.input_spec, inputs, self.name)
        with name_scope(self._name_scope()):
            self._maybe_build(inputs)
            outputs = self.call(inputs, *args, **kwargs)
            self._handle_activity_regularization(inputs, outputs)
        return outputs

    def __call__(self, inputs, *args, **kwargs):
        """Call the layer in its variable scope (reused once built); updates go to UPDATE_OPS."""
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            if self._call_has_scope_arg:
                kwargs["scope"] = scope
            outputs = self._keras_call(inputs, *args, **kwargs)
        _add_elements_to_collection(self.updates, GraphKeys.UPDATE_OPS)
        return outputs

    def apply(self, inputs, *args, **kwargs):
        return self.__call__(inputs, *args, **kwargs)


# =====================================================================================
# Dense
# =====================================================================================
def _tensordot(a, b, axes, name=None):
    """TF 1.15's math_ops.tensordot, op for op (name scope 'Tensordot'); axes as a pair of
    lists."""
    def tensordot_reshape(a, axes, flipped=False):
        if a.get_shape().is_fully_defined() and isinstance(axes, (list, tuple)):
            shape_a = a.get_shape().as_list()
            axes = [i if i >= 0 else i + len(shape_a) for i in axes]
            free = [i for i in range(len(shape_a)) if i not in axes]
            free_dims = [shape_a[i] for i in free]
            prod_free = int(np.prod([shape_a[i] for i in free]))
            prod_axes = int(np.prod([shape_a[i] for i in axes]))
            perm = list(axes) + free if flipped else free + list(axes)
            new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
            reshaped_a = array_ops.reshape(array_ops.transpose(a, perm), new_shape)
            return reshaped_a, free_dims, free_dims
        if a.get_shape().ndims is None:
            raise NotImplementedError("tensordot of a tensor of unknown rank (needs ListDiff) is not supported")
        shape_a = a.get_shape().as_list()
        axes = [i if i >= 0 else i + len(shape_a) for i in axes]
        free = [i for i in range(len(shape_a)) if i not in axes]
        free_dims_static = [shape_a[i] for i in free]
        axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        free = convert_to_tensor(free, dtype=dtypes.int32, name="free")
        shape_a = array_ops.shape(a)
        free_dims = array_ops.gather(shape_a, free)
        axes_dims = array_ops.gather(shape_a, axes)
        prod_free_dims = math_ops.reduce_prod(free_dims)
        prod_axes_dims = math_ops.reduce_prod(axes_dims)
        if flipped:
            perm = array_ops.concat([axes, free], 0)
            new_shape = array_ops.stack([prod_axes_dims, prod_free_dims])
        else:
            perm = array_ops.concat([free, axes], 0)
            new_shape = array_ops.stack([prod_free_dims, prod_axes_dims])
        reshaped_a = array_ops.reshape(array_ops.transpose(a, perm), new_shape)
        return reshaped_a, free_dims, free_dims_static

    with name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        if len(axes) != 2:
            raise ValueError("'axes' must be an integer or have length 2.")
        a_axes, b_axes = axes
        if isinstance(a_axes, int) and isinstance(b_axes, int):
            a_axes, b_axes = [a_axes], [b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != {len(b_axes)}.")
        a_reshape, a_free_dims, a_free_dims_static = tensordot_reshape(a, a_axes)
        b_reshape, b_free_dims, b_free_dims_static = tensordot_reshape(b, b_axes, True)
        ab_matmul = math_ops.matmul(a_reshape, b_reshape)
        if isinstance(a_free_dims, list) and isinstance(b_free_dims, list):
            return array_ops.reshape(ab_matmul, a_free_dims + b_free_dims, name=scope)
        a_free_dims = convert_to_tensor(a_free_dims, dtype=dtypes.int32)
        b_free_dims = convert_to_tensor(b_free_dims, dtype=dtypes.int32)
        product = array_ops.reshape(ab_matmul, array_ops.concat([a_free_dims, b_free_dims], 0), name=scope)
        if a_free_dims_static is not None and b_free_dims_static is not None:
            product.set_shape(a_free_dims_static + b_free_dims_static)
        return product


class Dense(Layer):
    """Densely-connected layer: ``outputs = activation(inputs @ kernel + bias)``.

    Variables ``<scope>/kernel`` [in, units] (default glorot_uniform, or the variable
    scope's initializer) and ``<scope>/bias`` [units] (zeros); ops ``<scope>/MatMul``
    (``<scope>/Tensordot/...`` for inputs of rank > 2), ``<scope>/BiasAdd`` and the
    activation's op.
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        if "input_shape" not in kwargs and "input_dim" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_dim"),)
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = _get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = _get_initializer(kernel_initializer)
        self.bias_initializer = _get_initializer(bias_initializer)
        self.kernel_regularizer = _get_callable(kernel_regularizer, "regularizer")
        self.bias_regularizer = _get_callable(bias_regularizer, "regularizer")
        self.kernel_constraint = _get_callable(kernel_constraint, "constraint")
        self.bias_constraint = _get_callable(bias_constraint, "constraint")
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape) -> None:
        dtype = dtypes.as_dtype(self.dtype or dtypes.float32)
        if not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"Unable to build `Dense` layer with non-floating point dtype {dtype!r}")
        input_shape = TensorShape(input_shape)
        if dimension_value(input_shape[-1]) is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found `None`.")
        last_dim = dimension_value(input_shape[-1])
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self.dtype, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self.dtype, trainable=True)
        else:
            self.bias = None
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        if rank > 2:
            outputs = _tensordot(inputs, self.kernel, [[rank - 1], [0]])
            shape = inputs.shape.as_list()
            outputs.set_shape(shape[:-1] + [self.units])
        else:
            inputs = math_ops.cast(inputs, self._compute_dtype)
            outputs = apply_op("MatMul", [inputs, self.kernel]).outputs[0]
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).with_rank_at_least(2)
        if dimension_value(input_shape[-1]) is None:
            raise ValueError(f"The innermost dimension of input_shape must be defined, but saw: {input_shape}")
        return input_shape[:-1].concatenate(self.units)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
          reuse=None):
    """tf.layers.dense: a Dense layer created and applied in one call."""
    layer = Dense(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                  bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                  bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                  name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


# =====================================================================================
# Dropout, Flatten
# =====================================================================================
class Dropout(Layer):
    """Dropout: in training, ``tf.nn.dropout(inputs, rate=rate)`` (ops under
    ``<scope>/dropout/``); otherwise ``tf.identity`` (``<scope>/Identity``)."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def _get_noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        concrete_inputs_shape = array_ops.shape(inputs)
        noise_shape = []
        for i, value in enumerate(self.noise_shape):
            noise_shape.append(concrete_inputs_shape[i] if value is None else value)
        return convert_to_tensor(noise_shape)

    def call(self, inputs, training=False):
        if _static_training(training, self):
            return nn_ops.dropout(inputs, noise_shape=self._get_noise_shape(inputs), seed=self.seed, rate=self.rate)
        return array_ops.identity(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout (training=False by default: the identity)."""
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer.apply(inputs, training=training)


class Flatten(Layer):
    """Flattens all but the batch dimension: ``Reshape(inputs, (-1, prod(inner dims)))``
    when the inner dims are known, else ``(batch or Shape[0], -1)``."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        self.data_format = _normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        ndim = inputs.shape.ndims
        if self.data_format == "channels_first" and ndim is not None and ndim > 1:
            permutation = [0] + list(range(2, ndim)) + [1]
            inputs = array_ops.transpose(inputs, perm=permutation)
        input_shape = TensorShape(inputs.shape)
        if input_shape[1:].is_fully_defined():
            flattened = int(np.prod(input_shape[1:].as_list(), dtype=np.int64))
            outputs = array_ops.reshape(inputs, (-1, flattened))
        else:
            batch = dimension_value(input_shape[0]) or array_ops.shape(inputs)[0]
            outputs = array_ops.reshape(inputs, (batch, -1))
        outputs.set_shape(self.compute_output_shape(input_shape))
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).as_list()
        if not input_shape:
            return TensorShape([1])
        output_shape = [input_shape[0]]
        if all(input_shape[1:]):
            output_shape += [int(np.prod(input_shape[1:], dtype=np.int64))]
        else:
            output_shape += [None]
        return TensorShape(output_shape)


def flatten(inputs, name=None, data_format="channels_last"):
    """tf.layers.flatten."""
    layer = Flatten(name=name, data_format=data_format)
    return layer.apply(inputs)


# =====================================================================================
# Convolutions: Conv1D, Conv2D, Conv3D, Conv2DTranspose, Conv3DTranspose, SeparableConv1D, SeparableConv2D
# =====================================================================================
def _conv_output_length(size, window: int, padding: str, stride: int, dilation: int = 1):
    """Keras conv_utils.conv_output_length."""
    if size is None:
        return None
    window = (window - 1) * dilation + 1
    if padding == "same":
        length = size
    elif padding == "valid":
        length = size - window + 1
    elif padding == "causal":
        length = size
    else:  # full
        length = size + window - 1
    return (length + stride - 1) // stride


def _deconv_output_length(size, window: int, padding: str, stride: int, dilation: int = 1):
    """Keras conv_utils.deconv_output_length without output_padding (``size`` a number,
    None or a scalar tensor: the same arithmetic ops as TF's)."""
    if size is None:
        return None
    window = window + (window - 1) * (dilation - 1)
    if padding == "valid":
        return size * stride + max(window - stride, 0)
    if padding == "full":
        return size * stride - (stride + window - 2)
    return size * stride


class _Conv(Layer):
    """Keras' N-D ``Conv`` base (rank 1, 2 or 3): variables ``<scope>/kernel``
    [k..., in, filters] and ``<scope>/bias``; ops ``<scope>/<conv op>``, ``<scope>/BiasAdd``,
    the activation's op."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs)
        if filters is not None and not isinstance(filters, int):
            filters = int(filters)
        self.filters = filters
        self.kernel_size = _normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = _normalize_tuple(strides, self.rank, "strides")
        self.padding = _normalize_padding(padding)
        if self.padding == "causal" and self.rank != 1:
            raise ValueError("Causal padding is only supported for `Conv1D` and ``SeparableConv1D`.")
        self.data_format = _normalize_data_format(data_format)
        self.dilation_rate = _normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        self.activation = _get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = _get_initializer(kernel_initializer)
        self.bias_initializer = _get_initializer(bias_initializer)
        self.kernel_regularizer = _get_callable(kernel_regularizer, "regularizer")
        self.bias_regularizer = _get_callable(bias_regularizer, "regularizer")
        self.kernel_constraint = _get_callable(kernel_constraint, "constraint")
        self.bias_constraint = _get_callable(bias_constraint, "constraint")
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _input_dim(self, input_shape) -> int:
        input_shape = TensorShape(input_shape)
        if dimension_value(input_shape[self._channel_axis()]) is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        return int(dimension_value(input_shape[self._channel_axis()]))

    def _kernel_shape(self, input_dim: int) -> tuple:
        return tuple(self.kernel_size) + (input_dim, self.filters)

    def _add_bias(self) -> None:
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        trainable=True, dtype=self.dtype)
        else:
            self.bias = None

    def build(self, input_shape) -> None:
        input_dim = self._input_dim(input_shape)
        self.kernel = self.add_weight(name="kernel", shape=self._kernel_shape(input_dim),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True, dtype=self.dtype)
        self._add_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): input_dim})
        self.built = True

    def _op_lists(self) -> tuple:
        """(strides, dilations) as the full per-dim lists of the op's data format."""
        if self.data_format == "channels_first":
            return [1, 1] + list(self.strides), [1, 1] + list(self.dilation_rate)
        return [1] + list(self.strides) + [1], [1] + list(self.dilation_rate) + [1]

    def _convolution(self, inputs):
        raise NotImplementedError

    def _bias_and_activation(self, outputs):
        if self.use_bias:
            if self.data_format == "channels_first" and self.rank == 1:
                outputs = outputs + array_ops.reshape(self.bias, (1, self.filters, 1))  # no 1-D NCHW BiasAdd
            else:
                outputs = nn_ops.bias_add(outputs, self.bias,
                                          data_format="NCHW" if self.data_format == "channels_first" else "NHWC")
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def call(self, inputs):
        if any(d != 1 for d in self.dilation_rate) and any(s != 1 for s in self.strides):
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        return self._bias_and_activation(self._convolution(inputs))

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).as_list()
        spatial = input_shape[2:] if self.data_format == "channels_first" else input_shape[1:-1]
        new_space = [_conv_output_length(size, self.kernel_size[i], self.padding, self.strides[i],
                                         self.dilation_rate[i]) for i, size in enumerate(spatial)]
        if self.data_format == "channels_first":
            return TensorShape([input_shape[0], self.filters] + new_space)
        return TensorShape([input_shape[0]] + new_space + [self.filters])


class Conv1D(_Conv):
    """1-D convolution (TF's conv1d: ``<scope>/conv1d/ExpandDims``, ``<scope>/conv1d`` (a
    Conv2D), ``<scope>/conv1d/Squeeze``); 'causal' padding pads the input on the left."""

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, trainable=trainable, name=name, **kwargs)

    def _convolution(self, inputs):
        from .ops.nn_extra_ops import conv1d

        padding = self.padding
        if padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            pads = [[0, 0], [left, 0], [0, 0]] if self.data_format == "channels_last" else [[0, 0], [0, 0], [left, 0]]
            inputs = array_ops.pad(inputs, pads)
            padding = "valid"
        strides, dilations = self._op_lists()
        return conv1d(inputs, self.kernel, stride=strides, padding=padding.upper(),
                      data_format=_convert_data_format(self.data_format, 3), dilations=dilations)


class Conv2D(_Conv):
    """2-D convolution: variables ``<scope>/kernel`` [kh, kw, in, filters] and
    ``<scope>/bias``; ops ``<scope>/Conv2D``, ``<scope>/BiasAdd``, the activation's op."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, trainable=trainable, name=name, **kwargs)

    def _convolution(self, inputs):
        strides, dilations = self._op_lists()
        return nn_ops.conv2d(inputs, self.kernel, strides=strides, padding=self.padding.upper(),
                             data_format=_convert_data_format(self.data_format, 4), dilations=dilations)


class Conv3D(_Conv):
    """3-D convolution: variables ``<scope>/kernel`` [kd, kh, kw, in, filters] and
    ``<scope>/bias``; ops ``<scope>/Conv3D``, ``<scope>/BiasAdd``, the activation's op."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1, 1), activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                         bias_constraint=bias_constraint, trainable=trainable, name=name, **kwargs)

    def _convolution(self, inputs):
        strides, dilations = self._op_lists()
        return nn_ops.conv3d(inputs, self.kernel, strides=strides, padding=self.padding.upper(),
                             data_format=_convert_data_format(self.data_format, 5), dilations=dilations)


class Conv2DTranspose(Conv2D):
    """Transposed 2-D convolution (Keras' Conv2DTranspose of TF 1.15): kernel
    [kh, kw, filters, in]; the output size from the input's run-time shape
    (``<scope>/Shape``, ``strided_slice``..., ``mul``/``add``, ``stack``), then
    ``<scope>/conv2d_transpose`` (a Conv2DBackpropInput) and ``<scope>/BiasAdd``. On the CPU
    TF runs channels-first data through NHWC (transposes around the op); so does tfc."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                         name=name, **kwargs)
        self.output_padding = None
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims != 4:
            raise ValueError(f"Inputs should have rank 4. Received input shape: {input_shape}")
        super().build(input_shape)

    def _kernel_shape(self, input_dim: int) -> tuple:
        return tuple(self.kernel_size) + (self.filters, input_dim)

    def call(self, inputs):
        inputs_shape = array_ops.shape(inputs)
        batch_size = inputs_shape[0]
        h_axis, w_axis = (2, 3) if self.data_format == "channels_first" else (1, 2)
        height, width = inputs_shape[h_axis], inputs_shape[w_axis]
        out_height = _deconv_output_length(height, self.kernel_size[0], self.padding, self.strides[0],
                                           self.dilation_rate[0])
        out_width = _deconv_output_length(width, self.kernel_size[1], self.padding, self.strides[1],
                                          self.dilation_rate[1])
        if self.data_format == "channels_first":
            output_shape = (batch_size, self.filters, out_height, out_width)
        else:
            output_shape = (batch_size, out_height, out_width, self.filters)
        output_shape_tensor = array_ops.stack(output_shape)
        x = inputs
        if self.data_format == "channels_first":  # Keras' backend: NHWC on a CPU
            x = array_ops.transpose(x, (0, 2, 3, 1))
            output_shape_tensor = array_ops.stack([output_shape[0], output_shape[2], output_shape[3],
                                                   output_shape[1]])
        outputs = nn_ops.conv2d_transpose(x, self.kernel, output_shape_tensor, [1] + list(self.strides) + [1],
                                          padding=self.padding.upper(), data_format="NHWC")
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, (0, 3, 1, 2))
        outputs.set_shape(self.compute_output_shape(inputs.shape))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias,
                                      data_format="NCHW" if self.data_format == "channels_first" else "NHWC")
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        output_shape = TensorShape(input_shape).as_list()
        c_axis, h_axis, w_axis = (1, 2, 3) if self.data_format == "channels_first" else (3, 1, 2)
        output_shape[c_axis] = self.filters
        output_shape[h_axis] = _deconv_output_length(output_shape[h_axis], self.kernel_size[0], self.padding,
                                                     self.strides[0], self.dilation_rate[0])
        output_shape[w_axis] = _deconv_output_length(output_shape[w_axis], self.kernel_size[1], self.padding,
                                                     self.strides[1], self.dilation_rate[1])
        return TensorShape(output_shape)


class SeparableConv2D(_Conv):
    """Depthwise separable 2-D convolution (tf.nn.separable_conv2d: ops
    ``<scope>/separable_conv2d/depthwise`` and ``<scope>/separable_conv2d``): variables
    ``<scope>/depthwise_kernel`` [kh, kw, in, depth_multiplier], ``<scope>/pointwise_kernel``
    [1, 1, in * depth_multiplier, filters] and ``<scope>/bias``."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = _get_initializer(depthwise_initializer)
        self.pointwise_initializer = _get_initializer(pointwise_initializer)
        self.depthwise_regularizer = _get_callable(depthwise_regularizer, "regularizer")
        self.pointwise_regularizer = _get_callable(pointwise_regularizer, "regularizer")
        self.depthwise_constraint = _get_callable(depthwise_constraint, "constraint")
        self.pointwise_constraint = _get_callable(pointwise_constraint, "constraint")

    def build(self, input_shape) -> None:
        input_dim = self._input_dim(input_shape)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): input_dim})
        depthwise_shape = tuple(self.kernel_size) + (input_dim, self.depth_multiplier)
        pointwise_shape = (1,) * self.rank + (self.depth_multiplier * input_dim, self.filters)
        self.depthwise_kernel = self.add_weight(name="depthwise_kernel", shape=depthwise_shape,
                                                initializer=self.depthwise_initializer,
                                                regularizer=self.depthwise_regularizer,
                                                constraint=self.depthwise_constraint, trainable=True,
                                                dtype=self.dtype)
        self.pointwise_kernel = self.add_weight(name="pointwise_kernel", shape=pointwise_shape,
                                                initializer=self.pointwise_initializer,
                                                regularizer=self.pointwise_regularizer,
                                                constraint=self.pointwise_constraint, trainable=True,
                                                dtype=self.dtype)
        self._add_bias()
        self.built = True

    def call(self, inputs):
        from .ops.nn_extra_ops import separable_conv2d

        strides, _ = self._op_lists()
        outputs = separable_conv2d(inputs, self.depthwise_kernel, self.pointwise_kernel, strides=strides,
                                   padding=self.padding.upper(), rate=self.dilation_rate,
                                   data_format=_convert_data_format(self.data_format, 4))
        return self._bias_and_activation(outputs)


class Conv3DTranspose(Conv3D):
    """Transposed 3-D convolution (Keras' Conv3DTranspose of TF 1.15): kernel
    [kd, kh, kw, filters, in]; the output size from the input's run-time shape
    (``<scope>/Shape``, ``strided_slice``..., ``mul``/``add``, ``stack``), then
    ``<scope>/conv3d_transpose`` (a Conv3DBackpropInputV2, in the layer's own data format)
    and ``<scope>/BiasAdd``."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format="channels_last",
                 activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable,
                         name=name, **kwargs)
        self.output_padding = None
        self.input_spec = InputSpec(ndim=5)

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if input_shape.ndims != 5:
            raise ValueError(f"Inputs should have rank 5, received input shape: {input_shape}")
        super().build(input_shape)

    def _kernel_shape(self, input_dim: int) -> tuple:
        return tuple(self.kernel_size) + (self.filters, input_dim)

    def call(self, inputs):
        inputs_shape = array_ops.shape(inputs)
        batch_size = inputs_shape[0]
        axes = (2, 3, 4) if self.data_format == "channels_first" else (1, 2, 3)
        sizes = [inputs_shape[axis] for axis in axes]
        out = [_deconv_output_length(size, self.kernel_size[i], self.padding, self.strides[i])
               for i, size in enumerate(sizes)]
        if self.data_format == "channels_first":
            output_shape = (batch_size, self.filters) + tuple(out)
            strides = (1, 1) + tuple(self.strides)
        else:
            output_shape = (batch_size,) + tuple(out) + (self.filters,)
            strides = (1,) + tuple(self.strides) + (1,)
        output_shape_tensor = array_ops.stack(output_shape)
        outputs = nn_ops.conv3d_transpose(inputs, self.kernel, output_shape_tensor, list(strides),
                                          data_format=_convert_data_format(self.data_format, 5),
                                          padding=self.padding.upper())
        if inputs.shape.ndims:
            outputs.set_shape(self.compute_output_shape(inputs.shape))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias,
                                      data_format="NCHW" if self.data_format == "channels_first" else "NHWC")
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        output_shape = TensorShape(input_shape).as_list()
        if self.data_format == "channels_first":
            c_axis, axes = 1, (2, 3, 4)
        else:
            c_axis, axes = 4, (1, 2, 3)
        output_shape[c_axis] = self.filters
        for i, axis in enumerate(axes):
            output_shape[axis] = _deconv_output_length(output_shape[axis], self.kernel_size[i], self.padding,
                                                       self.strides[i])
        return TensorShape(output_shape)


class SeparableConv1D(SeparableConv2D):
    """Depthwise separable 1-D convolution (Keras' SeparableConv1D of TF 1.15): variables
    ``<scope>/depthwise_kernel`` [k, in, depth_multiplier], ``<scope>/pointwise_kernel``
    [1, in * depth_multiplier, filters] and ``<scope>/bias``; the input and both kernels
    expanded to 2-D (``<scope>/ExpandDims``, ``ExpandDims_1``, ``ExpandDims_2``),
    tf.nn.separable_conv2d (``<scope>/separable_conv2d/depthwise``,
    ``<scope>/separable_conv2d``), ``<scope>/BiasAdd``, then ``<scope>/Squeeze``; 'causal'
    padding pads the input on the left (``<scope>/Pad``)."""

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, depth_multiplier=depth_multiplier, activation=activation,
                         use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                         pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
                         depthwise_regularizer=depthwise_regularizer, pointwise_regularizer=pointwise_regularizer,
                         bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                         depthwise_constraint=depthwise_constraint, pointwise_constraint=pointwise_constraint,
                         bias_constraint=bias_constraint, trainable=trainable, name=name, **kwargs)

    def call(self, inputs):
        from .ops.nn_extra_ops import separable_conv2d

        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            pads = [[0, 0], [left, 0], [0, 0]] if self.data_format == "channels_last" else [[0, 0], [0, 0], [left, 0]]
            inputs = array_ops.pad(inputs, pads)
        if self.data_format == "channels_last":
            strides = (1,) + tuple(self.strides) * 2 + (1,)  # Keras' (s,) * 2: DepthwiseConv2dNative's equal strides
            spatial_start_dim = 1
        else:
            strides = (1, 1) + tuple(self.strides) * 2
            spatial_start_dim = 2
        inputs = array_ops.expand_dims(inputs, spatial_start_dim)
        depthwise_kernel = array_ops.expand_dims(self.depthwise_kernel, 0)
        pointwise_kernel = array_ops.expand_dims(self.pointwise_kernel, 0)
        dilation_rate = (1,) + tuple(self.dilation_rate)
        op_padding = "valid" if self.padding == "causal" else self.padding
        data_format = _convert_data_format(self.data_format, 4)
        outputs = separable_conv2d(inputs, depthwise_kernel, pointwise_kernel, strides=list(strides),
                                   padding=op_padding.upper(), rate=dilation_rate, data_format=data_format)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias, data_format=data_format)
        outputs = array_ops.squeeze(outputs, [spatial_start_dim])
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


def _layer_function(layer_class, inputs, name, reuse, **kwargs):
    layer = layer_class(name=name, _reuse=reuse, _scope=name, **kwargs)
    return layer.apply(inputs)


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last", dilation_rate=1,
           activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv1d."""
    return _layer_function(Conv1D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
                           padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                           activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """tf.layers.conv2d."""
    return _layer_function(Conv2D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
                           padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                           activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable)


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1, 1), activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """tf.layers.conv3d."""
    return _layer_function(Conv3D, inputs, name, reuse, filters=filters, kernel_size=kernel_size, strides=strides,
                           padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                           activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                     activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d_transpose."""
    return _layer_function(Conv2DTranspose, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
                           strides=strides, padding=padding, data_format=data_format, activation=activation,
                           use_bias=use_bias, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                     dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                     depthwise_initializer=None, pointwise_initializer=None, bias_initializer=zeros_initializer(),
                     depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                     activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.separable_conv2d."""
    return _layer_function(SeparableConv2D, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
                           strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                           depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
                           depthwise_initializer=depthwise_initializer, pointwise_initializer=pointwise_initializer,
                           bias_initializer=bias_initializer, depthwise_regularizer=depthwise_regularizer,
                           pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
                           activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
                           pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                           trainable=trainable)


def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format="channels_last",
                     activation=None, use_bias=True, kernel_initializer=None, bias_initializer=zeros_initializer(),
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv3d_transpose."""
    return _layer_function(Conv3DTranspose, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
                           strides=strides, padding=padding, data_format=data_format, activation=activation,
                           use_bias=use_bias, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, trainable=trainable)


def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
                     dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=zeros_initializer(), depthwise_regularizer=None,
                     pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, trainable=True,
                     name=None, reuse=None):
    """tf.layers.separable_conv1d."""
    return _layer_function(SeparableConv1D, inputs, name, reuse, filters=filters, kernel_size=kernel_size,
                           strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate,
                           depth_multiplier=depth_multiplier, activation=activation, use_bias=use_bias,
                           depthwise_initializer=depthwise_initializer, pointwise_initializer=pointwise_initializer,
                           bias_initializer=bias_initializer, depthwise_regularizer=depthwise_regularizer,
                           pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
                           activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
                           pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
                           trainable=trainable)


# =====================================================================================
# Pooling
# =====================================================================================
class _Pooling2D(Layer):
    """Keras Pooling2D: ``pool_function(inputs, ksize, strides, PADDING, data_format)``."""

    _pool_name = ""

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        super().__init__(name=name, **kwargs)
        self.pool_size = _normalize_tuple(pool_size, 2, "pool_size")
        self.strides = _normalize_tuple(strides, 2, "strides")
        self.padding = _normalize_padding(padding)
        self.data_format = _normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def _pool_function(self, *args, **kwargs):
        raise NotImplementedError

    def call(self, inputs):
        if self.data_format == "channels_last":
            pool_shape = (1,) + tuple(self.pool_size) + (1,)
            strides = (1,) + tuple(self.strides) + (1,)
        else:
            pool_shape = (1, 1) + tuple(self.pool_size)
            strides = (1, 1) + tuple(self.strides)
        return self._pool_function(inputs, ksize=list(pool_shape), strides=list(strides),
                                   padding=self.padding.upper(), data_format=_convert_data_format(self.data_format, 4))

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).as_list()
        if self.data_format == "channels_first":
            rows, cols = input_shape[2], input_shape[3]
        else:
            rows, cols = input_shape[1], input_shape[2]

        def out_length(size, window, stride):
            if size is None:
                return None
            if self.padding == "same":
                return -(-size // stride)
            return -(-(size - window + 1) // stride)

        rows = out_length(rows, self.pool_size[0], self.strides[0])
        cols = out_length(cols, self.pool_size[1], self.strides[1])
        if self.data_format == "channels_first":
            return TensorShape([input_shape[0], input_shape[1], rows, cols])
        return TensorShape([input_shape[0], rows, cols, input_shape[3]])


class MaxPooling2D(_Pooling2D):
    """2-D max pooling (op ``<scope>/MaxPool``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.max_pool(inputs, **kwargs)


class AveragePooling2D(_Pooling2D):
    """2-D average pooling (op ``<scope>/AvgPool``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.avg_pool(inputs, **kwargs)


class _Pooling1D(Layer):
    """Keras Pooling1D: the input expanded to 2-D (``<scope>/ExpandDims``, a width-1 dim
    after the steps), Keras' backend pool2d, then ``<scope>/Squeeze``. pool2d runs
    channels-first data through NHWC on a CPU (``<scope>/transpose`` before and
    ``transpose_1`` after the pool), as TF's Keras backend does."""

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        super().__init__(name=name, **kwargs)
        self.pool_size = _normalize_tuple(pool_size, 1, "pool_size")
        self.strides = _normalize_tuple(strides, 1, "strides")
        self.padding = _normalize_padding(padding)
        self.data_format = _normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def _pool_function(self, *args, **kwargs):
        raise NotImplementedError

    def call(self, inputs):
        pad_axis = 2 if self.data_format == "channels_last" else 3
        inputs = array_ops.expand_dims(inputs, pad_axis)
        if self.data_format == "channels_first":  # the backend's _preprocess_conv2d_input on a CPU
            inputs = array_ops.transpose(inputs, (0, 2, 3, 1))
        pool_size = [1] + list(self.pool_size) + [1, 1]
        strides = [1] + list(self.strides) + [1, 1]
        outputs = self._pool_function(inputs, ksize=pool_size, strides=strides, padding=self.padding.upper(),
                                      data_format="NHWC")
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, (0, 3, 1, 2))
        return array_ops.squeeze(outputs, pad_axis)

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        steps, features = (input_shape[2], input_shape[1]) if first else (input_shape[1], input_shape[2])
        length = _conv_output_length(steps, self.pool_size[0], self.padding, self.strides[0])
        if first:
            return TensorShape([input_shape[0], features, length])
        return TensorShape([input_shape[0], length, features])


class MaxPooling1D(_Pooling1D):
    """1-D max pooling (op ``<scope>/MaxPool``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.max_pool(inputs, **kwargs)


class AveragePooling1D(_Pooling1D):
    """1-D average pooling (op ``<scope>/AvgPool``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.avg_pool(inputs, **kwargs)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.max_pooling1d."""
    layer = MaxPooling1D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format, name=name)
    return layer.apply(inputs)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.average_pooling1d."""
    layer = AveragePooling1D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format,
                             name=name)
    return layer.apply(inputs)


class _Pooling3D(Layer):
    """Keras Pooling3D: channels-first data is transposed to NDHWC around the op."""

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        super().__init__(name=name, **kwargs)
        self.pool_size = _normalize_tuple(pool_size, 3, "pool_size")
        self.strides = _normalize_tuple(strides, 3, "strides")
        self.padding = _normalize_padding(padding)
        self.data_format = _normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)

    def _pool_function(self, *args, **kwargs):
        raise NotImplementedError

    def call(self, inputs):
        pool_shape = [1] + list(self.pool_size) + [1]
        strides = [1] + list(self.strides) + [1]
        if self.data_format == "channels_first":
            inputs = array_ops.transpose(inputs, (0, 2, 3, 4, 1))
        outputs = self._pool_function(inputs, ksize=pool_shape, strides=strides, padding=self.padding.upper())
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, (0, 4, 1, 2, 3))
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        spatial = input_shape[2:] if first else input_shape[1:4]
        sizes = [_conv_output_length(size, k, self.padding, s) for size, k, s in
                 zip(spatial, self.pool_size, self.strides)]
        if first:
            return TensorShape(input_shape[:2] + sizes)
        return TensorShape([input_shape[0]] + sizes + [input_shape[4]])


class MaxPooling3D(_Pooling3D):
    """3-D max pooling (op ``<scope>/MaxPool3D``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.max_pool3d(inputs, **kwargs)


class AveragePooling3D(_Pooling3D):
    """3-D average pooling (op ``<scope>/AvgPool3D``)."""

    def _pool_function(self, inputs, **kwargs):
        return nn_ops.avg_pool3d(inputs, **kwargs)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.max_pooling3d."""
    layer = MaxPooling3D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format, name=name)
    return layer.apply(inputs)


def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.average_pooling3d."""
    layer = AveragePooling3D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format,
                             name=name)
    return layer.apply(inputs)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.max_pooling2d."""
    layer = MaxPooling2D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format, name=name)
    return layer.apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """tf.layers.average_pooling2d."""
    layer = AveragePooling2D(pool_size=pool_size, strides=strides, padding=padding, data_format=data_format,
                             name=name)
    return layer.apply(inputs)


# =====================================================================================
# BatchNormalization
# =====================================================================================
_FUSED_MIN_EPSILON = 1.001e-5  # nn.fused_batch_norm's floor on epsilon


class BatchNormalization(Layer):
    """Batch normalization (Keras BatchNormalization V1 behaviour of TF 1.15).

    Variables ``<scope>/gamma``, ``<scope>/beta`` (trainable), ``<scope>/moving_mean``,
    ``<scope>/moving_variance`` (not trainable). ``training=True`` normalizes with the batch
    moments (``<scope>/moments/...``) and adds the updates
    ``moving -= (moving - batch_stat) * (1 - momentum)`` (AssignSub ops
    ``<scope>/AssignMovingAvg`` and ``<scope>/AssignMovingAvg_1``) to UPDATE_OPS;
    ``training=False`` normalizes with the moving statistics. The normalization itself is
    ``tf.nn.batch_normalization`` (``<scope>/batchnorm/...``).
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                 moving_mean_initializer=zeros_initializer(), moving_variance_initializer=ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        if isinstance(axis, list):
            self.axis = axis[:]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError(f"axis must be int or list, type given: {type(axis)}")
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = _get_initializer(beta_initializer)
        self.gamma_initializer = _get_initializer(gamma_initializer)
        self.moving_mean_initializer = _get_initializer(moving_mean_initializer)
        self.moving_variance_initializer = _get_initializer(moving_variance_initializer)
        self.beta_regularizer = _get_callable(beta_regularizer, "regularizer")
        self.gamma_regularizer = _get_callable(gamma_regularizer, "regularizer")
        self.beta_constraint = _get_callable(beta_constraint, "constraint")
        self.gamma_constraint = _get_callable(gamma_constraint, "constraint")
        if renorm:
            raise NotImplementedError("BatchNormalization with renorm=True is not supported by tfc")
        if virtual_batch_size is not None:
            raise NotImplementedError("BatchNormalization with virtual_batch_size is not supported by tfc")
        if adjustment is not None:
            raise NotImplementedError("BatchNormalization with adjustment is not supported by tfc")
        self.renorm = renorm
        self.virtual_batch_size = virtual_batch_size
        self.adjustment = adjustment
        if fused is None:
            fused = True  # TF1 (V1 behaviour): use the fused kernel where it can be used
        self.fused = fused
        self.supports_masking = True

    @property
    def _param_dtype(self):
        if self.dtype in ("float16", "bfloat16"):
            return dtypes.float32
        return dtypes.as_dtype(self.dtype or dtypes.float32)

    def build(self, input_shape) -> None:
        input_shape = TensorShape(input_shape)
        if not input_shape.ndims:
            raise ValueError("Input has undefined rank:", input_shape)
        ndims = len(input_shape)
        if isinstance(self.axis, int):
            self.axis = [self.axis]
        for idx, x in enumerate(self.axis):
            if x < 0:
                self.axis[idx] = ndims + x
        for x in self.axis:
            if x < 0 or x >= ndims:
                raise ValueError("Invalid axis: %d" % x)
        if len(self.axis) != len(set(self.axis)):
            raise ValueError("Duplicate axis: %s" % self.axis)
        if self.fused:
            # TF 1.15 (V1): the fused kernel for 4-D inputs normalized over axis 1 or 3.
            self.fused = ndims == 4 and self.axis in [[1], [3]]
        axis_to_dim = {x: dimension_value(input_shape[x]) for x in self.axis}
        for x in axis_to_dim:
            if axis_to_dim[x] is None:
                raise ValueError("Input has undefined `axis` dimension. Input shape: ", input_shape)
        self.input_spec = InputSpec(ndim=ndims, axes=axis_to_dim)
        if len(axis_to_dim) == 1:
            param_shape = (list(axis_to_dim.values())[0],)
        else:
            param_shape = [axis_to_dim[i] if i in axis_to_dim else 1 for i in range(ndims)]
        if self.scale:
            self.gamma = self.add_weight(name="gamma", shape=param_shape, dtype=self._param_dtype,
                                         initializer=self.gamma_initializer, regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True,
                                         experimental_autocast=False)
        else:
            self.gamma = None
        if self.center:
            self.beta = self.add_weight(name="beta", shape=param_shape, dtype=self._param_dtype,
                                        initializer=self.beta_initializer, regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True,
                                        experimental_autocast=False)
        else:
            self.beta = None
        partitioner = None
        if self._scope is not None:
            partitioner = self._scope.partitioner
            self._scope.set_partitioner(None)
        try:
            self.moving_mean = self.add_weight(name="moving_mean", shape=param_shape, dtype=self._param_dtype,
                                               initializer=self.moving_mean_initializer,
                                               synchronization="ON_READ", trainable=False,
                                               experimental_autocast=False)
            self.moving_variance = self.add_weight(name="moving_variance", shape=param_shape,
                                                   dtype=self._param_dtype,
                                                   initializer=self.moving_variance_initializer,
                                                   synchronization="ON_READ", trainable=False,
                                                   experimental_autocast=False)
        finally:
            if partitioner:
                self._scope.set_partitioner(partitioner)
        self.built = True

    def _assign_moving_average(self, variable, value, momentum):
        with name_scope("AssignMovingAvg") as scope:
            with colocate_with(variable.op):
                decay = convert_to_tensor(1.0 - momentum, name="decay")
                if decay.dtype != variable.dtype.base_dtype:
                    decay = math_ops.cast(decay, variable.dtype.base_dtype)
                update_delta = (variable - math_ops.cast(value, variable.dtype)) * decay
                return state_ops.assign_sub(variable, update_delta, name=scope)

    def call(self, inputs, training=False):
        training_value = _static_training(training, self)
        input_shape = inputs.shape
        ndims = len(input_shape)
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        broadcast_shape = [1] * ndims
        broadcast_shape[self.axis[0]] = dimension_value(input_shape[self.axis[0]])
        epsilon = max(self.epsilon, _FUSED_MIN_EPSILON) if self.fused else self.epsilon

        def _broadcast(v):
            if v is not None and len(v.shape) != ndims and reduction_axes != list(range(ndims - 1)):
                return array_ops.reshape(v, broadcast_shape)
            return v

        scale, offset = _broadcast(self.gamma), _broadcast(self.beta)
        if not training_value:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            keep_dims = len(self.axis) > 1
            mean, variance = nn_ops.moments(math_ops.cast(inputs, self._param_dtype), reduction_axes,
                                            keep_dims=keep_dims)
            update_variance = variance
            if self.fused:
                # TF's fused kernel reports the Bessel-corrected batch variance, which the
                # fused Keras path feeds to the moving average unchanged.
                update_variance = variance * self._bessel_factor(inputs, reduction_axes, variance.dtype)
            self.add_update(lambda: self._assign_moving_average(self.moving_mean, mean, self.momentum))
            self.add_update(lambda: self._assign_moving_average(self.moving_variance, update_variance,
                                                                self.momentum))
        mean = math_ops.cast(mean, inputs.dtype)
        variance = math_ops.cast(variance, inputs.dtype)
        if offset is not None:
            offset = math_ops.cast(offset, inputs.dtype)
        if scale is not None:
            scale = math_ops.cast(scale, inputs.dtype)
        outputs = nn_ops.batch_normalization(inputs, _broadcast(mean), _broadcast(variance), offset, scale, epsilon)
        outputs.set_shape(input_shape)
        return outputs

    @staticmethod
    def _bessel_factor(inputs, reduction_axes, dtype):
        """n / (n - 1) with n the number of values each statistic is computed from."""
        dims = [dimension_value(inputs.shape[i]) for i in reduction_axes]
        if all(d is not None for d in dims):
            n = float(np.prod(dims))
            return n / (n - 1.0) if n > 1 else 1.0
        shape = array_ops.shape(inputs)
        n = math_ops.cast(math_ops.reduce_prod(array_ops.gather(shape, reduction_axes)), dtype)
        return n / (n - 1.0)

    def compute_output_shape(self, input_shape):
        return input_shape


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                        moving_mean_initializer=zeros_initializer(), moving_variance_initializer=ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                        training=False, trainable=True, name=None, reuse=None, renorm=False, renorm_clipping=None,
                        renorm_momentum=0.99, fused=None, virtual_batch_size=None, adjustment=None):
    """tf.layers.batch_normalization (remember to run the UPDATE_OPS when training)."""
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                               beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                               beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
                               renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
                               trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
                               name=name, _reuse=reuse, _scope=name)
    return layer.apply(inputs, training=training)


# Module-level aliases of TF's python/layers modules (not in the tf.layers namespace).
Convolution2D = Conv2D
convolution2d = conv2d
MaxPool2D = MaxPooling2D
AveragePool2D = AveragePooling2D
MaxPool3D = MaxPooling3D
AveragePool3D = AveragePooling3D
MaxPool1D = MaxPooling1D
AveragePool1D = AveragePooling1D
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution1D = SeparableConv1D

EXPORTS = [
    "Layer", "InputSpec", "Dense", "dense", "Dropout", "dropout", "Flatten", "flatten", "Conv2D", "conv2d",
    "Conv1D", "conv1d", "Conv3D", "conv3d", "Conv2DTranspose", "conv2d_transpose", "SeparableConv2D",
    "separable_conv2d", "MaxPooling3D", "max_pooling3d", "AveragePooling3D", "average_pooling3d",
    "MaxPooling2D", "max_pooling2d", "AveragePooling2D", "average_pooling2d", "BatchNormalization",
    "batch_normalization", "Conv3DTranspose", "conv3d_transpose", "SeparableConv1D", "separable_conv1d",
    "MaxPooling1D", "max_pooling1d", "AveragePooling1D", "average_pooling1d",
]
