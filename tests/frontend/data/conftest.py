"""Helpers for the tf.data tests: TensorFlow's recorded behaviour (tests/fixtures/tf_data.json,
made by tests/fixtures/make_tf_data_fixtures.py) and a way to drain a dataset."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data.structure import flatten

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_data.json")


def load_fixture() -> dict:
    with open(FIXTURE) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def tf_data_fixture():
    return load_fixture()


def decode_value(entry) -> np.ndarray:
    if entry["dtype"] == "string":
        values = [v.encode("latin-1") for v in entry["value"]]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(entry["shape"])
    return np.array(entry["value"], dtype=entry["dtype"]).reshape(entry["shape"])


def drain(dataset, session=None, limit=10000) -> list:
    """Every element of ``dataset`` (flat lists of arrays), through a one-shot iterator."""
    flat = flatten(dataset.make_one_shot_iterator().get_next())
    out = []
    own = session is None
    session = session or tf.Session(graph=flat[0].graph)
    try:
        for _ in range(limit):
            try:
                out.append([np.asarray(v) for v in session.run(flat)])
            except tf.errors.OutOfRangeError:
                break
    finally:
        if own:
            session.close()
    return out


def shape_json(shape):
    return None if shape.ndims is None else shape.as_list()
