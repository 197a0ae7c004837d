"""tf.SparseTensor, tf.SparseTensorValue and tf.sparse_placeholder as TensorFlow 2.21's
compat.v1 has them (checked against it): components, static shapes, names, feeding a
SparseTensor in Session.run, fetching one (a SparseTensorValue, in any fetch structure),
eval, tf.convert_to_tensor's refusal, gradients through the values, tf.data's refusal."""
import collections

import numpy as np
import pytest

import tfc.compat.v1 as tf

Pair = collections.namedtuple("Pair", ["a", "b"])


def _assert_value(value, indices, values, dense_shape):
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, indices)
    np.testing.assert_array_equal(value.values, values)
    np.testing.assert_array_equal(value.dense_shape, dense_shape)
    assert value.indices.dtype == np.int64 and value.dense_shape.dtype == np.int64


def test_components_shape_and_text():
    with tf.Graph().as_default() as graph:
        sp = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
        assert [(op.name, op.type) for op in graph.get_operations()] == [
            ("SparseTensor/indices", "Const"), ("SparseTensor/values", "Const"), ("SparseTensor/dense_shape", "Const")]
        assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64 and sp.dtype == tf.float32
        assert sp.shape.as_list() == [3, 4] and sp.get_shape().as_list() == [3, 4]
        assert sp.op is sp.values.op and sp.graph is graph
        assert repr(sp) == ('SparseTensor(indices=Tensor("SparseTensor/indices:0", shape=(2, 2), dtype=int64), '
                            'values=Tensor("SparseTensor/values:0", shape=(2,), dtype=float32), '
                            'dense_shape=Tensor("SparseTensor/dense_shape:0", shape=(2,), dtype=int64))')
        assert tf.is_tensor(sp) and not tf.is_tensor(tf.SparseTensorValue([[0]], [1], [2]))
        assert sp.consumers() == []
        dense = tf.sparse.to_dense(sp)
        assert [op.name for op in sp.consumers()] == ["SparseToDense"] and dense.shape.as_list() == [3, 4]
        assert sp.with_values([7, 8]).values.dtype == tf.int32
        assert tf.sparse.SparseTensor is tf.SparseTensor and tf.sparse.placeholder is tf.sparse_placeholder


def test_partial_shapes_and_set_shape():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(tf.placeholder(tf.int64, [None, 3]), tf.placeholder(tf.float32, [None]),
                             [2, tf.constant(5, tf.int64), 4])
        assert sp.shape.as_list() == [2, 5, 4]
        with pytest.raises(ValueError, match=r"Shapes \(2, 5, 4\) and \(3, \?, \?\) are not compatible"):
            sp.set_shape([3, None, None])
        unknown = tf.SparseTensor(tf.placeholder(tf.int64, [None, 2]), tf.placeholder(tf.float32, [None]),
                                  tf.placeholder(tf.int64, [2]))
        assert unknown.shape.as_list() == [None, None]
        unknown.set_shape([None, 7])
        assert unknown.shape.as_list() == [None, 7]
        with pytest.raises(ValueError, match="must have rank 2"):
            tf.SparseTensor([0, 1], [1.0, 2.0], [2, 2])


def test_convert_to_tensor_refuses_a_sparse_tensor():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
        with pytest.raises(TypeError) as info:
            tf.convert_to_tensor(sp)
        assert str(info.value) == (f"Failed to convert elements of {sp!r} to Tensor. Consider casting elements to a "
                                   "supported type. See https://www.tensorflow.org/api_docs/python/tf/dtypes for "
                                   "supported TF dtypes.")
        with pytest.raises(TypeError, match="Failed to convert elements of SparseTensor"):
            tf.add(sp, 1.0)
        assert tf.convert_to_tensor_or_sparse_tensor(sp) is sp
        converted = tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensorValue([[1]], [2.0], [3]))
        assert isinstance(converted, tf.SparseTensor) and converted.shape.as_list() == [3]


def test_sparse_placeholder_nodes_and_shapes():
    with tf.Graph().as_default() as graph:
        p = tf.sparse_placeholder(tf.float32)
        q = tf.sparse_placeholder(tf.int64, shape=[3, None], name="q")
        r = tf.sparse_placeholder(tf.float32, shape=tf.constant([2, 5], tf.int64))
        assert [(op.name, op.type) for op in graph.get_operations()] == [
            ("Placeholder", "Placeholder"), ("Placeholder_1", "Placeholder"), ("Placeholder_2", "Placeholder"),
            ("q/shape_default", "Const"), ("q/shape", "PlaceholderWithDefault"), ("q/values", "Placeholder"),
            ("q/indices", "Placeholder"), ("Const", "Const"), ("PlaceholderWithDefault", "PlaceholderWithDefault"),
            ("Placeholder_3", "Placeholder"), ("Placeholder_4", "Placeholder")]
        assert p.shape.ndims is None and p.indices.name == "Placeholder_2:0" and p.values.name == "Placeholder_1:0"
        assert q.shape.as_list() == [3, None] and q.indices.shape.as_list() == [None, 2] and q.dtype == tf.int64
        assert r.shape.as_list() == [2, 5] and r.indices.shape.as_list() == [None, 2]
        assert repr(q) == ('SparseTensor(indices=Tensor("q/indices:0", shape=(?, 2), dtype=int64), '
                           'values=Tensor("q/values:0", shape=(?,), dtype=int64), '
                           'dense_shape=Tensor("q/shape:0", shape=(2,), dtype=int64))')
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor"):
                sess.run(tf.sparse.to_dense(p))


def test_feeding_and_fetching_a_sparse_tensor():
    with tf.Graph().as_default():
        q = tf.sparse_placeholder(tf.int64, shape=[3, None], name="q")
        x = tf.SparseTensor([[0, 1]], [3], [2, 2])
        total = tf.sparse.reduce_sum(q) + tf.reduce_sum(q.values)
        with tf.Session() as sess:
            fed = sess.run(q, {q: tf.SparseTensorValue(np.array([[0, 0]]), np.array([4]), np.array([3, 3]))})
            _assert_value(fed, [[0, 0]], [4], [3, 3])
            assert sess.run(total, {q: ([[0, 0], [1, 1]], [4, 5], [3, 3])}) == 18
            assert sess.run(q.values, {q: ([[0, 0], [1, 1]], [4, 5], [3, 3])}).tolist() == [4, 5]
            got = sess.run(Pair(x, [x.values, {"k": x}]))
            assert isinstance(got, Pair) and got.b[0].tolist() == [3]
            _assert_value(got.a, [[0, 1]], [3], [2, 2])
            _assert_value(got.b[1]["k"], [[0, 1]], [3], [2, 2])
            for _ in range(2):  # the run plan of a SparseTensor fetch is kept
                _assert_value(sess.run(x), [[0, 1]], [3], [2, 2])
            assert (tf.SparseTensor, x.indices, x.values, x.dense_shape) in {key[0] for key in sess._run_plans}
            _assert_value(x.eval(), [[0, 1]], [3], [2, 2])
            with pytest.raises(ValueError, match="Cannot feed value of shape \\(\\) for Tensor 'q/indices:0'"):
                sess.run(q.values, {q: np.ones(3)})
            with pytest.raises(TypeError, match="'SparseTensor' object is not iterable"):
                sess.run(q.values, {q: x})


def test_gradients_flow_through_the_values():
    with tf.Graph().as_default():
        values = tf.placeholder(tf.float32, [None])
        sp = tf.SparseTensor(tf.constant([[0, 1], [1, 0]], tf.int64), values, [2, 2])
        weight = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        grad, = tf.gradients(tf.reduce_sum(tf.sparse.to_dense(sp) * weight), [values])
        with tf.Session() as sess:
            assert sess.run(grad, {values: [5.0, 6.0]}).tolist() == [2.0, 3.0]


def test_sparse_ops_take_sparse_tensor_values():
    with tf.Graph().as_default():
        reordered = tf.sparse.reorder(tf.SparseTensorValue([[1], [0]], [1.0, 2.0], [2]))
        assert reordered.shape.as_list() == [2] and reordered.dense_shape.op.type == "Const"
        with pytest.raises(TypeError, match="Input must be a SparseTensor."):
            tf.sparse.reorder([1, 2])
        with tf.Session() as sess:
            _assert_value(sess.run(reordered), [[0], [1]], [2.0, 1.0], [2])


def test_tf_data_refuses_sparse_elements():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
        with pytest.raises(NotImplementedError, match="tfc's tf.data does not support SparseTensor elements yet "
                                                      r"\(a dataset element gave SparseTensor"):
            tf.data.Dataset.from_tensors({"a": sp})
        with pytest.raises(NotImplementedError, match=r"\(a dataset function gave SparseTensor"):
            tf.data.Dataset.range(3).map(lambda x: sp)
        with pytest.raises(NotImplementedError, match=r"gave SparseTensorValue\(indices"):
            tf.data.Dataset.from_tensor_slices(tf.SparseTensorValue([[0, 0]], [1.0], [2, 2]))
