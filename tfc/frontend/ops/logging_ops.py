"""tf.Print and tf.print (TF 1.15's logging_ops in graph mode).

How printing runs with a compiled step (see ``tfc/runtime/host.py``):

- ``Print`` (tf.Print) is an identity compiled into the native program, and a *host
  effect*: the step's plan also fetches its data tensors from the program and, after the
  program returns, writes ``message`` + ``[SummarizeValue(d)]``... to stderr as TF's
  PrintOp does (``first_n`` counted per op). Prints of one step come out in graph order
  after the step, not interleaved with its computation. A Print inside a tf.cond branch or
  a while loop is a ``host_call`` in the program instead (tfc/runtime/host_calls.py): the
  program calls back into Python where it reaches it, once per iteration of a loop.
- ``StringFormat`` + ``PrintV2`` (tf.print) are host ops, as every string op: they run
  after the program on the values it returns. Running ``tf.print``'s op (a fetch or a
  target) prints; a compiled op made to depend on it (``tf.control_dependencies``) is
  refused by the planner with a message naming both ops.
"""
from __future__ import annotations

import pprint
import sys
import weakref

import numpy as np

from tfc import program_errors

from .. import dtypes
from ..convert import convert_to_tensor, is_tensor
from ..graph import get_default_graph, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from . import inference_context as ic

_PRINT_COUNTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Print op -> times printed


def _write(stream: str, text: str) -> None:
    if stream == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if stream.startswith("log("):
        from .. import tf_logging

        level = stream[4:-1]
        {"info": tf_logging.info, "warning": tf_logging.warning, "error": tf_logging.error}[level]("%s", text)
        return
    if stream.startswith("file://"):
        with open(stream[len("file://"):], "a") as f:
            f.write(text)
        return
    sys.stderr.write(text)
    sys.stderr.flush()


@register
class Print(OpType):
    """Identity of ``input`` that prints ``data`` (TF's PrintOp: ``std::cerr``)."""

    inputs = ["input: T", "data: U"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "U": Attr("list(type)"), "message": Attr("string", ""),
             "first_n": Attr("int", -1), "summarize": Attr("int", 3)}
    stateful = True
    host_effect = True  # compiled as an identity; host() prints after the program
    takes_string_constants = True  # string data are printed by the host, not computed

    infer = ic.unchanged_shape

    def lower(ctx, op, value, *data):
        if op._get_control_flow_context() is not None:  # printed where the program reaches it
            _host_call(ctx, [op], op.inputs[1:], data)
        return [value]

    def gradient(op, grad):
        return [grad] + [None] * (len(op.inputs) - 1)

    def host(op, value, *data):
        first_n = op._attrs["first_n"]
        if first_n >= 0:
            count = _PRINT_COUNTS.get(op, 0)
            if count >= first_n:
                return [value]
            _PRINT_COUNTS[op] = count + 1
        summarize = op._attrs["summarize"]
        message = _text(op._attrs["message"])
        text = message + "".join("[" + program_errors.summarize_value(_host_array(d), summarize) + "]" for d in data)
        _write("stderr", text + "\n")
        return [value]


def _host_call(ctx, ops: list, tensors, values) -> None:
    """A ``host_call`` running ``ops``' host sides on ``values`` (of graph ``tensors``; string
    constants among them are read from the graph by the host side)."""
    passed = [(t, v) for t, v in zip(tensors, values) if ctx.string_value(v) is None]
    ctx.b.op("host_call", [v for _, v in passed], {"ops": [op.name for op in ops],
                                                   "tensors": [t.name for t, _ in passed]})


def _in_control_flow(op) -> bool:
    return op._get_control_flow_context() is not None


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _host_array(value) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind in "SU":
        array = array.astype(object)
    return array


@register
class StringFormat(OpType):
    """Formats tensors into ``template`` (TF's StringFormatOp, SummarizeValue v2)."""

    inputs = ["inputs: T"]
    outputs = ["output: string"]
    attrs = {"T": Attr("list(type)"), "template": Attr("string", "%s"), "placeholder": Attr("string", "%s"),
             "summarize": Attr("int", 3)}
    host_only = True
    not_differentiable = True
    host_call_in_control_flow = True  # see PrintV2

    def infer(op):
        return [_scalar()]

    def lower(ctx, op, *values):
        if not _in_control_flow(op):
            ctx.fail("StringFormat computes a string, which only the host does")
        return [ctx.host_string(op, values)]

    def host(op, *values):
        template = _text(op._attrs["template"])
        placeholder = _text(op._attrs["placeholder"])
        pieces = template.split(placeholder)
        if len(pieces) != len(values) + 1:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(None, op, f"num placeholders in template and num inputs must match: "
                                                 f"{len(pieces) - 1} vs. {len(values)}")
        summarize = op._attrs["summarize"]
        out = pieces[0]
        for value, piece in zip(values, pieces[1:]):
            out += summarize_value_v2(_host_array(value), summarize) + piece
        return [np.array(out.encode(), dtype=object)]


def _scalar():
    from ..tensor_shape import TensorShape

    return TensorShape([])


@register
class PrintV2(OpType):
    """Writes a string scalar to ``output_stream`` followed by ``end``."""

    inputs = ["input: string"]
    outputs = []
    attrs = {"output_stream": Attr("string", "stderr"), "end": Attr("string", "\n")}
    host_only = True
    stateful = True
    not_differentiable = True
    # inside a tf.cond or a tf.while_loop, it and its StringFormat are a host_call of the
    # program (printed where the program reaches it); elsewhere host ops after the program
    host_call_in_control_flow = True
    takes_string_constants = True

    def infer(op):
        return []

    def lower(ctx, op, value):
        source = ctx.host_string_source(value)
        if source is None:  # a string constant: the host side reads it from the graph
            _host_call(ctx, [op], [], [])
        else:
            formatter, values = source
            _host_call(ctx, [formatter, op], formatter.inputs, values)
        return []

    def host(op, value):
        _write(_text(op._attrs["output_stream"]), _text(np.asarray(value, dtype=object).reshape(-1)[0])
               + _text(op._attrs["end"]))
        return []


# =============================================================================================
# Tensor::SummarizeValue(max_entries, print_v2=true)
# =============================================================================================
def summarize_value_v2(value: np.ndarray, summarize: int) -> str:
    """What tf.print writes for a tensor: numpy-like brackets and line breaks, at most
    ``summarize`` elements at each end of every dimension (all when negative)."""
    array = np.asarray(value)
    if array.dtype.kind == "O" or array.dtype.kind in "SU":
        element = lambda v: '"' + program_errors._object_text(v) + '"'  # noqa: E731
    else:
        element = program_errors._element_formatter(array.dtype)
    if array.ndim == 0:
        return element(array.reshape(-1)[0])
    ends = array.size if summarize < 0 else summarize
    out: list = []
    _print_one_dim_v2(array, 0, ends, out, element)
    return "".join(out)


def _dim_spacing(dim: int, ndim: int, out: list) -> None:
    if dim == ndim - 1:
        out.append(" ")
        return
    out.append("\n" * (ndim - dim - 1) + " " * (dim + 1))


def _print_one_dim_v2(array, dim: int, ends: int, out: list, element, index=()) -> None:
    """PrintOneDimV2 of TF's tensor.cc."""
    if dim == array.ndim:
        out.append(element(array[index]))
        return
    out.append("[")
    count = array.shape[dim]
    start_of_end = max(ends, count - ends)
    for i in range(min(ends, count)):
        if i > 0:
            _dim_spacing(dim, array.ndim, out)
        _print_one_dim_v2(array, dim + 1, ends, out, element, index + (i,))
    if count > 2 * ends:
        _dim_spacing(dim, array.ndim, out)
        out.append("...")
    for i in range(start_of_end, count):
        _dim_spacing(dim, array.ndim, out)
        _print_one_dim_v2(array, dim + 1, ends, out, element, index + (i,))
    out.append("]")


# =============================================================================================
# tf.Print, tf.print
# =============================================================================================
def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802 - TF's name
    """Identity of ``input_`` that prints ``data`` to stderr when evaluated (deprecated in TF)."""
    from .. import tf_logging

    tf_logging.deprecation_warning(
        "Print", "tensorflow.python.ops.logging_ops",
        "Use tf.print instead of tf.Print. Note that tf.print returns a no-output operator that directly prints "
        "the output. Outside of defuns or eager mode, this operator will not be executed unless it is directly "
        "specified in session.run or used as a control dependency for other operators. This is only a concern in "
        "graph mode. Below is an example of how to ensure tf.print executes in graph mode:\n",
        after="2018-08-20")
    attrs = {"message": "" if message is None else message, "first_n": -1 if first_n is None else first_n,
             "summarize": 3 if summarize is None else summarize}
    return _create_with_list("Print", [input_], "data", list(data), "U", attrs, name)[0]


def _create_with_list(op_type, leading, list_name, values, list_attr, attrs, name):
    """An op whose last input is a list of tensors of any types (TF's ``U: list(type)``),
    converted inside its name scope as TF's op_def_library does (``Print/data_1``)."""
    with name_scope(name, op_type, leading + values) as scope:
        first = [convert_to_tensor(v, name="input") for v in leading]
        rest = [convert_to_tensor(v, name=f"{list_name}_{i}") for i, v in enumerate(values)]
        attrs = dict(attrs)
        if leading:
            attrs["T"] = first[0].dtype.base_dtype
        attrs[list_attr] = [t.dtype.base_dtype for t in rest]
        return get_default_graph().create_op(op_type, first + rest, name=scope, attrs=attrs).outputs


def _flatten(x) -> list:
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


def _pack(structure, leaves):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], leaves) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, leaves) for item in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    return next(leaves)


def _map(fn, x):
    return _pack(x, iter([fn(leaf) for leaf in _flatten(x)]))


def _placeholder_string(text: str, default: str = "{}") -> str:
    import random

    placeholder = default
    rng = random.Random(5)
    while placeholder in text:
        placeholder = placeholder + str(rng.randint(0, 9))
    return placeholder


def _stream_name(output_stream) -> str:
    import logging

    from .. import tf_logging

    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    table = [(sys.stdout, "stdout"), (sys.stderr, "stderr"), (tf_logging.INFO, "log(info)"),
             (tf_logging.info, "log(info)"), (tf_logging.WARN, "log(warning)"), (tf_logging.warning, "log(warning)"),
             (tf_logging.warn, "log(warning)"), (tf_logging.ERROR, "log(error)"), (tf_logging.error, "log(error)"),
             (logging.info, "log(info)"), (logging.WARNING, "log(warning)"), (logging.warning, "log(warning)"),
             (logging.ERROR, "log(error)"), (logging.error, "log(error)")]
    for stream, text in table:
        try:
            if output_stream is stream or (not callable(stream) and output_stream == stream):
                return text
        except Exception:  # noqa: BLE001 - an odd object that cannot compare
            pass
    raise ValueError("Unsupported output stream, logging level, or file." + str(output_stream) +
                     ". Supported streams are sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, "
                     "tf.logging.error. File needs to be in the form of 'file://<filepath>'.")


def print_v2(*inputs, **kwargs):
    """tf.print in graph mode: a StringFormat of the inputs and the PrintV2 op that writes
    it (returned; run it, or make an op depend on it)."""
    import collections
    import os

    output_stream = kwargs.pop("output_stream", sys.stderr)
    name = kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    if kwargs:
        raise ValueError("Unrecognized keyword arguments for tf.print: %s" % kwargs)
    format_name = name + "_format" if name else None
    stream = _stream_name(output_stream)
    if (len(inputs) == 1 and is_tensor(inputs[0]) and inputs[0].shape.ndims == 0
            and inputs[0].dtype == dtypes.string):
        formatted = inputs[0]
    else:
        sorted_inputs = [collections.OrderedDict(sorted(x.items())) if isinstance(x, collections.OrderedDict) else x
                         for x in inputs]
        tensor_free = [_map(lambda x: "" if is_tensor(x) else x, x) for x in sorted_inputs]
        placeholder = _placeholder_string(" ".join(pprint.pformat(x) for x in tensor_free))
        templates, tensors = [], []
        for input_ in inputs:
            placeholders = []
            for x in _flatten(input_):
                if is_tensor(x):
                    tensors.append(x)
                    placeholders.append(placeholder)
                else:
                    placeholders.append(x)
            if isinstance(input_, str):
                templates.append(input_)
            else:
                templates.append(pprint.pformat(_pack(input_, iter(placeholders))))
        template = sep.join(templates).replace("'" + placeholder + "'", placeholder)
        formatted = _create_with_list("StringFormat", [], "inputs", tensors, "T",
                                      {"template": template, "placeholder": placeholder, "summarize": summarize},
                                      format_name)[0]
    return apply_op("PrintV2", [formatted], {"output_stream": stream, "end": end}, name)


TF_EXPORTS = {"Print": Print, "print": print_v2}
