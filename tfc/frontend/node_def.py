"""NodeDef protobufs for operations, and TF-style attribute values (op.get_attr)."""
from __future__ import annotations

from . import dtypes
from .tensor_shape import TensorShape


def _attr_kind(op, name: str) -> str:
    spec = op.op_def.attrs.get(name)
    if spec is not None:
        return spec.kind
    if type(op._attrs[name]).__name__ == "AttrValue":
        return "raw"
    if name == "_class":
        return "list(string)"
    value = op._attrs[name]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, dtypes.DType):
        return "type"
    if isinstance(value, list):
        return "list(string)"
    return "string"


def _to_attr_value(kind: str, value):
    from tfc.protos import AttrValue

    out = AttrValue()
    if kind == "raw":
        out.CopyFrom(value)
    elif kind == "type":
        out.type = value.as_datatype_enum
    elif kind == "bool":
        out.b = value
    elif kind == "int":
        out.i = value
    elif kind == "float":
        out.f = value
    elif kind == "string":
        out.s = value.encode("utf-8", errors="surrogateescape") if isinstance(value, str) else value
    elif kind == "shape":
        out.shape.CopyFrom(value.as_proto())
    elif kind == "tensor":
        out.tensor.CopyFrom(value)
    elif kind == "func":
        out.func.name = value if isinstance(value, str) else value.name
    elif kind == "list(int)":
        out.list.i.extend(value)
        out.list.SetInParent()
    elif kind == "list(float)":
        out.list.f.extend(value)
        out.list.SetInParent()
    elif kind == "list(type)":
        out.list.type.extend(d.as_datatype_enum for d in value)
        out.list.SetInParent()
    elif kind == "list(shape)":
        for shape in value:
            out.list.shape.add().CopyFrom(TensorShape(shape).as_proto())
        out.list.SetInParent()
    elif kind == "list(string)":
        out.list.s.extend(v.encode("utf-8", errors="surrogateescape") if isinstance(v, str) else v for v in value)
        out.list.SetInParent()
    else:
        raise TypeError(f"unknown attr kind {kind}")
    return out


def input_name(tensor) -> str:
    """The NodeDef input string of a tensor: 'op' for output 0, 'op:1' otherwise."""
    return tensor.op.name if tensor.value_index == 0 else f"{tensor.op.name}:{tensor.value_index}"


def make_node_def(op):
    from tfc.protos import NodeDef

    node = NodeDef(name=op.name, op=op.type, device=op.device)
    updated = getattr(op, "_updated_inputs", ())  # TF's UpdateEdge writes 'op:index'
    node.input.extend(f"{t.op.name}:{t.value_index}" if i in updated else input_name(t)
                      for i, t in enumerate(op._inputs))
    node.input.extend(f"^{c.name}" for c in op._control_inputs)
    for name in sorted(op._attrs):
        value = op._attrs[name]
        if value is None:
            continue
        node.attr[name].CopyFrom(_to_attr_value(_attr_kind(op, name), value))
    return node


def attr_to_python(op, name: str):
    """What TF's Operation.get_attr returns for attr ``name``."""
    kind = _attr_kind(op, name)
    value = op._attrs[name]
    if value is None:
        return None
    if kind == "shape":
        return value.as_proto()
    if kind == "list(shape)":
        return [TensorShape(v).as_proto() for v in value]
    if kind == "string":
        return value.encode("utf-8", errors="surrogateescape") if isinstance(value, str) else value
    if kind == "list(string)":
        return [v.encode("utf-8", errors="surrogateescape") if isinstance(v, str) else v for v in value]
    if kind == "list(int)" or kind == "list(float)" or kind == "list(type)":
        return list(value)
    return value
