"""tf.saved_model.loader: load a SavedModel into a session (TF 1.15's loader_impl.py).

``load(sess, tags, export_dir)`` picks the MetaGraphDef whose tag set equals ``tags``,
imports it into ``sess.graph`` (``import_meta_graph``: graph, collections, saver), restores
``variables/variables`` with its saver, runs the main op (``saved_model_main_op``, else
``legacy_init_op``, or the ``__saved_model_init_op`` signature) with each asset tensor fed
its file's path in ``assets/``, and returns the MetaGraphDef.
"""
from __future__ import annotations

import os

from .. import tf_logging as logging
from . import constants
from .builder import _text, get_assets_dir, get_variables_path

_ASSET_TYPE_NAME = "AssetFileDef"


def parse_saved_model(export_dir):
    """The SavedModel proto of ``export_dir`` (``saved_model.pb``, else ``saved_model.pbtxt``)."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    from tfc.protos import SavedModel

    export_dir = _text(export_dir)
    path_to_pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    path_to_pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    saved_model = SavedModel()
    if os.path.isfile(path_to_pb):
        with open(path_to_pb, "rb") as f:
            content = f.read()
        try:
            saved_model.ParseFromString(content)
        except DecodeError as e:
            raise IOError("Cannot parse file %s: %s." % (path_to_pb, str(e))) from None
        return saved_model
    if os.path.isfile(path_to_pbtxt):
        with open(path_to_pbtxt, "rb") as f:
            content = f.read()
        try:
            text_format.Merge(content.decode("utf-8"), saved_model)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise IOError("Cannot parse file %s: %s." % (path_to_pbtxt, str(e))) from None
        return saved_model
    raise IOError("SavedModel file does not exist at: %s/{%s|%s}" % (
        export_dir, constants.SAVED_MODEL_FILENAME_PBTXT, constants.SAVED_MODEL_FILENAME_PB))


def maybe_saved_model_directory(export_dir) -> bool:
    """Whether ``export_dir`` holds a ``saved_model.pb`` or ``saved_model.pbtxt``."""
    export_dir = _text(export_dir)
    return os.path.isfile(os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)) or \
        os.path.isfile(os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB))


def _asset_protos(meta_graph_def) -> list:
    """The AssetFileDefs of a MetaGraphDef: its asset_file_def field, else the assets collection
    (AssetFileDefs packed in Any protos, whatever package their type URL names)."""
    from tfc.protos.meta_graph_pb2 import AssetFileDef

    if len(meta_graph_def.asset_file_def):
        return list(meta_graph_def.asset_file_def)
    collection_def = meta_graph_def.collection_def
    protos = []
    if constants.ASSETS_KEY in collection_def:
        for packed in collection_def[constants.ASSETS_KEY].any_list.value:
            if not packed.type_url.endswith("." + _ASSET_TYPE_NAME):
                raise ValueError(f"the {constants.ASSETS_KEY} collection holds a {packed.type_url}, not an "
                                 f"{_ASSET_TYPE_NAME}")
            proto = AssetFileDef()
            proto.ParseFromString(packed.value)
            protos.append(proto)
    return protos


def get_asset_tensors(export_dir, meta_graph_def_to_load, import_scope=None) -> dict:
    """Asset tensor name -> the asset file's path in ``export_dir/assets`` (bytes, as TF feeds it)."""
    assets_directory = get_assets_dir(export_dir)
    asset_tensor_dict = {}
    for asset_proto in _asset_protos(meta_graph_def_to_load):
        tensor_name = asset_proto.tensor_info.name
        if import_scope:
            tensor_name = "%s/%s" % (import_scope, tensor_name)
        asset_tensor_dict[tensor_name] = os.path.join(assets_directory, asset_proto.filename).encode()
    return asset_tensor_dict


def _get_main_op_tensor(meta_graph_def_to_load, init_op_key=constants.MAIN_OP_KEY, import_scope=None):
    from ..graph import get_collection

    collection_def = meta_graph_def_to_load.collection_def
    init_op = None
    if init_op_key in collection_def:
        init_op_list = collection_def[init_op_key].node_list.value
        if len(init_op_list) != 1:
            raise RuntimeError("Expected exactly one SavedModel init op. Found: {}".format(list(init_op_list)))
        init_op = get_collection(init_op_key, import_scope)[0]
    return init_op


def get_init_op(meta_graph_def, import_scope=None):
    """The op that initializes a loaded MetaGraphDef (None if it has none)."""
    if constants.INIT_OP_SIGNATURE_KEY in meta_graph_def.signature_def:
        return _load_op_from_signature_def(meta_graph_def.signature_def[constants.INIT_OP_SIGNATURE_KEY],
                                           constants.INIT_OP_SIGNATURE_KEY, import_scope)
    return (_get_main_op_tensor(meta_graph_def, constants.MAIN_OP_KEY, import_scope)
            or _get_main_op_tensor(meta_graph_def, constants.LEGACY_INIT_OP_KEY, import_scope))


def _load_op_from_signature_def(signature_def, key, import_scope=None):
    from ..graph import get_default_graph
    from ..saver import _prepend_name_scope

    tensor_info = signature_def.outputs[key]
    try:
        return get_default_graph().as_graph_element(_prepend_name_scope(tensor_info.name, import_scope))
    except KeyError:
        raise RuntimeError("The key \"{}\" could not be found in the graph. Please make sure the SavedModel was "
                           "created by the internal _SavedModelBuilder. If you are using the public API, please "
                           "make sure the SignatureDef in the SavedModel does not contain the key \"{}\"."
                           .format(key, key)) from None


class SavedModelLoader:
    """Loads the MetaGraphDefs and variables of one SavedModel directory."""

    def __init__(self, export_dir):
        self._export_dir = export_dir
        self._variables_path = get_variables_path(export_dir)
        self._saved_model = parse_saved_model(export_dir)

    @property
    def export_dir(self):
        return self._export_dir

    @property
    def variables_path(self) -> str:
        return self._variables_path

    @property
    def saved_model(self):
        return self._saved_model

    def get_meta_graph_def_from_tags(self, tags):
        """The MetaGraphDef whose tag set is ``tags``; a RuntimeError naming the tag sets there are otherwise."""
        available_tags = []
        for meta_graph_def in self._saved_model.meta_graphs:
            available_tags.append(set(meta_graph_def.meta_info_def.tags))
            if set(meta_graph_def.meta_info_def.tags) == set(tags):
                return meta_graph_def
        raise RuntimeError("MetaGraphDef associated with tags " + str(tags).strip("[]") +
                           " could not be found in SavedModel. To inspect available tag-sets in the SavedModel, "
                           "please use the SavedModel CLI: `saved_model_cli`\navailable_tags: " + str(available_tags))

    def load_graph(self, graph, tags, import_scope=None, **saver_kwargs):
        """Import the MetaGraphDef for ``tags`` into ``graph``; returns (its Saver or None, None)."""
        from ..saver import import_meta_graph

        meta_graph_def = self.get_meta_graph_def_from_tags(tags)
        with graph.as_default():
            saver = import_meta_graph(meta_graph_def, import_scope=import_scope, **saver_kwargs)
        return saver, None

    def restore_variables(self, sess, saver, import_scope=None) -> None:
        from ..saver import Saver, _all_saveable_objects

        with sess.graph.as_default():
            if saver is None and not _all_saveable_objects(scope=import_scope):
                logging.info("The specified SavedModel has no variables; no checkpoints were restored.")
            elif isinstance(saver, Saver):
                saver.restore(sess, self._variables_path)
            else:
                raise ValueError("No tf.train.Saver object was passed to the function "
                                 "`SavedModelLoader.restore_variables`. Since there are variables in the graph, a "
                                 "saver is required.")

    def run_init_ops(self, sess, tags, import_scope=None) -> None:
        meta_graph_def = self.get_meta_graph_def_from_tags(tags)
        with sess.graph.as_default():
            asset_tensors_dictionary = get_asset_tensors(self._export_dir, meta_graph_def, import_scope=import_scope)
            init_op = get_init_op(meta_graph_def, import_scope)
            if init_op is not None:
                needed = _fed_assets(sess.graph, init_op, asset_tensors_dictionary)
                sess.run(fetches=[init_op], feed_dict=needed)

    def load(self, sess, tags, import_scope=None, **saver_kwargs):
        """Load the MetaGraphDef for ``tags`` into ``sess`` with its variables; returns the MetaGraphDef."""
        with sess.graph.as_default():
            saver, _ = self.load_graph(sess.graph, tags, import_scope, **saver_kwargs)
            self.restore_variables(sess, saver, import_scope)
            self.run_init_ops(sess, tags, import_scope)
        return self.get_meta_graph_def_from_tags(tags)


def _fed_assets(graph, init_op, assets: dict) -> dict:
    """The asset feeds: TF feeds them all; tfc feeds those the main op can reach (an asset
    tensor nothing reads would otherwise be a feed of an unused string tensor)."""
    if not assets:
        return {}
    from tfc.passes.lower import prune

    target = init_op if not hasattr(init_op, "value_index") else init_op.op
    needed = {op.name for op in prune([], [target], [])}
    return {name: path for name, path in assets.items() if name.rsplit(":", 1)[0] in needed}


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """tf.saved_model.loader.load: load a SavedModel's MetaGraphDef for ``tags`` into ``sess``."""
    logging.deprecation_warning(
        "load", "tensorflow.python.saved_model.loader_impl",
        "This function will only be available through the v1 compatibility library as "
        "tf.compat.v1.saved_model.loader.load or tf.compat.v1.saved_model.load. There will be a new function for "
        "importing SavedModels in Tensorflow 2.0.")
    loader = SavedModelLoader(export_dir)
    return loader.load(sess, tags, import_scope, **saver_kwargs)


EXPORTS = {"load": load, "maybe_saved_model_directory": maybe_saved_model_directory}
