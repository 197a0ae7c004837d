"""tf.Session semantics (SPEC-tf1.md section 4) on compiled code."""
from __future__ import annotations

import collections
import gc
import logging
import weakref

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def test_run_returns_numpy_scalars_and_arrays():
    a = tf.constant(3.0)
    b = tf.constant([1, 2], dtype=tf.int64)
    with tf.Session() as sess:
        value, array = sess.run([a, b])
    assert isinstance(value, np.float32) and value == 3.0
    assert isinstance(array, np.ndarray) and array.dtype == np.int64 and array.tolist() == [1, 2]


def test_fetch_structures_come_back_with_the_same_containers():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    total = a + b
    pair = collections.namedtuple("pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"ab": (a, b), "total": total, "nt": pair(a, [b, total]), "name": "add:0"})
    assert out["ab"] == (1.0, 2.0) and isinstance(out["ab"], tuple)
    assert out["total"] == 3.0
    assert isinstance(out["nt"], pair) and out["nt"].x == 1.0 and out["nt"].y == [2.0, 3.0]
    assert out["name"] == 3.0


def test_operations_fetch_as_none_and_run_their_effects():
    v = tf.Variable(1.0, name="v")
    bump = tf.assign_add(v, 2.0).op
    with tf.Session() as sess:
        assert sess.run(tf.global_variables_initializer()) is None
        assert sess.run([bump, "v:0"])[0] is None
        assert sess.run(v) == 3.0
        assert sess.run("init") is None
        assert sess.run(v) == 1.0


def test_feeds_override_any_tensor():
    a = tf.constant(2.0)
    b = a * 3.0
    c = b + 1.0
    with tf.Session() as sess:
        assert sess.run(c) == 7.0
        assert sess.run(c, {b: 10.0}) == 11.0
        assert sess.run(c, {"mul:0": 5.0}) == 6.0
        assert sess.run(b, {b: 4.0}) == 4.0


def test_unfed_placeholder_is_an_invalid_argument_error():
    p = tf.placeholder(tf.float32, [None, 2], name="p")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(p * 2.0)
    assert info.value.message == "You must feed a value for placeholder tensor 'p' with dtype float and shape [?,2]"
    assert info.value.op.name == "p"


def test_feed_of_an_incompatible_shape_is_a_value_error():
    p = tf.placeholder(tf.float32, [None, 2], name="p")
    with tf.Session() as sess:
        with pytest.raises(ValueError) as info:
            sess.run(p, {p: np.zeros((1, 3))})
    assert str(info.value) == "Cannot feed value of shape (1, 3) for Tensor 'p:0', which has shape '(?, 2)'"


def test_feed_values_are_converted_to_the_tensor_dtype():
    p = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess:
        out = sess.run(p * 2, {p: [1.9, 2.2]})
    assert out.dtype == np.int32 and out.tolist() == [2, 4]


def test_feeding_a_tensor_value_is_a_type_error():
    p = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="The value of a feed cannot be a tf.Tensor object"):
            sess.run(p, {p: tf.constant(1.0)})


def test_uninitialized_variable_is_a_failed_precondition():
    v = tf.Variable(1.0)
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError) as info:
            sess.run(v + 1.0)
    assert info.value.message == "Attempting to use uninitialized value Variable"


def test_closed_session_is_a_runtime_error():
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
        sess.run(tf.constant(1.0))


def test_fetch_from_another_graph_is_a_value_error():
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor.*is not an element of this graph"):
            sess.run(foreign)


def test_bad_fetches():
    tf.constant(1.0, name="c")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Fetch argument None has invalid type <class 'NoneType'>"):
            sess.run(None)
        with pytest.raises(ValueError, match="The name 'nope:0' refers to a Tensor which does not exist"):
            sess.run("nope:0")
        with pytest.raises(TypeError, match="has invalid type"):
            sess.run(3)


def test_eval_and_run_use_the_default_session():
    v = tf.Variable([1.0, 2.0])
    a = tf.constant([3.0, 3.0])
    sub = tf.subtract(v, a)
    with tf.Session():
        v.initializer.run()
        assert sub.eval().tolist() == [-2.0, -1.0]
    with pytest.raises(ValueError, match="No default session is registered"):
        sub.eval()


def test_interactive_session_is_default_until_closed():
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert tf.constant(2.0).eval() == 2.0
        with pytest.raises(AssertionError, match="Do not use tf.reset_default_graph"):
            tf.reset_default_graph()
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_a_new_batch_size_reuses_the_compiled_program():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.reduce_sum(x * 2.0, axis=1)
    with tf.Session() as sess:
        for batch in (2, 5, 7, 64):
            out = sess.run(y, {x: np.ones((batch, 3))})
            assert out.shape == (batch,) and np.all(out == 6.0)
        stats = sess.cache_stats()
    assert stats["compiles"] == 1 and stats["cache_hits"] == 3


def test_a_new_rank_recompiles_and_logs_what_changed(caplog):
    x = tf.placeholder(tf.float32, name="x")
    y = x + 1.0
    with tf.Session() as sess, caplog.at_level(logging.INFO, logger="tfc"):
        sess.run(y, {x: [1.0, 2.0]})
        sess.run(y, {x: [[1.0], [2.0]]})
        assert sess.cache_stats()["compiles"] == 2
    assert any("feed x:0 rank 1 -> 2" in r.getMessage() for r in caplog.records)


def test_each_stateful_op_runs_once_per_run():
    v = tf.Variable(0, name="counter")
    inc = tf.assign_add(v, 1)
    twice = inc + inc
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(twice) == 2
        assert sess.run(v) == 1


def test_control_dependencies_order_updates():
    v = tf.Variable(1.0)
    update = tf.assign(v, 5.0)
    with tf.control_dependencies([update]):
        after = tf.identity(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 5.0


def test_log_device_placement_prints_each_op(capsys):
    a = tf.constant(2.0, name="a")
    b = tf.multiply(a, 3.0, name="mul")
    config = tf.ConfigProto(log_device_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(b)
    lines = capsys.readouterr().err.splitlines()
    assert "mul: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" in lines
    assert "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0" in lines


def test_gpu_device_without_soft_placement_is_rejected():
    with tf.device("/gpu:0"):
        c = tf.constant(1.0, name="c") * 2.0
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation"):
            sess.run(c)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(c) == 2.0


def test_run_time_broadcast_mismatch_is_an_invalid_argument_error():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    z = x + y
    with tf.Session() as sess:
        assert sess.run(z, {x: [1.0, 2.0], y: [3.0, 4.0]}).tolist() == [4.0, 6.0]
        assert sess.run(z, {x: [1.0, 2.0], y: [3.0]}).tolist() == [4.0, 5.0]
        with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
            sess.run(z, {x: [1.0, 2.0, 3.0], y: [3.0, 4.0]})


def test_make_callable():
    x = tf.placeholder(tf.float32, [None])
    y = x * 2.0
    with tf.Session() as sess:
        fn = sess.make_callable(y, [x])
        assert fn([1.0, 2.0]).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("feed_dict, kind", [([1, 2], "list"), ((1, 2), "tuple"), ("ab", "str"), (3, "int"),
                                             ({1}, "set")])
def test_feed_dict_that_is_not_a_mapping_is_tensorflows_type_error(feed_dict, kind):
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        with pytest.raises(TypeError) as info:
            sess.run(x * 2.0, feed_dict)
    assert str(info.value) == (f"FlattenDictItems: 'dict' must be a dictionary or collection.Mapping type object, "
                               f"instead of '{kind}'.")


def test_a_fetched_fed_tensor_is_the_fed_value():
    """As in TF 2.x's compat.v1 Session: np.asarray(value, dtype) comes back as is (0-d stays an
    array, strings keep their Python type), and nothing is compiled for it."""
    s = tf.placeholder(tf.string, [])
    names = tf.placeholder(tf.string, [None])
    x = tf.placeholder(tf.float32, [])
    y = tf.placeholder(tf.int32, [2])
    ints = np.array([1, 2], np.int32)
    with tf.Session() as sess:
        assert repr(sess.run(s, {s: "hi"})) == "array('hi', dtype=object)"
        assert repr(sess.run(names, {names: ["a", b"bc"]})) == "array(['a', b'bc'], dtype=object)"
        assert sess.run(y, {y: ints}) is ints
        out = sess.run({"s": s, "xs": [x, x * 2.0]}, {s: "é", x: 2})
        assert sess.cache_stats()["compiles"] == 1  # x * 2 only
    assert repr(out["s"]) == "array('é', dtype=object)"
    assert repr(out["xs"][0]) == "array(2., dtype=float32)" and repr(out["xs"][1]) == "np.float32(4.0)"


def test_close_releases_compiled_programs_and_variable_buffers():
    v = tf.Variable(np.ones([64, 64], np.float32))
    y = tf.reduce_sum(v)
    sess = tf.Session()
    sess.run(v.initializer)
    assert sess.run(y) == 4096.0
    steps = [weakref.ref(step) for step in sess.compiled_steps()]
    buffer = weakref.ref(sess._variables.values[v.op.name])
    sess.close()
    gc.collect()
    assert steps and all(ref() is None for ref in steps)
    assert buffer() is None
