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
    assert str(info.value) == f"artifact {artifact}: manifest.json lacks the field 'dtype' of the signature"


def test_a_manifest_listing_no_files_is_refused(artifact):
    rewrite_manifest(artifact, lambda m: m.update(files={}))
    with pytest.raises(ArtifactError) as info:
        tfc.load(artifact)
    assert str(info.value) == (f"artifact {artifact}: manifest.json lists no files (\"files\" is {{}}); the manifest "
                               "is damaged: rebuild the artifact")
    rewrite_manifest(artifact, lambda m: m.pop("files"))
    with pytest.raises(ArtifactError, match=r'lists no files \("files" is None\)'):
        tfc.load(artifact)


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
