"""Every recorded pipeline and error of TensorFlow (tests/fixtures/tf_data.json) run with
tfc: elements, output types and shapes, the dataset ops the code adds, error classes and
messages."""
import re

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data.structure import flatten

from conftest import decode_value, drain, load_fixture, shape_json

FIXTURE = load_fixture()

# tfc builds these with ops of its own where TF 2 differs from TF 1.15: one reader op taking
# the file names (TF 2: a flat_map over a dataset of file names), no RewriteDataset in
# enumerate, no MapDataset before UnbatchDataset, ParallelMapDataset (TF 2:
# ParallelMapDatasetV2). A generator is one GeneratorDataset where TF has
# TensorDataset + FlatMapDataset (compared as those).
OP_TYPES_DIFFER = {"text_lines", "tfrecord_parse", "tfrecord_batch_parse", "fixed_length", "enumerate", "unbatch",
                   "batch_unbatch", "map_parallel"}


def _run_case(code, tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        scope = {"tf": tf, "np": np, "tmpdir": str(tmp_path)}
        before = len(graph.get_operations())
        exec(code, scope)
        dataset = scope["ds"]
        op_types = []
        for op in graph.get_operations()[before:]:
            if op.type == "GeneratorDataset":
                op_types += ["TensorDataset", "FlatMapDataset"]
            elif op.type.endswith(("Dataset", "DatasetV2")):
                op_types.append(op.type)
        return dataset, op_types, drain(dataset)


@pytest.mark.parametrize("name", sorted(FIXTURE["pipelines"]))
def test_pipeline_matches_tensorflow(name, tmp_path):
    case = FIXTURE["pipelines"][name]
    dataset, op_types, elements = _run_case(case["code"], tmp_path)
    assert [t.name for t in flatten(dataset.output_types)] == case["flat_types"]
    assert [shape_json(s) for s in flatten(dataset.output_shapes)] == case["flat_shapes"]
    assert [shape_json(s) for s in flatten(tf.data.get_output_shapes(dataset))] == case["flat_shapes"]
    if name not in OP_TYPES_DIFFER:
        assert op_types == case["dataset_ops"]
    expected = [[decode_value(c) for c in element] for element in case["elements"]]
    got = [[np.asarray(c) for c in element] for element in elements]
    if case.get("unordered"):  # shuffle: tfc's permutation is its own; the same elements
        expected_flat = sorted(v for e in expected for c in e for v in c.reshape(-1).tolist())
        got_flat = sorted(v for e in got for c in e for v in c.reshape(-1).tolist())
        assert got_flat == expected_flat
        assert [[c.shape for c in e] for e in got] == [[c.shape for c in e] for e in expected]
        return
    assert len(got) == len(expected), (got, expected)
    for g, e in zip(got, expected):
        assert len(g) == len(e)
        for gc, ec in zip(g, e):
            assert gc.shape == ec.shape
            assert gc.dtype == ec.dtype or (ec.dtype == object and gc.dtype.kind in "OS")
            if ec.dtype == object:
                assert np.asarray(gc, dtype=object).tolist() == ec.tolist()
            else:
                np.testing.assert_allclose(gc, ec, rtol=1e-6)


# error name -> how tfc's message relates to TF's: "equal", "contains" (TF's text inside tfc's),
# "within" (tfc's kernel text inside TF's longer one), or "class" (TF 2 words it with
# TensorSpecs; tfc keeps TF 1.15's text)
ERROR_MESSAGES = {
    "batch_different_shapes": "equal", "batch_size_zero": "equal", "concatenate_types": "class",
    "filter_not_bool": "class", "generator_shape": "within", "generator_type": "class",
    "initializer_shapes": "tf1_repr", "initializer_types": "equal", "missing_file": "path",
    "no_initializer": "class", "one_shot_placeholder": "contains", "pad_smaller": "equal",
    "parse_missing_feature": "within", "range_zero_step": "equal", "shuffle_buffer_zero": "equal",
    "slices_mismatch": "equal", "slices_scalar": "equal", "unbatch_scalar": "equal",
}


@pytest.mark.parametrize("name", sorted(FIXTURE["errors"]))
def test_error_matches_tensorflow(name, tmp_path):
    case = FIXTURE["errors"][name]
    graph = tf.Graph()
    with graph.as_default():
        scope = {"tf": tf, "np": np, "tmpdir": str(tmp_path)}
        with pytest.raises((ValueError, TypeError, tf.errors.OpError)) as info:
            exec(case["code"], scope)
            assert case["phase"] == "run", "expected an error building the dataset"
            drain(scope["ds"])
    error = info.value
    assert type(error).__name__ == case["error"]
    message = error.message if isinstance(error, tf.errors.OpError) else str(error)
    rule = ERROR_MESSAGES[name]
    if rule == "equal":
        assert message == case["message"]
    elif rule == "contains":
        assert case["message"] in message
    elif rule == "within":
        kernel_text = message.split("\n")[0]
        assert kernel_text in case["message"], (kernel_text, case["message"])
    elif rule == "tf1_repr":  # TensorShape([Dimension(2)]) as TF 1.15 prints it; TF 2: TensorShape([2])
        assert re.sub(r"Dimension\((\w+)\)", r"\1", message) == case["message"]
    elif rule == "path":
        assert message.endswith("nope.tfrecord; No such file or directory")
