"""tf.string_split (TF1: StringSplit, any character of the delimiter, skip_empty) and
tf.strings.split (TF1: StringSplitV2, Python's str.split with TF's maxsplit rule) as host
ops returning SparseTensors of strings; their values against TensorFlow are in
test_sparse_ops.py (tests/fixtures/sparse_ops.json)."""
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.ops.string_split_ops import _split_any, _split_v2


def _run(sp):
    with tf.Session() as sess:
        value = sess.run(sp)
    return value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()


def test_string_split_graph_and_values():
    with tf.Graph().as_default() as graph:
        sp = tf.string_split(["a b  c", "", "d"])
        assert [(op.name, op.type) for op in graph.get_operations()] == [
            ("StringSplit/Const", "Const"), ("StringSplit/Const_1", "Const"),
            ("StringSplit/StringSplit", "StringSplit")]
        assert sp.shape.as_list() == [None, None] and sp.indices.shape.as_list() == [None, 2]
        assert sp.values.dtype == tf.string
        assert _run(sp) == ([[0, 0], [0, 1], [0, 2], [2, 0]], [b"a", b"b", b"c", b"d"], [3, 3])
        kept = tf.string_split(["a,,b", ""], delimiter=",", skip_empty=False)
        assert _run(kept) == ([[0, 0], [0, 1], [0, 2]], [b"a", b"", b"b"], [2, 3])
        dense = tf.sparse.to_dense(tf.string_split(["x y", "z"]), default_value="")
        with tf.Session() as sess:
            assert sess.run(dense).tolist() == [[b"x", b"y"], [b"z", b""]]
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 0"):
            tf.string_split("a b")


def test_strings_split_graph_and_values():
    with tf.Graph().as_default() as graph:
        sp = tf.strings.split("a  b")
        assert [(op.name, op.type) for op in graph.get_operations()] == [
            ("StringSplit/input", "Const"), ("StringSplit/ExpandDims/dim", "Const"),
            ("StringSplit/ExpandDims", "ExpandDims"), ("StringSplit/Const", "Const"),
            ("StringSplit/StringSplitV2", "StringSplitV2")]
        assert sp.indices.op.get_attr("maxsplit") == -1
        assert _run(sp) == ([[0, 0], [0, 1]], [b"a", b"b"], [1, 2])
        assert _run(tf.strings.split(["1<>2<><>3"], sep="<>")) == ([[0, 0], [0, 1], [0, 2], [0, 3]],
                                                                  [b"1", b"2", b"", b"3"], [1, 4])
        with pytest.raises(NotImplementedError, match="tfc has no RaggedTensor"):
            tf.strings.split(["a b"], result_type="RaggedTensor")
        with pytest.raises(NotImplementedError, match="splits scalars and vectors only"):
            tf.strings.split([["a b"]])


def test_split_rules():
    assert _split_any(b"a\tb c", b" ", True) == [b"a\tb", b"c"]
    assert _split_any(b"", b",", False) == []  # an empty string has no tokens, even kept-empty
    assert _split_any(b"h\xc3\xa9", b"", True) == [b"h", b"\xc3", b"\xa9"]  # bytes, not characters
    assert _split_v2(b" a  b ", b"", -1) == [b"a", b"b"]
    assert _split_v2(b"x", b"", 1) == [b"x", b""]  # TF's kernel: the rest after maxsplit, even empty
    assert _split_v2(b"", b",", -1) == [b""]
    assert _split_v2(b"a,b,c", b",", 1) == [b"a", b"b,c"]
    assert _split_v2(b"a b", b" ", 0) == [b"a b"]
