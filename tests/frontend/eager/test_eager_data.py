"""tf.data in eager mode: datasets built eagerly, ``for x in ds`` / ``iter`` / one-shot
iterators handing out EagerTensors, ``get_next()``'s OutOfRangeError, ``reduce``,
``element_spec``, ``num_parallel_calls``, and a GradientTape training loop over a dataset.
Expected values: real TensorFlow in eager mode (tests/fixtures/tf_eager_data.json, made by
tests/fixtures/make_tf_eager_data.py)."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe
from tfc.frontend.data.structure import flatten
from tfc.frontend.eager.tensor import EagerTensor

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager_data.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)


def decode(entry) -> np.ndarray:
    if entry["dtype"] == "string":
        out = np.empty(len(entry["value"]), dtype=object)
        out[:] = [v.encode("latin-1") for v in entry["value"]]
        return out.reshape(entry["shape"])
    return np.array(entry["value"], dtype=entry["dtype"]).reshape(entry["shape"])


def run(code: str) -> dict:
    scope = {"tf": tf, "np": np}
    exec(code, scope)  # noqa: S102 - the fixture's code
    return scope


def check_element(got, want: list) -> None:
    flat = flatten(got)
    assert len(flat) == len(want)
    for value, entry in zip(flat, want):
        assert isinstance(value, EagerTensor)
        expected = decode(entry)
        assert value.numpy().dtype == expected.dtype if entry["dtype"] != "string" else value.dtype == tf.string
        np.testing.assert_array_equal(np.asarray(value.numpy()), expected)


@pytest.mark.parametrize("name", sorted(TF["pipelines"]))
def test_pipelines_match_tensorflow(name):
    case = TF["pipelines"][name]
    ds = run(case["code"])["ds"]
    spec = flatten(ds.element_spec)
    assert [s.dtype.name for s in spec] == case["flat_types"]
    assert [None if s.shape.ndims is None else s.shape.as_list() for s in spec] == case["flat_shapes"]
    got = list(ds)
    assert len(got) == len(case["elements"])
    for element, want in zip(got, case["elements"]):
        check_element(element, want)


def test_get_next_raises_out_of_range_at_the_end_and_errors_in_order():
    case = TF["outcomes"]["map_parallel_error"]
    it = tf.data.make_one_shot_iterator(run(case["code"])["ds"])
    for outcome in case["outcomes"]:
        if "value" in outcome:
            check_element(it.get_next(), outcome["value"])
            continue
        error = getattr(tf.errors, outcome["error"])
        with pytest.raises(error) as info:
            it.get_next()
        if outcome["error"] == "OutOfRangeError":
            assert info.value.message == "End of sequence [Op:IteratorGetNext]"
        else:
            assert "inverse : Tensor had Inf values" in info.value.message
    with pytest.raises(tf.errors.OutOfRangeError):  # and stays at the end
        it.get_next()


def test_iterator_protocols():
    ds = tf.data.Dataset.from_tensor_slices({"a": np.arange(3), "b": np.arange(3.0) * 2})
    it = iter(ds)
    assert next(it)["b"].numpy() == 0.0
    assert it.next()["a"].numpy() == 1
    assert next(it)["a"].numpy() == 2
    with pytest.raises(StopIteration):
        next(it)
    one_shot = ds.make_one_shot_iterator()
    assert one_shot.output_types == {"a": tf.int64, "b": tf.float64}
    assert [int(e["a"]) for e in one_shot] == [0, 1, 2]
    assert [int(x) for x in tfe.Iterator(tf.data.Dataset.range(2))] == [0, 1]
    # every pass starts again
    assert [int(x) for x in ds.map(lambda d: d["a"])] == [0, 1, 2]
    assert [int(x) for x in ds.map(lambda d: d["a"])] == [0, 1, 2]


def test_graph_only_iterators_raise_tensorflows_errors():
    with pytest.raises(RuntimeError, match="make_initializable_iterator is not supported when eager execution is "
                                           "enabled. Use `for element in dataset` instead."):
        tf.data.Dataset.range(3).make_initializable_iterator()
    case = TF["errors"]["num_parallel_calls_zero"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_parallel_calls must be greater than zero"):
        run(case["code"])
    with pytest.raises(TypeError, match="The element types for the new state must match the initial state"):
        run(TF["errors"]["reduce_wrong_type"]["code"])
    with tf.Graph().as_default(), pytest.raises(RuntimeError, match="only supported inside of tf.function"):
        iter(tf.data.Dataset.range(2))
    with tf.Graph().as_default(), pytest.raises(RuntimeError, match="can only be used when eager execution"):
        tfe.Iterator(tf.data.Dataset.range(2))


@pytest.mark.parametrize("name", sorted(TF["reduce"]))
def test_reduce_matches_tensorflow(name):
    case = TF["reduce"][name]
    check_element(run(case["code"])["result"], case["value"])


def test_text_lines_read_eagerly(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"first\nsecond\n")
    assert [x.numpy() for x in tf.data.TextLineDataset(str(path))] == [b"first", b"second"]


def test_training_loop_over_a_dataset_matches_tensorflow():
    case = TF["training"]
    scope = run(case["code"])
    np.testing.assert_allclose(scope["losses"], case["losses"], rtol=2e-5)
    np.testing.assert_allclose(scope["w"].numpy(), case["w"], rtol=2e-5)
    np.testing.assert_allclose(scope["b"].numpy(), case["b"], rtol=2e-5, atol=1e-6)


def test_defun_step_fed_by_dataset():
    w = tf.Variable(np.ones((2, 1), np.float32))
    opt = tf.train.GradientDescentOptimizer(0.1)

    @tfe.defun
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - y))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss

    x = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    y = np.ones((4, 1), np.float32)
    expected_w = np.ones((2, 1), np.float32)
    for xb, yb in zip(x.reshape(2, 2, 2), y.reshape(2, 2, 1)):
        expected_w = expected_w - 0.1 * (2 * xb.T @ (xb @ expected_w - yb))
    for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(2):
        step(xb, yb)
    np.testing.assert_allclose(w.numpy(), expected_w, rtol=1e-6)
    assert step.stats["traces"] == 1


def test_functions_read_eager_variables_at_each_call():
    v = tf.Variable(2.0)
    ds = tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32) * v)
    assert [float(x) for x in ds] == [0.0, 2.0, 4.0]
    v.assign(10.0)
    assert [float(x) for x in ds] == [0.0, 10.0, 20.0]
    assert [x.numpy().tolist() for x in ds.batch(3)] == [[0.0, 10.0, 20.0]]  # the vectorised function too
    with pytest.raises(ValueError, match="cannot update the eager variable"):
        tf.data.Dataset.range(3).map(lambda x: v.assign_add(1.0))
