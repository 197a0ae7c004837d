"""tf.graph_util: freezing and pruning GraphDefs, as TensorFlow 1.15's graph_util_impl.py.

``convert_variables_to_constants`` keeps the nodes the outputs need (``extract_sub_graph``:
a breadth-first walk over inputs, control inputs and ``loc:@`` colocations, the kept nodes
in their GraphDef order), reads the variables' values in one ``sess.run`` and writes each
variable as a ``Const`` node of the same name (its ``dtype`` attr and a TensorProto laid
out as ``make_tensor_proto`` lays it out; no device), logging TF's ``Froze N variables.``
and ``Converted N variables to const ops.`` through ``tf.logging``. The frozen GraphDef
carries the function library but, as in TF 1.15, no ``versions``.
"""
from __future__ import annotations

import copy
import re

from . import dtypes
from . import tf_logging as logging

_MODULE = "tensorflow.python.framework.graph_util_impl"

_VARIABLE_OPS = {"Assign", "AssignAdd", "AssignSub", "Queue", "ScatterAdd", "ScatterSub", "ScatterUpdate",
                 "TruncatedNormal", "Variable", "VariableV2"}


def _deprecated(name: str) -> None:
    logging.deprecation_warning(name, _MODULE, f"Use `tf.compat.v1.graph_util.{name}`", stacklevel=3)


def _graph_def_class():
    from tfc.protos import GraphDef

    return GraphDef


def _is_variable_op(op: str) -> bool:
    return op in _VARIABLE_OPS


def must_run_on_cpu(node, pin_variables_on_cpu=False) -> bool:
    """Whether a node (an Operation or a NodeDef) must be placed on the CPU."""
    _deprecated("must_run_on_cpu")
    node_def = node.node_def if hasattr(node, "node_def") and not hasattr(node, "attr") else node
    if pin_variables_on_cpu and _is_variable_op(node_def.op):
        return True
    if node_def.op == "Const":
        dtype = node_def.attr["dtype"].type
        if dtype in (dtypes.string.as_datatype_enum, dtypes.int32.as_datatype_enum):
            return True
    if node_def.op in ("DynamicStitch", "ParallelDynamicStitch"):
        if node_def.attr["T"].type == dtypes.int32.as_datatype_enum:
            return True
    if node_def.op == "Cast":
        if node_def.attr["SrcT"].type == dtypes.int32.as_datatype_enum:
            return True
    return False


def _node_name(n: str) -> str:
    return n[1:] if n.startswith("^") else n.split(":")[0]


def _extract_graph_summary(graph_def) -> tuple:
    """(node -> input node names, name -> NodeDef, name -> position in the GraphDef)."""
    name_to_input_name, name_to_node, name_to_seq_num = {}, {}, {}
    for seq, node in enumerate(graph_def.node):
        n = _node_name(node.name)
        name_to_node[n] = node
        name_to_input_name[n] = [_node_name(x) for x in node.input]
        if "_class" in node.attr:  # colocated nodes are kept with the node
            for colocated in node.attr["_class"].list.s:
                text = colocated.decode("utf-8")
                if text.startswith("loc:@"):
                    name_to_input_name[n].append(text[5:])
        name_to_seq_num[n] = seq
    return name_to_input_name, name_to_node, name_to_seq_num


def _assert_nodes_are_present(name_to_node: dict, nodes) -> None:
    for d in nodes:
        assert d in name_to_node, "%s is not in graph" % d


def _bfs_for_reachable_nodes(target_nodes, name_to_input_name: dict) -> set:
    nodes_to_keep: set = set()
    next_to_visit = list(target_nodes)
    while next_to_visit:
        node = next_to_visit.pop(0)
        if node in nodes_to_keep:
            continue
        nodes_to_keep.add(node)
        if node in name_to_input_name:
            next_to_visit += name_to_input_name[node]
    return nodes_to_keep


def _extract_sub_graph(graph_def, dest_nodes):
    if not isinstance(graph_def, _graph_def_class()):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto.")
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    name_to_input_name, name_to_node, name_to_seq_num = _extract_graph_summary(graph_def)
    _assert_nodes_are_present(name_to_node, dest_nodes)
    nodes_to_keep = _bfs_for_reachable_nodes(dest_nodes, name_to_input_name)
    out = _graph_def_class()()
    for n in sorted(nodes_to_keep, key=lambda n: name_to_seq_num[n]):
        out.node.extend([copy.deepcopy(name_to_node[n])])
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes ``dest_nodes`` (node names) need, in their original order."""
    _deprecated("extract_sub_graph")
    return _extract_sub_graph(graph_def, dest_nodes)


def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of a tensor named ``op`` or ``op:N`` in ``graph``."""
    _deprecated("tensor_shape_from_node_def_name")
    if ":" not in input_name:
        canonical_name = input_name + ":0"
    else:
        canonical_name = input_name
    return graph.get_tensor_by_name(canonical_name).get_shape()


def _const_node(name: str, dtype_attr, data):
    from tfc.protos import AttrValue, NodeDef

    from .tensor_util import make_tensor_proto

    node = NodeDef(op="Const", name=name)
    node.attr["dtype"].CopyFrom(dtype_attr)
    node.attr["value"].CopyFrom(AttrValue(tensor=make_tensor_proto(data, dtype=dtype_attr.type, shape=data.shape)))
    return node


def convert_variables_to_constants(sess, input_graph_def, output_node_names, variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """The GraphDef that ``output_node_names`` need, with each variable a Const of its value in ``sess``."""
    import numpy as np
    from tfc.protos import NodeDef

    _deprecated("convert_variables_to_constants")
    inference_graph = _extract_sub_graph(input_graph_def, output_node_names)
    variable_names, variable_dict_names = [], []
    for node in inference_graph.node:
        if node.op in ("Variable", "VariableV2", "VarHandleOp"):
            variable_name = node.name
            if ((variable_names_whitelist is not None and variable_name not in variable_names_whitelist) or
                    (variable_names_blacklist is not None and variable_name in variable_names_blacklist)):
                continue
            variable_dict_names.append(variable_name)
            if node.op == "VarHandleOp":
                variable_names.append(variable_name + "/Read/ReadVariableOp:0")
            else:
                variable_names.append(variable_name + ":0")
    returned_variables = sess.run(variable_names) if variable_names else []
    found_variables = dict(zip(variable_dict_names, returned_variables))
    logging.info("Froze %d variables.", len(returned_variables))

    output_graph_def = _graph_def_class()()
    how_many_converted = 0
    for input_node in inference_graph.node:
        if input_node.name in found_variables:
            output_node = _const_node(input_node.name, input_node.attr["dtype"],
                                      np.asarray(found_variables[input_node.name]))
            how_many_converted += 1
        elif input_node.op == "ReadVariableOp" and input_node.input[0] in found_variables:
            # The variable became a Const: its read becomes an Identity.
            output_node = NodeDef(op="Identity", name=input_node.name, input=[input_node.input[0]])
            output_node.attr["T"].CopyFrom(input_node.attr["dtype"])
            if "_class" in input_node.attr:
                output_node.attr["_class"].CopyFrom(input_node.attr["_class"])
        else:
            output_node = NodeDef()
            output_node.CopyFrom(input_node)
        output_graph_def.node.extend([output_node])
    output_graph_def.library.CopyFrom(inference_graph.library)
    logging.info("Converted %d variables to const ops.", how_many_converted)
    return output_graph_def


def remove_training_nodes(input_graph, protected_nodes=None):
    """Drop CheckNumerics nodes and splice out Identity nodes (neither protected nor in a
    control edge), as TF 1.15 does for inference graphs."""
    from tfc.protos import NodeDef

    _deprecated("remove_training_nodes")
    if not protected_nodes:
        protected_nodes = []
    types_to_remove = {"CheckNumerics": True}
    input_nodes = input_graph.node
    names_to_remove = {}
    for node in input_nodes:
        if node.op in types_to_remove and node.name not in protected_nodes:
            names_to_remove[node.name] = True

    nodes_after_removal = []
    for node in input_nodes:
        if node.name in names_to_remove:
            continue
        new_node = NodeDef()
        new_node.CopyFrom(node)
        del new_node.input[:]
        for full_input_name in node.input:
            input_name = re.sub(r"^\^", "", full_input_name)
            if input_name in names_to_remove:
                continue
            new_node.input.append(full_input_name)
        nodes_after_removal.append(new_node)

    types_to_splice = {"Identity": True}
    control_input_names = set()
    node_names_with_control_input = set()
    for node in nodes_after_removal:
        for node_input in node.input:
            if "^" in node_input:
                control_input_names.add(node_input.replace("^", ""))
                node_names_with_control_input.add(node.name)

    names_to_splice = {}
    for node in nodes_after_removal:
        if node.op in types_to_splice and node.name not in protected_nodes:
            # A node with control inputs may order something: it stays.
            if node.name not in node_names_with_control_input:
                names_to_splice[node.name] = node.input[0]
    # So does a node used as a control input.
    names_to_splice = {name: value for name, value in names_to_splice.items() if name not in control_input_names}

    nodes_after_splicing = []
    for node in nodes_after_removal:
        if node.name in names_to_splice:
            continue
        new_node = NodeDef()
        new_node.CopyFrom(node)
        del new_node.input[:]
        for full_input_name in node.input:
            input_name = re.sub(r"^\^", "", full_input_name)
            while input_name in names_to_splice:
                full_input_name = names_to_splice[input_name]
                input_name = re.sub(r"^\^", "", full_input_name)
            new_node.input.append(full_input_name)
        nodes_after_splicing.append(new_node)

    output_graph = _graph_def_class()()
    output_graph.node.extend(nodes_after_splicing)
    return output_graph


EXPORTS = {
    "convert_variables_to_constants": convert_variables_to_constants,
    "extract_sub_graph": extract_sub_graph,
    "must_run_on_cpu": must_run_on_cpu,
    "remove_training_nodes": remove_training_nodes,
    "tensor_shape_from_node_def_name": tensor_shape_from_node_def_name,
}
