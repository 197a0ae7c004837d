"""Eager ops on compiled kernels: one compile per kernel key (op, attrs, dtypes, ranks,
size-1 dims), reused across sizes; compile-time inputs; TF's errors at the failing op."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.eager import execute

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager.json")


def _compiles():
    return execute.STATS["compiles"]


def test_a_loop_of_one_op_compiles_once():
    execute.clear_cache()
    x = tf.constant(np.arange(4, dtype=np.float32))
    before = _compiles()
    y = x
    for _ in range(50):
        y = y * 1.5 - x
    assert _compiles() - before == 2  # Mul and Sub, once each
    expected = np.arange(4, dtype=np.float32)
    for _ in range(50):
        expected = expected * np.float32(1.5) - np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)


def test_a_new_size_of_the_same_rank_reuses_the_program():
    execute.clear_cache()
    before = _compiles()
    for n in (3, 7, 100, 4096):
        a = tf.constant(np.ones(n, np.float32))
        b = tf.constant(np.full(n, 2., np.float32))
        assert (a + b).numpy().tolist() == [3.] * n
    assert _compiles() - before == 1
    for shape in [(2, 3), (5, 8)]:
        tf.exp(tf.zeros(shape))
    assert _compiles() - before == 2  # a new rank: one more program
    tf.constant(np.ones(3, np.float64)) + 1.  # a new dtype
    assert _compiles() - before == 3


def test_size_one_dims_are_part_of_the_key():
    execute.clear_cache()
    before = _compiles()
    row = tf.constant([[1., 2., 3.]])
    col = tf.constant([[1.], [2.]])
    np.testing.assert_array_equal((row + col).numpy(), [[2., 3., 4.], [3., 4., 5.]])
    np.testing.assert_array_equal((tf.ones([2, 3]) + tf.ones([2, 3])).numpy(), np.full((2, 3), 2.))
    assert _compiles() - before == 2  # broadcasting is decided when compiling


def test_compile_time_inputs_are_found_and_keyed_by_value():
    execute.clear_cache()
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(tf.reduce_sum(x, axis=1).numpy(), [3., 12.])
    np.testing.assert_array_equal(tf.reduce_sum(x, axis=0).numpy(), [3., 5., 7.])
    assert [v for k, v in execute._STATIC.items() if k[0] == "Sum"] == [(1,)]  # the axis is compiled in
    before = _compiles()
    for _ in range(5):
        tf.reduce_sum(tf.ones([4, 5]), axis=1)
    assert _compiles() == before  # the same axis and rank: no new program
    np.testing.assert_array_equal(tf.reshape(x, [3, 2]).numpy(), [[0., 1.], [2., 3.], [4., 5.]])
    np.testing.assert_array_equal(tf.transpose(x).numpy(), x.numpy().T)
    # x[i]'s index is a run-time value: any index reuses one program (per input shape)
    x[1:]  # a range's bounds are compiled in: not the index of x[i]
    before = _compiles()
    rows = [x[i % 2].numpy().tolist() for i in range(6)] + [x[-1].numpy().tolist()]
    assert rows[:2] == [[0., 1., 2.], [3., 4., 5.]] and rows[-1] == [3., 4., 5.]
    assert _compiles() - before <= 1
    np.testing.assert_array_equal(x[:, 5:].numpy(), np.zeros((2, 0)))  # bounds clamp to the size, as in TF
    np.testing.assert_array_equal(x[::-1, 1:].numpy(), x.numpy()[::-1, 1:])
    # gather indices are data
    before = _compiles()
    for indices in ([0], [2], [1]):
        tf.gather(tf.constant([5., 6., 7.]), indices)
    assert _compiles() - before == 1


def test_ops_whose_lowering_needs_sizes_compile_per_shape():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    parts = tf.split(x, 3, axis=1)
    assert [p.numpy().tolist() for p in parts] == [[[0.], [3.]], [[1.], [4.]], [[2.], [5.]]]
    assert "Split" in execute._EXACT


def test_errors_match_tensorflow():
    expected = json.load(open(FIXTURE))["errors"]
    cases = {
        "add_shapes": lambda: tf.constant([1., 2.]) + tf.constant([1., 2., 3.]),
        "gather_index": lambda: tf.gather(tf.constant([1., 2., 3.]), [5]),
        "matmul_shapes": lambda: tf.matmul(tf.ones([2, 3]), tf.ones([2, 3])),
        "reshape_size": lambda: tf.reshape(tf.constant([1., 2.]), [3]),
        "int_div_zero": lambda: tf.constant(1) // tf.constant(0),
    }
    assert set(cases) == set(expected)
    for name, run in cases.items():
        with pytest.raises(tf.errors.OpError) as info:
            run()
        error = info.value
        assert type(error).__name__ == expected[name]["class"], name
        assert error.message.split(" [Op:")[0] == expected[name]["message"], name
        assert f"[Op:{expected[name]['op']}]" in error.message, name
    # tf.add is TF 1.x's Add op
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\] \[Op:Add\]"):
        tf.add(tf.constant([1., 2.]), tf.constant([1., 2., 3.]))


def test_bad_index_in_the_second_call_of_a_cached_kernel():
    params = tf.constant([[1., 2.], [3., 4.]])
    assert tf.gather(params, [1]).numpy().tolist() == [[3., 4.]]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = -1 is not in \[0, 2\) \[Op:GatherV2\]"):
        tf.gather(params, [0, -1])
    assert tf.gather(params, [0]).numpy().tolist() == [[1., 2.]]


def test_dtype_mismatch():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"cannot compute AddV2 as input #1\(zero-based\) was expected to be a float tensor but is "
                             r"a double tensor \[Op:AddV2\]"):
        tf.constant([1.]) + tf.constant([1.], dtype=tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"cannot compute AddV2 as input #1\(zero-based\) was expected to be a int32 tensor but is "
                             r"a float tensor \[Op:AddV2\] name: add/"):
        tf.constant([1, 2]) + 1.5


def test_random_ops_advance_their_state():
    a = tf.random_uniform([4], seed=3)
    b = tf.random_uniform([4], seed=3)
    assert not np.array_equal(a.numpy(), b.numpy())
    assert ((a.numpy() >= 0) & (a.numpy() < 1)).all()
    tf.set_random_seed(5)
    n = tf.random_normal([1000])
    assert abs(float(tf.reduce_mean(n))) < 0.15


def test_many_ops():
    x = tf.constant([[1., -2., 3.], [-4., 5., -6.]])
    np.testing.assert_array_equal(tf.argmax(x, 1).numpy(), [2, 1])
    np.testing.assert_array_equal(tf.one_hot([0, 2], 3).numpy(), [[1., 0., 0.], [0., 0., 1.]])
    np.testing.assert_array_equal(tf.range(5).numpy(), np.arange(5))
    np.testing.assert_array_equal(tf.fill([2], 3.).numpy(), [3., 3.])
    np.testing.assert_array_equal(tf.nn.relu(x).numpy(), np.maximum(x.numpy(), 0))
    np.testing.assert_array_equal(tf.concat([x, x], 0).numpy(), np.concatenate([x.numpy()] * 2))
    np.testing.assert_array_equal(tf.tile(x, [1, 2]).numpy(), np.tile(x.numpy(), [1, 2]))
    np.testing.assert_array_equal(tf.shape(x).numpy(), [2, 3])
    assert int(tf.size(x)) == 6 and int(tf.rank(x)) == 2
    np.testing.assert_array_equal(tf.stack(tf.unstack(x)).numpy(), x.numpy())
    np.testing.assert_allclose(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros_like(x), logits=x).numpy(),
                               np.log1p(np.exp(x.numpy())), rtol=1e-5)
    np.testing.assert_array_equal(tf.cast(x, tf.int32).numpy(), x.numpy().astype(np.int32))
    np.testing.assert_array_equal(tf.pad(x, [[1, 0], [0, 0]]).numpy()[0], [0., 0., 0.])
    moments = tf.nn.moments(x, axes=[0])
    np.testing.assert_allclose(moments[0].numpy(), x.numpy().mean(0))


def test_assertions_run_at_once():
    assert tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2])) is None
    assert tf.Assert(tf.constant(True), ["never shown", tf.constant([1.])]) is None
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.Assert(tf.constant(False), ["x is", tf.constant([1., 2., 3., 4.])])
    assert info.value.message == ("Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
                                  "b'x is'\n1.0, 2.0, 3.0, ...")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"b'x \(shape=\(2,\) dtype=float32\) = '\n1.0, -1.0"):
        tf.assert_positive(tf.constant([1., -1.]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Condition x < y did not hold element-wise"):
        tf.assert_less(tf.constant(3.), tf.constant(2.))
