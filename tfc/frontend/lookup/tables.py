"""The lookup tables of TF 1.15's python/ops/lookup_ops.py (``tf.lookup``,
``tf.contrib.lookup``): the initializable tables, their initializers, out-of-vocabulary
buckets and the ``index_table_from_*`` / ``index_to_string_table_from_*`` helpers, with the
same classes, graph nodes, names and Python-side errors (the mutable tables are in
``mutable.py``). The ops they create run on the host (``kernels.py``)."""
from __future__ import annotations

import collections
import functools
import uuid

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import GraphKeys, Tensor, add_to_collection, get_collection, get_default_graph, init_scope, name_scope
from ..op_helper import apply_op
from ..tensor_shape import TensorShape
from . import kernels  # noqa: F401  (registers the ops)


def _is_sparse(value) -> bool:
    return all(hasattr(value, a) for a in ("indices", "values", "dense_shape")) and not isinstance(value, Tensor)


def _in_control_flow() -> bool:
    return get_default_graph()._get_control_flow_context() is not None


def check_table_dtypes(table, key_dtype, value_dtype):
    """TypeError unless the dtypes are the table's."""
    if key_dtype.base_dtype != table.key_dtype:
        raise TypeError(f"Invalid key dtype, expected {table.key_dtype} but got {key_dtype}.")
    if value_dtype.base_dtype != table.value_dtype:
        raise TypeError(f"Invalid value dtype, expected {table.value_dtype} but got {value_dtype}.")


def tables_initializer(name="init_all_tables"):
    """An op that initializes every table of the default graph (a NoOp when there is none)."""
    from ..ops.control_flow_ops import group, no_op

    initializers = get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return group(*initializers, name=name)
    return no_op(name=name)


def initialize_all_tables(name="init_all_tables"):
    """Deprecated alias of tables_initializer."""
    return tables_initializer(name)


# =====================================================================================
# Tables
# =====================================================================================
class LookupInterface:
    """A lookup table that persists across steps (its contents live in the session)."""

    def __init__(self, key_dtype, value_dtype):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)
        self._resource_handle = None

    def _create_resource(self):
        raise NotImplementedError

    @property
    def resource_handle(self):
        return self._resource_handle

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype

    @property
    def name(self):
        return NotImplementedError

    def size(self, name=None):
        raise NotImplementedError

    def lookup(self, keys, name=None):
        raise NotImplementedError


def _handle_op(op_type, name, attrs, inputs=()):
    return apply_op(op_type, list(inputs), attrs, name).outputs[0]


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by its initializer (a ``TableInitializerBase``)."""

    def __init__(self, default_value, initializer):
        super().__init__(initializer.key_dtype, initializer.value_dtype)
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        self._default_value.get_shape().merge_with(TensorShape([]))
        self._initializer = initializer
        with init_scope():
            self._resource_handle = self._create_resource()
        if _in_control_flow():
            with init_scope():
                self._init_op = self._initialize()
        else:
            self._init_op = self._initialize()

    def _initialize(self):
        return self._initializer.initialize(self)

    @property
    def default_value(self):
        return self._default_value

    def size(self, name=None):
        with name_scope(name, f"{self.name}_Size", [self.resource_handle]):
            return apply_op("LookupTableSizeV2", [self.resource_handle]).outputs[0]

    def lookup(self, keys, name=None):
        """The values of ``keys`` (``default_value`` where a key is missing); a SparseTensor's
        values are looked up and a SparseTensor comes back."""
        key_tensor = keys.values if _is_sparse(keys) else keys
        if not _is_sparse(keys) and not isinstance(keys, Tensor):
            key_tensor = keys = convert_to_tensor(keys, dtype=self._key_dtype)
        if keys.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
        with name_scope(name, f"{self.name}_Lookup", (self.resource_handle, key_tensor, self._default_value)):
            values = apply_op("LookupTableFindV2", [self.resource_handle, key_tensor, self._default_value]).outputs[0]
        values.set_shape(key_tensor.get_shape())
        if _is_sparse(keys):
            return type(keys)(keys.indices, values, keys.dense_shape)
        return values


class InitializableLookupTableBaseV1(InitializableLookupTableBase):
    @property
    def initializer(self):
        return self._init_op


class StaticHashTable(InitializableLookupTableBaseV1):
    """An immutable hash table filled by its initializer (tf.lookup.StaticHashTable of
    tf.compat.v1: run ``table.initializer`` or ``tf.tables_initializer()`` first)."""

    def __init__(self, initializer, default_value, name=None):
        self._initializer = initializer
        self._default_value = default_value
        self._shared_name = initializer._shared_name
        if not self._shared_name:
            # TF: a shared name, so that every kernel of the table finds the same resource.
            self._shared_name = f"hash_table_{uuid.uuid4()}"
        self._name = name or "hash_table"
        self._table_name = None
        super().__init__(default_value, initializer)
        self._value_shape = self._default_value.get_shape()

    def _create_resource(self):
        handle = _handle_op("HashTableV2", self._name, {
            "shared_name": self._shared_name, "key_dtype": self._initializer.key_dtype,
            "value_dtype": self._initializer.value_dtype})
        self._table_name = handle.op.name.split("/")[-1]
        return handle

    @property
    def name(self):
        return self._table_name

    def export(self, name=None):
        """(keys, values): every entry of the table."""
        with name_scope(name, f"{self.name}_Export", [self.resource_handle]):
            keys, values = apply_op("LookupTableExportV2", [self.resource_handle],
                                    {"Tkeys": self._key_dtype, "Tvalues": self._value_dtype}).outputs
        values.set_shape(keys.get_shape().concatenate(self._value_shape))
        return keys, values


class HashTable(StaticHashTable):
    """TF1's name of StaticHashTable (``table.init`` is its initializer)."""

    @property
    def init(self):
        return self.initializer


# =====================================================================================
# Initializers
# =====================================================================================
class TableInitializerBase:
    """What fills a table: ``initialize(table)`` returns the op that does it."""

    def __init__(self, key_dtype, value_dtype):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)

    @property
    def key_dtype(self):
        return self._key_dtype

    @property
    def value_dtype(self):
        return self._value_dtype

    def initialize(self, table):
        raise NotImplementedError

    @property
    def _shared_name(self):
        return ""


class KeyValueTensorInitializer(TableInitializerBase):
    """Fills a table with ``keys`` and ``values`` (a ``LookupTableImportV2`` op, as TF 1.15 makes)."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        if _in_control_flow():
            with init_scope():
                self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
                self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        else:
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        self._name = name if name is not None else "key_value_init"
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table):
        check_table_dtypes(table, self._keys.dtype, self._values.dtype)
        with name_scope(self._name, values=(table.resource_handle, self._keys, self._values)):
            init_op = apply_op("LookupTableImportV2", [table.resource_handle, self._keys, self._values])
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, init_op)
        return init_op


class TextFileIndex:
    """What a text file's line gives a table: ``WHOLE_LINE`` (-2), ``LINE_NUMBER`` (-1) or a
    column index (>= 0)."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


def _asset_path(filename):
    """TF's trackable Asset: a string filename becomes a Const named ``asset_path``."""
    if isinstance(filename, Tensor):
        return filename
    with init_scope():
        return convert_to_tensor(filename, dtype=dtypes.string, name="asset_path")


class TextFileInitializer(TableInitializerBase):
    """Fills a table from a text file, one entry per line (``InitializeTableFromTextFileV2``):
    the key and the value are each a column (split on ``delimiter``), the whole line
    (``TextFileIndex.WHOLE_LINE``) or the line number (``TextFileIndex.LINE_NUMBER``, int64)."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        if not isinstance(filename, Tensor) and not filename:
            raise ValueError(f"Filename required for {name}.")
        self._filename_arg = filename
        key_dtype = dtypes.as_dtype(key_dtype)
        value_dtype = dtypes.as_dtype(value_dtype)
        if key_index < -2:
            raise ValueError(f"Invalid key index {key_index}.")
        if key_index == TextFileIndex.LINE_NUMBER and key_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Keys must be dtype {dtypes.int64}, got {key_dtype}.")
        if key_index == TextFileIndex.WHOLE_LINE and not key_dtype.is_integer and key_dtype != dtypes.string:
            raise ValueError(f"Signature mismatch. Keys must be integer or string, got {key_dtype}.")
        if value_index < -2:
            raise ValueError(f"Invalid value index {value_index}.")
        if value_index == TextFileIndex.LINE_NUMBER and value_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.int64}, got {value_dtype}.")
        if value_index == TextFileIndex.WHOLE_LINE and value_dtype != dtypes.string:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.string}, got {value_dtype}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._key_index = key_index
        self._value_index = value_index
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._offset = value_index_offset
        self._name = name
        self._filename = _asset_path(filename)
        super().__init__(key_dtype, value_dtype)

    def initialize(self, table):
        check_table_dtypes(table, self.key_dtype, self.value_dtype)
        with name_scope(self._name, "text_file_init", (table.resource_handle,)):
            filename = convert_to_tensor(self._filename, dtypes.string, name="asset_filepath")
            init_op = apply_op("InitializeTableFromTextFileV2", [table.resource_handle, filename], {
                "key_index": self._key_index, "value_index": self._value_index,
                "vocab_size": -1 if self._vocab_size is None else self._vocab_size, "delimiter": self._delimiter,
                "offset": self._offset})
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, init_op)
        if filename.op.type == "Const":  # a placeholder filename is no asset
            add_to_collection(GraphKeys.ASSET_FILEPATHS, filename)
        return init_op

    @property
    def _shared_name(self):
        # <table_type>_<filename>_<vocab_size>_<key_index>_<value_index>, as TF: tables
        # from the same file share one resource.
        if self._vocab_size:
            return f"hash_table_{self._filename_arg}_{self._vocab_size}_{self._key_index}_{self._value_index}"
        return f"hash_table_{self._filename_arg}_{self._key_index}_{self._value_index}"


class TextFileStringTableInitializer(TextFileInitializer):
    """int64 ids to strings from a text file (keys: line numbers, values: whole lines)."""

    def __init__(self, filename, key_column_index=TextFileIndex.LINE_NUMBER,
                 value_column_index=TextFileIndex.WHOLE_LINE, vocab_size=None, delimiter="\t",
                 name="text_file_string_table_init"):
        super().__init__(filename, dtypes.int64, key_column_index, dtypes.string, value_column_index,
                         vocab_size=vocab_size, delimiter=delimiter, name=name)


class TextFileIdTableInitializer(TextFileInitializer):
    """Strings to int64 ids from a text file (keys: whole lines, values: line numbers)."""

    def __init__(self, filename, key_column_index=TextFileIndex.WHOLE_LINE,
                 value_column_index=TextFileIndex.LINE_NUMBER, vocab_size=None, delimiter="\t",
                 name="text_file_id_table_init", key_dtype=dtypes.string):
        super().__init__(filename, key_dtype, key_column_index, dtypes.int64, value_column_index,
                         vocab_size=vocab_size, delimiter=delimiter, name=name)


# =====================================================================================
# Out-of-vocabulary buckets
# =====================================================================================
class HasherSpec(collections.namedtuple("HasherSpec", ["hasher", "key"])):
    """The hash function of out-of-vocabulary buckets ("fasthash", "stronghash", "legacy")."""

    __slots__ = ()


FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """The keyed strong hash (SipHash) with ``key``: two unsigned integers."""

    __slots__ = ()

    def __new__(cls, key):
        if len(key) != 2:
            raise ValueError(f"key must have size 2, got {len(key)}.")
        if not isinstance(key[0], int) or not isinstance(key[1], int):
            raise TypeError(f"Invalid key {key}. Must be unsigned integer values.")
        return super(cls, StrongHashSpec).__new__(cls, "stronghash", key)


def _as_string(tensor):
    if tensor.dtype.base_dtype == dtypes.string:
        return tensor
    from ..ops.string_ops import as_string

    return as_string(tensor)


def _hash_bucket_fn(hasher_spec):
    from ..ops import string_hash_ops

    if not isinstance(hasher_spec, HasherSpec):
        raise TypeError(f"hasher_spec must be of type HasherSpec {hasher_spec}")
    if hasher_spec.hasher == "fasthash":
        return string_hash_ops.string_to_hash_bucket_fast
    if hasher_spec.hasher == "legacy":
        return string_hash_ops.string_to_hash_bucket
    if hasher_spec.hasher == "stronghash":
        return functools.partial(string_hash_ops.string_to_hash_bucket_strong, key=hasher_spec.key)
    raise ValueError(f"Unknown hasher {hasher_spec.hasher}")


def _lookup_with_buckets(table, keys, num_oov_buckets, hash_fn, name, scope_name):
    """``table``'s ids of ``keys``, a hash bucket past the vocabulary for the others."""
    from ..ops.math_ops import add, cast, not_equal
    from ..ops.selection_ops import where_v2

    values = keys.values if _is_sparse(keys) else keys
    if table is not None and table.key_dtype.base_dtype == dtypes.int64:
        values = cast(values, dtypes.int64)
    if table is not None and not num_oov_buckets:
        ids = table.lookup(values, name=name)
    else:
        with name_scope(name, scope_name):
            buckets = hash_fn(_as_string(values), num_buckets=num_oov_buckets, name="hash_bucket")
            if table is not None:
                ids = table.lookup(values)
                buckets = add(buckets, table.size())
                is_id_non_default = not_equal(ids, table.default_value)
                ids = where_v2(is_id_non_default, ids, buckets)
            else:
                ids = buckets
    if _is_sparse(keys):
        return type(keys)(keys.indices, ids, keys.dense_shape)
    return ids


class _TableWithOovBuckets(LookupInterface):
    """A table (or none) whose missing keys go to ``num_oov_buckets`` hash buckets after it:
    IdTableWithHashBuckets and StaticVocabularyTable (``_hash_fn``: the bucket function)."""

    @property
    def initializer(self):
        if self._table is not None:
            return self._table._init_op
        from ..ops.control_flow_ops import no_op

        with name_scope(None, "init"):
            return no_op()

    @property
    def init(self):
        return self.initializer

    @property
    def name(self):
        return self._table_name

    def size(self, name=None):
        with name_scope(name, f"{self.name}_Size"):
            tsize = self._table.size() if self._table else convert_to_tensor(0, dtype=dtypes.int64)
            return tsize + self._num_oov_buckets

    def lookup(self, keys, name=None):
        if not _is_sparse(keys) and not isinstance(keys, Tensor):
            keys = convert_to_tensor(keys, dtype=self._key_dtype)
        if keys.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
        return _lookup_with_buckets(self._table, keys, self._num_oov_buckets, self._hash_fn(), name,
                                    f"{self.name}_Lookup")


class IdTableWithHashBuckets(_TableWithOovBuckets):
    """A string (or integer) to id table that sends out-of-vocabulary keys to
    ``num_oov_buckets`` buckets after the vocabulary: ``hash(key) % num_oov_buckets + size``."""

    def __init__(self, table, num_oov_buckets, hasher_spec=FastHashSpec, name=None, key_dtype=None):
        if name:
            name = name.rstrip("/")
        if table:
            if key_dtype is None:
                key_dtype = table.key_dtype
            supported = (dtypes.int64, dtypes.string)
            if table.key_dtype not in supported:
                raise TypeError(f"Invalid key dtype, expected one of {supported}, but got {key_dtype}.")
            if table.key_dtype.is_integer != key_dtype.is_integer:
                raise TypeError(f"Invalid key dtype, expected {'integer' if key_dtype.is_integer else 'non-integer'} "
                                f"but got {table.key_dtype}.")
            if table.value_dtype != dtypes.int64:
                raise TypeError(f"Invalid value dtype, expected {dtypes.int64} but got {table.value_dtype}.")
            self._table = table
            name = name or self._table.name
        else:
            if num_oov_buckets <= 0:
                raise ValueError("oov_buckets must be > 0 if no table is supplied.")
            key_dtype = dtypes.string if key_dtype is None else key_dtype
            self._table = None
            name = name or "hash_bucket"
        key_dtype = dtypes.as_dtype(key_dtype)
        if not key_dtype.is_integer and key_dtype != dtypes.string:
            raise TypeError(f"Invalid key_dtype, expected integer or string, got {key_dtype}.")
        self._num_oov_buckets = num_oov_buckets
        if not isinstance(hasher_spec, HasherSpec):
            raise TypeError(f"hasher_spec must be of type HasherSpec, got {hasher_spec}")
        self._hasher_spec = hasher_spec
        self._table_name = name.split("/")[-1] if name else None
        super().__init__(key_dtype, dtypes.int64)
        self._resource_handle = self._table.resource_handle if self._table is not None else None

    def _hash_fn(self):
        return _hash_bucket_fn(self._hasher_spec)


class StaticVocabularyTable(_TableWithOovBuckets):
    """A string (or integer) to id table whose out-of-vocabulary keys go to
    ``num_oov_buckets`` Fingerprint64 buckets after the vocabulary (tf.lookup of tf.compat.v1)."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        if num_oov_buckets <= 0:
            raise ValueError("oov_buckets must be > 0.")
        if name:
            name = name.rstrip("/")
        if initializer:
            if lookup_key_dtype is None:
                lookup_key_dtype = initializer.key_dtype
            supported = (dtypes.int64, dtypes.string)
            if initializer.key_dtype not in supported:
                raise TypeError(f"Invalid key dtype, expected one of {supported}, but got {initializer.key_dtype}.")
            if initializer.key_dtype.is_integer != lookup_key_dtype.is_integer:
                raise TypeError("Invalid key dtype, expected "
                                f"{'integer' if lookup_key_dtype.is_integer else 'non-integer'} but got "
                                f"{initializer.key_dtype}.")
            if initializer.value_dtype != dtypes.int64:
                raise TypeError(f"Invalid value dtype, expected {dtypes.int64} but got {initializer.value_dtype}.")
            self._table = HashTable(initializer, default_value=-1)
            name = name or self._table.name
        else:
            lookup_key_dtype = dtypes.string
            self._table = None
            name = name or "hash_bucket"
        lookup_key_dtype = dtypes.as_dtype(lookup_key_dtype)
        if not lookup_key_dtype.is_integer and lookup_key_dtype != dtypes.string:
            raise TypeError(f"Invalid key_dtype, expected integer or string, got {lookup_key_dtype}.")
        self._num_oov_buckets = num_oov_buckets
        self._table_name = name.split("/")[-1] if name is not None else None
        super().__init__(lookup_key_dtype, dtypes.int64)
        self._resource_handle = self._table.resource_handle if self._table is not None else None

    def _hash_fn(self):
        from ..ops.string_hash_ops import string_to_hash_bucket_fast

        return string_to_hash_bucket_fast


# =====================================================================================
# index_table_from_* / index_to_string_table_from_*
# =====================================================================================
def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None, default_value=-1,
                          hasher_spec=FastHashSpec, key_dtype=dtypes.string, name=None,
                          key_column_index=TextFileIndex.WHOLE_LINE, value_column_index=TextFileIndex.LINE_NUMBER,
                          delimiter="\t"):
    """A table from the lines of ``vocabulary_file`` (key: the line, id: its number) to int64
    ids; other keys get ``default_value``, or one of ``num_oov_buckets`` hash buckets."""
    key_dtype = dtypes.as_dtype(key_dtype)
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")
    if vocab_size is not None and vocab_size < 1:
        vocab_file_value = vocabulary_file
        if isinstance(vocabulary_file, Tensor):
            from ..tensor_util import constant_value

            value = constant_value(vocabulary_file)
            vocab_file_value = value if value is not None else "?"
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}. vocabulary_file: {vocab_file_value}")
    if not key_dtype.is_integer and key_dtype.base_dtype != dtypes.string:
        raise TypeError("Only integer and string keys are supported.")
    with name_scope(name, "string_to_index"):
        with name_scope(None, "hash_table"):
            init = TextFileIdTableInitializer(
                vocabulary_file, vocab_size=vocab_size, key_dtype=dtypes.int64 if key_dtype.is_integer else key_dtype,
                name="table_init", key_column_index=key_column_index, value_column_index=value_column_index,
                delimiter=delimiter)
            table = StaticHashTable(init, default_value)
        if num_oov_buckets:
            table = IdTableWithHashBuckets(table, num_oov_buckets=num_oov_buckets, hasher_spec=hasher_spec,
                                           key_dtype=key_dtype)
        return table


def index_table_from_tensor(vocabulary_list, num_oov_buckets=0, default_value=-1, hasher_spec=FastHashSpec,
                            dtype=dtypes.string, name=None):
    """A table from the elements of ``vocabulary_list`` (1-D) to their int64 indices; other
    keys get ``default_value``, or one of ``num_oov_buckets`` hash buckets."""
    from ..ops.array_ops import size
    from ..ops.math_ops import cast
    from ..ops.selection_ops import range as range_

    dtype = dtypes.as_dtype(dtype)
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")
    if not dtype.is_integer and dtype.base_dtype != dtypes.string:
        raise TypeError("Only integer and string keys are supported.")
    with name_scope(name, "string_to_index"):
        keys = convert_to_tensor(vocabulary_list)
        if keys.dtype.is_integer != dtype.is_integer:
            raise ValueError(f"Expected {'integer' if dtype.is_integer else 'non-integer'}, got {keys.dtype}.")
        if not dtype.is_integer and keys.dtype.base_dtype != dtype:
            raise ValueError(f"Expected {dtype}, got {keys.dtype}.")
        num_elements = size(keys)
        values = cast(range_(num_elements), dtypes.int64)
        with name_scope(None, "hash_table"):
            table_keys = cast(keys, dtypes.int64) if keys.dtype.is_integer else keys
            init = KeyValueTensorInitializer(table_keys, values, table_keys.dtype.base_dtype, dtypes.int64,
                                             name="table_init")
            table = StaticHashTable(init, default_value)
        if num_oov_buckets:
            table = IdTableWithHashBuckets(table, num_oov_buckets=num_oov_buckets, hasher_spec=hasher_spec,
                                           key_dtype=dtype)
        return table


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK", name=None,
                                    key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE, delimiter="\t"):
    """A table from int64 line numbers of ``vocabulary_file`` to its lines (``default_value``
    for other ids)."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    with name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(vocabulary_file, vocab_size=vocab_size, name="table_init",
                                              key_column_index=key_column_index,
                                              value_column_index=value_column_index, delimiter=delimiter)
        return StaticHashTable(init, default_value)


def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK", name=None):
    """A table from int64 indices of ``vocabulary_list`` (1-D strings) to its elements."""
    from ..ops.array_ops import size
    from ..ops.math_ops import cast
    from ..ops.selection_ops import range as range_

    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    with name_scope(name, "index_to_string"):
        vocabulary_list = convert_to_tensor(vocabulary_list, dtypes.string)
        num_elements = size(vocabulary_list)
        keys = cast(range_(num_elements), dtypes.int64)
        init = KeyValueTensorInitializer(keys, vocabulary_list, dtypes.int64, dtypes.string, name="table_init")
        return StaticHashTable(init, default_value)
