"""Distributed TensorFlow over gRPC, wire-compatible with TensorFlow.

- ``cluster``: tf.train.ClusterSpec, the ServerDef of a task, device names.
- ``server``: tf.train.Server: one grpcio server per task serving TensorFlow's
  MasterService and WorkerService.
- ``master``: the MasterService (client sessions: CreateSession, ExtendSession, RunStep...).
- ``worker``: the WorkerService (GetStatus, worker sessions, RegisterGraph/RunGraph,
  RecvTensor); ``rendezvous``: the tensors RecvTensor waits for.
- ``task_session``: steps on this task with tfc's Session machinery, on the task's variables
  (``resources``: containers that outlive client sessions).
- ``client``: ``tf.Session("grpc://host:port")`` (any TF master) and Session.reset.
- ``wire``: TensorProto <-> numpy, status codes.

In this version a master runs each step on its own task: an op placed on another task is
an UnimplementedError naming it (graph partitioning with _Send/_Recv comes next).
"""
from __future__ import annotations

from tfc.protos.cluster_pb2 import ClusterDef, JobDef
from tfc.protos.tensorflow_server_pb2 import ServerDef

from .cluster import ClusterSpec
from .server import Server

# What tfc/_api.py adds to tf.train.
TRAIN_EXPORTS = {"ClusterSpec": ClusterSpec, "Server": Server, "ClusterDef": ClusterDef, "JobDef": JobDef,
                 "ServerDef": ServerDef}

__all__ = ["ClusterSpec", "Server", "ClusterDef", "JobDef", "ServerDef", "TRAIN_EXPORTS"]
