"""A tfc server for one task of a cluster (run with tfc's python).

Usage: task.py CLUSTER_JSON JOB TASK_INDEX; prints "READY <target> <incarnation>" once
serving, then serves until its stdin is closed (or it is killed)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import tfc.compat.v1 as tf  # noqa: E402

server = tf.train.Server(json.loads(sys.argv[1]), job_name=sys.argv[2], task_index=int(sys.argv[3]))
print("READY", server.target, f"{server._server.task.incarnation:016x}", flush=True)
sys.stdin.read()  # until the parent closes stdin
server.stop()
