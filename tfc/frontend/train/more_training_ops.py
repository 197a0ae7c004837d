"""More dense training ops (TF's core/ops/training_ops.cc): ApplyAdadelta, ApplyFtrl,
ApplyFtrlV2, ApplyProximalGradientDescent, ApplyProximalAdagrad, and their python
wrappers (gen_training_ops' functions).

Like the entries of training_ops.py, each declares TF's OpDef and shape function and
lowers to the formulas of the CPU kernels in core/kernels/training_ops.cc, every ref
written by an ``assign`` of a value computed from the refs' old values (in place). Where
a kernel branches on a hyper-parameter's value (``l1 > 0``, ``lr_power == -0.5``) the
lowering computes both formulas and selects on the scalar, since the value is only known
when the program runs.
"""
from __future__ import annotations

from ..registry import Attr, OpType, register
from .training_ops import NUMBER_TYPES, _apply, _like_var, _Reads, _scalars, _shape_fn, _update


def _select_on(ctx, predicate, on_true, on_false):
    """``predicate`` (a scalar) ? on_true : on_false, elementwise."""
    shape = tuple(on_true.type.shape)
    return ctx.b.value("select", [ctx.broadcast_to(predicate, shape), on_true, on_false])


def _cmp(ctx, direction, x, y):
    return ctx.elementwise("compare", x, y, attrs={"dir": direction})


# -- ApplyAdadelta ---------------------------------------------------------------------------
@register
class ApplyAdadelta(OpType):
    inputs = ["var: Ref(T)", "accum: Ref(T)", "accum_update: Ref(T)", "lr: T", "rho: T", "epsilon: T", "grad: T"]
    outputs = ["out: Ref(T)"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "use_locking": Attr("bool", False)}
    stateful = True
    not_differentiable = True
    infer = _shape_fn(3, (3, 4, 5), (), 6)

    def lower(ctx, op, var, accum, accum_update, lr, rho, epsilon, grad):
        """accum = accum * rho + grad^2 * (1 - rho);
        update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * grad;
        var -= update * lr; accum_update = accum_update * rho + update^2 * (1 - rho)"""
        lr, rho, epsilon = _scalars(ctx, {"lr": lr, "rho": rho, "epsilon": epsilon})
        grad = _like_var(ctx, var, grad)
        _like_var(ctx, var, accum, "accum")
        _like_var(ctx, var, accum_update, "accum_update")
        e = ctx.elementwise
        one_minus_rho = e("sub", ctx.scalar(1, lr.type.elem), rho)

        def accum_new(r):
            return e("add", e("mul", r["accum"], rho), e("mul", e("mul", grad, grad), one_minus_rho))

        def update(r):
            return e("mul", e("mul", ctx.b.value("sqrt", [e("add", r["accum_update"], epsilon)]),
                              ctx.b.value("rsqrt", [e("add", accum_new(r), epsilon)])), grad)

        def var_new(r):
            return e("sub", r["var"], e("mul", update(r), lr))

        def accum_update_new(r):
            u = update(r)
            return e("add", e("mul", r["accum_update"], rho), e("mul", e("mul", u, u), one_minus_rho))

        _update(ctx, {"var": var, "accum": accum, "accum_update": accum_update},
                [("var", var_new), ("accum_update", accum_update_new), ("accum", accum_new)])
        return var


# -- ApplyFtrl / ApplyFtrlV2 ------------------------------------------------------------------
def _ftrl(ctx, refs, grad, lr, l1, l2, lr_power, l2_shrinkage=None) -> None:
    """TF's ApplyFtrl / ApplyFtrlV2 CPU functors:
    g = grad [+ 2 * l2_shrinkage * var]; new_accum = accum + grad^2;
    linear += g - (new_accum^-lr_power - accum^-lr_power) / lr * var;
    var = |linear| > l1 ? (l1 * sign(linear) - linear) / (new_accum^-lr_power / lr + 2 * l2) : 0;
    accum = new_accum (x^0.5 is sqrt when lr_power == -0.5).

    ApplyFtrlV2's accumulator adds grad^2, not (grad with shrinkage)^2: the kernel of the
    TensorFlow that generated tests/fixtures/training_extras.json (some older kernels,
    1.15's CPU one possibly among them, added the latter)."""
    e = ctx.elementwise
    elem = lr.type.elem
    is_half = _cmp(ctx, "eq", lr_power, ctx.scalar(-0.5, elem))
    neg_power = ctx.b.value("neg", [lr_power])

    def power(x):
        return _select_on(ctx, is_half, ctx.b.value("sqrt", [x]), e("pow", x, neg_power))

    def g(r):
        if l2_shrinkage is None:
            return grad
        return e("add", grad, e("mul", e("mul", ctx.scalar(2, elem), l2_shrinkage), r["var"]))

    def new_accum(r):
        return e("add", r["accum"], e("mul", grad, grad))

    def linear_new(r):
        sigma = e("mul", e("div", e("sub", power(new_accum(r)), power(r["accum"])), lr), r["var"])
        return e("add", r["linear"], e("sub", g(r), sigma))

    def var_new(r, linear):
        x = e("sub", e("mul", l1, ctx.b.value("sign", [linear])), linear)
        y = e("add", e("div", power(new_accum(r)), lr), e("mul", ctx.scalar(2, elem), l2))
        shrunk = e("div", x, y)
        keep = _cmp(ctx, "gt", ctx.b.value("abs", [linear]), ctx.broadcast_to(l1, tuple(linear.type.shape)))
        return ctx.b.value("select", [keep, shrunk, ctx.broadcast_to(ctx.scalar(0, elem), tuple(linear.type.shape))])

    # var's formula reads linear's old value and linear's reads var's: both are computed
    # from one set of reads before either is written.
    reads = _Reads(ctx, refs)
    linear = linear_new(reads)
    value = var_new(reads, linear)
    ctx.b.op("assign", [refs["var"], value])
    ctx.b.op("assign", [refs["linear"], linear])
    _update(ctx, refs, [("accum", new_accum)])


@register
class ApplyFtrl(OpType):
    inputs = ["var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T", "lr: T", "l1: T", "l2: T",
              "lr_power: T"]
    outputs = ["out: Ref(T)"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "use_locking": Attr("bool", False),
             "multiply_linear_by_lr": Attr("bool", False)}
    stateful = True
    not_differentiable = True
    infer = _shape_fn(3, (), (4, 5, 6, 7), 3)

    def lower(ctx, op, var, accum, linear, grad, lr, l1, l2, lr_power):
        if op._attrs.get("multiply_linear_by_lr"):
            ctx.fail("ApplyFtrl with multiply_linear_by_lr=True is not supported")
        lr, l1, l2, lr_power = _scalars(ctx, {"lr": lr, "l1": l1, "l2": l2, "lr_power": lr_power})
        grad = _like_var(ctx, var, grad)
        _like_var(ctx, var, accum, "accum")
        _like_var(ctx, var, linear, "linear")
        _ftrl(ctx, {"var": var, "accum": accum, "linear": linear}, grad, lr, l1, l2, lr_power)
        return var


@register
class ApplyFtrlV2(OpType):
    inputs = ["var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T", "lr: T", "l1: T", "l2: T",
              "l2_shrinkage: T", "lr_power: T"]
    outputs = ["out: Ref(T)"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "use_locking": Attr("bool", False),
             "multiply_linear_by_lr": Attr("bool", False)}
    stateful = True
    not_differentiable = True
    infer = _shape_fn(3, (), (4, 5, 6, 7, 8), 3)

    def lower(ctx, op, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
        if op._attrs.get("multiply_linear_by_lr"):
            ctx.fail("ApplyFtrlV2 with multiply_linear_by_lr=True is not supported")
        lr, l1, l2, l2_shrinkage, lr_power = _scalars(ctx, {"lr": lr, "l1": l1, "l2": l2,
                                                            "l2_shrinkage": l2_shrinkage, "lr_power": lr_power})
        grad = _like_var(ctx, var, grad)
        _like_var(ctx, var, accum, "accum")
        _like_var(ctx, var, linear, "linear")
        _ftrl(ctx, {"var": var, "accum": accum, "linear": linear}, grad, lr, l1, l2, lr_power, l2_shrinkage)
        return var


# -- ApplyProximalGradientDescent / ApplyProximalAdagrad -----------------------------------------
def _proximal(ctx, prox_var, shrink, denom, l1):
    """l1 > 0 ? sign(v) * max(|v| - shrink, 0) / denom : v / denom (TF's Fobos step)."""
    e = ctx.elementwise
    elem = l1.type.elem
    shrunk = e("max", e("sub", ctx.b.value("abs", [prox_var]), shrink), ctx.scalar(0, elem))
    with_l1 = e("div", e("mul", ctx.b.value("sign", [prox_var]), shrunk), denom)
    without = e("div", prox_var, denom)
    return _select_on(ctx, _cmp(ctx, "gt", l1, ctx.scalar(0, elem)), with_l1, without)


@register
class ApplyProximalGradientDescent(OpType):
    inputs = ["var: Ref(T)", "alpha: T", "l1: T", "l2: T", "delta: T"]
    outputs = ["out: Ref(T)"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "use_locking": Attr("bool", False)}
    stateful = True
    not_differentiable = True
    infer = _shape_fn(1, (1, 2, 3), (), 4)

    def lower(ctx, op, var, alpha, l1, l2, delta):
        """v = var - delta * alpha;
        var = l1 > 0 ? sign(v) * max(|v| - alpha * l1, 0) / (1 + l2 * alpha) : v / (1 + l2 * alpha)"""
        alpha, l1, l2 = _scalars(ctx, {"alpha": alpha, "l1": l1, "l2": l2})
        grad = _like_var(ctx, var, delta, "delta")
        e = ctx.elementwise
        one = ctx.scalar(1, alpha.type.elem)

        def var_new(r):
            prox_var = e("sub", r["var"], e("mul", grad, alpha))
            return _proximal(ctx, prox_var, e("mul", alpha, l1), e("add", one, e("mul", l2, alpha)), l1)

        _update(ctx, {"var": var}, [("var", var_new)])
        return var


@register
class ApplyProximalAdagrad(OpType):
    inputs = ["var: Ref(T)", "accum: Ref(T)", "lr: T", "l1: T", "l2: T", "grad: T"]
    outputs = ["out: Ref(T)"]
    attrs = {"T": Attr("type", allowed=NUMBER_TYPES), "use_locking": Attr("bool", False)}
    stateful = True
    not_differentiable = True
    infer = _shape_fn(2, (2, 3, 4), (), 5)

    def lower(ctx, op, var, accum, lr, l1, l2, grad):
        """accum += grad^2; rate = lr * rsqrt(accum); v = var - grad * rate;
        var = l1 > 0 ? sign(v) * max(|v| - rate * l1, 0) / (1 + l2 * rate) : v / (1 + l2 * rate)"""
        lr, l1, l2 = _scalars(ctx, {"lr": lr, "l1": l1, "l2": l2})
        grad = _like_var(ctx, var, grad)
        _like_var(ctx, var, accum, "accum")
        e = ctx.elementwise
        one = ctx.scalar(1, lr.type.elem)

        def accum_new(r):
            return e("add", r["accum"], e("mul", grad, grad))

        def var_new(r):
            rate = e("mul", lr, ctx.b.value("rsqrt", [accum_new(r)]))
            prox_var = e("sub", r["var"], e("mul", grad, rate))
            return _proximal(ctx, prox_var, e("mul", rate, l1), e("add", one, e("mul", l2, rate)), l1)

        _update(ctx, {"var": var, "accum": accum}, [("var", var_new), ("accum", accum_new)])
        return var


# -- python wrappers (gen_training_ops) ----------------------------------------------------------
def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False, name=None):
    return _apply("ApplyAdadelta", [var, accum, accum_update, lr, rho, epsilon, grad],
                  {"use_locking": use_locking}, name)


def apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False, multiply_linear_by_lr=False,
               name=None):
    return _apply("ApplyFtrl", [var, accum, linear, grad, lr, l1, l2, lr_power],
                  {"use_locking": use_locking, "multiply_linear_by_lr": multiply_linear_by_lr}, name)


def apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, use_locking=False,
                  multiply_linear_by_lr=False, name=None):
    return _apply("ApplyFtrlV2", [var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power],
                  {"use_locking": use_locking, "multiply_linear_by_lr": multiply_linear_by_lr}, name)


def apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False, name=None):
    return _apply("ApplyProximalGradientDescent", [var, alpha, l1, l2, delta], {"use_locking": use_locking}, name)


def apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False, name=None):
    return _apply("ApplyProximalAdagrad", [var, accum, lr, l1, l2, grad], {"use_locking": use_locking}, name)
