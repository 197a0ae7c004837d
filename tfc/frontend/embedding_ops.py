"""tf.nn.embedding_lookup (TF 1.15's embedding_ops.py) for one parameter tensor: a gather
named ``embedding_lookup`` (colocated with the parameters), clipped by ``max_norm`` when
given (``embedding_lookup/clip_by_norm/...``), then ``embedding_lookup/Identity``.
Compiled, it is a gather; its gradient is the gather's (dense: tfc has no IndexedSlices).

``embedding_lookup_sparse`` combines the embeddings of each row of SparseTensor ids
(``sum``, ``mean``, ``sqrtn``, weighted by ``sp_weights`` or not) into as many rows as the
largest row id + 1, as TF's segment sums do. tfc has no SegmentSum/SparseSegmentSum yet:
the sum is a SparseTensorDenseMatMul of a [rows, ids] SparseTensor of the (scaled)
weights with the gathered embeddings (run on the host when the number of rows is known
only at run time, see tfc/frontend/ops/sparse_ops.py); the values are TF's, the node
types are not. ``safe_embedding_lookup_sparse`` is TF's Python code on top of it.

Sharded parameters (a list of several tensors or a PartitionedVariable, with the ``mod``
and ``div`` partition strategies) are not implemented yet and say so.
"""
from __future__ import annotations

from .convert import convert_to_tensor
from .graph import colocate_with, name_scope


def _clip(params, ids, max_norm):
    """TF's _clip: each embedding (the dims after the ids' dims) clipped to ``max_norm``."""
    if max_norm is None:
        return params
    from .clip_ops import clip_by_norm
    from .ops.array_ops import rank
    from .ops.selection_ops import range as tf_range

    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    if ids_rank is not None and params_rank is not None:
        axes = list(range(ids_rank, params_rank))
    else:
        axes = tf_range(rank(ids), rank(params))
    return clip_by_norm(params, max_norm, axes=axes)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    """The rows of ``params`` that ``ids`` name: ``gather(params, ids)`` shaped
    ``ids.shape + params.shape[1:]``."""
    del validate_indices
    from .ops.array_ops import identity
    from .ops.selection_ops import gather

    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        if len(params) > 1:
            raise NotImplementedError(f"tf.nn.embedding_lookup over {len(params)} sharded parameter tensors "
                                      f"(partition_strategy={partition_strategy!r}) is not implemented in tfc yet")
        params = list(params)
    else:
        params = [params]
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        params = [convert_to_tensor(p, name="params") for p in params]
        ids = convert_to_tensor(ids, name="ids")
        with colocate_with(params[0]):
            result = _clip(gather(params[0], ids, name=scope), ids, max_norm)
        return identity(result)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None, combiner=None,
                            max_norm=None, allow_fast_lookup=False):
    """tf.nn.embedding_lookup_sparse: for each row r of ``sp_ids`` (a SparseTensor of ids
    [rows, max ids per row]), the ``combiner`` of the embeddings of its ids, weighted by
    ``sp_weights`` (same indices) when given: sum, mean (sum / sum of weights) or sqrtn
    (sum / sqrt(sum of squared weights)). The result has max(row id) + 1 rows."""
    from .sparse_tensor import SparseTensor

    del allow_fast_lookup  # a TF speed option: same values
    if combiner is None:
        combiner = "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if isinstance(params, tuple):
        params = list(params)
    if not isinstance(params, list):
        params = [params]
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    ignore_weights = sp_weights is None
    if not ignore_weights:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"sp_weights must be either None or SparseTensor,got {type(sp_weights)}")
        sp_ids.values.get_shape().assert_is_compatible_with(sp_weights.values.get_shape())
        sp_ids.indices.get_shape().assert_is_compatible_with(sp_weights.indices.get_shape())
        sp_ids.dense_shape.get_shape().assert_is_compatible_with(sp_weights.dense_shape.get_shape())
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids]) as name:
        segment_ids = sp_ids.indices[:, 0]
        ids = sp_ids.values
        return _combine_segments(params, segment_ids, sp_weights, ids, combiner, max_norm, partition_strategy, name)


def _combine_segments(params, segment_ids, sp_weights, ids, combiner, max_norm, partition_strategy, name):
    """The rows of ``embedding_lookup(params, ids)`` summed per segment id (scaled for
    mean/sqrtn) by one sparse-dense matmul: A[segment_ids[i], i] = scale[i]."""
    from . import dtypes
    from .ops.array_ops import ones_like, reshape, shape
    from .ops.concat_ops import concat, stack
    from .ops.math_ops import cast, maximum, reduce_max, sqrt
    from .ops.selection_ops import gather, range as tf_range, where
    from .ops.sparse_ops import sparse_reduce_sum, sparse_tensor_dense_matmul
    from .sparse_tensor import SparseTensor

    segment_ids = cast(convert_to_tensor(segment_ids, name="segment_ids"), dtypes.int64)
    embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy, max_norm=max_norm)
    dtype = embeddings.dtype.base_dtype
    count = shape(ids, out_type=dtypes.int64)[0]
    num_segments = maximum(reduce_max(segment_ids) + 1, 0)  # no ids: no rows
    positions = stack([segment_ids, tf_range(count)], axis=1)
    dense_shape = stack([num_segments, count])
    weights = ones_like(ids, dtype=dtype) if sp_weights is None else cast(sp_weights.values, dtype)
    if combiner == "sum":
        scale = weights
    else:
        totals = weights if combiner == "mean" else weights * weights
        totals = sparse_reduce_sum(SparseTensor(positions, totals, dense_shape), axis=1)
        if combiner == "sqrtn":
            totals = sqrt(totals)
        totals = gather(totals, segment_ids)
        zero = totals * 0
        scale = where(totals > zero, weights / where(totals > zero, totals, zero + 1), zero)  # div_no_nan
    flat = reshape(embeddings, stack([count, -1]))
    inner = embeddings.shape[1:].num_elements() if embeddings.shape.ndims is not None else None
    flat.set_shape([None, inner])
    combined = sparse_tensor_dense_matmul(SparseTensor(positions, scale, dense_shape), flat)
    # the rows from the product's shape, not num_segments' value: a shape the compiler knows
    out_shape = concat([shape(combined, out_type=dtypes.int64)[:1], shape(embeddings, out_type=dtypes.int64)[1:]], 0)
    result = reshape(combined, out_shape, name=name)
    result.set_shape([None] + embeddings.shape.as_list()[1:] if embeddings.shape.ndims is not None else None)
    return result


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None, combiner="mean",
                                 default_id=None, name=None, partition_strategy="div", max_norm=None,
                                 allow_fast_lookup=False):
    """tf.nn.safe_embedding_lookup_sparse (TF's Python code): ids < 0 (and, unless summing,
    weights <= 0) are dropped, empty rows get ``default_id``'s embedding (zeros when None),
    and ids of rank > 2 are looked up row by row of the last dimension."""
    from . import dtypes
    from .ops.array_ops import reshape, shape, size, tile, zeros_like
    from .ops.concat_ops import concat, stack
    from .ops.math_ops import cast, reduce_prod
    from .ops.selection_ops import gather, where
    from .ops.slicing import slice as tf_slice
    from .ops.sparse_ops import sparse_fill_empty_rows, sparse_reshape
    from .sparse_tensor import SparseTensor
    from .tensor_shape import Dimension, dimension_value, unknown_shape

    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    if isinstance(embedding_weights, tuple):
        embedding_weights = list(embedding_weights)
    if not isinstance(embedding_weights, list):
        embedding_weights = [embedding_weights]
    if len(embedding_weights) < 1:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    embedding_weights = [convert_to_tensor(w, dtype=dtype) for w in embedding_weights]
    with name_scope(name, "embedding_lookup", embedding_weights + [sparse_ids, sparse_weights]) as scope:
        original_shape = sparse_ids.dense_shape
        original_rank_dim = dimension_value(sparse_ids.dense_shape.get_shape()[0])
        original_rank = size(original_shape) if original_rank_dim is None else original_rank_dim
        sparse_ids = sparse_reshape(sparse_ids, [reduce_prod(tf_slice(original_shape, [0], [original_rank - 1])),
                                                 gather(original_shape, original_rank - 1)])
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        sparse_ids, sparse_weights = _prune_invalid_ids(sparse_ids, sparse_weights)
        if combiner != "sum":
            sparse_ids, sparse_weights = _prune_invalid_weights(sparse_ids, sparse_weights)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights, combiner=combiner,
                                         partition_strategy=partition_strategy,
                                         name=None if default_id is None else scope, max_norm=max_norm)
        if default_id is None:
            is_row_empty = tile(reshape(is_row_empty, [-1, 1]), stack([1, shape(result)[1]]))
            result = where(is_row_empty, zeros_like(result), result, name=scope)
        if original_rank_dim == 2:  # already [rows, ...]: no reshape by dense_shape's run-time values
            from .tensor_util import constant_value_as_shape

            final_result = result
            final_result.set_shape(constant_value_as_shape(original_shape)[:1].concatenate(result.get_shape()[1:]))
        else:
            final_result = reshape(result, concat([tf_slice(cast(original_shape, dtypes.int32), [0],
                                                            [original_rank - 1]),
                                                   tf_slice(shape(result), [1], [-1])], 0))
        final_result.set_shape(unknown_shape((Dimension(original_rank_dim) - 1).value)
                               .concatenate(result.get_shape()[1:]))
        return final_result


def _prune_invalid_ids(sparse_ids, sparse_weights):
    from . import dtypes
    from .ops.array_ops import ones_like
    from .ops.math_ops import greater_equal, logical_and
    from .ops.sparse_ops import sparse_retain

    is_id_valid = greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None:
        is_id_valid = logical_and(is_id_valid, ones_like(sparse_weights.values, dtype=dtypes.bool))
    sparse_ids = sparse_retain(sparse_ids, is_id_valid)
    if sparse_weights is not None:
        sparse_weights = sparse_retain(sparse_weights, is_id_valid)
    return sparse_ids, sparse_weights


def _prune_invalid_weights(sparse_ids, sparse_weights):
    from .ops.math_ops import greater
    from .ops.sparse_ops import sparse_retain

    if sparse_weights is not None:
        is_weights_valid = greater(sparse_weights.values, 0)
        sparse_ids = sparse_retain(sparse_ids, is_weights_valid)
        sparse_weights = sparse_retain(sparse_weights, is_weights_valid)
    return sparse_ids, sparse_weights


NN_EXPORTS = ["embedding_lookup", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
