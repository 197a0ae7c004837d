"""A TensorFlow server for task worker:0 (run with TensorFlow's python).

Usage: tf_worker.py CHIEF_ADDRESS WORKER_PORT; prints "READY" once serving."""
import sys

import tensorflow as tf

server = tf.distribute.Server({"chief": [sys.argv[1]], "worker": [f"localhost:{sys.argv[2]}"]},
                              job_name="worker", task_index=0)
print("READY", server.target, flush=True)
sys.stdin.read()  # until the parent closes stdin
