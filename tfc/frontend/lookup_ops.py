"""tf.lookup.StaticHashTable, KeyValueTensorInitializer and tf.tables_initializer (TF 1.15),
as host ops: ``HashTableV2`` (the table's handle), ``InitializeTableV2``,
``LookupTableFindV2`` and ``LookupTableSizeV2`` run in Python around the compiled program
(``tfc/runtime/host.py``); each session keeps its own tables (keyed by the HashTableV2 op),
as a TF session keeps its resources. A lookup whose keys are fed or constant runs before
the program and its values may feed compiled ops."""
from __future__ import annotations

import weakref

import numpy as np

from . import dtypes, errors
from .convert import convert_to_tensor
from .graph import GraphKeys, add_to_collection, get_collection, get_default_graph, name_scope
from .registry import Attr, OpType, register
from .tensor_shape import TensorShape

_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # session -> {HashTableV2 op: dict}
_NO_SESSION: dict = {}


def _tables() -> dict:
    from tfc.runtime.host import current_session

    session = current_session()
    return _NO_SESSION if session is None else _TABLES.setdefault(session, {})


def _key(value):
    return value if isinstance(value, bytes) else value.item() if hasattr(value, "item") else value


def _handle_op(op):
    return op.inputs[0].op


@register
class HashTableV2(OpType):
    """A hash table's handle (its contents live in the session)."""

    inputs = []
    outputs = ["table_handle: resource"]
    attrs = {"container": Attr("string", ""), "shared_name": Attr("string", ""),
             "use_node_name_sharing": Attr("bool", False), "key_dtype": Attr("type"), "value_dtype": Attr("type")}
    host_only = True
    stateful = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    def host(op):
        return [np.array(op.name.encode(), dtype=object)]


@register
class InitializeTableV2(OpType):
    """Fills a table with keys and values (once; TF's InitializableLookupTable::Initialize)."""

    inputs = ["table_handle: resource", "keys: Tkey", "values: Tval"]
    outputs = []
    attrs = {"Tkey": Attr("type"), "Tval": Attr("type")}
    host_only = True
    stateful = True
    not_differentiable = True

    def infer(op):
        return []

    def host(op, handle, keys, values):
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.shape != values.shape:
            raise errors.InvalidArgumentError(None, op, "Expected shape " + _shape_text(keys.shape)
                                              + " for value, got " + _shape_text(values.shape))
        entries = {_key(k): v for k, v in zip(keys.reshape(-1), values.reshape(-1))}
        tables = _tables()
        table_op = _handle_op(op)
        if table_op in tables:
            old = tables[table_op]
            if len(old) != len(entries) or any(k not in old or old[k] != v for k, v in entries.items()):
                raise errors.FailedPreconditionError(None, op, "Table was already initialized with different data.")
            return []
        tables[table_op] = entries
        return []


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _table(op):
    table = _tables().get(_handle_op(op))
    if table is None:
        raise errors.FailedPreconditionError(None, op, "Table not initialized.")
    return table


@register
class LookupTableFindV2(OpType):
    """Values of ``keys`` (``default_value`` for missing keys)."""

    inputs = ["table_handle: resource", "keys: Tin", "default_value: Tout"]
    outputs = ["values: Tout"]
    attrs = {"Tin": Attr("type"), "Tout": Attr("type")}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [op.inputs[1].shape]

    def host(op, handle, keys, default_value):
        table = _table(op)
        keys = np.asarray(keys)
        default = np.asarray(default_value)
        out_type = dtypes.as_dtype(op._attrs["Tout"]).base_dtype
        out = np.empty(keys.shape, dtype=object if out_type == dtypes.string else out_type.as_numpy_dtype)
        fallback = default.reshape(-1)[0]
        for index, k in np.ndenumerate(keys):
            out[index] = table.get(_key(k), fallback)
        return [out]


@register
class LookupTableSizeV2(OpType):
    """The number of entries of a table."""

    inputs = ["table_handle: resource"]
    outputs = ["size: int64"]
    attrs = {}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    def host(op, handle):
        return [np.array(len(_table(op)), dtype=np.int64)]


class KeyValueTensorInitializer:
    """Table initializer from key and value tensors."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with name_scope(name, "key_value_init", (keys, values)) as scope:
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
            self._name = scope
        self.key_dtype = self._keys.dtype.base_dtype
        self.value_dtype = self._values.dtype.base_dtype

    def initialize(self, table):
        with name_scope(self._name, values=(table.resource_handle, self._keys, self._values)) as scope:
            op = get_default_graph().create_op(
                "InitializeTableV2", [table.resource_handle, self._keys, self._values], name=scope,
                attrs={"Tkey": self.key_dtype, "Tval": self.value_dtype})
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class StaticHashTable:
    """An immutable hash table, filled by its initializer (tf.lookup.StaticHashTable)."""

    def __init__(self, initializer, default_value, name=None):
        self._initializer = initializer
        self._key_dtype = initializer.key_dtype
        self._value_dtype = initializer.value_dtype
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        with name_scope(name, "hash_table", (initializer, default_value)) as scope:
            self._name = scope.rstrip("/").split("/")[-1]
            self._resource_handle = get_default_graph().create_op(
                "HashTableV2", [], name=scope,
                attrs={"shared_name": "", "use_node_name_sharing": False, "key_dtype": self._key_dtype,
                       "value_dtype": self._value_dtype}).outputs[0]
        self._init_op = initializer.initialize(self)

    @property
    def resource_handle(self):
        return self._resource_handle

    @property
    def initializer(self):
        return self._init_op

    @property
    def init(self):
        return self._init_op

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype

    @property
    def default_value(self):
        return self._default_value

    @property
    def name(self):
        return self._name

    def size(self, name=None):
        with name_scope(name, f"{self.name}_Size", [self.resource_handle]):
            return get_default_graph().create_op("LookupTableSizeV2", [self.resource_handle],
                                                 name="LookupTableSizeV2").outputs[0]

    def lookup(self, keys, name=None):
        keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys") if not hasattr(keys, "op") else keys
        if keys.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
        with name_scope(name, f"{self.name}_Lookup", (self.resource_handle, keys, self._default_value)):
            return get_default_graph().create_op(
                "LookupTableFindV2", [self.resource_handle, keys, self._default_value], name="LookupTableFindV2",
                attrs={"Tin": self._key_dtype, "Tout": self._value_dtype}).outputs[0]


def tables_initializer(name="init_all_tables"):
    """An op that initializes every table of the default graph."""
    from .ops.control_flow_ops import group, no_op

    initializers = get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return group(*initializers, name=name)
    return no_op(name=name)


TF_EXPORTS = {"tables_initializer": tables_initializer}
LOOKUP_EXPORTS = {"StaticHashTable": StaticHashTable, "KeyValueTensorInitializer": KeyValueTensorInitializer}
