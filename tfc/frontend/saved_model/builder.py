"""tf.saved_model.builder.SavedModelBuilder: TensorFlow 1.15's builder_impl.py.

Writes TensorFlow's SavedModel layout::

    export_dir/saved_model.pb (or saved_model.pbtxt)   SavedModel: schema version 1, MetaGraphDefs
    export_dir/variables/variables.index               V2 checkpoint of every saveable variable
    export_dir/variables/variables.data-00000-of-00001
    export_dir/assets/...                              copies of the asset files

Each MetaGraphDef is the graph's (``Saver.export_meta_graph``: graph, saver, collections)
with its tags and SignatureDefs. The variables are saved once, by the first
``add_meta_graph_and_variables``; assets are recorded in the ``saved_model_assets``
collection as ``AssetFileDef``s packed in ``Any`` protos (type ``tensorflow.AssetFileDef``, as
TensorFlow packs them) and the main op in ``saved_model_main_op``.
"""
from __future__ import annotations

import filecmp
import os
import shutil

from .. import tf_logging as logging
from . import constants

_ASSET_TYPE_URL = "type.googleapis.com/tensorflow.AssetFileDef"


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def get_variables_dir(export_dir) -> str:
    return os.path.join(_text(export_dir), constants.VARIABLES_DIRECTORY)


def get_variables_path(export_dir) -> str:
    return os.path.join(get_variables_dir(export_dir), constants.VARIABLES_FILENAME)


def get_assets_dir(export_dir) -> str:
    return os.path.join(_text(export_dir), constants.ASSETS_DIRECTORY)


def _asset_path_from_tensor(path_tensor) -> bytes:
    from .. import dtypes

    if not (hasattr(path_tensor, "value_index") and hasattr(path_tensor, "op")):
        raise TypeError("Asset path tensor must be a Tensor.")
    if path_tensor.op.type != "Const":
        raise TypeError("Asset path tensor must be of type constant.")
    if path_tensor.dtype.base_dtype != dtypes.string:
        raise TypeError("Asset path tensor must be of dtype string.")
    str_values = path_tensor.op.node_def.attr["value"].tensor.string_val
    if len(str_values) != 1:
        raise TypeError("Asset path tensor must be a scalar.")
    return str_values[0]


def _get_unique_asset_filename(asset_filename: bytes, asset_filename_map: dict) -> bytes:
    i = 1
    unique_filename = asset_filename
    while unique_filename in asset_filename_map:
        unique_filename = b"_".join([asset_filename, str(i).encode()])
        i += 1
    return unique_filename


def get_asset_filename_to_add(asset_filepath: bytes, asset_filename_map: dict) -> bytes:
    """The asset's file name in ``assets/``: its base name, made unique if another file took it."""
    asset_filename = os.path.basename(asset_filepath)
    if asset_filename not in asset_filename_map:
        return asset_filename
    other_asset_filepath = asset_filename_map[asset_filename]
    if other_asset_filepath == asset_filepath:
        return asset_filename
    if not filecmp.cmp(asset_filepath, other_asset_filepath):
        return _get_unique_asset_filename(asset_filename, asset_filename_map)
    return asset_filename


def _add_asset_to_collection(asset_filename: bytes, asset_tensor) -> None:
    from google.protobuf.any_pb2 import Any

    from tfc.protos.meta_graph_pb2 import AssetFileDef

    from ..graph import add_to_collection

    asset_proto = AssetFileDef(filename=_text(asset_filename))
    asset_proto.tensor_info.name = asset_tensor.name
    packed = Any(type_url=_ASSET_TYPE_URL, value=asset_proto.SerializeToString())
    add_to_collection(constants.ASSETS_KEY, packed)


def _maybe_save_assets(write_fn, assets_to_add=None) -> dict:
    asset_filename_map: dict = {}
    if assets_to_add is None:
        logging.info("No assets to save.")
        return asset_filename_map
    for asset_tensor in assets_to_add:
        asset_source_filepath = _asset_path_from_tensor(asset_tensor)
        if not asset_source_filepath:
            raise ValueError("Invalid asset filepath tensor %s" % asset_tensor)
        asset_filename = get_asset_filename_to_add(asset_source_filepath, asset_filename_map)
        write_fn(asset_filename, asset_tensor)
        asset_filename_map[asset_filename] = asset_source_filepath
    logging.info("Assets added to graph.")
    return asset_filename_map


def copy_assets_to_destination_dir(asset_filename_map: dict, destination_dir) -> None:
    """Copy each asset into ``destination_dir/assets/`` (a file already there is kept)."""
    assets_destination_dir = get_assets_dir(destination_dir)
    os.makedirs(assets_destination_dir, exist_ok=True)
    for asset_basename, asset_source_filepath in asset_filename_map.items():
        destination = os.path.join(assets_destination_dir, _text(asset_basename))
        if not os.path.exists(destination):
            shutil.copyfile(_text(asset_source_filepath), destination)
    logging.info("Assets written to: %s", assets_destination_dir)


class SavedModelBuilder:
    """Builds a SavedModel: one MetaGraphDef per tag set, the variables saved once."""

    def __init__(self, export_dir):
        from tfc.protos import SavedModel

        self._saved_model = SavedModel(saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._export_dir = export_dir
        path = _text(export_dir)
        if os.path.exists(path):
            if os.listdir(path):
                raise AssertionError("Export directory already exists, and isn't empty. Please choose a different "
                                     "export directory, or delete all the contents of the specified directory: "
                                     f"{path}")
        else:
            os.makedirs(path)
        self._has_saved_variables = False

    # -- validation ----------------------------------------------------------------------
    def _validate_tensor_info(self, tensor_info) -> None:
        from tfc.protos import DT_INVALID

        if tensor_info is None:
            raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the name and dtype "
                                 "fields set.")
        if tensor_info.WhichOneof("encoding") is None:
            raise AssertionError("All TensorInfo protos used in the SignatureDefs must have one of the 'encoding' "
                                 "fields (e.g., name or coo_sparse) set: %s" % tensor_info)
        if tensor_info.dtype == DT_INVALID:
            raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the dtype field set: %s"
                                 % tensor_info)

    def _validate_signature_def_map(self, signature_def_map: dict) -> None:
        for signature_def in signature_def_map.values():
            for info in signature_def.inputs.values():
                self._validate_tensor_info(info)
            for info in signature_def.outputs.values():
                self._validate_tensor_info(info)
        if constants.INIT_OP_SIGNATURE_KEY in signature_def_map:
            raise KeyError(f'SignatureDef map key "{constants.INIT_OP_SIGNATURE_KEY}" is reserved for '
                           "initialization. Please use a different key.")
        if constants.TRAIN_OP_SIGNATURE_KEY in signature_def_map:
            raise KeyError(f'SignatureDef map key "{constants.TRAIN_OP_SIGNATURE_KEY}" is reserved for the train '
                           "op. Please use a different key.")

    # -- collections ---------------------------------------------------------------------
    def _save_and_write_assets(self, assets_collection_to_add=None) -> None:
        asset_filename_map = _maybe_save_assets(_add_asset_to_collection, assets_collection_to_add)
        if not asset_filename_map:
            logging.info("No assets to write.")
            return
        copy_assets_to_destination_dir(asset_filename_map, self._export_dir)

    def _maybe_add_main_op(self, main_op) -> None:
        from ..graph import Operation, add_to_collection, get_collection

        if main_op is None:
            return
        if not isinstance(main_op, Operation):
            raise TypeError("main_op needs to be an Operation: %r" % main_op)
        for init_op_key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
            if get_collection(init_op_key):
                raise ValueError("Graph already contains one or more main ops under the collection "
                                 f"{init_op_key}.")
        add_to_collection(constants.MAIN_OP_KEY, main_op)

    def _add_train_op(self, train_op) -> None:
        from ..graph import Operation, add_to_collection, get_collection

        if train_op is None:
            return
        if not (isinstance(train_op, Operation) or hasattr(train_op, "value_index")):
            raise TypeError("train_op needs to be a Tensor or Op: %r" % train_op)
        if get_collection(constants.TRAIN_OP_KEY):
            raise ValueError("Graph already contains one or more train ops under the collection "
                             f"{constants.TRAIN_OP_KEY}.")
        add_to_collection(constants.TRAIN_OP_KEY, train_op)

    def _add_collections(self, assets_collection, main_op, train_op) -> None:
        self._save_and_write_assets(assets_collection)
        self._maybe_add_main_op(main_op)
        self._add_train_op(train_op)

    def _maybe_create_saver(self, saver=None):
        from ..saver import Saver, _all_saveable_objects

        if not saver:
            saver = Saver(_all_saveable_objects(), sharded=True, write_version=2, allow_empty=True)
        return saver

    def _tag_and_add_meta_graph(self, meta_graph_def, tags, signature_def_map) -> None:
        for tag in tags:
            meta_graph_def.meta_info_def.tags.append(tag)
        if signature_def_map is not None:
            for key in signature_def_map:
                meta_graph_def.signature_def[key].CopyFrom(signature_def_map[key])
        self._saved_model.meta_graphs.add().CopyFrom(meta_graph_def)

    # -- the API -------------------------------------------------------------------------
    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None, legacy_init_op=None,
                       clear_devices=False, main_op=None, strip_default_attrs=False, saver=None):
        """Add a MetaGraphDef of the default graph for ``tags`` (the variables are already saved)."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been saved yet. Please invoke "
                                 "`add_meta_graph_and_variables()` first.")
        signature_def_map = signature_def_map or {}
        self._validate_signature_def_map(signature_def_map)
        main_op = main_op if main_op is not None else legacy_init_op
        self._add_collections(assets_collection, main_op, None)
        saver = self._maybe_create_saver(saver)
        meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices, strip_default_attrs=strip_default_attrs)
        self._tag_and_add_meta_graph(meta_graph_def, tags, signature_def_map)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None, assets_collection=None,
                                     legacy_init_op=None, clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        """Save the session's variables to ``variables/`` and add the graph's MetaGraphDef for ``tags``."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been saved. Please invoke "
                                 "`add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        self._validate_signature_def_map(signature_def_map)
        main_op = main_op if main_op is not None else legacy_init_op
        with sess.graph.as_default():
            self._add_collections(assets_collection, main_op, None)
            os.makedirs(get_variables_dir(self._export_dir), exist_ok=True)
            saver = self._maybe_create_saver(saver)
            saver.save(sess, get_variables_path(self._export_dir), write_meta_graph=False, write_state=False)
            meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices,
                                                     strip_default_attrs=strip_default_attrs)
        self._tag_and_add_meta_graph(meta_graph_def, tags, signature_def_map)
        self._has_saved_variables = True

    def save(self, as_text=False) -> bytes:
        """Write ``saved_model.pb`` (or ``.pbtxt``); returns its path (bytes, as TF returns it)."""
        from google.protobuf import text_format

        from .. import checkpoint_format as fmt

        directory = _text(self._export_dir)
        os.makedirs(directory, exist_ok=True)
        if as_text:
            path = os.path.join(directory, constants.SAVED_MODEL_FILENAME_PBTXT)
            content = text_format.MessageToString(self._saved_model).encode()
        else:
            path = os.path.join(directory, constants.SAVED_MODEL_FILENAME_PB)
            content = self._saved_model.SerializeToString(deterministic=True)
        fmt.atomic_write(path, content)
        logging.info("SavedModel written to: %s", path)
        return path.encode()


Builder = SavedModelBuilder

EXPORTS = {"SavedModelBuilder": SavedModelBuilder}
