"""The function library of an imported GraphDef, and functions instantiated as graphs.

``import_graph_def`` keeps the GraphDef's FunctionDefs with the graph (``register``).
``instantiate(graph, name)`` builds a function as a graph of its own: one Placeholder per
input argument (named like the argument, with the caller's dtype), then the function's
nodes, imported like a GraphDef's. Inside a FunctionDef a node names another node's output
as ``node:output_arg:index`` (the op's output argument and the index within it); that
becomes the flat output index ``node:k`` TF's graphs use. The result gives the input
placeholders and the output tensors in signature order, for the lowering of If/While
(tfc/passes/lower_control.py) to bind and lower into the IR's regions.
"""
from __future__ import annotations

from dataclasses import dataclass

from .registry import lookup_op_type

_LIBRARY_KEY = "function_library"
_INSTANCES_KEY = "function_instances"


@dataclass
class FunctionGraph:
    name: str
    graph: object  # a tfc Graph
    inputs: list  # Placeholder tensors, in signature order
    outputs: list  # tensors, in signature order


def register(graph, library) -> None:
    """Keep ``library``'s FunctionDefs (a FunctionDefLibrary proto) with ``graph``."""
    functions = graph._scratch.setdefault(_LIBRARY_KEY, {})
    for function in library.function:
        functions[function.signature.name] = function


def instantiate(graph, name: str) -> FunctionGraph:
    """The function ``name`` of ``graph``'s library as a graph (built once per graph)."""
    instances = graph._scratch.setdefault(_INSTANCES_KEY, {})
    if name in instances:
        return instances[name]
    function = graph._scratch.get(_LIBRARY_KEY, {}).get(name)
    if function is None:
        raise ValueError(f"function '{name}' is not in the graph's function library")
    from .graph import Graph
    from .graph_io import import_graph_def
    from tfc.protos import GraphDef

    graph_def = GraphDef()
    for arg in function.signature.input_arg:
        node = graph_def.node.add(name=arg.name, op="Placeholder")
        node.attr["dtype"].type = arg.type
    nodes = {n.name: n for n in function.node_def}
    for node in function.node_def:
        copy = graph_def.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(_flat_input(text, nodes) for text in node.input)
    body = Graph()
    with body.as_default():
        import_graph_def(graph_def, name="")
    body._scratch[_LIBRARY_KEY] = graph._scratch.get(_LIBRARY_KEY, {})  # nested calls
    inputs = [body.get_tensor_by_name(f"{arg.name}:0") for arg in function.signature.input_arg]
    outputs = [body.get_tensor_by_name(_tensor_name(_flat_input(function.ret[arg.name], nodes)))
               for arg in function.signature.output_arg]
    instance = FunctionGraph(name, body, inputs, outputs)
    instances[name] = instance
    return instance


def _tensor_name(text: str) -> str:
    return text if ":" in text else f"{text}:0"


def _flat_input(text: str, nodes: dict) -> str:
    """``node:output_arg:index`` -> ``node:flat_index``; arguments and ``^control`` stay."""
    if text.startswith("^"):
        return text
    parts = text.split(":")
    if len(parts) != 3:
        return text  # a function argument
    node_name, arg_name, index = parts[0], parts[1], int(parts[2])
    node = nodes[node_name]
    entry = lookup_op_type(node.op)
    offset = 0
    for spec in entry.output_specs:
        if spec.name == arg_name:
            return f"{node_name}:{offset + index}"
        offset += _arg_count(spec, node)
    raise ValueError(f"node '{node_name}' ({node.op}) has no output argument '{arg_name}'")


def _arg_count(spec, node) -> int:
    if spec.number_attr:
        return node.attr[spec.number_attr].i
    if spec.type_attr and spec.type_attr in node.attr and node.attr[spec.type_attr].WhichOneof("value") == "list":
        return len(node.attr[spec.type_attr].list.type)
    return 1
