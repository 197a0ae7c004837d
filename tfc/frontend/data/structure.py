"""Element structures of tf.data, as TensorFlow's ``tf.data`` nest sees them.

A dataset's element is a nest of tensors: tuples (namedtuples too) and dicts are
structure, everything else is a leaf. Unlike ``tf.nest``, tf.data treats a Python
*list* as a leaf (``from_tensor_slices([1, 2, 3])`` slices one tensor), except that a
function that returns a list has it read as a tuple.

Each dataset keeps its element as a nest of :class:`Spec` leaves (dtype and static
shape); ``output_types``/``output_shapes``/``output_classes`` are maps over it. At run
time an element is the flat list of its components (numpy arrays, in ``flatten`` order:
dicts by sorted key).
"""
from __future__ import annotations

import collections.abc

from .. import dtypes
from ..tensor_shape import TensorShape


class Spec:
    """One component of an element: its dtype and (possibly partial) static shape."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype = dtypes.as_dtype(dtype).base_dtype
        self.shape = TensorShape(shape)

    def __repr__(self) -> str:
        return f"Spec({self.dtype.name}, {self.shape})"


class DatasetSpec(Spec):
    """A component that is itself a dataset (``window``'s elements): one ``variant`` scalar
    at run time (a pipeline Node), ``element`` the nest of Specs of *its* elements. TF
    answers it for ``output_types``, ``output_shapes`` and ``output_classes`` alike."""

    __slots__ = ("element",)

    def __init__(self, element, shape=()):
        super().__init__(dtypes.variant, shape)
        self.element = element

    @property
    def element_spec(self):
        return tensor_specs(self.element)

    def _key(self):
        return (repr(self.element_spec), self.shape.as_list() if self.shape.ndims is not None else None)

    def __eq__(self, other) -> bool:
        return isinstance(other, DatasetSpec) and self._key() == other._key()

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return f"DatasetSpec({_text(self.element_spec)}, {self.shape!r})"

    __str__ = __repr__


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_nested(value) -> bool:
    """Tuples (namedtuples included) and mappings are structure; lists are leaves."""
    return isinstance(value, (tuple, dict, collections.abc.Mapping))


def _items(value) -> list:
    if isinstance(value, (dict, collections.abc.Mapping)):
        return [value[key] for key in sorted(value)]
    return list(value)


def flatten(structure) -> list:
    if is_nested(structure):
        return [leaf for item in _items(structure) for leaf in flatten(item)]
    return [structure]


def _sequence_like(instance, args):
    if isinstance(instance, (dict, collections.abc.Mapping)):
        result = dict(zip(sorted(instance), args))
        return type(instance)((key, result[key]) for key in instance)
    if _is_namedtuple(instance):
        return type(instance)(*args)
    return tuple(args)


def pack_sequence_as(structure, flat):
    flat = list(flat)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat)} > 1")
        return flat[0]
    position = [0]

    def pack(node):
        if not is_nested(node):
            value = flat[position[0]]
            position[0] += 1
            return value
        return _sequence_like(node, [pack(item) for item in _items(node)])

    count = len(flatten(structure))
    if count != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {count} elements, but flat_sequence had "
                         f"{len(flat)} elements.  Structure: {structure}, flat_sequence: {flat}.")
    return pack(structure)


def map_structure(fn, *structures):
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])


def same_structure(a, b) -> bool:
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return True
    if isinstance(a, collections.abc.Mapping) != isinstance(b, collections.abc.Mapping):
        return False
    if isinstance(a, collections.abc.Mapping) and set(a) != set(b):
        return False
    items_a, items_b = _items(a), _items(b)
    return len(items_a) == len(items_b) and all(same_structure(x, y) for x, y in zip(items_a, items_b))


def assert_same_structure(a, b) -> None:
    if not same_structure(a, b):
        raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: {a}\n\n"
                         f"Second structure: {b}")


def reject_sparse(value, where: str) -> None:
    """tfc's tf.data elements are dense tensors: a SparseTensor (or SparseTensorValue) in one
    is refused, naming where it came from."""
    from ..sparse_tensor import is_sparse

    if is_sparse(value):
        raise NotImplementedError(f"tfc's tf.data does not support SparseTensor elements yet ({where} gave "
                                  f"{value}); convert it with tf.sparse.to_dense first")
    if is_nested(value):
        for item in _items(value):
            reject_sparse(item, where)


def normalize_function_result(value):
    """A traced function's result: lists become tuples (TF warns and does the same)."""
    reject_sparse(value, "a dataset function")
    if isinstance(value, list):
        return tuple(normalize_function_result(v) for v in value)
    if isinstance(value, tuple) and not _is_namedtuple(value):
        return tuple(normalize_function_result(v) for v in value)
    if _is_namedtuple(value):
        return type(value)(*[normalize_function_result(v) for v in value])
    if isinstance(value, collections.abc.Mapping):
        return type(value)((k, normalize_function_result(v)) for k, v in value.items())
    return value


# -- specs ----------------------------------------------------------------------------------
def types_of(structure):
    return map_structure(lambda spec: spec if isinstance(spec, DatasetSpec) else spec.dtype, structure)


def shapes_of(structure):
    return map_structure(lambda spec: spec if isinstance(spec, DatasetSpec) else spec.shape, structure)


def classes_of(structure):
    from ..graph import Tensor

    return map_structure(lambda spec: spec if isinstance(spec, DatasetSpec) else Tensor, structure)


def tensor_specs(structure):
    """The nest of ``tf.TensorSpec`` (``DatasetSpec`` for dataset components)."""
    from ..eager.function import TensorSpec

    return map_structure(lambda spec: spec if isinstance(spec, DatasetSpec) else TensorSpec(spec.shape, spec.dtype),
                         structure)


def has_datasets(structure) -> bool:
    return any(isinstance(spec, DatasetSpec) for spec in flatten(structure))


def specs_from(types, shapes):
    """The Spec nest of ``types`` and ``shapes`` (shapes default to unknown; a shape nest may
    stop short of the types' nest, as TF allows for ``from_generator``)."""
    if shapes is None:
        return map_structure(lambda t: t if isinstance(t, DatasetSpec) else Spec(t, None), types)
    return _specs(types, shapes)


def _specs(types, shapes):
    if isinstance(types, DatasetSpec):  # a window's component: its DatasetSpec is its type and shape
        return types
    if not is_nested(types):
        return Spec(types, shapes)
    if not is_nested(shapes):
        raise ValueError(f"The two structures don't have the same nested structure: {types} and {shapes}")
    assert_same_structure(types, shapes)
    return _sequence_like(types, [_specs(t, s) for t, s in zip(_items(types), _items(shapes))])


def flat_types(structure) -> list:
    return [spec.dtype for spec in flatten(structure)]


def flat_shapes(structure) -> list:
    return [spec.shape for spec in flatten(structure)]


def most_specific_compatible(a, b):
    """The Spec nest both ``a`` and ``b`` fit (dims that differ become unknown)."""
    def merged(x, y):
        if isinstance(x, DatasetSpec) and isinstance(y, DatasetSpec):
            return DatasetSpec(most_specific_compatible(x.element, y.element))
        return Spec(x.dtype, x.shape.most_specific_compatible_shape(y.shape))

    return map_structure(merged, a, b)


def type_text(structure) -> str:
    """How TF prints a types nest in its messages: ``(tf.int64, tf.float32)``."""
    return _text(types_of(structure))


def _text(value) -> str:
    if isinstance(value, dtypes.DType):
        return repr(value)
    if isinstance(value, DatasetSpec) or type(value).__name__ == "TensorSpec":
        return repr(value)
    if isinstance(value, collections.abc.Mapping):
        return "{" + ", ".join(f"{k!r}: {_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        inner = ", ".join(_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return str(value)


class HasElementStructure:
    """What TF's datasets and iterators answer about their elements, from ``self._structure``
    (a nest of Spec)."""

    @property
    def output_types(self):
        return types_of(self._structure)

    @property
    def output_shapes(self):
        return shapes_of(self._structure)

    @property
    def output_classes(self):
        return classes_of(self._structure)

    @property
    def element_spec(self):
        """The element's nest of ``tf.TensorSpec`` (``DatasetSpec`` for dataset components)."""
        return tensor_specs(self._structure)
