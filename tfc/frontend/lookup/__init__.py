"""Lookup tables of TF 1.15 (``tf.lookup``, ``tf.lookup.experimental``, ``tf.contrib.lookup``,
``tf.tables_initializer``): ``tables.py`` and ``mutable.py`` build TF's graph nodes,
``kernels.py`` runs them on the host over ``resources.py``'s tables, with TF's kernel
semantics (tables are resources of the session)."""
from __future__ import annotations

import types

from .mutable import DenseHashTable, MutableHashTable
from .tables import (FastHashSpec, HashTable, HasherSpec, IdTableWithHashBuckets,  # noqa: F401
                     InitializableLookupTableBase, InitializableLookupTableBaseV1, KeyValueTensorInitializer,
                     LookupInterface, StaticHashTable, StaticVocabularyTable, StrongHashSpec, TableInitializerBase,
                     TextFileIdTableInitializer, TextFileIndex, TextFileInitializer, TextFileStringTableInitializer,
                     check_table_dtypes, index_table_from_file, index_table_from_tensor,
                     index_to_string_table_from_file, index_to_string_table_from_tensor, initialize_all_tables,
                     tables_initializer)

TF_EXPORTS = {"tables_initializer": tables_initializer, "initialize_all_tables": initialize_all_tables}


def _experimental() -> types.ModuleType:
    import sys

    module = types.ModuleType("tfc.lookup.experimental")
    module.__dict__.update({"DenseHashTable": DenseHashTable, "MutableHashTable": MutableHashTable})
    return sys.modules.setdefault(module.__name__, module)


# tf.lookup of tf.compat.v1 (TF 1.15 exports these; index_table_from_* live in tf.contrib.lookup)
LOOKUP_EXPORTS = {"StaticHashTable": StaticHashTable, "StaticVocabularyTable": StaticVocabularyTable,
                  "KeyValueTensorInitializer": KeyValueTensorInitializer, "TextFileIndex": TextFileIndex,
                  "TextFileInitializer": TextFileInitializer, "experimental": _experimental()}
