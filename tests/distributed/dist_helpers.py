"""Helpers for the distributed tests: free ports, TensorFlow's venv, subprocesses."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time

import pytest

TF_PYTHON = os.environ.get("TFC_TF_PYTHON", "/tmp/tfvenv/bin/python")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port() -> int:
    """A port nobody listens on now (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have_tf() -> bool:
    return os.path.exists(TF_PYTHON)


requires_tf = pytest.mark.skipif(not have_tf(), reason=f"TensorFlow's venv ({TF_PYTHON}) is absent: the live "
                                                      "interop tests need it (the transcript tests do not)")


def quiet_env() -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", PYTHONPATH=ROOT,
               GRPC_VERBOSITY="NONE")
    return env


def start_process(python: str, script: str, *args, ready: str = "READY", timeout: float = 60.0):
    """Start ``python script args`` and wait until it prints a line starting with ``ready``
    (returns (process, the rest of that line))."""
    log = tempfile.TemporaryFile(mode="w+")  # a pipe nobody reads would fill up and block the process
    process = subprocess.Popen([python, script, *map(str, args)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=log, text=True, env=quiet_env())
    process.log = log
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                raise RuntimeError(f"{script} exited with {process.returncode}: {read_log(process)}")
            continue
        if line.startswith(ready):
            return process, line[len(ready):].strip()
    process.kill()
    raise RuntimeError(f"{script} did not get ready within {timeout} s")


def read_log(process) -> str:
    process.log.seek(0)
    return process.log.read()[-3000:]


def run_json(python: str, script: str, *args, timeout: float = 120.0):
    """Run a script that prints one JSON document last; returns it."""
    done = subprocess.run([python, script, *map(str, args)], capture_output=True, text=True, env=quiet_env(),
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stop_process(process) -> None:
    if process.stdin is not None:
        process.stdin.close()
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
