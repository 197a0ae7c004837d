"""``tf.contrib.lookup`` of TF 1.15 (contrib/lookup/lookup_ops.py): the lookup tables of
``tf.lookup`` plus ``index_table_from_tensor(mapping, ...)``, ``index_to_string_table_from_tensor``,
``string_to_index``, ``index_to_string``, ``HashTable`` (no shared name by default),
``MutableHashTable`` and ``MutableDenseHashTable``."""
from tfc import _api

_api.build()  # the TF1 namespace (its op registry) first

from tfc.frontend import dtypes as _dtypes  # noqa: E402
from tfc.frontend.convert import convert_to_tensor as _convert_to_tensor  # noqa: E402
from tfc.frontend.graph import name_scope as _name_scope  # noqa: E402
from tfc.frontend.lookup import mutable as _mutable  # noqa: E402
from tfc.frontend.lookup import tables as _tables  # noqa: E402
from tfc.frontend.lookup.tables import (FastHashSpec, HasherSpec, IdTableWithHashBuckets,  # noqa: E402,F401
                                        InitializableLookupTableBase, InitializableLookupTableBaseV1,
                                        KeyValueTensorInitializer, LookupInterface, StrongHashSpec,
                                        TableInitializerBase, TextFileIdTableInitializer, TextFileIndex,
                                        TextFileInitializer, TextFileStringTableInitializer, index_table_from_file,
                                        index_to_string_table_from_file)
from tfc.frontend.op_helper import apply_op as _apply_op  # noqa: E402

MutableHashTable = _mutable.MutableHashTable
MutableDenseHashTable = _mutable.DenseHashTable


def string_to_index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None, default_value=-1,
                                    hasher_spec=FastHashSpec, name=None):
    """Deprecated: index_table_from_file with string keys."""
    return index_table_from_file(vocabulary_file, num_oov_buckets, vocab_size, default_value, hasher_spec,
                                 key_dtype=_dtypes.string, name=name)


def string_to_index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1, hasher_spec=FastHashSpec,
                                      name=None):
    """Deprecated: index_table_from_tensor of a string ``mapping``."""
    with _name_scope(name, "string_to_index") as scope:
        mapping = _convert_to_tensor(mapping)
    if _dtypes.string != mapping.dtype.base_dtype:
        raise ValueError("string_to_index_table_from_tensor requires string.")
    return index_table_from_tensor(mapping, num_oov_buckets, default_value, hasher_spec, name=scope)


def index_table_from_tensor(mapping, num_oov_buckets=0, default_value=-1, hasher_spec=FastHashSpec,
                            dtype=_dtypes.string, name=None):
    """A table from the elements of ``mapping`` (1-D) to their int64 indices; other keys get
    ``default_value``, or one of ``num_oov_buckets`` hash buckets."""
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return _tables.index_table_from_tensor(vocabulary_list=mapping, num_oov_buckets=num_oov_buckets,
                                           default_value=default_value, hasher_spec=hasher_spec, dtype=dtype,
                                           name=name)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """Deprecated: the int64 indices of ``tensor``'s strings in ``mapping``."""
    table = index_table_from_tensor(mapping=mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def index_to_string_table_from_tensor(mapping, default_value="UNK", name=None):
    """A table from int64 indices of ``mapping`` (1-D strings) to its elements."""
    if mapping is None:
        raise ValueError("mapping must be specified.")
    return _tables.index_to_string_table_from_tensor(vocabulary_list=mapping, default_value=default_value,
                                                     name=name)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """Deprecated: the strings of ``mapping`` at ``tensor``'s int64 indices."""
    table = index_to_string_table_from_tensor(mapping=mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


class HashTable(InitializableLookupTableBaseV1):
    """contrib's HashTable: shared across sessions only under an explicit ``shared_name``."""

    def __init__(self, initializer, default_value, shared_name=None, name=None):
        self._initializer = initializer
        self._default_value = default_value
        self._shared_name = shared_name
        self._name = name or "hash_table"
        self._table_name = None
        super().__init__(default_value, initializer)
        self._value_shape = self._default_value.get_shape()

    def _create_resource(self):
        handle = _apply_op("HashTableV2", [], {"shared_name": self._shared_name or "",
                                               "key_dtype": self._initializer.key_dtype,
                                               "value_dtype": self._initializer.value_dtype}, self._name).outputs[0]
        self._table_name = handle.op.name.split("/")[-1]
        return handle

    @property
    def init(self):
        return self.initializer

    @property
    def name(self):
        return self._table_name

    def export(self, name=None):
        """(keys, values): every entry of the table."""
        with _name_scope(name, f"{self.name}_Export", [self.resource_handle]) as scope:
            keys, values = _apply_op("LookupTableExportV2", [self.resource_handle],
                                     {"Tkeys": self._key_dtype, "Tvalues": self._value_dtype}, scope).outputs
        values.set_shape(keys.get_shape().concatenate(self._value_shape))
        return keys, values
