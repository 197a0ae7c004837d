"""Issue 14's training extras against TensorFlow (fixture:
tests/fixtures/make_tf_training_extras.py): the Adadelta, Ftrl, ProximalGradientDescent and
ProximalAdagrad optimizers (slot names, variables after each step), ExponentialMovingAverage
(names, variables_to_restore, averages with zero_debias and num_updates), the learning-rate
schedules, tf.metrics (local/metric variables, value and update tensors' names, values across
batches) and the tf.losses remainder (values under every reduction and weighting)."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
spec = importlib.util.spec_from_file_location("make_tf_training_extras",
                                              os.path.join(FIXTURES, "make_tf_training_extras.py"))
make = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make)
with open(os.path.join(FIXTURES, "training_extras.json")) as f:
    FIXTURE = json.load(f)["programs"]


def assert_same(expected, got, path="", rtol=2e-6, atol=1e-7):
    """Names (strings) equal exactly; numbers within float32 rounding."""
    if isinstance(expected, dict):
        assert sorted(expected) == sorted(got), path
        for key in expected:
            assert_same(expected[key], got[key], f"{path}/{key}", rtol, atol)
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(expected) == len(got), (path, expected, got)
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, f"{path}[{i}]", rtol, atol)
    elif isinstance(expected, str) or isinstance(expected, bool):
        assert expected == got, (path, expected, got)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=path)


def run(name):
    # JSON round trip: tuples become lists, numpy scalars numbers, as in the fixture.
    return json.loads(json.dumps(make.run_program(tf, make.PROGRAMS[name])))


@pytest.mark.parametrize("name", sorted(make.OPTIMIZERS))
def test_optimizer_variables_and_values_are_tensorflows(name):
    got = run("optimizer/" + name)
    assert_same(FIXTURE["optimizer/" + name], got)
    assert len(got["steps"]) == make.STEPS


def test_optimizer_slot_names_spelled_out():
    assert FIXTURE["optimizer/adadelta"]["globals"][3:] == ["w/Adadelta:0", "w/Adadelta_1:0", "b/Adadelta:0",
                                                            "b/Adadelta_1:0"]
    assert run("optimizer/ftrl")["globals"][3:] == ["w/Ftrl:0", "w/Ftrl_1:0", "b/Ftrl:0", "b/Ftrl_1:0"]
    assert run("optimizer/proximal_gd")["globals"] == ["w:0", "b:0", "global_step:0"]


def test_optimizer_graphs_use_tf_training_ops():
    cases = [(lambda: tf.train.AdadeltaOptimizer(), "Adadelta/update_w/ApplyAdadelta", "ApplyAdadelta"),
             (lambda: tf.train.FtrlOptimizer(0.1), "Ftrl/update_w/ApplyFtrl", "ApplyFtrl"),
             (lambda: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1),
              "Ftrl/update_w/ApplyFtrlV2", "ApplyFtrlV2"),
             (lambda: tf.train.ProximalGradientDescentOptimizer(0.1),
              "ProximalGradientDescent/update_w/ApplyProximalGradientDescent", "ApplyProximalGradientDescent"),
             (lambda: tf.train.ProximalAdagradOptimizer(0.1), "ProximalAdagrad/update_w/ApplyProximalAdagrad",
              "ApplyProximalAdagrad")]
    for make_opt, op_name, op_type in cases:
        with tf.Graph().as_default() as g:
            w = tf.Variable([1.0, 2.0], name="w")
            make_opt().minimize(tf.reduce_sum(w * w))
            assert g.get_operation_by_name(op_name).type == op_type
            assert [t.name for t in g.get_operation_by_name(op_name).inputs][:1] == ["w:0"]


def test_optimizer_argument_errors_are_tfs():
    with pytest.raises(ValueError, match="initial_accumulator_value -1.000000 needs to be positive or zero"):
        tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative or zero"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l2_shrinkage_regularization_strength -0.100000 needs to be positive"):
        tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-0.1)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)


@pytest.mark.parametrize("name", ["ema", "ema_zero_debias", "ema_num_updates"])
def test_exponential_moving_average_is_tensorflows(name):
    got = run(name)
    assert_same(FIXTURE[name], got)
    assert got["averages"][0] == "v/ExponentialMovingAverage:0"


def test_ema_average_name_before_apply_and_missing_average():
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        ema = tf.train.ExponentialMovingAverage(0.5, name="Avg")
        assert ema.average_name(v) == "v/Avg"
        assert ema.average(v) is None
        ema.apply([v])
        assert ema.average(v).name == "v/Avg:0"
        with pytest.raises(TypeError, match="The variables must be half, float, or double: i:0"):
            ema.apply([tf.Variable(1, name="i")])


def test_learning_rate_schedules_are_tensorflows():
    got = run("schedules")
    assert_same(FIXTURE["schedules"], got, rtol=1e-6)
    assert got["values"]["cosine"][0] == pytest.approx(0.1)


def test_metrics_are_tensorflows():
    got = run("metrics")
    assert_same(FIXTURE["metrics"], got, rtol=1e-5, atol=1e-6)
    assert got["locals"][:2] == ["accuracy/total:0", "accuracy/count:0"]
    assert got["metric_variables"] == got["locals"] and got["globals"] == []


def test_metric_collections_and_uninitialized_error():
    with tf.Graph().as_default():
        labels = tf.constant([1, 0, 1])
        value, update = tf.metrics.accuracy(labels, tf.constant([1, 1, 1]), metrics_collections=["m"],
                                            updates_collections=["u"])
        assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="accuracy/count|accuracy/total"):
                sess.run(update)
            sess.run(tf.local_variables_initializer())
            assert sess.run(update) == pytest.approx(2 / 3)
            assert sess.run(update) == pytest.approx(2 / 3)
            assert sess.run(value) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="curve must be either ROC or PR, XY unknown"):
        tf.metrics.auc([1], [0.5], curve="XY")


def test_losses_remainder_is_tensorflows():
    got = run("losses")
    assert_same(FIXTURE["losses"], got, rtol=1e-5, atol=1e-6)
    assert got["names"]["huber_default"] == "huber_loss_15/value:0"


def test_control_dependency_on_a_fed_placeholder_is_met_by_the_feed():
    # tf.metrics.mean of float32 values makes its count update depend on the (fed) placeholder.
    with tf.Graph().as_default():
        values = tf.placeholder(tf.float32, [None], name="values")
        with tf.control_dependencies([values]):
            total = tf.reduce_sum(values) + 1.0
        _, update = tf.metrics.mean(values)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(total, {values: [1.0, 2.0]}) == 4.0
            assert sess.run(update, {values: [1.0, 2.0, 6.0]}) == 3.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor "
                                                                     "'values'"):
                sess.run(total)
