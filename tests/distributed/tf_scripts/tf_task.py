"""A TensorFlow server for one task of a cluster (run with TensorFlow's python).

Usage: tf_task.py CLUSTER_JSON JOB TASK_INDEX; prints "READY <target>" once serving, then
serves until its stdin is closed."""
import json
import sys

import tensorflow as tf

server = tf.distribute.Server(json.loads(sys.argv[1]), job_name=sys.argv[2], task_index=int(sys.argv[3]))
print("READY", server.target, flush=True)
sys.stdin.read()  # until the parent closes stdin
