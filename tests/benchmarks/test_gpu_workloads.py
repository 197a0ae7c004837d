"""The GPU benchmark's workloads (benchmarks/gpu.py) build and compile for the GPU here
(they run only where a GPU is: scripts/gpu_check.sh): the compass graphs take the
cooperative kernels, and the CNN training step's PTX assembles."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tfc  # noqa: E402
import tfc.compat.v1 as tf  # noqa: E402
from benchmarks import gpu  # noqa: E402
from tfc.codegen.gpu import ptx as ptx_module  # noqa: E402
from tfc.codegen.gpu.plan import Launch  # noqa: E402


def _compiled(name: str):
    inputs, graph_fn, jax_fn, cupy_fn, moved = gpu.WORKLOADS[name]()
    graph = tf.Graph()
    with graph.as_default():
        feeds, fetch = graph_fn(tf)
        if isinstance(fetch, tuple):
            session = tf.Session()
            session.run(tf.global_variables_initializer())
            return tfc.compile(list(fetch), feeds=feeds, target="cuda", session=session)
        return tfc.compile(fetch, feeds=feeds, target="cuda")


def test_the_workloads_are_the_issues():
    assert set(gpu.WORKLOADS) == {"elementwise", "layernorm", "mlp", "matmul", "cnn", "mlp_train", "cnn_train"}


@pytest.fixture(scope="module")
def cnn_train():
    return _compiled("cnn_train")


def _cooperative_launches(compiled) -> int:
    return sum(1 for step in compiled.result.program.plan if isinstance(step, Launch) and step.block)


def test_the_workloads_take_the_cooperative_kernels(cnn_train):
    assert _cooperative_launches(_compiled("layernorm")) == 1
    assert _cooperative_launches(cnn_train) >= 10  # convs, their gradients (split), softmax rows, transposes


@pytest.mark.skipif(ptx_module.ptxas_path() is None or ptx_module.libdevice_path() is None,
                    reason="ptxas or libdevice is not installed")
def test_the_cnn_training_step_assembles(cnn_train):
    program = cnn_train.result.program
    text = ptx_module.compile_ptx(program.module_text("ptx"), program.kernels, "sm_90")
    assert ptx_module.assemble(text, "sm_90")[:4] == b"\x7fELF"


def test_variants_compile_the_earlier_kernels_and_restore_the_current_ones():
    from tfc.codegen.gpu import gemm, row

    current = _cooperative_launches(_compiled("cnn"))
    with gpu._variant("narrow-items"):
        assert _cooperative_launches(_compiled("cnn")) == current - 1  # the 3136 x 10 dense layer
    with gpu._variant("row-loops"), gpu._variant("split-32"), gpu._variant("small-tiles"), \
            gpu._variant("scalar-shared"):
        assert (row.UNROLLED_SHARE, gemm.MAX_SPLIT, gemm.MEDIUM, gemm.SHARED_VECTOR_BYTES) == (0, 32, gemm.SMALL, 0)
        assert "rj.head" in _compiled("layernorm").result.program.module_text("ptx")
    assert "rj.head" not in _compiled("layernorm").result.program.module_text("ptx")
    assert (row.UNROLLED_SHARE, gemm.MAX_SPLIT, gemm._pays.__name__, gemm.MEDIUM, gemm.SHARED_VECTOR_BYTES) == \
        (16, 128, "_pays", (128, 64, 8, 8, 4), 16)
