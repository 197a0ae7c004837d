# coding=utf-8
# Seed 000 (server.py): a one-task "worker" cluster whose server serves until killed.
# tfc: `import tfc.compat.v1 as tf`; the address comes from --worker_hosts (launch.py picks a
# free port; the seed's was localhost:2222).
import tfc.compat.v1 as tf

tf.app.flags.DEFINE_string("worker_hosts", "localhost:2222", "tfc: the worker's address (launch.py)")
tf.app.flags.DEFINE_string("ps_hosts", "", "tfc: unused here (launch.py passes it to every task)")
tf.app.flags.DEFINE_string("job_name", "worker", "tfc: unused here")
tf.app.flags.DEFINE_integer("task_index", 0, "tfc: unused here")
FLAGS = tf.app.flags.FLAGS

# 定義 Cluster
cluster = tf.train.ClusterSpec({"worker": FLAGS.worker_hosts.split(",")})

# 建立 Worker server
server = tf.train.Server(cluster,job_name="worker",task_index=0)
server.join()
