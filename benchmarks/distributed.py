"""Between-graph training on localhost: 1 ps and 2 workers, tfc's servers vs TensorFlow's.

    python -m benchmarks.distributed                                  # tfc and TF (if its venv exists)
    python -m benchmarks.distributed --peers tfc --steps 20 --sizes 64,32,10   # quick
    python -m benchmarks.distributed --tf-python /path/tf-venv/bin/python --json out.json

Each peer gets its own cluster of three processes (benchmarks/dist_task.py; TensorFlow's
under ``--tf-python`` with PYTHONPATH=this checkout, as benchmarks.single is run): ps:0
holds an MLP's variables (``--sizes``, default 784,512,512,10), each worker builds the same
graph with ``tf.train.replica_device_setter`` and trains it on its own batch (``--batch``,
default 64) with SGD through ``tf.Session(server.target)``. Worker 0 initializes the
variables; both workers run ``--warmup`` steps, then ``--steps`` timed steps at the same
time. Reported per peer: the median step time of each worker, the bytes moved per step,
and the CPU time each process used per step (all its threads; steadier than wall times on
a busy machine). tfc counts the tensor bytes it decodes off the wire in every process
(between tasks: RunGraph/RecvTensor; between a client and its master: RunStep feeds and
fetches, handed over in-process as TF's LocalMaster does, so not sent over gRPC).
TensorFlow's runtime cannot be counted from Python: its line gives what a step must move
between the tasks (the variables to the worker, their gradients back: 2 x the parameter
bytes), and its client reaches the master in its process without gRPC (TF's LocalMaster).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TF_PYTHON = os.environ.get("TFC_TF_PYTHON", "/tmp/tfvenv/bin/python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Task:
    """One dist_task process, driven line by line."""

    def __init__(self, python, framework, cluster, job, index, sizes, batch, timeout):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
                   TF_CPP_MIN_LOG_LEVEL="3", GRPC_VERBOSITY="ERROR", CUDA_VISIBLE_DEVICES="")
        self.name = f"{framework} {job}:{index}"
        self.timeout = timeout
        self.log = tempfile.TemporaryFile(mode="w+")  # stderr: a pipe nobody reads could fill and block
        self.process = subprocess.Popen(
            [python, "-m", "benchmarks.dist_task", framework, json.dumps(cluster), job, str(index),
             ",".join(map(str, sizes)), str(batch)], cwd=ROOT, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def expect(self, prefix=None):
        """The next line of output (JSON-decoded unless ``prefix``); raises if the task ends."""
        deadline = time.monotonic() + self.timeout
        while True:
            line = self.process.stdout.readline()
            if not line:
                self.process.wait(5)
                self.log.seek(0)
                raise RuntimeError(f"{self.name} exited ({self.process.poll()}): {self.log.read()[-3000:]}")
            if prefix is not None and line.startswith(prefix):
                return line
            if prefix is None and line.startswith("{"):
                return json.loads(line)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no answer within {self.timeout} s")

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def ask(self, command: str):
        self.send(command)
        return self.expect()

    def stop(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("quit")
                self.process.stdin.close()
                self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        if self.process.poll() is None:
            self.process.kill()  # TF's grpc server may keep a process alive
            self.process.wait()


def run_peer(framework: str, python: str, args) -> dict:
    ports = [free_port() for _ in range(3)]
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}", f"localhost:{ports[2]}"]}
    tasks = []
    try:
        tasks.append(Task(python, framework, cluster, "ps", 0, args.sizes, args.batch, args.task_timeout))
        tasks[0].expect("READY")
        for index in range(2):
            tasks.append(Task(python, framework, cluster, "worker", index, args.sizes, args.batch, args.task_timeout))
        for task in tasks[1:]:
            task.expect("READY")
        ps, workers = tasks[0], tasks[1:]
        workers[0].ask("init")
        for phase, count in (("warmup", args.warmup), ("timed", args.steps)):
            if phase == "timed":
                for task in tasks:
                    task.ask("reset")
            for worker in workers:  # both at once: the steps of one interleave with the other's
                worker.send(f"steps {count}")
            replies = [worker.expect() for worker in workers]
        counts = [task.ask("report") for task in tasks]
    finally:
        for task in tasks:
            task.stop()
    steps = 2 * args.steps
    result = {"framework": framework, "medians_s": [statistics.median(r["times"]) for r in replies],
              "times_s": [r["times"] for r in replies],
              "loss_first_last": [[r["losses"][0], r["losses"][-1]] for r in replies]}
    result["cpu_s_per_step"] = {task.name.split(" ", 1)[1]: c["cpu_s"] / steps for task, c in zip(tasks, counts)}
    if counts[0]["task"] is not None:
        result["task_bytes_per_step"] = sum(c["task"] for c in counts) / steps
        result["client_bytes_per_step"] = sum(c["client"] for c in counts) / steps
    return result


def param_bytes(sizes) -> int:
    return 4 * sum(m * n + n for m, n in zip(sizes[:-1], sizes[1:]))


def format_bytes(n) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.distributed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default="tfc,tf", help="tfc,tf (default both; tf where --tf-python exists)")
    parser.add_argument("--sizes", type=lambda t: [int(s) for s in t.split(",")], default=[784, 512, 512, 10],
                        help="layer widths (default 784,512,512,10)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100, help="timed steps per worker (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per worker first (default 10)")
    parser.add_argument("--repeat", type=int, default=1, help="run each peer's cluster N times, alternating")
    parser.add_argument("--tf-python", default=DEFAULT_TF_PYTHON, help=f"TensorFlow's interpreter (default "
                                                                       f"$TFC_TF_PYTHON or {DEFAULT_TF_PYTHON})")
    parser.add_argument("--task-timeout", type=float, default=300.0, help="seconds a task may take to answer")
    parser.add_argument("--json", metavar="PATH", help="write every sample to PATH")
    args = parser.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    pythons = {"tfc": sys.executable, "tf": args.tf_python}
    nbytes = param_bytes(args.sizes)
    print(f"between-graph MLP {'-'.join(map(str, args.sizes))}, batch {args.batch}, SGD; 1 ps + 2 workers on "
          f"localhost; {args.steps} timed steps per worker after {args.warmup}; parameters {format_bytes(nbytes)}",
          flush=True)
    results, status = [], 0
    for rep in range(args.repeat):
        for peer in peers:
            if peer == "tf" and not os.path.exists(args.tf_python):
                print(f"tf: not installed ({args.tf_python} is absent)")
                continue
            try:
                r = run_peer(peer, pythons[peer], args)
            except Exception as e:  # noqa: BLE001 - report and go on with the next peer
                print(f"{peer}: ERROR {type(e).__name__}: {e}", flush=True)
                status = 1
                continue
            results.append(r)
            medians = "  ".join(f"worker {i} {m * 1e3:.2f} ms" for i, m in enumerate(r["medians_s"]))
            if "task_bytes_per_step" in r:
                moved = (f"moved/step: between tasks {format_bytes(r['task_bytes_per_step'])}, client<->master "
                         f"{format_bytes(r['client_bytes_per_step'])} (in-process, not on the wire)")
            else:
                moved = f"moved/step: between tasks {format_bytes(2 * nbytes)} (variables + gradients, computed)"
            loss = ", ".join(f"{a:.3f}->{b:.3f}" for a, b in r["loss_first_last"])
            cpu = ", ".join(f"{task} {seconds * 1e3:.1f}" for task, seconds in r["cpu_s_per_step"].items())
            print(f"{peer:>3}: median step {medians}; {moved}; CPU ms per step (of both workers' steps): {cpu}; "
                  f"loss {loss}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": args.sizes, "batch": args.batch, "steps": args.steps, "warmup": args.warmup,
                       "param_bytes": nbytes, "results": results}, f, indent=1)
        print(f"wrote {args.json}")
    return status


if __name__ == "__main__":
    sys.exit(main())
