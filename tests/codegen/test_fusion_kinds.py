"""Every fusion kind compiles to code that agrees with the evaluator of the unoptimised
module, and the fusion really happens.

- loop fusions: elementwise chains of several element types with broadcasts,
  transposes, reshapes, slices, pads, concatenates, reverses and iotas inside;
- input fusions: reductions (sum prod max min and or) over leading, middle, trailing
  and all dims of a fused expression;
- output fusions: dot and conv with an elementwise epilogue (bias, activation,
  residual), batch dots, transposed operands, strides, padding, dilations, groups;
- whole programs: softmax, log-sum-exp, a two-layer network, and random programs that
  mix every kind with variable updates (fusion decisions meet buffer assignment).

Each program is compiled once (shapes are symbolic in the batch) and run on the sizes
and values hypothesis draws; the optimised module's ``fusion`` ops are counted by kind.
"""
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfc.ir import Builder, ElemType, Function, Module, RefType, sym, tensor, verify

from .helpers import arrays, check, compiled, func, reference, seeded_array

S0 = sym("s0")

EXAMPLES = settings(max_examples=12, deadline=None)


def fusion_kinds(text: str) -> Counter:
    """{kind: count} of the top-level fusion ops of the optimised module."""
    ops = compiled(text).module.main.body.ops
    return Counter(op.attrs["kind"] for op in ops if op.name == "fusion")


def unfused_ops(text: str) -> list:
    """Names of the top-level ops of the optimised module that are neither fusions nor
    free (constants, reshapes that alias their operand)."""
    ops = compiled(text).module.main.body.ops
    return [op.name for op in ops if op.name not in ("fusion", "return", "constant", "reshape")]


def shapes_args(data, shapes: list, dtypes, special=True, bound=4.0) -> list:
    """One hypothesis array per shape (``dtypes``: one numpy dtype name, or one per shape)."""
    dtypes = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes] * len(shapes)
    return [data.draw(arrays(np.dtype(d), s, special=special, bound=bound)) for s, d in zip(shapes, dtypes)]


# -- loop fusion ---------------------------------------------------------------------------
SHAPE_CHAIN = func(
    "(%x: f32[s0,8], %t: f32[8,s0], %r: f32[s0,2,4], %c: f32[s0,10], %p: f32[s0,6], %a: f32[s0,3], "
    "%b: f32[8]) -> (f32[s0,8])",
    "%0 = transpose %t {perm=[1, 0]} : f32[s0,8]",
    "%1 = add %x, %0 : f32[s0,8]",
    "%2 = reshape %r : f32[s0,8]",
    "%3 = mul %1, %2 : f32[s0,8]",
    "%4 = slice %c {limit=[s0, 10], start=[0, 1], stride=[1, 1]} : f32[s0,9]",
    "%5 = slice %4 {limit=[s0, 9], start=[0, 1]} : f32[s0,8]",
    "%6 = sub %3, %5 : f32[s0,8]",
    "%7 = constant dense<0.5> : f32[]",
    "%8 = pad %p, %7 {high=[0, 1], low=[0, 1]} : f32[s0,8]",
    "%9 = max %6, %8 : f32[s0,8]",
    "%10 = concatenate %a, %a, %a {dim=1} : f32[s0,9]",
    "%11 = slice %10 {limit=[s0, 8], start=[0, 0]} : f32[s0,8]",
    "%12 = abs %11 : f32[s0,8]",  # (no transcendental: 1 + tanh(-3.36) cancels its last bit)
    "%13 = add %9, %12 : f32[s0,8]",
    "%14 = broadcast %b {dims=[1]} : f32[s0,8]",
    "%15 = mul %13, %14 : f32[s0,8]",
    "%16 = reverse %15 {dims=[1]} : f32[s0,8]",
    "%17 = iota {dim=1} : f32[s0,8]",
    "%18 = add %16, %17 : f32[s0,8]",
    "return %18")


@EXAMPLES
@given(data=st.data())
def test_loop_fusion_of_shape_ops(data):
    s0 = data.draw(st.integers(0, 5))
    shapes = [(s0, 8), (8, s0), (s0, 2, 4), (s0, 10), (s0, 6), (s0, 3), (8,)]
    check(SHAPE_CHAIN, shapes_args(data, shapes, "float32"), exact=False)
    assert fusion_kinds(SHAPE_CHAIN) == {"loop": 1} and unfused_ops(SHAPE_CHAIN) == []


CONCATENATED_PIECES = func(
    "(%x: f32[s0,3,s1], %y: f32[s0,3,2], %z: f32[s0,2,s1]) -> (f32[s0,3,s1+6], f32[s0,5,s1])",
    "%0 = tanh %x : f32[s0,3,s1]",
    "%1 = exp %y : f32[s0,3,2]",
    "%2 = neg %y : f32[s0,3,2]",
    "%3 = concatenate %0, %1, %2, %y {dim=2} : f32[s0,3,s1+6]",
    "%5 = mul %z, %z : f32[s0,2,s1]",
    "%6 = concatenate %x, %5 {dim=1} : f32[s0,5,s1]",
    "return %3, %6")


@EXAMPLES
@given(data=st.data())
def test_loop_fusions_ending_in_a_concatenation_write_it_piece_by_piece(data):
    """A fusion whose result concatenates along a dim after the first (an inner or the
    middle one; one piece of symbolic width) writes each operand's piece in its own loop."""
    s0, s1 = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 5))
    args = shapes_args(data, [(s0, 3, s1), (s0, 3, 2), (s0, 2, s1)], "float32")
    check(CONCATENATED_PIECES, args, exact=False)
    assert fusion_kinds(CONCATENATED_PIECES) == {"loop": 2}


MIXED_TYPES = func(
    "(%x: f16[s0,s1], %y: f16[s0,s1], %i: i32[s0,s1], %k: i8[s1]) -> (f64[s0,s1], i32[s0,s1])",
    "%0 = mul %x, %y : f16[s0,s1]",
    "%1 = compare %0, %x {dir=\"lt\"} : pred[s0,s1]",
    "%2 = select %1, %x, %0 : f16[s0,s1]",
    "%3 = convert %2 : f64[s0,s1]",
    "%4 = exp %3 : f64[s0,s1]",
    "%5 = constant dense<3> : i32[]",
    "%6 = broadcast %5 {dims=[]} : i32[s0,s1]",
    "%7 = rem %i, %6 : i32[s0,s1]",
    "%8 = convert %k : i32[s1]",
    "%9 = broadcast %8 {dims=[1]} : i32[s0,s1]",
    "%10 = div %7, %9 : i32[s0,s1]",
    "%11 = convert %1 : i32[s0,s1]",
    "%12 = xor %10, %11 : i32[s0,s1]",
    "%13 = convert %x : i32[s0,s1]",
    "%14 = pow %12, %13 : i32[s0,s1]",
    "return %4, %14")


@EXAMPLES
@given(data=st.data())
def test_loop_fusion_of_mixed_element_types(data):
    s0, s1 = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
    args = shapes_args(data, [(s0, s1), (s0, s1), (s0, s1), (s1,)], ["float16", "float16", "int32", "int8"])
    check(MIXED_TYPES, args, exact=[1])
    # The mul and the compare feed both fusions and are too costly to duplicate: they stay
    # materialised (as single-op kernels) and both fusions read them.
    assert fusion_kinds(MIXED_TYPES) == {"loop": 2} and unfused_ops(MIXED_TYPES) == ["mul", "compare"]


SHARED_PRODUCERS = func(
    "(%x: f32[s0,4], %b: f32[4]) -> (f32[s0,4], f32[4,s0], f32[s0,4])",
    "%0 = broadcast %b {dims=[1]} : f32[s0,4]",
    "%1 = add %x, %0 : f32[s0,4]",
    "%2 = exp %1 : f32[s0,4]",
    "%3 = mul %x, %0 : f32[s0,4]",
    "%4 = transpose %3 {perm=[1, 0]} : f32[4,s0]",
    "%5 = neg %2 : f32[s0,4]",
    "%6 = sub %5, %2 : f32[s0,4]",
    "return %2, %4, %6")


@EXAMPLES
@given(data=st.data())
def test_loop_fusions_sharing_producers(data):
    """A broadcast used by two fusions is duplicated into both; an exp whose result is
    returned stays materialised and is read by the fusion that uses it."""
    s0 = data.draw(st.integers(0, 5))
    check(SHARED_PRODUCERS, shapes_args(data, [(s0, 4), (4,)], "float32"), exact=False)
    assert fusion_kinds(SHARED_PRODUCERS) == {"loop": 3} and unfused_ops(SHARED_PRODUCERS) == []


# -- input fusion --------------------------------------------------------------------------
REDUCED_DIMS = {"leading": [0], "middle": [1], "trailing": [2], "all": [0, 1, 2], "outer two": [0, 1],
                "outer and inner": [0, 2]}
EXPRESSIONS = ["mul %x, %y", "sub %x, %y", "add %x, %y", "max %x, %y", "min %x, %y", "div %x, %y"]
COMPARISONS = ['compare %x, %y {dir="lt"}', 'compare %x, %y {dir="le"}', 'compare %x, %y {dir="gt"}',
               'compare %x, %y {dir="ge"}', 'compare %x, %y {dir="eq"}', 'compare %x, %y {dir="ne"}']


def _second_op(elem: str) -> str:
    """A unary op that applies to ``elem``: fusions of two ops feed each reduction."""
    return "not" if elem == "pred" else "tanh" if elem.startswith("f") else "abs"


def reductions_text(kind: str, elem: str) -> str:
    """One reduce per REDUCED_DIMS entry, each of its own fused expression of x and y."""
    shape = ["s0", "s1", "4"]
    value_elem = "pred" if kind in ("and", "or") else elem
    expressions = COMPARISONS if kind in ("and", "or") else EXPRESSIONS
    lines, results = [], []
    for i, (expression, dims) in enumerate(zip(expressions, REDUCED_DIMS.values())):
        kept = ",".join(d for j, d in enumerate(shape) if j not in dims)
        lines.append(f"%e{i} = {expression} : {value_elem}[s0,s1,4]")
        lines.append(f"%f{i} = {_second_op(value_elem)} %e{i} : {value_elem}[s0,s1,4]")
        lines.append(f'%r{i} = reduce %f{i} {{dims={dims}, op="{kind}"}} : {value_elem}[{kept}]')
        results.append(f"{value_elem}[{kept}]")
    return func(f"(%x: {elem}[s0,s1,4], %y: {elem}[s0,s1,4]) -> ({', '.join(results)})", *lines,
                "return " + ", ".join(f"%r{i}" for i in range(len(results))))


@pytest.mark.parametrize("kind, elem", [("sum", "f32"), ("prod", "f64"), ("max", "f32"), ("min", "f16"),
                                        ("and", "f32"), ("or", "i32"), ("sum", "i32"), ("max", "i8")])
@EXAMPLES
@given(data=st.data())
def test_input_fusions(kind, elem, data):
    text = reductions_text(kind, elem)
    s0, s1 = data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))
    dtype = {"f16": "float16", "f32": "float32", "f64": "float64", "i32": "int32", "i8": "int8"}[elem]
    args = shapes_args(data, [(s0, s1, 4)] * 2, dtype, special=kind not in ("sum", "prod"), bound=2.0)
    tolerance = {"f16": (4e-3, 4e-3), "f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}[elem] if elem[0] == "f" else None
    check(text, args, exact=False, tolerance=tolerance, labels=list(REDUCED_DIMS))
    assert fusion_kinds(text) == {"input": len(REDUCED_DIMS)} and unfused_ops(text) == []


SOFTMAX = func(
    "(%x: f32[s0,10], %b: f32[10]) -> (f32[s0,10])",
    "%0 = broadcast %b {dims=[1]} : f32[s0,10]",
    "%1 = add %x, %0 : f32[s0,10]",
    '%2 = reduce %1 {dims=[1], op="max"} : f32[s0]',
    "%3 = broadcast %2 {dims=[0]} : f32[s0,10]",
    "%4 = sub %1, %3 : f32[s0,10]",
    "%5 = exp %4 : f32[s0,10]",
    '%6 = reduce %5 {dims=[1], op="sum"} : f32[s0]',
    "%7 = broadcast %6 {dims=[0]} : f32[s0,10]",
    "%8 = div %5, %7 : f32[s0,10]",
    "return %8")


@EXAMPLES
@given(data=st.data())
def test_softmax(data):
    s0 = data.draw(st.integers(0, 6))
    check(SOFTMAX, shapes_args(data, [(s0, 10), (10,)], "float32", special=False), exact=False)
    # Both row reductions and the elementwise work around them form one row fusion.
    assert fusion_kinds(SOFTMAX) == {"row": 1} and unfused_ops(SOFTMAX) == []


LOG_SUM_EXP = func(
    "(%x: f32[s0,10]) -> (f32[s0])",
    '%0 = reduce %x {dims=[1], op="max"} : f32[s0]',
    "%1 = broadcast %0 {dims=[0]} : f32[s0,10]",
    "%2 = sub %x, %1 : f32[s0,10]",
    "%3 = exp %2 : f32[s0,10]",
    '%4 = reduce %3 {dims=[1], op="sum"} : f32[s0]',
    "%5 = log %4 : f32[s0]",
    "%6 = add %5, %0 : f32[s0]",
    "return %6")


@EXAMPLES
@given(data=st.data())
def test_log_sum_exp(data):
    """The second reduction reads a fused expression that broadcasts the first one."""
    s0 = data.draw(st.integers(0, 6))
    check(LOG_SUM_EXP, shapes_args(data, [(s0, 10)], "float32"), exact=False)
    assert fusion_kinds(LOG_SUM_EXP) == {"input": 1, "loop": 1} and unfused_ops(LOG_SUM_EXP) == ["reduce"]


TRANSPOSED_REDUCTION = func(
    "(%x: f32[5,s0], %b: f32[5]) -> (f32[s0], f32[5])",
    "%0 = transpose %x {perm=[1, 0]} : f32[s0,5]",
    "%1 = broadcast %b {dims=[1]} : f32[s0,5]",
    "%2 = mul %0, %1 : f32[s0,5]",
    '%3 = reduce %2 {dims=[1], op="sum"} : f32[s0]',
    "%4 = slice %x {limit=[5, s0], start=[0, 0], stride=[1, 2]} : f32[5,(s0+1)//2]",
    "%5 = abs %4 : f32[5,(s0+1)//2]",
    '%6 = reduce %5 {dims=[1], op="max"} : f32[5]',
    "return %3, %6")


@EXAMPLES
@given(data=st.data())
def test_input_fusion_of_index_remapping_ops(data):
    s0 = data.draw(st.integers(0, 6))
    check(TRANSPOSED_REDUCTION, shapes_args(data, [(5, s0), (5,)], "float32", special=False), exact=[1])
    assert fusion_kinds(TRANSPOSED_REDUCTION) == {"input": 2}


# -- output fusion -------------------------------------------------------------------------
DOT_EPILOGUES = {
    "bias relu": ("[s0,6]", "[6,5]", "{contract=[[1], [0]]}", "[s0,5]"),
    "lhs transposed": ("[6,s0]", "[6,5]", "{contract=[[0], [0]]}", "[s0,5]"),
    "rhs transposed": ("[s0,6]", "[5,6]", "{contract=[[1], [1]]}", "[s0,5]"),
    "batch": ("[3,s0,6]", "[3,6,5]", "{batch=[[0], [0]], contract=[[2], [1]]}", "[3,s0,5]"),
    "several free dims": ("[s0,2,6]", "[6,5]", "{contract=[[2], [0]]}", "[s0,2,5]"),
    "two contracting dims": ("[s0,2,3]", "[3,2,5]", "{contract=[[1, 2], [1, 0]]}", "[s0,5]"),
}


def dot_epilogue_text(elem: str) -> str:
    """Each dot gets bias + relu (broadcast along its last dim) and a residual add."""
    params, lines, results = [], [], []
    for i, (lhs, rhs, attrs, out) in enumerate(DOT_EPILOGUES.values()):
        t = f"{elem}{out}"
        rank = out.count(",") + 1
        params += [f"%l{i}: {elem}{lhs}", f"%r{i}: {elem}{rhs}", f"%b{i}: {elem}[5]", f"%res{i}: {t}"]
        lines += [f"%d{i} = dot %l{i}, %r{i} {attrs} : {t}",
                  f"%bb{i} = broadcast %b{i} {{dims=[{rank - 1}]}} : {t}",
                  f"%a{i} = add %d{i}, %bb{i} : {t}",
                  f"%z{i} = constant dense<0.0> : {elem}[]",
                  f"%zb{i} = broadcast %z{i} {{dims=[]}} : {t}",
                  f"%m{i} = max %a{i}, %zb{i} : {t}",
                  f"%o{i} = add %m{i}, %res{i} : {t}"]
        results.append(t)
    return func(f"({', '.join(params)}) -> ({', '.join(results)})", *lines,
                "return " + ", ".join(f"%o{i}" for i in range(len(results))))


def contraction_args(data, entries, elem: str, s0: int, bias: int) -> list:
    from tfc.ir.dims import dim_eval, parse_dim

    def shape(text):
        return tuple(dim_eval(parse_dim(d), {"s0": s0}) for d in text.strip("[]").split(","))

    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[elem]
    args = []
    for lhs, rhs, _, out in entries:
        args += [seeded_array(data, dtype, shape(lhs), special=False, bound=2.0),
                 seeded_array(data, dtype, shape(rhs), special=False, bound=2.0),
                 seeded_array(data, dtype, (bias,), special=False, bound=2.0)]
        if out is not None:
            args.append(seeded_array(data, dtype, shape(out), special=False, bound=2.0))
    return args


@pytest.mark.parametrize("elem", ("f32", "f64", "f16"))
@EXAMPLES
@given(data=st.data())
def test_dot_output_fusions(elem, data):
    text = dot_epilogue_text(elem)
    s0 = data.draw(st.integers(0, 5))
    args = contraction_args(data, DOT_EPILOGUES.values(), elem, s0, 5)
    tolerance = {"f16": (4e-3, 2e-2), "f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}[elem]
    check(text, args, exact=False, tolerance=tolerance, labels=list(DOT_EPILOGUES))
    assert fusion_kinds(text) == {"output": len(DOT_EPILOGUES)} and unfused_ops(text) == []


CONV_EPILOGUES = {
    "same padding": ("[s0,5,6,2]", "[3,3,2,4]", "{padding=[[1, 1], [1, 1]]}", "[s0,5,6,4]"),
    "strides": ("[s0,7,6,2]", "[3,2,2,4]", "{padding=[[1, 0], [0, 1]], strides=[2, 3]}", "[s0,3,2,4]"),
    "rhs dilation": ("[s0,7,7,1]", "[2,3,1,4]", "{rhs_dilation=[3, 2]}", "[s0,4,3,4]"),
    "lhs dilation": ("[s0,3,4,2]", "[2,2,2,4]", "{lhs_dilation=[2, 3], padding=[[1, 1], [0, 1]]}", "[s0,6,10,4]"),
    "depthwise": ("[s0,5,5,2]", "[3,3,1,4]", "{groups=2, padding=[[1, 1], [1, 1]]}", "[s0,5,5,4]"),
    "groups": ("[s0,4,4,4]", "[2,2,2,4]", "{groups=2}", "[s0,3,3,4]"),
}


def conv_epilogue_text(elem: str) -> str:
    """Each conv gets a bias add (over channels) and a tanh: an output fusion each."""
    params, lines, results = [], [], []
    for i, (x, w, attrs, out) in enumerate(CONV_EPILOGUES.values()):
        t = f"{elem}{out}"
        params += [f"%x{i}: {elem}{x}", f"%w{i}: {elem}{w}", f"%b{i}: {elem}[4]"]
        lines += [f"%c{i} = conv %x{i}, %w{i} {attrs} : {t}",
                  f"%bb{i} = broadcast %b{i} {{dims=[3]}} : {t}",
                  f"%a{i} = add %c{i}, %bb{i} : {t}",
                  f"%o{i} = tanh %a{i} : {t}"]
        results.append(t)
    return func(f"({', '.join(params)}) -> ({', '.join(results)})", *lines,
                "return " + ", ".join(f"%o{i}" for i in range(len(results))))


@pytest.mark.parametrize("elem", ("f32", "f64"))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_conv_output_fusions(elem, data):
    text = conv_epilogue_text(elem)
    s0 = data.draw(st.integers(0, 2))
    entries = [(x, w, attrs, None) for x, w, attrs, _ in CONV_EPILOGUES.values()]
    args = contraction_args(data, entries, elem, s0, 4)
    tolerance = {"f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}[elem]
    check(text, args, exact=False, tolerance=tolerance, labels=list(CONV_EPILOGUES))
    assert fusion_kinds(text) == {"output": len(CONV_EPILOGUES)} and unfused_ops(text) == []


MLP = func(
    "(%x: f32[s0,8], %w1: f32[8,16], %b1: f32[16], %w2: f32[16,4], %b2: f32[4]) -> (f32[s0,4], f32[])",
    "%0 = dot %x, %w1 {contract=[[1], [0]]} : f32[s0,16]",
    "%1 = broadcast %b1 {dims=[1]} : f32[s0,16]",
    "%2 = add %0, %1 : f32[s0,16]",
    "%3 = logistic %2 : f32[s0,16]",
    "%4 = dot %3, %w2 {contract=[[1], [0]]} : f32[s0,4]",
    "%5 = broadcast %b2 {dims=[1]} : f32[s0,4]",
    "%6 = add %4, %5 : f32[s0,4]",
    "%7 = mul %6, %6 : f32[s0,4]",
    '%8 = reduce %7 {dims=[0, 1], op="sum"} : f32[]',
    "return %6, %8")


@EXAMPLES
@given(data=st.data())
def test_two_layer_network(data):
    """Output fusions feeding each other and an input fusion of the loss."""
    s0 = data.draw(st.integers(0, 6))
    args = [seeded_array(data, np.float32, shape, special=False, bound=1.0)
            for shape in [(s0, 8), (8, 16), (16,), (16, 4), (4,)]]
    check(MLP, args, exact=False, tolerance=(1e-5, 1e-5))
    kinds = fusion_kinds(MLP)
    assert kinds["output"] == 2 and kinds["input"] == 1 and unfused_ops(MLP) == []


# -- random programs -----------------------------------------------------------------------
class RandomProgram:
    """A random function over ``x, y: T[s0,n]``, ``v: T[n]``, ``w: ref<T[n,n]>`` (T is
    f32, f16 or i32) mixing
    elementwise chains, broadcasts, transposes, reductions, dots and variable updates,
    so every fusion kind and every buffer-assignment case (arena reuse, in-place
    elementwise updates, outputs, aliases of variables, in-place assigns) meets the others.
    Values stay small multiples of 1/4, so float results are (nearly) exact."""

    def __init__(self, draw, elem: ElemType, n: int):
        self.draw = draw
        self.elem = elem
        self.A, self.T = tensor(elem, S0, n), tensor(elem, n, S0)
        self.B, self.M, self.R = tensor(elem, n), tensor(elem, n, n), tensor(elem, S0)
        self.function = Function("main", [self.A, self.A, self.B, RefType(self.M)], ["x", "y", "v", "w"])
        self.builder = Builder(self.function.body)
        self.pool: dict = {}
        for arg in self.function.args[:3]:
            self.add(arg)

    def add(self, value):
        self.pool.setdefault(value.type, []).append(value)
        return value

    def op(self, name, operands, attrs=None, result_type=None):
        return self.add(self.builder.value(name, operands, attrs, result_type))

    def pick(self, t=None):
        if t is None:
            candidates = [v for vs in self.pool.values() for v in vs if v.type.elem is self.elem]
        else:
            candidates = self.pool.get(t, [])
        return self.draw(st.sampled_from(candidates)) if candidates else None

    # -- steps ---------------------------------------------------------------------------
    def unary(self):
        names = ["neg", "abs", "floor"] if self.elem.is_float else ["neg", "abs", "not"]
        self.op(self.draw(st.sampled_from(names)), [self.pick()])

    def binary(self):
        x = self.pick()
        y = self.pick(x.type)
        self.op(self.draw(st.sampled_from(["add", "sub", "mul", "max", "min"])), [x, y])

    def broadcast(self):
        source, target, dims = self.draw(st.sampled_from([
            (self.B, self.A, [1]), (self.B, self.T, [0]), (self.B, self.M, [0]), (self.B, self.M, [1]),
            (self.R, self.A, [0]), (self.R, self.T, [1])]))
        value = self.pick(source)
        if value is not None:
            self.op("broadcast", [value], {"dims": dims}, target)

    def splat(self):
        scalar = self.op("constant", [], {"value": np.array(self.draw(st.sampled_from([0, 1, 2])),
                                                            self.elem.np_dtype)}, tensor(self.elem))
        self.op("broadcast", [scalar], {"dims": []}, self.draw(st.sampled_from([self.A, self.T, self.M, self.B])))

    def transpose(self):
        value = self.pick(self.draw(st.sampled_from([self.A, self.T, self.M])))
        if value is not None:
            self.op("transpose", [value], {"perm": [1, 0]})

    def reduce(self):
        value = self.pick(self.draw(st.sampled_from([self.A, self.T, self.M])))
        if value is not None:
            dims = self.draw(st.sampled_from([[0], [1], [0, 1]]))
            self.op("reduce", [value], {"dims": dims, "op": self.draw(st.sampled_from(["sum", "max", "min"]))})

    def dot(self):
        lhs_type, rhs_type = self.draw(st.sampled_from([(self.A, self.M), (self.T, self.A), (self.M, self.M),
                                                        (self.A, self.B), (self.M, self.T)]))
        lhs, rhs = self.pick(lhs_type), self.pick(rhs_type)
        if lhs is not None and rhs is not None:
            self.op("dot", [lhs, rhs], {"contract": [[1], [0]]})

    def select(self):
        a = self.pick()
        b, c = self.pick(a.type), self.pick(a.type)
        predicate = self.op("compare", [a, b], {"dir": self.draw(st.sampled_from(["lt", "ge", "eq"]))})
        self.op("select", [predicate, b, c])

    def update(self):
        """``w = f(read w, ...)``, sometimes through a transpose (never in place)."""
        ref = self.function.args[3]
        old = self.op("read", [ref])
        other = self.pick(self.M)
        new = self.op(self.draw(st.sampled_from(["add", "sub", "max"])), [old, other])
        if self.draw(st.booleans()):
            new = self.op("transpose", [new], {"perm": [1, 0]})
        self.builder.op("assign", [ref, new])

    def rearrange(self):
        """An A from an A through concatenate/slice, pad/slice or reverse (elemental ops)."""
        x = self.pick(self.A)
        n = self.A.shape[1]
        kind = self.draw(st.sampled_from(["concatenate", "pad", "reverse"]))
        if kind == "concatenate":
            wide = self.op("concatenate", [x, self.pick(self.A)], {"dim": 1})
            start = self.draw(st.integers(0, n))
            self.op("slice", [wide], {"start": [0, start], "limit": [S0, start + n]})
        elif kind == "pad":
            zero = self.op("constant", [], {"value": np.zeros((), self.elem.np_dtype)}, tensor(self.elem))
            padded = self.op("pad", [x, zero], {"low": [0, 1], "high": [0, 1], "interior": [0, 1]})
            self.op("slice", [padded], {"start": [0, 1], "limit": [S0, 2 * n], "stride": [1, 2]})
        else:
            self.op("reverse", [x], {"dims": self.draw(st.sampled_from([[0], [1], [0, 1]]))})

    def gather(self):
        """Rows or columns of an M picked by constant indices (all in range)."""
        n = self.M.shape[0]
        table = self.pick(self.M)
        if table is None:
            return
        indices = np.array(self.draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n)), np.int32)
        ids = self.op("constant", [], {"value": indices}, tensor(ElemType.I32, n))
        self.op("gather", [table, ids], {"axis": self.draw(st.sampled_from([0, 1]))})

    def convert(self):
        """A round trip through another element type (exact for these small values)."""
        x = self.pick()
        other = ElemType.F64 if self.elem.is_float else ElemType.I64
        wide = self.op("convert", [x], {}, x.type.with_elem(other))
        self.op("convert", [wide], {}, x.type)

    STEPS = ["unary", "binary", "binary", "broadcast", "splat", "transpose", "reduce", "dot", "select", "update",
             "rearrange", "gather", "convert"]

    def build(self) -> str:
        for _ in range(self.draw(st.integers(3, 16))):
            getattr(self, self.draw(st.sampled_from(self.STEPS)))()
        produced = [v for op in self.function.body.ops for v in op.results]
        used = {v for op in self.function.body.ops for v in op.operands}
        sinks = [v for v in produced if v not in used] or self.function.args[:1]
        outputs = self.draw(st.lists(st.sampled_from(sinks), min_size=1, max_size=3, unique=True))
        if produced:
            outputs += self.draw(st.lists(st.sampled_from(produced), max_size=2))
        self.builder.op("return", outputs, result_types=[])
        module = Module([self.function])
        verify(module)
        return str(module)


@st.composite
def random_programs(draw) -> str:
    elem = draw(st.sampled_from([ElemType.F32, ElemType.I32, ElemType.F16]))
    return RandomProgram(draw, elem, draw(st.sampled_from([1, 2, 3]))).build()


def _small_values(module: Module, batch: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for arg in module.main.args:
        t = arg.type.tensor if isinstance(arg.type, RefType) else arg.type
        shape = tuple(batch if not isinstance(d, int) else d for d in t.shape)
        values = rng.integers(-6, 7, size=shape)
        args.append((values / 4 if t.elem.is_float else values).astype(t.elem.np_dtype))
    return args


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(), st.integers(0, 2**32 - 1))
def test_random_programs(text, seed):
    module = reference(text)
    rtol, atol = (2e-3, 1e-3) if "f16" in text else (1e-5, 1e-6)
    for batch in (0, 1, 3):
        expected, got, eval_args, run_args = check(text, _small_values(module, batch, seed + batch), exact=False,
                                                   tolerance=(rtol, atol))
        np.testing.assert_allclose(run_args[3].astype(np.float64), eval_args[3].astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg="variable w")
