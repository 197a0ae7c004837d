"""tf.train.Example protos and parse_single_example / parse_example against TensorFlow's
values, graph and messages; decode_raw."""
import numpy as np
import pytest

import tfc.compat.v1 as tf

from conftest import decode_value, load_fixture

RECORDS = load_fixture()["records"]
EXAMPLE = bytes.fromhex(RECORDS["example_hex"])


def _features(spec: dict) -> dict:
    out = {}
    for key, entry in spec.items():
        shape, dtype = entry[0], entry[1]
        default = entry[2] if len(entry) > 2 else None
        out[key] = tf.io.FixedLenFeature(shape, getattr(tf, dtype), default)
    return out


def _check(got: dict, expected: dict):
    assert sorted(got) == sorted(expected)
    for key, entry in expected.items():
        want = decode_value(entry)
        value = np.asarray(got[key], dtype=object if want.dtype == object else None)
        assert value.shape == want.shape, key
        if want.dtype == object:
            assert value.tolist() == want.tolist()
        else:
            assert value.dtype == want.dtype
            np.testing.assert_array_equal(value, want)


def test_example_protos_are_tensorflows():
    example = tf.train.Example.FromString(EXAMPLE)
    assert list(example.features.feature["x"].float_list.value) == [1.5, -2.0]
    assert example.features.feature["k"].WhichOneof("kind") is None
    single = tf.train.Example(features=tf.train.Features(feature={
        "f": tf.train.Feature(float_list=tf.train.FloatList(value=[0.25, 3.0]))}))
    assert single.SerializeToString() == bytes.fromhex(RECORDS["single_feature_example_hex"])
    assert tf.train.Int64List(value=[1]).value[0] == 1 and tf.train.BytesList(value=[b"a"]).value[0] == b"a"


def test_parse_single_example_values_and_graph():
    with tf.Graph().as_default() as graph:
        serialized = tf.placeholder(tf.string, [])
        parsed = tf.parse_single_example(serialized, _features(RECORDS["features"]))
        nodes = [[op.name, op.type] for op in graph.get_operations() if op.name.startswith("ParseSingleExample")]
        assert nodes == RECORDS["parse_single_nodes"]
        assert parsed["m"].shape.as_list() == [2, 1] and parsed["s"].dtype == tf.string
        with tf.Session() as sess:
            _check(sess.run(parsed, {serialized: EXAMPLE}), RECORDS["parse_single"])


def test_parse_example_batch_values():
    with tf.Graph().as_default():
        serialized = tf.placeholder(tf.string, [None])
        parsed = tf.io.parse_example(serialized, _features(RECORDS["features"]))
        assert parsed["x"].shape.as_list() == [None, 2]
        with tf.Session() as sess:
            _check(sess.run(parsed, {serialized: [EXAMPLE, EXAMPLE]}), RECORDS["parse_batch"])


@pytest.mark.parametrize("name", sorted(RECORDS["parse_errors"]))
def test_parse_errors_are_tensorflows(name):
    case = RECORDS["parse_errors"][name]
    value = bytes.fromhex(case["value_hex"]) if "value_hex" in case else EXAMPLE
    with tf.Graph().as_default():
        if case["kind"] == "single":
            serialized = tf.placeholder(tf.string, [])
            parsed = tf.parse_single_example(serialized, _features(case["features"]))
        else:
            serialized = tf.placeholder(tf.string, [None])
            parsed = tf.parse_example(serialized, _features(case["features"]))
            value = [value]
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OpError) as info:
                sess.run(parsed, {serialized: value})
    assert type(info.value).__name__ == case["error"]
    assert info.value.message == case["message"]


def _int64_example(**features) -> bytes:
    feature = {key: tf.train.Feature(int64_list=tf.train.Int64List(value=values)) for key, values in features.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def test_var_len_features_are_sparse_tensors():
    """Values against TensorFlow: tests/frontend/test_sparse_ops.py (parse_var_len)."""
    records = [_int64_example(ids=[1, 2, 3]), _int64_example(other=[0]), _int64_example(ids=[7])]
    with tf.Graph().as_default():
        serialized = tf.placeholder(tf.string, [None])
        parsed = tf.parse_example(serialized, {"ids": tf.VarLenFeature(tf.int64)})["ids"]
        record = tf.placeholder(tf.string, [])
        single = tf.parse_single_example(record, {"ids": tf.io.VarLenFeature(tf.int64)})["ids"]
        assert isinstance(parsed, tf.SparseTensor) and parsed.indices.shape.as_list() == [None, 2]
        assert parsed.dense_shape.shape.as_list() == [2] and single.indices.shape.as_list() == [None, 1]
        with tf.Session() as sess:
            batch, one = sess.run([parsed, single], {serialized: records, record: records[0]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Name: <unknown>, Key: ids, Index: 0.  Data types don't match. Data type: int64 "
                                     "but expected type: float"):
                sess.run(tf.parse_example(serialized, {"ids": tf.VarLenFeature(tf.float32)})["ids"],
                         {serialized: records})
    assert batch.indices.tolist() == [[0, 0], [0, 1], [0, 2], [2, 0]] and batch.values.tolist() == [1, 2, 3, 7]
    assert batch.dense_shape.tolist() == [3, 3]
    assert one.indices.tolist() == [[0], [1], [2]] and one.dense_shape.tolist() == [3]


def test_var_len_features_in_a_dataset_map():
    records = [_int64_example(ids=[1, 2]), _int64_example(ids=[3]), _int64_example(ids=[4, 5, 6])]
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_tensor_slices(records).batch(2).map(
            lambda r: tf.sparse.to_dense(tf.parse_example(r, {"ids": tf.VarLenFeature(tf.int64)})["ids"]))
        element = dataset.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert sess.run(element).tolist() == [[1, 2], [3, 0]]
            assert sess.run(element).tolist() == [[4, 5, 6]]
        with pytest.raises(NotImplementedError, match="does not support SparseTensor elements"):
            tf.data.Dataset.from_tensor_slices(records).map(
                lambda r: tf.parse_single_example(r, {"ids": tf.VarLenFeature(tf.int64)}))


def test_other_features_are_refused_clearly():
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="only FixedLenFeature and VarLenFeature"):
            tf.parse_single_example(tf.constant(EXAMPLE), {"x": tf.io.FixedLenSequenceFeature([], tf.float32)})


def test_decode_raw():
    with tf.Graph().as_default():
        data = tf.placeholder(tf.string, [None])
        decoded = tf.decode_raw(data, tf.int16)
        big = tf.io.decode_raw(data, tf.uint16, little_endian=False)
        assert decoded.shape.as_list() == [None, None]
        with tf.Session() as sess:
            raw = [np.array([1, -2], np.int16).tobytes(), np.array([3, 4], np.int16).tobytes()]
            assert sess.run(decoded, {data: raw}).tolist() == [[1, -2], [3, 4]]
            assert sess.run(big, {data: [b"\x01\x02"]}).tolist() == [[258]]
            with pytest.raises(tf.errors.InvalidArgumentError, match="not a multiple of 2"):
                sess.run(decoded, {data: [b"abc"]})
