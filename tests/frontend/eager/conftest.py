"""Eager mode is process-wide in TF 1.x: every test here runs with it on and leaves the
process in graph mode, with the default graph it found (so graph-mode tests that run
after these in the same process are unaffected)."""
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import graph as graph_module
from tfc.frontend.eager import context, tape


@pytest.fixture(autouse=True)
def eager():
    assert not tf.executing_eagerly(), "a test left eager mode on"
    before = graph_module._GLOBAL["default_graph"]
    with context.eager_mode():
        assert tf.executing_eagerly()
        yield
    assert not tape.ACTIVE_TAPES, "a test left a GradientTape recording"
    assert not tf.executing_eagerly()
    assert graph_module._GLOBAL["default_graph"] is before
