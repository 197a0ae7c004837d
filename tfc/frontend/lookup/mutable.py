"""The mutable lookup tables of TF 1.15 (``tf.lookup.experimental.MutableHashTable`` /
``tf.contrib.lookup.MutableHashTable`` and ``DenseHashTable`` / ``MutableDenseHashTable``):
TF's graph nodes and names, checkpointed through the Saver's SAVEABLE_OBJECTS as TF does."""
from __future__ import annotations

from ..convert import convert_to_tensor
from ..graph import GraphKeys, add_to_collection, colocate_with, name_scope
from ..op_helper import apply_op
from .tables import LookupInterface, _handle_op


def _table_saveable(table, name):
    """The Saver's view of a mutable table: ``name-keys`` and ``name-values`` from its
    export, restored with ``LookupTableImportV2``."""
    from ..saver import SaveableObject, SaveSpec

    class _Saveable(SaveableObject):
        def __init__(self):
            keys, values = table.export()
            super().__init__(table, [SaveSpec(keys, "", name + "-keys"), SaveSpec(values, "", name + "-values")],
                             name)

        def restore(self, restored_tensors, restored_shapes, name=None):
            with name_scope(name, f"{self.name}_table_restore"):
                with colocate_with(self.op.resource_handle):
                    return apply_op("LookupTableImportV2", [self.op.resource_handle, restored_tensors[0],
                                                            restored_tensors[1]])

    return _Saveable()


class _MutableTable(LookupInterface):
    def _finish(self, checkpoint, name):
        self._resource_handle = self._create_resource()
        if checkpoint:
            add_to_collection(GraphKeys.SAVEABLE_OBJECTS, _table_saveable(self, name))

    @property
    def name(self):
        return self._table_name

    def size(self, name=None):
        with name_scope(name, f"{self.name}_Size", [self.resource_handle]):
            with colocate_with(self.resource_handle):
                return apply_op("LookupTableSizeV2", [self.resource_handle]).outputs[0]

    def lookup(self, keys, name=None):
        """The values of ``keys`` (``default_value`` for keys not in the table)."""
        with name_scope(name, f"{self.name}_lookup_table_find", (self.resource_handle, keys, self._default_value)):
            keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
            with colocate_with(self.resource_handle):
                return apply_op("LookupTableFindV2", [self.resource_handle, keys, self._default_value]).outputs[0]

    def insert(self, keys, values, name=None):
        """An op that associates ``keys`` with ``values``."""
        with name_scope(name, f"{self.name}_lookup_table_insert", [self.resource_handle, keys, values]):
            keys = convert_to_tensor(keys, self._key_dtype, name="keys")
            values = convert_to_tensor(values, self._value_dtype, name="values")
            with colocate_with(self.resource_handle):
                return apply_op("LookupTableInsertV2", [self.resource_handle, keys, values])

    def remove(self, keys, name=None):
        """An op that removes ``keys`` (absent keys are ignored)."""
        if keys.dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
        with name_scope(name, f"{self.name}_lookup_table_remove", (self.resource_handle, keys, self._default_value)):
            return apply_op("LookupTableRemoveV2", [self.resource_handle, keys])

    def export(self, name=None):
        """(keys, values): every entry of the table."""
        with name_scope(name, f"{self.name}_lookup_table_export_values", [self.resource_handle]):
            with colocate_with(self.resource_handle):
                keys, values = apply_op("LookupTableExportV2", [self.resource_handle],
                                        {"Tkeys": self._key_dtype, "Tvalues": self._value_dtype}).outputs
        return keys, values


class MutableHashTable(_MutableTable):
    """A mutable hash table (``MutableHashTableV2``; ``MutableHashTableOfTensorsV2`` when the
    default value is not a scalar): ``insert``, ``remove``, ``lookup``, ``export``, ``size``.
    With ``checkpoint`` a Saver saves and restores its contents."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable", checkpoint=True):
        self._default_value = convert_to_tensor(default_value, dtype=value_dtype)
        self._value_shape = self._default_value.get_shape()
        self._checkpoint = checkpoint
        self._name = name
        self._shared_name = None
        super().__init__(key_dtype, value_dtype)
        self._finish(checkpoint, name)

    def _create_resource(self):
        # A checkpointed table is shared by node name (for multi-worker training), as in TF.
        attrs = {"shared_name": self._shared_name or "", "use_node_name_sharing": self._checkpoint,
                 "key_dtype": self._key_dtype, "value_dtype": self._value_dtype}
        if self._default_value.get_shape().ndims == 0:
            handle = _handle_op("MutableHashTableV2", self._name, attrs)
        else:
            attrs["value_shape"] = self._default_value.get_shape()
            handle = _handle_op("MutableHashTableOfTensorsV2", self._name, attrs)
        self._table_name = handle.op.name.split("/")[-1]
        return handle


class DenseHashTable(_MutableTable):
    """A mutable hash table over bucket arrays (``MutableDenseHashTableV2``): ``empty_key``
    and ``deleted_key`` mark free and removed buckets and may not be used as keys."""

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key, initial_num_buckets=None,
                 name="MutableDenseHashTable", checkpoint=True):
        self._default_value = convert_to_tensor(default_value, dtype=value_dtype, name="default_value")
        self._initial_num_buckets = initial_num_buckets
        self._value_shape = self._default_value.get_shape()
        self._checkpoint = checkpoint
        self._name = name
        self._empty_key = convert_to_tensor(empty_key, dtype=key_dtype, name="empty_key")
        self._deleted_key = convert_to_tensor(deleted_key, dtype=key_dtype, name="deleted_key")
        self._shared_name = None
        super().__init__(key_dtype, value_dtype)
        self._finish(checkpoint, name)

    def _create_resource(self):
        attrs = {"shared_name": self._shared_name or "", "use_node_name_sharing": self._checkpoint,
                 "value_dtype": self._value_dtype, "value_shape": self._value_shape}
        if self._initial_num_buckets is not None:
            attrs["initial_num_buckets"] = self._initial_num_buckets
        handle = _handle_op("MutableDenseHashTableV2", self._name, attrs, [self._empty_key, self._deleted_key])
        self._table_name = handle.op.name.split("/")[-1]
        return handle

    def lookup(self, keys, name=None):
        with name_scope(name, f"{self.name}_lookup_table_find", [self.resource_handle, keys]):
            keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
            with colocate_with(self.resource_handle):
                return apply_op("LookupTableFindV2", [self.resource_handle, keys, self._default_value]).outputs[0]

    def insert_or_assign(self, keys, values, name=None):
        return self.insert(keys, values, name)

    def erase(self, keys, name=None):
        return self.remove(keys, name)

