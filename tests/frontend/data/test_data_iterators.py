"""Iterators: one-shot, initializable (re-initialised with a new feed), from_structure +
make_initializer, feedable (string handles), the graph they build, End of sequence,
per-session state, and what closing a session does."""
import threading

import numpy as np
import pytest

import tfc.compat.v1 as tf


def test_one_shot_iterator_graph_and_end_of_sequence():
    with tf.Graph().as_default() as graph:
        dataset = tf.data.Dataset.range(3)
        iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
        element = iterator.get_next()
        assert [(op.name, op.type) for op in graph.get_operations()[-3:]] == [
            ("OneShotIterator", "OneShotIterator"), ("IteratorToStringHandle", "IteratorToStringHandle"),
            ("IteratorGetNext", "IteratorGetNext")]
        assert element.name == "IteratorGetNext:0" and element.dtype == tf.int64 and element.shape.as_list() == []
        with tf.Session() as sess:
            assert [sess.run(element) for _ in range(3)] == [0, 1, 2]
            for _ in range(2):  # stays exhausted
                with pytest.raises(tf.errors.OutOfRangeError) as info:
                    sess.run(element)
                assert info.value.message == "End of sequence"
                assert info.value.op.name == "IteratorGetNext"
        with tf.Session() as sess:  # a new session: a new pass
            assert sess.run(element) == 0


def test_initializable_iterator_reinitialised_with_a_new_feed():
    with tf.Graph().as_default():
        data = tf.placeholder(tf.float32, [None, 2])
        labels = tf.placeholder(tf.int64, [None])
        dataset = tf.data.Dataset.from_tensor_slices((data, labels)).batch(2)
        iterator = dataset.make_initializable_iterator()
        x, y = iterator.get_next()
        assert iterator.initializer.type == "MakeIterator" and iterator.initializer.name == "MakeIterator"
        assert x.shape.as_list() == [None, 2] and y.shape.as_list() == [None]
        total = tf.reduce_sum(x) + tf.cast(tf.reduce_sum(y), tf.float32)  # compiled ops consume the element
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="iterator has not been initialized"):
                sess.run(x)
            sess.run(iterator.initializer, {data: np.ones((3, 2)), labels: [1, 2, 3]})
            assert sess.run(total) == 4 + 3
            assert sess.run(total) == 2 + 3
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(total)
            sess.run(iterator.initializer, {data: np.full((4, 2), 2.0), labels: [0, 0, 0, 0]})
            assert sess.run(total) == 8
            sess.run(iterator.initializer, {data: np.zeros((1, 2)), labels: [5]})  # restart mid-pass
            assert sess.run(total) == 5
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(x)


def test_from_structure_and_make_initializer_switch_datasets():
    with tf.Graph().as_default() as graph:
        train = tf.data.Dataset.range(10).batch(4)
        test = tf.data.Dataset.range(100, 103).batch(2)
        iterator = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        element = iterator.get_next()
        train_init = iterator.make_initializer(train)
        test_init = iterator.make_initializer(test, name="test_init")
        assert train_init.name == "make_initializer" and test_init.name == "test_init"
        assert graph.get_operation_by_name("IteratorV2").type == "IteratorV2"
        assert tf.data.get_output_types(iterator) == tf.int64
        assert tf.data.get_output_shapes(iterator).as_list() == [None]
        assert tf.data.get_output_classes(iterator) is tf.Tensor
        with tf.Session() as sess:
            sess.run(train_init)
            assert sess.run(element).tolist() == [0, 1, 2, 3]
            sess.run(test_init)
            assert sess.run(element).tolist() == [100, 101]
            assert sess.run(element).tolist() == [102]
            sess.run(train_init)
            assert sess.run(element).tolist() == [0, 1, 2, 3]


def test_feedable_iterator_string_handles():
    with tf.Graph().as_default():
        a = tf.data.Dataset.range(3)
        b = tf.data.Dataset.range(10, 20)
        handle = tf.placeholder(tf.string, shape=[])
        iterator = tf.data.Iterator.from_string_handle(handle, a.output_types, a.output_shapes)
        element = iterator.get_next()
        one_shot = a.make_one_shot_iterator()
        initializable = b.make_initializable_iterator()
        with tf.Session() as sess:
            h1 = sess.run(one_shot.string_handle())
            h2 = sess.run(initializable.string_handle())
            assert isinstance(h1, bytes) and h1 != h2
            sess.run(initializable.initializer)
            assert sess.run(element, {handle: h1}) == 0
            assert sess.run(element, {handle: h2}) == 10
            assert sess.run(element, {handle: h1}) == 1  # each iterator keeps its position
            assert sess.run(one_shot.get_next()) == 2
            assert sess.run(element, {handle: h2}) == 11
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(element, {handle: b"not a handle"})


def test_iterators_are_per_session():
    with tf.Graph().as_default():
        element = tf.data.Dataset.range(5).make_one_shot_iterator().get_next()
        first, second = tf.Session(), tf.Session()
        assert [first.run(element), first.run(element)] == [0, 1]
        assert second.run(element) == 0
        assert first.run(element) == 2
        first.close()
        second.close()


def test_structures_of_elements():
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_tensor_slices({"a": np.arange(4), "b": (np.ones((4, 3)), np.arange(4.0))})
        assert dataset.output_types == {"a": tf.int64, "b": (tf.float64, tf.float64)}
        assert dataset.output_shapes["b"][0].as_list() == [3]
        assert tf.data.get_output_classes(dataset) == {"a": tf.Tensor, "b": (tf.Tensor, tf.Tensor)}
        element = dataset.batch(3, drop_remainder=True).make_one_shot_iterator().get_next()
        assert element["b"][0].shape.as_list() == [3, 3]
        with tf.Session() as sess:
            value = sess.run(element)
        assert value["a"].tolist() == [0, 1, 2] and value["b"][1].tolist() == [0.0, 1.0, 2.0]
        assert "shapes: " in repr(dataset) and "types: " in repr(dataset)


def test_one_shot_iterator_refuses_placeholders_and_variables():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        with pytest.raises(ValueError, match=r"Cannot capture a stateful object \(name:Variable"):
            tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32) * v).make_one_shot_iterator()


def test_map_capturing_a_placeholder_reads_it_at_initialization():
    with tf.Graph().as_default():
        scale = tf.placeholder(tf.int64, [])
        iterator = tf.data.Dataset.range(3).map(lambda x: x * scale).make_initializable_iterator()
        element = iterator.get_next()
        with tf.Session() as sess:
            sess.run(iterator.initializer, {scale: 10})
            assert [sess.run(element) for _ in range(2)] == [0, 10]
            sess.run(iterator.initializer, {scale: -1})
            assert [sess.run(element) for _ in range(3)] == [0, -1, -2]


def test_dataset_of_computed_tensors():
    """Dataset arguments computed by compiled ops (the initializer runs after the program)."""
    with tf.Graph().as_default():
        values = tf.range(6) * 2
        iterator = tf.data.Dataset.from_tensor_slices(values).batch(4).make_initializable_iterator()
        element = iterator.get_next()
        one_shot = tf.data.Dataset.from_tensors(tf.constant([1.0, 2.0]) * 3.0).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            sess.run(iterator.initializer)
            assert sess.run(element).tolist() == [0, 2, 4, 6]
            assert sess.run(one_shot).tolist() == [3.0, 6.0]


def test_closing_the_session_stops_prefetch_threads():
    def produce():
        for i in range(10**6):
            yield i

    with tf.Graph().as_default():
        element = tf.data.Dataset.from_generator(produce, tf.int64).prefetch(2).make_one_shot_iterator().get_next()
        before = {t.ident for t in threading.enumerate()}
        sess = tf.Session()
        assert sess.run(element) == 0
        threads = [t for t in threading.enumerate() if t.name == "tfc-data-prefetch" and t.ident not in before]
        assert threads
        sess.close()
        for thread in threads:
            thread.join(timeout=5)
            assert not thread.is_alive()


def test_graph_mode_iteration_is_refused():
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="only supported inside of tf.function or when eager"):
            iter(tf.data.Dataset.range(3))
