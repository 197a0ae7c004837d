"""TF 1.15's clipping functions (tf.clip_by_value, tf.clip_by_norm, tf.global_norm,
tf.clip_by_global_norm, tf.clip_by_average_norm): tfc builds TensorFlow's graphs node for
node, computes its values and gradients, and raises its errors
(tests/fixtures/clip_graphs.json, made by tests/fixtures/make_tf_clip_graphs.py).

The fixture was made with TF 2.x, which builds some of these graphs differently from TF
1.15 (tfc's reference). It holds both the installed TF's graphs (``programs``) and the
graphs of TF 1.15's Python functions run on the same TF (``programs_tf115``); tfc is
compared with the latter, and ``test_tf2_differs_from_tf115_only_as_known`` checks that the
two differ exactly in the documented ways (so the 1.15 reconstruction is not a free hand)."""
import importlib.util
import copy
import json
import math
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import clip_ops

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_clip_graphs", os.path.join(_FIXTURES, "make_tf_clip_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "clip_graphs.json")) as _f:
    FIXTURE = json.load(_f)

# Attrs TF 2.x adds that TF 1.15 never wrote (MatMul's grad_a/grad_b are newer than 1.15).
_TF2_ONLY_ATTRS = {"_has_manual_control_dependencies", "grad_a", "grad_b"}


def _strip(nodes):
    nodes = copy.deepcopy(nodes)  # the fixture itself stays as loaded
    for node in nodes:
        for attr in _TF2_ONLY_ATTRS:
            node["attrs"].pop(attr, None)
    return nodes


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        result = programs.PROGRAMS[name](tf)
    return graph, result


# -- the graphs, node for node ---------------------------------------------------------------
def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs_tf115"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["values"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors_tf115"]) == sorted(programs.ERRORS)


# Differences of the fixture's TF (2.x) from TF 1.15 outside clip_ops.py, accounted for here:
# - ones_like of a fully defined shape: TF 1.15's shape_internal names the shape Const
#   ``ones_like/Shape``; TF 2.x ``ones_like/Shape/shape_as_tensor``.
# - gradients: TF 2.x's gradient functions use static shapes (no BroadcastGradientArgs,
#   ``SelectV2`` in Maximum/Minimum's gradient, ``grad_ys_0`` a Fill), TF 1.15's (and tfc's)
#   do not; so for the programs calling tf.gradients only the nodes outside ``gradients/``
#   are compared node for node (their values are compared below), and an input coming from
#   ``gradients/`` is compared as ``gradients/...``.
_GRADIENT_PROGRAMS = {"gradient_clip_by_value", "gradient_clip_by_global_norm", "gradient_clip_by_norm",
                      "train_clip_by_global_norm"}


def _tf115_ones_like(name):
    return name.replace("/ones_like/Shape/shape_as_tensor", "/ones_like/Shape")


def _as_tf115(nodes):
    for node in nodes:
        node["name"] = _tf115_ones_like(node["name"])
        node["inputs"] = [_tf115_ones_like(i) for i in node["inputs"]]
    return nodes


def _forward_only(nodes):
    kept = copy.deepcopy([n for n in nodes if not n["name"].startswith("gradients/")])
    for node in kept:
        node["inputs"] = ["gradients/..." if i.lstrip("^").startswith("gradients/") else i for i in node["inputs"]]
        groups = node["attrs"].get("_class", {}).get("list", {}).get("s")
        if groups:  # colocated with a gradient tensor (global_norm's L2Loss of a gradient)
            node["attrs"]["_class"]["list"]["s"] = ["loc:@gradients/..." if g.startswith("loc:@gradients/") else g
                                                    for g in groups]
    return kept


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_matches_tensorflow_1_15(name):
    expected = _as_tf115(_strip(FIXTURE["programs_tf115"][name]))
    graph, _ = build(name)
    got = programs.record_graph(graph)
    if name in _GRADIENT_PROGRAMS:
        expected, got = _forward_only(expected), _forward_only(got)
        assert any(n["op"] in ("Maximum", "Select") for n in got)
    assert [(n["name"], n["op"]) for n in got] == [(n["name"], n["op"]) for n in expected]
    for got_node, expected_node in zip(got, expected):
        assert got_node == expected_node, got_node["name"]


def _names(nodes):
    return [(n["name"], n["op"], tuple(n["inputs"])) for n in nodes]


# Programs whose TF 2.x graph is TF 1.15's (the functions used did not change).
_SAME_IN_TF2 = ["clip_by_value_basic", "clip_by_value_unknown_shape", "clip_by_norm_basic", "global_norm_basic",
                "clip_by_average_norm_basic", "gradient_clip_by_value", "gradient_clip_by_norm"]


@pytest.mark.parametrize("name", _SAME_IN_TF2)
def test_tf2_graph_is_tf115_graph(name):
    assert _strip(FIXTURE["programs"][name]) == _strip(FIXTURE["programs_tf115"][name])


def test_tf2_differs_from_tf115_only_as_known():
    """The explicit accounting of TF 2.x vs 1.15: clip_by_norm with a tensor clip_norm
    (2.x adds ``Maximum``(clip_norm, 0) first, and a ``Cast`` of it unless the dtypes
    already agree, as here; so its final maximum is ``Maximum_1``), and clip_by_global_norm's NaN scale (1.15: ``IsFinite``, ``Const_1``
    (nan), ``Select``; 2.x: ``sub`` = norm - norm, ``add`` = scale + sub)."""
    tf2 = _names(_strip(FIXTURE["programs"]["clip_by_norm_tensor"]))
    tf115 = _names(_strip(FIXTURE["programs_tf115"]["clip_by_norm_tensor"]))
    added = [n for n in tf2 if n[0] in ("clip_by_norm/Maximum/y", "clip_by_norm/Maximum")]
    assert added == [("clip_by_norm/Maximum/y", "Const", ()), ("clip_by_norm/Maximum", "Maximum", ("c", "clip_by_norm/Maximum/y"))]
    assert tf2[2:4] == added  # right after the placeholders, before clip_by_norm/mul
    rename = {"clip_by_norm/Maximum_1": "clip_by_norm/Maximum", "clip_by_norm/Maximum": "c"}
    mapped = [(rename.get(n, n), op, tuple(rename.get(i, i) for i in ins)) for n, op, ins in tf2 if
              (n, op, ins) not in added]
    assert mapped == tf115

    tf2 = _names(_strip(FIXTURE["programs"]["clip_by_global_norm_basic"]))
    tf115 = _names(_strip(FIXTURE["programs_tf115"]["clip_by_global_norm_basic"]))
    for scope, norm in (("clip_by_global_norm", "global_norm/global_norm"),
                        ("loose_1", "loose/global_norm"), ("clip_by_global_norm_1", "Const")):
        sub, add = (scope + "/sub", "Sub", (norm, norm)), (scope + "/add", "AddV2", (scope + "/mul", scope + "/sub"))
        assert sub in tf2 and add in tf2
        assert (scope + "/IsFinite", "IsFinite", (norm,)) in tf115
        assert (scope + "/Select", "Select", (scope + "/IsFinite", scope + "/mul", scope + "/Const_1")) in tf115
        # 1.15's nodes where 2.x has sub/add; everything else is the same, in order.
        at = tf2.index(sub)
        tf2 = tf2[:at] + [(scope + "/IsFinite", "IsFinite", (norm,)), (scope + "/Const_1", "Const", ()),
                          (scope + "/Select", "Select", (scope + "/IsFinite", scope + "/mul", scope + "/Const_1"))] \
            + [n for n in tf2[at:] if n not in (sub, add)]
        tf2 = [(n, op, tuple(scope + "/Select" if i == scope + "/add" else i for i in ins)) for n, op, ins in tf2]
    assert tf2 == tf115


def test_clip_by_value_structure():
    """Minimum first (the max bound), then Maximum named as the scope."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        y = tf.clip_by_value(x, 0.0, 1.0)
        assert y.op.name == "clip_by_value" and y.op.type == "Maximum"
        assert y.op.inputs[0].op.name == "clip_by_value/Minimum"
        assert y.shape.as_list() == [2, 3]


def test_clip_by_global_norm_keeps_none_and_returns_a_list():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        clipped, norm = tf.clip_by_global_norm((None, a, None), 1.0)
        assert isinstance(clipped, list) and len(clipped) == 3
        assert clipped[0] is None and clipped[2] is None
        assert clipped[1].op.name == "clip_by_global_norm/clip_by_global_norm/_1"
        assert norm.op.name == "global_norm/global_norm"


def test_global_norm_colocates_l2loss_with_its_tensor():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        tf.global_norm([a])
        l2 = tf.get_default_graph().get_operation_by_name("global_norm/L2Loss")
        assert l2.colocation_groups() == [b"loc:@a"]


# -- values and gradients ---------------------------------------------------------------------------
def _run(name):
    graph, (fetches, before) = build(name)
    with graph.as_default(), tf.Session(graph=graph) as sess:
        feeds = {op.outputs[0]: programs.FEEDS[op.name] for op in graph.get_operations() if op.type == "Placeholder"}
        for step in before:
            sess.run(step, feeds)
        return sess.run(fetches, feeds)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_match_tensorflow(name):
    got = _run(name)
    expected = FIXTURE["values"][name]
    assert sorted(got) == sorted(expected)
    for key, entry in expected.items():
        want = np.array(entry["value"], dtype=entry["dtype"])
        value = np.asarray(got[key])
        assert value.dtype == want.dtype, key
        assert value.shape == want.shape, key
        np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=f"{name}: {key}")


def test_fixture_values_are_meaningful():
    """Spot checks of what TF computed, so the value comparison covers clipping itself."""
    v = FIXTURE["values"]
    assert v["clip_by_value_basic"]["y0"]["value"] == [[-1.0, -0.5, 0.25], [0.75, 1.0, 1.0]]
    assert v["clip_by_value_basic"]["y3"]["value"] == [-2, -1, 0, 3, 5]
    assert math.isclose(v["clip_by_global_norm_basic"]["norm"]["value"], math.sqrt(30 + 146.5), rel_tol=1e-6)
    assert all(math.isnan(x) for row in v["clip_by_global_norm_inf"]["ca"]["value"] for x in row)
    assert v["clip_by_norm_basic"]["y3"]["value"][1] == [0.0, 0.0]
    assert v["train_clip_by_global_norm"]["global_step"]["value"] == 1


def test_clipped_global_norm_is_clip_norm():
    got = _run("clip_by_global_norm_basic")
    np.testing.assert_allclose(np.sqrt(np.sum(got["ca"] ** 2) + np.sum(got["cb"] ** 2)), 5.0, rtol=1e-6)
    np.testing.assert_allclose(got["da"], programs.FEEDS["a"], rtol=1e-6)  # norm < 100: unchanged


# -- errors -------------------------------------------------------------------------------------
# TF 1.15's messages (errors_tf115); errors (TF 2.x) differ only in wording: merge_with's
# "are not compatible" vs assert_is_compatible_with's "are incompatible", and the TypeError
# text "t_list should be a sequence" vs "`t_list` should be a sequence of tensors. Received ...".
@pytest.mark.parametrize("name", sorted(programs.ERRORS))
def test_errors_match_tensorflow_1_15(name):
    expected = FIXTURE["errors_tf115"][name]
    tf2 = FIXTURE["errors"][name]
    assert expected is not None and tf2["type"] == expected["type"]
    if expected["type"] == "ValueError":
        assert tf2["message"] == expected["message"].replace("are not compatible", "are incompatible")
    else:
        assert expected["message"] == "t_list should be a sequence"
        assert tf2["message"].startswith("`t_list` should be a sequence of tensors. Received <class")
    with tf.Graph().as_default():
        with pytest.raises(Exception) as info:
            programs.ERRORS[name](tf)
    assert type(info.value).__name__ == expected["type"]
    assert str(info.value) == expected["message"]


def test_indexed_slices_are_refused():
    class FakeIndexedSlices:
        values = indices = dense_shape = None

    with tf.Graph().as_default():
        for call in (lambda: tf.clip_by_value(FakeIndexedSlices(), 0.0, 1.0),
                     lambda: tf.clip_by_norm(FakeIndexedSlices(), 1.0),
                     lambda: tf.global_norm([FakeIndexedSlices()]),
                     lambda: tf.clip_by_global_norm([FakeIndexedSlices()], 1.0)):
            with pytest.raises(TypeError, match="IndexedSlices inputs are not supported"):
                call()


def test_exported():
    for name in clip_ops.TF_EXPORTS:
        assert getattr(tf, name) is getattr(clip_ops, name)
