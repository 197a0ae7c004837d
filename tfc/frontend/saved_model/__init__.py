"""tf.saved_model: TensorFlow 1.15's SavedModel API, reading and writing TF's layout.

``simple_save`` and ``builder.SavedModelBuilder`` write ``saved_model.pb`` (or ``.pbtxt``),
``variables/variables.{index,data-00000-of-00001}`` and ``assets/``; ``loader.load`` reads
SavedModels written by TensorFlow or tfc. The sub-modules are TF's: ``builder``, ``loader``,
``utils``, ``signature_def_utils``, ``signature_constants``, ``tag_constants``,
``constants`` and ``main_op``.
"""
from __future__ import annotations

import sys
import types

from .. import tf_logging as logging
from . import builder, constants, loader, main_op, signature_def_utils, utils


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Save ``session``'s graph and variables as a SavedModel for serving: tag ``serve``, one
    ``serving_default`` predict signature of ``inputs`` and ``outputs`` (name -> tensor)."""
    from ..graph import GraphKeys, get_collection

    logging.deprecation_warning(
        "simple_save", "tensorflow.python.saved_model.simple_save",
        "This function will only be available through the v1 compatibility library as "
        "tf.compat.v1.saved_model.simple_save.")
    with session.graph.as_default():
        signature_def_map = {
            constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature_def_utils.predict_signature_def(inputs, outputs)}
        b = builder.SavedModelBuilder(export_dir)
        b.add_meta_graph_and_variables(session, tags=[constants.SERVING], signature_def_map=signature_def_map,
                                       assets_collection=get_collection(GraphKeys.ASSET_FILEPATHS),
                                       main_op=legacy_init_op, clear_devices=True)
        b.save()


def _module(name: str, values: dict) -> types.ModuleType:
    module = types.ModuleType(f"tfc.saved_model.{name}")
    module.__dict__.update(values)
    sys.modules.setdefault(module.__name__, module)
    return module


def _namespace() -> dict:
    constant_values = {n: getattr(constants, n) for n in constants.CONSTANTS}
    tag_values = {n: getattr(constants, n) for n in constants.TAG_CONSTANTS}
    signature_values = {n: getattr(constants, n) for n in constants.SIGNATURE_CONSTANTS}
    out = {
        "builder": _module("builder", {**builder.EXPORTS, "SavedModelBuilder": builder.SavedModelBuilder}),
        "loader": _module("loader", loader.EXPORTS),
        "utils": _module("utils", utils.EXPORTS),
        "signature_def_utils": _module("signature_def_utils", signature_def_utils.EXPORTS),
        "signature_constants": _module("signature_constants", signature_values),
        "tag_constants": _module("tag_constants", tag_values),
        "constants": _module("constants", constant_values),
        "main_op": _module("main_op", main_op.EXPORTS),
        "Builder": builder.SavedModelBuilder,
        "simple_save": simple_save,
        "load": loader.load,
        "maybe_saved_model_directory": loader.maybe_saved_model_directory,
        "main_op_with_restore": main_op.main_op_with_restore,
    }
    out.update(utils.EXPORTS)
    out.update(signature_def_utils.EXPORTS)
    out.update(constant_values)
    out.update(tag_values)
    out.update(signature_values)
    return out


EXPORTS = _namespace()
