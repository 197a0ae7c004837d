"""A tf.data function rewritten to work on a whole batch of elements at once.

``vectorize(fn)`` rebuilds a traced function's graph op by op with a leading batch
dimension on every tensor that depends on the element (the others are loop invariants:
constants, captures). Each op type has a rule that keeps its meaning per element:
elementwise ops broadcast as before once a lower-rank batched operand is given unit
dimensions after the batch dimension; axis arguments move by one (negative ones stay);
``Reshape`` gets a leading ``-1``; ``StridedSlice`` a leading full slice;
``parse_single_example``'s ``ParseExampleV2`` parses a vector of records. An op without a
rule (or a stateful op, whose values would be drawn once per batch instead of once per
element) leaves the function unvectorised: it then runs once per element.
"""
from __future__ import annotations

import logging

import numpy as np

from ..graph import Graph
from ..registry import lookup_op_type
from ..tensor_util import constant_value

logger = logging.getLogger("tfc")

_UNARY = {
    "Identity", "Snapshot", "Cast", "Neg", "Abs", "Exp", "Log", "Log1p", "Expm1", "Sqrt", "Rsqrt", "Square",
    "Reciprocal", "Sign", "Floor", "Ceil", "Round", "Rint", "Relu", "Relu6", "Elu", "Selu", "Softplus",
    "Softsign", "Sigmoid", "Tanh", "Sin", "Cos", "Tan", "Erf", "LogicalNot", "IsNan", "IsInf", "IsFinite",
    "ZerosLike", "OnesLike", "StopGradient", "LeakyRelu", "Softmax", "LogSoftmax", "CheckNumerics",
}
_BROADCASTING = {
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "TruncateDiv",
    "TruncateMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual",
    "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "Atan2", "SelectV2",
}
_REDUCTIONS = {"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "ReverseV2"}


class NotVectorizable(Exception):
    def __init__(self, op, why: str):
        super().__init__(f"'{op.name}' ({op.type}): {why}")


class BatchedFunction:
    """The batched graph: inputs with a leading batch dimension, the same outputs."""

    def __init__(self, graph, inputs, outputs, capture_placeholders, unbatched_outputs):
        self.graph = graph
        self.inputs = inputs
        self._outputs = outputs
        self.capture_placeholders = capture_placeholders
        self.unbatched_outputs = unbatched_outputs  # positions of outputs that do not depend on the element
        from .functions import Program

        self._program = Program(graph, inputs + capture_placeholders, outputs)  # compiled on its first call

    @property
    def outputs(self):
        return self._outputs

    def program(self):
        """The batched graph's Program (see functions.py)."""
        return self._program


def vectorize(fn):
    """A BatchedFunction for ``fn`` (a TracedFunction), or None."""
    try:
        return _Vectorizer(fn).build()
    except NotVectorizable as e:
        logger.debug("tfc: tf.data function %s runs per element: %s", fn.name, e)
        return None


class _Vectorizer:
    def __init__(self, fn):
        self.fn = fn
        self.graph = Graph()
        self.graph.seed = fn.graph.seed
        self.values: dict = {}  # old tensor -> (new tensor, batched)

    def build(self) -> BatchedFunction:
        from ..ops.array_ops import placeholder

        fn = self.fn
        inputs = {t: i for i, t in enumerate(fn.inputs)}
        captures = {p: i for i, p in enumerate(fn.capture_placeholders)}
        new_inputs = [None] * len(inputs)
        new_captures = [None] * len(captures)
        with self.graph.as_default():
            for op in fn.graph.get_operations():
                if op.control_inputs:
                    raise NotVectorizable(op, "control dependencies")
                if op.type == "Placeholder":
                    t = op.outputs[0]
                    if t in inputs:
                        shape = [None] + (t.shape.as_list() if t.shape.ndims is not None else [])
                        if t.shape.ndims is None:
                            raise NotVectorizable(op, "an input of unknown rank")
                        new = placeholder(t.dtype, shape, name=op.name)
                        new_inputs[inputs[t]] = new
                        self.values[t] = (new, True)
                    else:
                        new = placeholder(t.dtype, t.shape, name=op.name)
                        if t in captures:
                            new_captures[captures[t]] = new
                        self.values[t] = (new, False)
                    continue
                ins = [self.values[t] for t in op.inputs]
                entry = lookup_op_type(op.type)
                if not any(batched for _, batched in ins):
                    if getattr(entry, "stateful", False):
                        raise NotVectorizable(op, "a stateful op")
                    self._record(op, self._copy(op, [t for t, _ in ins]), False)
                    continue
                self._record(op, self._rule(op, ins), True)
        outputs, unbatched = [], []
        for i, t in enumerate(fn.outputs):
            new, batched = self.values[t]
            outputs.append(new)
            if not batched:
                unbatched.append(i)
        return BatchedFunction(self.graph, new_inputs, outputs, new_captures, unbatched)

    # -- helpers ---------------------------------------------------------------------------
    def _record(self, op, new_op, batched: bool) -> None:
        for old, new in zip(op.outputs, new_op.outputs):
            self.values[old] = (new, batched)

    def _copy(self, op, inputs, attrs=None):
        name = self.graph.unique_name(op.name)
        return self.graph.create_op(op.type, inputs, name=name + "/", attrs=dict(op._attrs, **(attrs or {})))

    def _const(self, op, value, dtype):
        from ..ops.constant_op import constant

        return constant(np.asarray(value, dtype=dtype.as_numpy_dtype), name=op.name + "/vectorized")

    def _static(self, op, index: int) -> np.ndarray:
        tensor = op.inputs[index]
        if self.values[tensor][1]:
            raise NotVectorizable(op, f"input {index} depends on the element")
        value = constant_value(tensor)
        if value is None:
            raise NotVectorizable(op, f"input {index} is not a constant")
        return np.asarray(value)

    def _rule(self, op, ins):
        kind = op.type
        tensors = [t for t, _ in ins]
        if kind in _UNARY:
            return self._copy(op, tensors)
        if kind in _BROADCASTING or (kind == "Select" and len({t.shape.ndims for t in op.inputs}) == 1):
            return self._broadcasting(op, ins)
        if kind == "BiasAdd":
            if ins[1][1]:
                raise NotVectorizable(op, "a batched bias")
            return self._copy(op, tensors)
        if kind in _REDUCTIONS:
            axes = self._static(op, 1)
            return self._copy(op, [tensors[0], self._const(op, _shifted(axes), op.inputs[1].dtype)])
        if kind == "ExpandDims":
            return self._copy(op, [tensors[0], self._const(op, _shifted(self._static(op, 1)), op.inputs[1].dtype)])
        if kind == "Reshape":
            return self._reshape(op, tensors)
        if kind == "Squeeze":
            return self._squeeze(op, tensors)
        if kind == "Transpose":
            perm = self._static(op, 1)
            return self._copy(op, [tensors[0], self._const(op, [0] + [int(p) + 1 for p in perm],
                                                            op.inputs[1].dtype)])
        if kind == "ConcatV2":
            if not all(batched for _, batched in ins[:-1]):
                raise NotVectorizable(op, "concatenates element values with invariants")
            axis = self._static(op, len(ins) - 1)
            return self._copy(op, tensors[:-1] + [self._const(op, _shifted(axis), op.inputs[-1].dtype)])
        if kind == "Pack":
            if not all(batched for _, batched in ins):
                raise NotVectorizable(op, "stacks element values with invariants")
            axis = op._attrs["axis"]
            return self._copy(op, tensors, {"axis": axis + 1 if axis >= 0 else axis})
        if kind == "OneHot":
            if any(batched for _, batched in ins[1:]):
                raise NotVectorizable(op, "depth or values depend on the element")
            axis = op._attrs.get("axis", -1)
            return self._copy(op, tensors, {"axis": axis + 1 if axis >= 0 else axis})
        if kind == "StridedSlice":
            return self._strided_slice(op, ins)
        if kind == "ParseExampleV2":
            if any(batched for _, batched in ins[1:]) or op.inputs[0].shape.ndims != 0:
                raise NotVectorizable(op, "only a single record per element is batched")
            if op._attrs.get("num_sparse"):
                raise NotVectorizable(op, "VarLenFeature (sparse) outputs")
            return self._copy(op, tensors)
        raise NotVectorizable(op, "no batching rule for this op type")

    def _broadcasting(self, op, ins):
        from ..ops.array_ops import expand_dims

        ranks = [t.shape.ndims for t in op.inputs]
        if None in ranks:
            raise NotVectorizable(op, "an operand of unknown rank")
        rank = max(ranks)
        inputs = []
        for (tensor, batched), r in zip(ins, ranks):
            if batched:
                for _ in range(rank - r):
                    tensor = expand_dims(tensor, 1)
            inputs.append(tensor)
        return self._copy(op, inputs)

    def _reshape(self, op, tensors):
        shape = [int(d) for d in self._static(op, 1).reshape(-1)]
        if -1 in shape:
            known = op.inputs[0].shape
            if not known.is_fully_defined():
                raise NotVectorizable(op, "reshape with -1 of an element of unknown size")
            rest = int(np.prod([d for d in shape if d != -1])) or 1
            shape[shape.index(-1)] = int(np.prod(known.as_list())) // rest
        return self._copy(op, [tensors[0], self._const(op, [-1] + shape, op.inputs[1].dtype)])

    def _squeeze(self, op, tensors):
        dims = list(op._attrs.get("squeeze_dims") or [])
        if not dims:
            shape = op.inputs[0].shape
            if shape.ndims is None or any(d is None for d in shape.as_list()):
                raise NotVectorizable(op, "squeeze of an element of unknown shape")
            dims = [i for i, d in enumerate(shape.as_list()) if d == 1]
        return self._copy(op, tensors, {"squeeze_dims": [d + 1 if d >= 0 else d for d in dims]})

    def _strided_slice(self, op, ins):
        if not ins[0][1]:
            raise NotVectorizable(op, "sliced by element values")
        begin, end, strides = (self._static(op, i).reshape(-1) for i in (1, 2, 3))
        dtype = op.inputs[1].dtype
        attrs = {
            "begin_mask": (op._attrs["begin_mask"] << 1) | 1, "end_mask": (op._attrs["end_mask"] << 1) | 1,
            "ellipsis_mask": op._attrs["ellipsis_mask"] << 1, "new_axis_mask": op._attrs["new_axis_mask"] << 1,
            "shrink_axis_mask": op._attrs["shrink_axis_mask"] << 1,
        }
        inputs = [ins[0][0], self._const(op, [0] + list(begin), dtype), self._const(op, [0] + list(end), dtype),
                  self._const(op, [1] + list(strides), dtype)]
        return self._copy(op, inputs, attrs)


def _shifted(axes: np.ndarray) -> np.ndarray:
    """Axes of an element as axes of a batch (the batch dimension comes first)."""
    axes = np.asarray(axes)
    return np.where(axes >= 0, axes + 1, axes).astype(axes.dtype)
