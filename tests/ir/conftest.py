"""Shared IR test data: one or more canonical module texts per core op.

Every text here is in printed form (print -> parse -> print is the identity) and is valid
IR (the verifier accepts it). ``ROUND_TRIP`` must cover every op of ``CORE_OPS``;
``tests/ir/test_printer_parser.py`` checks that it does.

Tests receive the cases through the ``roundtrip_case`` parameter (``(op_name, text)``)
and the whole table through the ``roundtrip_table`` fixture.
"""
import numpy as np
import pytest

from tfc.ir.ops import BINARY_LOGICAL, BINARY_NUMERIC, UNARY_FLOAT


def _func(signature: str, *lines: str) -> str:
    """``func @main<signature> {`` + indented lines + ``}``."""
    body = "".join(f"  {line}\n" for line in lines)
    return f"func @main{signature} {{\n{body}}}\n"


def _unary(name: str, t: str) -> str:
    return _func(f"(%x: {t}) -> ({t})", f"%0 = {name} %x : {t}", "return %0")


def _binary(name: str, t: str) -> str:
    return _func(f"(%a: {t}, %b: {t}) -> ({t})", f"%0 = {name} %a, %b : {t}", "return %0")


def _hex(array: np.ndarray) -> str:
    return '"0x' + array.astype(array.dtype.newbyteorder("<")).tobytes().hex() + '"'


ROUND_TRIP: dict = {}

for _name in UNARY_FLOAT:
    ROUND_TRIP[_name] = [_unary(_name, "f32[s0,3]")]
ROUND_TRIP["neg"] = [_unary("neg", "i32[4]"), _unary("neg", "f64[]")]
ROUND_TRIP["sign"] = [_unary("sign", "i8[2,2]")]
ROUND_TRIP["abs"] = [_unary("abs", "u8[5]")]
ROUND_TRIP["round_bf16"] = [_unary("round_bf16", "f32[s0,3]")]
ROUND_TRIP["not"] = [_unary("not", "pred[s0]"), _unary("not", "i16[3]")]
for _name in BINARY_NUMERIC:
    ROUND_TRIP[_name] = [_binary(_name, "f64[2,s0]")]
for _name in BINARY_LOGICAL:
    ROUND_TRIP[_name] = [_binary(_name, "pred[3]"), _binary(_name, "i64[]")]
ROUND_TRIP["atan2"] = [_binary("atan2", "f16[7]")]

ROUND_TRIP["compare"] = [_func(
    "(%a: i32[4], %b: i32[4]) -> (pred[4])",
    '%0 = compare %a, %b {dir="lt"} : pred[4] loc("Less"("model.py":3))',
    "return %0")]
ROUND_TRIP["select"] = [_func(
    "(%p: pred[2,3], %a: u8[2,3], %b: u8[2,3]) -> (u8[2,3])",
    "%0 = select %p, %a, %b : u8[2,3]",
    "return %0")]
ROUND_TRIP["convert"] = [_func(
    "(%x: f32[s0,2]) -> (i16[s0,2])",
    '%0 = convert %x : i16[s0,2] loc("model.py":12)',
    "return %0")]
ROUND_TRIP["constant"] = [
    _func("() -> (f32[], f32[2,2], f64[3], f16[2], pred[3])",
          "%0 = constant dense<0.0> : f32[]",
          "%1 = constant dense<[[1.0, 2.0], [3.0, 4.0]]> : f32[2,2]",
          "%2 = constant dense<[inf, -inf, nan]> : f64[3]",
          "%3 = constant dense<[-0.0, 0.0]> : f16[2]",
          "%4 = constant dense<[true, false, true]> : pred[3]",
          "return %0, %1, %2, %3, %4"),
    _func("() -> (i8[4], u8[2], i64[2], i16[2], i32[3,3])",
          "%0 = constant dense<[-128, 127, 0, 5]> : i8[4]",
          "%1 = constant dense<[0, 255]> : u8[2]",
          "%2 = constant dense<[-9223372036854775808, 9223372036854775807]> : i64[2]",
          "%3 = constant dense<[-32768, 32767]> : i16[2]",
          '%4 = constant dense<7> : i32[3,3] loc("Const"("model.py":1))',
          "return %0, %1, %2, %3, %4"),
    _func("() -> (f32[], f16[], f64[], f32[0], i32[2,0], pred[2,2])",
          "%0 = constant dense<1e-05> : f32[]",
          "%1 = constant dense<6.55e+04> : f16[]",
          "%2 = constant dense<0.1> : f64[]",
          "%3 = constant dense<[]> : f32[0]",
          "%4 = constant dense<[[], []]> : i32[2,0]",
          "%5 = constant dense<true> : pred[2,2]",
          "return %0, %1, %2, %3, %4, %5"),
    _func("() -> (f32[10,10], f16[65], pred[65], i64[70])",
          f"%0 = constant dense<{_hex(np.arange(100, dtype=np.float32).reshape(10, 10))}> : f32[10,10]",
          f"%1 = constant dense<{_hex(np.linspace(-1, 1, 65).astype(np.float16))}> : f16[65]",
          f"%2 = constant dense<{_hex(np.arange(65) % 3 == 0)}> : pred[65]",
          f"%3 = constant dense<{_hex(np.arange(-35, 35, dtype=np.int64))}> : i64[70]",
          "return %0, %1, %2, %3"),
]
ROUND_TRIP["iota"] = [_func("() -> (i32[3,4])", "%0 = iota {dim=1} : i32[3,4]", "return %0")]
ROUND_TRIP["dims"] = [_func(
    "(%x: f32[s0,s1]) -> (i64[5])",
    "%0 = dims {values=[s0, 784*s0, (s0-5)//2+1, s0*s1+3, 3]} : i64[5]",
    "return %0")]
ROUND_TRIP["broadcast"] = [_func(
    "(%x: f32[s0]) -> (f32[2,s0])",
    "%0 = broadcast %x {dims=[1]} : f32[2,s0]",
    "return %0")]
ROUND_TRIP["reshape"] = [_func(
    "(%x: f32[s0,784]) -> (f32[784*s0])",
    "%0 = reshape %x : f32[784*s0]",
    "return %0")]
ROUND_TRIP["transpose"] = [_func(
    "(%x: f32[s0,3]) -> (f32[3,s0])",
    "%0 = transpose %x {perm=[1, 0]} : f32[3,s0]",
    "return %0")]
ROUND_TRIP["slice"] = [
    _func("(%x: f32[s0,10]) -> (f32[s0-1,4])",
          "%0 = slice %x {limit=[s0, 10], start=[1, 0], stride=[1, 3]} : f32[s0-1,4]",
          "return %0"),
    _func("(%x: f32[s0]) -> (f32[(s0-4)//2])",
          "%0 = slice %x {limit=[s0], start=[5], stride=[2]} : f32[(s0-4)//2]",
          "return %0"),
]
ROUND_TRIP["dynamic_slice"] = [_func(
    "(%x: f32[s0,4], %i: i32[], %j: i64[]) -> (f32[2,2])",
    "%0 = dynamic_slice %x, %i, %j {sizes=[2, 2]} : f32[2,2]",
    "return %0")]
ROUND_TRIP["concatenate"] = [_func(
    "(%a: f32[s0,3], %b: f32[s1,3], %c: f32[2,3]) -> (f32[s0+s1+2,3])",
    "%0 = concatenate %a, %b, %c {dim=0} : f32[s0+s1+2,3]",
    "return %0")]
ROUND_TRIP["pad"] = [_func(
    "(%x: f32[4,4], %v: f32[]) -> (f32[7,6])",
    "%0 = pad %x, %v {high=[1, -1], interior=[0, 1], low=[2, 0]} : f32[7,6]",
    "return %0")]
ROUND_TRIP["reverse"] = [_func(
    "(%x: i32[s0,2]) -> (i32[s0,2])",
    "%0 = reverse %x {dims=[0, 1]} : i32[s0,2]",
    "return %0")]
ROUND_TRIP["gather"] = [_func(
    "(%params: f32[10,4], %ids: i32[s0]) -> (f32[s0,4])",
    "%0 = gather %params, %ids {axis=0} : f32[s0,4]",
    "return %0")]
ROUND_TRIP["scatter_add"] = [_func(
    "(%x: f32[10,4], %ids: i64[3], %u: f32[3,4]) -> (f32[10,4])",
    "%0 = scatter_add %x, %ids, %u {axis=0} : f32[10,4]",
    "return %0")]
ROUND_TRIP["compact"] = [_func(
    "(%m: pred[s0]) -> (i64[s0])",
    "%0 = compact %m : i64[s0]",
    "return %0")]
ROUND_TRIP["first_occurrence"] = [_func(
    "(%x: f32[7]) -> (i64[7])",
    "%0 = first_occurrence %x : i64[7]",
    "return %0")]
ROUND_TRIP["scan"] = [_func(
    "(%x: f32[s0,4]) -> (f32[s0,4], f32[s0,4])",
    '%0 = scan %x {dim=1, exclusive=false, op="sum", reverse=false} : f32[s0,4]',
    '%1 = scan %x {dim=0, exclusive=true, op="prod", reverse=true} : f32[s0,4]',
    "return %0, %1")]
ROUND_TRIP["host_call"] = [_func(
    "(%x: f32[s0,2], %i: i32[]) -> (f32[s0,2])",
    'host_call %i, %x {ops=["loop/StringFormat", "loop/PrintV2"], tensors=["loop/i:0", "loop/x:0"]}',
    "return %x")]
ROUND_TRIP["reduce"] = [_func(
    "(%x: f32[s0,5], %p: pred[3,3]) -> (f32[s0], pred[])",
    '%0 = reduce %x {dims=[1], op="sum"} : f32[s0]',
    '%1 = reduce %p {dims=[0, 1], op="and"} : pred[]',
    "return %0, %1")]
ROUND_TRIP["argmax"] = [_func(
    "(%x: f32[s0,5]) -> (i64[s0])", "%0 = argmax %x {dim=1} : i64[s0]", "return %0")]
ROUND_TRIP["argmin"] = [_func(
    "(%x: i32[5,s0]) -> (i32[s0])", "%0 = argmin %x {dim=0} : i32[s0]", "return %0")]
ROUND_TRIP["dot"] = [
    _func("(%x: f32[s0,784], %w: f32[784,512]) -> (f32[s0,512])",
          "%0 = dot %x, %w {contract=[[1], [0]]} : f32[s0,512]",
          "return %0"),
    _func("(%a: f32[8,s0,3], %b: f32[8,3,5]) -> (f32[8,s0,5])",
          "%0 = dot %a, %b {batch=[[0], [0]], contract=[[2], [1]]} : f32[8,s0,5]",
          "return %0"),
]
ROUND_TRIP["conv"] = [
    _func("(%x: f32[s0,28,28,1], %w: f32[5,5,1,32]) -> (f32[s0,28,28,32])",
          "%0 = conv %x, %w {padding=[[2, 2], [2, 2]], strides=[1, 1]} : f32[s0,28,28,32]",
          "return %0"),
    _func("(%x: f64[1,8,8,4], %w: f64[3,3,1,4]) -> (f64[1,4,4,4])",
          "%0 = conv %x, %w {groups=4, lhs_dilation=[1, 1], rhs_dilation=[2, 2]} : f64[1,4,4,4]",
          "return %0"),
]
ROUND_TRIP["reduce_window"] = [
    _func("(%x: f32[s0]) -> (f32[(s0-5)//2+1])",
          '%0 = reduce_window %x {op="max", strides=[2], window=[5]} : f32[(s0-5)//2+1]',
          "return %0"),
    _func("(%x: f32[1,28,28,3]) -> (f32[1,14,14,3])",
          '%0 = reduce_window %x {op="sum", padding=[[0, 0], [0, 1], [0, 1], [0, 0]], strides=[1, 2, 2, 1],'
          ' window=[1, 2, 2, 1]} : f32[1,14,14,3]',
          "return %0"),
]
ROUND_TRIP["select_and_scatter"] = [_func(
    "(%x: f32[4,4], %g: f32[2,2]) -> (f32[4,4])",
    "%0 = select_and_scatter %x, %g {strides=[2, 2], window=[2, 2]} : f32[4,4]",
    "return %0")]
ROUND_TRIP["rng"] = [_func(
    "(%state: ref<i64[]>, %x: f32[s0,3]) -> (f32[s0,3])",
    '%0 = rng %state {dist="truncated_normal", seed=[1, -2]} : f32[s0,3] loc("dropout"("model.py":40))',
    "return %0")]
ROUND_TRIP["read"] = [_func(
    "(%w: ref<f32[784,512]>) -> (f32[784,512])",
    '%0 = read %w : f32[784,512] loc("w/read"("mlp.py":9))',
    "return %0")]
ROUND_TRIP["assign"] = [_func(
    "(%w: ref<f32[4]>, %g: f32[4]) -> ()",
    "%0 = read %w : f32[4]",
    "%1 = sub %0, %g : f32[4]",
    'assign %w, %1 loc("update"("train.py":20))',
    "return")]
ROUND_TRIP["check"] = [_func(
    "(%x: f32[s0,4], %ids: i32[s0], %y: i64[3], %c: pred[]) -> (f32[s0,4])",
    'check %ids {bound=[7], kind="segment_id"} loc("seg"("model.py":3))',
    'check %x {axis=0, kind="reduction_axis"}',
    'check %y {kind="divisor", unless_empty=[s0, 3]}',
    'check %c, %x, %y {kind="assert", summarize=-1, text=["assertion failed: [\\"q\\"\\t] [", "] [", "]"]}',
    "return %x")]
_FUSION = """\
func @main(%x: f32[s0,4], %y: f32[s0,4]) -> (f32[s0,4], f32[s0]) {
  %0:2 = fusion %x, %y {kind="input"} : (f32[s0,4], f32[s0]) loc("fused"("model.py":7)) {
  ^(%p0: f32[s0,4], %b.c: f32[s0,4]):
    %1 = add %p0, %b.c : f32[s0,4]
    %2 = reduce %1 {dims=[1], op="sum"} : f32[s0]
    yield %1, %2
  }
  %3 = neg %0#0 : f32[s0,4]
  %4 = fusion %3 {kind="loop"} : f32[s0,4] {
  ^(%p0: f32[s0,4]):
    %5 = constant dense<2.0> : f32[]
    %6 = broadcast %5 {dims=[]} : f32[s0,4]
    %7 = mul %p0, %6 : f32[s0,4]
    yield %7
  }
  return %4, %0#1
}
"""
ROUND_TRIP["fusion"] = [_FUSION]
ROUND_TRIP["call"] = [_func(
    "(%x: f32[4], %w: ref<i64[]>) -> (f32[4], f32[4])",
    "%0 = call %x {callee=@helper} : f32[4]",
    '%1:2 = call %x, %0 {callee=@"two results"} : (f32[4], f32[4]) loc("model.py":2)',
    "return %1#0, %1#1")
    + "\n" + """\
func @helper(%a: f32[4]) -> (f32[4]) {
  %0 = exp %a : f32[4]
  return %0
}

func @"two results"(%arg0: f32[4], %arg1: f32[4]) -> (f32[4], f32[4]) {
  return %arg1, %arg0
}
"""]
ROUND_TRIP["return"] = [
    "func @empty() -> () {\n  return\n}\n",
    _func("(%x: f32[2], %arg1: f32[3]) -> (f32[3], f32[2], f32[2])", "return %arg1, %x, %x"),
]
ROUND_TRIP["yield"] = [_FUSION]
ROUND_TRIP["if"] = [_func(
    "(%p: pred[], %x: f32[s0,4], %v: ref<f32[4]>) -> (f32[s0,4], f32[4])",
    "%0:2 = if %p, %x, %v : (f32[s0,4], f32[4]) loc(\"cond.py\":3) {",
    "^(%a: f32[s0,4], %r: ref<f32[4]>):",
    "  %1 = tanh %a : f32[s0,4]",
    "  %2 = read %r : f32[4]",
    "  yield %1, %2",
    "} {",
    "^(%a: f32[s0,4], %r: ref<f32[4]>):",
    "  %3 = constant dense<[1.0, 2.0, 3.0, 4.0]> : f32[4]",
    "  assign %r, %3",
    "  yield %a, %3",
    "}",
    "return %0#0, %0#1")]
ROUND_TRIP["while"] = [_func(
    "(%n: i32[], %x: f32[s0]) -> (f32[s0])",
    "%0 = constant dense<0> : i32[]",
    "%1:2 = while %0, %x, %n {carried=2} : (i32[], f32[s0]) {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  %2 = compare %i, %lim {dir=\"lt\"} : pred[]",
    "  yield %2",
    "} {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  %3 = constant dense<1> : i32[]",
    "  %4 = add %i, %3 : i32[]",
    "  %5 = add %acc, %acc : f32[s0]",
    "  yield %4, %5",
    "}",
    "return %1#1")]


def pytest_generate_tests(metafunc):
    """Parametrize ``roundtrip_case`` over every (op, text) of the table."""
    if "roundtrip_case" in metafunc.fixturenames:
        cases = [(name, text) for name, texts in sorted(ROUND_TRIP.items()) for text in texts]
        ids = [f"{name}-{i}" for name, texts in sorted(ROUND_TRIP.items()) for i in range(len(texts))]
        metafunc.parametrize("roundtrip_case", cases, ids=ids)


@pytest.fixture
def roundtrip_table() -> dict:
    return ROUND_TRIP
