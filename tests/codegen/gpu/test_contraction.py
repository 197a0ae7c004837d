"""The GPU contraction kernels (tfc/codegen/gpu/contraction.py) against the evaluator.

The kernels are ordinary LLVM IR, so they run on the host: each program here is compiled
by the CPU pipeline with the contraction family's emitter swapped for the GPU one (the
CPU entry then runs every work item in turn, or splits them over its pool, as a grid
would), and its results are compared with the evaluator of the unoptimised module.

The shared-memory GEMM (gemm.py, a cooperative kernel that needs the GPU program) is
switched off here and tested in test_gemm.py.

Covered: dots whose sizes are not multiples of the register tile, transposed operands,
batch dims, several free or contracting dims, symbolic sizes (0 included), f16 / f32 /
f64 / integer element types, output fusions (bias + relu + residual), and convs with
SAME / VALID padding, strides, dilations, 1x1 filters, feature groups (depthwise) and an
epilogue. Then the kernels' text is checked for what a GPU cannot run (calls, globals,
large allocas), and each kernel is assembled for NVPTX (and by ptxas, when installed) in
a subprocess, since LLVM aborts the process on what its backend cannot select.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfc.codegen.kernels as kernels
from tfc import ir
from tfc.codegen.gpu import contraction as gpu_contraction
from tfc.codegen.gpu import gemm as gpu_gemm
from tfc.codegen.llvm_util import CodegenError
from tfc.compiler import compile_module

from ..helpers import assert_agrees, func

TOLERANCE = {"f16": (4e-3, 2e-2), "f32": (1e-5, 1e-4), "f64": (1e-12, 1e-12)}
NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "u8": np.uint8,
      "i64": np.int64}


# -- compiling with the GPU emitter ------------------------------------------------------------
@dataclass
class Emitted:
    """A kernel function the GPU emitter produced: its LLVM text, buffer count and the
    declarations of the intrinsics it calls."""

    name: str
    text: str
    buffers: int
    declarations: list


@contextlib.contextmanager
def gpu_contractions(record: list):
    """The CPU pipeline with the contraction family emitted by the GPU emitter; the new
    kernel functions are appended to ``record``."""
    def emit(program, index, op):
        def call_kernel(kernel, params, index, may_fail=False):
            type(program).call_kernel(program, kernel, params, index, may_fail)
            fn = kernel.fn  # after deduplication: the function the program calls
            text = str(fn)
            callees = sorted(set(re.findall(r'@"?(llvm\.[\w.]+)"?\(', text)))
            record.append(Emitted(fn.name, text, len(fn.args) - 4,
                                  [str(program.module.globals[c]).strip() for c in callees]))

        program.call_kernel = call_kernel  # shadows the method while the op is emitted
        try:
            gpu_contraction.emit(program, index, op)
        finally:
            del program.call_kernel

    saved, saved_applies = kernels.FAMILY_EMITTERS["contraction"], gpu_gemm.applies
    kernels.FAMILY_EMITTERS["contraction"] = emit
    gpu_gemm.applies = lambda core: False  # the item kernels; the cooperative GEMM: test_gemm.py
    try:
        yield
    finally:
        kernels.FAMILY_EMITTERS["contraction"] = saved
        gpu_gemm.applies = saved_applies


@functools.lru_cache(maxsize=None)
def compiled(text: str) -> tuple:
    """(CompileResult, [Emitted]) of ``text`` compiled with the GPU contraction emitter
    (a cache of its own: the CPU tests' cache must not receive these programs)."""
    record: list = []
    with gpu_contractions(record):
        result = compile_module(ir.parse(text))
    assert record, "the GPU contraction emitter was not used"
    return result, record


def check(text: str, args: list, elem: str, labels=None) -> None:
    expected = ir.evaluate(ir.parse(text), [np.array(a, copy=True) for a in args])
    got = compiled(text)[0].executable.run([np.array(a, copy=True) for a in args])
    assert len(got) == len(expected)
    exact = elem not in TOLERANCE
    for i, (e, g) in enumerate(zip(expected, got)):
        assert_agrees(e, g, exact, None if exact else TOLERANCE[elem], labels[i] if labels else f"result {i}")


def shape_of(text: str, env: dict) -> tuple:
    inner = text.strip("[]")
    return tuple(env[d] if d in env else int(d) for d in inner.split(",")) if inner else ()


def random_array(rng, elem: str, shape: tuple, bound: float = 2.0) -> np.ndarray:
    dtype = np.dtype(NP[elem])
    if dtype.kind == "f":
        return rng.uniform(-bound, bound, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max), shape, dtype=dtype, endpoint=True)


def program(cases: dict, elem: str, epilogue: bool = False, bias_dim=None) -> str:
    """One function computing every ``name: (lhs, rhs, op attrs, result, core op)`` case,
    each optionally followed by ``+ bias`` (along the last dim), relu and ``+ residual``."""
    params, lines, results = [], [], []
    for i, (lhs, rhs, attrs, out, core) in enumerate(cases.values()):
        t = f"{elem}{out}"
        params += [f"%l{i}: {elem}{lhs}", f"%r{i}: {elem}{rhs}"]
        lines.append(f"%d{i} = {core} %l{i}, %r{i} {attrs} : {t}")
        result = f"%d{i}"
        if epilogue:
            rank = out.count(",") + 1
            channels = out.strip("[]").split(",")[-1]
            params += [f"%b{i}: {elem}[{channels}]", f"%res{i}: {t}"]
            lines += [f"%bb{i} = broadcast %b{i} {{dims=[{rank - 1}]}} : {t}", f"%a{i} = add %d{i}, %bb{i} : {t}",
                      f"%z{i} = constant dense<0> : {elem}[]", f"%zb{i} = broadcast %z{i} {{dims=[]}} : {t}",
                      f"%m{i} = max %a{i}, %zb{i} : {t}", f"%o{i} = add %m{i}, %res{i} : {t}"]
            result = f"%o{i}"
        results.append((result, t))
    return func(f"({', '.join(params)}) -> ({', '.join(t for _, t in results)})", *lines,
                "return " + ", ".join(name for name, _ in results))


def arguments(cases: dict, elem: str, env: dict, seed: int, epilogue: bool = False) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for lhs, rhs, _, out, _ in cases.values():
        args += [random_array(rng, elem, shape_of(lhs, env)), random_array(rng, elem, shape_of(rhs, env))]
        if epilogue:
            out_shape = shape_of(out, env)
            args += [random_array(rng, elem, out_shape[-1:]), random_array(rng, elem, out_shape)]
    return args


def run_cases(cases: dict, elem: str, env: dict, seed: int = 0, epilogue: bool = False) -> None:
    text = program(cases, elem, epilogue)
    check(text, arguments(cases, elem, env, seed, epilogue), elem, labels=list(cases))


# -- dots ------------------------------------------------------------------------------------------
def mm(m, k, n) -> tuple:
    return f"[{m},{k}]", f"[{k},{n}]", "{contract=[[1], [0]]}", f"[{m},{n}]", "dot"


PLAIN_DOTS = {f"{m}x{k}x{n}": mm(m, k, n) for m, k, n in [(1, 1, 1), (5, 3, 7), (33, 17, 65), (128, 96, 64),
                                                             (4, 8, 4), (1, 9, 6), (7, 5, 1)]}

GENERAL_DOTS = {
    "rhs transposed (x w^T)": ("[6,9]", "[5,9]", "{contract=[[1], [1]]}", "[6,5]", "dot"),
    "lhs transposed": ("[9,6]", "[9,5]", "{contract=[[0], [0]]}", "[6,5]", "dot"),
    "both transposed": ("[9,7]", "[5,9]", "{contract=[[0], [1]]}", "[7,5]", "dot"),
    "batch": ("[3,5,6]", "[3,6,7]", "{batch=[[0], [0]], contract=[[2], [1]]}", "[3,5,7]", "dot"),
    "batch in the middle": ("[5,3,6]", "[6,3,7]", "{batch=[[1], [1]], contract=[[2], [0]]}", "[3,5,7]", "dot"),
    "two batch dims": ("[2,3,5,4]", "[2,3,4,6]", "{batch=[[0, 1], [0, 1]], contract=[[3], [2]]}", "[2,3,5,6]",
                       "dot"),
    "several free dims": ("[3,2,6]", "[6,5,2]", "{contract=[[2], [0]]}", "[3,2,5,2]", "dot"),
    "two contracting dims": ("[5,2,3]", "[3,2,5]", "{contract=[[1, 2], [1, 0]]}", "[5,5]", "dot"),
    "matrix-vector": ("[9,7]", "[7]", "{contract=[[1], [0]]}", "[9]", "dot"),
    "vector-matrix": ("[7]", "[7,9]", "{contract=[[0], [0]]}", "[9]", "dot"),
    "inner product": ("[7]", "[7]", "{contract=[[0], [0]]}", "[]", "dot"),
    "outer product (no contraction)": ("[5]", "[6]", "{contract=[[], []]}", "[5,6]", "dot"),
    "empty contraction": ("[5,0]", "[0,6]", "{contract=[[1], [0]]}", "[5,6]", "dot"),
}


@pytest.mark.parametrize("case", list(PLAIN_DOTS))
def test_dot_sizes_off_the_tile(case):
    run_cases({case: PLAIN_DOTS[case]}, "f32", {})


@pytest.mark.parametrize("elem", ["f32", "f64", "f16", "i32", "i8", "u8"])
def test_general_dots(elem):
    run_cases(GENERAL_DOTS, elem, {}, seed=1)


SYMBOLIC_DOTS = {
    "[s0,k] x [k,n]": ("[s0,17]", "[17,10]", "{contract=[[1], [0]]}", "[s0,10]", "dot"),
    "x w^T": ("[s0,17]", "[10,17]", "{contract=[[1], [1]]}", "[s0,10]", "dot"),
    "batch s0": ("[s0,3,4]", "[s0,4,5]", "{batch=[[0], [0]], contract=[[2], [1]]}", "[s0,3,5]", "dot"),
    "contract s0": ("[6,s0]", "[s0,5]", "{contract=[[1], [0]]}", "[6,5]", "dot"),
}


@pytest.mark.parametrize("elem", ["f32", "i32"])
@settings(max_examples=10, deadline=None)
@given(s0=st.integers(0, 37), seed=st.integers(0, 2**32 - 1))
def test_symbolic_sizes(elem, s0, seed):
    run_cases(SYMBOLIC_DOTS, elem, {"s0": s0}, seed)


RANDOM_DOTS = {  # every size a symbol: one compiled program serves every draw
    "nn": ("[s0,s1]", "[s1,s2]", "{contract=[[1], [0]]}", "[s0,s2]", "dot"),
    "nt": ("[s0,s1]", "[s2,s1]", "{contract=[[1], [1]]}", "[s0,s2]", "dot"),
    "tn": ("[s1,s0]", "[s1,s2]", "{contract=[[0], [0]]}", "[s0,s2]", "dot"),
    "batch": ("[s3,s0,s1]", "[s3,s1,s2]", "{batch=[[0], [0]], contract=[[2], [1]]}", "[s3,s0,s2]", "dot"),
}


@settings(max_examples=20, deadline=None)
@given(m=st.integers(0, 19), k=st.integers(0, 13), n=st.integers(0, 19), batch=st.integers(0, 3),
       seed=st.integers(0, 2**32 - 1))
def test_random_dot_shapes(m, k, n, batch, seed):
    run_cases(RANDOM_DOTS, "f64", {"s0": m, "s1": k, "s2": n, "s3": batch}, seed)


EPILOGUE_DOTS = {
    "x w": ("[s0,6]", "[6,5]", "{contract=[[1], [0]]}", "[s0,5]", "dot"),
    "x w^T": ("[s0,6]", "[5,6]", "{contract=[[1], [1]]}", "[s0,5]", "dot"),
    "batch": ("[3,s0,6]", "[3,6,5]", "{batch=[[0], [0]], contract=[[2], [1]]}", "[3,s0,5]", "dot"),
    "several free dims": ("[s0,2,6]", "[6,5]", "{contract=[[2], [0]]}", "[s0,2,5]", "dot"),
    "two contracting dims": ("[s0,2,3]", "[3,2,5]", "{contract=[[1, 2], [1, 0]]}", "[s0,5]", "dot"),
}


@pytest.mark.parametrize("elem", ["f32", "f64", "f16", "i32"])
@settings(max_examples=4, deadline=None)
@given(s0=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_dot_bias_relu_residual(elem, s0, seed):
    text = program(EPILOGUE_DOTS, elem, epilogue=True)
    kinds = [op.attrs.get("kind") for op in compiled(text)[0].module.main.body.ops if op.name == "fusion"]
    assert kinds == ["output"] * len(EPILOGUE_DOTS)
    run_cases(EPILOGUE_DOTS, elem, {"s0": s0}, seed, epilogue=True)


# -- convs -----------------------------------------------------------------------------------------
CONVS = {
    "SAME 3x3": ("[s0,5,6,3]", "[3,3,3,8]", "{padding=[[1, 1], [1, 1]]}", "[s0,5,6,8]", "conv"),
    "VALID 3x3, 6 channels": ("[s0,5,6,3]", "[3,3,3,6]", "", "[s0,3,4,6]", "conv"),
    "stride 2, SAME": ("[s0,7,8,2]", "[3,3,2,5]", "{padding=[[1, 1], [0, 1]], strides=[2, 2]}", "[s0,4,4,5]", "conv"),
    "dilation 2": ("[s0,7,7,2]", "[3,3,2,4]", "{padding=[[2, 2], [2, 2]], rhs_dilation=[2, 2]}", "[s0,7,7,4]",
                   "conv"),
    "1x1": ("[s0,4,5,7]", "[1,1,7,9]", "", "[s0,4,5,9]", "conv"),
    "1x1, stride 2": ("[s0,5,5,3]", "[1,1,3,2]", "{strides=[2, 2]}", "[s0,3,3,2]", "conv"),
    "depthwise": ("[s0,5,5,3]", "[3,3,1,6]", "{groups=3, padding=[[1, 1], [1, 1]]}", "[s0,5,5,6]", "conv"),
    "groups": ("[s0,4,4,4]", "[2,2,2,6]", "{groups=2}", "[s0,3,3,6]", "conv"),
    "lhs dilation": ("[s0,3,4,2]", "[2,2,2,4]", "{lhs_dilation=[2, 3], padding=[[1, 1], [0, 1]]}", "[s0,6,10,4]",
                     "conv"),
    "one output channel": ("[s0,4,4,2]", "[2,3,2,1]", "{padding=[[0, 1], [1, 1]]}", "[s0,4,4,1]", "conv"),
    "window larger than the input": ("[s0,2,2,1]", "[3,3,1,4]", "{padding=[[1, 1], [1, 1]]}", "[s0,2,2,4]",
                                     "conv"),
    "1-d": ("[s0,7,3]", "[3,3,4]", "{padding=[[1, 1]], strides=[2]}", "[s0,4,4]", "conv"),
    "3-d": ("[s0,4,5,3,2]", "[2,3,2,2,3]", "{padding=[[1, 0], [1, 1], [0, 1]], rhs_dilation=[1, 2, 1], "
            "strides=[2, 1, 2]}", "[s0,2,3,2,3]", "conv"),
    "3-d lhs dilation, groups": ("[s0,3,2,4,4]", "[2,2,2,2,6]", "{groups=2, lhs_dilation=[2, 1, 2]}",
                                 "[s0,4,1,6,6]", "conv"),
}

SYMBOLIC_CHANNEL_CONVS = {  # a filter gradient's shape: the input channels are the batch
    "symbolic input channels": ("[2,6,6,s0]", "[3,3,s0,5]", "{padding=[[1, 1], [1, 1]]}", "[2,6,6,5]", "conv"),
}


@pytest.mark.parametrize("elem", ["f32", "f64", "f16"])
@settings(max_examples=4, deadline=None)
@given(s0=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_convs(elem, s0, seed):
    run_cases(CONVS, elem, {"s0": s0}, seed)
    run_cases(SYMBOLIC_CHANNEL_CONVS, elem, {"s0": s0}, seed)


@pytest.mark.parametrize("elem", ["f32", "f64"])
@settings(max_examples=4, deadline=None)
@given(s0=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_conv_bias_relu_residual(elem, s0, seed):
    text = program(CONVS, elem, epilogue=True)
    kinds = [op.attrs.get("kind") for op in compiled(text)[0].module.main.body.ops if op.name == "fusion"]
    assert kinds == ["output"] * len(CONVS)
    run_cases(CONVS, elem, {"s0": s0}, seed, epilogue=True)


# -- refusals --------------------------------------------------------------------------------------
REFUSED = {
    "an epilogue changing the element type": (
        "(%x: f32[2,4], %w: f32[4,3]) -> (f64[2,3])",
        '%0 = fusion %x, %w {kind="output"} : f64[2,3] {',
        "^(%p0: f32[2,4], %p1: f32[4,3]):",
        "  %1 = dot %p0, %p1 {contract=[[1], [0]]} : f32[2,3]",
        "  %2 = convert %1 : f64[2,3]",
        "  yield %2",
        "}", "return %0"),
    "an operand computed in the fusion": (
        "(%x: f32[2,4], %w: f32[4,3]) -> (f32[2,3])",
        '%0 = fusion %x, %w {kind="output"} : f32[2,3] {',
        "^(%p0: f32[2,4], %p1: f32[4,3]):",
        "  %1 = neg %p0 : f32[2,4]",
        "  %2 = dot %1, %p1 {contract=[[1], [0]]} : f32[2,3]",
        "  yield %2",
        "}", "return %0"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refusals_name_the_op_and_why(case):
    signature, *lines = REFUSED[case]
    fusion = ir.parse(func(signature, *lines)).main.body.ops[0]
    with pytest.raises(CodegenError, match=r"GPU contraction 'fusion' \(dot output fusion\): .*"
                       + ("element type" if "element" in case else "materialised")):
        gpu_contraction.emit(None, 0, fusion)


# -- what a GPU can run ----------------------------------------------------------------------------
def all_kernels() -> list:
    """The kernels of a set of programs covering every path of the emitter."""
    texts = [program(PLAIN_DOTS, "f32"), program(GENERAL_DOTS, "f16"), program(GENERAL_DOTS, "i8"),
             program(EPILOGUE_DOTS, "f32", epilogue=True), program(EPILOGUE_DOTS, "f64", epilogue=True),
             program(CONVS, "f32", epilogue=True), program(CONVS, "f16"), program(SYMBOLIC_CHANNEL_CONVS, "f64")]
    found = {}
    for text in texts:
        for emitted in compiled(text)[1]:
            found.setdefault(emitted.text, emitted)
    return list(found.values())


def test_kernels_call_only_intrinsics_and_keep_accumulators_in_registers():
    for kernel in all_kernels():
        body = kernel.text
        for callee in re.findall(r'call [^@]*@"?([\w.$-]+)"?\(', body):
            assert callee.startswith("llvm."), f"{kernel.name} calls @{callee}"
        own = re.escape(kernel.name)
        for symbol in re.findall(r'@"?([\w.$-]+)"?', body):
            assert symbol.startswith("llvm.") or re.fullmatch(own, symbol), f"{kernel.name} uses @{symbol}"
        for count in re.findall(r"alloca \[(\d+) x", body):
            assert int(count) <= 64, f"{kernel.name} allocates an array of {count}"
        assert not re.search(r"alloca [^,\n]*, i64 %", body), f"{kernel.name} has a variable-sized alloca"
        assert not re.search(r"<\d+ x ", body), f"{kernel.name} uses vector types"


NVPTX_SCRIPT = r'''
import json, subprocess, sys
import llvmlite.binding as llvm

llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
TRIPLE = "nvptx64-nvidia-cuda"
LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
jobs, folder, ptxas = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu="sm_80", opt=3)
for i, job in enumerate(jobs):
    print("kernel", job["name"], flush=True)
    module = llvm.parse_assembly(job["module"])
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    if "alloca" in str(module):
        sys.exit(f"{job['name']}: an alloca survives optimisation:\n{module}")
    ptx = machine.emit_assembly(module)
    path = f"{folder}/k{i}.ptx"
    with open(path, "w") as f:
        f.write(ptx)
    if ptxas:
        done = subprocess.run([ptxas, "--gpu-name", "sm_80", path, "-o", "/dev/null"], capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"ptxas rejects {job['name']}:\n{done.stderr}\n{ptx}")
print("ok", len(jobs))
'''


def nvptx_module(kernel: Emitted) -> str:
    """A module for NVPTX holding ``kernel`` and a ``ptx_kernel`` entry running its items
    ``[0, extent)`` in a grid-stride loop (test scaffolding, not the GPU program's entry)."""
    buffers = ", ".join(f"i8* %b{i}" for i in range(kernel.buffers))
    passed = "".join(f"i8* %b{i}, " for i in range(kernel.buffers))
    sregs = ["tid.x", "ntid.x", "ctaid.x", "nctaid.x"]
    lines = ['target triple = "nvptx64-nvidia-cuda"',
             'target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"',
             *kernel.declarations, *(f"declare i32 @llvm.nvvm.read.ptx.sreg.{s}()" for s in sregs), kernel.text,
             f"define ptx_kernel void @entry({buffers}{', ' if buffers else ''}i64* %dims, i64* %err, i64 %extent) {{",
             "entry:",
             *(f"  %{s.replace('.', '_')}.32 = call i32 @llvm.nvvm.read.ptx.sreg.{s}()" for s in sregs),
             *(f"  %{s.replace('.', '_')} = zext i32 %{s.replace('.', '_')}.32 to i64" for s in sregs),
             "  %first.0 = mul i64 %ctaid_x, %ntid_x", "  %first = add i64 %first.0, %tid_x",
             "  %threads = mul i64 %nctaid_x, %ntid_x", "  br label %head",
             "head:", "  %i = phi i64 [%first, %entry], [%i.next, %body]",
             "  %more = icmp slt i64 %i, %extent", "  br i1 %more, label %body, label %done",
             "body:", "  %end = add i64 %i, 1",
             f'  %status = call i32 @"{kernel.name}"({passed}i64* %dims, i64* %err, i64 %i, i64 %end)',
             "  %i.next = add i64 %i, %threads", "  br label %head",
             "done:", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def test_kernels_assemble_for_nvptx(tmp_path):
    jobs = [{"name": kernel.name, "module": nvptx_module(kernel)} for kernel in all_kernels()]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    (tmp_path / "nvptx.py").write_text(NVPTX_SCRIPT)
    ptxas = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else "")
    done = subprocess.run([sys.executable, str(tmp_path / "nvptx.py"), str(tmp_path / "jobs.json"), str(tmp_path),
                           ptxas], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"NVPTX assembly failed (rc {done.returncode}):\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-6000:]}"
    assert done.stdout.strip().endswith(f"ok {len(jobs)}")
