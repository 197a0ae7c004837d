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


def test_var_len_feature_is_refused_clearly():
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="only FixedLenFeature"):
            tf.parse_single_example(tf.constant(EXAMPLE), {"x": tf.VarLenFeature(tf.float32)})


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
