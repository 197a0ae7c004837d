"""The TF1 namespace (``tf.*``, ``tf.nn.*``, ``tf.train.*``...) assembled from the modules'
export lists. ``tfc`` and ``tfc.compat.v1`` both expose it."""
from __future__ import annotations

import importlib
import sys
import types

_OP_MODULES = [
    "tfc.frontend.ops.constant_op", "tfc.frontend.ops.math_ops", "tfc.frontend.ops.nn_ops",
    "tfc.frontend.ops.array_ops", "tfc.frontend.ops.concat_ops", "tfc.frontend.ops.selection_ops",
    "tfc.frontend.ops.slicing", "tfc.frontend.ops.control_flow_ops", "tfc.frontend.ops.random_ops",
    "tfc.frontend.ops.state_ops", "tfc.frontend.variables", "tfc.frontend.variable_scope",
    "tfc.frontend.initializers", "tfc.frontend.graph_io", "tfc.frontend.gradients",
    "tfc.frontend.ops.extra_ops", "tfc.frontend.control_flow", "tfc.frontend.ops.functional_ops",
    "tfc.frontend.tensor_array", "tfc.frontend.map_fn", "tfc.frontend.rnn", "tfc.frontend.dynamic_rnn",
    "tfc.frontend.clip_ops", "tfc.frontend.embedding_ops", "tfc.frontend.stack_ops", "tfc.frontend.check_ops",
    "tfc.frontend.tf_logging", "tfc.frontend.ops.scatter_ops", "tfc.frontend.ops.topk_ops", "tfc.frontend.ops.dynamic_shape_ops", "tfc.frontend.ops.matrix_ops",
    "tfc.frontend.ops.sharded_save_ops", "tfc.frontend.ops.einsum_ops",
    "tfc.frontend.ops.logging_ops", "tfc.frontend.ops.image_resize_ops", "tfc.frontend.ops.random_extra_ops",
    "tfc.frontend.ops.nn_extra_ops", "tfc.frontend.ops.segment_extra_ops",
    "tfc.frontend.script_ops", "tfc.frontend.ops.string_ops", "tfc.frontend.ops.string_hash_ops",
    "tfc.frontend.lookup_ops", "tfc.frontend.data_flow_ops",
    "tfc.frontend.sparse_tensor", "tfc.frontend.ops.sparse_ops", "tfc.frontend.ops.string_split_ops",
    "tfc.frontend.ops.sparse_ops_extra", "tfc.frontend.ops.math_extra_ops",
    "tfc.frontend.ops.nn_misc_ops",  # swish, crelu, depth_to_space, pool wrappers, max_pool_with_argmax...
    "tfc.frontend.python_gradients",  # tf.RegisterGradient, NotDifferentiable, AggregationMethod
    "tfc.frontend.versions", "tfc.frontend.check_ops_extra",  # tf.VERSION...; tf.assert_near, assert_proper_iterable
    "tfc.frontend.ops.image_extra_ops", "tfc.frontend.ops.string_extra_ops",  # more tf.image, tf.strings
    "tfc.frontend.trackable",  # tf.Module (object-based checkpoints)
    "tfc.frontend.file_io",  # tf.read_file, write_file, matching_files (tf.gfile: below)
    "tfc.frontend.ops.csv_ops",  # tf.decode_csv
]

# Sub-namespaces (tf.train, tf.summary...): each gathers the export lists of several
# modules; a module that does not exist yet is skipped.
_NAMESPACES = {
    "train": [("tfc.frontend.train", "EXPORTS"), ("tfc.frontend.train.more_optimizers", "EXPORTS"),
              ("tfc.frontend.train.moving_averages", "EXPORTS"), ("tfc.frontend.saver", "EXPORTS"),
              ("tfc.frontend.graph_io", "TRAIN_EXPORTS"), ("tfc.frontend.summary", "TRAIN_EXPORTS"),
              ("tfc.distributed", "TRAIN_EXPORTS"), ("tfc.frontend.train.checkpoint", "EXPORTS")],
    "summary": [("tfc.frontend.summary", "EXPORTS")],
    "layers": [("tfc.frontend.layers", "EXPORTS")],
    "losses": [("tfc.frontend.losses", "EXPORTS")],
    "metrics": [("tfc.frontend.metrics", "EXPORTS")],
    "data": [("tfc.frontend.data", "EXPORTS")],
    "app": [("tfc.frontend.app", "EXPORTS")],
    "flags": [("tfc.frontend.flags", "EXPORTS")],
    "debugging": [("tfc.frontend.check_ops", "DEBUGGING_EXPORTS"), ("tfc.frontend.ops.topk_ops", "DEBUGGING_EXPORTS"),
                  ("tfc.frontend.check_ops_extra", "DEBUGGING_EXPORTS"),
                  ("tfc.frontend.ops.math_extra_ops", "DEBUGGING_EXPORTS")],
    "version": [("tfc.frontend.versions", "VERSION_EXPORTS")],
    "logging": [("tfc.frontend.tf_logging", "EXPORTS")],
    "linalg": [("tfc.frontend.ops.matrix_ops", "LINALG_EXPORTS"), ("tfc.frontend.ops.einsum_ops", "LINALG_EXPORTS")],
    "graph_util": [("tfc.frontend.graph_util", "EXPORTS")],
    "saved_model": [("tfc.frontend.saved_model", "EXPORTS")],
    "strings": [("tfc.frontend.ops.string_ops", "STRINGS_EXPORTS"),
                ("tfc.frontend.ops.string_hash_ops", "STRINGS_EXPORTS"),
                ("tfc.frontend.ops.string_split_ops", "STRINGS_EXPORTS"),
                ("tfc.frontend.ops.string_extra_ops", "STRINGS_EXPORTS")],
    "lookup": [("tfc.frontend.lookup_ops", "LOOKUP_EXPORTS")],
    "queue": [("tfc.frontend.data_flow_ops", "QUEUE_EXPORTS")],
    "sparse": [("tfc.frontend.sparse_tensor", "SPARSE_EXPORTS"), ("tfc.frontend.ops.sparse_ops", "SPARSE_EXPORTS"),
               ("tfc.frontend.ops.sparse_ops_extra", "SPARSE_EXPORTS")],
    "gfile": [("tfc.frontend.file_io", "GFILE_EXPORTS")],
    "image": [("tfc.frontend.image_ops", "EXPORTS"), ("tfc.frontend.ops.image_resize_ops", "IMAGE_EXPORTS"),
              ("tfc.frontend.ops.image_extra_ops", "IMAGE_EXPORTS")],
}

_CACHE: dict = {}


def _namespace(name: str, values: dict) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(values)
    sys.modules.setdefault(name, module)
    return module


def _exports(module, list_name: str) -> dict:
    names = getattr(module, list_name, None) or []
    if isinstance(names, dict):
        return dict(names)
    return {n: getattr(module, n) for n in names}


def build() -> dict:
    """Every public name of the TF1 API, as a dict (built once)."""
    if _CACHE:
        return _CACHE
    from tfc import protos
    from tfc.frontend import convert, device, dtypes, errors, graph, tensor_shape
    from tfc.runtime import session

    api: dict = {}
    nn: dict = {}
    math: dict = {}
    random: dict = {}
    for module_name in _OP_MODULES:
        module = importlib.import_module(module_name)
        api.update(_exports(module, "TF_EXPORTS"))
        nn.update(_exports(module, "NN_EXPORTS"))
        math.update(_exports(module, "MATH_EXPORTS"))
        random.update(_exports(module, "RANDOM_EXPORTS"))
    for name in ("float16", "half", "float32", "float64", "double", "bfloat16", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "bool", "string", "complex64", "complex128", "resource",
                 "variant", "DType", "as_dtype"):
        api[name] = getattr(dtypes, name)
    for ref_type in dtypes._BY_NAME.values():
        if ref_type.is_ref_dtype:
            api[ref_type.name] = ref_type
    api.update({
        "Graph": graph.Graph, "Operation": graph.Operation, "Tensor": graph.Tensor, "GraphKeys": graph.GraphKeys,
        "get_default_graph": graph.get_default_graph, "reset_default_graph": graph.reset_default_graph,
        "get_default_session": graph.get_default_session, "name_scope": graph.name_scope,
        "control_dependencies": graph.control_dependencies, "device": graph.device,
        "colocate_with": graph.colocate_with, "init_scope": graph.init_scope,
        "add_to_collection": graph.add_to_collection, "add_to_collections": graph.add_to_collections,
        "get_collection": graph.get_collection, "get_collection_ref": graph.get_collection_ref,
        "TensorShape": tensor_shape.TensorShape, "Dimension": tensor_shape.Dimension,
        "dimension_value": tensor_shape.dimension_value, "dimension_at_index": tensor_shape.dimension_at_index,
        "DeviceSpec": device.DeviceSpec, "is_tensor": convert.is_tensor,
        "convert_to_tensor": convert.convert_to_tensor,
        "register_tensor_conversion_function": convert.register_tensor_conversion_function,
        "Session": session.Session, "InteractiveSession": session.InteractiveSession,
        "ConfigProto": protos.ConfigProto, "GPUOptions": protos.GPUOptions, "GraphOptions": protos.GraphOptions,
        "RunOptions": protos.RunOptions, "RunMetadata": protos.RunMetadata, "GraphDef": protos.GraphDef,
        "NodeDef": protos.NodeDef, "AttrValue": protos.AttrValue, "TensorProto": protos.TensorProto,
        "newaxis": None, "errors": errors, "dtypes": dtypes,
    })
    nn["rnn_cell"] = _namespace("tfc.nn.rnn_cell", _exports(importlib.import_module("tfc.frontend.rnn_cell"),
                                                             "EXPORTS"))
    api["nn"] = _namespace("tfc.nn", nn)
    api["math"] = _namespace("tfc.math", math)
    api["random"] = _namespace("tfc.random", random)
    api["initializers"] = _namespace("tfc.initializers", _exports(
        importlib.import_module("tfc.frontend.initializers"), "INITIALIZERS_EXPORTS"))
    for name, sources in _NAMESPACES.items():
        values: dict = {}
        for module_name, list_name in sources:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as e:
                if e.name != module_name:
                    raise
                continue
            values.update(_exports(module, list_name))
        if values:
            api[name] = _namespace(f"tfc.{name}", values)
    try:
        api["python"] = importlib.import_module("tfc.python")
    except ModuleNotFoundError as e:
        if e.name != "tfc.python":
            raise
    from tfc import compile_api

    api["compile"] = compile_api.compile
    # -- eager --
    # tf.enable_eager_execution, tf.executing_eagerly, tf.GradientTape, tf.function and
    # tf.compat.v1 (tfc/frontend/eager). The TF1 namespace has no tf.contrib; TF1's eager
    # names are the module tfc/contrib/eager.py (``import tfc.contrib.eager as tfe``).
    from tfc.frontend import eager as _eager

    api.update(_eager.TF_EXPORTS)
    _compat = types.ModuleType("tfc.compat")  # not in sys.modules: tfc.compat is the real package

    def _compat_getattr(name, _module_name="tfc.compat"):
        if name == "v1":
            return importlib.import_module("tfc.compat.v1")
        from tfc._missing import missing

        missing("compat", name, _module_name)

    _compat.__getattr__ = _compat_getattr
    api["compat"] = _compat
    # -- end eager --
    # -- tf.data (graph mode) --
    # tf.data itself comes from _NAMESPACES ("data"); here the TFRecord and tf.train.Example
    # names around it: tf.io, tf.python_io, tf.parse_single_example..., tf.train.Example.
    from tfc.frontend import data as _data

    api.update(_data.TF_EXPORTS)
    api["io"] = _namespace("tfc.io", _data.IO_EXPORTS)
    api["python_io"] = _namespace("tfc.python_io", _data.PYTHON_IO_EXPORTS)
    api["io"].__dict__.update(_exports(importlib.import_module("tfc.frontend.data_flow_ops"), "IO_EXPORTS"))
    file_io = importlib.import_module("tfc.frontend.file_io")
    api["io"].__dict__.update(_exports(file_io, "IO_EXPORTS"))
    api["io"].__dict__.update(_exports(importlib.import_module("tfc.frontend.ops.csv_ops"), "IO_EXPORTS"))
    api["io"].gfile = _namespace("tfc.io.gfile", _exports(file_io, "IO_GFILE_EXPORTS"))
    if "train" in api:
        api["train"].__dict__.update(_data.train_exports())
    # -- end tf.data (graph mode) --
    from tfc import _missing

    _missing.install_all(api)  # tf.nn.foo that TF has and tfc lacks: "tfc does not implement tf.nn.foo yet"
    _CACHE.update(api)
    return _CACHE
