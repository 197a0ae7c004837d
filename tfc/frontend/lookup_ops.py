"""tf.lookup and tf.tables_initializer: the lookup-table package ``tfc.frontend.lookup``
(TF's python/ops/lookup_ops.py), under the module name the API table imports."""
from .lookup import (LOOKUP_EXPORTS, TF_EXPORTS, DenseHashTable, HashTable, KeyValueTensorInitializer,  # noqa: F401
                     MutableHashTable, StaticHashTable, StaticVocabularyTable, TextFileIndex, TextFileInitializer,
                     index_table_from_file, index_table_from_tensor, index_to_string_table_from_file,
                     index_to_string_table_from_tensor, tables_initializer)
