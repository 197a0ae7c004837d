"""Every stage of the simplify pipeline keeps the program's meaning.

Hypothesis builds small random functions over f32 or i32 with a symbolic batch dim
``s0`` bound by the arguments: elementwise unary/binary chains, splat constants
(0, 1, ...) and constant vectors, broadcasts (of broadcasts), reshapes, transposes,
reductions, selects, identity shape ops, duplicated ops, and reads/assigns of a
variable. After every pass (through the dump hook) the module must verify and evaluate
to the same results and the same final variable value as the original, at two batch
sizes: exactly for integers, within rtol 1e-6 for floats (NaN equal to NaN, the sign of
zero ignored: ``x + 0.0`` keeps ``-0.0``). Half of the runs feed some inf and NaN
inputs, which is what tells a wrong ``x*0 -> 0`` on floats apart.
"""
import itertools
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfc.ir import (Builder, ElemType, Function, Module, Operation, RefType, evaluate, parse_module, sym, tensor,
                    verify)
from tfc.ir.dims import dim_mul
from tfc.passes import PassManager

S0 = sym("s0")
BATCH_SIZES = (1, 3)

UNARY = {ElemType.F32: ["neg", "abs", "exp", "tanh", "floor"], ElemType.I32: ["neg", "abs", "not"]}
INVOLUTIONS = {ElemType.F32: ["neg"], ElemType.I32: ["neg", "not"]}
BINARY = {ElemType.F32: ["add", "sub", "mul", "div", "max", "min"],
          ElemType.I32: ["add", "sub", "mul", "div", "max", "min", "and", "or", "xor"]}
SPLATS = {ElemType.F32: [0.0, 1.0, -1.0, 2.0, 0.5], ElemType.I32: [0, 1, -1, 2, 3]}
DIRECTIONS = ["eq", "ne", "lt", "le", "gt", "ge"]


@dataclass
class Program:
    """The function being built, its value pool and the types it may create."""

    elem: ElemType
    n: int
    builder: Builder
    pool: dict = field(default_factory=dict)  # type -> [values]

    def __post_init__(self):
        e, n = self.elem, self.n
        self.A = tensor(e, S0, n)  # the batch
        self.B = tensor(e, n)  # a vector (the variable's type)
        self.S = tensor(e)  # a scalar
        self.types = [self.A, self.B, self.S,
                      tensor(e, n, S0),  # the batch transposed
                      tensor(e, S0),  # a batch reduced
                      tensor(e, dim_mul(S0, n)),  # the batch flattened
                      tensor(e, S0, n, 2), tensor(e, dim_mul(S0, 2 * n)),  # a rank-3 tensor, flattened
                      tensor(e, n, 2)]

    def add(self, value):
        self.pool.setdefault(value.type, []).append(value)
        if value.type.elem is self.elem and value.type not in self.types:
            self.types.append(value.type)
        return value

    def numeric(self) -> list:
        return [v for t, vs in self.pool.items() if t.elem is self.elem for v in vs]

    def op(self, name, operands, attrs=None, result_type=None):
        return self.add(self.builder.value(name, operands, attrs, result_type))


def _pick(draw, p: Program, t=None):
    """A value of type ``t`` (any numeric value when None) from the pool."""
    candidates = p.numeric() if t is None else p.pool.get(t, [])
    return draw(st.sampled_from(candidates))


def _broadcasts(source, targets) -> list:
    """Every (target, dims) that broadcasts ``source`` to one of ``targets``."""
    out = []
    for target in targets:
        for dims in itertools.combinations(range(target.rank), source.rank):
            if all(s == 1 or s == target.shape[d] for s, d in zip(source.shape, dims)):
                out.append((target, list(dims)))
    return out


# -- steps: each adds a few ops to the program -----------------------------------------------
def step_unary(draw, p: Program):
    p.op(draw(st.sampled_from(UNARY[p.elem])), [_pick(draw, p)])


def step_involution(draw, p: Program):
    name = draw(st.sampled_from(INVOLUTIONS[p.elem]))
    p.op(name, [p.op(name, [_pick(draw, p)])])


def step_binary(draw, p: Program):
    x = _pick(draw, p)
    y = _pick(draw, p, x.type)
    if draw(st.booleans()):
        x, y = y, x
    p.op(draw(st.sampled_from(BINARY[p.elem])), [x, y])


def step_binary_with_splat(draw, p: Program):
    """``x op c`` or ``c op x`` with a splat ``c`` (0, 1, ...): the algebraic identities."""
    x = _pick(draw, p)
    value = np.array(draw(st.sampled_from([0, 1, *SPLATS[p.elem]])), dtype=p.elem.np_dtype)
    if x.type.is_static and draw(st.booleans()):
        c = p.op("constant", [], {"value": value}, x.type)
    else:
        c = p.op("broadcast", [p.op("constant", [], {"value": value}, p.S)], {"dims": []}, x.type)
    operands = [c, x] if draw(st.booleans()) else [x, c]
    p.op(draw(st.sampled_from(BINARY[p.elem])), operands)


def step_splat(draw, p: Program):
    value = np.array(draw(st.sampled_from(SPLATS[p.elem])), dtype=p.elem.np_dtype)
    scalar = p.op("constant", [], {"value": value}, p.S)
    target = draw(st.sampled_from([None] + p.types))
    if target is not None:
        p.op("broadcast", [scalar], {"dims": []}, target)


def step_vector(draw, p: Program):
    values = draw(st.lists(st.sampled_from(SPLATS[p.elem]), min_size=p.n, max_size=p.n))
    p.op("constant", [], {"value": np.array(values, dtype=p.elem.np_dtype)}, p.B)


def broadcast_of(draw, p: Program, x):
    target, dims = draw(st.sampled_from(_broadcasts(x.type, p.types)))
    return p.op("broadcast", [x], {"dims": dims}, target)


def transpose_of(draw, p: Program, x):
    return p.op("transpose", [x], {"perm": draw(st.permutations(range(x.type.rank)))})


def reshape_of(draw, p: Program, x):
    targets = [t for t in p.types if t.num_elements == x.type.num_elements]
    return p.op("reshape", [x], {}, draw(st.sampled_from(targets)))


SHAPE_OPS = [broadcast_of, transpose_of, reshape_of]


def step_shape_op(draw, p: Program):
    draw(st.sampled_from(SHAPE_OPS))(draw, p, _pick(draw, p))


def step_shape_chain(draw, p: Program):
    """Two to four shape ops in a row, starting from a rank-3 tensor half of the time:
    compositions for canonicalize."""
    x = _pick(draw, p)
    if draw(st.booleans()):
        x = broadcast_of(draw, p, x) if x.type.rank < 3 else x
        x = reshape_of(draw, p, x) if x.type.rank < 3 else x
    for shape_op in draw(st.lists(st.sampled_from(SHAPE_OPS), min_size=2, max_size=4)):
        x = shape_op(draw, p, x)


def step_reduce(draw, p: Program):
    x = _pick(draw, p)
    dims = sorted(draw(st.sets(st.sampled_from(range(x.type.rank)))) if x.type.rank else [])
    p.op("reduce", [x], {"dims": dims, "op": draw(st.sampled_from(["sum", "max", "min"]))})


def step_select(draw, p: Program):
    a = _pick(draw, p)
    b = _pick(draw, p, a.type)
    pred_type = a.type.with_elem(ElemType.PRED)
    if draw(st.booleans()):
        c = _pick(draw, p, a.type)
        pred = p.op("compare", [a, c], {"dir": draw(st.sampled_from(DIRECTIONS))})
    else:
        flag = p.op("constant", [], {"value": np.array(draw(st.booleans()))}, tensor(ElemType.PRED))
        pred = p.op("broadcast", [flag], {"dims": []}, pred_type)
    p.op("select", [pred, a, b])


def step_identity_shape_op(draw, p: Program):
    x = _pick(draw, p, p.A)
    kind = draw(st.sampled_from(["convert", "slice", "pad", "concatenate"]))
    if kind == "convert":
        p.op("convert", [x], {}, x.type)
    elif kind == "slice":
        p.op("slice", [x], {"start": [0, 0], "limit": [S0, p.n]})
    elif kind == "concatenate":
        p.op("concatenate", [x], {"dim": draw(st.sampled_from([0, 1]))})
    else:
        zero = p.op("constant", [], {"value": np.zeros((), p.elem.np_dtype)}, p.S)
        p.op("pad", [x, zero], {"low": [0, 0], "high": [0, 0]})


def step_duplicate(draw, p: Program):
    ops = [op for op in p.builder.block.ops if op.results and op.name != "read"]
    if not ops:
        return
    op = draw(st.sampled_from(ops))
    copy = Operation(op.name, op.operands, op.result_types, dict(op.attrs))
    p.add(p.builder.block.append(copy).result)


def step_read(draw, p: Program):
    p.op("read", [p.builder.block.args[3]])


def step_assign(draw, p: Program):
    p.builder.op("assign", [p.builder.block.args[3], _pick(draw, p, p.B)])


def step_update(draw, p: Program):
    """read; assign a new value; read again and use both reads: CSE must keep the reads apart."""
    ref = p.builder.block.args[3]
    first = p.op("read", [ref])
    p.builder.op("assign", [ref, p.op(draw(st.sampled_from(BINARY[p.elem])), [first, _pick(draw, p, p.B)])])
    second = p.op("read", [ref])
    p.op("sub", [second, first])


STEPS = [step_unary, step_involution, step_binary, step_binary, step_binary_with_splat, step_binary_with_splat,
         step_binary_with_splat, step_splat, step_vector, step_shape_op, step_shape_op, step_shape_chain,
         step_shape_chain, step_reduce, step_select, step_identity_shape_op, step_duplicate,
         step_read, step_assign, step_update]


@st.composite
def programs(draw) -> str:
    """The text of a random function ``@main(%x, %y: T[s0,n], %v: T[n], %w: ref<T[n]>)``."""
    elem = draw(st.sampled_from([ElemType.F32, ElemType.I32]))
    n = draw(st.sampled_from([1, 2, 3]))
    p = Program(elem, n, None)
    func = Function("main", [p.A, p.A, p.B, RefType(p.B)], ["x", "y", "v", "w"])
    p.builder = Builder(func.body)
    for arg in func.args[:3]:
        p.add(arg)
    for _ in range(draw(st.integers(2, 24))):
        draw(st.sampled_from(STEPS))(draw, p)
    produced = [v for op in func.body.ops for v in op.results] or func.args[:3]
    used = {v for op in func.body.ops for v in op.operands}
    sinks = [v for v in produced if v not in used] or produced
    outputs = draw(st.lists(st.sampled_from(sinks), min_size=1, max_size=4, unique=True))
    outputs += draw(st.lists(st.sampled_from(produced), max_size=2))
    p.builder.op("return", outputs, result_types=[])
    module = Module([func])
    verify(module)
    return str(module)


# -- running and comparing -------------------------------------------------------------------
def make_inputs(module: Module, batch: int, seed: int, specials: bool) -> list:
    """Small values (multiples of 1/4 for floats); with ``specials``, some floats are
    inf, -inf or NaN, which tell ``x*0`` from ``0``."""
    rng = np.random.default_rng(seed)
    args = []
    for arg in module.main.args:
        t = arg.type.tensor if isinstance(arg.type, RefType) else arg.type
        shape = tuple(batch if not isinstance(d, int) else d for d in t.shape)
        if t.elem.is_float:
            values = rng.integers(-8, 9, size=shape) / 4
            if specials:
                values = np.where(rng.random(shape) < 0.2, rng.choice([np.inf, -np.inf, np.nan], shape), values)
            args.append(values.astype(np.float32))
        else:
            args.append(rng.integers(-6, 7, size=shape).astype(np.int32))
    return args


def run(module: Module, inputs: list) -> list:
    """The results and the final variable value (the ref buffer is a fresh copy)."""
    args = [np.array(a, copy=True) for a in inputs]
    results = evaluate(module, args)
    return results + [args[3]]


def assert_same(expected: list, got: list, stage: str, batch: int) -> None:
    assert len(expected) == len(got), stage
    for i, (e, g) in enumerate(zip(expected, got)):
        where = f"after {stage}, batch {batch}, result {i}"
        assert e.dtype == g.dtype and e.shape == g.shape, where
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=0, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(g, e, err_msg=where)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32 - 1), st.booleans())
def test_every_stage_of_simplify_preserves_values(text, seed, specials):
    module = parse_module(text)
    inputs = {b: make_inputs(module, b, seed + b, specials) for b in BATCH_SIZES}
    expected = {b: run(module, inputs[b]) for b in BATCH_SIZES}
    stages = []

    def check(stage, current):
        stages.append(stage)
        verify(current)
        for b in BATCH_SIZES:
            assert_same(expected[b], run(current, inputs[b]), stage, b)

    before = module.op_count()
    report = PassManager("simplify", dump=check).run(module)
    assert stages == [r.stage for r in report]
    assert report.converged == {"simplify": True}
    assert module.op_count() <= before
    assert not PassManager("simplify").run(module).changed  # the result is a fixed point


@settings(max_examples=40, deadline=None)
@given(programs())
def test_simplified_text_round_trips(text):
    module = parse_module(text)
    PassManager("simplify").run(module)
    printed = str(module)
    assert str(parse_module(printed)) == printed
