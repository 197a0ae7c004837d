"""Distributed TensorFlow over gRPC, wire-compatible with TensorFlow.

- ``cluster``: tf.train.ClusterSpec, the ServerDef of a task, device names.
- ``server``: tf.train.Server: one grpcio server per task serving TensorFlow's
  MasterService and WorkerService.
- ``master``: the MasterService (client sessions: CreateSession, ExtendSession, RunStep...);
  a step whose ops are all on the master's task runs there (``task_session``), one that
  spans tasks runs on each of them (``cluster_steps``).
- ``placer``: which task each op of a step runs on (TF's rules: devices, colocation, ref
  inputs); ``partition``: a step's GraphDef per task, cut with TF's _Send/_Recv pairs.
- ``worker``: the WorkerService (GetStatus, worker sessions, RegisterGraph/RunGraph,
  RecvTensor); ``stages``: a registered partition as compiled programs between the tensors
  it receives; ``rendezvous``: the tensors RecvTensor waits for.
- ``task_session``: steps on this task with tfc's Session machinery, on the task's variables
  (``resources``: containers that outlive client sessions).
- ``device_setter``: tf.train.replica_device_setter and its ps strategies.
- ``client``: ``tf.Session("grpc://host:port")`` (any TF master) and Session.reset.
- ``wire``: TensorProto <-> numpy, status codes.
"""
from __future__ import annotations

from tfc.protos.cluster_pb2 import ClusterDef, JobDef
from tfc.protos.tensorflow_server_pb2 import ServerDef

from .cluster import ClusterSpec
from .device_setter import GreedyLoadBalancingStrategy, RandomStrategy, byte_size_load_fn, replica_device_setter
from .server import Server

# What tfc/_api.py adds to tf.train (the ps strategies are tf.contrib.training's in TF 1.15).
TRAIN_EXPORTS = {"ClusterSpec": ClusterSpec, "Server": Server, "ClusterDef": ClusterDef, "JobDef": JobDef,
                 "ServerDef": ServerDef, "replica_device_setter": replica_device_setter,
                 "GreedyLoadBalancingStrategy": GreedyLoadBalancingStrategy, "RandomStrategy": RandomStrategy,
                 "byte_size_load_fn": byte_size_load_fn}

__all__ = ["ClusterSpec", "Server", "ClusterDef", "JobDef", "ServerDef", "replica_device_setter",
           "GreedyLoadBalancingStrategy", "RandomStrategy", "byte_size_load_fn", "TRAIN_EXPORTS"]
