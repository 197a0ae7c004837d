"""tf.saved_model (TF 1.15's builder, loader, simple_save, signature defs): SavedModels
written by TensorFlow (tests/fixtures/tf_saved_models, make_tf_saved_models.py) load in tfc
and give TF's outputs; those tfc writes have TF's layout and protos, and load in TensorFlow
(checked live where /tmp/tfvenv has it)."""
from __future__ import annotations

import logging
import os
import subprocess

import numpy as np
import pytest
from google.protobuf import text_format

import tfc.compat.v1 as tf
from tfc.protos import DT_BOOL, DT_FLOAT, DT_STRING, SavedModel
from tfc.protos.meta_graph_pb2 import AssetFileDef

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tf_saved_models")
TF_PYTHON = "/tmp/tfvenv/bin/python"
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)


def _info_messages(caplog) -> list:
    return [r.getMessage() for r in caplog.records if r.name == "tensorflow" and r.levelno == logging.INFO]


# -- SavedModels written by TensorFlow -----------------------------------------------------
def test_tf_simple_save_mlp_loads_and_gives_tfs_outputs(caplog):
    expected = np.load(os.path.join(FIXTURES, "mlp", "expected.npz"))
    with tf.Session(graph=tf.Graph()) as sess, caplog.at_level(logging.INFO, logger="tensorflow"):
        meta_graph_def = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                                    os.path.join(FIXTURES, "mlp"))
        signature = meta_graph_def.signature_def["serving_default"]
        assert (list(meta_graph_def.meta_info_def.tags), signature.method_name) == \
            (["serve"], "tensorflow/serving/predict")
        assert {k: v.name for k, v in signature.outputs.items()} == \
            {"logits": "logits/BiasAdd:0", "probabilities": "probabilities:0"}
        x = tf.saved_model.utils.get_tensor_from_tensor_info(signature.inputs["x"])
        logits = tf.saved_model.get_tensor_from_tensor_info(signature.outputs["logits"])
        probabilities = sess.graph.get_tensor_by_name(signature.outputs["probabilities"].name)
        got_logits, got_probabilities = sess.run([logits, probabilities], {x: expected["x"]})
        assert sorted(v.op.name for v in tf.global_variables()) == \
            ["hidden/bias", "hidden/kernel", "logits/bias", "logits/kernel"]
    assert _info_messages(caplog) == [
        f"Restoring parameters from {os.path.join(FIXTURES, 'mlp', 'variables', 'variables')}"]
    np.testing.assert_allclose(got_logits, expected["logits"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_probabilities, expected["probabilities"], rtol=1e-6, atol=1e-7)


def test_tf_builder_cond_model_from_pbtxt_runs_its_main_op_and_both_branches():
    expected = np.load(os.path.join(FIXTURES, "cond", "expected.npz"))
    directory = os.path.join(FIXTURES, "cond")
    assert not os.path.exists(os.path.join(directory, "saved_model.pb"))
    with tf.Session(graph=tf.Graph()) as sess:
        meta_graph_def = tf.saved_model.load(sess, ["serve"], directory)
        assert sorted(meta_graph_def.signature_def) == ["scaled", "serving_default"]
        assert sess.run("calls:0") == 0  # a local variable: only the main op initializes it
        assert [op.name for op in tf.get_collection("saved_model_main_op")] == ["main_op"]
        y_train = sess.run("y:0", {"x:0": expected["x"], "training:0": True})
        y_eval = sess.run("y:0", {"x:0": expected["x"], "training:0": False})
        z = sess.run(meta_graph_def.signature_def["scaled"].outputs["z"].name, {"x:0": expected["x"]})
    np.testing.assert_array_equal(y_train, expected["y_train"])
    np.testing.assert_array_equal(y_eval, expected["y_eval"])
    np.testing.assert_array_equal(z, expected["z"])
    from tfc.frontend.saved_model.loader import get_asset_tensors

    assert get_asset_tensors(directory, meta_graph_def) == \
        {"vocab_path:0": os.path.join(directory, "assets", "vocab.txt").encode()}


def test_tf_saved_model_second_meta_graph_and_unknown_tags():
    directory = os.path.join(FIXTURES, "cond")
    with tf.Session(graph=tf.Graph()) as sess:
        meta_graph_def = tf.saved_model.loader.load(sess, ["train"], directory)
        assert list(meta_graph_def.meta_info_def.tags) == ["train"]
        assert meta_graph_def.saver_def.restore_op_name == "save_1/restore_all"
        assert sess.run("scale:0") == np.float32(2.5)
    with tf.Session(graph=tf.Graph()) as sess, pytest.raises(RuntimeError) as info:
        tf.saved_model.loader.load(sess, ["serve", "gpu"], directory)
    assert str(info.value) == (
        "MetaGraphDef associated with tags 'serve', 'gpu' could not be found in SavedModel. To inspect available "
        "tag-sets in the SavedModel, please use the SavedModel CLI: `saved_model_cli`\n"
        "available_tags: [{'serve'}, {'train'}]")


def test_maybe_saved_model_directory_and_missing_files(tmp_path):
    assert tf.saved_model.loader.maybe_saved_model_directory(os.path.join(FIXTURES, "mlp"))
    assert tf.saved_model.maybe_saved_model_directory(os.path.join(FIXTURES, "cond"))
    assert not tf.saved_model.loader.maybe_saved_model_directory(FIXTURES)
    with tf.Session(graph=tf.Graph()) as sess, pytest.raises(IOError) as info:
        tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))
    assert str(info.value) == f"SavedModel file does not exist at: {tmp_path}/{{saved_model.pbtxt|saved_model.pb}}"
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff\xff")
    with tf.Session(graph=tf.Graph()) as sess, pytest.raises(IOError, match="^Cannot parse file .*saved_model.pb: "):
        tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))


# -- SavedModels written by tfc ------------------------------------------------------------
def _build_model(graph, asset_path=None):
    """y = cond(training, relu(x @ w) * scale, x @ w - scale); a local variable; an asset."""
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        training = tf.placeholder(tf.bool, [], name="training")
        w = tf.Variable(np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], np.float32), name="w")
        scale = tf.Variable(np.float32(2.5), name="scale")
        tf.Variable(0, name="calls", collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
        logits = tf.matmul(x, w)
        y = tf.identity(tf.cond(training, lambda: tf.nn.relu(logits) * scale, lambda: logits - scale), name="y")
        if asset_path:
            tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, tf.constant(asset_path, name="vocab_path"))
    return x, training, y


def _expected(training: bool) -> np.ndarray:
    logits = X @ np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], np.float32)
    return np.maximum(logits, 0) * 2.5 if training else logits - 2.5


def _read_saved_model(directory) -> SavedModel:
    saved_model = SavedModel()
    pb = os.path.join(directory, "saved_model.pb")
    if os.path.exists(pb):
        saved_model.ParseFromString(open(pb, "rb").read())
    else:
        text_format.Parse(open(os.path.join(directory, "saved_model.pbtxt")).read(), saved_model)
    return saved_model


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """tfc's simple_save (``simple/``) and builder (``built/``: text, assets, main op, two tag sets)."""
    root = tmp_path_factory.mktemp("tfc_saved_models")
    vocab = root / "vocab.txt"
    vocab.write_text("alpha\nbeta\n")
    graph = tf.Graph()
    x, training, y = _build_model(graph, str(vocab))
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, str(root / "simple"), {"x": x, "training": training}, {"y": y})
        builder = tf.saved_model.builder.SavedModelBuilder(str(root / "built"))
        signatures = {"serving_default": tf.saved_model.predict_signature_def({"x": x, "training": training},
                                                                              {"y": y})}
        builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map=signatures,
                                             assets_collection=tf.get_collection(tf.GraphKeys.ASSET_FILEPATHS),
                                             main_op=tf.group(tf.local_variables_initializer(), name="main_op"))
        builder.add_meta_graph(["train", "gpu"])
        path = builder.save(as_text=True)
    return root, path


def test_simple_save_writes_tfs_layout(tmp_path, caplog):
    graph = tf.Graph()
    x, training, y = _build_model(graph)
    export_dir = str(tmp_path / "export")
    with graph.as_default(), tf.Session() as sess, caplog.at_level(logging.INFO, logger="tensorflow"):
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, {"x": x, "training": training}, {"y": y})
    assert _info_messages(caplog) == ["Assets added to graph.", "No assets to write.",
                                      f"SavedModel written to: {export_dir}/saved_model.pb"]
    assert sorted(os.listdir(export_dir)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(export_dir, "variables"))) == \
        ["variables.data-00000-of-00001", "variables.index"]
    saved_model = _read_saved_model(export_dir)
    assert saved_model.saved_model_schema_version == 1 and len(saved_model.meta_graphs) == 1
    meta_graph_def = saved_model.meta_graphs[0]
    assert list(meta_graph_def.meta_info_def.tags) == ["serve"]
    signature = meta_graph_def.signature_def["serving_default"]
    assert signature.method_name == "tensorflow/serving/predict"
    assert [(k, v.name, v.dtype, [d.size for d in v.tensor_shape.dim]) for k, v in sorted(signature.inputs.items())] \
        == [("training", "training:0", DT_BOOL, []), ("x", "x:0", DT_FLOAT, [-1, 3])]
    assert [(k, v.name, v.dtype) for k, v in signature.outputs.items()] == [("y", "y:0", DT_FLOAT)]
    assert (meta_graph_def.saver_def.filename_tensor_name, meta_graph_def.saver_def.restore_op_name,
            meta_graph_def.saver_def.sharded) == ("save/Const:0", "save/restore_all", True)
    assert all(node.device == "" for node in meta_graph_def.graph_def.node)  # clear_devices=True
    assert sorted(meta_graph_def.collection_def) == ["local_variables", "trainable_variables", "variables"]
    prefix = os.path.join(export_dir, "variables", "variables")
    assert tf.train.list_variables(prefix) == [("scale", []), ("w", [3, 2])]
    assert tf.train.load_variable(prefix, "scale") == np.float32(2.5)


def test_builder_writes_text_assets_main_op_and_two_meta_graphs(written):
    root, path = written
    built = str(root / "built")
    assert path == os.path.join(built, "saved_model.pbtxt").encode()
    assert sorted(os.listdir(built)) == ["assets", "saved_model.pbtxt", "variables"]
    assert open(os.path.join(built, "assets", "vocab.txt")).read() == "alpha\nbeta\n"
    saved_model = _read_saved_model(built)
    assert [list(m.meta_info_def.tags) for m in saved_model.meta_graphs] == [["serve"], ["train", "gpu"]]
    serve, train = saved_model.meta_graphs
    assert list(serve.collection_def["saved_model_main_op"].node_list.value) == ["main_op"]
    # simple_save and the builder each added the asset to the same graph's collection, as in TF
    first, packed = serve.collection_def["saved_model_assets"].any_list.value
    assert first == packed
    assert packed.type_url == "type.googleapis.com/tensorflow.AssetFileDef"  # what TF packs and unpacks
    asset = AssetFileDef()
    asset.ParseFromString(packed.value)
    assert (asset.filename, asset.tensor_info.name) == ("vocab.txt", "vocab_path:0")
    # each add_meta_graph* builds a Saver (simple_save's was "save")
    assert (serve.saver_def.restore_op_name, train.saver_def.restore_op_name) == \
        ("save_1/restore_all", "save_2/restore_all")
    assert not train.signature_def


def test_tfc_saved_models_load_back_in_tfc(written):
    root, _ = written
    for directory, tags in (("simple", ["serve"]), ("built", ["serve"]), ("built", ["gpu", "train"])):
        with tf.Session(graph=tf.Graph()) as sess:
            tf.saved_model.loader.load(sess, tags, str(root / directory))
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": X, "training:0": True}), _expected(True))
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": X, "training:0": False}), _expected(False))
            if tags == ["serve"] and directory == "built":
                assert sess.run("calls:0") == 0


def test_builder_errors(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(AssertionError) as info:
        tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "full"))
    assert str(info.value) == ("Export directory already exists, and isn't empty. Please choose a different export "
                               f"directory, or delete all the contents of the specified directory: {tmp_path}/full")
    builder = tf.saved_model.Builder(str(tmp_path / "new"))
    assert os.path.isdir(tmp_path / "new")
    with pytest.raises(AssertionError, match=r"^Graph state including variables and assets has not been saved yet"):
        builder.add_meta_graph(["serve"])
    graph = tf.Graph()
    x, _, y = _build_model(graph)
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        signature = tf.saved_model.build_signature_def({"x": tf.saved_model.build_tensor_info(x)},
                                                       {"y": tf.saved_model.build_tensor_info(y)})
        with pytest.raises(KeyError, match='"__saved_model_init_op" is reserved for initialization'):
            builder.add_meta_graph_and_variables(sess, ["serve"], {"__saved_model_init_op": signature})
        with pytest.raises(TypeError, match="^main_op needs to be an Operation: "):
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=y)
        builder.add_meta_graph_and_variables(sess, ["serve"], {"s": signature})
        with pytest.raises(AssertionError, match="^Graph state including variables and assets has already been "
                                                 "saved. Please invoke `add_meta_graph[(][)]` instead.$"):
            builder.add_meta_graph_and_variables(sess, ["train"])


# -- signature defs and tensor infos -------------------------------------------------------
def test_signature_def_utils_build_tfs_signatures():
    with tf.Graph().as_default():
        examples = tf.placeholder(tf.string, [None], name="examples")
        scores = tf.placeholder(tf.float32, [None, 3], name="scores")
        classes = tf.placeholder(tf.string, [None, 3], name="classes")
        info = tf.saved_model.utils.build_tensor_info(scores)
        assert (info.name, info.dtype, [d.size for d in info.tensor_shape.dim]) == ("scores:0", DT_FLOAT, [-1, 3])
        classify = tf.saved_model.signature_def_utils.classification_signature_def(examples, classes, scores)
        assert classify.method_name == "tensorflow/serving/classify"
        assert (classify.inputs["inputs"].name, classify.inputs["inputs"].dtype) == ("examples:0", DT_STRING)
        assert sorted((k, v.name) for k, v in classify.outputs.items()) == \
            [("classes", "classes:0"), ("scores", "scores:0")]
        regress = tf.saved_model.regression_signature_def(examples, scores)
        assert (regress.method_name, sorted(regress.inputs), sorted(regress.outputs)) == \
            ("tensorflow/serving/regress", ["inputs"], ["outputs"])
        predict = tf.saved_model.predict_signature_def({"a": scores}, {"b": classes})
        assert [tf.saved_model.is_valid_signature(s) for s in (classify, regress, predict)] == [True, True, True]
        assert not tf.saved_model.is_valid_signature(tf.saved_model.build_signature_def(method_name="m"))
        with pytest.raises(ValueError, match="^Regression examples must be a string Tensor.$"):
            tf.saved_model.regression_signature_def(scores, scores)
        with pytest.raises(ValueError, match="^Classification scores must be a float Tensor.$"):
            tf.saved_model.classification_signature_def(examples, None, classes)
        with pytest.raises(ValueError, match="^Classification classes and scores cannot both be None.$"):
            tf.saved_model.classification_signature_def(examples, None, None)
        with pytest.raises(ValueError, match="^Prediction inputs cannot be None or empty.$"):
            tf.saved_model.predict_signature_def({}, {"b": classes})


def test_constants_are_tfs():
    assert (tf.saved_model.SERVING, tf.saved_model.tag_constants.TRAINING, tf.saved_model.tag_constants.EVAL,
            tf.saved_model.tag_constants.GPU, tf.saved_model.tag_constants.TPU) == ("serve", "train", "eval", "gpu",
                                                                                    "tpu")
    sc = tf.saved_model.signature_constants
    assert (sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY, sc.PREDICT_METHOD_NAME, sc.CLASSIFY_OUTPUT_SCORES,
            sc.REGRESS_OUTPUTS) == ("serving_default", "tensorflow/serving/predict", "scores", "outputs")
    c = tf.saved_model.constants
    assert (c.SAVED_MODEL_FILENAME_PB, c.SAVED_MODEL_FILENAME_PBTXT, c.VARIABLES_DIRECTORY, c.ASSETS_DIRECTORY,
            c.MAIN_OP_KEY, c.LEGACY_INIT_OP_KEY, c.ASSETS_KEY, c.SAVED_MODEL_SCHEMA_VERSION) == (
        "saved_model.pb", "saved_model.pbtxt", "variables", "assets", "saved_model_main_op", "legacy_init_op",
        "saved_model_assets", 1)


# -- TensorFlow loads what tfc wrote ---------------------------------------------------------
_TF_LOAD = """
import sys, json
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
x = np.array(json.loads(sys.argv[2]), np.float32)
out = []
for directory, tags in json.loads(sys.argv[3]):
    with tf.Session(graph=tf.Graph()) as sess:
        meta_graph_def = tf.saved_model.loader.load(sess, tags, sys.argv[1] + "/" + directory)
        calls = int(sess.run("calls:0")) if "saved_model_main_op" in meta_graph_def.collection_def else None
        out.append({"tags": list(meta_graph_def.meta_info_def.tags), "signatures": sorted(meta_graph_def.signature_def),
                    "train": sess.run("y:0", {"x:0": x, "training:0": True}).tolist(),
                    "eval": sess.run("y:0", {"x:0": x, "training:0": False}).tolist(), "calls": calls})
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists(TF_PYTHON), reason="TensorFlow is not installed in /tmp/tfvenv")
def test_tensorflow_loads_tfc_saved_models(written):
    import json

    root, _ = written
    jobs = [["simple", ["serve"]], ["built", ["serve"]], ["built", ["train", "gpu"]]]
    result = subprocess.run([TF_PYTHON, "-c", _TF_LOAD, str(root), json.dumps(X.tolist()), json.dumps(jobs)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert [(r["tags"], r["signatures"], r["calls"]) for r in loaded] == [
        (["serve"], ["serving_default"], None), (["serve"], ["serving_default"], 0), (["train", "gpu"], [], 0)]
    for r in loaded:
        np.testing.assert_array_equal(np.array(r["train"], np.float32), _expected(True))
        np.testing.assert_array_equal(np.array(r["eval"], np.float32), _expected(False))
