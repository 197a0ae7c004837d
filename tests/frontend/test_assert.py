"""tf.Assert, TF 1.15's check_ops assertions and tf.case's Asserts: TensorFlow's graphs node
for node, and compiled runs that fail with TensorFlow's InvalidArgumentError message,
naming the Assert op, exactly when TensorFlow's do (fixtures:
tests/fixtures/make_tf_assert_graphs.py, made with TF 2.21 in TF1 mode and TF 1.15's
check_ops)."""
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc import program_errors
from tfc.frontend.errors import InvalidArgumentError
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_assert_graphs",
                                               os.path.join(_FIXTURES, "make_tf_assert_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "assert_graphs.json")) as _f:
    FIXTURE = json.load(_f)

_TF2_ONLY_ATTRS = {"_has_manual_control_dependencies"}
ASSERT_PROGRAMS = sorted(name for name in programs.PROGRAMS if not name.startswith("reverse_sequence"))


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        targets, feeds = programs.PROGRAMS[name](tf)
    return graph, targets, feeds


def outcome(sess, graph, target, feed) -> dict:
    """What the fixture records for one run: the values, or the error, its message (without
    tfc's " (in '<op>')" suffix) and the op it names."""
    try:
        value = sess.run(target, programs.feed_dict(graph, feed))
    except InvalidArgumentError as e:
        message, _, named = e.message.rpartition(" (in '")
        return {"error": type(e).__name__, "message": message, "node": named[:-2]}
    return {"values": programs.as_json(value)}


# -- the graphs, node for node -------------------------------------------------------------------
def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors"]) == sorted(programs.ERRORS)


@pytest.mark.parametrize("name", ASSERT_PROGRAMS)
def test_graph_matches_tensorflow(name):
    expected = FIXTURE["programs"][name]["nodes"]
    for node in expected:
        for attr in _TF2_ONLY_ATTRS:
            node["attrs"].pop(attr, None)
    got = programs.record_graph(build(name)[0])
    assert [n["name"] for n in got] == [n["name"] for n in expected]
    for got_node, expected_node in zip(got, expected):
        assert got_node == expected_node, got_node["name"]


def test_the_fixture_has_tensorflows_guard():
    """A spot check of what TF builds: the guarded Assert in AssertGuard's false branch, its
    data switched in, its Python string converted inside it; int32/string data unguarded."""
    nodes = {n["name"]: n for n in FIXTURE["programs"]["assert_guarded"]["nodes"]}
    assert nodes["Assert/AssertGuard/Assert"]["inputs"] == [
        "Assert/AssertGuard/Assert/Switch:0", "Assert/AssertGuard/Assert/data_0",
        "Assert/AssertGuard/Assert/Switch_1:0", "Assert/AssertGuard/Assert/Switch_2:0",
        "Assert/AssertGuard/Assert/Switch_3:0", "Assert/AssertGuard/Assert/Switch_4:0"]
    assert nodes["Assert/AssertGuard/Assert"]["attrs"]["summarize"] == {"i": 4}
    assert nodes["Assert/AssertGuard/Assert/data_0"]["inputs"] == ["^Assert/AssertGuard/switch_f"]
    assert nodes["Assert/AssertGuard/Merge"]["inputs"] == ["Assert/AssertGuard/control_dependency_1",
                                                           "Assert/AssertGuard/control_dependency"]
    host = {n["name"]: n for n in FIXTURE["programs"]["assert_host_types"]["nodes"]}
    assert host["check_n/Assert"]["op"] == "Assert" and host["check_n/Assert"]["attrs"]["summarize"] == {"i": 3}


def test_assert_returns_the_op_tensorflow_returns():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        guarded = tf.Assert(x[0] > 0, ["x:", x])
        direct = tf.Assert(tf.constant(True), ["only strings", tf.constant(1)])
        assert guarded.type == "Merge" and guarded.name == "Assert/AssertGuard/Merge"
        assert direct.type == "Assert" and direct.name == "Assert_1/Assert"
        assert tf.debugging.Assert is tf.Assert
        assert tf.debugging.assert_equal is tf.assert_equal


# -- compiled runs: values and TF's errors ---------------------------------------------------------
@pytest.mark.parametrize("name", ASSERT_PROGRAMS)
def test_runs_match_tensorflow(name):
    """Every target on every feed: the same values, or InvalidArgumentError with TF's
    message naming TF's op."""
    graph, targets, feeds = build(name)
    expected = FIXTURE["programs"][name]["runs"]
    with graph.as_default(), tf.Session() as sess:
        for label, target in targets.items():
            for feed_label, feed in feeds.items():
                assert outcome(sess, graph, target, feed) == expected[label][feed_label], (label, feed_label)


def test_the_fixture_runs_cover_failures_and_passes():
    """The comparison above checks both ways: failures with TF's messages and silent passes,
    in a cond branch taken or not, and in a while loop."""
    runs = FIXTURE["programs"]["assert_in_cond"]["runs"]["z"]
    assert runs["taken_bad"] == {"error": "InvalidArgumentError", "message": "assertion failed: [x:] [1 -2]",
                                 "node": "cond/Assert/AssertGuard/Assert"}
    assert runs["not_taken"] == {"values": [0.0, -3.0]} and runs["taken_ok"] == {"values": [2.0, 4.0]}
    assert FIXTURE["programs"]["assert_in_while"]["runs"]["total"]["five"]["message"] == (
        "assertion failed: [i is too large:] [3]")
    assert FIXTURE["programs"]["assert_guarded"]["runs"]["assert"]["negative"]["message"] == (
        "assertion failed: [x must be positive] [-1 2 0.333333343 4...] [[1 2 3][4...]...] [1] "
        "[1.5 0.1 1e+10 -2.25...]")


def test_a_failed_assert_names_its_graph_op_and_the_session_stays_usable():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        check = tf.Assert(tf.reduce_all(x < 3.0), ["x:", x])
        with tf.control_dependencies([check]):
            y = tf.identity(x + 1.0)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(y, {x: [1.0, 5.0]})
            assert caught.value.op.name == "Assert/AssertGuard/Assert"
            assert any(frame[0] == __file__ for frame in caught.value.op._user_frames)
            assert caught.value.message == "assertion failed: [x:] [1 5] (in 'Assert/AssertGuard/Assert')"
            np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 3.0])


def test_assert_known_to_hold_compiles_to_nothing_and_known_false_fails_at_run_time():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        holds = tf.Assert(tf.constant(True), ["never", x])
        fails = tf.Assert(tf.constant(False), ["always", tf.constant([1, 2])], name="fails")
        lowered = lower_graph([], [holds.inputs[0].op], [FeedSpec(x, x.dtype, (2,))])
        assert [op.name for op in lowered.module.main.walk()].count("check") == 0
        with tf.Session() as sess:
            sess.run(holds, {x: [1.0, 2.0]})
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(fails)
            assert caught.value.message == "assertion failed: [always] [1 2] (in 'fails/Assert')"


def test_the_condition_must_be_a_scalar_when_it_runs():
    """TF's kernel: "In[0] should be a scalar: [2]"; a [1] condition is a legacy scalar."""
    with tf.Graph().as_default():
        c = tf.placeholder(tf.bool, [2], name="c")
        one = tf.placeholder(tf.bool, [1], name="one")
        bad = tf.Assert(c, ["message"])
        legacy = tf.Assert(one, ["legacy scalar", tf.constant(7)])
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(bad, {c: [True, True]})
            assert caught.value.message == "In[0] should be a scalar: [2] (in 'Assert/Assert')"
            sess.run(legacy, {one: [True]})
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(legacy, {one: [False]})
            assert caught.value.message == "assertion failed: [legacy scalar] [7] (in 'Assert_1/Assert')"


def test_run_time_string_data_is_refused_by_the_compiler():
    """String data must be constants: the compiler computes no strings."""
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [], name="s")
        check = tf.Assert(tf.constant(False), [s])
        with tf.Session() as sess:
            with pytest.raises(ValueError, match=r"'s' \(Placeholder\) at .*: dtype string is not supported by the "
                                                 r"compiler"):
                sess.run(check, {s: b"text"})


def test_a_string_constant_cannot_be_fetched_from_a_compiled_cond():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        chosen = tf.cond(p, lambda: tf.constant("yes"), lambda: tf.constant("no"))
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="string tensors are not supported by the compiler"):
                sess.run(chosen, {p: True})


# -- errors while building --------------------------------------------------------------------------
def _build_error(name):
    with tf.Graph().as_default():
        with pytest.raises(Exception) as caught:
            programs.ERRORS[name](tf)
    return caught.value


@pytest.mark.parametrize("name", sorted(n for n in programs.ERRORS if n.startswith("err_assert")))
def test_static_check_errors_are_tensorflows(name):
    expected = FIXTURE["errors"][name]
    error = _build_error(name)
    assert type(error).__name__ == expected["type"]
    assert (error.message if isinstance(error, InvalidArgumentError) else str(error)) == expected["message"]


def test_static_assertions_build_no_assert():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        assert tf.assert_rank(x, 2).name == "assert_rank/static_checks_determined_all_ok"
        assert tf.assert_equal(x, x).type == "NoOp"
        assert tf.assert_type(x, tf.float32).name == "assert_type/statically_determined_correct_type"
        with pytest.raises(TypeError, match=r"^  x:0 must be of type <dtype: 'int32'>$"):
            tf.assert_type(x, tf.int32)
        with pytest.raises(TypeError, match=r'^  Expected "x" to be integer type.  Found: x:0 of dtype '
                                            r"<dtype: 'float32'>$"):
            tf.assert_integer(x)


# -- the message formatting (Tensor::SummarizeValue) ------------------------------------------------
@pytest.mark.parametrize("value, summarize, text", [
    (np.array([1 / 3, 0.1, 1e10, 123456789.0, 1e-5, np.nan, np.inf, -np.inf, -0.0], np.float32), -1,
     "0.333333343 0.1 1e+10 123456792 1e-05 nan inf -inf -0"),
    (np.array([1 / 3, 1e16, 12345678901234567.0], np.float64), 3, "0.33333333333333331 1e+16 12345678901234568"),
    (np.array([[1, 2], [3, 4], [5, 6]], np.int32), 3, "[1 2][3...]..."),
    (np.arange(24).reshape(2, 3, 4), 5, "[[0 1 2 3][4...]]..."),
    (np.zeros((2, 0, 3), np.float32), 3, ""),
    (np.float32(3.5), 0, "..."),
    (np.array([True, False]), 3, "1 0"),
    (np.array([b"a\nb", b"it's", b"\xff"], object), 3, "a\\nb it\\'s \\377"),
])
def test_summarize_value_is_tensorflows(value, summarize, text):
    assert program_errors.summarize_value(value, summarize) == text
