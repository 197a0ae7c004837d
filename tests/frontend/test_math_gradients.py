"""Gradients of the math ops (tfc/frontend/ops/math_ops.py) and the gradient ops they
use (BroadcastGradientArgs, TanhGrad, SigmoidGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad,
DynamicStitch, ListDiff, Cumprod).

Numeric checks: each case builds ``y = sum(op(x...) * w)`` (w random, fed) in float64;
``tf.gradients`` is run compiled and compared with central finite differences of the
same forward graph, also compiled. All cases of a test share one graph: the gradients
run in one ``Session.run`` (one compile) and every finite-difference step perturbs one
element of every case at once (the cases are independent), so each test compiles twice.

Structure checks: the op names of TF 1.15's gradient graphs (math_grad.py).
"""
import math

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op
from tfc.frontend.registry import lookup_op_type

from gradient_check import GradientChecker, fresh_graph, op, rand  # noqa: F401 - fresh_graph: an autouse fixture


def away_from_zero(rng, *shape, low=0.3, high=2.0):
    return rng.uniform(low, high, size=shape) * rng.choice([-1, 1], size=shape)


# -- elementwise unary ---------------------------------------------------------------------------
_ERF = np.vectorize(math.erf)
_UNARY_CASES = {  # name: (tf function, numpy reference, domain)
    "neg": (tf.negative, np.negative, "any"), "abs": (tf.abs, np.abs, "nonzero"),
    "sign": (tf.sign, np.sign, "nonzero"), "square": (tf.square, np.square, "any"),
    "sqrt": (tf.sqrt, np.sqrt, "positive"), "rsqrt": (tf.rsqrt, lambda a: 1 / np.sqrt(a), "positive"),
    "exp": (tf.exp, np.exp, "any"), "expm1": (tf.expm1, np.expm1, "any"), "log": (tf.log, np.log, "positive"),
    "log1p": (tf.log1p, np.log1p, "positive"), "sin": (tf.sin, np.sin, "any"), "cos": (tf.cos, np.cos, "any"),
    "tan": (tf.tan, np.tan, "small"), "tanh": (tf.tanh, np.tanh, "any"),
    "sigmoid": (tf.sigmoid, lambda a: 1 / (1 + np.exp(-a)), "any"),
    "reciprocal": (tf.reciprocal, lambda a: 1 / a, "nonzero"), "erf": (tf.erf, _ERF, "any"),
    "conj": (tf.conj, lambda a: a, "any"),
}


def _domain(rng, kind, *shape):
    if kind == "positive":
        return rng.uniform(0.3, 2.0, size=shape)
    if kind == "nonzero":
        return away_from_zero(rng, *shape)
    if kind == "small":
        return rng.uniform(-1.2, 1.2, size=shape)
    return rand(rng, *shape)


def test_unary_gradients_numeric():
    rng = np.random.RandomState(1)
    c = GradientChecker()
    for name, (fn, ref, domain) in _UNARY_CASES.items():
        c.add(name, fn, [_domain(rng, domain, 3, 4)], ref=ref)
    # compiled finite differences, and an unknown batch dim (symbolic shapes)
    c.add("tanh_compiled_fd", tf.tanh, [rand(rng, 2, 3)])
    c.add("log_symbolic", tf.log, [_domain(rng, "positive", 5, 3)], shapes=[[None, 3]], out_shapes=[(5, 3)],
          ref=np.log)
    c.check()


def test_second_order_unary_gradients():
    """TanhGrad, SigmoidGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad and their own gradients."""
    rng = np.random.RandomState(2)
    c = GradientChecker()
    y = rng.uniform(0.3, 0.9, size=(2, 3))
    dy = rand(rng, 2, 3)
    refs = {"TanhGrad": lambda a, b: b * (1 - a * a), "SigmoidGrad": lambda a, b: b * a * (1 - a),
            "RsqrtGrad": lambda a, b: -0.5 * b * a ** 3, "SqrtGrad": lambda a, b: 0.5 * b / a,
            "ReciprocalGrad": lambda a, b: -b * a * a}
    for name, ref in refs.items():
        c.add(name, lambda a, b, name=name: op(name, a, b), [y, dy], ref=ref)

    def first_derivative(f, w):
        def fn(x):
            return tf.gradients(tf.reduce_sum(f(x) * w), x)[0]
        return fn

    w = rand(rng, 2, 3)
    c.add("d2_tanh", first_derivative(tf.tanh, w), [rand(rng, 2, 3)], ref=lambda a: w * (1 - np.tanh(a) ** 2))
    c.add("d2_log", first_derivative(tf.log, w), [rng.uniform(0.5, 2, size=(2, 3))])
    c.check()


# -- broadcasting binary ops -------------------------------------------------------------------------
_BINARY = {  # name: (tf function, numpy reference)
    "add": (lambda x, y: x + y, np.add), "Add": (tf.add, np.add), "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply), "truediv": (lambda x, y: x / y, np.divide),
    "Div": (lambda x, y: op("Div", x, y), np.divide), "floormod": (tf.floormod, np.mod),
    "pow": (tf.pow, np.power), "maximum": (tf.maximum, np.maximum), "minimum": (tf.minimum, np.minimum),
    "squared_difference": (tf.squared_difference, lambda x, y: (x - y) ** 2),
}


def _binary_inputs(rng, name, sx, sy):
    if name in ("truediv", "Div", "floormod"):
        return rand(rng, *sx), away_from_zero(rng, *sy, low=0.7)
    if name == "pow":
        return rng.uniform(0.4, 2.0, size=sx), rand(rng, *sy)
    if name in ("maximum", "minimum"):  # distinct values (no ties)
        values = rng.permutation(int(np.prod(sx)) + int(np.prod(sy))) * 0.1 - 1.0
        return values[:int(np.prod(sx))].reshape(sx), values[int(np.prod(sx)):].reshape(sy)
    return rand(rng, *sx), rand(rng, *sy)


def test_binary_gradients_numeric():
    rng = np.random.RandomState(3)
    c = GradientChecker()
    for sx, sy in (((3, 1, 4), (2, 4)), ((2, 3), ())):
        for name, (fn, ref) in _BINARY.items():
            x, y = _binary_inputs(rng, name, sx, sy)
            c.add(f"{name}_{len(sx)}_{len(sy)}", fn, [x, y], ref=ref)
    for name in ("add", "sub", "mul", "squared_difference", "maximum"):  # equal shapes: TF's fast paths
        x, y = _binary_inputs(rng, name, (2, 3), (2, 3))
        c.add(f"{name}_same", _BINARY[name][0], [x, y], ref=_BINARY[name][1])
    c.add("atan2", tf.atan2, [rand(rng, 2, 3), away_from_zero(rng, 2, 3)], ref=np.arctan2)
    # broadcasting: each gradient summed back to its input's shape (TF 2.x; TF 1.15 raised)
    c.add("atan2_broadcast", tf.atan2, [rand(rng, 2, 1), away_from_zero(rng, 3)], ref=np.arctan2)
    c.add("atan2_scalar", tf.atan2, [np.float64(0.7), away_from_zero(rng, 5)], ref=np.arctan2)
    c.add("mul_compiled_fd", _BINARY["mul"][0], [rand(rng, 1, 3), rand(rng, 2, 1)])
    c.add("pow_compiled_fd", tf.pow, list(_binary_inputs(rng, "pow", (2, 1), (3,))))
    c.check()


def test_binary_gradients_symbolic_shapes():
    """Unknown dims: Shape ops of symbolic shapes, BroadcastGradientArgs computed while compiling."""
    rng = np.random.RandomState(4)
    c = GradientChecker()
    for name in ("add", "mul", "maximum", "squared_difference"):
        x, y = _binary_inputs(rng, name, (5, 1, 3), (2, 3))
        c.add(name, _BINARY[name][0], [x, y], shapes=[[None, 1, 3], [2, None]], out_shapes=[(5, 2, 3)],
              ref=_BINARY[name][1])
    x, y = _binary_inputs(rng, "truediv", (4, 3), (3,))
    c.add("truediv_vector", _BINARY["truediv"][0], [x, y], shapes=[[None, 3], [3]], out_shapes=[(4, 3)],
          ref=np.divide)
    c.check()


# -- reductions ----------------------------------------------------------------------------------
def _np_reduce(kind):
    return {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}[kind]


_TF_REDUCE = {"sum": tf.reduce_sum, "mean": tf.reduce_mean, "prod": tf.reduce_prod, "max": tf.reduce_max,
              "min": tf.reduce_min}


def test_reduction_gradients_numeric():
    rng = np.random.RandomState(5)
    c = GradientChecker()
    distinct = (rng.permutation(24) * 0.1 - 1.2).reshape(2, 3, 4)
    x = rand(rng, 2, 3, 4)
    cases = [("sum", None, False), ("sum", 1, False), ("sum", [0, 2], True), ("mean", None, False),
             ("mean", -1, True), ("mean", [0, 1], False), ("prod", 1, False), ("max", [0, 2], True),
             ("max", None, False), ("min", 1, False)]
    for kind, axis, keep in cases:
        np_axis = tuple(axis) if isinstance(axis, list) else axis
        c.add(f"{kind}_{axis}_{keep}".replace(" ", "").replace("[", "").replace("]", "").replace(",", "_"),
              lambda t, kind=kind, axis=axis, keep=keep: _TF_REDUCE[kind](t, axis=axis, keepdims=keep),
              [distinct if kind in ("max", "min") else x],
              ref=lambda a, kind=kind, axis=np_axis, keep=keep: _np_reduce(kind)(a, axis=axis, keepdims=keep))
    # a zero in the product: the cumprod formulation still gives the product of the others
    with_zero = x.copy()
    with_zero[0, 1, 2] = 0.0
    c.add("prod_zero", lambda t: tf.reduce_prod(t, axis=[0, 2]), [with_zero], ref=lambda a: np.prod(a, axis=(0, 2)))
    # unknown batch dim: Shape -> DynamicStitch -> Tile and the Mean factor are shape arithmetic
    # computed while compiling from symbols
    for kind in ("sum", "mean", "max"):
        data = rand(rng, 5, 3) if kind != "max" else (rng.permutation(15) * 0.1).reshape(5, 3)
        c.add(f"{kind}_symbolic", lambda t, kind=kind: _TF_REDUCE[kind](t, axis=1), [data], shapes=[[None, 3]],
              out_shapes=[(5,)], ref=lambda a, kind=kind: _np_reduce(kind)(a, axis=1))
    c.add("mean_all_symbolic", tf.reduce_mean, [rand(rng, 4, 3)], shapes=[[None, 3]], out_shapes=[()],
          ref=np.mean)
    c.add("mean_compiled_fd", lambda t: tf.reduce_mean(t, axis=[1], keepdims=True), [rand(rng, 3, 2, 2)])
    c.check()


def test_max_min_gradient_ties_split_evenly():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    t = tf.constant(x)
    g_max = tf.gradients(tf.reduce_max(t, axis=1), t)[0]
    g_min = tf.gradients(tf.reduce_min(t, axis=1), t)[0]
    with tf.Session() as sess:
        gmax, gmin = sess.run([g_max, g_min])
    np.testing.assert_allclose(gmax, [[0, 0.5, 0.5, 0], [0.25] * 4])
    np.testing.assert_allclose(gmin, [[0, 0, 0, 1], [0.25] * 4])


# -- matmul, cumsum, add_n, cast -------------------------------------------------------------------
def test_matmul_gradients_numeric():
    rng = np.random.RandomState(6)
    c = GradientChecker()
    for ta in (False, True):
        for tb in (False, True):
            a = rand(rng, *((4, 3) if ta else (3, 4)))
            b = rand(rng, *((2, 4) if tb else (4, 2)))
            c.add(f"matmul_{ta}_{tb}", lambda x, y, ta=ta, tb=tb: tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
                  [a, b], ref=lambda x, y, ta=ta, tb=tb: (x.T if ta else x) @ (y.T if tb else y))
    c.add("matmul_symbolic", tf.matmul, [rand(rng, 5, 3), rand(rng, 3, 2)], shapes=[[None, 3], [3, 2]],
          out_shapes=[(5, 2)], ref=lambda x, y: x @ y)
    # BatchMatMulV2: adjoints and broadcast batch dims reduced back
    for adj_x in (False, True):
        for adj_y in (False, True):
            x = rand(rng, *((2, 4, 3) if adj_x else (2, 3, 4)))
            y = rand(rng, *((2, 5, 4) if adj_y else (2, 4, 5)))
            c.add(f"bmm_{adj_x}_{adj_y}", lambda p, q, ax=adj_x, ay=adj_y: tf.matmul(p, q, adjoint_a=ax, adjoint_b=ay),
                  [x, y], ref=lambda p, q, ax=adj_x, ay=adj_y: np.matmul(np.swapaxes(p, -1, -2) if ax else p,
                                                                       np.swapaxes(q, -1, -2) if ay else q))
    c.add("bmm_broadcast", tf.matmul, [rand(rng, 2, 1, 3, 4), rand(rng, 3, 4, 2)], ref=np.matmul)
    c.add("bmm_rank2_rhs", tf.matmul, [rand(rng, 3, 2, 4), rand(rng, 4, 2)], ref=np.matmul)
    c.add("bmm_compiled_fd", tf.matmul, [rand(rng, 2, 2, 3), rand(rng, 1, 3, 2)])
    c.check()


def _np_cumsum(a, axis, exclusive, reverse):
    if reverse:
        a = np.flip(a, axis)
    out = np.cumsum(a, axis)
    if exclusive:
        out = out - a
    return np.flip(out, axis) if reverse else out


def _np_cumprod(a, axis, exclusive, reverse):
    if reverse:
        a = np.flip(a, axis)
    out = np.cumprod(a, axis)
    if exclusive:
        out = np.concatenate([np.ones_like(np.take(out, [0], axis)), np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


def test_cumulative_addn_cast_gradients_numeric():
    rng = np.random.RandomState(7)
    c = GradientChecker()
    for exclusive in (False, True):
        for reverse in (False, True):
            c.add(f"cumsum_{exclusive}_{reverse}",
                  lambda t, e=exclusive, r=reverse: tf.cumsum(t, axis=1, exclusive=e, reverse=r), [rand(rng, 2, 4)],
                  ref=lambda a, e=exclusive, r=reverse: _np_cumsum(a, 1, e, r))
            c.add(f"cumprod_{exclusive}_{reverse}",
                  lambda t, e=exclusive, r=reverse: tf.math.cumprod(t, axis=0, exclusive=e, reverse=r),
                  [away_from_zero(rng, 3, 2, low=0.5)], ref=lambda a, e=exclusive, r=reverse: _np_cumprod(a, 0, e, r))
    c.add("add_n", lambda a, b, d: tf.add_n([a, b, d]) * a, [rand(rng, 2, 3), rand(rng, 2, 3), rand(rng, 2, 3)],
          ref=lambda a, b, d: (a + b + d) * a)
    c.add("cast_f64_f32_f64", lambda t: tf.cast(tf.cast(t, tf.float32), tf.float64) * 2.0,
          [np.array([0.5, 1.25, -3.0])], ref=lambda a: a * 2.0, tol=1e-5)
    c.add("cumsum_compiled_fd", lambda t: tf.cumsum(t, axis=0, reverse=True), [rand(rng, 3, 2)])
    c.add("dynamic_stitch", lambda a, b: tf.dynamic_stitch([[2, 0], [1]], [a, b]), [rand(rng, 2, 3), rand(rng, 1, 3)],
          ref=lambda a, b: np.stack([a[1], b[0], a[0]]))
    c.check()


def test_cast_gradient_types():
    x = tf.placeholder(tf.float32, [3])
    i = tf.placeholder(tf.int32, [3])
    g_float, = tf.gradients(tf.cast(x, tf.float64), [x])
    assert g_float.op.type == "Cast" and g_float.dtype == tf.float32
    assert g_float.op.name == "gradients/Cast_grad/Cast"
    # float -> int -> float: the Cast from int passes no gradient on
    assert tf.gradients(tf.cast(tf.cast(x, tf.int32), tf.float32), [x]) == [None]
    assert tf.gradients(tf.cast(i, tf.float32), [i]) == [None]


# -- graph structure: TF 1.15's names -----------------------------------------------------------
def _grad_op_names(graph, prefix="gradients/"):
    return [o.name for o in graph.get_operations() if o.name.startswith(prefix)]


def test_matmul_gradient_graph_names(fresh_graph):
    a = tf.placeholder(tf.float32, [2, 3], name="a")
    b = tf.placeholder(tf.float32, [3, 4], name="b")
    ga, gb = tf.gradients(tf.matmul(a, b), [a, b])
    assert _grad_op_names(fresh_graph) == ["gradients/Shape", "gradients/grad_ys_0", "gradients/Fill",
                                           "gradients/MatMul_grad/MatMul", "gradients/MatMul_grad/MatMul_1"]
    assert (ga.name, gb.name) == ("gradients/MatMul_grad/MatMul:0", "gradients/MatMul_grad/MatMul_1:0")
    assert ga.op.get_attr("transpose_b") and not ga.op.get_attr("transpose_a")
    assert gb.op.get_attr("transpose_a") and not gb.op.get_attr("transpose_b")
    assert ga.shape.as_list() == [2, 3] and gb.shape.as_list() == [3, 4]


def test_broadcast_add_gradient_graph_names(fresh_graph):
    x = tf.placeholder(tf.float32, [3, 1, 4], name="x")
    y = tf.placeholder(tf.float32, [2, 4], name="y")
    gx, gy = tf.gradients(x + y, [x, y])
    names = _grad_op_names(fresh_graph, "gradients/add_grad/")
    assert names == ["gradients/add_grad/Shape", "gradients/add_grad/Shape_1",
                     "gradients/add_grad/BroadcastGradientArgs", "gradients/add_grad/Sum",
                     "gradients/add_grad/Reshape", "gradients/add_grad/Sum_1", "gradients/add_grad/Reshape_1"]
    bga = fresh_graph.get_operation_by_name("gradients/add_grad/BroadcastGradientArgs")
    assert [t.name for t in bga.inputs] == ["gradients/add_grad/Shape:0", "gradients/add_grad/Shape_1:0"]
    assert gx.op.name == "gradients/add_grad/Reshape" and gy.op.name == "gradients/add_grad/Reshape_1"
    assert gx.shape.as_list() == [3, 1, 4] and gy.shape.as_list() == [2, 4]
    with tf.Session() as sess:
        vx, vy = sess.run([gx, gy], {x: np.ones((3, 1, 4)), y: np.ones((2, 4))})
    np.testing.assert_array_equal(vx, np.full((3, 1, 4), 2.0))
    np.testing.assert_array_equal(vy, np.full((2, 4), 3.0))


def test_same_shape_fast_paths(fresh_graph):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    y = tf.placeholder(tf.float32, [2, 3], name="y")
    gx, gy = tf.gradients(x * y, [x, y])
    assert _grad_op_names(fresh_graph, "gradients/mul_grad/") == ["gradients/mul_grad/Mul",
                                                                   "gradients/mul_grad/Mul_1"]
    gs = tf.gradients(x - y, [x, y])
    assert gs[0].name == "gradients_1/Fill:0" and gs[1].op.name == "gradients_1/sub_grad/Neg"
    # float64 products take the general path (TF's fast path is for int32/float32 only)
    d = tf.placeholder(tf.float64, [2, 3], name="d")
    tf.gradients(d * d, [d])
    assert "gradients_2/mul_1_grad/BroadcastGradientArgs" in _grad_op_names(fresh_graph, "gradients_2/")


def test_reduce_gradient_graph_names(fresh_graph):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    tf.gradients(tf.reduce_sum(x), [x])
    assert _grad_op_names(fresh_graph, "gradients/Sum_grad/") == [
        "gradients/Sum_grad/Reshape/shape", "gradients/Sum_grad/Reshape", "gradients/Sum_grad/Const",
        "gradients/Sum_grad/Tile"]
    z = tf.placeholder(tf.float32, [None, 3], name="z")
    tf.gradients(tf.reduce_mean(z), [z])
    assert [n.split("/", 2)[2] for n in _grad_op_names(fresh_graph, "gradients_1/Mean_grad/")] == [
        "Reshape/shape", "Reshape", "Shape", "Tile", "Shape_1", "Shape_2", "Const", "Prod", "Const_1", "Prod_1",
        "Maximum/y", "Maximum", "floordiv", "Cast", "truediv"]
    tf.gradients(tf.reduce_max(x, axis=1), [x])
    assert [n.split("/", 2)[2] for n in _grad_op_names(fresh_graph, "gradients_2/Max_grad/")] == [
        "Shape", "Size", "add", "mod", "Shape_1", "range/start", "range/delta", "range", "Fill/value", "Fill",
        "DynamicStitch", "Reshape", "Reshape_1", "Equal", "Cast", "Sum", "Reshape_2", "truediv", "mul"]


def test_unconnected_stop_gradients_and_grad_ys(fresh_graph):
    a = tf.constant(0.0)
    b = 2 * a
    assert tf.gradients(a + b, [a, b], stop_gradients=[a, b])[0] is not None
    with tf.Session() as sess:
        assert sess.run(tf.gradients(a + b, [a, b], stop_gradients=[a, b])) == [1.0, 1.0]
        assert sess.run(tf.gradients(a + b, [a, b])) == [3.0, 1.0]
    x = tf.placeholder(tf.float32, [2], name="x")
    unused = tf.placeholder(tf.float32, [2], name="unused")
    assert tf.gradients(tf.square(x), [x, unused])[1] is None
    g, = tf.gradients(tf.square(x), [x], grad_ys=tf.constant([10.0, 100.0]))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 2.0]}), [20.0, 400.0])


def test_not_differentiable_ops_give_none(fresh_graph):
    x = tf.placeholder(tf.float32, [4], name="x")
    for fn in (tf.floor, tf.ceil, tf.round, tf.rint, lambda t: tf.cast(tf.is_nan(t), tf.float32),
               lambda t: tf.cast(tf.argmax(t), tf.float32), lambda t: tf.cast(t > 0.0, tf.float32),
               lambda t: tf.floordiv(t, 2.0), lambda t: tf.cast(tf.equal(t, 1.0), tf.float32)):
        assert tf.gradients(fn(x) + 0.0 * x, [x])[0] is not None  # the 0 * x path only
        assert tf.gradients(fn(x), [x]) == [None]
    for name in ("Floor", "Less", "Equal", "LogicalAnd", "ArgMax", "IsFinite", "BroadcastGradientArgs",
                 "ListDiff"):
        assert lookup_op_type(name).not_differentiable, name
    assert lookup_op_type("Sign").gradient is not None  # TF gives sign a zero gradient


def test_broadcast_gradient_args_values():
    cases = [([2, 3, 4], [3, 1], [], [0, 2]), ([1, 2], [1, 2], [], []), ([1, 2], [1, 1], [0], [0, 1]),
             ([], [2, 3], [0, 1], []), ([5, 1, 3], [2, 3], [1], [0]), ([2, 1], [1], [1], [0, 1])]
    fetches = []
    for s0, s1, _, _ in cases:
        for dtype in (tf.int32, tf.int64):
            r0, r1 = apply_op("BroadcastGradientArgs", [tf.constant(s0, dtype), tf.constant(s1, dtype)]).outputs
            fetches.append((r0, r1))
    x = tf.placeholder(tf.float32, [None, 1, 3])
    y = tf.placeholder(tf.float32, [2, None])
    symbolic = apply_op("BroadcastGradientArgs", [tf.shape(x), tf.shape(y)]).outputs
    assert symbolic[0].shape.as_list() == [None]
    with tf.Session() as sess:
        values = sess.run(fetches)
        for n in (4, 6):
            r0, r1 = sess.run(symbolic, {x: np.zeros((n, 1, 3)), y: np.zeros((2, 3))})
            assert r0.tolist() == [1] and r1.tolist() == [0]
    for k, (_, _, e0, e1) in enumerate(cases):
        for j, dtype in enumerate((np.int32, np.int64)):
            r0, r1 = values[2 * k + j]
            assert r0.tolist() == e0 and r1.tolist() == e1, cases[k]
            assert r0.dtype == dtype and r1.dtype == dtype


def test_gradient_helper_ops_forward():
    """DynamicStitch (folded, and from run-time data), ListDiff, Cumprod."""
    data = tf.placeholder(tf.float32, [2, 2])
    stitched = tf.dynamic_stitch([[3, 0], [1, 2]], [data, tf.constant([[5.0, 6.0], [7.0, 8.0]])])
    assert stitched.shape.as_list() == [4, 2]
    folded = tf.dynamic_stitch([[0, 2], [1, 2]], [[1, 2], [3, 4]])
    out, idx = tf.setdiff1d([4, 1, 3, 1, 7], [1, 7])
    cp = tf.math.cumprod(tf.constant([[1.0, 2.0, 3.0], [4.0, 0.5, 2.0]]), axis=1, exclusive=True, reverse=True)
    with tf.Session() as sess:
        s, f, o, i, c = sess.run([stitched, folded, out, idx, cp], {data: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(s, [[3, 4], [5, 6], [7, 8], [1, 2]])
    np.testing.assert_array_equal(f, [1, 3, 4])
    assert o.tolist() == [4, 3] and i.tolist() == [0, 2]
    np.testing.assert_allclose(c, [[6, 3, 1], [1, 2, 1]])
