"""Trip-count bounds of TF1 while loops read from their structure (tfc/passes/loop_bounds.py):
counted loops (a counter stepped by a constant, compared with a known limit), a
LogicalAnd's tighter side (tf.while_loop's maximum_iterations), and no bound for a loop
whose condition depends on the data it computes."""
from __future__ import annotations

import pytest

import tfc.compat.v1 as tf
from tfc.frontend.tensor_util import constant_value
from tfc.passes.loop_bounds import TripBound, trip_bound


def _static(tensor):
    while tensor.op.type in ("Enter", "Identity"):
        tensor = tensor.op._inputs[0]
    value = constant_value(tensor)
    return None if value is None else int(value)


def _bound(cond, body, initial_values, **kwargs):
    graph = tf.Graph()
    with graph.as_default():
        tf.while_loop(cond, body, [tf.constant(v) for v in initial_values], **kwargs)
        loop_cond = next(op for op in graph.get_operations() if op.type == "LoopCond")
        return trip_bound(loop_cond, _static)


@pytest.mark.parametrize("start, limit, expected", [(0, 4, 4), (0, 0, 0), (3, 1, 0), (-2, 5, 7)])
def test_a_counter_below_a_constant_limit_runs_limit_minus_start_times(start, limit, expected):
    bound = _bound(lambda i: i < limit, lambda i: i + 1, [start])
    assert bound == TripBound(expected, exact=True)


def test_steps_and_inclusive_limits_count_every_value_reached():
    # 2, 5, 8 are <= 10.
    assert _bound(lambda i: i <= 10, lambda i: i + 3, [2]) == TripBound(3, exact=True)
    # The limit on the left: 10 > i.
    assert _bound(lambda i: 10 > i, lambda i: 2 + i, [0]) == TripBound(5, exact=True)


def test_a_counter_stepping_down_to_a_limit():
    # 5, 4, 3, 2, 1 are > 0; 5, 3, 1 are >= 0 stepping by 2.
    assert _bound(lambda i: i > 0, lambda i: i - 1, [5]) == TripBound(5, exact=True)
    assert _bound(lambda i: i >= 0, lambda i: i - 2, [5]) == TripBound(3, exact=True)


def test_maximum_iterations_bounds_a_loop_whose_own_condition_is_counted_too():
    # tf.while_loop adds ``iteration_counter < maximum_iterations``, and-ed with the cond:
    # the tighter side bounds, and the bound is not exact (either side may stop it).
    bound = _bound(lambda i, v: i < 100, lambda i, v: [i + 1, v * 2.0], [0, 1.0],
                   maximum_iterations=7)
    assert bound == TripBound(7, exact=False)


def test_maximum_iterations_bounds_a_data_dependent_loop():
    bound = _bound(lambda v: v < 50.0, lambda v: v * 2.0, [1.0], maximum_iterations=6)
    assert bound == TripBound(6, exact=False)


def test_a_data_dependent_condition_or_a_fed_limit_has_no_bound():
    assert _bound(lambda v: v < 50.0, lambda v: v * 2.0, [1.0]) is None
    graph = tf.Graph()
    with graph.as_default():
        n = tf.placeholder(tf.int32, [])
        tf.while_loop(lambda i: i < n, lambda i: i + 1, [0])
        loop_cond = next(op for op in graph.get_operations() if op.type == "LoopCond")
        assert trip_bound(loop_cond, _static) is None


def test_a_counter_whose_step_is_not_constant_has_no_bound():
    assert _bound(lambda i: i < 10, lambda i: i + i, [1]) is None
