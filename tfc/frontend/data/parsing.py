"""``tf.parse_single_example`` / ``tf.parse_example`` (and ``tf.io.*``) for
``tf.train.Example`` protos, and ``tf.decode_raw``.

They build TF's graph: ``ParseExampleV2`` under ``ParseSingleExample/ParseExample/`` (or
``ParseExample/``) with its key constants and dense defaults, a host op that parses the
records with the protos of tfc/protos/example.proto. ``FixedLenFeature`` gives dense
tensors, ``VarLenFeature`` a SparseTensor (indices [N, 2] of (record, position) for a
vector of records, [N, 1] for one; dense shape [records, longest list]);
``SparseFeature`` and ``FixedLenSequenceFeature`` raise ``NotImplementedError``. Errors are TF's messages ("Feature: x
(data type: float) is required but could not be found.", "Key: x.  Data types don't
match..."). Inside a ``Dataset.map`` function, a ``ParseExampleV2`` of one record is
vectorised into one op parsing the whole chunk (not one with sparse outputs: tf.data
elements cannot be SparseTensors in tfc).
"""
from __future__ import annotations

import collections
import re

import numpy as np

from .. import dtypes, errors
from ..convert import convert_to_tensor
from ..graph import get_default_graph, name_scope
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape


def _tf_type_name(dtype) -> str:
    """TF's DataTypeString (float, double, int32...)."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A dense feature of a known shape (``default_value`` for a missing one)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A variable-length feature: parsed into a SparseTensor."""


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


_KIND = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}
_TYPE_TEXT = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
_LIST_WORD = {"float_list": "float", "int64_list": "int64", "bytes_list": "bytes"}


def _check_features(features: dict) -> list:
    if not features:
        raise ValueError("Missing: features was {}.")
    keys = sorted(features)
    for key in keys:
        feature = features[key]
        if not isinstance(feature, (FixedLenFeature, VarLenFeature)):
            raise NotImplementedError(f"tfc supports only FixedLenFeature and VarLenFeature in parse_example; "
                                      f"feature '{key}' is a {type(feature).__name__}")
        dtype = dtypes.as_dtype(feature.dtype).base_dtype
        if dtype.name not in _KIND:
            raise ValueError(f"Invalid dtype {dtype!r} for feature {key!r}: only tf.float32, tf.int64 and "
                             "tf.string are supported")
        if isinstance(feature, VarLenFeature):
            continue
        if TensorShape(feature.shape).ndims is None or not TensorShape(feature.shape).is_fully_defined():
            raise ValueError(f"All dense shapes must be fully defined; key {key!r} has shape {feature.shape}")
    return keys


def parse_example(serialized, features, name=None, example_names=None):
    """A dict of dense tensors ``[batch] + shape`` from a vector of serialized Examples."""
    keys = _check_features(features)
    with name_scope(name, "ParseExample", [serialized]):
        return _parse_ops(serialized, features, keys, example_names)


def parse_single_example(serialized, features, name=None, example_names=None):
    """A dict of dense tensors of each feature's shape from one serialized Example."""
    keys = _check_features(features)
    with name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        with name_scope(None, "ParseExample", [serialized]):
            return _parse_ops(serialized, features, keys, example_names)


def _parse_ops(serialized, features, keys, example_names) -> dict:
    from ..ops.array_ops import reshape
    from ..sparse_tensor import SparseTensor

    graph = get_default_graph()
    serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
    sparse_keys = [key for key in keys if isinstance(features[key], VarLenFeature)]
    sparse_types = [dtypes.as_dtype(features[key].dtype).base_dtype for key in sparse_keys]
    keys = [key for key in keys if not isinstance(features[key], VarLenFeature)]
    types = [dtypes.as_dtype(features[key].dtype).base_dtype for key in keys]
    shapes = [TensorShape(features[key].shape) for key in keys]
    defaults = [None] * len(keys)
    for i, key in enumerate(keys):  # TF makes the given defaults first, then the empty ones
        if features[key].default_value is not None:
            default = convert_to_tensor(features[key].default_value, dtype=types[i],
                                        name="key_" + re.sub(r"[^A-Za-z0-9_.\-/]", "_", key))
            defaults[i] = reshape(default, shapes[i].as_list())
    for i, dtype in enumerate(types):
        if defaults[i] is None:
            empty = np.zeros([0], dtype=object if dtype == dtypes.string else dtype.as_numpy_dtype)
            defaults[i] = convert_to_tensor(empty, dtype=dtype, name="Const")
    with name_scope("ParseExampleV2") as scope:
        empty = np.zeros([0], dtype=object)
        names = convert_to_tensor(empty if example_names is None else np.asarray(example_names, dtype=object),
                                  dtype=dtypes.string, name="names")
        sparse_keys_t = convert_to_tensor(np.array(sparse_keys, dtype=object), dtype=dtypes.string,
                                          name="sparse_keys")
        dense_keys = convert_to_tensor(np.array(keys, dtype=object), dtype=dtypes.string, name="dense_keys")
        ragged_keys = convert_to_tensor(empty, dtype=dtypes.string, name="ragged_keys")
        op = graph.create_op("ParseExampleV2", [serialized, names, sparse_keys_t, dense_keys, ragged_keys] + defaults,
                             name=scope, attrs={"Tdense": types, "num_sparse": len(sparse_keys),
                                                "sparse_types": sparse_types, "ragged_value_types": [],
                                                "ragged_split_types": [], "dense_shapes": shapes})
    n = len(sparse_keys)
    outputs = list(op.outputs)
    sparse = [SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i]) for i in range(n)]
    return dict(zip(sparse_keys + keys, sparse + outputs[3 * n:]))


@register
class ParseExampleV2(OpType):
    """Dense features of serialized Examples (a scalar or a vector of records)."""

    inputs = ["serialized: string", "names: string", "sparse_keys: string", "dense_keys: string",
              "ragged_keys: string", "dense_defaults: Tdense"]
    outputs = ["sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
               "sparse_shapes: num_sparse * int64", "dense_values: Tdense",
               "ragged_values: ragged_value_types", "ragged_row_splits: ragged_split_types"]
    attrs = {"Tdense": Attr("list(type)"), "num_sparse": Attr("int", 0), "sparse_types": Attr("list(type)", []),
             "ragged_value_types": Attr("list(type)", []), "ragged_split_types": Attr("list(type)", []),
             "dense_shapes": Attr("list(shape)")}
    host_only = True
    not_differentiable = True

    def infer(op):
        batch = op.inputs[0].shape
        n = op._attrs["num_sparse"]
        width = None if batch.ndims is None else batch.ndims + 1
        sparse = [TensorShape([None, width])] * n + [TensorShape([None])] * n + [TensorShape([width])] * n
        if batch.ndims is None:
            return sparse + [TensorShape(None) for _ in op._attrs["dense_shapes"]]
        return sparse + [batch.concatenate(shape) for shape in op._attrs["dense_shapes"]]

    def host(op, serialized, names, sparse_keys, dense_keys, ragged_keys, *defaults):
        return parse_sparse_records(op, serialized, sparse_keys) + parse_records(op, serialized, dense_keys, defaults)


def parse_records(op, serialized, dense_keys, defaults) -> list:
    """The dense outputs of ParseExampleV2 for a scalar or a vector of records."""
    from google.protobuf.message import DecodeError

    from tfc.protos.example_pb2 import Example

    records = np.asarray(serialized, dtype=object)
    batch = records.ndim > 0
    flat = records.reshape(-1)
    keys = [k.decode() if isinstance(k, bytes) else str(k) for k in np.asarray(dense_keys, dtype=object).reshape(-1)]
    types = op._attrs["Tdense"]
    shapes = [tuple(s.as_list()) for s in op._attrs["dense_shapes"]]
    outputs = [np.empty((len(flat),) + shape, dtype=object if t == dtypes.string else t.as_numpy_dtype)
               for t, shape in zip(types, shapes)]
    for index, record in enumerate(flat):
        try:
            example = Example.FromString(bytes(record))
        except (DecodeError, TypeError):
            raise errors.InvalidArgumentError(None, op, f"Could not parse example input, value: '{_raw(record)}'") \
                from None
        feature_map = example.features.feature
        for k, key in enumerate(keys):
            kind = _KIND[types[k].name]
            feature = feature_map[key] if key in feature_map else None
            actual = feature.WhichOneof("kind") if feature is not None else None
            size = int(np.prod(shapes[k], dtype=np.int64))
            if actual is None:
                default = np.asarray(defaults[k])
                if default.size == 0:
                    prefix = "Name: <unknown>, " if batch else ""
                    raise errors.InvalidArgumentError(None, op, f"{prefix}Feature: {key} (data type: "
                                                                f"{_TYPE_TEXT[kind]}) is required but could not be "
                                                                "found.")
                outputs[k][index] = default.reshape(shapes[k])
                continue
            where = f"Name: <unknown>, Key: {key}, Index: {index}." if batch else f"Key: {key}."
            if actual != kind:
                raise errors.InvalidArgumentError(None, op, f"{where}  Data types don't match. Data type: "
                                                            f"{_TYPE_TEXT[actual]} but expected type: "
                                                            f"{_TYPE_TEXT[kind]}")
            values = getattr(feature, actual).value
            if len(values) != size:
                if not batch:
                    detail = "Parsing bytes_list failed." if kind == "bytes_list" else \
                        f"Some {kind} slice was not parsed."
                    raise errors.InvalidArgumentError(None, op, f"{where}  Can't parse serialized Example: {detail}")
                if kind == "bytes_list":
                    raise errors.InvalidArgumentError(None, op, f"{where}  Can't parse serialized Example.")
                raise errors.InvalidArgumentError(
                    None, op, f"{where}  Number of {_LIST_WORD[kind]} values != expected.  Values size: {len(values)} "
                              f"but output shape: [{','.join(str(d) for d in shapes[k])}]")
            if kind == "bytes_list":
                target = outputs[k][index].reshape(-1) if shapes[k] else None
                if target is None:
                    outputs[k][index] = bytes(values[0])
                else:
                    for j, v in enumerate(values):
                        target[j] = bytes(v)
            else:
                outputs[k][index] = np.asarray(values, dtype=outputs[k].dtype).reshape(shapes[k])
    return [out if batch else out[0, ...] for out in outputs]


def parse_sparse_records(op, serialized, sparse_keys) -> list:
    """ParseExampleV2's sparse outputs (indices per key, then values, then dense shapes) for
    a scalar or a vector of records: each VarLenFeature's values, in record order."""
    from google.protobuf.message import DecodeError

    from tfc.protos.example_pb2 import Example

    records = np.asarray(serialized, dtype=object)
    batch = records.ndim > 0
    flat = records.reshape(-1)
    keys = [k.decode() if isinstance(k, bytes) else str(k) for k in np.asarray(sparse_keys, dtype=object).reshape(-1)]
    if not keys:
        return []
    types = op._attrs["sparse_types"]
    indices, values, shapes = [], [], []
    examples = []
    for record in flat:
        try:
            examples.append(Example.FromString(bytes(record)))
        except (DecodeError, TypeError):
            raise errors.InvalidArgumentError(None, op, f"Could not parse example input, value: '{_raw(record)}'") \
                from None
    for k, key in enumerate(keys):
        kind = _KIND[types[k].name]
        rows, items, longest = [], [], 0
        for index, example in enumerate(examples):
            feature_map = example.features.feature
            feature = feature_map[key] if key in feature_map else None
            actual = feature.WhichOneof("kind") if feature is not None else None
            if actual is None:
                continue
            if actual != kind:
                where = f"Name: <unknown>, Key: {key}, Index: {index}." if batch else f"Key: {key}."
                raise errors.InvalidArgumentError(None, op, f"{where}  Data types don't match. Data type: "
                                                            f"{_TYPE_TEXT[actual]} but expected type: "
                                                            f"{_TYPE_TEXT[kind]}")
            found = list(getattr(feature, actual).value)
            longest = max(longest, len(found))
            rows.extend([index, j] if batch else [j] for j in range(len(found)))
            items.extend(bytes(v) if kind == "bytes_list" else v for v in found)
        width = 2 if batch else 1
        indices.append(np.array(rows, dtype=np.int64).reshape(-1, width))
        if kind == "bytes_list":
            array = np.empty(len(items), dtype=object)
            array[:] = items
        else:
            array = np.array(items, dtype=types[k].as_numpy_dtype).reshape(-1)
        values.append(array)
        shapes.append(np.array([len(flat), longest] if batch else [longest], dtype=np.int64))
    return indices + values + shapes


def _raw(record) -> str:
    data = bytes(record) if isinstance(record, (bytes, bytearray)) else str(record).encode()
    return data.decode("latin-1")


# -- decode_raw ----------------------------------------------------------------------------------
def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """tf.decode_raw: the bytes of each string reinterpreted as ``out_type`` values."""
    if input_bytes is None:
        input_bytes = bytes
    input_bytes = convert_to_tensor(input_bytes, dtype=dtypes.string)
    graph = get_default_graph()
    with graph.as_default():
        return graph.create_op("DecodeRaw", [input_bytes], name=name or "DecodeRaw",
                               attrs={"out_type": dtypes.as_dtype(out_type), "little_endian": little_endian}).outputs[0]


@register
class DecodeRaw(OpType):
    inputs = ["bytes: string"]
    outputs = ["output: out_type"]
    attrs = {"out_type": Attr("type"), "little_endian": Attr("bool", True)}
    host_only = True
    not_differentiable = True

    def infer(op):
        shape = op.inputs[0].shape
        return [shape.concatenate([None]) if shape.ndims is not None else TensorShape(None)]

    def host(op, strings):
        out_type = op._attrs["out_type"]
        dtype = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if op._attrs["little_endian"] else ">")
        strings = np.asarray(strings, dtype=object)
        flat = strings.reshape(-1)
        decoded = [np.frombuffer(s, dtype=dtype) if len(s) % dtype.itemsize == 0 else None for s in flat]
        for s, d in zip(flat, decoded):
            if d is None:
                raise errors.InvalidArgumentError(None, op, "Input to DecodeRaw has length "
                                                            f"{len(s)} that is not a multiple of {dtype.itemsize}, "
                                                            "the size of " + _tf_type_name(out_type))
        for i, s in enumerate(flat):  # TF's kernel: the first string's size, then each one's
            if len(s) != len(flat[0]):
                raise errors.InvalidArgumentError(None, op, "DecodeRaw requires input strings to all be the same "
                                                            f"size, but element {i} has size {len(flat[0])} != "
                                                            f"{len(s)}")
        sizes = {d.size for d in decoded}
        width = sizes.pop() if sizes else 0
        out = np.stack(decoded).astype(out_type.as_numpy_dtype) if decoded else \
            np.zeros((0, 0), out_type.as_numpy_dtype)
        return [out.reshape(strings.shape + (width,))]
