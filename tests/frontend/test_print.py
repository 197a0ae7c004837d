"""tf.Print / tf.print: TF's graphs and exactly what TF writes to stderr
(tests/fixtures/print_image.json, from tests/fixtures/make_tf_print_image.py)."""
import json
import os
import sys

import numpy as np
import pytest

import tfc.compat.v1 as tf

FIXTURES = json.load(open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "print_image.json")))["prints"]
X23 = [[1.5, 2., 3.], [4., 5., 6.]]
V10 = list(range(10))

CASES = {
    "print_basic": lambda: tf.Print(tf.constant(X23), [tf.constant(X23)]),
    "print_message_summarize": lambda: tf.Print(tf.constant(X23), [tf.constant(X23), "hi", tf.constant(7)],
                                                message="msg: ", summarize=4),
    "print_first_n": lambda: tf.Print(tf.constant(V10), [tf.constant(V10)], message="v", first_n=2),
    "print_all": lambda: tf.Print(tf.constant(V10), [tf.constant(V10) * 2, tf.constant(True)], summarize=-1, name="p"),
    "print_chained": lambda: tf.Print(tf.Print(tf.constant(V10), [tf.constant(1.25)], "a"), [tf.constant(-3)],
                                      "b") * 2,
    "print_doubles": lambda: tf.Print(tf.constant(0.1, tf.float64), [tf.constant([0.1, 1e-7, 1e20], tf.float64),
                                                                    tf.constant([0.1, 1e-7, 1e20])]),
    "printv2_basic": lambda: tf.print(tf.constant(X23)),
    "printv2_mixed": lambda: tf.print("x:", tf.constant(X23), [1, 2], {"b": tf.constant(3), "a": 1}, summarize=2,
                                      output_stream=sys.stderr),
    "printv2_long": lambda: tf.print("v", tf.constant(V10), tf.constant(np.arange(24).reshape(2, 3, 4)),
                                     tf.constant(["a", "b"]), tf.constant(True), sep="|", end="!\n"),
    "printv2_summarize_all": lambda: tf.print(tf.constant(V10), summarize=-1, name="pr"),
    "printv2_floats": lambda: tf.print(tf.constant([0.1, 2.5e-8, 1e10]), tf.constant(3.0, tf.float64)),
}


def _attrs(op):
    out = {}
    for k, v in op._attrs.items():
        if isinstance(v, list):
            v = [t.name for t in v]
        elif k == "T":
            v = v.name
        out[k] = v
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_print_as_tensorflow(name, capsys):
    want = FIXTURES[name]
    g = tf.Graph()
    with g.as_default():
        fetch = CASES[name]()
        assert [[o.name, o.type] for o in g.get_operations()] == want["nodes"]
        for op_name, attrs in want["attrs"].items():
            assert _attrs(g.get_operation_by_name(op_name)) == attrs
        capsys.readouterr()
        with tf.Session() as sess:
            for _ in range(want["runs"]):
                value = sess.run(fetch)
    err = capsys.readouterr().err
    assert err == want["stderr"]
    if want["value"] is not None:
        np.testing.assert_allclose(value, want["value"])


def test_print_is_compiled_as_an_identity_with_a_gradient(capsys):
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.reduce_sum(tf.Print(x, [tf.shape(x), x], "x=") * 3.0)
    (grad,) = tf.gradients(y, x)
    with tf.Session() as sess:
        value, g = sess.run([y, grad], {x: [[1., 2.], [3., 4.]]})
    assert value == 30.0
    np.testing.assert_array_equal(g, np.full((2, 2), 3.0))
    assert capsys.readouterr().err == "x=[2 2][[1 2][3...]...]\n"


def test_print_in_a_cond_prints_when_taken(capsys):
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: tf.Print(x, [x], "pos"), lambda: x)
    with tf.Session() as sess:
        assert sess.run(y, {x: 1.0}) == 1.0 and sess.run(y, {x: -1.0}) == -1.0
    assert capsys.readouterr().err == "pos[1]\n"  # a host call of the program (tfc/runtime/host_calls.py)


def test_tf_print_in_a_cond_and_a_loop_prints_where_the_program_reaches_it(capsys):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])

        def branch():
            with tf.control_dependencies([tf.print("x is", x, [x, x * 2])]):
                return tf.identity(x)

        y = tf.cond(x > 0, branch, lambda: x)

        def body(i):
            with tf.control_dependencies([tf.print("i =", i, output_stream=sys.stdout)]):
                return i + 1

        w = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with tf.Session(graph=y.graph) as sess:
        assert sess.run(y, {x: 1.0}) == 1.0 and sess.run(y, {x: -1.0}) == -1.0
        assert sess.run(w) == 3
    printed = capsys.readouterr()
    assert printed.err == "x is 1 [1, 2]\n"  # what TF 2.21's tf.compat.v1 prints
    assert printed.out == "i = 0\ni = 1\ni = 2\n"


def test_print_v2_streams(tmp_path, capsys):
    path = tmp_path / "out.txt"
    op = tf.print("to file", tf.constant([1, 2]), output_stream="file://" + str(path))
    out = tf.print(tf.constant(2.5), output_stream=sys.stdout)
    with tf.Session() as sess:
        sess.run([op, out])
    assert path.read_text() == "to file [1 2]\n"
    assert capsys.readouterr().out == "2.5\n"
    with pytest.raises(ValueError, match=r"^Unsupported output stream, logging level, or file.stderr. Supported "):
        tf.print("x", output_stream="stderr")
    with pytest.raises(ValueError, match=r"Unrecognized keyword arguments for tf.print: \{'foo': 1\}"):
        tf.print("x", foo=1)
