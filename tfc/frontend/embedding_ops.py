"""tf.nn.embedding_lookup (TF 1.15's embedding_ops.py) for one parameter tensor: a gather
named ``embedding_lookup`` (colocated with the parameters), clipped by ``max_norm`` when
given (``embedding_lookup/clip_by_norm/...``), then ``embedding_lookup/Identity``.
Compiled, it is a gather; its gradient is the gather's (dense: tfc has no IndexedSlices).

Sharded parameters (a list of several tensors or a PartitionedVariable, with the ``mod``
and ``div`` partition strategies) and ``embedding_lookup_sparse`` (SparseTensor ids) are
not implemented yet and say so.
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
                            max_norm=None):
    raise NotImplementedError("tf.nn.embedding_lookup_sparse needs SparseTensor ids, which tfc does not implement yet")


NN_EXPORTS = ["embedding_lookup", "embedding_lookup_sparse"]
