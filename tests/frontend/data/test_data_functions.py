"""Functions of map/filter/flat_map: traced once, run compiled per element or vectorised over
a chunk (the same values either way), captures, and the refusal of ops the compiler
cannot compile."""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data.dataset_ops import functions_of

from conftest import drain


def _functions(graph) -> list:
    return [f for f in functions_of(graph).values() if hasattr(f, "batched")]


VECTORISABLE = {
    "arith_broadcast": (lambda x: (x * 2.0 + tf.constant([1.0, 2.0, 3.0]), tf.reduce_sum(x, axis=-1)),),
    "reshape_transpose": (lambda x: tf.transpose(tf.reshape(x, [3, 1]), [1, 0]),),
    "slices_onehot": (lambda x: (x[1:], x[0], tf.one_hot(tf.cast(x[2], tf.int32) % 3, 3)),),
    "reduce_keepdims_concat": (lambda x: tf.concat([x, tf.reduce_max(x, keepdims=True)], 0),),
    "expand_squeeze_stack": (lambda x: tf.stack([tf.squeeze(tf.expand_dims(x, 0)), x * x], axis=1),),
    "cast_compare_select": (lambda x: tf.where(x > 1.0, x, -x),),
    "mean_argmax": (lambda x: (tf.reduce_mean(x), tf.argmax(x)),),
}


@pytest.mark.parametrize("name", sorted(VECTORISABLE))
def test_vectorised_function_matches_per_element(name):
    (fn,) = VECTORISABLE[name]
    data = np.random.RandomState(1).randn(7, 3).astype(np.float32)
    with tf.Graph().as_default() as graph:
        dataset = tf.data.Dataset.from_tensor_slices(data).map(fn)
        (function,) = _functions(graph)
        batched = function.batched()
        assert batched is not None, f"{name} should be vectorised"
        chunk = function.call_batch([data], [])
        for i in range(len(data)):
            single = function.call([data[i]], [])
            for b, s in zip(chunk, single):
                np.testing.assert_allclose(b[i], s, rtol=1e-6, atol=1e-6)
        through_batch = drain(dataset.batch(7))  # the pipeline hands the map one chunk of 7
        for got, want in zip(through_batch[0], chunk):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_stateful_and_unvectorisable_functions_run_per_element():
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(3)
        dataset = tf.data.Dataset.range(6).map(lambda x: tf.random_uniform([2]) + tf.cast(x, tf.float32)).batch(6)
        (function,) = _functions(graph)
        assert function.batched() is None
        (batch,) = drain(dataset)[0]
    assert batch.shape == (6, 2)
    noise = batch - np.arange(6)[:, None]
    assert len({tuple(row) for row in noise.round(6).tolist()}) == 6  # one draw per element


def test_an_op_the_compiler_cannot_compile_is_named():
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x))
        with pytest.raises(tf.errors.UnimplementedError) as info:
            drain(dataset)
    message = info.value.message
    assert "tf.data: the function" in message and "of 'MapDataset' (MapDataset) cannot be compiled" in message
    assert "'Fill' (Fill)" in message and "must be known at compile time" in message


def test_captures_outer_tensors_and_nested_functions():
    with tf.Graph().as_default() as graph:
        offset = tf.constant(100, tf.int64)
        scale = tf.constant(2, tf.int64) * 5  # a computed outer tensor
        dataset = tf.data.Dataset.range(3).flat_map(
            lambda x: tf.data.Dataset.range(x + 1).map(lambda y: y * scale + offset))
        map_op = [op for op in graph.get_operations() if op.type == "FlatMapDataset"][0]
        assert len(map_op.inputs) == 3  # the input dataset and the two captures
        got = [e[0].item() for e in drain(dataset)]
    assert got == [100, 100, 110, 100, 110, 120]


def test_identity_and_restructuring_functions_run_nothing():
    with tf.Graph().as_default() as graph:
        dataset = tf.data.Dataset.from_tensor_slices((np.arange(3), np.array([b"a", b"b", b"c"]))) \
            .map(lambda a, b: {"text": b, "n": a})
        (function,) = _functions(graph)
        got = drain(dataset)
        assert function._program is None  # no program, nothing compiled
    assert [(e[0].item(), e[1].item()) for e in got] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_filter_vectorised_and_per_element_agree():
    data = np.arange(20)
    with tf.Graph().as_default() as graph:
        dataset = tf.data.Dataset.from_tensor_slices(data).filter(lambda x: tf.equal(x % 3, 1))
        (function,) = _functions(graph)
        assert function.batched() is not None
        in_chunks = [e[0].item() for e in drain(dataset.batch(20).unbatch())]
        one_by_one = [e[0].item() for e in drain(dataset)]
    assert in_chunks == one_by_one == [x for x in data.tolist() if x % 3 == 1]


def test_parse_single_example_in_map_is_vectorised(tmp_path):
    path = str(tmp_path / "e.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(5):
            feature = {"v": tf.train.Feature(float_list=tf.train.FloatList(value=[i, -i]))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    with tf.Graph().as_default() as graph:
        spec = {"v": tf.FixedLenFeature([2], tf.float32)}
        dataset = tf.data.TFRecordDataset(path).map(lambda r: tf.parse_single_example(r, spec)["v"] * 10.0)
        (function,) = _functions(graph)
        assert function.batched() is not None
        (batch,) = drain(dataset.batch(5))[0]
    assert batch.tolist() == [[10.0 * i, -10.0 * i] for i in range(5)]
