"""tf.train.Saver and TensorFlow-compatible checkpoints.

Follows TensorFlow 1.15 (python/training/saver.py, saving/saveable_object_util.py,
checkpoint_management.py, framework/meta_graph.py): a Saver builds TF's graph

    save/filename/input  Const "model"            save/SaveV2/tensor_names      Const
    save/filename        PlaceholderWithDefault   save/SaveV2/shape_and_slices  Const
    save/Const           PlaceholderWithDefault   save/SaveV2                   SaveV2
    save/control_dependency  Identity (after save/SaveV2)
    save/RestoreV2/tensor_names, save/RestoreV2/shape_and_slices, save/RestoreV2 (on CPU:0)
    save/Assign, save/Assign_1, ...  (one per variable, in checkpoint-key order)
    save/restore_all     NoOp

and ``save``/``restore`` run it with the checkpoint prefix fed to ``save/Const:0``.
SaveV2, RestoreV2 and MergeV2Checkpoints are host ops: their entries below read and
write the files (tfc/frontend/checkpoint_format.py) around the compiled program —
RestoreV2 runs before it (its outputs feed the compiled Assigns), SaveV2 after it (the
program returns the variables' values).

``save`` also writes the MetaGraphDef (``prefix.meta``) and the ``checkpoint`` state file
(CheckpointState in protobuf text format), deleting checkpoints beyond ``max_to_keep``.

While executing eagerly (TF 1.x's eager Saver: ``saver.save(None, prefix)``), there is no
graph to run: ``var_list`` must be given (eager variables, as a list keyed by their names
or a dict keyed by checkpoint names), ``save`` writes the same bundle straight from the
variables' buffers (no ``.meta``: TF writes none in eager mode) and ``restore`` reads it
into them. The files are the same either way, so a checkpoint saved eagerly restores in
a graph and the other way round.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Optional

import numpy as np

from . import dtypes, errors
from . import checkpoint_format as fmt
from .graph import GraphKeys, Operation, Tensor, get_default_graph
from .graph import name_scope as _name_scope
from .registry import Attr, OpType, ShapeError, lookup_op_type, register
from .tensor_shape import TensorShape, unknown_shape

logger = logging.getLogger("tfc")

TF_VERSION = "1.15.0"  # what MetaInfoDef.tensorflow_version claims (TF 1.15 compatible)
OBJECT_GRAPH_PROTO_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _text(value) -> str:
    if isinstance(value, np.ndarray):
        value = value.item() if value.shape == () else value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="surrogateescape")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _strings(value) -> list:
    return [_text(v) for v in np.asarray(value, dtype=object).reshape(-1)]


def _with_op(error: errors.OpError, op) -> errors.OpError:
    return type(error)(None, op, error.message)


# =====================================================================================
# Host ops: SaveV2, RestoreV2, MergeV2Checkpoints (TF's core/ops/io_ops.cc OpDefs)
# =====================================================================================
def _check_rank(tensor, rank: int) -> None:
    ndims = tensor.shape.ndims
    if ndims is not None and ndims != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {ndims}")


def _check_io_inputs(op) -> None:
    """SaveV2/RestoreV2 shape checks: scalar prefix, names and slices vectors of one length per tensor."""
    prefix, names, slices = op.inputs[:3]
    _check_rank(prefix, 0)
    _check_rank(names, 1)
    _check_rank(slices, 1)
    n = names.shape.as_list()[0] if names.shape.ndims == 1 else None
    m = slices.shape.as_list()[0] if slices.shape.ndims == 1 else None
    if n is not None and m is not None and n != m:
        raise ShapeError(f"Dimensions must be equal, but are {n} and {m}")
    count = len(op._attrs["dtypes"])
    if n is not None and n != count:
        raise ShapeError(f"Dimension 0 in both shapes must be equal, but are {n} and {count}")


def _validate_io(op, prefix, names, slices, num_tensors: Optional[int]) -> tuple:
    if np.ndim(prefix) != 0:
        raise errors.InvalidArgumentError(None, op, f"Input prefix should be a scalar tensor, but got "
                                                    f"{list(np.shape(prefix))} instead.")
    if np.ndim(names) != 1 or np.ndim(slices) != 1:
        raise errors.InvalidArgumentError(None, op, "Input tensor_names and shape_and_slices should be an 1-D "
                                                    f"tensors, got {list(np.shape(names))} and "
                                                    f"{list(np.shape(slices))} instead.")
    if np.size(names) != np.size(slices):
        raise errors.InvalidArgumentError(None, op, "tensor_names and shape_and_slices have different number of "
                                                    f"elements: {np.size(names)} vs. {np.size(slices)}")
    if num_tensors is not None and num_tensors != np.size(names):
        raise errors.InvalidArgumentError(None, op, f"Got {np.size(names)} tensor names but {num_tensors} tensors.")
    slice_specs = _strings(slices)
    for name, spec in zip(_strings(names), slice_specs):
        if spec:
            raise errors.UnimplementedError(None, op, f"Tensor {name}: partitioned (sliced) variables are not "
                                                      f"supported by tfc checkpoints (shape_and_slice '{spec}')")
    return _text(prefix), _strings(names)


def _parse_shape_and_slice(spec: str) -> Optional[TensorShape]:
    """The slice's shape for a full-slice spec like ``"3 4 -:-"``; None when unknown."""
    parts = spec.split()
    if len(parts) < 2:
        return None
    try:
        full = [int(p) for p in parts[:-1]]
    except ValueError:
        return None
    extents = parts[-1].split(":")
    if len(extents) != len(full):
        return None
    dims = []
    for size, extent in zip(full, extents):
        if extent == "-":
            dims.append(size)
        else:
            try:
                dims.append(int(extent.split(",")[1]))
            except (IndexError, ValueError):
                return None
    return TensorShape(dims)


@register
class SaveV2(OpType):
    """Writes a V2 checkpoint (``prefix.index``, ``prefix.data-00000-of-00001``)."""

    inputs = ["prefix: string", "tensor_names: string", "shape_and_slices: string", "tensors: dtypes"]
    outputs = []
    attrs = {"dtypes": Attr("list(type)")}
    stateful = True
    host_only = True
    not_differentiable = True

    def infer(op):
        _check_io_inputs(op)
        return []

    def host(op, prefix, tensor_names, shape_and_slices, *tensors):
        path, names = _validate_io(op, prefix, tensor_names, shape_and_slices, len(tensors))
        kinds = op._attrs["dtypes"]
        try:
            fmt.write_bundle(path, [(name, value, dtype) for name, value, dtype in zip(names, tensors, kinds)])
        except errors.OpError as e:
            raise _with_op(e, op) from None
        return []


@register
class RestoreV2(OpType):
    """Reads tensors from a V2 checkpoint; runs before the compiled program."""

    inputs = ["prefix: string", "tensor_names: string", "shape_and_slices: string"]
    outputs = ["tensors: dtypes"]
    attrs = {"dtypes": Attr("list(type)")}
    stateful = True
    host_only = True
    not_differentiable = True

    def infer(op):
        from .tensor_util import constant_value

        _check_io_inputs(op)
        count = len(op._attrs["dtypes"])
        specs = constant_value(op.inputs[2])
        if specs is None:
            return [unknown_shape()] * count
        specs = _strings(specs)
        if len(specs) != count:
            raise ShapeError("The number of shape_and_slice doesn't match tensor outputs.")
        return [unknown_shape() if not s else (_parse_shape_and_slice(s) or unknown_shape()) for s in specs]

    def host(op, prefix, tensor_names, shape_and_slices):
        path, names = _validate_io(op, prefix, tensor_names, shape_and_slices, None)
        kinds = op._attrs["dtypes"]
        if len(names) != len(kinds):
            raise errors.InvalidArgumentError(None, op, f"Got {len(names)} tensor names but {len(kinds)} dtypes")
        return _read_tensors(path, names, kinds, op)


def _read_tensors(path: str, names: list, kinds: list, op=None) -> list:
    """RestoreV2's values: each key's tensor, checked against the dtype wanted."""
    try:
        reader = _open_bundle(path)
        out = []
        for name, want in zip(names, kinds):
            stored = reader.dtype(name)
            if stored != want:
                raise errors.InvalidArgumentError(
                    None, None, f"tensor_name = {name}; expected dtype {want.name} does not equal original "
                                f"dtype {stored.name}")
            out.append(reader.lookup(name))
    except errors.OpError as e:
        raise _with_op(e, op) from None
    return out


@register
class MergeV2Checkpoints(OpType):
    """Merges the per-shard bundles of a sharded save into one checkpoint."""

    inputs = ["checkpoint_prefixes: string", "destination_prefix: string"]
    outputs = []
    attrs = {"delete_old_dirs": Attr("bool", True)}
    stateful = True
    host_only = True
    not_differentiable = True

    def infer(op):
        _check_rank(op.inputs[0], 1)
        _check_rank(op.inputs[1], 0)
        return []

    def host(op, checkpoint_prefixes, destination_prefix):
        try:
            merge_bundles(_strings(checkpoint_prefixes), _text(destination_prefix),
                          delete_old_dirs=op._attrs["delete_old_dirs"])
        except errors.OpError as e:
            raise _with_op(e, op) from None
        return []


def _open_bundle(prefix: str) -> fmt.BundleReader:
    """BundleReader, with TF's message when no checkpoint has that prefix."""
    if not os.path.exists(fmt.index_filename(prefix)):
        if os.path.isfile(prefix):
            _reject_non_v2_file(prefix)
        raise errors.NotFoundError(None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
                                               f"matching files for {prefix}")
    return fmt.BundleReader(prefix)


def _reject_non_v2_file(path: str) -> None:
    """A file given where a checkpoint prefix belongs: say what it is, like TF's V1 reader."""
    if path.endswith(".index") and os.path.isfile(path):
        raise errors.DataLossError(None, None, f"Unable to open table file {path}: Data loss: this is the index of a "
                                               f"V2 checkpoint, not a checkpoint prefix: use {path[:-len('.index')]}")
    with open(path, "rb") as f:
        data = f.read()
    try:
        fmt.read_table(data, path)
    except errors.DataLossError as e:
        detail = e.message.split(": ", 1)[-1]
        raise errors.DataLossError(None, None, f"Unable to open table file {path}: Data loss: {detail}: perhaps "
                                               "your file is in a different file format and you need to use a "
                                               "different restore operator?") from None
    raise errors.UnimplementedError(None, None, f"{path} looks like a V1 checkpoint (a single table file); tfc "
                                                "reads only V2 checkpoints (prefix.index + prefix.data-*)")


def merge_bundles(prefixes: list, merged_prefix: str, delete_old_dirs: bool = True) -> None:
    """TF's MergeBundles: one index over the shards' data files, renamed to the merged prefix."""
    from tfc.protos import BundleEntryProto, BundleHeaderProto

    num_shards = 0
    entries: dict = {}
    shard_files: dict = {}
    header0 = None
    for prefix in prefixes:
        reader = fmt.BundleReader(prefix)
        header = reader.header
        if header0 is None:
            header0 = header
        elif header.endianness != header0.endianness:
            raise errors.InvalidArgumentError(None, None, "Merging bundles with conflicting endianness; inputs "
                                                          "corrupted?")
        num_shards += header.num_shards
        for key in reader.keys():
            if key in entries:
                raise errors.InvalidArgumentError(None, None, f"Duplicate tensor keyed by {key} encountered, when "
                                                              f"merging prefix: {prefix}")
            entry = BundleEntryProto()
            entry.CopyFrom(reader.entry(key))
            source = fmt.data_filename(prefix, entry.shard_id, header.num_shards)
            entry.shard_id = shard_files.setdefault(source, len(shard_files))
            entries[key] = entry
    parent = os.path.dirname(merged_prefix)
    if parent:
        os.makedirs(parent, exist_ok=True)
    for source, shard_id in shard_files.items():
        os.replace(source, fmt.data_filename(merged_prefix, shard_id, len(shard_files)))
    merged = BundleHeaderProto(num_shards=num_shards, endianness=header0.endianness if header0 else 0)
    if header0 is not None:
        merged.version.CopyFrom(header0.version)
    table = fmt.TableBuilder()
    table.add(fmt.HEADER_KEY, merged.SerializeToString())
    for key in sorted(entries, key=lambda k: k.encode()):
        table.add(key.encode(), entries[key].SerializeToString())
    fmt.atomic_write(fmt.index_filename(merged_prefix), table.finish())
    for prefix in prefixes:
        try:
            os.remove(fmt.index_filename(prefix))
        except OSError:
            pass
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(prefix))
            except OSError:
                pass


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name=None) -> Operation:
    """gen_io_ops.save_v2: a SaveV2 op (its list arguments converted inside its scope)."""
    from .convert import convert_to_tensor

    graph = get_default_graph()
    with _name_scope(name, "SaveV2") as scope:
        prefix = convert_to_tensor(prefix, dtype=dtypes.string)
        names = convert_to_tensor(_listed(tensor_names), dtype=dtypes.string, name="tensor_names")
        slices = convert_to_tensor(_listed(shape_and_slices), dtype=dtypes.string, name="shape_and_slices")
        tensors = [convert_to_tensor(t, as_ref=True) if _is_ref_like(t) else convert_to_tensor(t) for t in tensors]
        kinds = [t.dtype.base_dtype for t in tensors]
        return graph.create_op("SaveV2", [prefix, names, slices] + tensors, name=scope, attrs={"dtypes": kinds})


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes_, name=None) -> list:
    """gen_io_ops.restore_v2: the restored tensors (one output per dtype)."""
    from .convert import convert_to_tensor

    graph = get_default_graph()
    with _name_scope(name, "RestoreV2") as scope:
        prefix = convert_to_tensor(prefix, dtype=dtypes.string)
        names = convert_to_tensor(_listed(tensor_names), dtype=dtypes.string, name="tensor_names")
        slices = convert_to_tensor(_listed(shape_and_slices), dtype=dtypes.string, name="shape_and_slices")
        kinds = [dtypes.as_dtype(d).base_dtype for d in dtypes_]
        op = graph.create_op("RestoreV2", [prefix, names, slices], name=scope, attrs={"dtypes": kinds})
        return list(op.outputs)


def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs=True, name=None) -> Operation:
    from .convert import convert_to_tensor

    graph = get_default_graph()
    with _name_scope(name, "MergeV2Checkpoints") as scope:
        prefixes = convert_to_tensor(checkpoint_prefixes, dtype=dtypes.string)
        destination = convert_to_tensor(destination_prefix, dtype=dtypes.string)
        return graph.create_op("MergeV2Checkpoints", [prefixes, destination], name=scope,
                               attrs={"delete_old_dirs": delete_old_dirs})


def _listed(value):
    return list(value) if isinstance(value, tuple) else value


def _is_ref_like(value) -> bool:
    from .variables import Variable

    return isinstance(value, Variable) or (isinstance(value, Tensor) and value.dtype.is_ref_dtype)


# =====================================================================================
# Saveables (saveable_object_util)
# =====================================================================================
class SaveSpec:
    """What to save for one tensor: ``tensor`` under checkpoint key ``name``."""

    def __init__(self, tensor, slice_spec: str, name: str, dtype=None, device=None):
        self.tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        self.dtype = dtype if dtype is not None else tensor.dtype.base_dtype
        self.device = device if device is not None else tensor.device


class SaveableObject:
    """Something the Saver can save and restore: specs plus ``restore(tensors, shapes)``."""

    def __init__(self, op, specs: list, name: str):
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def device(self) -> str:
        return self.specs[0].device

    def restore(self, restored_tensors, restored_shapes):
        raise NotImplementedError


class ReferenceVariableSaveable(SaveableObject):
    """A TF1 (ref) variable: saved from its ref tensor, restored with an Assign."""

    def __init__(self, var, slice_spec: str, name: str):
        super().__init__(var, [SaveSpec(var, slice_spec, name)], name)

    def restore(self, restored_tensors, restored_shapes):
        from .ops.array_ops import reshape
        from .ops.state_ops import assign

        restored = restored_tensors[0]
        if restored_shapes is not None:
            restored = reshape(restored, restored_shapes[0])
        return assign(self.op, restored,
                      validate_shape=restored_shapes is None and self.op.get_shape().is_fully_defined())


def _tensor_comes_from_variable(value) -> bool:
    return isinstance(value, Tensor) and value.op.type in ("Variable", "VariableV2", "AutoReloadVariable",
                                                           "VarHandleOp")


def op_list_to_dict(op_list, convert_variable_to_tensor=True) -> dict:
    """A list of variables -> {variable op name: ref tensor}, as TF keys them."""
    from .convert import convert_to_tensor

    if not isinstance(op_list, (list, tuple, set)):
        raise TypeError(f"Variables to save should be passed in a dict or a list: {op_list}")
    op_list = sorted(op_list, key=lambda x: x.name)
    names_to_saveables: dict = {}
    for var in op_list:
        if isinstance(var, SaveableObject):
            names_to_saveables[var.name] = var
            continue
        if convert_variable_to_tensor:
            try:
                var = convert_to_tensor(var, as_ref=True)
            except (TypeError, ValueError):
                raise TypeError(f"Variable to save is not a Variable: {var}") from None
            if not _tensor_comes_from_variable(var):
                raise TypeError(f"Variable to save is not a Variable: {var}")
        name = var.op.name
        if name in names_to_saveables:
            raise ValueError(f"At least two variables have the same name: {name}")
        names_to_saveables[name] = var
    return names_to_saveables


def saveable_objects_for_op(op, name: str):
    from .convert import convert_to_tensor

    if not isinstance(name, str):
        raise TypeError("names_to_saveables must be a dict mapping string names to trackable operations. Name is "
                        f"not a string: {name}")
    if isinstance(op, SaveableObject):
        yield op
        return
    if isinstance(op, (list, tuple)):
        raise NotImplementedError(f"Saving the partitioned variable {name} (a list of slices) is not supported by "
                                  "tfc")
    try:
        variable = convert_to_tensor(op, as_ref=True)
    except (TypeError, ValueError):
        variable = op
    if not _tensor_comes_from_variable(variable):
        raise TypeError("names_to_saveables must be a dict mapping string names to Tensors/Variables. Not a "
                        f"variable: {variable}")
    yield ReferenceVariableSaveable(variable, "", name)


def validate_and_slice_inputs(names_to_saveables) -> list:
    if not isinstance(names_to_saveables, dict):
        names_to_saveables = op_list_to_dict(names_to_saveables)
    saveables = []
    seen: list = []
    for name, op in sorted(names_to_saveables.items(), key=lambda x: x[0]):
        for saveable in saveable_objects_for_op(op, name):
            if any(saveable.op is s for s in seen):
                raise ValueError(f"The same saveable will be restored with two names: {saveable.name}")
            saveables.append(saveable)
            seen.append(saveable.op)
    return saveables


def _all_saveable_objects(scope=None) -> list:
    graph = get_default_graph()
    return graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope) + \
        graph.get_collection(GraphKeys.SAVEABLE_OBJECTS, scope)


# =====================================================================================
# Saver builders
# =====================================================================================
def _saver_def_class():
    from tfc.protos import SaverDef

    return SaverDef


class BaseSaverBuilder:
    """Builds the save/restore graph (one RestoreV2 per variable)."""

    SaveSpec = SaveSpec
    SaveableObject = SaveableObject
    VariableSaveable = ReferenceVariableSaveable

    def __init__(self, write_version=2):
        self._write_version = write_version

    def save_op(self, filename_tensor, saveables):
        tensor_names, tensors, tensor_slices = [], [], []
        for saveable in saveables:
            for spec in saveable.specs:
                tensor_names.append(spec.name)
                tensors.append(spec.tensor)
                tensor_slices.append(spec.slice_spec)
        return save_v2(filename_tensor, tensor_names, tensor_slices, tensors)

    def bulk_restore(self, filename_tensor, saveables, preferred_shard, restore_sequentially):
        from .graph import device

        all_tensors = []
        for saveable in saveables:
            with device(_set_cpu0(saveable.device) if saveable.device else None):
                all_tensors.extend(self.restore_op(filename_tensor, saveable, preferred_shard))
        return all_tensors

    def restore_op(self, filename_tensor, saveable, preferred_shard):
        return [restore_v2(filename_tensor, [spec.name], [spec.slice_spec], [spec.dtype])[0]
                for spec in saveable.specs]

    def _AddSaveOps(self, filename_tensor, saveables):  # noqa: N802 - TF's name
        from .ops.control_flow_ops import with_dependencies

        save = self.save_op(filename_tensor, saveables)
        return with_dependencies([save], filename_tensor)

    def _AddRestoreOps(self, filename_tensor, saveables, restore_sequentially, reshape,  # noqa: N802
                       preferred_shard=-1, name="restore_all"):
        from .ops.array_ops import shape as shape_op
        from .ops.control_flow_ops import group

        all_tensors = self.bulk_restore(filename_tensor, saveables, preferred_shard, restore_sequentially)
        assign_ops = []
        idx = 0
        self._restored_shapes = []  # (checkpoint key, variable, Assign op): to explain shape mismatches
        for saveable in saveables:
            shapes = None
            if reshape:
                shapes = []
                for spec in saveable.specs:
                    value_shape = spec.tensor.get_shape()
                    shapes.append(value_shape if value_shape.is_fully_defined() else shape_op(spec.tensor))
            tensors = all_tensors[idx:idx + len(saveable.specs)]
            idx += len(saveable.specs)
            restore = saveable.restore(tensors, shapes)
            assign_ops.append(restore)
            if shapes is None and len(saveable.specs) == 1:
                self._restored_shapes.append((saveable.specs[0].name, saveable.specs[0].tensor,
                                              getattr(restore, "op", restore)))
        return group(*assign_ops, name=name)

    def build(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
              keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, filename="model"):
        return self._build_internal(names_to_saveables, reshape=reshape, sharded=sharded, max_to_keep=max_to_keep,
                                    keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours, name=name,
                                    restore_sequentially=restore_sequentially, filename=filename)

    def _build_internal(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
                        keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                        filename="model", build_save=True, build_restore=True):
        from .ops.array_ops import placeholder_with_default

        if not build_save or not build_restore:
            raise ValueError("save and restore operations need to be built together  when eager execution is not "
                             "enabled.")
        saveables = validate_and_slice_inputs(names_to_saveables)
        if max_to_keep is None:
            max_to_keep = 0
        with _name_scope(name, "save", [saveable.op for saveable in saveables]):
            filename_tensor = placeholder_with_default(filename or "model", shape=(), name="filename")
            # Keep the name "Const" for backwards compatibility (TF's comment).
            filename_tensor = placeholder_with_default(filename_tensor, shape=(), name="Const")
            # One layout for sharded and unsharded savers: tfc runs on one device, so a
            # sharded save would write the same single shard (TF's observable result).
            save_tensor = self._AddSaveOps(filename_tensor, saveables)
            restore_op = self._AddRestoreOps(filename_tensor, saveables, restore_sequentially, reshape)
        return _saver_def_class()(filename_tensor_name=filename_tensor.name, save_tensor_name=save_tensor.name,
                                  restore_op_name=restore_op.name, max_to_keep=max_to_keep, sharded=sharded,
                                  keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                                  version=self._write_version)


class BulkSaverBuilder(BaseSaverBuilder):
    """TF 1.15's default builder: one RestoreV2 (on CPU:0) for every variable."""

    def bulk_restore(self, filename_tensor, saveables, preferred_shard, restore_sequentially):
        from .graph import device

        specs = [(spec.name, spec.slice_spec, spec.dtype) for saveable in saveables for spec in saveable.specs]
        names, slices, kinds = zip(*specs)
        with device("cpu:0"):
            return restore_v2(filename_tensor, names, slices, kinds)


def _set_cpu0(device_string: str) -> str:
    from .device import DeviceSpec

    spec = DeviceSpec.from_string(device_string)
    spec.device_type = "CPU"
    spec.device_index = 0
    return spec.to_string()


# =====================================================================================
# Saver
# =====================================================================================
def _is_integral(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _nonempty(var_list) -> bool:
    """``bool(var_list)`` without asking a Variable for its truth value."""
    if var_list is None:
        return False
    if isinstance(var_list, (list, tuple, dict, set)):
        return len(var_list) > 0
    return True


def _global_step_value(sess, global_step_tensor) -> int:
    """training_util.global_step: the int value of a step tensor, variable or name."""
    if _executing_eagerly():
        return int(global_step_tensor.numpy())
    return int(sess.run(global_step_tensor))


def _executing_eagerly() -> bool:
    return getattr(get_default_graph(), "_is_eager", False)


def _is_eager_variable(value) -> bool:
    return hasattr(value, "_handle_name") and hasattr(value, "_buffer")


def _eager_saveables(var_list) -> list:
    """[(checkpoint key, eager variable)] sorted by key (TF's eager op_list_to_dict: a
    list is keyed by the variables' names)."""
    if isinstance(var_list, dict):
        items = []
        for name, var in var_list.items():
            if not isinstance(name, str):
                raise TypeError("names_to_saveables must be a dict mapping string names to trackable operations. "
                                f"Name is not a string: {name}")
            if not _is_eager_variable(var):
                raise TypeError("names_to_saveables must be a dict mapping string names to Tensors/Variables. Not "
                                f"a variable: {var}")
            items.append((name, var))
    else:
        if not isinstance(var_list, (list, tuple, set)):
            raise TypeError(f"Variables to save should be passed in a dict or a list: {var_list}")
        items, seen = [], set()
        for var in sorted(var_list, key=lambda v: v.name):
            if not _is_eager_variable(var):
                raise TypeError(f"Variable to save is not a Variable: {var}")
            name = var._handle_name
            if name in seen:
                raise ValueError(f"At least two variables have the same name: {name}")
            seen.add(name)
            items.append((name, var))
    return sorted(items, key=lambda item: item[0])


class Saver:
    """tf.train.Saver: saves and restores variables in TF's V2 checkpoint format."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, saver_def=None,
                 builder=None, defer_build=False, allow_empty=False, write_version=2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        if defer_build and _nonempty(var_list):
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either set defer_build=False "
                             "or var_list=None.")
        if write_version != 2:
            logger.warning("tfc writes only V2 checkpoints (TF's default format); write_version=%s is ignored",
                           write_version)
            write_version = 2
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._builder = builder
        self._is_built = False
        self._allow_empty = allow_empty
        self._is_empty = None
        self._write_version = write_version
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._last_checkpoints: list = []
        self._checkpoints_to_be_deleted: list = []
        self._restored_shapes: list = []
        eager = _executing_eagerly()
        if eager and var_list is None:
            raise RuntimeError("When eager execution is enabled, `var_list` must specify a list or dict of variables "
                               "to save")
        if not defer_build and not eager:
            self.build()
        if self.saver_def:
            self._check_saver_def()
            self._write_version = self.saver_def.version
        self._save_relative_paths = save_relative_paths
        if eager and not self.saver_def:  # what save/restore read of it (no graph to name)
            self.saver_def = _saver_def_class()(max_to_keep=max_to_keep or 0, sharded=sharded, version=write_version,
                                                keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours)
            self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600

    # -- building -------------------------------------------------------------------------
    def build(self) -> None:
        self._build(self._filename, build_save=True, build_restore=True)

    def _build(self, checkpoint_path, build_save, build_restore) -> None:
        if self._is_built:
            return
        self._is_built = True
        if not self.saver_def:
            if self._builder is None:
                self._builder = BulkSaverBuilder(self._write_version)
            if self._var_list is None:
                self._var_list = _all_saveable_objects()
            if not _nonempty(self._var_list):
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            self._builder._restored_shapes = []
            self.saver_def = self._builder._build_internal(
                self._var_list, reshape=self._reshape, sharded=self._sharded, max_to_keep=self._max_to_keep,
                keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours, name=self._name,
                restore_sequentially=self._restore_sequentially, filename=checkpoint_path,
                build_save=build_save, build_restore=build_restore)
            self._restored_shapes = list(getattr(self._builder, "_restored_shapes", []))
        elif self._name:
            # The name doubles as the import scope of a saver_def (TF overloads it too).
            self.saver_def.filename_tensor_name = _prepend_name_scope(self.saver_def.filename_tensor_name, self._name)
            self.saver_def.save_tensor_name = _prepend_name_scope(self.saver_def.save_tensor_name, self._name)
            self.saver_def.restore_op_name = _prepend_name_scope(self.saver_def.restore_op_name, self._name)
        self._check_saver_def()
        self._next_checkpoint_time = time.time() + self.saver_def.keep_checkpoint_every_n_hours * 3600

    def _check_saver_def(self) -> None:
        if not isinstance(self.saver_def, _saver_def_class()):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {self.saver_def}")
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self):
        return self.saver_def

    def to_proto(self, export_scope=None):
        if export_scope is None:
            return self.saver_def
        names = (self.saver_def.filename_tensor_name, self.saver_def.save_tensor_name,
                 self.saver_def.restore_op_name)
        if not all(n.startswith(export_scope) for n in names):
            return None
        saver_def = _saver_def_class()()
        saver_def.CopyFrom(self.saver_def)
        saver_def.filename_tensor_name = _strip_name_scope(saver_def.filename_tensor_name, export_scope)
        saver_def.save_tensor_name = _strip_name_scope(saver_def.save_tensor_name, export_scope)
        saver_def.restore_op_name = _strip_name_scope(saver_def.restore_op_name, export_scope)
        return saver_def

    @staticmethod
    def from_proto(saver_def, import_scope=None):
        return Saver(saver_def=saver_def, name=import_scope)

    # -- checkpoint bookkeeping -----------------------------------------------------------
    @property
    def last_checkpoints(self) -> list:
        """Not-yet-deleted checkpoint prefixes, oldest first."""
        return [p[0] for p in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints) -> None:
        assert isinstance(last_checkpoints, list)
        self._last_checkpoints = [(s, np.inf) for s in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        assert isinstance(last_checkpoints_with_time, list)
        self._last_checkpoints = last_checkpoints_with_time

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        with_mtimes = []
        for path in checkpoint_paths:
            mtime = get_checkpoint_mtimes([path])
            if mtime:
                with_mtimes.append((path, mtime[0]))
        self.set_last_checkpoints_with_time(with_mtimes)

    def _RecordLastCheckpoint(self, latest_save_path) -> None:  # noqa: N802 - TF's name
        if not self.saver_def.max_to_keep:
            return
        for p in list(self._last_checkpoints):
            if latest_save_path == p[0]:
                self._last_checkpoints.remove(p)
        self._last_checkpoints.append((latest_save_path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _MaybeDeleteOldCheckpoints(self, meta_graph_suffix="meta") -> None:  # noqa: N802
        if self._checkpoints_to_be_deleted:
            p = self._checkpoints_to_be_deleted.pop(0)
            if p[1] > self._next_checkpoint_time:  # keep_checkpoint_every_n_hours
                self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
                return
            try:
                remove_checkpoint(p[0], self.saver_def.version, meta_graph_suffix)
            except Exception as e:  # noqa: BLE001 - TF ignores (and logs) failed deletions
                logger.warning("Ignoring: %s", e)

    # -- save and restore -----------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        """Save the variables; returns the checkpoint prefix (``save_path-<step>``)."""
        del save_debug_info
        eager = _executing_eagerly()
        if not self._is_built and not eager:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = _text(save_path)
        if global_step is not None:
            if not _is_integral(global_step):
                global_step = _global_step_value(sess, global_step)
            checkpoint_file = "%s-%d" % (save_path, global_step)
            if self._pad_step_number:
                checkpoint_file = "%s-%s" % (save_path, "{:08d}".format(global_step))
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                                 f"'{save_path}'")
        if not eager and not (hasattr(sess, "run") and hasattr(sess, "graph")):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_path_parent = os.path.dirname(save_path)
        model_checkpoint_path = None
        if eager:
            self._eager_check_empty()
        if not self._is_empty:
            try:
                if eager:
                    model_checkpoint_path = self._save_eager(checkpoint_file)
                else:
                    model_checkpoint_path = sess.run(self.saver_def.save_tensor_name,
                                                     {self.saver_def.filename_tensor_name: checkpoint_file})
                model_checkpoint_path = _text(model_checkpoint_path)
                if write_state:
                    self._RecordLastCheckpoint(model_checkpoint_path)
                    update_checkpoint_state_internal(
                        save_dir=save_path_parent, model_checkpoint_path=model_checkpoint_path,
                        all_model_checkpoint_paths=self.last_checkpoints, latest_filename=latest_filename,
                        save_relative_paths=self._save_relative_paths)
                    self._MaybeDeleteOldCheckpoints(meta_graph_suffix=meta_graph_suffix)
            except (errors.FailedPreconditionError, errors.NotFoundError) as exc:
                # TF checks the parent directory (an empty one means the working directory).
                if not os.path.isdir(save_path_parent or os.curdir):
                    raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.") from None
                raise
        if write_meta_graph and not eager:  # (no graph to write in eager mode)
            meta_file = meta_graph_filename(checkpoint_file, meta_graph_suffix=meta_graph_suffix)
            with sess.graph.as_default():
                self.export_meta_graph(meta_file, strip_default_attrs=strip_default_attrs)
        if self._is_empty:
            return None
        return model_checkpoint_path

    def restore(self, sess, save_path) -> None:
        """Restore the variables from the checkpoint with prefix ``save_path``."""
        eager = _executing_eagerly()
        if eager:
            self._eager_check_empty()
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        checkpoint_prefix = _text(save_path)
        if not checkpoint_exists_internal(checkpoint_prefix):
            raise ValueError("The passed save_path is not a valid checkpoint: " + checkpoint_prefix)
        from . import tf_logging

        tf_logging.info("Restoring parameters from %s", checkpoint_prefix)  # TF's line, on tf.logging
        try:
            if eager:
                self._restore_eager(checkpoint_prefix)
            else:
                sess.run(self.saver_def.restore_op_name, {self.saver_def.filename_tensor_name: checkpoint_prefix})
        except errors.NotFoundError as err:
            # An object-based (tf.train.Checkpoint) checkpoint: restored by the variable names its
            # object graph records, as TF does (tfc/frontend/train/checkpoint.py).
            from .train.checkpoint import restore_object_based_checkpoint_with_saver

            if restore_object_based_checkpoint_with_saver(self, sess, checkpoint_prefix):
                return
            raise _wrap_restore_error_with_msg(err, "a Variable name or other graph key that is missing") from None
        except errors.InvalidArgumentError as err:
            err = self._explain_shape_mismatch(checkpoint_prefix) or err
            raise _wrap_restore_error_with_msg(err, "a mismatch between the current graph and the graph") from None

    # -- eager mode --------------------------------------------------------------------------
    def _eager_check_empty(self) -> None:
        if self._is_empty is None:
            if not _nonempty(self._var_list):
                if not self._allow_empty:
                    raise ValueError("No variables to save")
                self._is_empty = True
            else:
                self._is_empty = False

    def _save_eager(self, checkpoint_file: str) -> str:
        """SaveV2 of the eager variables' values, written now."""
        items = _eager_saveables(self._var_list)
        fmt.write_bundle(checkpoint_file, [(name, var._array, var.dtype.base_dtype) for name, var in items])
        return checkpoint_file

    def _restore_eager(self, prefix: str) -> None:
        """RestoreV2 of every key, then each variable assigned (its shape checked as TF's
        shape_safe_assign_variable_handle does)."""
        items = _eager_saveables(self._var_list)
        values = _read_tensors(prefix, [name for name, _ in items], [var.dtype.base_dtype for _, var in items])
        for (name, var), value in zip(items, values):
            var.shape.assert_is_compatible_with(TensorShape(np.shape(value)))
        for (name, var), value in zip(items, values):
            var._set_value(value)

    def _explain_shape_mismatch(self, prefix: str):
        """TF's Assign error for a variable whose checkpointed shape differs, if that is why."""
        try:
            reader = _open_bundle(prefix)
            for key, variable, assign_op in getattr(self, "_restored_shapes", []):
                if not reader.contains(key) or not variable.shape.is_fully_defined():
                    continue
                stored, wanted = reader.shape(key), variable.shape.as_list()
                if stored != wanted:
                    return errors.InvalidArgumentError(
                        None, assign_op, "Assign requires shapes of both tensors to match. lhs shape= "
                                         f"[{','.join(map(str, wanted))}] rhs shape= [{','.join(map(str, stored))}]")
        except errors.OpError:
            return None
        return None

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False, export_scope=None,
                          clear_devices=False, clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        if _executing_eagerly():
            raise RuntimeError("Exporting/importing meta graphs is not supported when eager execution is enabled. "
                               "No graph exists when eager execution is enabled.")
        graph = get_default_graph()
        return export_meta_graph(filename=filename, graph_def=graph.as_graph_def(add_shapes=True),
                                 saver_def=self.saver_def, collection_list=collection_list, as_text=as_text,
                                 export_scope=export_scope, clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs)


def _wrap_restore_error_with_msg(err, extra_verbiage, hint=""):
    message = ("Restoring from checkpoint failed. This is most likely due to {} from the checkpoint. Please ensure "
               "that you have not altered the graph expected based on the checkpoint. Original error:\n\n{}{}"
               ).format(extra_verbiage, err.message, hint)
    return type(err)(err.node_def, err.op, message)


def _prepend_name_scope(name: str, import_scope: Optional[str]) -> str:
    """ops.prepend_name_scope for op/tensor names (and ^control / loc:@ forms)."""
    if not import_scope:
        return name
    scope = import_scope.rstrip("/")
    match = re.match(r"^(\^|loc:@)?(.*)$", name)
    head, rest = match.group(1) or "", match.group(2)
    return f"{head}{scope}/{rest}"


def _strip_name_scope(name: str, export_scope: Optional[str]) -> str:
    if not export_scope:
        return name
    scope = export_scope.rstrip("/") + "/"
    match = re.match(r"^(\^|loc:@)?(.*)$", name)
    head, rest = match.group(1) or "", match.group(2)
    if rest.startswith(scope):
        rest = rest[len(scope):]
    return f"{head}{rest}"


# =====================================================================================
# The 'checkpoint' state file (CheckpointState, protobuf text format)
# =====================================================================================
def _checkpoint_state_class():
    """CheckpointState (tensorflow/python/training/checkpoint_state.proto)."""
    from tfc.protos import CheckpointState

    return CheckpointState


def VariableDef(**kwargs):  # noqa: N802 - the proto's name
    from tfc.protos import VariableDef as proto

    return proto(**kwargs)


def _variable_to_proto(variable, export_scope=None):
    """RefVariable.to_proto: None when the variable lies outside ``export_scope``."""
    if export_scope and not variable._variable.name.startswith(export_scope):
        return None
    proto = VariableDef(variable_name=_strip_name_scope(variable._variable.name, export_scope))
    if variable._initial_value is not None:
        proto.initial_value_name = _strip_name_scope(variable._initial_value.name, export_scope)
    proto.trainable = variable.trainable
    proto.initializer_name = _strip_name_scope(variable._initializer_op.name, export_scope)
    proto.snapshot_name = _strip_name_scope(variable._snapshot.name, export_scope)
    return proto


def CheckpointState(**kwargs):  # noqa: N802 - the proto's name
    return _checkpoint_state_class()(**kwargs)


def _get_checkpoint_filename(save_dir: str, latest_filename: Optional[str]) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None, last_preserved_timestamp=None):
    if all_model_checkpoint_paths is None:
        all_model_checkpoint_paths = []
    all_model_checkpoint_paths = list(all_model_checkpoint_paths)
    if not all_model_checkpoint_paths or all_model_checkpoint_paths[-1] != model_checkpoint_path:
        logger.info("%s is not in all_model_checkpoint_paths. Manually adding it.", model_checkpoint_path)
        all_model_checkpoint_paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps and len(all_model_checkpoint_timestamps) != len(all_model_checkpoint_paths):
        raise ValueError("Checkpoint timestamps, if provided, must match checkpoint paths (got paths %s and "
                         "timestamps %s)" % (all_model_checkpoint_paths, all_model_checkpoint_timestamps))
    # Relative paths are rewritten relative to a relative save_dir (TF's rule).
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        for i, p in enumerate(all_model_checkpoint_paths):
            if not os.path.isabs(p):
                all_model_checkpoint_paths[i] = os.path.relpath(p, save_dir)
    state = CheckpointState(model_checkpoint_path=model_checkpoint_path,
                            all_model_checkpoint_paths=all_model_checkpoint_paths,
                            all_model_checkpoint_timestamps=all_model_checkpoint_timestamps or [])
    if last_preserved_timestamp is not None:
        state.last_preserved_timestamp = last_preserved_timestamp
    return state


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None, latest_filename=None,
                            all_model_checkpoint_timestamps=None, last_preserved_timestamp=None) -> None:
    update_checkpoint_state_internal(save_dir, model_checkpoint_path, all_model_checkpoint_paths, latest_filename,
                                     save_relative_paths=False,
                                     all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                                     last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state_internal(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                                     latest_filename=None, save_relative_paths=False,
                                     all_model_checkpoint_timestamps=None, last_preserved_timestamp=None) -> None:
    """Write the ``checkpoint`` file (atomically), as TF's checkpoint_management does."""
    from google.protobuf import text_format

    coord_checkpoint_filename = _get_checkpoint_filename(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        if os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [os.path.relpath(p, save_dir) if os.path.isabs(p) else p for p in paths]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths=paths,
                                            all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                                            last_preserved_timestamp=last_preserved_timestamp)
    if coord_checkpoint_filename == state.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           "Please use a different save path.")
    fmt.atomic_write(coord_checkpoint_filename, text_format.MessageToString(state).encode())


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in ``checkpoint_dir/checkpoint``, or None if there is none."""
    from google.protobuf import text_format

    checkpoint_dir = _text(checkpoint_dir)
    coord_checkpoint_filename = _get_checkpoint_filename(checkpoint_dir, latest_filename)
    if not os.path.isfile(coord_checkpoint_filename):
        return None
    try:
        with open(coord_checkpoint_filename, "rb") as f:
            content = f.read().decode("utf-8")
        state = CheckpointState()
        text_format.Merge(content, state)
    except (OSError, UnicodeDecodeError, text_format.ParseError) as e:
        logger.warning("%s: %s", type(e).__name__, e)
        logger.warning("%s: Checkpoint ignored", coord_checkpoint_filename)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    for i, p in enumerate(state.all_model_checkpoint_paths):
        if not os.path.isabs(p):
            state.all_model_checkpoint_paths[i] = os.path.join(checkpoint_dir, p)
    return state


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> Optional[str]:
    """The prefix of the newest checkpoint recorded in ``checkpoint_dir``, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        path = state.model_checkpoint_path
        if os.path.exists(fmt.index_filename(path)) or os.path.exists(path):
            return path
        logger.error("Couldn't match files for checkpoint %s", path)
    return None


def checkpoint_exists_internal(checkpoint_prefix) -> bool:
    import glob

    prefix = _text(checkpoint_prefix)
    return bool(glob.glob(fmt.index_filename(prefix)) or glob.glob(prefix))


def checkpoint_exists(checkpoint_prefix) -> bool:
    return checkpoint_exists_internal(checkpoint_prefix)


def get_checkpoint_mtimes(checkpoint_prefixes) -> list:
    import glob

    mtimes = []
    for prefix in checkpoint_prefixes:
        for pattern in (fmt.index_filename(prefix), prefix):
            names = glob.glob(pattern)
            if names:
                mtimes.append(os.stat(names[0]).st_mtime_ns / 1e9)
                break
    return mtimes


def meta_graph_filename(checkpoint_filename, meta_graph_suffix="meta") -> str:
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return ".".join([basename, meta_graph_suffix])


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta") -> None:
    import glob

    def delete(pattern):
        for path in glob.glob(pattern):
            os.remove(path)

    delete(meta_graph_filename(checkpoint_prefix, meta_graph_suffix))
    if checkpoint_format_version == 2:
        delete(checkpoint_prefix + ".index")
        delete(checkpoint_prefix + ".data-?????-of-?????")
    else:
        delete(checkpoint_prefix)


# =====================================================================================
# Reading checkpoints: NewCheckpointReader, load_checkpoint, list_variables
# =====================================================================================
class CheckpointReader:
    """What ``tf.train.NewCheckpointReader`` returns (TF's pywrap CheckpointReader)."""

    def __init__(self, filepattern):
        self._prefix = _text(filepattern)
        self._reader = _open_bundle(self._prefix)

    def get_tensor(self, tensor_str):
        value = self._reader.lookup(_text(tensor_str))
        return value[()] if value.shape == () else value  # numpy scalars for 0-d, as TF

    def has_tensor(self, tensor_str) -> bool:
        return self._reader.contains(_text(tensor_str))

    def get_variable_to_shape_map(self) -> dict:
        return self._reader.variable_to_shape_map()

    def get_variable_to_dtype_map(self) -> dict:
        return self._reader.variable_to_dtype_map()

    def debug_string(self) -> bytes:
        return self._reader.debug_string().encode("utf-8")


def NewCheckpointReader(filepattern) -> CheckpointReader:  # noqa: N802 - TF's name
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file) -> Optional[str]:
    ckpt_dir_or_file = _text(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        return latest_checkpoint(ckpt_dir_or_file)
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file) -> CheckpointReader:
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}")
    return NewCheckpointReader(filename)


def load_variable(ckpt_dir_or_file, name):
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file) -> list:
    """[(name, shape)] of every tensor in a checkpoint, sorted by name."""
    variable_map = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, variable_map[name]) for name in sorted(variable_map)]


# =====================================================================================
# MetaGraphDef export and import
# =====================================================================================
_VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES,
                         GraphKeys.MODEL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES,
                         GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.CONCATENATED_VARIABLES,
                         GraphKeys.TRAINABLE_RESOURCE_VARIABLES)
# Collections whose items serialize as protos (ops.register_proto_function in TF).
_VARIABLE_PROTO_COLLECTIONS = _VARIABLE_COLLECTIONS + (GraphKeys.GLOBAL_STEP,)


def _collection_to_proto(key: str, item, export_scope):
    """(kind, serialized value) for one collection item, following TF's add_collection_def."""
    from .variables import Variable

    if key in _VARIABLE_PROTO_COLLECTIONS and isinstance(item, Variable):
        proto = _variable_to_proto(item, export_scope)
        return ("bytes_list", proto.SerializeToString()) if proto is not None else (None, None)
    if key == GraphKeys.SAVERS and isinstance(item, Saver):
        proto = item.to_proto(export_scope=export_scope)
        return ("bytes_list", proto.SerializeToString()) if proto is not None else (None, None)
    if key == GraphKeys.QUEUE_RUNNERS and hasattr(item, "to_proto"):  # a QueueRunner: its QueueRunnerDef
        proto = item.to_proto(export_scope=export_scope)
        return ("bytes_list", proto.SerializeToString()) if proto is not None else (None, None)
    if key in (GraphKeys.COND_CONTEXT, GraphKeys.WHILE_CONTEXT) and not isinstance(item, (Tensor, Operation, bytes)):
        # TF writes CondContextDef/WhileContextDef protos here; tfc does not model them, and a
        # context's name is no graph element: the collection is left out (TF imports without it).
        return None, None
    if type(item).__name__ == "Any" and hasattr(item, "type_url"):  # google.protobuf.Any (SavedModel assets)
        return "any_list", item
    if isinstance(item, (str, bytes)):
        return "bytes_list", item.encode() if isinstance(item, str) else item
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"cannot serialize the boolean {item!r}")
    if isinstance(item, (int, np.integer)):
        return "int64_list", int(item)
    if isinstance(item, (float, np.floating)):
        return "float_list", float(item)
    name = getattr(item, "name", None)
    if isinstance(item, (Tensor, Operation)) or isinstance(name, str):
        if export_scope and not name.startswith(export_scope):
            return None, None
        return "node_list", _strip_name_scope(name, export_scope)
    raise TypeError(f"cannot serialize {item!r} of type {type(item).__name__}")


def _add_collection_def(meta_graph_def, key, graph, export_scope=None) -> None:
    if not isinstance(key, (str, bytes)):
        logger.warning("Only collections with string type keys will be serialized. This key has %s", type(key))
        return
    items = graph.get_collection(key)
    if not items:
        return
    col_def = meta_graph_def.collection_def[key]
    try:
        kind = None
        for item in items:
            item_kind, value = _collection_to_proto(key, item, export_scope)
            if item_kind is None:
                continue
            if kind is None:
                kind = item_kind
            elif item_kind != kind:
                raise TypeError(f"mixed item kinds {kind} and {item_kind}")
            getattr(col_def, kind).value.append(value)
    except (TypeError, ValueError) as e:
        logger.warning("Issue encountered when serializing: %s.\n%s", key, e)
        del meta_graph_def.collection_def[key]
        return
    if not col_def.ListFields():
        del meta_graph_def.collection_def[key]


def _attr_default_value(kind: str, default):
    """The AttrValue of a registry default, or None when it has none (or none we can encode)."""
    from .node_def import _to_attr_value
    from .registry import REQUIRED, _normalize_attr

    if default is REQUIRED or default is None:
        return None
    try:
        return _to_attr_value(kind, _normalize_attr(kind, default))
    except (TypeError, ValueError, AttributeError):
        return None


def _op_def_for(type_name: str):
    """An OpDef for the MetaInfoDef's stripped_op_list, from the registry entry."""
    from tfc.protos import OpDef

    entry = lookup_op_type(type_name)
    op_def = OpDef(name=type_name, is_stateful=bool(getattr(entry, "stateful", False)))
    for specs, field in ((entry.input_specs, op_def.input_arg), (entry.output_specs, op_def.output_arg)):
        for spec in specs:
            arg = field.add(name=spec.name, is_ref=spec.is_ref)
            if spec.fixed_dtype:
                arg.type = dtypes.as_dtype(spec.fixed_dtype).as_datatype_enum
            elif spec.type_attr:
                if entry.attrs[spec.type_attr].kind == "list(type)":
                    arg.type_list_attr = spec.type_attr
                else:
                    arg.type_attr = spec.type_attr
            if spec.number_attr:
                arg.number_attr = spec.number_attr
    for name, attr in entry.attrs.items():
        attr_def = op_def.attr.add(name=name, type=attr.kind)
        default = _attr_default_value(attr.kind, attr.default)
        if default is not None:
            attr_def.default_value.CopyFrom(default)
    return op_def


def _stripped_op_list(graph_def):
    from tfc.protos import OpList

    op_list = OpList()
    for type_name in sorted({node.op for node in graph_def.node}):
        try:
            op_list.op.append(_op_def_for(type_name))
        except ValueError:  # not registered: the op list is informational
            op_list.op.add(name=type_name)
    return op_list


def _strip_default_attrs(graph_def) -> None:
    """Remove attrs equal to their registry default (strip_default_attrs=True)."""
    for node in graph_def.node:
        try:
            entry = lookup_op_type(node.op)
        except ValueError:
            continue
        for name, attr in entry.attrs.items():
            default = _attr_default_value(attr.kind, attr.default)
            if default is not None and name in node.attr and node.attr[name] == default:
                del node.attr[name]


def _export_scoped_graph_def(graph_def, export_scope, clear_devices):
    from tfc.protos import GraphDef

    out = GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    scope = export_scope.rstrip("/") + "/" if export_scope else None
    for node in graph_def.node:
        if scope and not node.name.startswith(scope):
            continue
        new = out.node.add()
        new.CopyFrom(node)
        if scope:
            new.name = _strip_name_scope(node.name, export_scope)
            del new.input[:]
            for inp in node.input:
                new.input.append(_strip_name_scope(inp, export_scope))
            if "_class" in new.attr:
                values = [_strip_name_scope(s.decode(), export_scope).encode() for s in new.attr["_class"].list.s]
                del new.attr["_class"].list.s[:]
                new.attr["_class"].list.s.extend(values)
        if clear_devices:
            new.device = ""
    return out


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None, collection_list=None,
                      as_text=False, graph=None, export_scope=None, clear_devices=False,
                      clear_extraneous_savers=False, strip_default_attrs=False, save_debug_info=False, **kwargs):
    """tf.train.export_meta_graph: the MetaGraphDef (graph, saver, collections); optionally written."""
    del clear_extraneous_savers, save_debug_info, kwargs
    from tfc import __version__ as tfc_version
    from tfc.protos import MetaGraphDef

    graph = graph or get_default_graph()
    if graph_def is None:
        graph_def = graph.as_graph_def(add_shapes=True)
    meta_graph_def = MetaGraphDef()
    if meta_info_def is not None:
        meta_graph_def.meta_info_def.CopyFrom(meta_info_def)
    info = meta_graph_def.meta_info_def
    if not info.tensorflow_version:
        info.tensorflow_version = TF_VERSION
    if not info.tensorflow_git_version:
        info.tensorflow_git_version = f"tfc-{tfc_version}"
    scoped = _export_scoped_graph_def(graph_def, export_scope, clear_devices)
    if strip_default_attrs:
        _strip_default_attrs(scoped)
        info.stripped_default_attrs = True
    meta_graph_def.graph_def.CopyFrom(scoped)
    if not info.HasField("stripped_op_list"):
        info.stripped_op_list.CopyFrom(_stripped_op_list(scoped))
    if saver_def is not None:
        meta_graph_def.saver_def.CopyFrom(saver_def)
    if collection_list is None:
        collection_list = graph.get_all_collection_keys()
    for key in collection_list:
        _add_collection_def(meta_graph_def, key, graph, export_scope=export_scope)
    if filename:
        _write_meta_graph(meta_graph_def, filename, as_text)
    return meta_graph_def


def _write_meta_graph(meta_graph_def, filename: str, as_text: bool) -> None:
    from google.protobuf import text_format

    parent = os.path.dirname(filename)
    if parent:
        os.makedirs(parent, exist_ok=True)
    content = text_format.MessageToString(meta_graph_def).encode() if as_text else \
        meta_graph_def.SerializeToString()
    fmt.atomic_write(filename, content)


def read_meta_graph_file(filename):
    """A MetaGraphDef from a binary (or text) .meta file."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError as _DecodeError

    from tfc.protos import MetaGraphDef

    filename = _text(filename)
    if not os.path.exists(filename):
        raise IOError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        content = f.read()
    meta_graph_def = MetaGraphDef()
    try:
        meta_graph_def.ParseFromString(content)
        return meta_graph_def
    except _DecodeError:
        pass
    try:
        text_format.Merge(content.decode("utf-8"), meta_graph_def)
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise IOError(f"Cannot parse file {filename}: {e}.") from None
    return meta_graph_def


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """tf.train.import_meta_graph: add the graph and collections; returns its Saver (or None)."""
    from tfc.protos import GraphDef, MetaGraphDef

    from .graph_io import import_graph_def
    from .variables import Variable

    input_map = kwargs.pop("input_map", None)
    if isinstance(meta_graph_or_file, MetaGraphDef):
        meta_graph_def = meta_graph_or_file
    else:
        meta_graph_def = read_meta_graph_file(meta_graph_or_file)
    graph = get_default_graph()
    scope = graph.unique_name(import_scope or "", mark_as_used=False) if import_scope else ""
    graph_def = GraphDef()
    graph_def.CopyFrom(meta_graph_def.graph_def)
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
        if clear_devices:
            node.device = ""
    import_graph_def(graph_def, input_map=input_map, name=scope)
    variable_objects: dict = {}
    imported_vars: dict = {}
    for key, col_def in sorted(meta_graph_def.collection_def.items()):
        kind = col_def.WhichOneof("kind")
        if kind is None:
            logger.error("Cannot identify data type for collection %s. Skipping.", key)
            continue
        field = getattr(col_def, kind)
        if kind == "bytes_list" and key in _VARIABLE_PROTO_COLLECTIONS:
            for value in field.value:
                variable = variable_objects.get(value) if key in _VARIABLE_COLLECTIONS else None
                if variable is None:
                    proto = VariableDef()
                    proto.ParseFromString(value)
                    variable = Variable.from_proto(proto, import_scope=scope or None)
                    if key in _VARIABLE_COLLECTIONS:
                        variable_objects[value] = variable
                graph.add_to_collection(key, variable)
                if key == GraphKeys.GLOBAL_VARIABLES:
                    imported_vars[variable.name[len(scope) + 1 if scope else 0:]] = variable
        elif kind == "bytes_list" and key == GraphKeys.SAVERS:
            for value in field.value:
                saver_def = _saver_def_class()()
                saver_def.ParseFromString(value)
                graph.add_to_collection(key, Saver.from_proto(saver_def, import_scope=scope or None))
        elif kind == "bytes_list" and key == GraphKeys.QUEUE_RUNNERS:
            from tfc.protos.queue_runner_pb2 import QueueRunnerDef

            from .train.queue_runner import QueueRunner

            for value in field.value:
                graph.add_to_collection(key, QueueRunner.from_proto(QueueRunnerDef.FromString(value),
                                                                    import_scope=scope or None))
        elif kind == "node_list":
            for value in field.value:
                graph.add_to_collection(key, graph.as_graph_element(_prepend_name_scope(value, scope)))
        elif kind == "int64_list":
            for value in field.value:
                graph.add_to_collection(key, int(value))
        else:
            for value in field.value:
                graph.add_to_collection(key, value)
    if meta_graph_def.HasField("saver_def"):
        saver_def = _saver_def_class()()
        saver_def.CopyFrom(meta_graph_def.saver_def)
        return Saver(saver_def=saver_def, name=scope or None)
    if _all_saveable_objects(scope=scope or None):
        return Saver()
    logger.info("Saver not created because there are no variables in the graph to restore")
    return None


EXPORTS = {
    "Saver": Saver,
    "SaverDef": _saver_def_class(),
    "import_meta_graph": import_meta_graph,
    "export_meta_graph": export_meta_graph,
    "latest_checkpoint": latest_checkpoint,
    "get_checkpoint_state": get_checkpoint_state,
    "checkpoint_exists": checkpoint_exists,
    "get_checkpoint_mtimes": get_checkpoint_mtimes,
    "remove_checkpoint": remove_checkpoint,
    "update_checkpoint_state": update_checkpoint_state,
    "generate_checkpoint_state_proto": generate_checkpoint_state_proto,
    "list_variables": list_variables,
    "load_checkpoint": load_checkpoint,
    "load_variable": load_variable,
    "NewCheckpointReader": NewCheckpointReader,
}
