"""The op registry: one entry per TF op type.

An entry is a subclass of :class:`OpType` decorated with :func:`register`. It declares,
like TF's OpDef, its inputs, outputs and attrs, and holds the op's whole knowledge in one
place:

    @register
    class MatMul(OpType):
        inputs = ["a: T", "b: T"]
        outputs = ["product: T"]
        attrs = {"T": Attr("type", allowed=NUMBER_TYPES),
                 "transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False)}

        def infer(op): ...            # -> [TensorShape or (DType, TensorShape)] per output
        def lower(ctx, op, a, b): ... # -> IR values (tfc.passes.lower calls it)
        def gradient(op, grad): ...   # -> [Tensor or None] per input (tf.gradients calls it)

Argument specs: ``"x: T"`` (dtype from type attr T), ``"x: int32"`` (fixed dtype),
``"values: N * T"`` (a list of N tensors of type T), ``"ref: Ref(T)"`` (a ref input),
``"output: num_split * T"`` (an output list whose length is an int attr).

Methods are plain functions (no ``self``); the class is a namespace, read as
``OpTypeClass.infer(op)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

REQUIRED = object()


class ShapeError(ValueError):
    """Raised by an entry's ``infer``; the graph adds the op name and input shapes.

    ``context`` (optional) is TF's suffix about the input values shape inference used,
    e.g. `` and with computed input tensors: input[1] = <4>``; it goes after the input
    shapes in the final message.
    """

    def __init__(self, message: str, context: str = ""):
        super().__init__(message)
        self.context = context


@dataclass
class Attr:
    kind: str  # type, bool, int, float, string, shape, tensor, func, list(int), list(type)...
    default: Any = REQUIRED
    allowed: Optional[tuple] = None  # for type attrs: allowed DTypes


@dataclass
class ArgSpec:
    name: str
    type_attr: Optional[str] = None  # "T"
    fixed_dtype: Optional[str] = None  # "int32"
    number_attr: Optional[str] = None  # "N"
    is_ref: bool = False


_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(?:(\w+)\s*\*\s*)?(Ref\()?\s*(\w+)\s*\)?\s*$")
_DTYPE_NAMES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "bool", "string", "complex64", "complex128", "resource", "variant",
                "bfloat16"}


def parse_arg(spec: str) -> ArgSpec:
    match = _ARG_RE.match(spec)
    if not match:
        raise ValueError(f"bad argument spec {spec!r}")
    name, number_attr, ref, type_name = match.groups()
    arg = ArgSpec(name=name, number_attr=number_attr, is_ref=bool(ref))
    if type_name in _DTYPE_NAMES:
        arg.fixed_dtype = type_name
    else:
        arg.type_attr = type_name
    return arg


class OpType:
    """Base of registry entries; see the module docstring."""

    type_name: str = ""
    inputs: list = []
    outputs: list = []
    attrs: dict = {}
    stateful: bool = False
    # True for ops whose output aliases a ref input (TF1's Identity of a variable): the
    # lowering receives the ref and consumers read the variable where they run.
    forwards_refs: bool = False
    # Filled by register():
    input_specs: list = []
    output_specs: list = []

    infer = None
    lower = None
    gradient = None
    not_differentiable: bool = False

    @classmethod
    def complete_attrs(cls, given: dict, node_name: str) -> dict:
        """The op's attrs: given values normalised, defaults filled, internal '_' attrs kept."""
        out: dict = {}
        for name, spec in cls.attrs.items():
            if name in given:
                out[name] = _normalize_attr(spec.kind, given[name])
            elif spec.default is not REQUIRED:
                out[name] = _normalize_attr(spec.kind, spec.default)
            else:
                raise TypeError(f"Missing required attr '{name}' for op '{node_name}' of type {cls.type_name}")
            if spec.kind == "type" and spec.allowed and out[name] not in spec.allowed:
                allowed = ", ".join(d.name for d in spec.allowed)
                # TF names the input the type was inferred from, else the attr itself.
                param = next((s.name for s in cls.input_specs if s.type_attr == name), name)
                raise TypeError(f"Value passed to parameter '{param}' has DataType {out[name].name} not "
                                f"in list of allowed values: {allowed}")
        for name, value in given.items():
            if name not in cls.attrs:
                if name.startswith("_") or type(value).__name__ == "AttrValue":
                    # Internal attrs, and attrs of imported GraphDefs this registry does not
                    # know (kept verbatim so the NodeDef round-trips).
                    out[name] = value
                else:
                    raise TypeError(f"Op type {cls.type_name} has no attr named '{name}'")
        return out

    @classmethod
    def output_dtypes(cls, op) -> list:
        from . import dtypes

        out = []
        for spec in cls.output_specs:
            if spec.fixed_dtype:
                dtype = dtypes.as_dtype(spec.fixed_dtype)
            else:
                dtype = op._attrs[spec.type_attr]
                if isinstance(dtype, list):  # list(type) attr: one output per entry
                    out.extend(dtypes.as_dtype(d) for d in dtype)
                    continue
            if spec.is_ref:
                dtype = dtype._as_ref
            count = op._attrs[spec.number_attr] if spec.number_attr else 1
            out.extend([dtype] * count)
        return out

    @classmethod
    def run_inference(cls, op) -> list:
        """[(DType, TensorShape)] for the op's outputs; shape errors name the op like TF."""
        from .tensor_shape import TensorShape, unknown_shape

        dtypes_out = cls.output_dtypes(op)
        if cls.infer is None:
            shapes = [unknown_shape()] * len(dtypes_out)
        else:
            try:
                shapes = cls.infer(op)
            except ShapeError as e:
                input_shapes = ", ".join(_shape_text(t.shape) for t in op._inputs)
                raise ValueError(f"{e} for '{op.name}' (op: '{op.type}') with input shapes: {input_shapes}"
                                 f"{e.context}.") from None
        out = []
        for i, item in enumerate(shapes):
            if isinstance(item, tuple):
                out.append((item[0], TensorShape(item[1])))
            else:
                out.append((dtypes_out[i], TensorShape(item)))
        if len(out) != len(dtypes_out) and cls.output_specs:
            raise AssertionError(f"{cls.type_name}.infer returned {len(out)} shapes for {len(dtypes_out)} outputs")
        return out


def _shape_text(shape) -> str:
    if shape.dims is None:
        return "?"
    return "[" + ",".join("?" if d.value is None else str(d.value) for d in shape.dims) + "]"


def _normalize_attr(kind: str, value):
    from . import dtypes
    from .tensor_shape import TensorShape

    if value is None:
        return None
    if kind == "type":
        return dtypes.as_dtype(value)
    if kind == "list(type)":
        return [dtypes.as_dtype(v) for v in value]
    if kind == "shape":
        return TensorShape(value)
    if kind == "list(shape)":
        return [TensorShape(v) for v in value]
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "list(int)":
        return [int(v) for v in value]
    if kind == "list(float)":
        return [float(v) for v in value]
    if kind == "string":
        return value.decode() if isinstance(value, bytes) else str(value)
    if kind == "list(string)":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in value]
    return value


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: add an OpType subclass to the registry under its type name."""
    cls.type_name = cls.__dict__.get("type_name") or cls.__name__
    if cls.type_name in _REGISTRY:
        raise ValueError(f"op type {cls.type_name} registered twice")
    cls.input_specs = [parse_arg(s) for s in cls.inputs]
    cls.output_specs = [parse_arg(s) for s in cls.outputs]
    for spec in cls.input_specs + cls.output_specs:
        for attr_name in (spec.type_attr, spec.number_attr):
            if attr_name and attr_name not in cls.attrs:
                raise ValueError(f"{cls.type_name}: argument {spec.name} names undeclared attr {attr_name}")
    _REGISTRY[cls.type_name] = cls
    return cls


def lowering_in(module: str, name: str):
    """An entry's lowering that lives in a pass module (``module.name``), imported when an
    op is lowered: the frontend does not import the passes."""

    def lower(ctx, op, *inputs):
        import importlib

        return getattr(importlib.import_module(module), name)(ctx, op, *inputs)

    lower.__name__ = name
    return lower


def lookup_op_type(type_name: str) -> type:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise ValueError(f"Op type not registered '{type_name}' in binary running tfc.") from None


def registered_op_types() -> list:
    return sorted(_REGISTRY)


def is_registered(type_name: str) -> bool:
    return type_name in _REGISTRY
