"""GraphDef export and import: ``g.as_graph_def()``, ``tf.import_graph_def``,
``tf.train.write_graph``, with TensorFlow's wire format (tfc/protos)."""
from __future__ import annotations

import heapq
import os
import re
from typing import Optional

from . import dtypes
from .graph import Tensor, get_default_graph
from .registry import REQUIRED, is_registered, lookup_op_type
from .tensor_shape import TensorShape

GRAPH_DEF_VERSION = 134  # TensorFlow 1.15's producer version
GRAPH_DEF_VERSION_MIN_CONSUMER = 0


def graph_to_graph_def(graph, from_version=None, add_shapes: bool = False):
    from tfc.protos import GraphDef

    graph_def = GraphDef()
    graph_def.versions.producer = GRAPH_DEF_VERSION
    graph_def.versions.min_consumer = GRAPH_DEF_VERSION_MIN_CONSUMER
    for op in graph.get_operations():
        if from_version is not None and op._id <= from_version:
            continue
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        if add_shapes:
            shapes = node.attr["_output_shapes"].list
            for t in op.outputs:
                shapes.shape.add().CopyFrom(t.shape.as_proto())
    return graph_def


def _attr_from_proto(kind: str, value):
    if kind == "type":
        return dtypes.as_dtype(value.type)
    if kind == "shape":
        return TensorShape(value.shape)
    if kind == "tensor":
        return value.tensor
    if kind == "bool":
        return value.b
    if kind == "int":
        return value.i
    if kind == "float":
        return value.f
    if kind == "string":
        return value.s.decode("utf-8", errors="surrogateescape")
    if kind == "func":
        return value.func.name
    if kind == "list(int)":
        return list(value.list.i)
    if kind == "list(float)":
        return list(value.list.f)
    if kind == "list(type)":
        return [dtypes.as_dtype(t) for t in value.list.type]
    if kind == "list(shape)":
        return [TensorShape(s) for s in value.list.shape]
    if kind == "list(string)":
        return [s.decode("utf-8", errors="surrogateescape") for s in value.list.s]
    return value


def _node_attrs(node) -> dict:
    entry = lookup_op_type(node.op)
    attrs = {}
    for name, value in node.attr.items():
        spec = entry.attrs.get(name)
        if spec is not None:
            attrs[name] = _attr_from_proto(spec.kind, value)
        elif name == "_class":
            attrs[name] = [s.decode() for s in value.list.s]
        else:
            attrs[name] = value
    return attrs


_INPUT_RE = re.compile(r"^(.+):(\d+)$")


def _parse_input(text: str) -> tuple:
    """A NodeDef input -> (source node, output index, is_control), as TF's ParseTensorName."""
    if text.startswith("^"):
        return text[1:], -1, True
    match = _INPUT_RE.match(text)
    if match:
        return match.group(1), int(match.group(2)), False
    return text, 0, False


def _check_unique_names(nodes) -> None:
    seen = set()
    for node in nodes:
        if node.name in seen:
            raise ValueError(f"Node '{node.name}' is not unique")
        seen.add(node.name)


def _check_inputs_exist(nodes, input_map: dict) -> None:
    """TF's error for an input that is neither a GraphDef node nor mapped by ``input_map``."""
    names = {n.name for n in nodes}
    for node in nodes:
        seen_control = False
        for inp in node.input:
            if inp.startswith("^"):
                seen_control = True
            elif seen_control:
                raise ValueError(f"Node '{node.name}': Control dependencies must come after regular dependencies")
            if _tensor_key(inp) in input_map:
                continue
            source, _, _ = _parse_input(inp)
            if source not in names:
                raise ValueError(f"Node '{node.name}': Unknown input node '{inp}'")


def _topological(nodes, input_map: dict) -> tuple:
    """(nodes in TF's import order, how many are left in or behind a cycle).

    Kahn's algorithm taking the ready node that comes first in the GraphDef, as TF's
    GraphConstructor does; inputs replaced through ``input_map`` are not edges."""
    index = {n.name: i for i, n in enumerate(nodes)}
    pending = [0] * len(nodes)
    consumers: list = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for inp in node.input:
            if _tensor_key(inp) in input_map or _is_back_edge(node, inp, nodes, index):
                continue
            pending[i] += 1
            consumers[index[_parse_input(inp)[0]]].append(i)
    ready = [i for i, count in enumerate(pending) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for j in consumers[i]:
            pending[j] -= 1
            if pending[j] == 0:
                heapq.heappush(ready, j)
    return order, len(nodes) - len(order)


def _is_back_edge(node, inp: str, nodes, index: dict) -> bool:
    """A while loop's NextIteration -> Merge edge: the one kind of cycle a graph may have
    (TF's GraphConstructor adds these edges after every node exists)."""
    if node.op not in ("Merge", "RefMerge"):
        return False
    source, _, is_control = _parse_input(inp)
    position = index.get(source)
    return not is_control and position is not None and nodes[position].op in ("NextIteration", "RefNextIteration")


def _unique_names(graph, nodes, prefix: str) -> dict:
    """GraphDef name -> graph name: a name the graph already has gets TF's ``_N`` suffix."""
    taken = set(graph._nodes_by_name)
    in_graph_def = {prefix + n.name for n in nodes}
    out = {}
    for node in nodes:
        original = name = prefix + node.name
        count = 0
        while name in taken or (count > 0 and name in in_graph_def):
            count += 1
            name = f"{original}_{count}"
        taken.add(name)
        out[node.name] = name
    return out


class _GraphSnapshot:
    """What adding ops changes in a graph, so that a failed import can be undone."""

    def __init__(self, graph):
        self.graph = graph
        self.op_count = len(graph._ops)
        self.next_id = graph._next_id_counter
        self.names_in_use = dict(graph._names_in_use)
        self.collection_sizes = {k: len(v) for k, v in graph._collections.items()}

    def restore(self) -> None:
        graph = self.graph
        added = graph._ops[self.op_count:]
        with graph._lock:
            del graph._ops[self.op_count:]
            for op in added:
                graph._nodes_by_name.pop(op.name, None)
        for op in added:
            for t in op._inputs:
                if op in t._consumers:
                    t._consumers.remove(op)
        for controller in graph._control_dependencies_stack:
            controller._seen_ops.difference_update(added)
        graph._next_id_counter = self.next_id
        graph._names_in_use.clear()
        graph._names_in_use.update(self.names_in_use)
        for key in [k for k in graph._collections if k not in self.collection_sizes]:
            del graph._collections[key]
        for key, size in self.collection_sizes.items():
            del graph._collections[key][size:]


def import_graph_def(graph_def, input_map: Optional[dict] = None, return_elements=None, name: Optional[str] = None,
                     op_dict=None, producer_op_list=None):
    """Add the nodes of ``graph_def`` to the default graph under the scope ``name``.

    Either every node is added or, when the import fails, none: the graph (its ops, version,
    names in use and collections) is left as it was, except that the scope name stays used, as
    in TensorFlow."""
    del op_dict, producer_op_list
    graph = get_default_graph()
    input_map = {(_tensor_key(k)): v for k, v in (input_map or {}).items()}
    nodes = list(graph_def.node)
    _check_input_map(graph_def, input_map)
    _check_return_elements(graph_def, return_elements)
    unknown = sorted({n.op for n in nodes if not is_registered(n.op)})
    if unknown:
        raise ValueError(f"Op type not registered: the GraphDef uses {len(unknown)} op type"
                         f"{'s' if len(unknown) != 1 else ''} tfc does not know: {', '.join(unknown)}")
    _check_unique_names(nodes)
    _check_inputs_exist(nodes, input_map)
    if len(graph_def.library.function):
        from .function_library import register

        register(graph, graph_def.library)  # If/While bodies (lowered from there)
    with graph.name_scope("import" if name is None else name) as prefix:
        snapshot = _GraphSnapshot(graph)
        try:
            created = _create_ops(graph, nodes, input_map, prefix)
        except BaseException:
            snapshot.restore()
            raise
    for op in created.values():
        graph._names_in_use.setdefault(op.name.lower(), 1)
    if return_elements is None:
        return None
    out = []
    for element in return_elements:
        if ":" in element:
            op_name, index = element.rsplit(":", 1)
            op = created[op_name]
            if not 0 <= int(index) < len(op.outputs):
                raise ValueError(f"Invalid return output {index} of node '{op_name}', which has "
                                 f"{len(op.outputs)} output(s)")
            out.append(op.outputs[int(index)])
        else:
            out.append(created[element])
    return out


def _create_ops(graph, nodes, input_map: dict, prefix: str) -> dict:
    """Add the nodes in topological order; GraphDef name -> Operation."""
    order, in_cycle = _topological(nodes, input_map)
    names = _unique_names(graph, nodes, prefix)
    positions = {n.name: i for i, n in enumerate(nodes)}
    created: dict = {}
    back_edges = []  # (Merge op, input slot, NextIteration node name, output index)
    for node in order:
        inputs, control = [], []
        for inp in node.input:
            mapped = input_map.get(_tensor_key(inp))
            source, index, is_control = _parse_input(inp)
            if is_control:
                control.append(mapped if mapped is not None else created[source])
            elif mapped is not None:
                inputs.append(mapped)
            elif source not in created and _is_back_edge(node, inp, nodes, positions):
                back_edges.append((node.name, len(inputs), source, index))
                inputs.append(None)  # filled in once the NextIteration exists
            else:
                outputs = created[source].outputs
                if index >= len(outputs):
                    raise ValueError(f"Node '{node.name}': Connecting to invalid output {index} of source node "
                                     f"{source} which has {len(outputs)} outputs.")
                inputs.append(outputs[index])
        available = next((t for t in inputs if t is not None), None)
        inputs = [t if t is not None else available for t in inputs]  # a Merge's back edge, for now
        _check_node_def(node, names[node.name], len(inputs))
        _check_input_types(node, inputs, prefix)
        op = graph.create_op(node.op, inputs, name=names[node.name] + "/", attrs=_node_attrs(node),
                             control_inputs=[c.op if isinstance(c, Tensor) else c for c in control])
        if node.device:
            op._set_device(node.device)
        created[node.name] = op
    if in_cycle:
        raise ValueError(f"{in_cycle} nodes in a cycle")
    for merge_name, slot, source, index in back_edges:
        outputs = created[source].outputs
        if index >= len(outputs):
            raise ValueError(f"Node '{merge_name}': Connecting to invalid output {index} of source node "
                             f"{source} which has {len(outputs)} outputs.")
        created[merge_name]._update_input(slot, outputs[index])
    return created


def _check_input_map(graph_def, input_map: dict) -> None:
    """TF's error for input_map keys the GraphDef does not have."""
    nodes = {n.name: n for n in graph_def.node}
    used = {_tensor_key(inp) for n in graph_def.node for inp in n.input}
    missing = []
    for key in input_map:
        name = key[1:] if key.startswith("^") else key.rsplit(":", 1)[0]
        if name not in nodes and key not in used:
            missing.append(key)
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(missing)}]")


def _check_return_elements(graph_def, return_elements) -> None:
    nodes = {n.name for n in graph_def.node}
    for element in return_elements or ():
        if ":" in element:
            name = element.rsplit(":", 1)[0]
            if name not in nodes:
                raise ValueError(f"Requested return tensor '{element}' not found in graph def")
        elif element not in nodes:
            raise ValueError(f"Requested return node '{element}' not found in graph def")


def _check_input_types(node, inputs: list, prefix: str) -> None:
    """An input whose dtype the op's signature rules out is TF's import-time ValueError."""
    entry = lookup_op_type(node.op)
    expected = []
    for spec in entry.input_specs:
        if spec.number_attr:
            count = node.attr[spec.number_attr].i if spec.number_attr in node.attr else 0
        elif spec.type_attr and spec.type_attr in node.attr and node.attr[spec.type_attr].WhichOneof("value") \
                == "list":
            count = len(node.attr[spec.type_attr].list.type)
        else:
            count = 1
        if spec.fixed_dtype:
            dtype = dtypes.as_dtype(spec.fixed_dtype)
        elif spec.type_attr in node.attr and node.attr[spec.type_attr].WhichOneof("value") == "type":
            dtype = dtypes.as_dtype(node.attr[spec.type_attr].type)
        else:
            dtype = None
        expected.extend([dtype] * count)
    for i, (tensor, dtype) in enumerate(zip(inputs, expected)):
        if dtype is not None and tensor.dtype.base_dtype != dtype:
            raise ValueError(f"Input {i} of node {prefix}{node.name} was passed {tensor.dtype.base_dtype.name} from "
                             f"{tensor.name} incompatible with expected {_tf_type_name(dtype)}.")


def _check_node_def(node, name: str, num_inputs: int) -> None:
    """TF's ValidateNodeDef: the attrs the op requires are set and the node has as many
    (non-control) inputs as the op's signature, for the node's attrs, expects."""
    entry = lookup_op_type(node.op)
    missing = [a for a, spec in entry.attrs.items() if spec.default is REQUIRED and a not in node.attr]
    if missing:
        listed = "', '".join(missing)
        raise ValueError(f"NodeDef missing attr{'s' if len(missing) > 1 else ''} '{listed}' from "
                         f"{_op_summary(entry)}; NodeDef: {{{{node {name}}}}}")
    count, expected = _expected_input_types(node, entry)
    if count != num_inputs:
        raise ValueError(f"NodeDef expected inputs '{expected}' do not match {num_inputs} inputs "
                         f"specified; {_op_summary(entry)}; NodeDef: {{{{node {name}}}}}")


_LISTED_REPEATS = 64  # a list input repeated more often (an absurd N attr) is summarised


def _expected_input_types(node, entry) -> tuple:
    """(how many inputs, their TF type names joined by ', ') that the op's signature gives
    for the node's attrs (or the attrs' defaults): 'float, int32, float_ref'... A list
    repeated more than _LISTED_REPEATS times is written once with its count."""
    def attr(name: str, field: str):
        if name in node.attr:
            value = node.attr[name]
            return list(value.list.type) if field == "types" else getattr(value, field)
        return entry.attrs[name].default

    count, parts = 0, []
    for spec in entry.input_specs:
        if spec.fixed_dtype:
            types = [dtypes.as_dtype(spec.fixed_dtype)]
        elif entry.attrs[spec.type_attr].kind == "list(type)":
            types = list(attr(spec.type_attr, "types") or ())
        else:
            types = [attr(spec.type_attr, "type")]
        repeats = max(0, int(attr(spec.number_attr, "i"))) if spec.number_attr else 1
        names = [_dtype_text(t) + ("_ref" if spec.is_ref else "") for t in types]
        count += len(names) * repeats
        if repeats <= _LISTED_REPEATS:
            parts.extend(names * repeats)
        elif names:
            parts.append(f"{', '.join(names)} (x{repeats})")
    return count, ", ".join(parts)


def _dtype_text(value) -> str:
    """TF's DataTypeString of a DType, a DataType enum value or a dtype name."""
    try:
        return _tf_type_name(dtypes.as_dtype(value))
    except (TypeError, ValueError, KeyError):
        return "INVALID" if value == 0 else f"unknown dtype {value}"


def _op_summary(entry) -> str:
    """TF's SummarizeOpDef, up to the signature (the registry does not keep TF's attr details)."""
    def args(specs) -> str:
        parts = []
        for spec in specs:
            if spec.fixed_dtype:
                kind = _tf_type_name(dtypes.as_dtype(spec.fixed_dtype))
            elif entry.attrs[spec.type_attr].kind == "list(type)":
                kind = ""
            else:
                kind = spec.type_attr
            kind = (f"{spec.number_attr}*" if spec.number_attr else "") + kind
            parts.append(f"{spec.name}:" + (f"Ref({kind})" if spec.is_ref else kind))
        return ", ".join(parts)

    return f"Op<name={entry.type_name}; signature={args(entry.input_specs)} -> {args(entry.output_specs)}>"


def _tf_type_name(dtype) -> str:
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


def _tensor_key(name: str) -> str:
    if name.startswith("^"):
        return name
    return name if ":" in name else f"{name}:0"


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """tf.train.write_graph: the GraphDef as text or binary; returns the file's path."""
    from google.protobuf import text_format

    graph_def = graph_or_graph_def.as_graph_def() if hasattr(graph_or_graph_def, "as_graph_def") else \
        graph_or_graph_def
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
    return path


def load_graph_def(path: str, name: Optional[str] = None):
    """Read a GraphDef file (binary .pb or text .pbtxt) and import it into the default graph."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    from tfc.protos import GraphDef

    graph_def = GraphDef()
    with open(path, "rb") as f:
        data = f.read()
    try:
        if path.endswith(".pbtxt"):
            text_format.Parse(data.decode(), graph_def)
        else:
            graph_def.ParseFromString(data)
    except (DecodeError, text_format.ParseError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not a valid GraphDef: {e}") from None
    import_graph_def(graph_def, name=name)
    return graph_def


TF_EXPORTS = ["import_graph_def"]
TRAIN_EXPORTS = ["write_graph"]
