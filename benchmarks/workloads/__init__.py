"""The workloads, in report order. Each module holds one Workload subclass."""
from __future__ import annotations

from .base import Check, Workload
from .bf16 import CNNBf16, MLPBf16
from .cnn import CNN
from .cnn_train import CNNTrain
from .elementwise import Elementwise
from .layernorm import LayerNorm
from .lstm import LSTM
from .lstm_train import LSTMTrain
from .matmul import Matmul
from .mlp import MLP
from .mlp_train import MLPTrain
from .scalar_add import ScalarAdd

WORKLOADS = {cls.name: cls for cls in (ScalarAdd, Elementwise, MLP, MLPBf16, Matmul, LayerNorm, CNN, CNNBf16,
                                        MLPTrain, CNNTrain, LSTM, LSTMTrain)}

__all__ = ["WORKLOADS", "Check", "Workload"]
