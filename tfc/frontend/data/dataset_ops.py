"""The dataset ops of the graph (TF's op types, inputs and attrs) as host ops.

Each op's ``host`` runs when a step needs its dataset (an iterator's initializer, a
one-shot iterator's first use) and returns the dataset's run-time description, a
:class:`pipeline.Node`, as the value of its ``variant`` output. Functions (``map``'s
``f``, ``filter``'s ``predicate``...) are named by a ``func`` attr and kept with the
graph (``functions_of``), generators of ``from_generator`` likewise.
"""
from __future__ import annotations

import numpy as np

from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape
from . import batching, mapping, pipeline, prefetch, shuffle

_FUNCTIONS_KEY = "tfc.data.functions"


def functions_of(graph) -> dict:
    """The graph's tf.data functions and generators by name."""
    return graph._scratch.setdefault(_FUNCTIONS_KEY, {})


def variant(node) -> np.ndarray:
    value = np.empty((), dtype=object)
    value[()] = node
    return value


def node_of(value):
    return value[()] if isinstance(value, np.ndarray) else value


def _scalar(op):
    return [TensorShape([])]


def _shapes_attrs():
    return {"output_types": Attr("list(type)"), "output_shapes": Attr("list(shape)")}


class _DatasetOp(OpType):
    outputs = ["handle: variant"]
    host_only = True
    not_differentiable = True
    infer = _scalar


def _function(op, attr: str):
    name = op._attrs[attr]
    name = getattr(name, "name", name)
    function = functions_of(op.graph).get(name)
    if function is None:
        from .. import errors

        raise errors.UnimplementedError(None, op, f"tfc: the function '{name}' of {op.type} '{op.name}' is unknown: "
                                                  "tfc runs datasets built by this process's Python, not dataset "
                                                  "functions imported from a GraphDef")
    return function


@register
class TensorDataset(_DatasetOp):
    inputs = ["components: Toutput_types"]
    attrs = {"Toutput_types": Attr("list(type)"), "output_shapes": Attr("list(shape)")}

    def host(op, *components):
        return [variant(pipeline.Tensors(list(components)))]


@register
class TensorSliceDataset(_DatasetOp):
    inputs = ["components: Toutput_types"]
    attrs = {"Toutput_types": Attr("list(type)"), "output_shapes": Attr("list(shape)"),
             "is_files": Attr("bool", False)}

    def host(op, *components):
        return [variant(pipeline.TensorSlices(list(components), op))]


@register
class RangeDataset(_DatasetOp):
    inputs = ["start: int64", "stop: int64", "step: int64"]
    attrs = _shapes_attrs()

    def host(op, start, stop, step):
        dtype = op._attrs["output_types"][0].as_numpy_dtype
        return [variant(pipeline.Range(start, stop, step, op, dtype))]


@register
class GeneratorDataset(_DatasetOp):
    """``from_generator``: the Python generator is named by ``next_func``."""

    inputs = []
    attrs = dict(_shapes_attrs(), next_func=Attr("func"))

    def host(op):
        function, args, structure = _function(op, "next_func")
        return [variant(pipeline.Generator(function, args, structure, op))]


@register
class ZipDataset(_DatasetOp):
    inputs = ["input_datasets: N * variant"]
    attrs = dict(_shapes_attrs(), N=Attr("int"))

    def host(op, *datasets):
        return [variant(pipeline.Zip([node_of(d) for d in datasets]))]


@register
class ConcatenateDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "another_dataset: variant"]
    attrs = _shapes_attrs()

    def host(op, first, second):
        return [variant(pipeline.Concatenate(node_of(first), node_of(second)))]


def _map_attrs():
    return dict(_shapes_attrs(), f=Attr("func"), Targuments=Attr("list(type)", []),
                use_inter_op_parallelism=Attr("bool", True), preserve_cardinality=Attr("bool", False))


@register
class MapDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "other_arguments: Targuments"]
    attrs = _map_attrs()

    def host(op, dataset, *captured):
        return [variant(mapping.Map(node_of(dataset), _function(op, "f"), captured))]


@register
class ParallelMapDataset(_DatasetOp):
    """``map(..., num_parallel_calls=n)``: the function on n threads, results in order (see
    mapping.py)."""

    inputs = ["input_dataset: variant", "other_arguments: Targuments", "num_parallel_calls: int32"]
    attrs = dict(_map_attrs(), sloppy=Attr("bool", False))

    def host(op, dataset, *rest):
        return [variant(mapping.Map(node_of(dataset), _function(op, "f"), rest[:-1], rest[-1], op))]


@register
class FilterDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "other_arguments: Targuments"]
    attrs = dict(_shapes_attrs(), predicate=Attr("func"), Targuments=Attr("list(type)", []))

    def host(op, dataset, *captured):
        return [variant(mapping.Filter(node_of(dataset), _function(op, "predicate"), captured))]


@register
class FlatMapDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "other_arguments: Targuments"]
    attrs = dict(_shapes_attrs(), f=Attr("func"), Targuments=Attr("list(type)", []))

    def host(op, dataset, *captured):
        return [variant(mapping.FlatMap(node_of(dataset), _function(op, "f"), captured))]


@register
class InterleaveDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "other_arguments: Targuments", "cycle_length: int64", "block_length: int64"]
    attrs = dict(_shapes_attrs(), f=Attr("func"), Targuments=Attr("list(type)", []))

    def host(op, dataset, *rest):
        *captured, cycle_length, block_length = rest
        return [variant(mapping.Interleave(node_of(dataset), _function(op, "f"), captured, cycle_length,
                                           block_length, op))]


@register
class ParallelInterleaveDatasetV2(_DatasetOp):
    """``interleave(..., num_parallel_calls=n)``: the elements' datasets read on n threads;
    the same order as InterleaveDataset unless ``sloppy`` (``deterministic=False``)."""

    inputs = ["input_dataset: variant", "other_arguments: Targuments", "cycle_length: int64", "block_length: int64",
              "num_parallel_calls: int64"]
    attrs = dict(_shapes_attrs(), f=Attr("func"), Targuments=Attr("list(type)", []), sloppy=Attr("bool", False))

    def host(op, dataset, *rest):
        *captured, cycle_length, block_length, num_parallel_calls = rest
        return [variant(mapping.ParallelInterleave(node_of(dataset), _function(op, "f"), captured, cycle_length,
                                                   block_length, num_parallel_calls,
                                                   deterministic=not op._attrs["sloppy"], op=op))]


@register
class ParallelInterleaveDataset(_DatasetOp):
    """``tf.data.experimental.parallel_interleave`` (TF 1.15's op): ``sloppy`` is an input;
    ``buffer_output_elements`` is the one block each element reads ahead."""

    inputs = ["input_dataset: variant", "other_arguments: Targuments", "cycle_length: int64", "block_length: int64",
              "sloppy: bool", "buffer_output_elements: int64", "prefetch_input_elements: int64"]
    attrs = dict(_shapes_attrs(), f=Attr("func"), Targuments=Attr("list(type)", []))

    def host(op, dataset, *rest):
        *captured, cycle_length, block_length, sloppy, _, prefetch_input_elements = rest
        return [variant(mapping.ParallelInterleave(node_of(dataset), _function(op, "f"), captured, cycle_length,
                                                   block_length, cycle_length, deterministic=not bool(sloppy), op=op,
                                                   legacy=True, prefetch_input_elements=prefetch_input_elements))]


@register
class BatchDatasetV2(_DatasetOp):
    inputs = ["input_dataset: variant", "batch_size: int64", "drop_remainder: bool"]
    attrs = dict(_shapes_attrs(), parallel_copy=Attr("bool", False))

    def host(op, dataset, batch_size, drop_remainder):
        return [variant(batching.Batch(node_of(dataset), batch_size, drop_remainder, op))]


@register
class PaddedBatchDatasetV2(_DatasetOp):
    inputs = ["input_dataset: variant", "batch_size: int64", "padded_shapes: N * int64",
              "padding_values: Toutput_types", "drop_remainder: bool"]
    attrs = {"Toutput_types": Attr("list(type)"), "output_shapes": Attr("list(shape)"), "N": Attr("int"),
             "parallel_copy": Attr("bool", False)}

    def host(op, dataset, batch_size, *rest):
        count = op._attrs["N"]
        shapes, values, drop_remainder = rest[:count], rest[count:2 * count], rest[-1]
        return [variant(batching.PaddedBatch(node_of(dataset), batch_size, shapes, values, drop_remainder, op))]


@register
class UnbatchDataset(_DatasetOp):
    inputs = ["input_dataset: variant"]
    attrs = _shapes_attrs()

    def host(op, dataset):
        return [variant(batching.Unbatch(node_of(dataset), op))]


@register
class WindowDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "size: int64", "shift: int64", "stride: int64", "drop_remainder: bool"]
    attrs = _shapes_attrs()

    def host(op, dataset, size, shift, stride, drop_remainder):
        return [variant(batching.Window(node_of(dataset), size, shift, stride, drop_remainder, op))]


@register
class ShuffleDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "buffer_size: int64", "seed: int64", "seed2: int64"]
    attrs = dict(_shapes_attrs(), reshuffle_each_iteration=Attr("bool", True))

    def host(op, dataset, buffer_size, seed, seed2):
        return [variant(shuffle.Shuffle(node_of(dataset), buffer_size, int(seed), int(seed2),
                                        op._attrs["reshuffle_each_iteration"], op))]


@register
class RepeatDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "count: int64"]
    attrs = _shapes_attrs()

    def host(op, dataset, count):
        return [variant(pipeline.Repeat(node_of(dataset), count))]


@register
class TakeDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "count: int64"]
    attrs = _shapes_attrs()

    def host(op, dataset, count):
        return [variant(pipeline.Take(node_of(dataset), count))]


@register
class SkipDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "count: int64"]
    attrs = _shapes_attrs()

    def host(op, dataset, count):
        return [variant(pipeline.Skip(node_of(dataset), count))]


@register
class ShardDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "num_shards: int64", "index: int64"]
    attrs = dict(_shapes_attrs(), require_non_empty=Attr("bool", False))

    def host(op, dataset, num_shards, index):
        from .. import errors

        if int(num_shards) <= 0:
            raise errors.InvalidArgumentError(None, op, "Number of shards must be greater than zero (currently "
                                                        f"num_shards = {int(num_shards)}).")
        if not 0 <= int(index) < int(num_shards):
            raise errors.InvalidArgumentError(None, op, f"Index must be between 0 and {int(num_shards) - 1} "
                                                        f"(currently index = {int(index)}).")
        return [variant(pipeline.Shard(node_of(dataset), num_shards, index))]


@register
class PrefetchDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "buffer_size: int64"]
    attrs = dict(_shapes_attrs(), slack_period=Attr("int", 0), legacy_autotune=Attr("bool", True))

    def host(op, dataset, buffer_size):
        return [variant(prefetch.Prefetch(node_of(dataset), buffer_size))]


@register
class CacheDataset(_DatasetOp):
    inputs = ["input_dataset: variant", "filename: string"]
    attrs = _shapes_attrs()

    def host(op, dataset, filename):
        filename = np.asarray(filename, dtype=object)[()]
        filename = filename.decode() if isinstance(filename, bytes) else str(filename)
        if filename:  # on disk (file_cache.py)
            from .file_cache import FileCache

            return [variant(FileCache(node_of(dataset), filename, op._attrs["output_types"],
                                      op._attrs["output_shapes"], op))]
        return [variant(pipeline.Cache(node_of(dataset)))]
