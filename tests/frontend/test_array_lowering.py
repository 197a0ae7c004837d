"""Lowerings of the array family (array_ops.py, concat_ops.py, selection_ops.py), run for
real: graphs go through ``tf.Session`` (lowering, passes, LLVM) and are compared exactly
with numpy. Placeholders have an unknown batch dim; each graph runs at two batch sizes
in one session and must compile once. Many ops share one graph (one JIT compile).
"""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op
from tfc.passes.lower import UnsupportedOpsError


def op(op_type, *inputs, **attrs):
    """One TF op, created the way TF's generated wrappers create it."""
    return apply_op(op_type, list(inputs), attrs).outputs[0]


SIZES = (3, 5)


def run_batches(fetches: dict, make_feeds, expected, sizes=SIZES):
    """Run ``fetches`` at each batch size in one session and compare each result exactly
    with ``expected(n, feeds)[name]``; the graph must compile once."""
    with tf.Session() as sess:
        for n in sizes:
            feeds = make_feeds(n)
            results = sess.run(fetches, feeds)
            want = expected(n, feeds)
            assert set(want) == set(fetches)
            for name, value in want.items():
                assert_same(results[name], value, f"{name} (batch {n})")
        stats = sess.cache_stats()
    assert stats["compiles"] == 1, stats


def assert_same(actual, expected, name):
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (name, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (name, actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def batch(n, *shape, dtype=np.float32, seed=0):
    """Distinct values (exact in every dtype used) for an [n, *shape] input."""
    rng = np.random.default_rng(seed + n)
    size = n * int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (rng.integers(0, 2, size) == 1).reshape((n,) + shape)
    return (rng.permutation(size) - size // 3).astype(dtype).reshape((n,) + shape)


# -- identities, shapes ---------------------------------------------------------------------------
def test_identities_and_shape_queries():
    x = tf.placeholder(tf.float32, [None, 3, 4], name="x")
    i = tf.placeholder(tf.int64, [None], name="i")
    unknown_rank = tf.placeholder(tf.int32, name="u")
    default = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), [None, 2])
    n0, n1 = tf.identity_n([x, i])
    fetches = {
        "identity": tf.identity(x), "stop": tf.stop_gradient(x), "snapshot": op("Snapshot", x),
        "n0": n0, "n1": n1, "default": default, "identity_scalar": tf.identity(tf.constant(2.5)),
        "shape": tf.shape(x), "shape64": tf.shape(x, out_type=tf.int64), "shape_u": tf.shape(unknown_rank),
        "shape_n0": tf.shape_n([x, x[:, 0]])[0], "shape_n1": tf.shape_n([x, x[:, 0]], out_type=tf.int64)[1],
        "size": tf.size(x), "size64": tf.size(i, out_type=tf.int64), "size_u": tf.size(unknown_rank),
        "rank": tf.rank(x), "rank_u": tf.rank(unknown_rank),
        "size_static": op("Size", tf.constant([[1, 2, 3]])), "rank_scalar": op("Rank", tf.constant(1.0)),
        "shape_scalar": op("Shape", tf.constant(1.0)),
    }
    assert fetches["rank_u"].op.type == "Rank" and fetches["size_u"].op.type == "Size"

    def feeds(n):
        return {x: batch(n, 3, 4), i: np.arange(n, dtype=np.int64), unknown_rank: np.zeros((2, n, 1), np.int32)}

    def expected(n, f):
        return {
            "identity": f[x], "stop": f[x], "snapshot": f[x], "n0": f[x], "n1": f[i],
            "default": np.array([[1.0, 2.0]], np.float32), "identity_scalar": np.float32(2.5),
            "shape": np.array([n, 3, 4], np.int32), "shape64": np.array([n, 3, 4], np.int64),
            "shape_u": np.array([2, n, 1], np.int32), "shape_n0": np.array([n, 3, 4], np.int32),
            "shape_n1": np.array([n, 4], np.int64), "size": np.int32(12 * n), "size64": np.int64(n),
            "size_u": np.int32(2 * n), "rank": np.int32(3), "rank_u": np.int32(3),
            "size_static": np.int32(3), "rank_scalar": np.int32(0), "shape_scalar": np.zeros(0, np.int32),
        }

    run_batches(fetches, feeds, expected)


def test_placeholder_with_default_fed():
    default = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), [None, 2])
    doubled = default * 2.0
    with tf.Session() as sess:
        assert_same(sess.run(doubled), np.array([[2.0, 4.0]], np.float32), "default")
        fed = np.arange(6, dtype=np.float32).reshape(3, 2)
        assert_same(sess.run(doubled, {default: fed}), fed * 2, "fed")


# -- reshape, expand_dims, squeeze, transpose ---------------------------------------------------------
def test_reshape_family():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.placeholder(tf.int32, [None, 1, 3, 1])
    shape = tf.shape(x)
    fetches = {
        "batch_flat": tf.reshape(x, [tf.shape(x)[0], -1]),
        "batch_flat_concat": tf.reshape(x, tf.concat([shape[:1], [-1]], 0)),
        "batch_flat_stack": tf.reshape(x, tf.stack([shape[0], 12])),
        "rows": tf.reshape(x, [-1, 4]),
        "flat": tf.reshape(x, [-1]),
        "flat64": tf.reshape(x, tf.constant([-1, 2], tf.int64)),
        "split_dims": tf.reshape(x, [-1, 3, 2, 2]),
        "like": tf.reshape(tf.reshape(x, [-1]), tf.shape(x)),
        "unstacked": tf.reshape(x, tf.unstack(tf.shape(x))),
        "gathered": tf.reshape(x, tf.gather(tf.shape(x), [0, 2, 1])),
        "scalar": tf.reshape(tf.constant([7.0]), []),
        "expand0": tf.expand_dims(x, 0), "expand1": tf.expand_dims(x, 1), "expand_last": tf.expand_dims(x, -1),
        "expand_scalar": tf.expand_dims(tf.constant(3), 0),
        "squeeze_all": tf.squeeze(y), "squeeze_1": tf.squeeze(y, [1]), "squeeze_neg": tf.squeeze(y, [-1]),
        "squeeze_both": tf.squeeze(y, [1, 3]),
    }
    for perm in itertools.permutations(range(3)):
        fetches["transpose" + "".join(map(str, perm))] = tf.transpose(x, perm)
    fetches["transpose_default"] = tf.transpose(x)
    fetches["transpose64"] = tf.transpose(x, tf.constant([1, 0, 2], tf.int64))
    fetches["conj_transpose"] = op("ConjugateTranspose", x, tf.constant([2, 1, 0]))

    def feeds(n):
        return {x: batch(n, 3, 4), y: batch(n, 1, 3, 1, dtype=np.int32)}

    def expected(n, f):
        xv, yv = f[x], f[y]
        out = {
            "batch_flat": xv.reshape(n, -1), "batch_flat_concat": xv.reshape(n, -1),
            "batch_flat_stack": xv.reshape(n, 12), "rows": xv.reshape(-1, 4), "flat": xv.reshape(-1),
            "flat64": xv.reshape(-1, 2), "split_dims": xv.reshape(-1, 3, 2, 2), "like": xv,
            "unstacked": xv, "gathered": xv.reshape(n, 4, 3), "scalar": np.float32(7.0),
            "expand0": xv[None], "expand1": xv[:, None], "expand_last": xv[..., None],
            "expand_scalar": np.array([3], np.int32),
            "squeeze_all": yv.reshape(n, 3), "squeeze_1": yv.reshape(n, 3, 1), "squeeze_neg": yv.reshape(n, 1, 3),
            "squeeze_both": yv.reshape(n, 3),
            "transpose_default": xv.transpose(), "transpose64": xv.transpose(1, 0, 2),
            "conj_transpose": xv.transpose(2, 1, 0),
        }
        for perm in itertools.permutations(range(3)):
            out["transpose" + "".join(map(str, perm))] = xv.transpose(perm)
        return out

    run_batches(fetches, feeds, expected)


def test_reshape_batch_flatten_two_sizes_one_compile():
    """The brief's canonical case: tf.reshape(x, [tf.shape(x)[0], -1]) with an unknown batch."""
    x = tf.placeholder(tf.float32, [None, 2, 5])
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    with tf.Session() as sess:
        for n in (2, 7):
            xv = batch(n, 2, 5)
            assert_same(sess.run(flat, {x: xv}), xv.reshape(n, 10), f"batch {n}")
        assert sess.cache_stats()["compiles"] == 1


# -- fill, zeros/ones(_like), broadcast_to, tile ---------------------------------------------------
def test_fill_broadcast_tile():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    b = tf.placeholder(tf.bool, [None, 2])
    k = tf.placeholder(tf.int64, [None, 1, 3])
    row = tf.constant([1.0, 2.0, 3.0, 4.0])
    fetches = {
        "fill": tf.fill([tf.shape(x)[0], 2], 7.0), "fill_static": tf.fill([2, 3], 5),
        "fill_big": tf.fill([40, 40], 1.5), "fill_bool": tf.fill(tf.shape(b), True),
        "zeros_like": tf.zeros_like(x), "ones_like": tf.ones_like(x), "zeros_like_bool": tf.zeros_like(b),
        "ones_like_int": tf.ones_like(k), "zeros_shape": tf.zeros(tf.shape(x), tf.int32),
        "ones_like_op": op("OnesLike", b), "zeros_like_op": op("ZerosLike", k),
        "broadcast_row": tf.broadcast_to(row, tf.shape(x)),
        "broadcast_col": tf.broadcast_to(tf.reshape(row, [4, 1, 1]), [4, 2, 3]),
        "broadcast_x": tf.broadcast_to(x, [2, tf.shape(x)[0], 3, 4]),
        "tile": tf.tile(x, [2, 1, 3]), "tile_ones": tf.tile(x, [1, 1, 1]),
        "tile_batch": tf.tile(k, [1, 4, 2]), "tile_bool": tf.tile(b, [3, 2]),
        "tile_symbolic": tf.tile(tf.expand_dims(row, 0), [tf.shape(x)[0], 2]),
        "tile_static": tf.tile(tf.constant([[1, 2]]), [2, 2]),
    }

    def feeds(n):
        return {x: batch(n, 3, 4), b: batch(n, 2, dtype=np.bool_), k: batch(n, 1, 3, dtype=np.int64)}

    def expected(n, f):
        xv, bv, kv = f[x], f[b], f[k]
        rv = np.array([1, 2, 3, 4], np.float32)
        return {
            "fill": np.full((n, 2), 7, np.float32), "fill_static": np.full((2, 3), 5, np.int32),
            "fill_big": np.full((40, 40), 1.5, np.float32), "fill_bool": np.ones((n, 2), bool),
            "zeros_like": np.zeros_like(xv), "ones_like": np.ones_like(xv), "zeros_like_bool": np.zeros_like(bv),
            "ones_like_int": np.ones_like(kv), "zeros_shape": np.zeros((n, 3, 4), np.int32),
            "ones_like_op": np.ones_like(bv), "zeros_like_op": np.zeros_like(kv),
            "broadcast_row": np.broadcast_to(rv, (n, 3, 4)),
            "broadcast_col": np.broadcast_to(rv.reshape(4, 1, 1), (4, 2, 3)),
            "broadcast_x": np.broadcast_to(xv, (2, n, 3, 4)),
            "tile": np.tile(xv, (2, 1, 3)), "tile_ones": xv, "tile_batch": np.tile(kv, (1, 4, 2)),
            "tile_bool": np.tile(bv, (3, 2)), "tile_symbolic": np.tile(rv[None], (n, 2)),
            "tile_static": np.tile(np.array([[1, 2]], np.int32), (2, 2)),
        }

    run_batches(fetches, feeds, expected)


# -- pad, mirror pad, reverse ------------------------------------------------------------------------
def test_pad_and_reverse():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    k = tf.placeholder(tf.int32, [None, 5])
    b = tf.placeholder(tf.bool, [None, 2])
    fetches = {
        "pad": tf.pad(x, [[1, 0], [0, 2], [3, 1]]), "pad64": tf.pad(k, tf.constant([[0, 1], [2, 2]], tf.int64)),
        "pad_none": tf.pad(x, [[0, 0], [0, 0], [0, 0]]),
        "pad_value": tf.pad(x, [[0, 2], [1, 1], [0, 0]], constant_values=-3.5),
        "pad_value_int": tf.pad(k, [[1, 1], [0, 3]], constant_values=9),
        "pad_bool": tf.pad(b, [[0, 1], [1, 0]]),
        "reflect": tf.pad(x, [[1, 1], [2, 1], [3, 0]], mode="REFLECT"),
        "reflect_k": tf.pad(k, [[0, 0], [4, 4]], mode="REFLECT"),
        "symmetric": tf.pad(x, [[2, 1], [3, 3], [0, 4]], mode="SYMMETRIC"),
        "symmetric_k": tf.pad(k, [[1, 0], [5, 2]], mode="symmetric"),
        "reverse0": tf.reverse(x, [0]), "reverse12": tf.reverse(x, [1, 2]), "reverse_neg": tf.reverse(x, [-1]),
        "reverse_none": tf.reverse(x, tf.constant([], tf.int32)), "reverse64": tf.reverse(k, tf.constant([1], tf.int64)),
        "reverse_v1": op("Reverse", x, tf.constant([True, False, True])), "reverse_bool": tf.reverse(b, [0, 1]),
    }

    def feeds(n):
        return {x: batch(n, 3, 4), k: batch(n, 5, dtype=np.int32), b: batch(n, 2, dtype=np.bool_)}

    def expected(n, f):
        xv, kv, bv = f[x], f[k], f[b]
        return {
            "pad": np.pad(xv, [[1, 0], [0, 2], [3, 1]]), "pad64": np.pad(kv, [[0, 1], [2, 2]]), "pad_none": xv,
            "pad_value": np.pad(xv, [[0, 2], [1, 1], [0, 0]], constant_values=-3.5),
            "pad_value_int": np.pad(kv, [[1, 1], [0, 3]], constant_values=9), "pad_bool": np.pad(bv, [[0, 1], [1, 0]]),
            "reflect": np.pad(xv, [[1, 1], [2, 1], [3, 0]], mode="reflect"),
            "reflect_k": np.pad(kv, [[0, 0], [4, 4]], mode="reflect"),
            "symmetric": np.pad(xv, [[2, 1], [3, 3], [0, 4]], mode="symmetric"),
            "symmetric_k": np.pad(kv, [[1, 0], [5, 2]], mode="symmetric"),
            "reverse0": xv[::-1], "reverse12": xv[:, ::-1, ::-1], "reverse_neg": xv[..., ::-1], "reverse_none": xv,
            "reverse64": kv[:, ::-1], "reverse_v1": xv[::-1, :, ::-1], "reverse_bool": bv[::-1, ::-1],
        }

    run_batches(fetches, feeds, expected)


# -- concat, stack, unstack, split ---------------------------------------------------------------------
def test_concat_stack_split():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.placeholder(tf.float32, [None, 3, 4])
    k = tf.placeholder(tf.int32, [None, 6])
    s = tf.placeholder(tf.int32, [])
    fetches = {
        "concat0": tf.concat([x, y, x], 0), "concat1": tf.concat([x, y], 1), "concat2": tf.concat([x, y], 2),
        "concat_neg": tf.concat([y, x], -1), "concat_neg3": tf.concat([x, y], -3),
        "concat64": tf.concat([x, y], tf.constant(1, tf.int64)), "concat_one": tf.concat([k], 0),
        "concat_empty": tf.concat([k, tf.zeros([0, 6], tf.int32)], 0),
        "concat_const": tf.concat([k, tf.constant([[1, 2, 3, 4, 5, 6]])], 0),
        "stack0": tf.stack([x, y]), "stack1": tf.stack([x, y, x], axis=1), "stack3": tf.stack([x, y], axis=3),
        "stack_neg": tf.stack([x, y], axis=-2), "stack_one": tf.stack([k], axis=1),
        "stack_scalars": tf.stack([s, s * 2, s]), "stack_const_scalars": tf.stack([tf.constant(1), s]),
        "split2": tf.split(k, 2, axis=1)[1], "split3_0": tf.split(k, 3, axis=-1)[0],
        "split3_2": tf.split(k, 3, axis=1)[2], "split_one": tf.split(x, 1, axis=0)[0],
        "splitv0": tf.split(k, [1, -1, 2], axis=1)[0], "splitv1": tf.split(k, [1, -1, 2], axis=1)[1],
        "splitv2": tf.split(k, [1, -1, 2], axis=1)[2], "splitv_batch": tf.split(x, [2, 2], axis=2)[1],
        "splitv_neg_first": tf.split(x, [-1, 1], axis=1)[0],
    }
    unstacked = tf.unstack(x, axis=1)
    for i, t in enumerate(unstacked):
        fetches[f"unstack1_{i}"] = t
    fetches["unstack_last"] = tf.unstack(k, axis=-1)[5]
    fetches["unstack_shape"] = tf.unstack(tf.shape(x))[0] * 1

    def feeds(n):
        return {x: batch(n, 3, 4), y: batch(n, 3, 4, seed=7), k: batch(n, 6, dtype=np.int32), s: np.int32(n)}

    def expected(n, f):
        xv, yv, kv = f[x], f[y], f[k]
        out = {
            "concat0": np.concatenate([xv, yv, xv], 0), "concat1": np.concatenate([xv, yv], 1),
            "concat2": np.concatenate([xv, yv], 2), "concat_neg": np.concatenate([yv, xv], -1),
            "concat_neg3": np.concatenate([xv, yv], 0), "concat64": np.concatenate([xv, yv], 1), "concat_one": kv,
            "concat_empty": kv, "concat_const": np.concatenate([kv, [[1, 2, 3, 4, 5, 6]]]).astype(np.int32),
            "stack0": np.stack([xv, yv]), "stack1": np.stack([xv, yv, xv], 1), "stack3": np.stack([xv, yv], 3),
            "stack_neg": np.stack([xv, yv], -2), "stack_one": kv[:, None],
            "stack_scalars": np.array([n, 2 * n, n], np.int32), "stack_const_scalars": np.array([1, n], np.int32),
            "split2": kv[:, 3:], "split3_0": kv[:, :2], "split3_2": kv[:, 4:], "split_one": xv,
            "splitv0": kv[:, :1], "splitv1": kv[:, 1:4], "splitv2": kv[:, 4:], "splitv_batch": xv[:, :, 2:],
            "splitv_neg_first": xv[:, :2], "unstack_last": kv[:, 5], "unstack_shape": np.int32(n),
        }
        for i in range(3):
            out[f"unstack1_{i}"] = xv[:, i]
        return out

    run_batches(fetches, feeds, expected)


def test_split_and_unstack_of_batch_dim():
    """Splitting a dim known only at run time: into one piece, or by num_split where the
    size is a multiple; unstack along it needs its size at compile time (num)."""
    x = tf.placeholder(tf.float32, [None, 4])
    double = tf.concat([x, x + 1.0], 0)
    first, second = tf.split(double, 2, axis=0)
    fetches = {"first": first, "second": second}

    def feeds(n):
        return {x: batch(n, 4)}

    def expected(n, f):
        return {"first": f[x], "second": f[x] + 1}

    run_batches(fetches, feeds, expected)


def test_empty_tensors():
    x = tf.placeholder(tf.float32, [None, 3])
    e = tf.placeholder(tf.float32, [None, 0])
    fetches = {
        "tile0": tf.tile(x, [0, 2]), "fill0": tf.fill([0, 3], 1.0), "pad_empty": tf.pad(e, [[1, 0], [2, 1]]),
        "concat_empty": tf.concat([e, e], 1), "reverse_empty": tf.reverse(e, [1]), "tile_empty": tf.tile(e, [2, 3]),
        "transpose_empty": tf.transpose(e), "reflect_rows": tf.pad(e, [[1, 1], [0, 0]], mode="REFLECT"),
        "zeros_like_empty": tf.zeros_like(e), "stack_empty": tf.stack([e, e], 1),
        "gather_none": tf.gather(x, tf.zeros([0], tf.int32)), "split_empty": tf.split(x, [3, 0], 1)[1],
        "one_hot0": tf.one_hot(tf.zeros([4], tf.int32), 0), "range0": tf.range(0),
        "select_empty": tf.where_v2(tf.zeros_like(e) > 0, e, e), "slice_empty": tf.slice(x, [0, 1], [-1, 0]),
        "broadcast_empty": tf.broadcast_to(e, [2, tf.shape(e)[0], 0]),
    }

    def feeds(n):
        return {x: batch(n, 3), e: np.zeros((n, 0), np.float32)}

    def expected(n, f):
        xv, ev = f[x], f[e]
        return {
            "tile0": np.tile(xv, (0, 2)), "fill0": np.ones((0, 3), np.float32), "pad_empty": np.pad(ev, [[1, 0], [2, 1]]),
            "concat_empty": ev, "reverse_empty": ev, "tile_empty": np.tile(ev, (2, 3)), "transpose_empty": ev.T,
            "reflect_rows": np.pad(ev, [[1, 1], [0, 0]], mode="reflect"), "zeros_like_empty": ev,
            "stack_empty": np.stack([ev, ev], 1), "gather_none": xv[[]], "split_empty": xv[:, 3:],
            "one_hot0": np.zeros((4, 0), np.float32), "range0": np.zeros(0, np.int32), "select_empty": ev,
            "slice_empty": xv[:, 1:1], "broadcast_empty": np.zeros((2, n, 0), np.float32),
        }

    run_batches(fetches, feeds, expected)


def test_data_movement_in_every_dtype():
    dtypes = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]
    holders = {np.dtype(d).name: tf.placeholder(tf.as_dtype(d), [None, 2, 3]) for d in dtypes}
    fetches = {}
    for name, x in holders.items():
        fetches.update({
            f"{name}/transpose": tf.transpose(x, [2, 0, 1]), f"{name}/concat": tf.concat([x, x[:, ::-1]], 1),
            f"{name}/stack": tf.stack([x, x], -1), f"{name}/slice": x[:, 1, ::2],
            f"{name}/gather": tf.gather(x, [2, 0], axis=2), f"{name}/pad": tf.pad(x, [[0, 1], [1, 0], [0, 0]]),
            f"{name}/reflect": tf.pad(x, [[1, 1], [0, 0], [2, 2]], "REFLECT"),
            f"{name}/tile": tf.tile(x, [1, 2, 1]), f"{name}/reverse": tf.reverse(x, [1]),
            f"{name}/reshape": tf.reshape(x, [-1, 6]), f"{name}/split": tf.split(x, 3, axis=2)[1],
            f"{name}/select": tf.where(tf.fill(tf.shape(x), True), x, x),
        })

    def feeds(n):
        return {x: batch(n, 2, 3, dtype=np.dtype(name).type) for name, x in holders.items()}

    def expected(n, f):
        out = {}
        for name, x in holders.items():
            xv = f[x]
            out.update({
                f"{name}/transpose": xv.transpose(2, 0, 1), f"{name}/concat": np.concatenate([xv, xv[:, ::-1]], 1),
                f"{name}/stack": np.stack([xv, xv], -1), f"{name}/slice": xv[:, 1, ::2],
                f"{name}/gather": xv[:, :, [2, 0]], f"{name}/pad": np.pad(xv, [[0, 1], [1, 0], [0, 0]]),
                f"{name}/reflect": np.pad(xv, [[1, 1], [0, 0], [2, 2]], mode="reflect"),
                f"{name}/tile": np.tile(xv, (1, 2, 1)), f"{name}/reverse": xv[:, ::-1],
                f"{name}/reshape": xv.reshape(-1, 6), f"{name}/split": xv[:, :, 1:2], f"{name}/select": xv,
            })
        return out

    run_batches(fetches, feeds, expected)


# -- gather, one_hot, range, select, where -----------------------------------------------------------
def test_gather():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    idx = tf.placeholder(tf.int32, [None])
    idx64 = tf.placeholder(tf.int64, [2, 2])
    scalar = tf.placeholder(tf.int32, [])
    fetches = {
        "axis0": tf.gather(x, idx), "axis1": tf.gather(x, [2, 0, 2], axis=1), "axis_neg": tf.gather(x, idx64, axis=-1),
        "axis1_64": tf.gather(x, tf.constant([1], tf.int64), axis=tf.constant(1, tf.int64)),
        "scalar_index": tf.gather(x, scalar, axis=2), "const": tf.gather(tf.constant([10, 20, 30]), idx64),
        "shape": tf.gather(tf.shape(x), [2, 0]) * 1, "shape_scalar": tf.gather(tf.shape(x), 0) * 1,
        "bool": tf.gather(tf.constant([True, False, True]), idx64),
    }

    def feeds(n):
        return {x: batch(n, 3, 4), idx: (np.arange(n)[::-1] % n).astype(np.int32),
                idx64: np.array([[0, 2], [1, 2]], np.int64), scalar: np.int32(n % 4)}

    def expected(n, f):
        xv = f[x]
        return {
            "axis0": xv[f[idx]], "axis1": xv[:, [2, 0, 2]], "axis_neg": np.take(xv, f[idx64], axis=-1),
            "axis1_64": xv[:, [1]], "scalar_index": xv[:, :, n % 4],
            "const": np.array([10, 20, 30], np.int32)[f[idx64]],
            "shape": np.array([4, n], np.int32), "shape_scalar": np.int32(n),
            "bool": np.array([True, False, True])[f[idx64]],
        }

    run_batches(fetches, feeds, expected)


def test_gather_out_of_range_index_is_a_run_time_error():
    x = tf.placeholder(tf.float32, [None, 3])
    idx = tf.placeholder(tf.int32, [None])
    feeds = {x: np.zeros((2, 3), np.float32), idx: np.array([0, 5], np.int32)}
    cases = [(tf.gather(x, idx), r"indices\[1\] = 5 is not in \[0, 2\)"),
             (tf.gather(x, [0, 3], axis=1), r"indices\[1\] = 3 is not in \[0, 3\)"),
             (tf.gather(tf.constant([1, 2, 3]), [5]), r"indices\[0\] = 5 is not in \[0, 3\)")]
    for tensor, message in cases:
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                sess.run(tensor, feeds)


def test_one_hot():
    idx = tf.placeholder(tf.int32, [None])
    idx2 = tf.placeholder(tf.int64, [None, 2])
    u8 = tf.placeholder(tf.uint8, [None])
    fetches = {
        "basic": tf.one_hot(idx, 4), "axis0": tf.one_hot(idx, 4, axis=0),
        "values": tf.one_hot(idx2, 3, on_value=5, off_value=-1), "mid": tf.one_hot(idx2, 3, axis=1, dtype=tf.float64),
        "bool": tf.one_hot(idx, 2, on_value=True, off_value=False), "uint8": tf.one_hot(u8, 5),
        "const": tf.one_hot([0, 2, -1, 7], 3),
    }

    def feeds(n):
        return {idx: (np.arange(n) % 6 - 1).astype(np.int32),
                idx2: np.stack([np.arange(n) % 4 - 1, np.arange(n)[::-1] % 3], 1).astype(np.int64),
                u8: (np.arange(n) * 2 % 7).astype(np.uint8)}

    def ref(indices, depth, axis=-1, on=1, off=0, dtype=np.float32):
        indices = np.asarray(indices).astype(np.int64)
        hot = indices[..., None] == np.arange(depth)
        out = np.where(hot, on, off).astype(dtype)
        return np.moveaxis(out, -1, axis) if axis != -1 else out

    def expected(n, f):
        return {
            "basic": ref(f[idx], 4), "axis0": ref(f[idx], 4, axis=0), "values": ref(f[idx2], 3, on=5, off=-1,
                                                                                     dtype=np.int32),
            "mid": ref(f[idx2], 3, axis=1, dtype=np.float64), "bool": ref(f[idx], 2, dtype=np.bool_),
            "uint8": ref(f[u8], 5), "const": ref([0, 2, -1, 7], 3),
        }

    run_batches(fetches, feeds, expected)


def test_range():
    x = tf.placeholder(tf.float32, [None, 3])
    fetches = {
        "basic": tf.range(5), "start_stop": tf.range(2, 9, 3), "negative": tf.range(10, 1, -4),
        "empty": tf.range(3, 3), "int64": tf.range(tf.constant(1, tf.int64), 6), "float": tf.range(0.0, 1.0, 0.1),
        "float_neg": tf.range(1.5, -2.0, -0.7), "double": tf.range(0, 2, 0.25, dtype=tf.float64),
        "batch": tf.range(tf.shape(x)[0]), "batch_step": tf.range(1, tf.shape(x)[0], 2),
        "batch_down": tf.range(tf.shape(x)[0], 0, -1),
        "sequence_mask": tf.sequence_mask(tf.cast(x[:, 0], tf.int32), 4),
        "sequence_mask_float": tf.sequence_mask(tf.constant([[0, 2], [3, 1]]), 3, dtype=tf.float32),
    }

    def feeds(n):
        return {x: (np.arange(n * 3).reshape(n, 3) % 6).astype(np.float32)}

    def tf_range(start, limit, delta, dtype):
        out, value = [], dtype(start)
        count = int(np.ceil(abs((dtype(limit) - dtype(start)) / dtype(delta))))
        for _ in range(count):
            out.append(value)
            value = dtype(value + dtype(delta))
        return np.array(out, dtype=dtype)

    def expected(n, f):
        return {
            "basic": np.arange(5, dtype=np.int32), "start_stop": np.arange(2, 9, 3, dtype=np.int32),
            "negative": np.arange(10, 1, -4, dtype=np.int32), "empty": np.zeros(0, np.int32),
            "int64": np.arange(1, 6, dtype=np.int64), "float": tf_range(0.0, 1.0, 0.1, np.float32),
            "float_neg": tf_range(1.5, -2.0, -0.7, np.float32), "double": np.arange(0, 2, 0.25),
            "batch": np.arange(n, dtype=np.int32), "batch_step": np.arange(1, n, 2, dtype=np.int32),
            "batch_down": np.arange(n, 0, -1, dtype=np.int32),
            "sequence_mask": np.arange(4) < f[x][:, :1].astype(np.int32),
            "sequence_mask_float": (np.arange(3) < np.array([[0, 2], [3, 1]])[..., None]).astype(np.float32),
        }

    run_batches(fetches, feeds, expected)


def test_select_and_select_v2():
    c = tf.placeholder(tf.bool, [None])
    c2 = tf.placeholder(tf.bool, [None, 3])
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 3])
    k = tf.placeholder(tf.int32, [None, 2, 3])
    fetches = {
        "rows": tf.where(c, x, y), "rows3": tf.where(c, k, -k), "same": tf.where(c2, x, y),
        "scalar": tf.where(tf.constant(False), x, y), "vector": tf.where(c, tf.cast(c, tf.int32) * 0 + 1,
                                                                       tf.zeros_like(tf.cast(c, tf.int32))),
        "v2_bcast": tf.where_v2(c2, x, 0.5), "v2_row": tf.where_v2(tf.constant([True, False, True]), x, y),
        "v2_col": tf.where_v2(tf.expand_dims(c, 1), k[:, 0], 7), "v2_scalar": tf.where_v2(True, x, y),
        "v2_all": tf.where_v2(tf.reshape(c2, [-1, 1, 3]), k, tf.constant([[1], [2]])),
        "bool_values": tf.where(c2, c2, tf.logical_not(c2)),
        "static": tf.where(tf.constant([True, False]), tf.constant([1, 2]), tf.constant([3, 4])),
    }

    def feeds(n):
        return {c: batch(n, dtype=np.bool_), c2: batch(n, 3, dtype=np.bool_, seed=3), x: batch(n, 3),
                y: batch(n, 3, seed=5), k: batch(n, 2, 3, dtype=np.int32)}

    def expected(n, f):
        cv, c2v, xv, yv, kv = f[c], f[c2], f[x], f[y], f[k]
        return {
            "rows": np.where(cv[:, None], xv, yv), "rows3": np.where(cv[:, None, None], kv, -kv),
            "same": np.where(c2v, xv, yv), "scalar": yv, "vector": cv.astype(np.int32),
            "v2_bcast": np.where(c2v, xv, np.float32(0.5)), "v2_row": np.where([True, False, True], xv, yv),
            "v2_col": np.where(cv[:, None], kv[:, 0], 7).astype(np.int32), "v2_scalar": xv,
            "v2_all": np.where(c2v.reshape(-1, 1, 3), kv, np.array([[1], [2]], np.int32)),
            "bool_values": np.where(c2v, c2v, ~c2v), "static": np.array([1, 4], np.int32),
        }

    run_batches(fetches, feeds, expected)


def test_where_of_a_constant_and_of_a_placeholder():
    static = tf.where(tf.constant([[True, False], [False, True]]))
    with tf.Session() as sess:
        assert_same(sess.run(static), np.array([[0, 0], [1, 1]], np.int64), "static where")
    c = tf.placeholder(tf.bool, [None])
    with tf.Session() as sess:  # on the host; a compiled consumer runs in a later stage
        assert_same(sess.run(tf.where(c), {c: np.array([True, False, True])}), np.array([[0], [2]], np.int64),
                    "where of a feed")
        assert_same(sess.run(tf.reduce_sum(tf.where(c)) * 2, {c: np.array([False, True, True])}), np.int64(6),
                    "a compiled op of where's result")


def test_where_with_a_data_dependent_size_inside_a_cond_is_refused():
    c = tf.placeholder(tf.bool, [None])
    out = tf.cond(tf.reduce_any(c), lambda: tf.reduce_sum(tf.where(c)), lambda: tf.constant(0, tf.int64))
    with tf.Session() as sess:
        with pytest.raises(UnsupportedOpsError, match=r"Where \(tf.where with only a condition\) inside a tf.cond "
                                                      r"or tf.while_loop: its number of rows is known only when it runs"):
            sess.run(out, {c: np.array([True, False])})


# -- failures ------------------------------------------------------------------------------------------
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=3, max_size=3),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=3, max_size=3),
       st.lists(st.integers(1, 3), min_size=3, max_size=3),
       st.permutations([0, 1, 2]), st.lists(st.integers(-3, 2), min_size=1, max_size=3, unique=True))
def test_random_pads_tiles_transposes_reverses(pads, mirror_pads, reps, perm, axes):
    """One graph per example holding every variant, on a static [3, 4, 5] input."""
    axes = sorted({a % 3 for a in axes})
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [3, 4, 5])
        xv = batch(3, 4, 5, dtype=np.int32)
        fetches = {
            "pad": tf.pad(x, pads), "pad_value": tf.pad(x, pads, constant_values=-7),
            "reflect": tf.pad(x, mirror_pads, mode="REFLECT"), "symmetric": tf.pad(x, pads, mode="SYMMETRIC"),
            "tile": tf.tile(x, reps), "transpose": tf.transpose(x, perm), "reverse": tf.reverse(x, axes),
        }
        want = {
            "pad": np.pad(xv, pads), "pad_value": np.pad(xv, pads, constant_values=-7),
            "reflect": np.pad(xv, mirror_pads, mode="reflect"), "symmetric": np.pad(xv, pads, mode="symmetric"),
            "tile": np.tile(xv, reps), "transpose": xv.transpose(perm), "reverse": np.flip(xv, axes),
        }
        with tf.Session() as sess:
            results = sess.run(fetches, {x: xv})
        for name, value in want.items():
            assert_same(results[name], value, f"{name} pads={pads} mirror={mirror_pads} reps={reps} perm={perm}")


def test_every_array_family_op_type_has_a_lowering():
    from tfc.frontend.ops import array_ops, concat_ops, control_flow_ops, selection_ops, slicing
    from tfc.frontend.registry import _REGISTRY

    modules = {m.__name__ for m in (array_ops, concat_ops, control_flow_ops, selection_ops, slicing)}
    entries = {name: cls for name, cls in _REGISTRY.items() if cls.__module__ in modules}
    assert len(entries) >= 40
    missing = sorted(name for name, cls in entries.items() if cls.lower is None and name != "Placeholder")
    assert not missing, missing


def test_cast_of_a_run_time_dim_to_float():
    x = tf.placeholder(tf.float32, [None, 3])
    count = tf.cast(tf.shape(x)[0], tf.float32)
    with tf.Session() as sess:
        assert_same(sess.run(count, {x: np.zeros((4, 3), np.float32)}), np.float32(4), "count")


def test_values_that_shape_outputs_must_be_known():
    x = tf.placeholder(tf.float32, [None, 4])
    target = tf.placeholder(tf.int32, [2])
    depth = tf.placeholder(tf.int32, [])
    cases = {
        "Reshape": tf.reshape(x, target), "Fill": tf.fill(target, 1.0), "Tile": tf.tile(x, target),
        "OneHot": tf.one_hot(tf.constant([1]), depth), "Transpose": tf.transpose(x, target),
    }  # (a Range of fed values runs between stages: test_selection_ops.py)
    feeds = {x: np.zeros((2, 4), np.float32), target: np.array([1, 1], np.int32), depth: np.int32(2)}
    for op_type, tensor in cases.items():
        with tf.Session() as sess:
            with pytest.raises(UnsupportedOpsError) as info:
                sess.run(tensor, feeds)
        message = str(info.value)
        assert f"({op_type})" in message and ("compile time" in message or "data-dependent" in message), message


def test_unsupported_gather_batch_dims_and_bad_reshape():
    params = tf.placeholder(tf.float32, [2, 3])
    indices = tf.placeholder(tf.int32, [2, 1])
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.Session() as sess:
        with pytest.raises(UnsupportedOpsError, match="batch_dims"):
            sess.run(tf.gather(params, indices, axis=1, batch_dims=1),
                     {params: np.zeros((2, 3), np.float32), indices: np.zeros((2, 1), np.int32)})
    with tf.Session() as sess:
        with pytest.raises(UnsupportedOpsError, match="cannot prove"):
            sess.run(tf.reshape(x, [-1, 2]), {x: np.zeros((4, 3), np.float32)})


# -- a runtime bug found here (fixed in tfc/runtime/executable.py): regression test ----------------
def test_runtime_arena_reuse_keeps_room_for_alignment():
    """A later run that needs slightly more temp arena than an earlier one must not reuse
    an arena that is too small once its base is aligned to 64 bytes (this wrote past the
    buffer: heap corruption, random aborts)."""
    import tfc

    x = tf.placeholder(tf.float32, [None, 4])
    first, second = tf.split(tf.concat([x, x + 1.0], 0), 2, axis=0)
    compiled = tfc.compile([first, second], feeds=[x])
    exe = compiled.result.executable
    real_entry = exe.code.entry
    short = []

    def checked_entry(slots, dims):
        need = exe._arena_size(tuple(dims[i] for i in range(len(exe.symbols))))
        if exe._contexts[0].arena.size - 63 < need:  # not enough room at the worst alignment offset
            short.append((exe._contexts[0].arena.size, need))
            return 0  # do not run into the overflow
        return real_entry(slots, dims)

    exe.code.entry = checked_entry
    for n in (3, 5):
        compiled(np.ones((n, 4), np.float32))
    assert not short, f"arena (bytes allocated, bytes needed): {short}"
