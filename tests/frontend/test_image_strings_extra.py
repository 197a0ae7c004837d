"""tf.image color adjustments, crops/pads, rot90, patches... and tf.strings length, case,
strip, substr, regex, reduce_join, format against real TensorFlow's values, gradients
and op types (tests/fixtures/image_strings.json, made by
tests/fixtures/make_image_strings_fixture.py)."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURES = json.load(open(os.path.join(HERE, "image_strings.json")))

# the op types whose presence in the graph shows the function is built as TF builds it
KEY_TYPES = {"AdjustContrastv2", "AdjustSaturation", "AdjustHue", "RGBToHSV", "HSVToRGB", "ExtractImagePatches",
             "MatMul", "Pad", "MirrorPad", "DepthwiseConv2dNative", "Slice", "Tile", "ReverseV2", "Transpose", "Abs",
             "Pow", "SquaredDifference", "StringLength", "StringLower", "StringUpper", "StringStrip", "Substr",
             "StaticRegexReplace", "RegexReplace", "StaticRegexFullMatch", "RegexFullMatch", "ReduceJoin",
             "StringFormat", "Case", "Merge"}


def _cases():
    """The case tables and case_input of the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_image_strings_fixture.py")).read()
    start = source.index("def case_input")
    end = source.index("def _jsonable")
    namespace = {"np": np}
    exec(source[start:end], namespace)
    return namespace


NS = _cases()


# rot90 of a non-square image by a known k: TF's tf.case has branches of different shapes,
# which tfc does not compile, so tfc builds only the rotation k selects (values as TF's)
STATIC_ROT90 = {"rot90_3d_k1", "rot90_3d_k2", "rot90_3d_k7", "rot90_batch_k1"}


def _run_case(fn, kind, want, with_gradient, name=""):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(NS["case_input"](kind))
        y = fn(tf, x)
        types = {o.type for o in g.get_operations()}
        if name in STATIC_ROT90:
            assert "Merge" not in types and y.op.type == "Identity" and y.op.name == "rot90"
        else:
            want_types = {t for _, t in want["nodes"]} & KEY_TYPES
            assert want_types <= types, f"missing op types {want_types - types}"
            assert y.op.type == want["op_type"]
        assert y.dtype.name == want["dtype"]
        if want["shape"] is not None and y.shape.ndims is not None:
            assert y.shape.is_compatible_with(want["shape"])
        with tf.Session() as sess:
            value = sess.run(y)
            grad = None
            if with_gradient and "gradient" in want:
                w = tf.constant(NS["gradient_weights"](value.shape), y.dtype)
                (grad,) = tf.gradients(tf.reduce_sum(y * w), x)
                grad = sess.run(grad)
    return value, grad


@pytest.mark.parametrize("name", sorted(NS["IMAGE_CASES"]))
def test_image_as_tensorflow(name):
    fn, kind = NS["IMAGE_CASES"][name]
    want = FIXTURES["image"][name]
    value, grad = _run_case(fn, kind, want, True, name)
    assert list(value.shape) == want["value_shape"]
    expected = np.array(want["value"]).reshape(want["value_shape"])
    if value.dtype.kind in "iu":
        np.testing.assert_array_equal(value, expected.astype(value.dtype))
    else:
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=2e-5)
    if "gradient" in want:
        np.testing.assert_allclose(grad, want["gradient"], rtol=1e-5, atol=1e-5)


def _strings(value):
    return [v.encode("latin-1") for v in value]


@pytest.mark.parametrize("name", sorted(NS["STRING_CASES"]))
def test_strings_as_tensorflow(name):
    fn, kind = NS["STRING_CASES"][name]
    want = FIXTURES["strings"][name]
    value, _ = _run_case(fn, kind, want, False)
    value = np.asarray(value)
    assert list(value.shape) == want["value_shape"]
    if value.dtype == object or value.dtype.kind == "S":
        assert [bytes(v) for v in value.astype(object).reshape(-1)] == _strings(want["value"])
    else:
        np.testing.assert_array_equal(value, np.array(want["value"]).reshape(want["value_shape"]))


def test_string_errors_as_tensorflow():
    want = FIXTURES["errors"]
    with tf.Graph().as_default():
        x = tf.constant(NS["case_input"]("strings"))
        with pytest.raises(ValueError, match="Invalid reduction dimension 2 for input with 2 dimensions"):
            tf.strings.reduce_join(x, tf.constant(2))
        assert "Invalid reduction dimension 2" in want["reduce_join_bad_axis"][1]
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="pos 6 out of range for string b'abcab' at "
                                                                     "index 2"):
                sess.run(tf.strings.substr(x, 6, 1))
            assert "pos 6 out of range for string b'abcab' at index 2" in want["substr_out_of_range"][1]
            with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate reduction dimension -1"):
                sess.run(tf.strings.reduce_join(x, tf.constant([1, -1])))
            assert "Duplicate reduction dimension" in want["reduce_join_dup_axis"][1]


def test_extract_patches_gradient_numerically():
    x0 = np.random.RandomState(0).randn(1, 4, 5, 2)
    w0 = np.random.RandomState(1).randn(1, 2, 3, 2 * 2 * 2)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [1, 4, 5, 2])
        y = tf.image.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 2, 1], "SAME")
        assert y.shape.as_list() == [1, 2, 3, 8] and y.op.type == "ExtractImagePatches"
        loss = tf.reduce_sum(y * w0)
        (grad,) = tf.gradients(loss, x)
        with tf.Session() as sess:
            analytic = sess.run(grad, {x: x0})
    # the loss is linear in x: its gradient is what each pixel contributes with weight 1
    numeric = np.zeros_like(x0)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [1, 4, 5, 2])
        loss = tf.reduce_sum(tf.image.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 2, 1], "SAME") * w0)
        with tf.Session() as sess:
            for i in np.ndindex(x0.shape):
                e = np.zeros_like(x0)
                e[i] = 1.0
                numeric[i] = sess.run(loss, {x: e})
    np.testing.assert_allclose(analytic, numeric, rtol=1e-10, atol=1e-10)


def test_random_color_adjustments_ranges_and_seeds():
    """TF's random streams are not reproduced: the ranges of the drawn factors, that a
    seed fixes them, and that each is the deterministic adjustment at the drawn factor."""
    image = NS["case_input"]("image")
    results = {}
    for _ in range(2):
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(7)
            x = tf.constant(image)
            fetches = {"brightness": tf.image.random_brightness(x, 0.3, seed=1),
                       "contrast": tf.image.random_contrast(x, 0.2, 0.6, seed=2),
                       "saturation": tf.image.random_saturation(x, 0.5, 0.9, seed=3),
                       "hue": tf.image.random_hue(x, 0.2, seed=4),
                       "crop": tf.random_crop(x, [3, 4, 3], seed=5),
                       "image_crop": tf.image.random_crop(x, [2, 2, 3], seed=6)}
            fetches["hsv_in"] = tf.image.rgb_to_hsv(x)
            fetches["hsv_sat"] = tf.image.rgb_to_hsv(fetches["saturation"])
            fetches["hsv_hue"] = tf.image.rgb_to_hsv(fetches["hue"])
            with tf.Session() as sess:
                first = sess.run(fetches)
                second = sess.run(fetches)
            results.setdefault("runs", []).append((first, second))
    (a1, a2), (b1, b2) = results["runs"]
    for key in a1:
        np.testing.assert_array_equal(a1[key], b1[key])  # same seeds: same values in a new graph
        np.testing.assert_array_equal(a2[key], b2[key])
    assert not np.array_equal(a1["brightness"], a2["brightness"])  # a new draw each run
    for out in (a1, a2):
        delta = out["brightness"] - image
        assert np.ptp(delta) < 1e-6 and -0.3 <= delta.mean() <= 0.3
        mean = image.mean(axis=(0, 1), keepdims=True)
        factor = (out["contrast"] - mean) / (image - mean)
        assert np.ptp(factor) < 1e-3 and 0.2 <= factor.mean() <= 0.6
        s_in, s_out = out["hsv_in"][..., 1], out["hsv_sat"][..., 1]
        ratio = s_out[s_in > 0.1] / s_in[s_in > 0.1]
        assert np.ptp(ratio) < 1e-4 and 0.5 <= ratio.mean() <= 0.9
        np.testing.assert_allclose(out["hsv_hue"][..., 2], out["hsv_in"][..., 2], atol=1e-6)  # value kept
        shift = (out["hsv_hue"][..., 0] - out["hsv_in"][..., 0]) % 1.0
        shift = np.where(shift > 0.5, shift - 1.0, shift)
        colored = out["hsv_in"][..., 1] > 0.05
        assert np.ptp(shift[colored]) < 1e-4 and -0.2 <= shift[colored].mean() <= 0.2
        crop = out["crop"]
        assert crop.shape == (3, 4, 3)
        hits = [(i, j) for i in range(5 - 3 + 1) for j in range(6 - 4 + 1)
                if np.array_equal(image[i:i + 3, j:j + 4], crop)]
        assert hits
        assert out["image_crop"].shape == (2, 2, 3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="max_delta must be non-negative"):
            tf.image.random_brightness(tf.zeros([2, 2, 3]), -1.0)
        with pytest.raises(ValueError, match="upper must be > lower"):
            tf.image.random_contrast(tf.zeros([2, 2, 3]), 0.5, 0.5)
        with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
            tf.image.random_hue(tf.zeros([2, 2, 3]), 0.6)
        with pytest.raises(ValueError, match="lower must be non-negative"):
            tf.image.random_saturation(tf.zeros([2, 2, 3]), -0.1, 0.5)


def test_image_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must have either 3 or 4 dimensions"):
            tf.image.crop_to_bounding_box(tf.zeros([4, 4]), 0, 0, 2, 2)
        with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
            tf.image.crop_to_bounding_box(tf.zeros([4, 4, 1]), 0, 2, 2, 3)
        with pytest.raises(ValueError, match="height must be <= target - offset"):
            tf.image.pad_to_bounding_box(tf.zeros([4, 4, 1]), 2, 0, 5, 5)
        with pytest.raises(ValueError, match="Gamma should be a non-negative real number"):
            tf.image.adjust_gamma(tf.zeros([2, 2, 3]), -1.0)
        with pytest.raises(ValueError):
            tf.image.rgb_to_hsv(tf.zeros([2, 2, 4]))
        with pytest.raises(ValueError, match="image_gradients expects a 4D tensor"):
            tf.image.image_gradients(tf.zeros([2, 2, 3]))


def test_names_exported():
    for name in ("adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_saturation", "adjust_hue",
                 "rgb_to_hsv", "hsv_to_rgb", "grayscale_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv",
                 "yuv_to_rgb", "random_brightness", "random_contrast", "random_saturation", "random_hue",
                 "random_crop", "crop_to_bounding_box", "pad_to_bounding_box", "resize_image_with_crop_or_pad",
                 "resize_with_crop_or_pad", "rot90", "transpose_image", "transpose", "total_variation",
                 "image_gradients", "sobel_edges", "psnr", "extract_image_patches", "extract_patches"):
        assert callable(getattr(tf.image, name)), name
    for name in ("length", "lower", "upper", "strip", "substr", "regex_replace", "regex_full_match", "reduce_join",
                 "format"):
        assert callable(getattr(tf.strings, name)), name
    for name in ("substr", "reduce_join", "regex_replace", "string_strip", "random_crop", "extract_image_patches"):
        assert callable(getattr(tf, name)), name


@pytest.mark.parametrize("name", ["adjust_contrast", "adjust_hue", "adjust_saturation", "patches_same",
                                  "crop_to_bounding_box", "resize_with_crop_or_pad_mixed", "rgb_to_yiq"])
def test_image_unknown_batch_as_tensorflow(name):
    """The same cases with the batch dimension unknown while building the graph."""
    fn, kind = NS["IMAGE_CASES"][name]
    assert kind == "batch"
    want = FIXTURES["image"][name]
    x0 = NS["case_input"](kind)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None] + list(x0.shape[1:]))
        y = fn(tf, x)
        assert y.shape.as_list() == [None] + want["value_shape"][1:]
        fetches = [y]
        if "gradient" in want:
            w = tf.constant(NS["gradient_weights"](want["value_shape"]), y.dtype)
            fetches += tf.gradients(tf.reduce_sum(y * w), x)
        with tf.Session() as sess:
            values = sess.run(fetches, {x: x0})
    np.testing.assert_allclose(values[0], np.array(want["value"]).reshape(want["value_shape"]), rtol=1e-5, atol=2e-5)
    if "gradient" in want:
        np.testing.assert_allclose(values[1], want["gradient"], rtol=1e-5, atol=1e-5)


# The fixture is made by TF 2.x's tf.compat.v1, whose graphs differ from TF 1.15's in a few
# spellings: math_ops.add makes AddV2 (TF 1.15: Add), math_ops.mod is a name scope "mod"
# over FloorMod (TF 1.15: the FloorMod op itself), saturate_cast clamps with ClipByValue
# (TF 1.15: Maximum and Minimum, as tfc's convert_image_dtype).
TF2_SPELLINGS = {("adjust_brightness", "AddV2"): ("adjust_brightness", "Add"),
                 ("rot90/mod/y", "Const"): ("rot90/FloorMod/y", "Const"),
                 ("rot90/mod", "FloorMod"): ("rot90/FloorMod", "FloorMod")}
SATURATE_CAST_CASES = {"adjust_brightness_uint8", "adjust_contrast_uint8", "adjust_gamma_uint8"}


@pytest.mark.parametrize("name", sorted(set(NS["IMAGE_CASES"]) - STATIC_ROT90 - SATURATE_CAST_CASES)
                         + sorted(NS["STRING_CASES"]))
def test_graph_nodes_as_tensorflow(name):
    group = "strings" if name in NS["STRING_CASES"] else "image"
    fn, kind = NS["STRING_CASES" if group == "strings" else "IMAGE_CASES"][name]
    want = [list(TF2_SPELLINGS.get(tuple(n), n)) for n in FIXTURES[group][name]["nodes"]]
    g = tf.Graph()
    with g.as_default():
        fn(tf, tf.constant(NS["case_input"](kind)))
    assert [[o.name, o.type] for o in g.get_operations()] == want
