"""Run-time bounds checks: where TF's CPU kernels raise on bad indices, compiled programs do
too, with TF's message (checked against TensorFlow 2.21's tf.compat.v1), instead of
clamping, dropping, producing NaN or reading out of bounds.

- a strided slice with a run-time index (``q[p]``) and tf.slice with a run-time begin;
- UnsortedSegmentSum ids >= num_segments (negative ids are dropped, as in TF);
- SparseSoftmaxCrossEntropyWithLogits labels (the message lists every label);
- tf.Assert's ``check`` of kind ``assert``: its message formats the values it points at
  (every element type, run-time shapes), from the JIT and from a saved artifact;
- the same errors from the evaluator (the oracle) and from a saved artifact (tfc.load);
- the error record and its codes (tfc/program_errors.py).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfc
import tfc.compat.v1 as tf
from tfc import ir, program_errors
from tfc.frontend.errors import InvalidArgumentError
from tfc.ir.evaluator import CheckFailure

from .helpers import arrays, compiled, func, np_dtype, reference


def run_graph(build, feeds: dict):
    """Session.run of ``build()`` -> (fetches, {name: placeholder}) on ``feeds`` (by name)."""
    with tf.Graph().as_default():
        fetches, placeholders = build()
        with tf.Session() as sess:
            return sess.run(fetches, {placeholders[k]: v for k, v in feeds.items()})


def error_of(build, feeds: dict) -> str:
    """The message of the InvalidArgumentError the run raises, without the op suffix."""
    with pytest.raises(InvalidArgumentError) as caught:
        run_graph(build, feeds)
    return caught.value.message.rsplit(" (in '", 1)[0]


# -- strided slice with a run-time index -------------------------------------------------------
def index_vector():
    p = tf.placeholder(tf.int32, [], name="p")
    return tf.constant([1.0, 2.0, 3.0])[p], {"p": p}


@pytest.mark.parametrize("p, message", [(5, "slice index 5 of dimension 0 out of bounds."),
                                        (3, "slice index 3 of dimension 0 out of bounds."),
                                        (-4, "slice index -1 of dimension 0 out of bounds.")])
def test_strided_slice_index_out_of_range_raises(p, message):
    assert error_of(index_vector, {"p": p}) == message  # was: the clamped element


@pytest.mark.parametrize("p, value", [(0, 1.0), (2, 3.0), (-1, 3.0), (-3, 1.0)])
def test_strided_slice_index_in_range(p, value):
    assert run_graph(index_vector, {"p": p}) == value


def test_strided_slice_names_the_dimension_and_checks_fed_shapes():
    def inner():
        q = tf.placeholder(tf.float32, [None, None], name="q")
        p = tf.placeholder(tf.int32, [], name="p")
        return q[1, p], {"p": p, "q": q}

    q = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert error_of(inner, {"p": 3, "q": q}) == "slice index 3 of dimension 1 out of bounds."
    assert run_graph(inner, {"p": -1, "q": q}) == 5.0


def test_strided_slice_of_an_empty_dim_raises_instead_of_reading_out_of_bounds():
    def huge_rows():  # an index into 0 rows of 10**6 floats used to read before the buffer
        p = tf.placeholder(tf.int32, [], name="p")
        return tf.zeros([0, 10 ** 6])[p], {"p": p}

    def empty_result():  # the result has no elements, the index is still checked
        p = tf.placeholder(tf.int32, [], name="p")
        return tf.zeros([3, 0])[p], {"p": p}

    assert error_of(huge_rows, {"p": 0}) == "slice index 0 of dimension 0 out of bounds."
    assert error_of(empty_result, {"p": 5}) == "slice index 5 of dimension 0 out of bounds."
    assert run_graph(empty_result, {"p": 2}).shape == (0,)


def test_strided_slice_gradient_checks_the_index():
    def gradient():
        q = tf.placeholder(tf.float32, [None, 2], name="q")
        p = tf.placeholder(tf.int32, [], name="p")
        return tf.gradients(tf.reduce_sum(q[p]), q)[0], {"p": p, "q": q}

    q = np.ones((2, 2), np.float32)
    assert error_of(gradient, {"p": -3, "q": q}) == "slice index -1 of dimension 0 out of bounds."
    np.testing.assert_array_equal(run_graph(gradient, {"p": -2, "q": q}), [[1, 1], [0, 0]])


# -- tf.slice with a run-time begin -------------------------------------------------------------
def slice_2d():
    p = tf.placeholder(tf.int32, [2], name="p")
    return tf.slice(tf.reshape(tf.range(12.0), [3, 4]), p, [2, 3]), {"p": p}


@pytest.mark.parametrize("begin, message", [
    ([1, 2], "Expected size[1] in [0, 2], but got 3"),
    ([2, 0], "Expected size[0] in [0, 1], but got 2"),
    ([5, 9], "Expected begin[0] in [0, 3], but got 5"),
    ([0, -1], "Expected begin[1] in [0, 4], but got -1"),
])
def test_slice_begin_out_of_range_raises(begin, message):
    assert error_of(slice_2d, {"p": begin}) == message


def test_slice_begin_in_range():
    np.testing.assert_array_equal(run_graph(slice_2d, {"p": [1, 1]}), [[5, 6, 7], [9, 10, 11]])


def test_slice_of_a_whole_or_empty_dim_checks_the_begin():
    def whole():
        p = tf.placeholder(tf.int32, [], name="p")
        return tf.slice(tf.constant([1.0, 2.0, 3.0]), tf.reshape(p, [1]), [3]), {"p": p}

    def of_fed(size):
        def build():
            q = tf.placeholder(tf.float32, [None], name="q")
            p = tf.placeholder(tf.int32, [], name="p")
            return tf.slice(q, tf.reshape(p, [1]), [size]), {"p": p, "q": q}
        return build

    assert error_of(whole, {"p": 1}) == "Expected size[0] in [0, 2], but got 3"  # was: ignored
    np.testing.assert_array_equal(run_graph(whole, {"p": 0}), [1, 2, 3])
    empty = np.zeros(0, np.float32)
    assert error_of(of_fed(0), {"p": 1, "q": empty}) == \
        "Expected begin[0] == 0 (got 1) and size[0] == 0 (got 0) when input.dim_size(0) == 0"
    assert run_graph(of_fed(0), {"p": 0, "q": empty}).shape == (0,)
    assert error_of(of_fed(2), {"p": 2, "q": np.ones(3, np.float32)}) == "Expected size[0] in [0, 1], but got 2"


# -- segment ids --------------------------------------------------------------------------------
def unsorted_sum(ids_shape=(None,), dtype=tf.int32):
    def build():
        ids = tf.placeholder(dtype, list(ids_shape), name="ids")
        data = tf.reshape(tf.range(1.0, 5.0), [2, 2]) if len(ids_shape) == 2 else tf.constant([1.0, 2.0, 3.0])
        return tf.unsorted_segment_sum(data, ids, 2), {"ids": ids}
    return build


def test_unsorted_segment_sum_id_out_of_range_raises():
    assert error_of(unsorted_sum(), {"ids": [0, 1, 5]}) == "segment_ids[2] = 5 is out of range [0, 2)"
    assert error_of(unsorted_sum(), {"ids": [2, 1, 5]}) == "segment_ids[0] = 2 is out of range [0, 2)"
    assert error_of(unsorted_sum(dtype=tf.int64), {"ids": [0, 1, 9]}) == "segment_ids[2] = 9 is out of range [0, 2)"
    assert error_of(unsorted_sum((None, None)), {"ids": [[0, 1], [3, 0]]}) == \
        "segment_ids[1,0] = 3 is out of range [0, 2)"


def test_tf_defined_non_errors_stay_non_errors():
    """Negative segment ids are dropped and out-of-range one_hot indices give zeros, in TF too."""
    np.testing.assert_array_equal(run_graph(unsorted_sum(), {"ids": [0, 1, -1]}), [1, 2])
    np.testing.assert_array_equal(run_graph(unsorted_sum(), {"ids": [1, 1, -7]}), [0, 3])

    def one_hot():
        p = tf.placeholder(tf.int32, [None], name="p")
        return tf.one_hot(p, 3), {"p": p}

    np.testing.assert_array_equal(run_graph(one_hot, {"p": [0, 5, -1]}), [[1, 0, 0], [0, 0, 0], [0, 0, 0]])


def test_segment_id_gradient_gathers_with_checked_indices():
    def gradient():
        data = tf.placeholder(tf.float32, [None], name="data")
        ids = tf.placeholder(tf.int32, [None], name="ids")
        total = tf.reduce_sum(tf.unsorted_segment_sum(data, ids, 2))
        return tf.gradients(total, data)[0], {"data": data, "ids": ids}

    assert error_of(gradient, {"data": np.ones(2, np.float32), "ids": [0, 5]}) == "indices[1] = 5 is not in [0, 2)"


# -- sparse labels ------------------------------------------------------------------------------
def sparse_xent(rows=2, dtype=tf.int32, gradient=False):
    def build():
        labels = tf.placeholder(dtype, [None], name="labels")
        logits = tf.placeholder(tf.float32, [None, 3], name="logits")
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return (tf.gradients(tf.reduce_sum(loss), logits)[0] if gradient else loss), {"labels": labels,
                                                                                      "logits": logits}
    return build


def label_feed(labels):
    return {"labels": labels, "logits": np.zeros((len(labels), 3), np.float32)}


@pytest.mark.parametrize("labels, reported", [([0, 5], 5), ([0, 5, -2, 7], -2), ([0, 5, 3, 1], 5), ([3] * 40, 3)])
def test_sparse_label_out_of_range_raises_listing_the_labels(labels, reported):
    listed = " ".join(map(str, labels))
    assert error_of(sparse_xent(), label_feed(labels)) == (  # was: NaN loss
        f"Received a label value of {reported} which is outside the valid range of [0, 3).  Label values: {listed}")


def test_sparse_labels_int64_gradient_and_empty_batch():
    message = "Received a label value of 7 which is outside the valid range of [0, 3).  Label values: 7 1"
    assert error_of(sparse_xent(dtype=tf.int64), label_feed([7, 1])) == message
    assert error_of(sparse_xent(gradient=True), label_feed([0, 5])).startswith("Received a label value of 5 ")
    assert run_graph(sparse_xent(), label_feed([])).shape == (0,)
    np.testing.assert_allclose(run_graph(sparse_xent(), label_feed([0, 2])), [np.log(3)] * 2, rtol=1e-6)


# -- the error names its op; the executable stays usable; the evaluator agrees ------------------
def test_check_error_names_the_source_op_and_the_session_stays_usable():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32, [], name="p")
        picked = tf.identity(tf.constant([1.0, 2.0, 3.0])[p], name="picked")
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(picked, {p: 7})
            assert caught.value.op is picked.op.inputs[0].op  # the graph op, with its traceback
            assert any(frame[0] == __file__ for frame in caught.value.op._user_frames)
            assert "Caused by op 'strided_slice', defined at:" in str(caught.value)
            assert caught.value.message == "slice index 7 of dimension 0 out of bounds. (in 'strided_slice')"
            assert sess.run(picked, {p: 1}) == 2.0


LABELS = func("(%labels: i32[s0], %x: f32[s0]) -> (f32[s0])",
              'check %labels {bound=[3], kind="label"} loc("xent"("model.py":4))',
              '%0 = neg %x : f32[s0]',
              "return %0")


@pytest.mark.parametrize("labels, code, message", [
    ([0, 3, 1], program_errors.LABEL,
     "Received a label value of 3 which is outside the valid range of [0, 3).  Label values: 0 3 1"),
    ([-8, 3, 1], program_errors.LABEL,
     "Received a label value of -8 which is outside the valid range of [0, 3).  Label values: -8 3 1"),
])
def test_compiled_check_and_evaluator_report_the_same(labels, code, message):
    args = [np.array(labels, np.int32), np.zeros(len(labels), np.float32)]
    with pytest.raises(CheckFailure) as expected:
        ir.evaluate(reference(LABELS), args)
    with pytest.raises(InvalidArgumentError) as got:
        compiled(LABELS).executable.run(args)
    assert expected.value.code == code and expected.value.message == message
    assert got.value.message == f"{message} (in 'xent')"
    np.testing.assert_array_equal(compiled(LABELS).executable.run([np.array([2, 0], np.int32),
                                                                   np.ones(2, np.float32)])[0], [-1, -1])


ASSERT = func("(%c: pred[], %x: f32[s0,3], %n: i64[2], %b: pred[s1]) -> (f32[s0,3])",
              'check %c, %x, %n, %b {kind="assert", summarize=4, text=["assertion failed: [msg] [", "] [", "] [", '
              '"]"]} loc("A/Assert"("model.py":4))',
              "%0 = neg %x : f32[s0,3]",
              "return %0")


@pytest.mark.parametrize("rows, summarize_text", [(2, "[0 0.333333343 0.666666687][1...]..."), (0, ""),
                                                  (1, "[0 0.333333343 0.666666687]")])
def test_compiled_assert_and_evaluator_report_the_same(rows, summarize_text):
    """The record points at the descriptor and at each value's buffer; run-time dims follow."""
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 3
    args = [np.array(False), x, np.array([7, -1], np.int64), np.array([True, False, True])]
    message = f"assertion failed: [msg] [{summarize_text}] [7 -1] [1 0 1]"
    with pytest.raises(CheckFailure) as expected:
        ir.evaluate(reference(ASSERT), args)
    with pytest.raises(InvalidArgumentError) as got:
        compiled(ASSERT).executable.run(args)
    assert expected.value.code == program_errors.ASSERT and expected.value.message == message
    assert got.value.message == f"{message} (in 'A/Assert')"
    np.testing.assert_array_equal(compiled(ASSERT).executable.run([np.array(True)] + args[1:])[0], -x)


@pytest.mark.parametrize("elem", ["f16", "f32", "f64", "i8", "i32", "i64", "u8", "pred"])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_compiled_assert_reads_every_element_type_back(elem, data):
    """Random values, run-time shapes and summarize: the compiled program's message (read
    back from its buffers) is the evaluator's, for every element type."""
    summarize = data.draw(st.sampled_from([-1, 0, 2, 3, 7]))
    text = func(f"(%c: pred[], %x: {elem}[s0,s1], %y: {elem}[3]) -> ()",
                f'check %c, %x, %y {{kind="assert", summarize={summarize}, text=["a: ", " b: ", ""]}}',
                "return")
    s0, s1 = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 4))
    x = data.draw(arrays(np_dtype(elem), (s0, s1)))
    y = data.draw(arrays(np_dtype(elem), (3,)))
    with pytest.raises(CheckFailure) as expected:
        ir.evaluate(reference(text), [np.array(False), x, y])
    with pytest.raises(InvalidArgumentError) as got:
        compiled(text).executable.run([np.array(False), x, y])
    assert got.value.message == f"{expected.value.message} (in 'check')"
    assert expected.value.message == (f"a: {program_errors.summarize_value(x, summarize)} b: "
                                      f"{program_errors.summarize_value(y, summarize)}")


def test_error_codes_table():
    """One code per message; the record holds a shape of up to MAX_DIMS dims."""
    assert len(program_errors.CODES) == len({e.name for e in program_errors.CODES.values()})
    assert program_errors.RECORD_SIZE == program_errors.DIMS + program_errors.MAX_DIMS
    record = program_errors.new_record()
    record[program_errors.EXTRA], record[program_errors.RANK] = 1, 3
    record[program_errors.DIMS:program_errors.DIMS + 3] = [2, 0, 5]
    assert program_errors.describe(program_errors.EMPTY_REDUCTION_AXIS, record) == (
        "InvalidArgumentError", "Reduction axis 1 is empty in shape [2,0,5]")
    assert program_errors.describe(99, record) is None
    assert program_errors.slice_debug_string([2, 3, 4], 23) == "[1,2,3]"
    assert program_errors.slice_debug_string([], 0) == ""


# -- ahead-of-time artifacts --------------------------------------------------------------------
def test_saved_artifact_raises_the_same_errors(tmp_path):
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int32, [None], name="labels")
        logits = tf.placeholder(tf.float32, [None, 3], name="logits")
        divisor = tf.placeholder(tf.int32, [None], name="divisor")
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        compiled_graph = tfc.compile([loss, tf.constant(12) // divisor], feeds=[labels, logits, divisor])
    compiled_graph.save(str(tmp_path))
    model = tfc.load(str(tmp_path))
    logits_value = np.zeros((2, 3), np.float32)
    for bad, message in [(([0, 4], logits_value, [1]),
                          "Received a label value of 4 which is outside the valid range of [0, 3).  "
                          "Label values: 0 4"),
                         (([0, 1], logits_value, [3, 0]), "Integer division by zero")]:
        values = [np.array(bad[0], np.int32), bad[1], np.array(bad[2], np.int32)]
        errors = []
        for run in (compiled_graph, model):
            with pytest.raises(InvalidArgumentError) as caught:
                run(*values)
            assert caught.value.message.startswith(message + " (in '")
            errors.append(str(caught.value))
        assert errors[0] == errors[1] and "defined at:\n  File \"test_runtime_checks.py\"" in errors[1]
    _, quotient = model(np.array([0, 1], np.int32), logits_value, np.array([5, -5], np.int32))
    np.testing.assert_array_equal(quotient, [2, -3])


def test_saved_artifact_raises_tf_asserts_message(tmp_path):
    """The artifact's loader formats a failed tf.Assert from the record alone (the message's
    descriptor is the program's constant data)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=3)
        with tf.control_dependencies([check]):
            y = tf.identity(x * 2.0)
        compiled_graph = tfc.compile([y], feeds=[x])
    compiled_graph.save(str(tmp_path))
    model = tfc.load(str(tmp_path))
    bad = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    for run in (compiled_graph, model):
        with pytest.raises(InvalidArgumentError) as caught:
            run(bad)
        assert caught.value.message == ("assertion failed: [x must be positive:] [[1 -2][3...]...] "
                                        "(in 'Assert/AssertGuard/Assert')")
        np.testing.assert_array_equal(np.asarray(run(np.ones((1, 2), np.float32))).reshape(1, 2), [[2.0, 2.0]])
