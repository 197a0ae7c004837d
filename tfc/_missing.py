"""TF1 names that tfc does not implement yet.

``tfc/data/tf1_names.json`` lists TensorFlow's TF1 public names per namespace (made by
``tests/fixtures/make_tf1_names.py`` from real TensorFlow's ``tf.compat.v1``). A name
that TensorFlow has and tfc lacks raises :class:`NotImplementedYet` (an ``AttributeError``,
so ``hasattr`` is still False) saying ``tfc does not implement tf.nn.foo yet``, with no
"Did you mean" into an unrelated name; any other name gets Python's plain AttributeError.
"""
from __future__ import annotations

import json
import os
import types

_NAMES: dict = {}


class NotImplementedYet(AttributeError):
    """A TensorFlow 1.x name that tfc does not implement yet."""

    def __init__(self, qualified_name: str):
        # name/obj set (to None) so that Python neither fills them in nor suggests a name.
        super().__init__(f"tfc does not implement {qualified_name} yet", name=None, obj=None)
        self.tf_name = qualified_name


def tf1_names() -> dict:
    """{namespace path ('' for tf.*, 'nn', 'nn.rnn_cell'...): frozenset of TF1 public names}."""
    if not _NAMES:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf1_names.json")
        with open(path) as f:
            namespaces = json.load(f)["namespaces"]
        _NAMES.update({k: frozenset(v) for k, v in namespaces.items()})
    return _NAMES


def is_tf1_name(namespace: str, name: str) -> bool:
    return name in tf1_names().get(namespace, ())


def missing(namespace: str, name: str, module_name: str):
    """Raise the AttributeError for ``name`` absent from tfc's ``tf.<namespace>``."""
    if not name.startswith("_") and is_tf1_name(namespace, name):
        raise NotImplementedYet(f"tf.{namespace}.{name}" if namespace else f"tf.{name}")
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")


def install(module: types.ModuleType, namespace: str) -> None:
    """Give a namespace module (``tfc.nn``...) a ``__getattr__`` that raises as above."""
    if "__getattr__" in module.__dict__:
        return
    module_name = module.__name__

    def __getattr__(name):
        missing(namespace, name, module_name)

    module.__getattr__ = __getattr__


def install_all(api: dict) -> None:
    """Install on every namespace module reachable from the TF1 namespace ``api``: the
    modules tfc builds (no ``__file__``), not real Python modules such as ``tf.errors``."""
    seen: set = set()

    def visit(values: dict, prefix: str):
        for key, value in values.items():
            if (isinstance(value, types.ModuleType) and getattr(value, "__file__", None) is None
                    and id(value) not in seen and not key.startswith("_")):
                seen.add(id(value))
                path = f"{prefix}.{key}" if prefix else key
                install(value, path)
                visit(dict(value.__dict__), path)

    visit(api, "")
