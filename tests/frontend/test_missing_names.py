"""TF1 names that tfc lacks say so; other names are Python's plain AttributeError."""
import json
import os
import types

import pytest

import tfc
import tfc.compat.v1 as tf
from tfc._missing import NotImplementedYet, tf1_names


@pytest.mark.parametrize("get, message", [
    (lambda: tf.nn.ctc_loss, "tfc does not implement tf.nn.ctc_loss yet"),
    (lambda: tf.train.sdca_optimizer, "tfc does not implement tf.train.sdca_optimizer yet"),
    (lambda: tf.contrib, "tfc does not implement tf.contrib yet"),
    (lambda: tf.ragged, "tfc does not implement tf.ragged yet"),
    (lambda: tf.sparse.mask, "tfc does not implement tf.sparse.mask yet"),
    (lambda: tf.math.bessel_i0, "tfc does not implement tf.math.bessel_i0 yet"),
    (lambda: tf.saved_model.experimental, "tfc does not implement tf.saved_model.experimental yet"),
    (lambda: tfc.strings.unicode_decode, "tfc does not implement tf.strings.unicode_decode yet"),
])
def test_known_missing_names_say_so(get, message):
    with pytest.raises(NotImplementedYet) as info:
        get()
    assert str(info.value) == message
    assert isinstance(info.value, AttributeError)
    assert info.value.name is None and info.value.obj is None  # Python suggests no other name


def test_hasattr_is_false_for_missing_names():
    assert not hasattr(tf, "ragged")
    assert not hasattr(tf.nn, "ctc_loss")
    assert getattr(tf.nn, "ctc_loss", 7) == 7


def test_typos_are_plain_attribute_errors():
    for module, name, owner in [(tf, "einsm", "tfc.compat.v1"), (tf.nn, "reluu", "tfc.nn"),
                                (tf.train, "AdamOptimiser", "tfc.train"), (tfc, "Sesion", "tfc"),
                                (tf.nn.rnn_cell, "NASCell", "tfc.nn.rnn_cell"), (tf, "__wrapped__", "tfc.compat.v1")]:
        with pytest.raises(AttributeError) as info:
            getattr(module, name)
        assert type(info.value) is AttributeError
        assert str(info.value) == f"module {owner!r} has no attribute {name!r}"
    with pytest.raises(ImportError):
        exec("from tfc.compat.v1 import ragged")


def test_the_names_file_is_tensorflows():
    names = tf1_names()
    assert {"", "nn", "nn.rnn_cell", "train", "image", "layers", "saved_model.builder"} <= set(names)
    assert {"Session", "placeholder", "Print", "einsum", "contrib"} <= names[""]
    assert "einsm" not in names[""]
    path = os.path.join(os.path.dirname(tfc.__file__), "data", "tf1_names.json")
    assert json.load(open(path))["source"] == "tf.compat.v1"


def test_every_implemented_name_is_reachable():
    from tfc import _api

    def visit(values, module):
        for key in values:
            assert getattr(module, key) is values[key] or key.startswith("__"), key
            value = values[key]
            if isinstance(value, types.ModuleType) and getattr(value, "__file__", None) is None and id(value) not in seen:
                seen.add(id(value))
                visit({k: v for k, v in value.__dict__.items() if not k.startswith("__")}, value)

    seen = set()
    api = _api.build()
    visit(api, tf)
    for key in api:
        assert getattr(tfc, key) is api[key]
    assert len(seen) > 10


def test_tfc_namespaces_are_reachable_after_compat_v1_built_them():
    # compat.v1 registers tfc.nn, tfc.train... in sys.modules without a spec; reaching them
    # through ``tfc`` afterwards must not stumble on importlib's find_spec (a ValueError).
    import subprocess
    import sys

    code = "import tfc.compat.v1 as tf; import tfc; print(tfc.nn.relu is tf.nn.relu, tfc.strings.join is not None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
