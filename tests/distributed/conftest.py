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


@pytest.fixture(scope="session")
def tfc_cluster():
    """A tfc cluster shared by the tests that need one: ps:0 and worker:1 in their own
    processes (tfc_scripts/task.py), worker:0 in this one (the master the tests talk to).
    Yields {"spec": cluster dict, "master": worker:0's Server, "ps": process, "worker1": process}."""
    import json
    import os
    import sys

    import tfc.compat.v1 as tf

    from dist_helpers import HERE, free_port, start_process, stop_process

    ports = [free_port() for _ in range(3)]
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}", f"localhost:{ports[2]}"]}
    script = os.path.join(HERE, "tfc_scripts", "task.py")
    processes = []
    master = None
    try:
        for job, index in (("ps", 0), ("worker", 1)):
            processes.append(start_process(sys.executable, script, json.dumps(spec), job, index)[0])
        master = tf.train.Server(spec, job_name="worker", task_index=0)
        yield {"spec": spec, "master": master, "ps": processes[0], "worker1": processes[1]}
    finally:
        if master is not None:
            master.stop()
        for process in processes:
            stop_process(process)
