"""Learning-rate schedules as graph ops (TF 1.15's tf.train.*_decay).

TF 1.15 builds them through keras' learning_rate_schedule classes, called once on the
global step in graph mode; the ops and names here are theirs (``ExponentialDecay/
initial_learning_rate``, ``ExponentialDecay/Cast``..., the result named after the
scope). Where TF uses ``tf.cond``/``tf.case`` (piecewise_constant, polynomial_decay with
``cycle=True``), this builds the same values with Select ops, since the compiler has no
control flow ops.
"""
from __future__ import annotations

from ..convert import convert_to_tensor
from ..graph import name_scope
from ..ops import math_ops


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps) (the exponent floored when
    ``staircase``)."""
    with name_scope(name or "ExponentialDecay") as scope:
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        p = global_step_recomp / decay_steps
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(initial_learning_rate, math_ops.pow(decay_rate, p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps): TF computes
    exp(-decay_rate) first and hands it to the exponential decay (scope 'ExponentialDecay')."""
    natural_exp_rate = math_ops.exp(math_ops.negative(decay_rate))
    return exponential_decay(learning_rate, global_step, decay_steps, natural_exp_rate, staircase=staircase,
                             name=name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    from ..ops.constant_op import constant

    with name_scope(name or "InverseTimeDecay") as scope:
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        p = global_step_recomp / decay_steps
        if staircase:
            p = math_ops.floor(p)
        const = math_ops.cast(constant(1), dtype)
        denom = math_ops.add(const, math_ops.multiply(decay_rate, p))
        return math_ops.divide(initial_learning_rate, denom, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                     name=None):
    """(learning_rate - end) * (1 - min(step, decay_steps) / decay_steps) ^ power + end;
    with ``cycle`` the decay restarts at each multiple of decay_steps."""
    from ..ops.selection_ops import where

    with name_scope(name or "PolynomialDecay") as scope:
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        end_learning_rate = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        decay_steps_recomp = math_ops.cast(decay_steps, dtype)
        if cycle:
            # The first multiple of decay_steps above the step (1 at step 0); TF uses tf.cond.
            ceiled = math_ops.ceil(global_step_recomp / decay_steps)
            multiplier = where(math_ops.equal(global_step_recomp, 0), convert_to_tensor(1.0, dtype=dtype), ceiled)
            decay_steps_recomp = math_ops.multiply(decay_steps_recomp, multiplier)
        else:
            # The step used is at most decay_steps.
            global_step_recomp = math_ops.minimum(global_step_recomp, decay_steps)
        p = math_ops.divide(global_step_recomp, decay_steps_recomp)
        return math_ops.add(math_ops.multiply(initial_learning_rate - end_learning_rate, math_ops.pow(1 - p, power)),
                            end_learning_rate, name=scope)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after boundaries[-1] (a chain of Select ops; TF uses tf.case)."""
    from .. import dtypes
    from ..ops.selection_ops import where

    boundaries = [convert_to_tensor(b) for b in boundaries]
    values = [convert_to_tensor(v) for v in values]
    x_recomp = convert_to_tensor(x)
    for i, b in enumerate(boundaries):
        if b.dtype.base_dtype != x_recomp.dtype.base_dtype:
            # int32 boundaries (python ints) are promoted to an int64 step.
            if b.dtype.base_dtype == dtypes.int32 and x_recomp.dtype.base_dtype == dtypes.int64:
                boundaries[i] = math_ops.cast(b, x_recomp.dtype.base_dtype)
            else:
                raise ValueError(f"Boundaries ({b.dtype.base_dtype}) must have the same dtype as x "
                                 f"({x_recomp.dtype.base_dtype}).")
    for v in values[1:]:
        if v.dtype.base_dtype != values[0].dtype.base_dtype:
            raise ValueError(f"Values must have elements all with the same dtype ({values[0].dtype.base_dtype} vs "
                             f"{v.dtype.base_dtype}).")
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name or "PiecewiseConstant"):
        x_recomp = convert_to_tensor(x)
        # From the last interval backwards: the first boundary that x does not exceed wins.
        result = values[-1]
        for b, v in reversed(list(zip(boundaries, values[:-1]))):
            result = where(math_ops.less_equal(x_recomp, b), v, result)
        return result


piecewise_constant_decay = piecewise_constant


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)."""
    import math

    from ..ops.constant_op import constant

    with name_scope(name or "CosineDecay"):
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        global_step_recomp = math_ops.minimum(global_step_recomp, decay_steps)
        completed_fraction = global_step_recomp / decay_steps
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant(math.pi) * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(initial_learning_rate, decayed)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                          name=None):
    """SGDR (Loshchilov & Hutter): cosine decay restarting after first_decay_steps, each
    period t_mul times longer and its peak m_mul times lower (TF's tf.cond between the
    geometric and the constant period length included)."""
    import math

    from ..control_flow import cond
    from ..ops.constant_op import constant

    with name_scope(name or "SGDRDecay") as scope:
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        first_decay_steps = math_ops.cast(first_decay_steps, dtype)
        alpha = math_ops.cast(alpha, dtype)
        t_mul = math_ops.cast(t_mul, dtype)
        m_mul = math_ops.cast(m_mul, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        completed_fraction = global_step_recomp / first_decay_steps

        def compute_step(completed_fraction, geometric=False):
            if geometric:
                i_restart = math_ops.floor(
                    math_ops.log(1.0 - completed_fraction * (1.0 - t_mul)) / math_ops.log(t_mul))
                sum_r = (1.0 - t_mul ** i_restart) / (1.0 - t_mul)
                completed_fraction = (completed_fraction - sum_r) / t_mul ** i_restart
            else:
                i_restart = math_ops.floor(completed_fraction)
                completed_fraction -= i_restart
            return i_restart, completed_fraction

        i_restart, completed_fraction = cond(
            math_ops.equal(t_mul, 1.0), lambda: compute_step(completed_fraction, geometric=False),
            lambda: compute_step(completed_fraction, geometric=True))
        m_fac = m_mul ** i_restart
        cosine_decayed = 0.5 * m_fac * (1.0 + math_ops.cos(constant(math.pi) * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(initial_learning_rate, decayed, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0, beta=0.001,
                        name=None):
    """learning_rate * ((alpha + (decay_steps - step) / decay_steps) *
    0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps)) + beta), step <= decay_steps."""
    import math

    from ..ops.constant_op import constant

    with name_scope(name or "LinearCosineDecay") as scope:
        initial_learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = initial_learning_rate.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        num_periods = math_ops.cast(num_periods, dtype)
        alpha = math_ops.cast(alpha, dtype)
        beta = math_ops.cast(beta, dtype)
        global_step_recomp = math_ops.cast(global_step, dtype)
        global_step_recomp = math_ops.minimum(global_step_recomp, decay_steps)
        linear_decayed = (decay_steps - global_step_recomp) / decay_steps
        completed_fraction = global_step_recomp / decay_steps
        fraction = 2.0 * num_periods * completed_fraction
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant(math.pi) * fraction))
        linear_cosine_decayed = (alpha + linear_decayed) * cosine_decayed + beta
        return math_ops.multiply(initial_learning_rate, linear_cosine_decayed, name=scope)
