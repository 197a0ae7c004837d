"""tf.train.Saver over eager variables (``save(None, prefix)`` / ``restore(None, prefix)``,
TF 1.x's eager Saver): the V2 bundle TF writes (keys, dtypes, shapes and files recorded
with real TensorFlow in tests/fixtures/tf_eager_data.json), restores in place, TF's
errors, and checkpoints moving between eager mode and graph mode both ways."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager_data.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)["checkpoint"]

KERNEL = np.arange(6, dtype=np.float32).reshape(2, 3)
BIAS = np.array([1.5, -2.0], np.float64)


def _variables():
    return (tf.Variable(KERNEL, name="dense/kernel"), tf.Variable(BIAS, name="dense/bias"),
            tf.Variable(7, dtype=tf.int64, name="global_step"))


def test_save_writes_what_tensorflow_writes(tmp_path):
    w, b, step = _variables()
    saver = tf.train.Saver([w, b, step])
    prefix = saver.save(None, str(tmp_path / "model"), global_step=3)
    assert os.path.basename(prefix) == TF["prefix_name"]
    assert sorted(os.listdir(tmp_path)) == TF["files"]  # no .meta in eager mode
    state = (tmp_path / "checkpoint").read_text().replace(str(tmp_path) + os.sep, "<dir>/")
    assert state == TF["state"]
    reader = tf.train.load_checkpoint(prefix)
    entries = {k: [reader.get_variable_to_dtype_map()[k].name, s] for k, s in
               reader.get_variable_to_shape_map().items()}
    assert entries == {k: [dtype, shape] for k, (dtype, shape) in TF["entries"].items()}
    np.testing.assert_array_equal(reader.get_tensor("dense/kernel"), KERNEL)
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
    # a global step given as a variable
    assert saver.save(None, str(tmp_path / "model"), global_step=step).endswith("model-7")
    # a dict names the keys
    prefix2 = tf.train.Saver({"renamed": w}).save(None, str(tmp_path / "dict"), write_state=False)
    assert sorted(tf.train.load_checkpoint(prefix2).get_variable_to_shape_map()) == TF["dict_keys"]


def test_restore_in_place_and_errors(tmp_path):
    w, b, step = _variables()
    saver = tf.train.Saver([w, b, step])
    prefix = saver.save(None, str(tmp_path / "model"))
    w.assign(tf.zeros([2, 3]))
    step.assign_add(5)
    read_before = b.read_value()
    b.assign([0.0, 0.0])
    saver.restore(None, prefix)
    np.testing.assert_array_equal(w.numpy(), KERNEL)
    np.testing.assert_array_equal(b.numpy(), BIAS)
    assert step.numpy() == 7
    np.testing.assert_array_equal(read_before.numpy(), BIAS)  # values read before stay as they were
    w.assign_add(tf.ones([2, 3]))  # the restored buffer is the variable's own
    np.testing.assert_array_equal(w.numpy(), KERNEL + 1)

    with pytest.raises(RuntimeError, match=TF["no_var_list"]["message"].replace("`", ".")):
        tf.train.Saver()
    with pytest.raises(ValueError, match="At least two variables have the same name: dense/kernel"):
        tf.train.Saver([w, tf.Variable(1.0, name="dense/kernel")]).save(None, str(tmp_path / "x"))
    with pytest.raises(tf.errors.NotFoundError, match="Key missing not found in checkpoint"):
        tf.train.Saver([tf.Variable(1.0, name="missing")]).restore(None, prefix)
    with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(2,\) are incompatible"):
        tf.train.Saver({"dense/bias": tf.Variable([1.0, 2.0, 3.0], dtype=tf.float64)}).restore(None, prefix)
    with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint"):
        saver.restore(None, str(tmp_path / "nothing"))


def test_eager_checkpoint_restores_in_graph_mode_and_back(tmp_path):
    w, b, _ = _variables()
    eager_prefix = tf.train.Saver([w, b]).save(None, str(tmp_path / "eager"))
    with tf.Graph().as_default():
        gw = tf.Variable(tf.zeros([2, 3]), name="dense/kernel")
        gb = tf.Variable(tf.zeros([2], tf.float64), name="dense/bias")
        graph_saver = tf.train.Saver()
        with tf.Session() as sess:
            graph_saver.restore(sess, eager_prefix)
            got_w, got_b = sess.run([gw, gb])
            sess.run([gw.assign(gw * 3.0), gb.assign(gb - 1.0)])
            graph_prefix = graph_saver.save(sess, str(tmp_path / "graph"))
    np.testing.assert_array_equal(got_w, KERNEL)
    np.testing.assert_array_equal(got_b, BIAS)
    w2 = tf.Variable(np.zeros((2, 3), np.float32), name="dense/kernel")
    b2 = tf.Variable(np.zeros(2), name="dense/bias")
    tfe.Saver([w2, b2]).restore(graph_prefix)
    np.testing.assert_array_equal(w2.numpy(), KERNEL * 3)
    np.testing.assert_array_equal(b2.numpy(), BIAS - 1)
    assert tfe.Saver([w2]).save(str(tmp_path / "tfe"), global_step=2).endswith("tfe-2")
