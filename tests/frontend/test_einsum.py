"""tf.einsum as TF 1.15 builds it (Transpose / Reshape / MatMul graphs under ``einsum/``),
its values and gradients, and the ``Einsum`` op of TF 2.x GraphDefs with its gradient
(tests/fixtures/einsum.json, made by tests/fixtures/make_tf_einsum.py with real TF).

The fixture's ``programs`` come from TF 2.x's ``special_math_ops._einsum_v1``, which is TF
1.15's einsum kept verbatim (modulo error texts); known differences of TF 2.x's other code
from 1.15 are listed in ``_TF2_ONLY``."""
import base64
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.ops.extra_ops import einsum_op
from tfc.protos import GraphDef

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_einsum", os.path.join(_FIXTURES, "make_tf_einsum.py"))
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)  # PROGRAMS / EINSUM_OPS / feeds_for; TensorFlow only in its main()

with open(os.path.join(_FIXTURES, "einsum.json")) as _f:
    FIXTURE = json.load(_f)

# Nodes TF 2.x builds that TF 1.15 does not:
# - a Reshape to the scalar shape ``()``: 2.x's op_def_library first converts ``()``
#   without the Tshape default (a float32 Const, ``shape``) and converts it again as
#   int32 (``shape_1``); 1.15 converts once, preferring int32.
_TF2_ONLY = {"dot_all": ["einsum/Reshape_2/shape"]}
_TF2_RENAMED = {"dot_all": {"einsum/Reshape_2/shape_1": "einsum/Reshape_2/shape"}}


def _build(name):
    equation, shapes, fed = maker.PROGRAMS[name]
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float32, s, name=f"x{i}") for i, s in enumerate(shapes)]
        y = tf.einsum(equation, *xs)
        nodes = [[op.name, op.type] for op in graph.get_operations()]
        grads = tf.gradients(tf.reduce_sum(y * y), xs)
    seed = sorted(maker.PROGRAMS).index(name)
    return graph, xs, y, grads, nodes, dict(zip(xs, maker.feeds_for(fed, seed)))


def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(maker.PROGRAMS)
    assert sorted(FIXTURE["einsum_op"]) == sorted(maker.EINSUM_OPS)


@pytest.mark.parametrize("name", sorted(set(maker.PROGRAMS) - {"trace"}))
def test_graph_is_tf_115s(name):
    expected = FIXTURE["programs"][name]["nodes"]
    dropped = set(_TF2_ONLY.get(name, ()))
    renamed = _TF2_RENAMED.get(name, {})
    expected = [[renamed.get(n, n), t] for n, t in expected if n not in dropped]
    *_, nodes, _ = _build(name)
    assert nodes == expected


def test_trace_is_tf_115s_trace():
    # 1.15's tf.trace: Sum(MatrixDiagPart(x), [-1]) named ``Trace`` (2.x uses MatrixDiagPartV3)
    *_, nodes, _ = _build("trace")
    assert nodes == [["x0", "Placeholder"], ["einsum/Trace/diag_part", "MatrixDiagPart"],
                     ["einsum/Trace/reduction_indices", "Const"], ["einsum/Trace", "Sum"]]


@pytest.mark.parametrize("name", sorted(maker.PROGRAMS))
def test_values_and_gradients(name):
    graph, xs, y, grads, _, feeds = _build(name)
    expected = FIXTURE["programs"][name]
    assert y.name == expected["output"] or name == "trace"
    with graph.as_default(), tf.Session() as sess:
        value, grad_values = sess.run([y, grads], feeds)
    np.testing.assert_allclose(value, np.asarray(expected["value"], np.float32), rtol=1e-5, atol=1e-5)
    for got, want in zip(grad_values, expected["grads"]):
        np.testing.assert_allclose(got, np.asarray(want, np.float32), rtol=1e-4, atol=1e-4)


def test_einsum_errors_and_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 3])
        with pytest.raises(ValueError, match="Subscript not supported: an axis appears more than once: ii"):
            tf.einsum("ii->i", x)
        with pytest.raises(ValueError, match='Got 1 arguments for equation "ij,jk->ik", expecting 2'):
            tf.einsum("ij,jk->ik", x)
        with pytest.raises(ValueError, match="Indices have incorrect format: ij-ki"):
            tf.einsum("ij-ki", x)
        with pytest.raises(TypeError, match="invalid keyword arguments for this function: foo"):
            tf.einsum("ij->ji", x, foo=1)
        assert tf.einsum("ij->ji", x, name="swap").name == "swap/transpose:0"
        assert tf.linalg.einsum is tf.einsum and tf.linalg.trace is tf.trace


# -- the Einsum op (TF 2.x GraphDefs) ---------------------------------------------------------
@pytest.mark.parametrize("name", sorted(maker.EINSUM_OPS))
def test_einsum_op_values_and_gradients(name):
    equation, shapes = maker.EINSUM_OPS[name]
    expected = FIXTURE["einsum_op"][name]
    values = maker.feeds_for(shapes, 100 + sorted(maker.EINSUM_OPS).index(name))
    with tf.Graph().as_default():
        xs = [tf.constant(v) for v in values]
        y = einsum_op(xs, equation)
        assert y.op.type == "Einsum" and y.shape.as_list() == expected["shape"]
        grads = tf.gradients(tf.reduce_sum(y * y), xs)
        with tf.Session() as sess:
            value, grad_values = sess.run([y, grads])
    np.testing.assert_allclose(value, np.asarray(expected["value"], np.float32), rtol=1e-5, atol=1e-5)
    for got, want in zip(grad_values, expected["grads"]):
        np.testing.assert_allclose(got, np.asarray(want, np.float32), rtol=1e-4, atol=1e-4)


def test_imported_tf2_graph_with_einsum_nodes_runs():
    record = FIXTURE["graph_def"]
    graph_def = GraphDef()
    graph_def.ParseFromString(base64.b64decode(record["pb"]))
    x_value, y_value = maker.feeds_for([[5, 2, 3], [3, 4]], 7)
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        assert [op.name for op in graph.get_operations() if op.type == "Einsum"] == record["einsum_nodes"]
        with tf.Session() as sess:
            out, out_t = sess.run(["out:0", "out_t:0"], {"x:0": x_value, "y:0": y_value})
    np.testing.assert_allclose(out, np.asarray(record["out"], np.float32), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out_t, np.asarray(record["out_t"], np.float32), rtol=1e-5, atol=1e-5)
