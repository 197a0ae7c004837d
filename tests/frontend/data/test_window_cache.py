"""``Dataset.window`` and ``Dataset.cache(filename)`` against real TensorFlow 2.21
(tests/fixtures/data_extra.json, made by tests/fixtures/make_tf_data_extra.py).

window: the element is a nest of datasets (DatasetSpec for output_types, output_shapes
and output_classes alike), flattened with ``flat_map`` in graph and eager mode, iterated
window by window eagerly, and read through ``get_next()`` in graph mode.

cache(filename): the scenarios TF's log was recorded for run here with the same helpers
(the upstream map's calls, the files on disk, TF's errors); the files TF wrote are read
back by tfc, and a one-component cache tfc writes is TF's byte for byte."""
import json
import os
import re
import shutil

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data.structure import DatasetSpec, flatten
from tfc.frontend.eager import context

from conftest import decode_value, drain, shape_json

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "data_extra.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)


def _spec_json(spec):
    if isinstance(spec, DatasetSpec):
        return {"dataset": _nest_json(spec.element_spec, _spec_json), "shape": shape_json(spec.shape)}
    return {"dtype": spec.dtype.name, "shape": shape_json(spec.shape)}


def _nest_json(value, leaf):
    if isinstance(value, dict):
        return {k: _nest_json(v, leaf) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_nest_json(v, leaf) for v in value]
    return leaf(value)


def _values(entries) -> list:
    return [decode_value(e) for e in entries]


def _assert_elements(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        want = _values(e)
        assert len(g) == len(want)
        for a, b in zip(g, want):
            a = np.asarray(a, dtype=object) if b.dtype == object else np.asarray(a)  # strings: bytes
            assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
            np.testing.assert_array_equal(a, b)


# -- window ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(TF["window"]))
def test_window_graph_matches_tensorflow(name):
    case = TF["window"][name]
    graph = tf.Graph()
    with graph.as_default():
        scope = {"tf": tf, "np": np}
        before = len(graph.get_operations())
        exec(case["code"], scope)
        win, ds = scope["win"], scope["ds"]
        op_types = []
        for op in graph.get_operations()[before:]:
            if op.type == "GeneratorDataset":
                op_types += ["TensorDataset", "FlatMapDataset"]
            elif op.type.endswith(("Dataset", "DatasetV2")):
                op_types.append(op.type)
        assert op_types == case["dataset_ops"]
        assert _nest_json(win.element_spec, _spec_json) == case["element_spec"]
        for attribute, classes in case["legacy_classes"].items():
            assert [type(x).__name__ for x in flatten(getattr(win, attribute))] == classes
            assert getattr(win, attribute) == win.element_spec  # TF answers the DatasetSpecs for all three
        assert [t.name for t in flatten(ds.output_types)] == case["flat_types"]
        assert [shape_json(s) for s in flatten(ds.output_shapes)] == case["flat_shapes"]
        _assert_elements(drain(ds), case["elements"])


@pytest.mark.parametrize("name", ["basic", "zip_dict", "ragged_padded", "vectors"])
def test_window_eager_matches_tensorflow(name):
    case = TF["window"][name]
    with context.eager_mode():
        scope = {"tf": tf, "np": np}
        exec(case["code"], scope)
        windows = [[[v.numpy() for v in component] for component in flatten(window)] for window in scope["win"]]
        flat = [[c.numpy() for c in flatten(element)] for element in scope["ds"]]
    expected = case["eager_windows"]
    assert len(windows) == len(expected)
    for got_window, want_window in zip(windows, expected):
        assert len(got_window) == len(want_window)
        for got_values, want_values in zip(got_window, want_window):
            _assert_elements([[v] for v in got_values], [[v] for v in want_values])
    _assert_elements(flat, case["elements"])


def test_window_spec_repr_and_get_next_in_graph():
    with tf.Graph().as_default():
        win = tf.data.Dataset.range(7).window(3, shift=2)
        assert repr(win.element_spec) == TF["window_repr"]
        assert repr(win.output_types) == TF["window_repr"]
        window = tf.data.make_one_shot_iterator(win).get_next()  # a dataset over the variant it reads
        assert isinstance(window, tf.data.Dataset) and window.output_types == tf.int64
        inner = tf.data.make_initializable_iterator(window)
        x = inner.get_next()
        with tf.Session() as sess:
            got = []
            for _ in range(3):  # each initialisation reads the next window
                sess.run(inner.initializer)
                got.append([int(v[0]) for v in drain_values(sess, x)])
    assert got == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]


def drain_values(sess, tensor) -> list:
    out = []
    while True:
        try:
            out.append(np.atleast_1d(sess.run(tensor)))
        except tf.errors.OutOfRangeError:
            return out


@pytest.mark.parametrize("name", sorted(TF["window_errors"]))
def test_window_errors_match_tensorflow(name):
    case = TF["window_errors"][name]
    with tf.Graph().as_default():
        scope = {"tf": tf, "np": np}
        exec(case["code"], scope)
        nxt = tf.data.make_one_shot_iterator(scope["win"].flat_map(lambda w: w)).get_next()
        with tf.Session() as sess:
            with pytest.raises(getattr(tf.errors, case["error"])) as info:
                sess.run(nxt)
    assert info.value.message == case["message"]


# -- cache(filename) --------------------------------------------------------------------------------
class _Harness:
    """tfc's side of the helpers make_tf_data_extra.py's CacheHarness gives TF."""

    def __init__(self, directory: str):
        self.directory = directory
        self.calls = []
        self.log = []

    def scope(self) -> dict:
        def record(x):
            self.calls.append(int(x))
            return x * 10

        def mapped(n):
            return tf.data.Dataset.range(n).map(lambda x: tf.py_func(record, [x], tf.int64))

        def took():
            out, self.calls[:] = list(self.calls), []
            return out

        def files():
            names = []
            for root, _, found in os.walk(self.directory):
                rel = os.path.relpath(root, self.directory)
                names += [n if rel == "." else f"{rel}/{n}" for n in found]
            return sorted(re.sub(r"tempstate\d+", "tempstate#", n) for n in names)

        def failure(e):
            message = e.message.split("\n")[0].split(" [Op:")[0].replace(self.directory + os.sep, "<dir>/")
            return [type(e).__name__, re.sub(r"Created at: \d+", "Created at: <t>", message)]

        def drain_ints(sess, nxt, limit=None):
            out = []
            while limit is None or len(out) < limit:
                try:  # the first value of the first component (as the fixture's harness)
                    out.append(int(np.asarray(flatten(sess.run(nxt))[0]).reshape(-1)[0]))
                except tf.errors.OutOfRangeError:
                    break
            return out

        return {"tf": tf, "np": np, "prefix": lambda name: os.path.join(self.directory, name), "files": files,
                "mapped": mapped, "took": took, "drain": drain_ints, "failure": failure,
                "eager_values": lambda values: [int(v) for v in values], "log": self.log}


@pytest.mark.parametrize("name", sorted(TF["cache"]))
def test_cache_scenario_matches_tensorflow(name, tmp_path, caplog):
    case = TF["cache"][name]
    harness = _Harness(str(tmp_path))
    if case["graph"]:
        with tf.Graph().as_default():
            exec(case["code"], harness.scope())
    else:
        with context.eager_mode():
            exec(case["code"], harness.scope())
    assert harness.log == case["log"]
    if name in ("partial_then_full", "take_then_repeat", "eager_partial_then_full"):  # discarded partial passes
        assert "did not fully read the dataset being cached" in caplog.text


def _write_fixture_files(entry, directory) -> str:
    prefix = os.path.join(directory, "cache")
    with open(prefix + ".index", "wb") as f:
        f.write(bytes.fromhex(entry["index_hex"]))
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(bytes.fromhex(entry["data_hex"]))
    return prefix


def test_cache_reads_the_files_tensorflow_wrote(tmp_path):
    entry = TF["cache_bundle"]
    prefix = _write_fixture_files(entry, str(tmp_path))
    calls = []

    def upstream(x):
        calls.append(int(x))
        return x

    with tf.Graph().as_default():
        # a different upstream of the same structure: the cache is read, the upstream never runs
        ds = tf.data.Dataset.range(9).map(lambda x: tf.py_func(upstream, [x], tf.int64)).map(
            lambda x: ({"a": x, "s": tf.as_string(x)}, tf.zeros([2]))).cache(prefix)
        got = drain(ds)
    assert calls == []
    _assert_elements(got, entry["elements"])
    assert sorted(os.listdir(tmp_path)) == entry["files"]


def test_cache_writes_tensorflow_bytes_for_one_component(tmp_path):
    entry = TF["cache_single"]
    prefix = os.path.join(str(tmp_path), "cache")
    with tf.Graph().as_default():
        got = drain(eval(entry["code"], {"tf": tf, "np": np}).cache(prefix))
    _assert_elements(got, entry["elements"])
    assert sorted(os.listdir(tmp_path)) == entry["files"]
    assert open(prefix + ".index", "rb").read().hex() == entry["index_hex"]
    assert open(prefix + ".data-00000-of-00001", "rb").read().hex() == entry["data_hex"]


def test_cache_round_trip_in_chunks_and_corruption(tmp_path):
    """A batched, shuffled pipeline's cache read back in chunks (one gather per run of
    elements) gives the first pass's elements; a flipped byte is a DataLossError."""
    prefix = os.path.join(str(tmp_path), "big")
    features = np.arange(600 * 5, dtype=np.float32).reshape(600, 5)
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((features, np.arange(600))).shuffle(50, seed=3).cache(prefix)
        nxt = tf.data.make_initializable_iterator(ds.batch(64))
        x = nxt.get_next()
        with tf.Session() as sess:
            passes = []
            for _ in range(2):
                sess.run(nxt.initializer)
                passes.append(drain_values(sess, x[0]))
    first, second = (np.concatenate(p) for p in passes)
    np.testing.assert_array_equal(first, second)  # the second pass reads the file: the same order
    assert sorted(first[:, 0].tolist()) == features[:, 0].tolist()
    data = bytearray(open(prefix + ".data-00000-of-00001", "rb").read())
    data[1000] ^= 1
    open(prefix + ".data-00000-of-00001", "wb").write(bytes(data))
    with tf.Graph().as_default():
        nxt = tf.data.make_one_shot_iterator(tf.data.Dataset.range(1).map(
            lambda i: (tf.zeros([5]), i)).cache(prefix).batch(600)).get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.DataLossError, match="Checksum does not match"):
                sess.run(nxt)


def test_cache_in_memory_still_replays(tmp_path):
    calls = []

    def upstream(x):
        calls.append(int(x))
        return x

    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(3).map(lambda x: tf.py_func(upstream, [x], tf.int64)).cache().repeat(2)
        got = [int(e[0]) for e in drain(ds)]
    assert got == [0, 1, 2, 0, 1, 2] and calls == [0, 1, 2]
    assert os.listdir(tmp_path) == []


def test_cache_copy_of_a_previous_process(tmp_path):
    """Files written by one pass and moved elsewhere are a complete cache there."""
    first = os.path.join(str(tmp_path), "one")
    with tf.Graph().as_default():
        drain(tf.data.Dataset.range(4).map(lambda x: x * 3).cache(first))
    os.mkdir(os.path.join(str(tmp_path), "moved"))
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(first + suffix, os.path.join(str(tmp_path), "moved", "two" + suffix))
    with tf.Graph().as_default():
        got = drain(tf.data.Dataset.range(100).cache(os.path.join(str(tmp_path), "moved", "two")))
    assert [int(e[0]) for e in got] == [0, 3, 6, 9]
