"""An eager iterator read inside ``tfe.defun`` (TF 1.x's pattern: ``next(it)`` /
``it.get_next()`` on an iterator passed in or closed over): each call of the compiled
function reads the next element; past the end it raises ``OutOfRangeError``. Expected
logs: TensorFlow 2.21's ``tf.function`` running the same code
(tests/fixtures/data_extra.json, made by tests/fixtures/make_tf_data_extra.py).

tfc's defun has no autograph: a Python ``for`` over a dataset or iterator inside one
raises a NotImplementedError that names the limitation and the supported pattern."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe
from tfc.frontend.data.structure import flatten
from tfc.frontend.eager import context

from conftest import decode_value

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "data_extra.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)


@pytest.fixture(autouse=True)
def eager():
    with context.eager_mode():
        yield


def _run(code: str) -> list:
    log = []

    def call(fn):
        try:
            result = fn()
            log.append({"value": [v.numpy() for v in flatten(result)]})
        except tf.errors.OpError as e:
            log.append({"error": type(e).__name__, "message": e.message.split("\n")[0]})

    scope = {"tf": tf, "np": np, "function": tfe.defun, "call": call, "log": log,
             "traces": lambda f: f.stats["traces"]}
    exec(code, scope)
    return log


def _assert_log(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, dict) and "value" in e:
            want = [decode_value(v) for v in e["value"]]
            assert len(g["value"]) == len(want)
            for a, b in zip(g["value"], want):
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_allclose(a, b, rtol=1e-5)
        elif isinstance(e, float) or (isinstance(e, list) and e and isinstance(np.ravel(e)[0], float)):
            np.testing.assert_allclose(g, e, rtol=1e-5)
        else:
            assert g == e


@pytest.mark.parametrize("name", sorted(TF["defun"]))
def test_iterator_in_defun_matches_tensorflow(name):
    _assert_log(_run(TF["defun"][name]["code"]), TF["defun"][name]["log"])


def test_reads_run_once_per_call_and_in_order():
    it = iter(tf.data.Dataset.range(10))
    count = tfe.defun(lambda it: (next(it), next(it), it.get_next()))
    assert [int(v) for v in count(it)] == [0, 1, 2]
    assert [int(v) for v in count(it)] == [3, 4, 5]
    assert count.stats == {"traces": 1, "calls": 2, "eager_calls": 0}
    assert int(next(it)) == 6  # the same iterator, eagerly


def test_window_iterator_in_defun():
    it = iter(tf.data.Dataset.range(7).window(3, shift=2))

    @tfe.defun
    def skip(it):
        next(it)
        return tf.constant(1)

    skip(it)
    assert [int(v) for v in next(it)] == [2, 3, 4]


@pytest.mark.parametrize("code", ["for x in ds:\n        pass", "it = iter(ds)", "for x in iter_in:\n        pass"])
def test_python_loops_need_autograph(code):
    ds = tf.data.Dataset.range(3)
    namespace = {"tf": tf}
    exec(f"def body(ds, iter_in):\n    {code}\n    return tf.constant(0)", namespace)
    with pytest.raises(NotImplementedError, match="needs autograph, which tfc's defun does not have") as info:
        tfe.defun(namespace["body"])(ds, iter(ds))
    assert "next(it)" in str(info.value)
