"""The tfc client workload shared by the transcript recorder and its replay test."""
from __future__ import annotations

import tfc.compat.v1 as tf
from tfc.frontend import errors


def tfc_client_workload(target: str) -> dict:
    """Run tfc's client on the master at ``target``; what it saw, as plain data."""
    out = {}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="tfc_on_tf_v")
        y = tf.matmul(x, v, name="y")
        bump = tf.assign_add(v, tf.ones([2, 2]), name="bump")
        words = tf.constant(["ab", "", "cde"], name="words")
        count = tf.constant([7, 8], tf.int64, name="count")
        with tf.Session(target) as sess:
            try:
                sess.run(y, {x: [[1.0, 1.0]]})
            except errors.OpError as e:
                out["uninitialized"] = [type(e).__name__, e.op.name if e.op is not None else None,
                                        "Attempting to use uninitialized value tfc_on_tf_v" in e.message]
            sess.run(tf.global_variables_initializer())
            got = sess.run({"y": y, "w": words, "c": count, "fed": x}, {x: [[1.0, 1.0]]})
            out["y"] = [got["y"].tolist(), str(got["y"].dtype)]
            out["words"] = got["w"].tolist()
            out["count"] = [got["c"].tolist(), str(got["c"].dtype)]
            out["fed"] = got["fed"].tolist()
            out["bump"] = sess.run(bump).tolist()
            doubled = tf.identity(v * 2.0, name="doubled")  # ExtendSession
            out["doubled"] = sess.run(doubled).tolist()
            out["devices"] = sorted(d.name for d in sess.list_devices())
        with tf.Session(target) as sess:
            out["persisted"] = sess.run(v).tolist()
        tf.Session.reset(target)
        with tf.Session(target) as sess:
            try:
                sess.run(v)
            except errors.OpError as e:
                out["after_reset"] = type(e).__name__
    return out


EXPECTED = {
    "uninitialized": ["FailedPreconditionError", "tfc_on_tf_v/read", True],
    "y": [[[4.0, 6.0]], "float32"],
    "words": [b"ab", b"", b"cde"],
    "count": [[7, 8], "int64"],
    "fed": [[1.0, 1.0]],
    "bump": [[2.0, 3.0], [4.0, 5.0]],
    "doubled": [[4.0, 6.0], [8.0, 10.0]],
    "devices": ["/job:chief/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"],
    "persisted": [[2.0, 3.0], [4.0, 5.0]],
    "after_reset": "FailedPreconditionError",
}
