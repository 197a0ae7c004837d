# coding=utf-8
# Seed 000 (client.py): runs a graph on the server of server.py over grpc://.
# tfc: `import tfc.compat.v1 as tf`; the server's address comes from --worker_hosts
# (launch.py; the seed's was localhost:2222).
import tfc.compat.v1 as tf

tf.app.flags.DEFINE_string("worker_hosts", "localhost:2222", "tfc: the server's address (launch.py)")
tf.app.flags.DEFINE_string("ps_hosts", "", "tfc: unused here (launch.py passes it)")
FLAGS = tf.app.flags.FLAGS

# 執行目標 Session
server_target = "grpc://" + FLAGS.worker_hosts.split(",")[0]
logs_path = './basic_tmp'

# 指定 worker task 0 使用 CPU 運算
with tf.device("/job:worker/task:0"):
    with tf.device("/cpu:0"):
        a = tf.constant([1.5, 6.0], name='a')
        b = tf.Variable([1.5, 3.2], name='b')
        c = (a * b) + (a / b)
        d = c * a
        y = tf.assign(b, d)

# 啟動 Session
with tf.Session(server_target) as sess:
    sess.run(tf.global_variables_initializer())
    writer = tf.summary.FileWriter(logs_path, graph=tf.get_default_graph())
    print(sess.run(y))
