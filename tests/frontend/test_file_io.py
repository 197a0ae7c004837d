"""tf.gfile / tf.io.gfile and tf.io.read_file / write_file / matching_files
(tfc/frontend/file_io.py) against what TensorFlow 2.21 did in the same scenario
(tests/fixtures/make_tf_file_io.py -> tests/fixtures/file_io.json)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

import tfc.compat.v1 as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
with open(os.path.join(FIXTURES, "file_io.json")) as _f:
    EXPECTED = json.load(_f)


def _scenario():
    spec = importlib.util.spec_from_file_location("make_tf_file_io", os.path.join(FIXTURES, "make_tf_file_io.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.scenario


def test_every_file_operation_does_what_tensorflow_did():
    with tf.Graph().as_default():
        got = json.loads(json.dumps(_scenario()(tf)))  # as the fixture recorded it (tuples as lists)
    assert set(got) == set(EXPECTED)
    for case, expected in EXPECTED.items():
        if case == "schemes":
            assert got[case] == ["ok", "['file', '']"]  # tfc serves local files only
        elif case == "read_missing":
            assert got[case][0] == expected[0] and got[case][1].split("\n")[0] == expected[1]
        else:
            assert got[case] == expected, case


def test_other_file_systems_are_unimplemented_errors():
    with pytest.raises(tf.errors.UnimplementedError, match=r"File system scheme 'gs' not implemented"):
        tf.gfile.Exists("gs://bucket/x")
