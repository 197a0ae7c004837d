"""tf.data for TF1 graph mode and eager mode, and the TFRecord / tf.train.Example utilities around it.

Modules, one concern each:

- ``structure``: element nests (tuples and dicts are structure, lists are leaves) and specs;
- ``dataset``: ``tf.data.Dataset`` (graph building: TF's dataset ops and attrs);
- ``dataset_ops``: those ops as host ops building the run-time pipeline;
- ``pipeline``, ``batching``, ``shuffle``, ``prefetch``, ``mapping``: the pipeline at run
  time, Python objects over numpy arrays handing out chunks of elements (``batching``
  also makes ``window``'s datasets; ``mapping`` runs ``interleave`` on a thread pool);
- ``file_cache``: ``cache(filename)``, the cache on disk in TF's tensor-bundle layout;
- ``functions``, ``vectorize``: user functions traced once into graphs, run by tfc's
  compiler per element or rewritten for a whole chunk;
- ``iterator``: ``tf.data.Iterator`` and the iterator ops (state kept per session);
- ``eager``: datasets built while executing eagerly (their ops run at once) and their
  iterators handing out EagerTensors;
- ``reduce``: ``Dataset.reduce`` (a ``ReduceDataset`` host op);
- ``readers``, ``records``: text, TFRecord and fixed-length record files;
- ``parsing``: ``parse_single_example`` / ``parse_example`` / ``decode_raw``.

``EXPORTS`` is ``tf.data``; the other lists are gathered by tfc/_api.py.
"""
from __future__ import annotations

import types

from . import dataset_ops, iterator, parsing, readers, records, reduce  # noqa: F401 - registers the ops
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from .iterator import (Iterator, get_output_classes, get_output_shapes, get_output_types,
                       make_initializable_iterator, make_one_shot_iterator)
from .readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset


def _unbatch():
    return lambda dataset: dataset.unbatch()


def _map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                   num_parallel_calls=None):
    return lambda dataset: dataset.map(map_func, num_parallel_calls).batch(batch_size, drop_remainder)


def _shuffle_and_repeat(buffer_size, count=None, seed=None):
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def _parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False, buffer_output_elements=None,
                         prefetch_input_elements=None):
    """``tf.data.experimental.parallel_interleave``: ``cycle_length`` input elements' datasets
    read in parallel, ``block_length`` elements from each in turn (``sloppy``: in the order
    they are ready)."""
    return lambda dataset: dataset._parallel_interleave(map_func, cycle_length, block_length, sloppy,
                                                        buffer_output_elements, prefetch_input_elements)


_experimental = types.ModuleType("tfc.data.experimental", "tf.data.experimental (the few names tfc has).")
_experimental.__dict__.update(AUTOTUNE=AUTOTUNE, INFINITE_CARDINALITY=INFINITE_CARDINALITY,
                              UNKNOWN_CARDINALITY=UNKNOWN_CARDINALITY, unbatch=_unbatch,
                              map_and_batch=_map_and_batch, shuffle_and_repeat=_shuffle_and_repeat,
                              parallel_interleave=_parallel_interleave)

EXPORTS = {
    "Dataset": Dataset, "Iterator": Iterator, "TextLineDataset": TextLineDataset,
    "TFRecordDataset": TFRecordDataset, "FixedLengthRecordDataset": FixedLengthRecordDataset,
    "make_one_shot_iterator": make_one_shot_iterator, "make_initializable_iterator": make_initializable_iterator,
    "get_output_types": get_output_types, "get_output_shapes": get_output_shapes,
    "get_output_classes": get_output_classes, "AUTOTUNE": AUTOTUNE, "INFINITE_CARDINALITY": INFINITE_CARDINALITY,
    "UNKNOWN_CARDINALITY": UNKNOWN_CARDINALITY, "experimental": _experimental,
}

# tf.io / tf.python_io / tf.* / tf.train names (added by tfc/_api.py's "tf.data (graph mode)" block)
PYTHON_IO_EXPORTS = {
    "TFRecordWriter": records.TFRecordWriter, "TFRecordOptions": records.TFRecordOptions,
    "TFRecordCompressionType": records.TFRecordCompressionType, "tf_record_iterator": records.tf_record_iterator,
}
IO_EXPORTS = dict(PYTHON_IO_EXPORTS, FixedLenFeature=parsing.FixedLenFeature, VarLenFeature=parsing.VarLenFeature,
                  FixedLenSequenceFeature=parsing.FixedLenSequenceFeature, parse_example=parsing.parse_example,
                  parse_single_example=parsing.parse_single_example, decode_raw=parsing.decode_raw)
TF_EXPORTS = {"FixedLenFeature": parsing.FixedLenFeature, "VarLenFeature": parsing.VarLenFeature,
              "FixedLenSequenceFeature": parsing.FixedLenSequenceFeature, "parse_example": parsing.parse_example,
              "parse_single_example": parsing.parse_single_example, "decode_raw": parsing.decode_raw}


def train_exports() -> dict:
    """tf.train.Example and its feature protos."""
    from tfc.protos import example_pb2, feature_pb2

    return {"Example": example_pb2.Example, "SequenceExample": example_pb2.SequenceExample,
            "Features": feature_pb2.Features, "Feature": feature_pb2.Feature, "FeatureList": feature_pb2.FeatureList,
            "FeatureLists": feature_pb2.FeatureLists, "BytesList": feature_pb2.BytesList,
            "FloatList": feature_pb2.FloatList, "Int64List": feature_pb2.Int64List}
