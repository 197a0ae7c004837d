"""tf.py_func / tf.numpy_function, string ops and lookup tables as host ops; expected values
and error texts from TensorFlow (2.x's tf.compat.v1 in graph mode, whose kernel messages are
TF 1.15's)."""
import numpy as np
import pytest

import tfc.compat.v1 as tf


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def test_py_func_graph_and_values():
    x = tf.placeholder(tf.float32, [None])
    y = tf.py_func(lambda a: (a * 2).astype(np.float32), [x], tf.float32)
    assert y.op.type == "PyFunc" and y.shape.ndims is None
    assert sorted(y.op.node_def.attr.keys()) == ["Tin", "Tout", "token"]
    assert y.op.get_attr("token").startswith(b"pyfunc_")
    z = tf.numpy_function(lambda a: a + 1, [x], tf.float32)
    assert z.op.type == "PyFunc" and z.op.name == "PyFunc_1"
    s = tf.py_func(lambda a: a, [x], tf.float32, stateful=False)
    assert (s.op.type, s.op.name) == ("PyFuncStateless", "PyFuncStateless")
    pair = tf.py_func(lambda a: [a, a * 3], [x], [tf.float32, tf.float32])
    with tf.Session() as sess:
        got = sess.run([y, y + 1.0, pair], {x: [1, 2]})  # y + 1.0 is compiled, fed by the py_func
    np.testing.assert_array_equal(got[0], np.float32([2, 4]))
    np.testing.assert_array_equal(got[1], np.float32([3, 5]))
    np.testing.assert_array_equal(got[2][1], np.float32([3, 6]))


def test_py_func_errors():
    x = tf.placeholder(tf.float32, [None])
    bad = tf.py_func(lambda a: 1 / 0, [x], tf.float32)
    wrong_type = tf.py_func(lambda a: a.astype(np.float64), [x], tf.float32)
    wrong_count = tf.py_func(lambda a: (a, a), [x], tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnknownError) as e:
            sess.run(bad, {x: [1.]})
        assert e.value.message.startswith("ZeroDivisionError: division by zero\nTraceback (most recent call last):\n\n")
        assert "ret = func(*args)" in e.value.message
        assert e.value.message.endswith("\n\nZeroDivisionError: division by zero\n\n")
        token = wrong_type.op.get_attr("token").decode()
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(wrong_type, {x: [1.]})
        assert e.value.message == f"0-th value returned by {token} is double, but expects float"
        token = wrong_count.op.get_attr("token").decode()
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(wrong_count, {x: [1.]})
        assert e.value.message == f"{token} returns 2 values, but expects to see 1 values."


def test_py_func_after_compiled_op():
    x = tf.placeholder(tf.float32)
    w = tf.py_func(lambda a: a * 2, [x * 3.0], tf.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(w, {x: [1.]}), np.float32([6]))
        np.testing.assert_array_equal(sess.run(w + 1, {x: [1.]}), np.float32([7]))  # a later stage


def test_as_string():
    with tf.Session() as sess:
        got = sess.run([tf.as_string(tf.constant([1.5, 2.0])), tf.as_string(tf.constant([3, 14]), width=4, fill="0"),
                        tf.as_string(tf.constant([1.23456]), precision=2), tf.as_string(tf.constant([True, False])),
                        tf.as_string(tf.constant([1e10, 1e-5, 123456789.0], tf.float64))])
    assert [list(g) for g in got] == [[b"1.500000", b"2.000000"], [b"0003", b"0014"], [b"1.23"], [b"true", b"false"],
                                      [b"10000000000.000000", b"0.000010", b"123456789.000000"]]


def test_string_to_number():
    n = tf.string_to_number(tf.constant(["1.5", "-2"]))
    assert (n.op.type, n.op.name) == ("StringToNumber", "StringToNumber")
    with tf.Session() as sess:
        got = sess.run([n, tf.string_to_number(["7", "12"], out_type=tf.int32),
                        tf.strings.to_number(["3"], out_type=tf.int64), n * 2])
        assert got[0].dtype == np.float32 and list(got[0]) == [1.5, -2.0]
        assert got[1].dtype == np.int32 and list(got[1]) == [7, 12]
        assert got[2].dtype == np.int64 and list(got[2]) == [3]
        assert list(got[3]) == [3.0, -4.0]
        for text, out_type in (("abc", tf.float32), ("1.5", tf.int32)):
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(tf.string_to_number([text], out_type=out_type))
            assert e.value.message == "StringToNumberOp could not correctly convert string: " + text


def test_string_join():
    j = tf.strings.join([tf.constant(["a", "b"]), "x"], separator="-")
    assert j.op.type == "StringJoin"
    with tf.Session() as sess:
        got = sess.run([j, tf.string_join(["p", "q"])])
    assert list(got[0]) == [b"a-x", b"b-x"] and got[1] == b"pq"


def test_static_hash_table():
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)), -1)
    r = table.lookup(tf.constant(["a", "c", "b"]))
    assert (table.resource_handle.op.type, table.resource_handle.op.name) == ("HashTableV2", "hash_table")
    assert (r.op.type, r.op.name) == ("LookupTableFindV2", "hash_table_Lookup/LookupTableFindV2")
    assert table.initializer.type == "LookupTableImportV2"  # TF 1.15's KeyValueTensorInitializer
    init = tf.tables_initializer()
    assert (init.type, init.name) == ("NoOp", "init_all_tables")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(r)
        assert e.value.message == "Table not initialized."
        sess.run(init)
        got = sess.run([r, table.size(), r * 10])
        assert list(got[0]) == [1, -1, 2] and got[1] == 2 and list(got[2]) == [10, -10, 20]
        sess.run(table.initializer)  # the same data again: fine
    with tf.Session() as other:  # tables live in their session
        with pytest.raises(tf.errors.FailedPreconditionError):
            other.run(r)
    floats = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant([1, 2], tf.int64), tf.constant([1.5, 2.5])), -1.0)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert list(sess.run(floats.lookup(tf.constant([2, 5], tf.int64)))) == [2.5, -1.0]
