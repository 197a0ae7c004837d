"""tf.io.decode_csv (tfc/frontend/ops/csv_ops.py) against TensorFlow 2.21's answers for the
same cases (tests/fixtures/make_tf_decode_csv.py -> decode_csv.json), and in a tf.data
pipeline over a text file, as TF1 input code uses it."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np

import tfc.compat.v1 as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
with open(os.path.join(FIXTURES, "decode_csv.json")) as _f:
    EXPECTED = json.load(_f)


def _cases():
    spec = importlib.util.spec_from_file_location("make_tf_decode_csv", os.path.join(FIXTURES, "make_tf_decode_csv.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cases


def test_every_case_gives_tensorflows_values_names_and_errors():
    got = json.loads(json.dumps(_cases()(tf)))
    assert set(got) == set(EXPECTED)
    for case, expected in EXPECTED.items():
        assert got[case] == expected, case


def test_text_line_dataset_parsed_by_decode_csv(tmp_path):
    path = tmp_path / "iris.csv"
    path.write_text("5.1,3.5,0\n4.9,3.0,1\n6.2,2.9,2\n")

    def parse(line):
        a, b, label = tf.decode_csv(line, [[0.0], [0.0], [0]])
        return tf.stack([a, b]), label

    with tf.Graph().as_default():
        features, labels = tf.data.make_one_shot_iterator(
            tf.data.TextLineDataset(str(path)).map(parse).batch(2)).get_next()
        doubled = features * 2.0
        with tf.Session() as sess:
            first = sess.run([doubled, labels])
            second = sess.run([doubled, labels])
    np.testing.assert_allclose(first[0], [[10.2, 7.0], [9.8, 6.0]], rtol=1e-6)
    np.testing.assert_array_equal(first[1], [0, 1])
    np.testing.assert_allclose(second[0], [[12.4, 5.8]], rtol=1e-6)
    np.testing.assert_array_equal(second[1], [2])
