#代码4-17　worker2  (seed 004: 实例20, 使用TensorFlow实现分布式部署训练)
# One ps and two workers, each its own file: ps_4_15.py (this one), worker_4_16.py
# (task 0, the chief) and worker2_4_17.py (task 1). Run all three on this machine with:
#   python examples/distributed/launch.py --hosts-only --ps-script examples/distributed/ps_4_15.py \
#       --worker-script examples/distributed/worker_4_16.py --worker-script examples/distributed/worker2_4_17.py
# tfc changes: `import tfc.compat.v1 as tf`; the hosts come from --ps_hosts/--worker_hosts
# (launch.py picks free ports; the book's were localhost:1681, 1682, 1683); --max_steps ends
# the loop after a pass over the data once the global step reaches it (0, the default, runs
# the book's 2200*100 passes); matplotlib (imported, never used here) is not installed.
# The book's notebook also shows the single-process code 4-8 (examples/seeds/linear_regression.py)
# pasted into this cell; only its `plotdata` dict is used below and it is kept.
import tfc.compat.v1 as tf
import numpy as np
# import matplotlib.pyplot as plt

#定义IP和端口 
tf.app.flags.DEFINE_string("ps_hosts", "localhost:1681", "tfc: the ps addresses (launch.py)")
tf.app.flags.DEFINE_string("worker_hosts", "localhost:1682,localhost:1683", "tfc: the workers' addresses")
tf.app.flags.DEFINE_integer("max_steps", 0, "tfc: stop after a pass once the global step reaches this")
strps_hosts=tf.app.flags.FLAGS.ps_hosts
strworker_hosts=tf.app.flags.FLAGS.worker_hosts

#定义角色名称
strjob_name = "worker"
task_index = 1
#将字符串转成数组
ps_hosts = strps_hosts.split(',')
worker_hosts = strworker_hosts.split(',')
cluster_spec = tf.train.ClusterSpec({'ps': ps_hosts,'worker': worker_hosts})
server = tf.train.Server({'ps': ps_hosts,'worker': worker_hosts}, job_name=strjob_name, task_index=task_index)

#定义占位符
train_X = np.linspace(-1, 1, 100)
train_Y = 2 * train_X + np.random.randn(*train_X.shape) * 0.3      # y=2x 但是加入了噪声 
plotdata = {"batchsize":[], "loss":[]}

#ps角色处于监听状态，等待终端连接
if strjob_name == 'ps':
    print('waiting....')
    server.join()

with tf.device(tf.train.replica_device_setter(
        worker_device = '/job:worker/task:{0}'.format(task_index),
        cluster = cluster_spec)):
    
    #创建占位符
    X = tf.placeholder("float")
    Y = tf.placeholder("float")
    #模型参数
    W = tf.Variable(tf.truncated_normal([1]),name='weight')    #设置正太分布参数  初始化权重
    b = tf.Variable(tf.truncated_normal([1]),name='bias')    #设置正太分布参数  初始化偏置

    global_step = tf.train.get_or_create_global_step()
    
    #前向结构
    z = tf.multiply(X, W) + b
    
    #将预测值以直方图形式显示
    tf.summary.histogram('z',z)
    
    #定义代价函数  选取二次代价函数
    cost = tf.reduce_mean(tf.square(Y - z))
    
    #将损失以标量形式显示 该变量命名为loss_function
    tf.summary.scalar('loss_function',cost)
    learning_rate = 0.01
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost,global_step = global_step)
    
    saver = tf.train.Saver(max_to_keep = 1)
    
    merged_summary_op = tf.summary.merge_all()             #合并所有的summary
    
    #初始化所有变量，因此变量需要放在其前面定义
    init  =tf.global_variables_initializer()

# 定义参数
training_epochs = 2200
display_step = 2

sv = tf.train.Supervisor(is_chief=(task_index == 0),         #0号worker为chief
                         logdir="log/super/",
                         init_op=init,
                         summary_op=None,
                         saver=saver,
                         global_step=global_step,
                         save_model_secs=5)

#连接目标角色创建session
with sv.managed_session(server.target) as sess:
    print("sess ok")
    print(global_step.eval(session=sess))
    
    for epoch in range(global_step.eval(session=sess),training_epochs*len(train_X)):
   
        for (x, y) in zip(train_X, train_Y):
            _, epoch = sess.run([optimizer,global_step] ,feed_dict={X: x, Y: y});
            #生成summary
            summary_str = sess.run(merged_summary_op,feed_dict={X: x, Y: y});
            #将summary写入文件
            # sv.summary_computed(sess,summary_str,global_step=epoch)  # the book: only the chief has a summary writer (注意 (1))
            if epoch % display_step == 0:    
                loss = sess.run(cost,feed_dict={X: train_X, Y: train_Y})
                print ("Epoch:", epoch+1, "cost=", loss, "W=", sess.run(W), "b=", sess.run(b))            
                if not (loss == "NA"):                
                    plotdata["batchsize"].append(epoch)
                    plotdata["loss"].append(loss)
        if tf.app.flags.FLAGS.max_steps and epoch >= tf.app.flags.FLAGS.max_steps:  # tfc: --max_steps
            break
                
    print (" Finished!")
    sv.saver.save(sess,"log/mnist_with_summaries/"+"sv.cpk", global_step=epoch)
              
sv.stop()
