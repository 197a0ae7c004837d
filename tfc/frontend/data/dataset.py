"""``tf.data.Dataset`` in TF1 graph mode (TF 1.15's DatasetV1 API).

A Dataset is a ``variant`` tensor of the graph (the output of a dataset op: TF's op types,
names and attrs, e.g. ``TensorSliceDataset``, ``BatchDatasetV2``, ``ShuffleDataset``) and
the structure of its elements. Transformations add ops; nothing runs until an iterator's
initializer (or a one-shot iterator's first ``get_next``) runs the ops on the host
(dataset_ops.py), which builds the pipeline (pipeline.py). ``output_types``,
``output_shapes`` and ``output_classes`` are what TF infers: a batch dimension is ``None``
unless ``drop_remainder`` and a constant batch size make it known.

While executing eagerly the same methods run each dataset op at once instead (eager.py):
the dataset's variant tensor is an EagerTensor holding its pipeline, and iterating the
dataset hands out EagerTensors.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, get_default_graph, name_scope
from ..tensor_shape import Dimension, TensorShape
from ..tensor_util import constant_value
from . import structure as nest
from .dataset_ops import functions_of
from .eager import executing_eagerly

AUTOTUNE = -1
UNKNOWN_CARDINALITY = -2
INFINITE_CARDINALITY = -1


def _int64(value, name):
    return convert_to_tensor(value, dtype=dtypes.int64, name=name)


class Dataset(nest.HasElementStructure):
    """A dataset: a variant tensor and its element structure (a nest of Specs)."""

    def __init__(self, variant_tensor: Tensor, element_structure, kind: str = "Dataset"):
        self._variant_tensor = variant_tensor
        self._structure = element_structure
        self._kind = kind

    # -- structure ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        shapes = nest.map_structure(str, nest.shapes_of(self._structure))
        return (f"<{self._kind} shapes: {nest._text(shapes)}, types: {nest.type_text(self._structure)}>")

    def __iter__(self):
        if not executing_eagerly():
            from .eager import _IN_DEFUN, in_defun

            if in_defun():
                raise NotImplementedError(_IN_DEFUN)
            raise RuntimeError("__iter__() is only supported inside of tf.function or when eager execution is "
                               "enabled.")
        from .eager import EagerIterator

        return EagerIterator(self)

    @property
    def graph(self):
        return self._variant_tensor.graph

    def _op(self, op_type: str, inputs: list, structure, attrs=None, kind=None, name=None,
            output_types_attr=True, functions=None) -> "Dataset":
        return _make(op_type, inputs, structure, attrs, kind or op_type, name, self.graph, output_types_attr,
                     functions)

    # -- sources -----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors) -> "Dataset":
        components = _normalize(tensors)
        flat = nest.flatten(components)
        first = Dimension(None)
        for t in flat:
            if t.shape.ndims == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1")
            if t.shape.ndims is not None:
                first = first.merge_with(t.shape.dims[0])  # "Dimensions 3 and 2 are not compatible"
        specs = nest.map_structure(lambda t: nest.Spec(t.dtype, t.shape[1:]), components)
        return _make("TensorSliceDataset", flat, specs, {"Toutput_types": [t.dtype for t in flat]},
                     "TensorSliceDataset", output_types_attr=False)

    @staticmethod
    def from_tensors(tensors) -> "Dataset":
        components = _normalize(tensors)
        flat = nest.flatten(components)
        specs = nest.map_structure(lambda t: nest.Spec(t.dtype, t.shape), components)
        return _make("TensorDataset", flat, specs, {"Toutput_types": [t.dtype for t in flat]}, "TensorDataset",
                     output_types_attr=False)

    @staticmethod
    def range(*args, output_type=dtypes.int64) -> "Dataset":
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            start, stop, step = args[0], args[1], 1
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        inputs = [_int64(start, "start"), _int64(stop, "stop"), _int64(step, "step")]
        return _make("RangeDataset", inputs, nest.Spec(output_type, []), kind="RangeDataset")

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None) -> "Dataset":
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        specs = nest.specs_from(output_types, output_shapes)
        graph = get_default_graph()
        token = f"generator_{id(generator)}_{len(functions_of(graph))}"
        arguments = []
        for arg in args or ():
            value = constant_value(arg) if isinstance(arg, Tensor) else np.asarray(arg)
            if value is None:
                raise NotImplementedError("tfc: from_generator's args must be known when the graph is built "
                                          f"(got {arg})")
            arguments.append(value)
        generator_entry = (generator, arguments, specs)
        if executing_eagerly(graph):
            return _make("GeneratorDataset", [], specs, {"next_func": token}, "FlatMapDataset",
                         functions={token: generator_entry})
        functions_of(graph)[token] = generator_entry
        return _make("GeneratorDataset", [], specs, {"next_func": token}, "FlatMapDataset")

    @staticmethod
    def zip(datasets) -> "Dataset":
        flat = nest.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"The argument to `Dataset.zip()` must be a (nested) structure of `Dataset` objects."
                                f" Got {type(d).__name__}")
        structure = nest.pack_sequence_as(datasets, [d._structure for d in flat])
        return _make("ZipDataset", [d._variant_tensor for d in flat], structure, {"N": len(flat)}, "ZipDataset",
                     graph=flat[0].graph)

    # -- transformations ----------------------------------------------------------------------
    def concatenate(self, dataset) -> "Dataset":
        if not nest.same_structure(self._structure, dataset._structure):
            raise TypeError(f"Two datasets to concatenate have different types {self.output_types} and "
                            f"{dataset.output_types}")
        if nest.flat_types(self._structure) != nest.flat_types(dataset._structure):
            raise TypeError(f"Two datasets to concatenate have different types {nest.type_text(self._structure)} and "
                            f"{nest.type_text(dataset._structure)}")
        structure = nest.most_specific_compatible(self._structure, dataset._structure)
        return self._op("ConcatenateDataset", [self._variant_tensor, dataset._variant_tensor], structure)

    def map(self, map_func, num_parallel_calls=None, deterministic=None) -> "Dataset":
        function = self._trace(map_func, "map")
        if function.dataset_structure is not None:
            raise TypeError("tfc: a map function that returns a Dataset is not supported; use flat_map")
        op_type = "MapDataset" if num_parallel_calls is None else "ParallelMapDataset"
        inputs = [self._variant_tensor] + function.captured_tensors
        if num_parallel_calls is not None:
            with self.graph.as_default():
                inputs.append(convert_to_tensor(num_parallel_calls, dtype=dtypes.int32, name="num_parallel_calls"))
        attrs = {"f": function.name, "Targuments": [t.dtype for t in function.captured_tensors]}
        return self._function_op(op_type, inputs, function.output_structure, attrs, function)

    def filter(self, predicate) -> "Dataset":
        function = self._trace(predicate, "filter")
        spec = function.output_structure
        if not isinstance(spec, nest.Spec) or spec.dtype != dtypes.bool or not spec.shape.is_compatible_with([]):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean tensor. Was "
                             f"{function.outputs[0] if function.outputs else spec}.")
        attrs = {"predicate": function.name, "Targuments": [t.dtype for t in function.captured_tensors]}
        return self._function_op("FilterDataset", [self._variant_tensor] + function.captured_tensors,
                                 self._structure, attrs, function)

    def flat_map(self, map_func) -> "Dataset":
        function = self._trace(map_func, "flat_map")
        if function.dataset_structure is None:
            raise TypeError("`map_func` must return a `Dataset` object.")
        attrs = {"f": function.name, "Targuments": [t.dtype for t in function.captured_tensors]}
        return self._function_op("FlatMapDataset", [self._variant_tensor] + function.captured_tensors,
                                 function.dataset_structure, attrs, function)

    def interleave(self, map_func, cycle_length=AUTOTUNE, block_length=1, num_parallel_calls=None,
                   deterministic=None) -> "Dataset":
        function = self._trace(map_func, "interleave")
        if function.dataset_structure is None:
            raise TypeError("`map_func` must return a `Dataset` object.")
        with self.graph.as_default():
            inputs = [self._variant_tensor] + function.captured_tensors + [
                _int64(cycle_length, "cycle_length"), _int64(block_length, "block_length")]
            op_type = "InterleaveDataset"
            if num_parallel_calls is not None:
                op_type = "ParallelInterleaveDatasetV2"
                inputs.append(_int64(num_parallel_calls, "num_parallel_calls"))
        attrs = {"f": function.name, "Targuments": [t.dtype for t in function.captured_tensors]}
        if num_parallel_calls is not None:
            attrs["sloppy"] = deterministic is False
        return self._function_op(op_type, inputs, function.dataset_structure, attrs, function)

    def _parallel_interleave(self, map_func, cycle_length, block_length=1, sloppy=False, buffer_output_elements=None,
                             prefetch_input_elements=None) -> "Dataset":
        """``tf.data.experimental.parallel_interleave``'s dataset (TF 1.15's ParallelInterleaveDataset)."""
        function = self._trace(map_func, "tf_data_experimental_parallel_interleave")
        if function.dataset_structure is None:
            raise TypeError("`map_func` must return a `Dataset` object.")
        with self.graph.as_default():
            inputs = [self._variant_tensor] + function.captured_tensors + [
                _int64(cycle_length, "cycle_length"), _int64(block_length, "block_length"),
                convert_to_tensor(sloppy, dtype=dtypes.bool, name="sloppy"),
                _int64(2 * block_length if buffer_output_elements is None else buffer_output_elements,
                       "buffer_output_elements"),
                _int64(2 * cycle_length if prefetch_input_elements is None else prefetch_input_elements,
                       "prefetch_input_elements")]
        attrs = {"f": function.name, "Targuments": [t.dtype for t in function.captured_tensors]}
        return self._function_op("ParallelInterleaveDataset", inputs, function.dataset_structure, attrs, function)

    def batch(self, batch_size, drop_remainder=False) -> "Dataset":
        with self.graph.as_default():
            size = _int64(batch_size, "batch_size")
            drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        known = constant_value(size) if _static_bool(drop) else None
        batch_dim = int(known) if known is not None else None
        structure = nest.map_structure(lambda s: nest.Spec(s.dtype, TensorShape([batch_dim]).concatenate(s.shape)),
                                       self._structure)
        return self._op("BatchDatasetV2", [self._variant_tensor, size, drop], structure)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False) -> "Dataset":
        specs = nest.flatten(self._structure)
        if padded_shapes is None:
            for spec in specs:
                if spec.shape.ndims is None:
                    raise ValueError("You must provide `padded_shapes` argument because component 0 has unknown "
                                     "rank.")
            shapes = [spec.shape for spec in specs]
        else:
            shapes = _flatten_up_to(self._structure, padded_shapes)
            shapes = [TensorShape(_shape_arg(s)) for s in shapes]
        for spec, shape in zip(specs, shapes):
            if not _padded_compatible(shape, spec.shape):
                raise ValueError(f"The padded shape {shape} is not compatible with the corresponding input component "
                                 f"shape {spec.shape}.")
        values = [None] * len(specs) if padding_values is None else _flatten_up_to(self._structure, padding_values)
        with self.graph.as_default():
            size = _int64(batch_size, "batch_size")
            shape_tensors = [convert_to_tensor(np.array([-1 if d is None else d for d in s.as_list()], np.int64),
                                               dtype=dtypes.int64, name="Const") for s in shapes]
            value_tensors = [convert_to_tensor(_default_padding(spec.dtype) if v is None else v, dtype=spec.dtype,
                                               name="padding_value") for spec, v in zip(specs, values)]
            drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        known = constant_value(size) if _static_bool(drop) else None
        batch_dim = TensorShape([int(known) if known is not None else None])
        structure = nest.pack_sequence_as(self._structure, [nest.Spec(spec.dtype, batch_dim.concatenate(shape))
                                                            for spec, shape in zip(specs, shapes)])
        return self._op("PaddedBatchDatasetV2", [self._variant_tensor, size] + shape_tensors + value_tensors + [drop],
                        structure, {"Toutput_types": [s.dtype for s in specs], "N": len(specs)},
                        output_types_attr=False)

    def unbatch(self) -> "Dataset":
        def unbatched(spec):
            if spec.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
            return nest.Spec(spec.dtype, spec.shape[1:])

        return self._op("UnbatchDataset", [self._variant_tensor], nest.map_structure(unbatched, self._structure))

    def window(self, size, shift=None, stride=1, drop_remainder=False) -> "Dataset":
        """Windows of ``size`` elements (every ``stride``-th input element), one starting
        every ``shift`` elements (default ``size``): each element is a nest of datasets,
        one per component (``DatasetSpec``), as TF's ``WindowDataset`` makes them."""
        with self.graph.as_default():
            inputs = [self._variant_tensor, _int64(size, "size"), _int64(size if shift is None else shift, "shift"),
                      _int64(stride, "stride"),
                      convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")]
        structure = nest.map_structure(lambda spec: nest.DatasetSpec(spec), self._structure)
        return self._op("WindowDataset", inputs, structure, kind="WindowDataset")

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> "Dataset":
        from ..ops.random_ops import get_seed

        with self.graph.as_default():
            seed, seed2 = get_seed(seed)
            inputs = [self._variant_tensor, _int64(buffer_size, "buffer_size"), _int64(seed or 0, "seed"),
                      _int64(seed2 or 0, "seed2")]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._op("ShuffleDataset", inputs, self._structure, {"reshuffle_each_iteration": reshuffle})

    def repeat(self, count=None) -> "Dataset":
        with self.graph.as_default():
            count = _int64(-1 if count is None else count, "count")
        return self._op("RepeatDataset", [self._variant_tensor, count], self._structure)

    def take(self, count) -> "Dataset":
        with self.graph.as_default():
            count = _int64(count, "count")
        return self._op("TakeDataset", [self._variant_tensor, count], self._structure)

    def skip(self, count) -> "Dataset":
        with self.graph.as_default():
            count = _int64(count, "count")
        return self._op("SkipDataset", [self._variant_tensor, count], self._structure)

    def shard(self, num_shards, index) -> "Dataset":
        with self.graph.as_default():
            inputs = [self._variant_tensor, _int64(num_shards, "num_shards"), _int64(index, "index")]
        return self._op("ShardDataset", inputs, self._structure)

    def prefetch(self, buffer_size) -> "Dataset":
        with self.graph.as_default():
            size = _int64(buffer_size, "buffer_size")
        return self._op("PrefetchDataset", [self._variant_tensor, size], self._structure)

    def cache(self, filename="") -> "Dataset":
        with self.graph.as_default():
            filename = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return self._op("CacheDataset", [self._variant_tensor, filename], self._structure)

    def enumerate(self, start=0) -> "Dataset":
        max_value = np.iinfo(np.int64).max
        with self.graph.as_default():
            return Dataset.zip((Dataset.range(start, max_value), self))

    def apply(self, transformation_func) -> "Dataset":
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return dataset

    def with_options(self, options) -> "Dataset":
        return self

    def options(self):
        return None

    # -- iterators -----------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        if executing_eagerly():
            from .eager import EagerIterator

            return EagerIterator(self)
        from .iterator import one_shot_iterator

        return one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        if executing_eagerly():
            raise RuntimeError("dataset.make_initializable_iterator is not supported when eager execution is "
                               "enabled. Use `for element in dataset` instead.")
        from .iterator import initializable_iterator

        return initializable_iterator(self, shared_name)

    def reduce(self, initial_state, reduce_func):
        """Folds ``reduce_func(state, element)`` over the dataset from ``initial_state``: the
        final state (EagerTensors when executing eagerly, else tensors of a
        ``ReduceDataset`` op that runs the whole pass when the step runs)."""
        from .reduce import reduce_dataset

        return reduce_dataset(self, initial_state, reduce_func)

    # -- helpers --------------------------------------------------------------------------------
    def _trace(self, fn, transformation: str, input_structure=None):
        from .functions import trace

        structure = self._structure if input_structure is None else input_structure
        function = trace(fn, structure, transformation, self.graph)
        if not self._is_eager():  # eager: the op's node holds the function (run_dataset_op)
            functions_of(self.graph)[function.name] = function
        return function

    def _is_eager(self) -> bool:
        from ..eager.tensor import EagerTensor

        return isinstance(self._variant_tensor, EagerTensor)

    def _function_op(self, op_type, inputs, structure, attrs, function) -> "Dataset":
        functions = {function.name: function} if self._is_eager() else None
        dataset = self._op(op_type, inputs, structure, attrs, functions=functions)
        function.owner = getattr(dataset, "_eager_op", None) or dataset._variant_tensor.op
        return dataset


def _make(op_type: str, inputs: list, structure, attrs=None, kind=None, name=None, graph=None,
          output_types_attr=True, functions=None) -> Dataset:
    graph = graph or (inputs[0].graph if inputs else get_default_graph())
    all_attrs = {"output_shapes": nest.flat_shapes(structure)}
    if output_types_attr:
        all_attrs["output_types"] = nest.flat_types(structure)
    all_attrs.update(attrs or {})
    if executing_eagerly(graph):
        from .eager import run_dataset_op

        variant, op = run_dataset_op(op_type, list(inputs), all_attrs, name or op_type, functions)
        dataset = Dataset(variant, structure, kind or op_type)
        dataset._eager_op = op
        return dataset
    with graph.as_default():
        op = graph.create_op(op_type, inputs, name=name or op_type, attrs=all_attrs)
    return Dataset(op.outputs[0], structure, kind or op_type)


def _normalize(tensors):
    """The components of an element as tensors (TF's ``normalize_element``)."""
    nest.reject_sparse(tensors, "a dataset element")
    flat = nest.flatten(tensors)
    with name_scope("normalize_element"):
        converted = []
        for i, value in enumerate(flat):
            if isinstance(value, Dataset):
                raise TypeError("tfc: datasets of datasets are not supported")
            converted.append(convert_to_tensor(value, name=f"component_{i}"))
    if not converted:
        raise ValueError("tfc: a dataset element needs at least one component")
    return nest.pack_sequence_as(tensors, converted)


def _static_bool(tensor) -> bool:
    value = constant_value(tensor)
    return bool(value) if value is not None else False


def _shape_arg(shape):
    if isinstance(shape, Tensor):
        value = constant_value(shape)
        if value is None:
            raise ValueError("tfc: padded_shapes must be known when the graph is built")
        return [None if int(d) < 0 else int(d) for d in value.reshape(-1)]
    if isinstance(shape, TensorShape):
        return shape
    return [None if d is None or int(d) < 0 else int(d) for d in shape]


def _padded_compatible(padded: TensorShape, shape: TensorShape) -> bool:
    if shape.ndims is None:
        return True
    if padded.ndims != shape.ndims:
        return False
    return all(p is None or s is None or p >= s for p, s in zip(padded.as_list(), shape.as_list()))


def _default_padding(dtype):
    return b"" if dtype == dtypes.string else np.zeros((), dtype.as_numpy_dtype)


def _flatten_up_to(structure, value) -> list:
    """``value`` flattened like ``structure`` (its leaves may be lists: a shape, not a nest)."""
    if not nest.is_nested(structure):
        return [value]
    items = nest._items(structure)
    if isinstance(value, dict):
        values = [value[key] for key in sorted(value)]
    else:
        values = list(value)
    if len(values) != len(items):
        raise ValueError(f"The two structures don't have the same sequence length. Input structure has length "
                         f"{len(values)}, while shallow structure has length {len(items)}.")
    return [leaf for item, v in zip(items, values) for leaf in _flatten_up_to(item, v)]
