"""tf.train.Saver, checkpoint management and inspect_checkpoint, against TF 1.15's behaviour.

Expected graphs, files and messages were checked against real TensorFlow (see
tests/fixtures/make_tf_checkpoint.py). The last tests run real TensorFlow in a
subprocess, both directions, when it is available (``import tensorflow`` works, or
TFC_TENSORFLOW_PYTHON names a Python that has it); they are skipped otherwise.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import checkpoint_format as cf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "tf_checkpoint")


@pytest.fixture(autouse=True)
def fresh_graph(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def seed_model():
    """Seed 001: v1, v2 and the ops that change them."""
    v1 = tf.get_variable("v1", shape=(3), initializer=tf.zeros_initializer)
    v2 = tf.get_variable("v2", shape=(5), initializer=tf.zeros_initializer)
    return v1, v2, v1.assign(v1 + 1), v2.assign(v2 - 1)


def save_seed_model(path="model.ckpt", **save_kwargs) -> str:
    v1, v2, inc_v1, dec_v2 = seed_model()
    init = tf.global_variables_initializer()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(init)
        inc_v1.op.run()
        dec_v2.op.run()
        return saver.save(sess, path, **save_kwargs)


# -- the seed program -------------------------------------------------------------------
def test_seed_save_then_partial_restore(capsys):
    save_path = save_seed_model("./model.ckpt")
    print("Model saved in path: %s" % save_path)
    tf.reset_default_graph()
    v1 = tf.get_variable("v1", (3), initializer=tf.zeros_initializer)
    v2 = tf.get_variable("v2", (5), initializer=tf.zeros_initializer)
    saver = tf.train.Saver({"v2": v2})
    with tf.Session() as sess:
        v1.initializer.run()  # v1 is not restored
        saver.restore(sess, "./model.ckpt")
        print("v1: {}".format(v1.eval()))
        print("v2: {}".format(v2.eval()))
    assert capsys.readouterr().out == ("Model saved in path: ./model.ckpt\nv1: [0. 0. 0.]\n"
                                       "v2: [-1. -1. -1. -1. -1.]\n")
    assert sorted(os.listdir(".")) == ["checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index",
                                       "model.ckpt.meta"]
    with open("checkpoint") as f:
        assert f.read() == 'model_checkpoint_path: "model.ckpt"\nall_model_checkpoint_paths: "model.ckpt"\n'


def test_seed_inspect_checkpoint_output(capsys):
    from tfc.python.tools import inspect_checkpoint as ckpt

    save_seed_model("./model.ckpt")
    capsys.readouterr()
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt", tensor_name="", all_tensors=True)
    assert capsys.readouterr().out == ("tensor_name:  v1\n[1. 1. 1.]\ntensor_name:  v2\n[-1. -1. -1. -1. -1.]\n"
                                       "# Total number of params: 8\n")
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt", tensor_name="v1", all_tensors=False)
    assert capsys.readouterr().out == "tensor_name:  v1\n[1. 1. 1.]\n# Total number of params: 8\n"
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt", tensor_name="", all_tensors=False)
    assert capsys.readouterr().out == "v1 (DT_FLOAT) [3]\nv2 (DT_FLOAT) [5]\n\n# Total number of params: 8\n"
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt", tensor_name="", all_tensors=False, all_tensor_names=True,
                                          count_exclude_pattern="v2")
    assert capsys.readouterr().out == ("tensor_name:  v1\ntensor_name:  v2\n# Excluding 1 tensors (5 params) that "
                                       "match v2 when counting.\n# Total number of params: 3\n")
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt", tensor_name="v3", all_tensors=False)
    assert capsys.readouterr().out == "tensor_name:  v3\nKey v3 not found in checkpoint\n"
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt.index", tensor_name="", all_tensors=True)
    out = capsys.readouterr().out
    assert out.startswith("Unable to open table file ./model.ckpt.index: Data loss: this is the index of a V2 "
                          "checkpoint, not a checkpoint prefix: use ./model.ckpt\n")
    assert out.endswith("\nIt's likely that this is a V2 checkpoint and you need to provide the filename\n*prefix*.  "
                        "Try removing the '.' and extension.  Try:\ninspect checkpoint --file_name = ./model.ckpt\n")
    ckpt.print_tensors_in_checkpoint_file("./model.ckpt.data-00000-of-00001", tensor_name="", all_tensors=True)
    assert capsys.readouterr().out.startswith(
        "Unable to open table file ./model.ckpt.data-00000-of-00001: Data loss: file is too short (32 bytes) to be "
        "an sstable: perhaps your file is in a different file format and you need to use a different restore "
        "operator?\n")


def test_inspect_checkpoint_is_reachable_like_tensorflows():
    from tfc.python.tools import inspect_checkpoint

    assert tf.python.tools.inspect_checkpoint is inspect_checkpoint
    assert tf.python.pywrap_tensorflow.NewCheckpointReader is tf.train.NewCheckpointReader


# -- the graph TF builds ------------------------------------------------------------------
def test_saver_graph_matches_tensorflow():
    seed_model()
    saver = tf.train.Saver()
    ops = [op for op in tf.get_default_graph().get_operations() if op.name.startswith("save/")]
    got = [(op.name, op.type, [t.name for t in op.inputs], [c.name for c in op.control_inputs], op.device,
            op._attrs.get("_class")) for op in ops]
    cpu = "/device:CPU:0"
    assert got == [
        ("save/filename/input", "Const", [], [], "", None),
        ("save/filename", "PlaceholderWithDefault", ["save/filename/input:0"], [], "", None),
        ("save/Const", "PlaceholderWithDefault", ["save/filename:0"], [], "", None),
        ("save/SaveV2/tensor_names", "Const", [], [], "", None),
        ("save/SaveV2/shape_and_slices", "Const", [], [], "", None),
        ("save/SaveV2", "SaveV2", ["save/Const:0", "save/SaveV2/tensor_names:0", "save/SaveV2/shape_and_slices:0",
                                   "v1:0", "v2:0"], [], "", None),
        ("save/control_dependency", "Identity", ["save/Const:0"], ["save/SaveV2"], "", ["loc:@save/Const"]),
        ("save/RestoreV2/tensor_names", "Const", [], [], cpu, None),
        ("save/RestoreV2/shape_and_slices", "Const", [], [], cpu, None),
        ("save/RestoreV2", "RestoreV2", ["save/Const:0", "save/RestoreV2/tensor_names:0",
                                         "save/RestoreV2/shape_and_slices:0"], [], cpu, None),
        ("save/Assign", "Assign", ["v1:0", "save/RestoreV2:0"], [], "", ["loc:@v1"]),
        ("save/Assign_1", "Assign", ["v2:0", "save/RestoreV2:1"], [], "", ["loc:@v2"]),
        ("save/restore_all", "NoOp", [], ["save/Assign", "save/Assign_1"], "", None),
    ]
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("save/SaveV2").get_attr("dtypes") == [tf.float32, tf.float32]
    assert graph.get_operation_by_name("save/RestoreV2").get_attr("dtypes") == [tf.float32, tf.float32]
    assert str(graph.get_tensor_by_name("save/RestoreV2:0").shape) == "<unknown>"
    assert graph.get_operation_by_name("save/filename/input").get_attr("value").string_val == [b"model"]
    saver_def = saver.as_saver_def()
    assert (saver_def.filename_tensor_name, saver_def.save_tensor_name, saver_def.restore_op_name) == \
        ("save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert (saver_def.max_to_keep, saver_def.keep_checkpoint_every_n_hours, saver_def.sharded) == (5, 10000.0, False)
    assert saver_def.version == tf.train.SaverDef.V2 == 2


def test_more_savers_get_their_own_scopes():
    v = tf.Variable([1.0, 2.0], name="v")
    tf.train.Saver()
    second = tf.train.Saver({"a": v})
    named = tf.train.Saver([v], name="mine")
    assert second.as_saver_def().restore_op_name == "save_1/restore_all"
    assert named.as_saver_def().save_tensor_name == "mine/control_dependency:0"
    assert tf.get_default_graph().get_operation_by_name("save_1/SaveV2/tensor_names").get_attr(
        "value").string_val == [b"a"]


def test_saver_argument_errors():
    with pytest.raises(ValueError, match="^No variables to save$"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).save(tf.Session(), "empty") is None
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="The same saveable will be restored with two names: b"):
        tf.train.Saver({"a": v, "b": v})
    with pytest.raises(TypeError, match="Not a variable: Tensor"):
        tf.train.Saver({"a": 3})
    with pytest.raises(TypeError, match="Variables to save should be passed in a dict or a list"):
        tf.train.Saver(v)
    with pytest.raises(ValueError, match="build cannot be deferred"):
        tf.train.Saver([v], defer_build=True)


# -- save(): files, global steps, max_to_keep, the checkpoint file ------------------------
def test_global_step_suffixes_and_max_to_keep():
    w = tf.Variable([1.0, 2.0], name="w")
    global_step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    step = tf.assign_add(global_step, 1)
    saver = tf.train.Saver(max_to_keep=2)
    paths = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            sess.run(step)
            paths.append(saver.save(sess, "ckpt/model", global_step=global_step))
        assert saver.save(sess, "ckpt/model", global_step=np.int64(10), write_meta_graph=False) == "ckpt/model-10"
        assert saver.save(sess, "ckpt/model", global_step="global_step:0", write_meta_graph=False) == "ckpt/model-4"
    assert paths == ["ckpt/model-1", "ckpt/model-2", "ckpt/model-3", "ckpt/model-4"]
    assert saver.last_checkpoints == ["ckpt/model-10", "ckpt/model-4"]
    assert sorted(os.listdir("ckpt")) == ["checkpoint", "model-10.data-00000-of-00001", "model-10.index",
                                          "model-4.data-00000-of-00001", "model-4.index", "model-4.meta"]
    with open("ckpt/checkpoint") as f:
        assert f.read() == ('model_checkpoint_path: "model-4"\nall_model_checkpoint_paths: "model-10"\n'
                            'all_model_checkpoint_paths: "model-4"\n')
    assert tf.train.latest_checkpoint("ckpt") == "ckpt/model-4"
    state = tf.train.get_checkpoint_state("ckpt")
    assert state.model_checkpoint_path == "ckpt/model-4"
    assert list(state.all_model_checkpoint_paths) == ["ckpt/model-10", "ckpt/model-4"]
    assert tf.train.checkpoint_exists("ckpt/model-4") and not tf.train.checkpoint_exists("ckpt/model-1")
    assert tf.train.latest_checkpoint("nowhere") is None and tf.train.get_checkpoint_state("nowhere") is None


def test_max_to_keep_none_keeps_files_and_absolute_paths(tmp_path):
    tf.Variable(1.0, name="x")
    saver = tf.train.Saver(max_to_keep=None, pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            saver.save(sess, str(tmp_path / "k" / "m"), global_step=i, write_meta_graph=False)
    assert sorted(os.listdir("k")) == ["checkpoint"] + [f"m-0000000{i}.{s}" for i in range(3)
                                                        for s in ("data-00000-of-00001", "index")]
    with open("k/checkpoint") as f:
        path = str(tmp_path / "k" / "m-00000002")
        assert f.read() == f'model_checkpoint_path: "{path}"\nall_model_checkpoint_paths: "{path}"\n'


def test_save_errors():
    v = tf.Variable([1.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value v"):
            saver.save(sess, "m")
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="^Parent directory of x/y/z/m doesn't exist, can't save.$"):
            saver.save(sess, "x/y/z/m")
        with pytest.raises(ValueError, match="'latest_filename' collides with 'save_path': 'checkpoint' and "
                                             "'ck/checkpoint'"):
            saver.save(sess, "ck/checkpoint")
        with pytest.raises(ValueError, match="'latest_filename' must not contain path components"):
            saver.save(sess, "m", latest_filename="a/b")
        assert saver.save(sess, "one/m", write_meta_graph=False) == "one/m"  # one missing level is created
        with pytest.raises(TypeError, match="'sess' must be a Session"):
            saver.save(None, "m")


def test_save_and_restore_ops_run_with_the_default_filename():
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(saver.as_saver_def().save_tensor_name) == b"model"  # TF's default prefix
        assert os.path.exists("model.index")
        sess.run(v.assign([5.0, 6.0]))
        sess.run(saver.as_saver_def().restore_op_name)
        assert sess.run(v).tolist() == [1.0, 2.0]


# -- restore() ------------------------------------------------------------------------------
def test_restore_errors_name_the_problem():
    save_seed_model("model.ckpt")
    tf.reset_default_graph()
    tf.get_variable("v3", (3,), initializer=tf.zeros_initializer)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError) as info:
            saver.restore(sess, "model.ckpt")
        assert info.value.message == (
            "Restoring from checkpoint failed. This is most likely due to a Variable name or other graph key that "
            "is missing from the checkpoint. Please ensure that you have not altered the graph expected based on "
            "the checkpoint. Original error:\n\nKey v3 not found in checkpoint")
        assert info.value.op.name == "save/RestoreV2"
        with pytest.raises(ValueError, match="^The passed save_path is not a valid checkpoint: nope.ckpt$"):
            saver.restore(sess, "nope.ckpt")
        with pytest.raises(ValueError, match="Can't load save_path when it is None."):
            saver.restore(sess, None)
    tf.reset_default_graph()
    tf.get_variable("v1", (4,), initializer=tf.zeros_initializer)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"due to a mismatch between the current graph and "
                           r"the graph from the checkpoint(.|\n)*Assign requires shapes of both tensors to match. "
                           r"lhs shape= \[4\] rhs shape= \[3\]"):
            saver.restore(sess, "model.ckpt")
    tf.reset_default_graph()
    tf.get_variable("v1", (3,), dtype=tf.float64, initializer=tf.zeros_initializer)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="tensor_name = v1; expected dtype float64 does not "
                                                                 "equal original dtype float32"):
            saver.restore(sess, "model.ckpt")


@pytest.mark.parametrize("shape, lhs", [((2, 3), "[2,3]"), ((), "[]")])
def test_restore_into_a_variable_of_another_rank_is_invalid_argument(shape, lhs):
    """v1 was saved with shape [3]; TF 2.x's Saver.restore into ref variables of rank 2 and
    rank 0 gives these messages (a run-time Assign error, not a compile error)."""
    save_seed_model("model.ckpt")
    tf.reset_default_graph()
    tf.get_variable("v1", shape, initializer=tf.zeros_initializer)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            saver.restore(sess, "model.ckpt")
    assert info.value.message == (
        "Restoring from checkpoint failed. This is most likely due to a mismatch between the current graph and the "
        "graph from the checkpoint. Please ensure that you have not altered the graph expected based on the "
        "checkpoint. Original error:\n\nAssign requires shapes of both tensors to match. "
        f"lhs shape= {lhs} rhs shape= [3]")
    assert info.value.op.name == "save/Assign"


def test_assign_of_a_fed_value_of_another_rank_is_invalid_argument():
    v = tf.Variable(tf.zeros([2, 3]), name="v")
    p = tf.placeholder(tf.float32)
    assign = tf.assign(v, p)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(assign, {p: np.zeros([3], np.float32)})
    assert info.value.message == "Assign requires shapes of both tensors to match. lhs shape= [2,3] rhs shape= [?]"
    assert info.value.op is assign.op


def test_restore_of_a_corrupt_checkpoint_is_data_loss():
    save_seed_model("model.ckpt", write_meta_graph=False)
    with open("model.ckpt.data-00000-of-00001", "r+b") as f:
        f.seek(5)
        f.write(b"\x42")
    tf.reset_default_graph()
    v1, v2, _, _ = seed_model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DataLossError, match=r"model\.ckpt\.data-00000-of-00001: Checksum does not "
                                                          r"match for key v1"):
            saver.restore(sess, "model.ckpt")
    with open("model.ckpt.index", "r+b") as f:
        f.truncate(100)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DataLossError, match=r"model\.ckpt\.index"):
            saver.restore(sess, "model.ckpt")


def test_restore_with_reshape():
    tf.Variable(np.arange(6, dtype=np.float32), name="m")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, "flat", write_meta_graph=False)
    tf.reset_default_graph()
    m = tf.Variable(tf.zeros([2, 3]), name="m")
    saver = tf.train.Saver(reshape=True)
    with tf.Session() as sess:
        saver.restore(sess, "flat")
        np.testing.assert_array_equal(sess.run(m), np.arange(6).reshape(2, 3))


def test_restores_the_tensorflow_fixture():
    path = tf.train.latest_checkpoint(FIXTURE)
    assert path == os.path.join(FIXTURE, "model.ckpt-7")
    weights = tf.Variable(tf.zeros([2, 3]), name="weights")
    bias = tf.get_variable("renamed_bias", shape=[3])
    counts = tf.Variable(np.zeros(4, np.int64), name="counts")
    scale = tf.Variable(0.0, dtype=tf.float64, name="scale")
    ids = tf.Variable([0, 0, 0], name="ids")
    mask = tf.Variable([False] * 3, name="mask")
    step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    saver = tf.train.Saver({"weights": weights, "layer/bias": bias, "counts": counts, "scale": scale, "ids": ids,
                            "mask": mask, "global_step": step})
    with tf.Session() as sess:
        saver.restore(sess, path)
        got = sess.run([weights, bias, counts, scale, ids, mask, step])
    np.testing.assert_array_equal(got[0], np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5)
    np.testing.assert_array_equal(got[1], [1.5, -2.25, 3.0])
    assert got[2].dtype == np.int64 and got[2].tolist() == [1, -2, 3_000_000_000_000, -4]
    assert got[3] == 2.718281828459045 and got[4].tolist() == [7, 8, 9]
    assert got[5].tolist() == [True, False, True] and got[6] == 7


def test_io_ops_directly():
    from tfc.frontend import saver as saver_module

    a = tf.constant([[1, 2], [3, 4]], dtype=tf.int64)
    b = tf.constant(0.5, dtype=tf.float64)
    save_a = saver_module.save_v2("parts/p0", ["a"], [""], [a])
    save_b = saver_module.save_v2("parts/p1", ["b"], [""], [b], name="save_b")
    merge = saver_module.merge_v2_checkpoints(["parts/p0", "parts/p1"], "merged/all")
    restored = saver_module.restore_v2("merged/all", ["b", "a"], ["", ""], [tf.float64, tf.int64])
    assert [save_a.name, save_b.name, merge.name, restored[0].op.name] == ["SaveV2", "save_b", "MergeV2Checkpoints",
                                                                            "RestoreV2"]
    with tf.Session() as sess:
        sess.run([save_a, save_b])
        sess.run(merge)
        assert sorted(os.listdir("merged")) == ["all.data-00000-of-00002", "all.data-00001-of-00002", "all.index"]
        assert not os.path.exists("parts")  # delete_old_dirs
        got_b, got_a = sess.run(restored)
    assert got_b == 0.5 and got_a.tolist() == [[1, 2], [3, 4]]
    assert tf.train.NewCheckpointReader("merged/all").get_variable_to_shape_map() == {"a": [2, 2], "b": []}
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 0"):
        saver_module.restore_v2("x", "a", [""], [tf.float32])


# -- reading checkpoints --------------------------------------------------------------------
def test_list_variables_and_checkpoint_reader():
    assert tf.train.list_variables(FIXTURE) == [
        ("counts", [4]), ("global_step", []), ("ids", [3]), ("layer/bias", [3]), ("mask", [3]), ("names", [3]),
        ("scale", []), ("weights", [2, 3])]
    reader = tf.train.NewCheckpointReader(os.path.join(FIXTURE, "model.ckpt-7"))
    assert reader.has_tensor("ids") and not reader.has_tensor("nope")
    assert reader.get_variable_to_dtype_map()["scale"] == tf.float64
    assert reader.get_variable_to_shape_map()["weights"] == [2, 3]
    step = reader.get_tensor("global_step")
    assert isinstance(step, np.int64) and step == 7
    assert reader.get_tensor("names").tolist() == [b"alpha", b"", "gamma γ".encode()]
    assert reader.debug_string().startswith(b"counts (DT_INT64) [4]\nglobal_step (DT_INT64) []\n")
    with pytest.raises(tf.errors.NotFoundError, match="^Key v3 not found in checkpoint$"):
        reader.get_tensor("v3")
    assert tf.train.load_checkpoint(FIXTURE).get_tensor("ids").tolist() == [7, 8, 9]
    assert tf.train.load_variable(FIXTURE, "ids:0").tolist() == [7, 8, 9]
    with pytest.raises(tf.errors.NotFoundError, match="Unsuccessful TensorSliceReader constructor: Failed to find "
                                                      "any matching files for nope"):
        tf.train.NewCheckpointReader("nope")
    os.mkdir("empty")
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints in given directory"):
        tf.train.list_variables("empty")


# -- meta graphs ------------------------------------------------------------------------------
def test_meta_graph_contents():
    v1, v2, _, _ = seed_model()
    tf.add_to_collection("train_op", v1.op)
    tf.add_to_collection("ints", 3)
    saver = tf.train.Saver()
    meta = saver.export_meta_graph()
    assert meta.meta_info_def.tensorflow_version == "1.15.0"
    assert "SaveV2" in [op.name for op in meta.meta_info_def.stripped_op_list.op]
    assert meta.saver_def == saver.as_saver_def()
    # VariableDef bytes exactly as TensorFlow writes them.
    assert meta.collection_def["variables"].bytes_list.value[0] == (
        b"\n\x04v1:0\x12\tv1/Assign\x1a\tv1/read:02\x16v1/Initializer/zeros:08\x01")
    assert list(meta.collection_def["trainable_variables"].bytes_list.value) == \
        list(meta.collection_def["variables"].bytes_list.value)
    assert list(meta.collection_def["train_op"].node_list.value) == ["v1"]
    assert list(meta.collection_def["ints"].int64_list.value) == [3]
    nodes = {n.name: n for n in meta.graph_def.node}
    assert nodes["save/RestoreV2"].device == "/device:CPU:0"
    assert len(nodes["v1"].attr["_output_shapes"].list.shape) == 1
    tf.train.export_meta_graph("as_text.meta", as_text=True)
    assert open("as_text.meta").read().startswith("meta_info_def {")


def test_import_meta_graph_round_trip():
    w = tf.Variable([1.0, 2.0], name="w")
    global_step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, global_step)
    train = tf.group(tf.assign_add(w, [1.0, 1.0]), tf.assign_add(global_step, 1), name="train")
    tf.add_to_collection("train_op", train)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = saver.save(sess, "run/model", global_step=global_step)
    assert path == "run/model-1"
    tf.reset_default_graph()
    restored = tf.train.import_meta_graph(path + ".meta")
    assert restored.as_saver_def().restore_op_name == "save/restore_all"
    assert [v.name for v in tf.global_variables()] == ["w:0", "global_step:0"]
    assert [v.name for v in tf.trainable_variables()] == ["w:0"]
    assert tf.global_variables()[0] is tf.trainable_variables()[0]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP)[0].name == "global_step:0"
    train_op = tf.get_collection("train_op")[0]
    assert train_op.name == "train"
    with tf.Session() as sess:
        restored.restore(sess, tf.train.latest_checkpoint("run"))
        assert sess.run("w:0").tolist() == [2.0, 3.0]
        sess.run(train_op)
        assert sess.run(tf.global_variables()[1]) == 2
        assert restored.save(sess, "run/model", global_step=2) == "run/model-2"
    assert tf.train.list_variables("run") == [("global_step", []), ("w", [2])]
    tf.reset_default_graph()
    scoped = tf.train.import_meta_graph(path + ".meta", import_scope="copy")
    assert scoped.as_saver_def().filename_tensor_name == "copy/save/Const:0"
    assert [v.name for v in tf.global_variables()] == ["copy/w:0", "copy/global_step:0"]
    with tf.Session() as sess:
        scoped.restore(sess, path)
        assert sess.run("copy/w:0").tolist() == [2.0, 3.0]


def test_import_meta_graph_written_by_tensorflow():
    saver = tf.train.import_meta_graph(os.path.join(FIXTURE, "model.ckpt-7.meta"))
    assert saver.as_saver_def().restore_op_name == "save/restore_all"
    assert sorted(v.name for v in tf.global_variables()) == [
        "counts:0", "global_step:0", "ids:0", "layer/bias:0", "mask:0", "names:0", "scale:0", "weights:0"]
    assert "global_step:0" not in [v.name for v in tf.trainable_variables()]
    restore = tf.get_default_graph().get_operation_by_name("save/RestoreV2")
    assert restore.get_attr("dtypes")[:2] == [tf.int64, tf.int64]


# -- real TensorFlow, both directions ------------------------------------------------------------
def _tensorflow_python():
    candidate = os.environ.get("TFC_TENSORFLOW_PYTHON")
    if candidate:
        return candidate
    try:
        import importlib.util

        if importlib.util.find_spec("tensorflow") is not None:
            return sys.executable
    except (ImportError, ValueError):
        pass
    return None


TF_PYTHON = _tensorflow_python()
needs_tensorflow = pytest.mark.skipif(TF_PYTHON is None, reason="TensorFlow is not installed (set "
                                                                 "TFC_TENSORFLOW_PYTHON to a Python that has it)")


TF_PRELUDE = """
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
tf.disable_resource_variables()
"""


def run_tensorflow(script: str, cwd) -> str:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)
    result = subprocess.run([TF_PYTHON, "-c", TF_PRELUDE + textwrap.dedent(script)], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@needs_tensorflow
def test_tensorflow_restores_what_tfc_writes(tmp_path):
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="dense/kernel")
    n = tf.Variable(np.array([5, -6], np.int64), name="n")
    d = tf.Variable(np.float64(0.125), name="d")
    step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    tf.add_to_collection("train_op", tf.assign_add(step, 3).op)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_collection("train_op"))
        saver.save(sess, str(tmp_path / "tfc_model"), global_step=step)
    out = run_tensorflow("""
        reader = tf.train.load_checkpoint(".")
        print(sorted(reader.get_variable_to_shape_map().items()))
        w = tf.Variable(tf.zeros([2, 3]), name="dense/kernel")
        n = tf.Variable(np.zeros(2, np.int64), name="n")
        d = tf.Variable(0.0, dtype=tf.float64, name="d")
        step = tf.Variable(0, dtype=tf.int64, name="global_step")
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, tf.train.latest_checkpoint("."))
            print(sess.run(w).tolist(), sess.run(n).tolist(), sess.run(d), sess.run(step))
        tf.reset_default_graph()
        saver = tf.train.import_meta_graph("tfc_model-3.meta")
        with tf.Session() as sess:
            saver.restore(sess, "tfc_model-3")
            print([v.name for v in tf.global_variables()], sess.run("n:0").tolist())
            sess.run(tf.get_collection("train_op"))
            print(sess.run("global_step:0"))
    """, tmp_path)
    assert out.splitlines() == [
        "[('d', []), ('dense/kernel', [2, 3]), ('global_step', []), ('n', [2])]",
        "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] [5, -6] 0.125 3",
        "['dense/kernel:0', 'n:0', 'd:0', 'global_step:0'] [5, -6]",
        "6",
    ]


@needs_tensorflow
def test_tfc_restores_what_tensorflow_writes(tmp_path):
    run_tensorflow("""
        v = tf.Variable([[1.5, 2.5]], name="v")
        c = tf.Variable(np.array([7, 8, 9], np.int32), name="scope/c")
        s = tf.Variable(np.array(["x", "yz"], dtype=object), name="s", dtype=tf.string)
        step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(max_to_keep=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(3):
                sess.run(tf.assign_add(step, 5))
                saver.save(sess, "ckpt/tf_model", global_step=step)
        names = ["name_%05d/" % i + "with/a/long/suffix/" * 6 for i in range(2500)]
        with tf.Session() as sess:
            sess.run(tf.raw_ops.SaveV2(prefix="big", tensor_names=names + ["str"], shape_and_slices=[""] * 2501,
                                       tensors=[np.arange(2500, dtype=np.float32)[:, None][i] for i in range(2500)]
                                       + [np.array([b"a", b""], dtype=object)]))
    """, tmp_path)
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["checkpoint", "tf_model-15.data-00000-of-00001",
                                                     "tf_model-15.index", "tf_model-15.meta"]
    v = tf.Variable(tf.zeros([1, 2]), name="v")
    c = tf.Variable([0, 0, 0], name="scope/c")
    step = tf.Variable(0, dtype=tf.int64, name="global_step")
    with tf.Session() as sess:
        tf.train.Saver([v, c, step]).restore(sess, tf.train.latest_checkpoint(str(tmp_path / "ckpt")))
        assert sess.run(v).tolist() == [[1.5, 2.5]] and sess.run(c).tolist() == [7, 8, 9] and sess.run(step) == 15
    assert tf.train.load_variable(str(tmp_path / "ckpt"), "s").tolist() == [b"x", b"yz"]
    # A two-block index: tfc reads it and writes the same bytes.
    reader = cf.BundleReader(str(tmp_path / "big"))
    items = [(key, reader.lookup(key), reader.dtype(key)) for key in reader.keys()]
    assert len(items) == 2501 and items[-1][1].tolist() == [b"a", b""]
    assert os.path.getsize(tmp_path / "big.index") > 262144  # more than one data block
    cf.write_bundle(str(tmp_path / "mine"), items)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(tmp_path / ("big" + suffix), "rb") as theirs, open(tmp_path / ("mine" + suffix), "rb") as ours:
            assert theirs.read() == ours.read()
