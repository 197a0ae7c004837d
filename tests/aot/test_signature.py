"""A re-hashed but edited manifest is refused: the library embeds the signature it was built for.

Every edit below keeps the manifest's own hash (and the files' hashes) valid, the way a
hand-edited artifact would be re-signed; before the library embedded its signature these
artifacts loaded, and ran the code with other shapes (a crash) or dtypes (garbage).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import shutil

import numpy as np
import pytest

import tfc
from tfc import aot_runtime
from tfc.aot_runtime import ArtifactError


@pytest.fixture
def artifact(mlp, tmp_path):
    target = tmp_path / "artifact"
    shutil.copytree(mlp.directory, target)
    return target


def rewrite_manifest(directory, change) -> None:
    """Edit manifest.json and re-hash it as the loader checks it (manifest_sha256)."""
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    manifest["manifest_sha256"] = aot_runtime.manifest_digest(manifest)
    path.write_text(json.dumps(manifest, indent=1))


def mismatch(path: str, in_manifest: str, in_library: str) -> str:
    return (f"manifest.json does not match the signature libmodel.so was built with: {path} is {in_manifest} in "
            f"manifest.json but {in_library} in libmodel.so; rebuild the artifact")


def test_the_library_embeds_the_signature_of_its_manifest(artifact):
    model = tfc.load(artifact)
    built = aot_runtime.read_embedded_signature(str(artifact), model.manifest, model._library)
    weights_sha256 = hashlib.sha256((artifact / "model.weights").read_bytes()).hexdigest()
    assert built == aot_runtime.embedded_signature(model.manifest, weights_sha256)
    assert built["inputs"] == [{"name": "x", "tensor": "x:0", "op": "x", "dtype": "float32", "shape": ["s0", 32],
                                "slot": 0}]
    assert built["outputs"][0]["shape"] == ["s0", 10] and built["outputs"][0]["dtype"] == "float32"
    assert model(np.ones((3, 32), np.float32)).shape == (3, 10)


def test_a_shrunken_output_shape_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["outputs"][0]["shape"].__setitem__(1, 5))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"artifact {artifact}: " + mismatch("outputs[0].shape[1]", "5", "10")


def test_an_output_of_another_rank_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["outputs"][0].update(shape=["s0"]))
    with pytest.raises(ArtifactError, match=r"outputs\[0\]\.shape is \[\"s0\"\] in manifest.json but "
                                            r"\[\"s0\", 10\] in libmodel.so"):
        tfc.load(artifact)


def test_a_changed_dtype_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["outputs"][0].update(dtype="float64"))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"artifact {artifact}: " + mismatch("outputs[0].dtype", '"float64"', '"float32"')


def test_a_renamed_input_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["inputs"][0].update(name="image"))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"artifact {artifact}: " + mismatch("inputs[0].name", '"image"', '"x"')


def test_another_slot_layout_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["slots"].update(arena=m["slots"]["error"], error=m["slots"]["arena"]))
    with pytest.raises(ArtifactError, match=r"slots\.arena is \d+ in manifest.json but \d+ in libmodel.so"):
        tfc.load(artifact)


def test_weights_edited_and_re_hashed_are_refused(artifact):
    data = bytearray((artifact / "model.weights").read_bytes())
    data[-1] ^= 0x40
    (artifact / "model.weights").write_bytes(bytes(data))
    sha256 = hashlib.sha256(bytes(data)).hexdigest()
    rewrite_manifest(artifact, lambda m: m["files"]["model.weights"].update(sha256=sha256))
    with pytest.raises(ArtifactError, match=rf'weights\.sha256 is "{sha256}" in manifest.json but "[0-9a-f]{{64}}" '
                                            r"in libmodel.so; rebuild the artifact"):
        tfc.load(artifact)


def test_a_manifest_without_a_signature_field_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["outputs"][0].pop("dtype"))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"{artifact / 'manifest.json'}: outputs[0].dtype is missing"


def _set(*path_and_value):
    """A change for rewrite_manifest: the field at ``path`` set to ``value`` (deleted for DELETE)."""
    *path, value = path_and_value

    def change(manifest):
        node = manifest
        for key in path[:-1]:
            node = node[key]
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return change


DELETE = object()

# Fields of the wrong type or missing in a re-hashed manifest: each is named (its path in the
# JSON) in one ArtifactError, before anything reads it (these were TypeError, KeyError and
# AttributeError from inside the loader).
WRONG_FIELDS = {
    "a feature that is a list": (("target", "features", 0, [1, 2]),
                                 "target.features[0] must be a string, got a list of 2 items"),
    "no features": (("target", "features", DELETE), "target.features is missing"),
    "features that are a string": (("target", "features", "+avx2"), "target.features must be a list, got a string"),
    "a numeric triple": (("target", "triple", 1.5), "target.triple must be a string, got 1.5"),
    "exports that are a number": (("exports", -1), "exports must be a list, got -1"),
    "a target that is null": (("target", None), "target must be an object, got null"),
    "no inputs": (("inputs", DELETE), "inputs is missing"),
    "an input that is a number": (("inputs", 0, 7), "inputs[0] must be an object, got 7"),
    "a boolean slot": (("slots", "arena", True), "slots.arena must be a non-negative integer, got true"),
    "a negative file size": (("files", "model.h", "bytes", -1),
                             'files["model.h"].bytes must be a non-negative integer, got -1'),
    "a weights header shorter than its fields": (("weights", "header_bytes", 16),
                                                 "weights.header_bytes must be an integer >= 32, got 16"),
    "a float dim": (("outputs", 0, "shape", 1, 10.0), "outputs[0].shape[1] must be an integer or a string, got 10.0"),
    "a TF dim that is a string": (("inputs", 0, "tf_shape", 0, "?"),
                                  "inputs[0].tf_shape[0] must be a non-negative integer or null, got a string"),
    "a TF dim where the code has a symbol": (("inputs", 0, "tf_shape", 0, 2),
                                             'inputs[0].tf_shape[0] is 2, but inputs[0].shape[0] (the compiled dim) '
                                             'is "s0"'),
    "a TF dim other than the compiled one": (("inputs", 0, "tf_shape", 1, 31),
                                             "inputs[0].tf_shape[1] is 31, but inputs[0].shape[1] (the compiled dim) "
                                             "is 32"),
    "a TF shape of another rank": (("inputs", 0, "tf_shape", [None]),
                                   "inputs[0].tf_shape has rank 1, but inputs[0].shape (the compiled shape) has "
                                   "rank 2"),
    "a constraint frame of two items": (("constraints", [{"dims": ["s0", "s1"], "message": "m", "op": None,
                                                          "defined_at": [["f.py", 3]]}]),
                                        "constraints[0].defined_at[0] must be a list of 3 items, got a list of 2 "
                                        "items"),
    "op sources that are an object": (("op_sources", {}), "op_sources must be a list, got an object"),
}


@pytest.mark.parametrize("case", list(WRONG_FIELDS))
def test_a_manifest_field_of_the_wrong_type_is_named(artifact, case):
    path_and_value, problem = WRONG_FIELDS[case]
    rewrite_manifest(artifact, _set(*path_and_value))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"{artifact / 'manifest.json'}: {problem}"


def test_fields_the_loader_does_not_read_are_not_checked(artifact):
    def change(manifest):
        manifest.update(name=1, error_codes=None, build_seconds=[])
        del manifest["op_sources"]  # optional: run-time errors then blame no graph op

    rewrite_manifest(artifact, change)
    model = tfc.load(artifact)
    assert model(np.ones((3, 32), np.float32)).shape == (3, 10)


def test_a_manifest_listing_no_files_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m.update(files={}))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == (f"artifact {artifact}: manifest.json lists no files (\"files\" is {{}}); the manifest "
                               "is damaged: rebuild the artifact")
    rewrite_manifest(artifact, lambda m: m.pop("files"))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == f"{artifact / 'manifest.json'}: files is missing"


def test_a_manifest_not_listing_the_library_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m["files"].pop("libmodel.so"))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == (f"artifact {artifact}: manifest.json does not list 'libmodel.so' among its files; "
                               "the manifest is damaged: rebuild the artifact")


def test_a_library_without_an_embedded_signature_is_refused(artifact):
    manifest = json.loads((artifact / "manifest.json").read_text())
    process = ctypes.CDLL(None)  # this interpreter: it exports no tfc_signature
    with pytest.raises(ArtifactError) as info:
        aot_runtime.read_embedded_signature("somewhere", manifest, process)
    assert str(info.value) == ("artifact somewhere: libmodel.so does not embed its signature (tfc_signature); "
                               "rebuild the artifact")


def test_first_difference_names_the_path():
    first = aot_runtime._first_difference
    assert first({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}, "") is None
    assert first({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}, "") == ("a[1].b", 2, 3)
    assert first({"a": 1}, {"a": True}, "") == ("a", 1, True)
    assert first({"a": 1}, {"a": 1.0}, "") == ("a", 1, 1.0)
    assert first({"a": 1}, {}, "")[:2] == ("a", 1)
