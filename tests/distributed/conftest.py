"""Fixtures for the distributed tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def server():
    """One tfc server (job "local") shared by a test module; stopped at its end."""
    import tfc.compat.v1 as tf

    s = tf.train.Server.create_local_server()
    yield s
    s.stop()
