"""tf.metrics (TF 1.15's python/ops/metrics_impl.py, graph mode, default distribution
strategy): accuracy, mean, precision, recall, auc, mean_iou, true/false positives and
negatives.

Every metric opens the variable scope ``<name>`` (``accuracy``, ``mean_1``...), keeps its
state in local variables created by ``metric_variable`` (``accuracy/total``,
``accuracy/count``, ``auc/true_positives``...; not trainable, in LOCAL_VARIABLES and
METRIC_VARIABLES, initialised to zeros by ``tf.local_variables_initializer()``) and
returns ``(value, update_op)``: ``value`` reads the state (``accuracy/value``), ``update_op``
adds a batch to it and returns the new value (``accuracy/update_op``), as TF builds them.

Differences from TF, by necessity: where TF builds a run-time check under ``tf.cond``
because a rank is unknown when the graph is built (weights of unknown rank), tfc requires
static ranks and raises ValueError/NotImplementedError naming the argument; mean_iou's
confusion matrix is summed with UnsortedSegmentSum (TF adds a SparseTensor to zeros:
same values, other op names under ``confusion_matrix``).
"""
from __future__ import annotations

from . import dtypes
from .convert import convert_to_tensor
from .graph import GraphKeys, add_to_collections, control_dependencies
from .losses import _broadcast_weights, div_no_nan
from .ops import math_ops
from .ops.state_ops import assign_add
from .variable_scope import variable_scope

array_ops = math_ops.array_ops


def metric_variable(shape, dtype, validate_shape=True, name=None):
    """A non-trainable variable of zeros in LOCAL_VARIABLES and METRIC_VARIABLES."""
    from .variables import Variable

    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def _add(collections, value) -> None:
    if collections:
        add_to_collections(collections, value)


def _remove_squeezable(labels, predictions, expected_rank_diff=0):
    """confusion_matrix.remove_squeezable_dimensions (static ranks)."""
    from .losses import _remove_squeezable_dimensions_labels

    return _remove_squeezable_dimensions_labels(labels, predictions, expected_rank_diff=expected_rank_diff)


def _remove_squeezable_dimensions(predictions, labels, weights):
    """metrics_impl._remove_squeezable_dimensions: squeeze/expand labels and weights to
    the predictions' rank (ranks known when the graph is built)."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = _remove_squeezable(labels, predictions)
        predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    weights_rank = weights.get_shape().ndims
    if weights_rank == 0:
        return predictions, labels, weights
    predictions_rank = predictions.get_shape().ndims
    if predictions_rank is not None and weights_rank is not None:
        if weights_rank - predictions_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif predictions_rank - weights_rank == 1:
            weights = array_ops.expand_dims(weights, [-1])
        return predictions, labels, weights
    raise NotImplementedError("tf.metrics with weights or predictions of a rank unknown when the graph is built "
                              "needs TF's run-time rank adjustment, which tfc does not build; give them static ranks")


# -- mean / accuracy ------------------------------------------------------------------------
def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of ``values`` over every batch: ``total / count``."""
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(predictions=values, labels=None, weights=weights)
            weights = _broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total_op = assign_add(total, math_ops.reduce_sum(values))
        with control_dependencies([values]):
            update_count_op = assign_add(count, num_values)
        mean_t = div_no_nan(total, math_ops.maximum(count, 0), name="value")
        _add(metrics_collections, mean_t)
        update_op = div_no_nan(update_total_op, math_ops.maximum(update_count_op, 0), name="update_op")
        _add(updates_collections, update_op)
        return mean_t, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """How often ``predictions`` equals ``labels``: the mean of ``is_correct``."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions=predictions, labels=labels,
                                                                 weights=weights)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


# -- counts: true/false positives/negatives, precision, recall ----------------------------------
def _count_condition(values, weights=None, metrics_collections=None, updates_collections=None):
    from .check_ops import assert_type

    assert_type(values, dtypes.bool)
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        weights_rank, values_rank = weights.get_shape().ndims, values.get_shape().ndims
        if weights_rank is None or values_rank is None:
            raise NotImplementedError("weights of a rank unknown when the graph is built need TF's run-time "
                                      "assert_rank_in, which tfc does not build; give weights a static rank")
        if weights_rank not in (0, values_rank):
            raise ValueError(f"weights must have rank 0 or {values_rank} (the rank of values), got {weights_rank}")
        weights = math_ops.cast(weights, dtypes.float32)
        values = math_ops.multiply(values, weights)
    value_tensor = array_ops.identity(count)
    _add(metrics_collections, value_tensor)
    update_op = assign_add(count, math_ops.reduce_sum(values))
    _add(updates_collections, update_op)
    return value_tensor, update_op


def _condition_metric(default_name, label_value, prediction_value):
    def metric(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                predictions=math_ops.cast(predictions, dtype=dtypes.bool),
                labels=math_ops.cast(labels, dtype=dtypes.bool), weights=weights)
            condition = math_ops.logical_and(math_ops.equal(labels, label_value),
                                             math_ops.equal(predictions, prediction_value))
            return _count_condition(condition, weights, metrics_collections, updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = f"The (weighted) number of {default_name.replace('_', ' ')}: a ``count`` variable."
    return metric


true_positives = _condition_metric("true_positives", True, True)
true_negatives = _condition_metric("true_negatives", False, False)
false_positives = _condition_metric("false_positives", False, True)
false_negatives = _condition_metric("false_negatives", True, False)


def _ratio_metric(default_name, other):
    def metric(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                predictions=math_ops.cast(predictions, dtype=dtypes.bool),
                labels=math_ops.cast(labels, dtype=dtypes.bool), weights=weights)
            true_p, true_p_update = true_positives(labels, predictions, weights)
            other_v, other_update = other(labels, predictions, weights)

            def compute(tp, x, op_name):
                return array_ops.where(math_ops.greater(tp + x, 0), math_ops.divide(tp, tp + x), 0, op_name)

            value = compute(true_p, other_v, "value")
            _add(metrics_collections, value)
            update_op = compute(true_p_update, other_update, "update_op")
            _add(updates_collections, update_op)
            return value, update_op

    metric.__name__ = default_name
    return metric


precision = _ratio_metric("precision", false_positives)
precision.__doc__ = "true_positives / (true_positives + false_positives) (0 when both are 0)."
recall = _ratio_metric("recall", false_negatives)
recall.__doc__ = "true_positives / (true_positives + false_negatives) (0 when both are 0)."


# -- auc ---------------------------------------------------------------------------------------
def _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None, includes=None):
    """metrics_impl._confusion_matrix_at_thresholds: per threshold, the (weighted) counts of
    tp/fn/tn/fp in variables ``true_positives``... of shape [num_thresholds]."""
    from .check_ops import assert_greater_equal, assert_less_equal

    all_includes = ("tp", "fn", "tn", "fp")
    if includes is None:
        includes = all_includes
    else:
        for include in includes:
            if include not in all_includes:
                raise ValueError(f"Invalid key: {include}")
    with control_dependencies([
            assert_greater_equal(predictions, math_ops.cast(0.0, dtype=predictions.dtype),
                                 message="predictions must be in [0, 1]"),
            assert_less_equal(predictions, math_ops.cast(1.0, dtype=predictions.dtype),
                              message="predictions must be in [0, 1]")]):
        predictions, labels, weights = _remove_squeezable_dimensions(
            predictions=math_ops.cast(predictions, dtypes.float32), labels=math_ops.cast(labels, dtype=dtypes.bool),
            weights=weights)
    num_thresholds = len(thresholds)
    predictions_2d = array_ops.reshape(predictions, [-1, 1])
    labels_2d = array_ops.reshape(math_ops.cast(labels, dtype=dtypes.bool), [1, -1])
    num_predictions = predictions_2d.get_shape().as_list()[0]
    if num_predictions is None:
        num_predictions = array_ops.shape(predictions_2d)[0]
    thresh_tiled = array_ops.tile(array_ops.expand_dims(array_ops.constant(thresholds), [1]),
                                  array_ops.stack([1, num_predictions]))
    pred_is_pos = math_ops.greater(array_ops.tile(array_ops.transpose(predictions_2d), [num_thresholds, 1]),
                                   thresh_tiled)
    if "fn" in includes or "tn" in includes:
        pred_is_neg = math_ops.logical_not(pred_is_pos)
    label_is_pos = array_ops.tile(labels_2d, [num_thresholds, 1])
    if "fp" in includes or "tn" in includes:
        label_is_neg = math_ops.logical_not(label_is_pos)
    if weights is not None:
        weights = _broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions)
        weights_tiled = array_ops.tile(array_ops.reshape(weights, [1, -1]), [num_thresholds, 1])
        thresh_tiled.get_shape().assert_is_compatible_with(weights_tiled.get_shape())
    else:
        weights_tiled = None
    values, update_ops = {}, {}

    def count(key, variable_name, label_side, prediction_side):
        variable = metric_variable([num_thresholds], dtypes.float32, name=variable_name)
        is_counted = math_ops.cast(math_ops.logical_and(label_side, prediction_side), dtypes.float32)
        if weights_tiled is not None:
            is_counted *= weights_tiled
        update_ops[key] = assign_add(variable, math_ops.reduce_sum(is_counted, 1))
        values[key] = variable

    if "tp" in includes:
        count("tp", "true_positives", label_is_pos, pred_is_pos)
    if "fn" in includes:
        count("fn", "false_negatives", label_is_pos, pred_is_neg)
    if "tn" in includes:
        count("tn", "true_negatives", label_is_neg, pred_is_neg)
    if "fp" in includes:
        count("fp", "false_positives", label_is_neg, pred_is_pos)
    return values, update_ops


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None, updates_collections=None,
        curve="ROC", name=None, summation_method="trapezoidal", thresholds=None):
    """The area under the ROC or PR curve, from confusion counts at ``num_thresholds``
    thresholds spread over [0, 1] (Riemann sums: trapezoidal, minoring, majoring, or
    careful_interpolation for PR)."""
    from .tf_logging import warning

    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve != "ROC" and curve != "PR":
            raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
        kepsilon = 1e-7
        if thresholds is not None:
            thresholds = sorted(thresholds)
            num_thresholds = len(thresholds) + 2
        else:
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + thresholds + [1.0 + kepsilon]
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights)
        epsilon = 1.0e-6

        def interpolate_pr_auc(tp, fp, fn):
            dtp = tp[:num_thresholds - 1] - tp[1:]
            p = tp + fp
            prec_slope = div_no_nan(dtp, math_ops.maximum(p[:num_thresholds - 1] - p[1:], 0), name="prec_slope")
            intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
            safe_p_ratio = array_ops.where(
                math_ops.logical_and(p[:num_thresholds - 1] > 0, p[1:] > 0),
                div_no_nan(p[:num_thresholds - 1], math_ops.maximum(p[1:], 0), name="recall_relative_ratio"),
                array_ops.ones_like(p[1:]))
            return math_ops.reduce_sum(
                div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                           math_ops.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
                name="interpolate_pr_auc")

        def compute_auc(tp, fn, tn, fp, name):
            if curve == "PR":
                if summation_method == "trapezoidal":
                    warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please switch to "
                            "\"careful_interpolation\" instead.")
                elif summation_method == "careful_interpolation":
                    return interpolate_pr_auc(tp, fp, fn)
            rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                fp_rate = math_ops.divide(fp, fp + tn + epsilon)
                x = fp_rate
                y = rec
            else:
                prec = math_ops.divide(tp + epsilon, tp + fp + epsilon)
                x = rec
                y = prec
            if summation_method in ("trapezoidal", "careful_interpolation"):
                return math_ops.reduce_sum(
                    math_ops.multiply(x[:num_thresholds - 1] - x[1:], (y[:num_thresholds - 1] + y[1:]) / 2.),
                    name=name)
            if summation_method == "minoring":
                return math_ops.reduce_sum(
                    math_ops.multiply(x[:num_thresholds - 1] - x[1:],
                                      math_ops.minimum(y[:num_thresholds - 1], y[1:])), name=name)
            if summation_method == "majoring":
                return math_ops.reduce_sum(
                    math_ops.multiply(x[:num_thresholds - 1] - x[1:],
                                      math_ops.maximum(y[:num_thresholds - 1], y[1:])), name=name)
            raise ValueError(f"Invalid summation_method: {summation_method}")

        auc_value = compute_auc(values["tp"], values["fn"], values["tn"], values["fp"], "value")
        _add(metrics_collections, auc_value)
        update_op = compute_auc(update_ops["tp"], update_ops["fn"], update_ops["tn"], update_ops["fp"], "update_op")
        _add(updates_collections, update_op)
        return auc_value, update_op


# -- mean_iou ----------------------------------------------------------------------------------
def _confusion_matrix(labels, predictions, num_classes, weights=None, dtype=dtypes.float64):
    """[num_classes, num_classes]: at [label, prediction] the (weighted) number of pairs
    (UnsortedSegmentSum of the weights over label * num_classes + prediction)."""
    from .graph import name_scope
    from .ops.selection_ops import unsorted_segment_sum

    with name_scope(None, "confusion_matrix", (predictions, labels, num_classes, weights)):
        labels, predictions = _remove_squeezable(labels, predictions)
        predictions = math_ops.cast(predictions, dtypes.int64)
        labels = math_ops.cast(labels, dtypes.int64)
        ids = labels * num_classes + predictions
        if weights is None:
            values = array_ops.ones_like(predictions, dtype)
        else:
            values = math_ops.cast(convert_to_tensor(weights), dtype)
        flat = unsorted_segment_sum(values, ids, num_classes * num_classes)
        return array_ops.reshape(flat, [num_classes, num_classes])


def _streaming_confusion_matrix(labels, predictions, num_classes, weights=None):
    total_cm = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
    predictions = math_ops.cast(predictions, dtypes.int64)
    labels = math_ops.cast(labels, dtypes.int64)
    if predictions.get_shape().ndims > 1:
        predictions = array_ops.reshape(predictions, [-1])
    if labels.get_shape().ndims > 1:
        labels = array_ops.reshape(labels, [-1])
    if weights is not None:
        weights = convert_to_tensor(weights)
        if weights.get_shape().ndims > 1:
            weights = array_ops.reshape(weights, [-1])
    current_cm = _confusion_matrix(labels, predictions, num_classes, weights=weights, dtype=dtypes.float64)
    update_op = assign_add(total_cm, current_cm)
    return total_cm, update_op


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None, updates_collections=None,
             name=None):
    """The mean over classes of intersection-over-union, from a streaming confusion matrix
    (``total_confusion_matrix``, float64); the update op returns the matrix."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        predictions.get_shape().assert_is_compatible_with(labels.get_shape())
        total_cm, update_op = _streaming_confusion_matrix(labels, predictions, num_classes, weights)
        sum_over_row = math_ops.cast(math_ops.reduce_sum(total_cm, 0), dtypes.float32)
        sum_over_col = math_ops.cast(math_ops.reduce_sum(total_cm, 1), dtypes.float32)
        diagonal = array_ops.gather(array_ops.reshape(total_cm, [-1]),
                                    list(range(0, num_classes * num_classes, num_classes + 1)))
        cm_diag = math_ops.cast(diagonal, dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid_entries = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0),
                                                              dtype=dtypes.float32))
        denominator = array_ops.where(math_ops.greater(denominator, 0), denominator,
                                      array_ops.ones_like(denominator))
        iou = math_ops.divide(cm_diag, denominator)
        result = array_ops.where(math_ops.greater(num_valid_entries, 0),
                                 math_ops.reduce_sum(iou, name="mean_iou") / num_valid_entries, 0)
        _add(metrics_collections, result)
        _add(updates_collections, update_op)
        return result, update_op


EXPORTS = ["accuracy", "auc", "false_negatives", "false_positives", "mean", "mean_iou", "precision", "recall",
           "true_negatives", "true_positives"]
