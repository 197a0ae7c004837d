"""``import tfc.compat.v1 as tf``: the TensorFlow 1.x API on the tfc compiler."""
from tfc._api import build as _build

globals().update(_build())


def __getattr__(name):  # a TF1 name tfc lacks: "tfc does not implement tf.foo yet"
    from tfc._missing import missing

    missing("", name, __name__)
