"""tf.Variable (TF1's RefVariable) and the variable collections and initializers.

A Variable owns four ops, created in TF's order: ``name/initial_value`` (or the given
initial tensor), ``name`` (VariableV2), ``name/Assign`` (its initializer) and
``name/read`` (Identity, the value used when the variable appears in an expression).
"""
from __future__ import annotations

from . import dtypes
from .convert import convert_to_tensor, register_tensor_conversion_function
from .graph import GraphKeys, add_to_collections, colocate_with, get_collection, get_default_graph, init_scope
from .graph import name_scope as _name_scope
from .tensor_shape import unknown_shape
from .trackable import Trackable


class Variable(Trackable):  # Trackable: object-based checkpoints (tfc/frontend/trackable.py)
    """A mutable tensor that lives across session runs."""

    def __new__(cls, *args, **kwargs):
        # Eager mode and defun traces make eager variables (tfc/frontend/eager/variables.py).
        if cls is Variable and _EAGER_VARIABLE_CLASS:
            eager_class = _EAGER_VARIABLE_CLASS[0]()
            if eager_class is not None:
                return object.__new__(eager_class)
        return object.__new__(cls)

    def __init__(self, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        del expected_shape, import_scope, use_resource, synchronization, aggregation
        if variable_def is not None:
            self._init_from_def(variable_def)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if trainable is None:
            trainable = True
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, tuple, or set. Got "
                             f"{collections} of type {type(collections)}")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        init_from_fn = callable(initial_value)
        with init_scope():
            with _name_scope(name, "Variable", [] if init_from_fn else [initial_value]) as scope:
                if init_from_fn:
                    self._create_from_fn(initial_value, scope, dtype, validate_shape, shape)
                else:
                    self._initial_value = convert_to_tensor(initial_value, name="initial_value", dtype=dtype)
                    self._create_variable_op(scope, validate_shape, shape)
                self._create_initializer_and_read(validate_shape, caching_device)
        add_to_collections(collections, self)

    def _create_from_fn(self, initial_value, scope, dtype, validate_shape, shape):
        graph = get_default_graph()
        true_name = scope[:-1]
        with graph._attr_scope({"_class": [f"loc:@{true_name}"]}):
            with graph.name_scope("Initializer"), graph.device(None):
                self._initial_value = convert_to_tensor(initial_value(), name="initial_value", dtype=dtype)
            self._create_variable_op(scope, validate_shape, shape)

    def _create_variable_op(self, scope, validate_shape, shape):
        from .ops.state_ops import variable_op_v2

        var_shape = self._initial_value.shape if validate_shape else unknown_shape()
        if shape is not None:
            var_shape = var_shape.merge_with(shape) if validate_shape else unknown_shape()
        self._variable = variable_op_v2(var_shape, self._initial_value.dtype.base_dtype, name=scope)
        if validate_shape and not self._initial_value.shape.is_fully_defined():
            raise ValueError(f"initial_value must have a shape specified: {self._initial_value}")

    def _create_initializer_and_read(self, validate_shape, caching_device):
        from .ops.array_ops import identity
        from .ops.state_ops import assign

        self._initializer_op = assign(self._variable, self._initial_value, validate_shape=validate_shape).op
        graph = get_default_graph()
        if caching_device is not None:
            with graph.device(caching_device):
                self._snapshot = identity(self._variable, name="read")
        else:
            with colocate_with(self._variable.op):
                self._snapshot = identity(self._variable, name="read")

    def _init_from_def(self, variable_def, import_scope=None):
        """Rebuild a Variable from a VariableDef of an imported graph."""
        graph = get_default_graph()

        def scoped(name):
            return name if not import_scope else f"{import_scope}/{name}"

        self._variable = graph.as_graph_element(scoped(variable_def.variable_name))
        self._initializer_op = graph.as_graph_element(scoped(variable_def.initializer_name))
        self._snapshot = graph.as_graph_element(scoped(variable_def.snapshot_name))
        if variable_def.initial_value_name:
            self._initial_value = graph.as_graph_element(scoped(variable_def.initial_value_name))
        else:
            self._initial_value = None
        self._trainable = getattr(variable_def, "trainable", True)
        self._constraint = None
        self._save_slice_info = None

    # -- identity ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self._variable.shape

    def set_shape(self, shape) -> None:
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    @property
    def graph(self):
        return self._variable.graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    # -- values ---------------------------------------------------------------------------
    def value(self):
        return self._snapshot

    def read_value(self):
        from .ops.array_ops import identity

        return identity(self._variable, name="read")

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def initialized_value(self):
        """The value to initialize another variable with (see README: no tf.cond guard yet)."""
        return self._initial_value

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None) -> None:
        from .graph import get_default_session

        session = session or get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session should be established")
        session.run(self._initializer_op, {self._initial_value: value})

    # -- updates ------------------------------------------------------------------------
    def assign(self, value, use_locking=False, name=None, read_value=True):
        from .ops.state_ops import assign

        result = assign(self._variable, value, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        from .ops.state_ops import assign_add

        result = assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        from .ops.state_ops import assign_sub

        result = assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def to_proto(self, export_scope=None):
        from tfc.protos import VariableDef

        def strip(name):
            if export_scope and name.startswith(export_scope + "/"):
                return name[len(export_scope) + 1:]
            return name

        proto = VariableDef(variable_name=strip(self._variable.name),
                            initializer_name=strip(self._initializer_op.name),
                            snapshot_name=strip(self._snapshot.name), trainable=self._trainable)
        if self._initial_value is not None:
            proto.initial_value_name = strip(self._initial_value.name)
        return proto

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        variable = Variable.__new__(Variable)
        variable._init_from_def(variable_def, import_scope)
        return variable

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __bool__(self):
        raise TypeError("Using a `tf.Variable` as a Python `bool` is not allowed.")

    # Arithmetic, comparisons and slicing act on the variable's value (its 'read' op).
    __array_priority__ = 100


def _install_operator(operator_name: str) -> None:
    def method(self, *args, **kwargs):
        return getattr(self.value(), operator_name)(*args, **kwargs)

    method.__name__ = operator_name
    setattr(Variable, operator_name, method)


for _op_name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                 "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
                 "__neg__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__",
                 "__ror__", "__xor__", "__rxor__", "__invert__", "__matmul__", "__rmatmul__", "__getitem__"):
    _install_operator(_op_name)

VariableV1 = Variable
RefVariable = Variable
_EAGER_VARIABLE_CLASS: list = []  # [function -> the class tf.Variable makes now, or None] once eager is loaded


def _variable_to_tensor(variable, dtype, name, as_ref):
    return variable._ref() if as_ref else variable.value()


register_tensor_conversion_function(Variable, _variable_to_tensor)


# -- collections --------------------------------------------------------------------------
def global_variables(scope=None) -> list:
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope=None) -> list:
    return get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list:
    return get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None) -> list:
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None) -> list:
    return get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """A NoOp (group) running the initializers of ``var_list``."""
    from .ops.control_flow_ops import group, no_op

    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer():
    return variables_initializer(global_variables())


def local_variables_initializer():
    return variables_initializer(local_variables())


initialize_all_variables = global_variables_initializer
initialize_variables = variables_initializer
initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    from .ops.state_ops import is_variable_initialized as is_initialized

    return is_initialized(variable)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """TF 1.15's variables.report_uninitialized_variables: a 1-D string tensor of the names
    of the variables in ``var_list`` (default: global and local) that hold no value yet,
    built as TF does (IsVariableInitialized per variable, ``LogicalNot(stack)``, a Const of
    the names and ``boolean_mask``), on /cpu:0. No variables: an empty string Const."""
    import os

    from .graph import device
    from .ops.concat_ops import stack
    from .ops.constant_op import constant
    from .ops.math_ops import logical_not
    from .ops.state_ops import is_variable_initialized as is_initialized

    if var_list is None:
        var_list = global_variables() + local_variables()
        if not var_list:  # old-style variables
            var_list = [op.outputs[0] for op in get_default_graph().get_operations()
                        if op.type in ("Variable", "VariableV2", "AutoReloadVariable")]
    with _name_scope(name):
        if var_list:
            init_vars = [is_initialized(v) for v in var_list]
        with device(os.environ.get("TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING", "/cpu:0")):
            if not var_list:
                return constant([], dtype=dtypes.string)
            variables_mask = logical_not(stack(init_vars))
            variable_names_tensor = constant([v.op.name for v in var_list])
            return _boolean_mask_1d(variable_names_tensor, variables_mask)


def _boolean_mask_1d(tensor, mask, name="boolean_mask"):
    """TF 1.15's array_ops.boolean_mask for a 1-D tensor and mask (axis 0), with its ops:
    Shape/strided slices, Prod, ConcatV2, Reshape, Where, Squeeze, GatherV2."""
    from .ops.array_ops import reshape, shape, squeeze
    from .ops.concat_ops import concat
    from .ops.math_ops import reduce_prod
    from .ops.selection_ops import gather, where

    with _name_scope(name, values=[tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        leading_size = reduce_prod(shape(tensor)[0:1], [0])
        tensor = reshape(tensor, concat([shape(tensor)[:0], [leading_size], shape(tensor)[1:]], 0))
        mask = reshape(mask, [-1])
        indices = squeeze(where(mask), axis=[1])
        return gather(tensor, indices, axis=0)


TF_EXPORTS = [
    "Variable", "VariableV1", "global_variables", "all_variables", "trainable_variables", "local_variables",
    "model_variables", "moving_average_variables", "variables_initializer", "global_variables_initializer",
    "local_variables_initializer", "initialize_all_variables", "initialize_variables",
    "initialize_local_variables", "is_variable_initialized", "report_uninitialized_variables",
]
