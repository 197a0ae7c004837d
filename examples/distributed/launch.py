"""Run a ps/worker TF1 program's tasks on this machine, each in its own process.

    python examples/distributed/launch.py examples/distributed/bg_dist.py            # 1 ps, 2 workers
    python examples/distributed/launch.py bg_dist.py --ps 1 --workers 3 -- --logdir /tmp/x
    python examples/distributed/launch.py --ps-script ps_4_15.py \\
        --worker-script worker_4_16.py --worker-script worker2_4_17.py --hosts-only
    python examples/distributed/launch.py server.py --ps 0 --workers 1 --client client.py --hosts-only

Picks a free localhost port per task and starts every task with the flags the seeds'
programs read: ``--job_name=ps|worker --task_index=I --ps_hosts=H,.. --worker_hosts=H,..``
(``--hosts-only``: only the two host lists, for programs whose role is written in the file),
then anything after ``--``. The ps tasks start first; the workers once every ps port
accepts connections; a ``--client`` script (given the host lists) once every worker's does.

Waits (at most ``--timeout`` seconds) for the workers to exit, or for the client when there
is one, then stops the tasks still serving (a ps blocks in ``server.join()`` for ever, as in
TensorFlow) and prints each process's output and exit code. Exits 0 when every worker (and
the client) exited 0 in time. The processes run in ``--workdir`` (a fresh temporary folder
by default), so the programs' relative log and checkpoint paths land there.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port() -> int:
    """A localhost port nobody listens on now (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


class Task:
    def __init__(self, name, script, args, workdir, python, env):
        self.name = name
        self.log_path = os.path.join(workdir, name.replace(":", "") + ".log")
        self.log = open(self.log_path, "w+")
        self.process = subprocess.Popen([python, "-u", script, *args], stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=workdir, env=env, start_new_session=True)
        self.status = None  # set when it ends: "exit N", "stopped by the launcher", "timed out"

    def finished(self) -> bool:
        if self.status is None and self.process.poll() is not None:
            self.status = f"exit {self.process.returncode}"
        return self.status is not None

    def stop(self, why: str) -> None:
        """Stops its process group (a program may start children): SIGTERM, then SIGKILL after 5 s."""
        if self.finished():
            return
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.status = why

    def output(self) -> str:
        with open(self.log_path, errors="replace") as f:  # the process writes it; this reads a copy
            return f.read()


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="launch.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("script", nargs="?", help="the program every task runs (unless --ps-script/--worker-script)")
    parser.add_argument("--ps", type=int, default=None, help="ps tasks (default 1, or the --ps-script count)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker tasks (default 2, or the --worker-script count)")
    parser.add_argument("--ps-script", action="append", default=[], help="ps task I runs the I-th of these")
    parser.add_argument("--worker-script", action="append", default=[], help="worker task I runs the I-th of these")
    parser.add_argument("--client", help="a script run once the tasks serve (with the host flags); the launch "
                                         "ends when it does, and every task is stopped")
    parser.add_argument("--hosts-only", action="store_true",
                        help="pass only --ps_hosts/--worker_hosts (the program names its own role)")
    parser.add_argument("--after-chief", metavar="TEXT",
                        help="start the other workers once worker 0 printed a line containing TEXT (e.g. 'sess ok': "
                             "a non-chief Supervisor that finds the variables not yet initialized polls again only "
                             "after recovery_wait_secs, 30 s, as in TF)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the workers (default 300)")
    parser.add_argument("--workdir", help="the processes' working directory (default: a fresh temporary one)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (default this one)")
    parser.add_argument("--quiet", action="store_true", help="print only the status lines, not the outputs")
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    else:
        extra = []
    args = parser.parse_args(argv)
    args.extra = extra
    if args.ps is None:
        args.ps = len(args.ps_script) or 1
    if args.workers is None:
        args.workers = len(args.worker_script) or 2
    for role, scripts, count in (("ps", args.ps_script, args.ps), ("worker", args.worker_script, args.workers)):
        if scripts and len(scripts) != count:
            parser.error(f"{len(scripts)} --{role}-script for {count} {role} task(s)")
        if not scripts and not args.script and count:
            parser.error(f"no script for the {role} tasks: give SCRIPT or --{role}-script")
    return args


def launch(argv=None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    workdir = args.workdir or tempfile.mkdtemp(prefix="tfc-launch-")
    os.makedirs(workdir, exist_ok=True)
    ps_hosts = [f"localhost:{free_port()}" for _ in range(args.ps)]
    worker_hosts = [f"localhost:{free_port()}" for _ in range(args.workers)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", GRPC_VERBOSITY=os.environ.get("GRPC_VERBOSITY", "ERROR"), TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
               PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    hosts = [f"--ps_hosts={','.join(ps_hosts)}", f"--worker_hosts={','.join(worker_hosts)}"]
    deadline = time.monotonic() + args.timeout
    print(f"launch: ps {','.join(ps_hosts) or '-'}  workers {','.join(worker_hosts)}  (in {workdir})", flush=True)

    def start(job, index, script):
        role = [] if args.hosts_only else [f"--job_name={job}", f"--task_index={index}"]
        return Task(f"{job}:{index}", os.path.abspath(script), [*role, *hosts, *args.extra], workdir, args.python,
                    env)

    def wait_serving(tasks, addresses) -> bool:
        while time.monotonic() < deadline:
            if all(accepts(a) for a in addresses):
                return True
            if any(t.finished() for t in tasks):
                return False
            time.sleep(0.05)
        return False

    def wait_printed(task, text) -> bool:
        while time.monotonic() < deadline:
            if any(text in line for line in task.output().splitlines()):
                return True
            if task.finished():
                return False
            time.sleep(0.05)
        return False

    ps = [start("ps", i, (args.ps_script or [args.script] * args.ps)[i]) for i in range(args.ps)]
    workers, client, ok = [], None, True
    try:
        ok = wait_serving(ps, ps_hosts)
        for i in range(args.workers if ok else 0):
            if i == 1 and args.after_chief:
                ok = wait_printed(workers[0], args.after_chief)
                if not ok:
                    break
            workers.append(start("worker", i, (args.worker_script or [args.script] * args.workers)[i]))
        if ok and args.client:
            ok = wait_serving(workers, worker_hosts)
            if ok:
                client = Task("client", os.path.abspath(args.client), [*hosts, *args.extra], workdir, args.python,
                              env)
        waited = [client] if client is not None else workers
        while ok and not all(t.finished() for t in waited):
            if time.monotonic() > deadline:
                for t in waited:
                    t.stop(f"timed out after {args.timeout:g} s")
                break
            time.sleep(0.05)
    finally:
        for t in [*workers, *ps] if client is not None else [*ps, *workers]:
            t.stop("stopped by the launcher")  # only those still running: a ps serves for ever
    tasks = [*ps, *workers, *([client] if client is not None else [])]
    for t in tasks:
        if not args.quiet:
            print(f"==== {t.name} ({t.status}) ====", flush=True)
            sys.stdout.write(t.output())
        t.log.close()
    ended = {t.name: t.status for t in tasks}
    print("launch: " + ", ".join(f"{name} {status}" for name, status in ended.items()), flush=True)
    judged = [client] if client is not None else workers
    return 0 if ok and judged and all(t.status == "exit 0" for t in judged) else 1


if __name__ == "__main__":
    sys.exit(launch())
