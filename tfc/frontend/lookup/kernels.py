"""The lookup-table ops of TF 1.15 as host ops (they run in Python around the compiled
program, tfc/runtime/host.py), over the table resources of ``resources.py``.

The op creating a handle (``HashTableV2``, ``MutableHashTableV2``,
``MutableHashTableOfTensorsV2``, ``MutableDenseHashTableV2``) creates its table in the
session that runs the step the first time it runs, and returns the table's resource name
as the handle's value; the ops reading or changing a table (``LookupTableFindV2``,
``LookupTableSizeV2``, ``LookupTableInsertV2``, ``LookupTableRemoveV2``,
``LookupTableExportV2``, ``LookupTableImportV2``, ``InitializeTableV2``,
``InitializeTableFromTextFileV2``) find it by that name, so a handle passed through an
Identity or a graph imported from a GraphDef works too. Names follow TF's sharing rules:
``shared_name`` when set, else the node name with ``use_node_name_sharing``, else a name
private to the node.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, errors
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape
from .resources import (DenseHashTable, HashTable, MutableHashTable, handle_value, register_release, resources,
                        tables_of_handle, text_file_entries, type_name)


# =====================================================================================
# Ops
# =====================================================================================
def _resource_name(op) -> str:
    attrs = op._attrs
    name = attrs.get("shared_name") or ""
    if not name:
        name = op.name if attrs.get("use_node_name_sharing") else f"_{op._id}_{op.name}"
    return (attrs.get("container") or "localhost") + "/" + name


def _create(op, factory):
    """The table named by ``op``'s attrs, created by ``factory()`` if the session has none;
    its handle value is the resource name and the session's number (``handle_value``)."""
    name = _resource_name(op)
    tables = resources()
    table = tables.get(name)
    if table is None:
        tables[name] = factory()
    else:
        key_dtype = dtypes.as_dtype(op._attrs["key_dtype"]).base_dtype
        value_dtype = dtypes.as_dtype(op._attrs["value_dtype"]).base_dtype
        if (key_dtype, value_dtype) != (table.key_dtype, table.value_dtype):
            raise errors.InvalidArgumentError(
                None, op, f"Conflicting key/value dtypes {type_name(key_dtype)}->{type_name(value_dtype)} with "
                          f"{type_name(table.key_dtype)}-{type_name(table.value_dtype)} for table "
                          f"{name.split('/', 1)[1]}")
    return [np.array(handle_value(name), dtype=object)]


def _table(op, handle):
    name, tables = tables_of_handle(np.asarray(handle, dtype=object).reshape(-1)[0])
    table = tables.get(name)
    if table is None:
        raise errors.NotFoundError(None, op, f"Resource {name}/N10tensorflow6lookup15LookupInterfaceE does not exist.")
    return table


def _handle_op(tensor):
    """The op that made a table handle (through Identity), or None."""
    op = tensor.op
    while op.type == "Identity" and op.inputs:
        op = op.inputs[0].op
    return op


def _value_shape(handle_tensor):
    """The table's value shape as the graph knows it (None: unknown)."""
    op = _handle_op(handle_tensor)
    if op.type in ("HashTableV2", "MutableHashTableV2"):
        return TensorShape([])
    if op.type in ("MutableHashTableOfTensorsV2", "MutableDenseHashTableV2"):
        return TensorShape(op._attrs.get("value_shape"))
    return None


def _key_rank(handle_tensor) -> int:
    op = _handle_op(handle_tensor)
    if op.type == "MutableDenseHashTableV2":
        return op.inputs[0].shape.ndims or 0
    return 0


class _TableOp(OpType):
    host_only = True
    stateful = True
    not_differentiable = True


class _HandleOp(_TableOp):
    outputs = ["table_handle: resource"]
    _sharing = {"container": Attr("string", ""), "shared_name": Attr("string", ""),
                "use_node_name_sharing": Attr("bool", False)}

    def infer(op):
        return [TensorShape([])]


@register
class HashTableV2(_HandleOp):
    """A hash table's handle; the table is filled by an initializer op."""

    inputs = []
    attrs = dict(_HandleOp._sharing, key_dtype=Attr("type"), value_dtype=Attr("type"))

    def host(op):
        return _create(op, lambda: HashTable(op._attrs["key_dtype"], op._attrs["value_dtype"]))


@register
class MutableHashTableV2(_HandleOp):
    """A mutable hash table of scalars."""

    inputs = []
    attrs = dict(_HandleOp._sharing, key_dtype=Attr("type"), value_dtype=Attr("type"))

    def host(op):
        return _create(op, lambda: MutableHashTable(op._attrs["key_dtype"], op._attrs["value_dtype"]))


@register
class MutableHashTableOfTensorsV2(_HandleOp):
    """A mutable hash table whose values are tensors of ``value_shape``."""

    inputs = []
    attrs = dict(_HandleOp._sharing, key_dtype=Attr("type"), value_dtype=Attr("type"),
                 value_shape=Attr("shape", TensorShape([])))

    def host(op):
        shape = tuple(op._attrs["value_shape"].as_list())
        return _create(op, lambda: MutableHashTable(op._attrs["key_dtype"], op._attrs["value_dtype"], shape))


@register
class MutableDenseHashTableV2(_HandleOp):
    """A mutable hash table in bucket arrays (open addressing); ``empty_key`` marks free
    buckets and ``deleted_key`` removed ones."""

    inputs = ["empty_key: key_dtype", "deleted_key: key_dtype"]
    attrs = dict(_HandleOp._sharing, key_dtype=Attr("type"), value_dtype=Attr("type"),
                 value_shape=Attr("shape", TensorShape([])), initial_num_buckets=Attr("int", 131072),
                 max_load_factor=Attr("float", 0.8))

    def host(op, empty_key, deleted_key):
        attrs = op._attrs
        return _create(op, lambda: DenseHashTable(
            op, attrs["key_dtype"], attrs["value_dtype"], tuple(attrs["value_shape"].as_list()), empty_key,
            deleted_key, attrs["initial_num_buckets"], attrs["max_load_factor"]))


class _InitOp(_TableOp):
    outputs = []

    def infer(op):
        return []


@register
class LookupTableImportV2(_InitOp):
    """Replaces a table's contents (initializes a HashTable: KeyValueTensorInitializer)."""

    inputs = ["table_handle: resource", "keys: Tin", "values: Tout"]
    attrs = {"Tin": Attr("type"), "Tout": Attr("type")}

    def host(op, handle, keys, values):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tin"], op._attrs["Tout"])
        table.import_values(op, np.asarray(keys), np.asarray(values))
        return []


@register
class InitializeTableV2(_InitOp):
    """Fills a HashTable with keys and values (TF before 1.13's KeyValueTensorInitializer)."""

    inputs = ["table_handle: resource", "keys: Tkey", "values: Tval"]
    attrs = {"Tkey": Attr("type"), "Tval": Attr("type")}

    def host(op, handle, keys, values):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tkey"], op._attrs["Tval"])
        keys, values = np.asarray(keys), np.asarray(values)
        if not isinstance(table, HashTable):
            raise errors.InvalidArgumentError(None, op, "Table is not an initializable lookup table")
        table._check_insert_shapes(op, keys, values)
        table.initialize(op, table._pairs(keys, values), int(keys.size))
        return []


@register
class InitializeTableFromTextFileV2(_InitOp):
    """Fills a HashTable from a text file: one entry per line, key and value each a column
    (``delimiter``-separated, from 0), the whole line (-2) or the line number (-1, plus
    ``offset``)."""

    inputs = ["table_handle: resource", "filename: string"]
    attrs = {"key_index": Attr("int"), "value_index": Attr("int"), "vocab_size": Attr("int", -1),
             "delimiter": Attr("string", "\t"), "offset": Attr("int", 0)}

    def host(op, handle, filename):
        table = _table(op, handle)
        if not isinstance(table, HashTable):
            raise errors.InvalidArgumentError(None, op, "Table is not an initializable lookup table")
        name = np.asarray(filename).reshape(-1)[0]
        name = name.decode() if isinstance(name, bytes) else str(name)
        attrs = op._attrs
        pairs, total = text_file_entries(op, name, table.key_dtype, table.value_dtype, attrs["key_index"],
                                         attrs["value_index"], attrs["vocab_size"], attrs["delimiter"],
                                         attrs.get("offset", 0) or 0)
        try:
            table.initialize(op, pairs, total)
        except errors.FailedPreconditionError:
            if not table.initialized:
                raise  # TF: a file table already initialized is left as it is
        return []


@register
class LookupTableFindV2(_TableOp):
    """The values of ``keys`` (``default_value`` for keys not in the table)."""

    inputs = ["table_handle: resource", "keys: Tin", "default_value: Tout"]
    outputs = ["values: Tout"]
    attrs = {"Tin": Attr("type"), "Tout": Attr("type")}

    def infer(op):
        value_shape = _value_shape(op.inputs[0])
        keys = op.inputs[1].shape
        if value_shape is None or keys.ndims is None:
            return [TensorShape(None)]
        dims = keys.as_list()
        return [TensorShape(dims[:len(dims) - _key_rank(op.inputs[0])] + value_shape.as_list())]

    def host(op, handle, keys, default_value):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tin"], op._attrs["Tout"])
        return [table.find(op, np.asarray(keys), np.asarray(default_value))]


@register
class LookupTableInsertV2(_InitOp):
    """Inserts or updates ``keys`` with ``values`` (mutable tables)."""

    inputs = ["table_handle: resource", "keys: Tin", "values: Tout"]
    attrs = {"Tin": Attr("type"), "Tout": Attr("type")}

    def host(op, handle, keys, values):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tin"], op._attrs["Tout"])
        table.insert(op, np.asarray(keys), np.asarray(values))
        return []


@register
class LookupTableRemoveV2(_InitOp):
    """Removes ``keys`` (absent ones are ignored) from a mutable table."""

    inputs = ["table_handle: resource", "keys: Tin"]
    attrs = {"Tin": Attr("type")}

    def host(op, handle, keys):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tin"])
        table.remove(op, np.asarray(keys))
        return []


@register
class LookupTableSizeV2(_TableOp):
    """The number of entries of a table (0 for a HashTable not initialized yet)."""

    inputs = ["table_handle: resource"]
    outputs = ["size: int64"]
    attrs = {}

    def infer(op):
        return [TensorShape([])]

    def host(op, handle):
        return [np.array(_table(op, handle).size(), dtype=np.int64)]


@register
class LookupTableExportV2(_TableOp):
    """Every key and value of a table."""

    inputs = ["table_handle: resource"]
    outputs = ["keys: Tkeys", "values: Tvalues"]
    attrs = {"Tkeys": Attr("type"), "Tvalues": Attr("type")}

    def infer(op):
        value_shape = _value_shape(op.inputs[0])
        if _handle_op(op.inputs[0]).type == "MutableDenseHashTableV2":
            return [TensorShape(None), TensorShape(None)]
        values = TensorShape(None) if value_shape is None else TensorShape([None] + value_shape.as_list())
        return [TensorShape([None]), values]

    def host(op, handle):
        table = _table(op, handle)
        table.check_dtypes(op, op._attrs["Tkeys"], op._attrs["Tvalues"])
        return list(table.export(op))


register_release()
