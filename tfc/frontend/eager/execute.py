"""Running one op eagerly on a compiled kernel.

The first time an op runs with a given *kernel key* — op type, attrs, and per input its
dtype, rank and which dims are 1 (the facts the compiler specialises on; see
``tfc.passes.lower``) — the op is built once in a private graph (placeholders with
unknown dims for its inputs), lowered by the graph op's own lowering and compiled by
``tfc.compiler.compile_module``; the executable is cached under the key. Later calls
with the same key, of any sizes, call the executable's fast path directly: a new size of
the same rank reuses the program.

Some inputs must be known while compiling (a reshape's shape, reduction axes, a
transpose's perm...): the graph op's lowering says so by refusing a placeholder. The
first time an op type is seen, its small integer inputs that must be static are found by
trying to lower it (lowering is cheap; only the chosen program is compiled), and from
then on their *values* are part of the key (per op type and attrs: ``x[i]``'s index stays
a run-time value while ``x[1:]``'s bounds are compiled in). An op whose lowering needs
the sizes themselves (a split of a dimension, slices whose bounds clamp to the size, a
max-pool gradient) is compiled per exact input shape instead.

Shape errors are found before running, by the graph op's shape inference on the
concrete shapes (once per kernel and input shapes), and raised as TF's eager kernels
raise them (``InvalidArgumentError: Incompatible shapes: [2] vs. [3] [Op:AddV2]``).
Errors the program finds at run time (a bad gather index) are raised with their class
and message, ``[Op:<type>]`` appended as TF does.

Ops that are not computation (constants, identities, shapes, string and host ops such as
``py_func``) run in Python without a program.
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

from tfc.runtime.executable import ShapeBindingError

from .. import dtypes, errors
from ..registry import lookup_op_type
from ..tensor_shape import TensorShape
from . import tape as _tape
from .tensor import EagerOperation, EagerRefTensor, EagerTensor, contiguous

_ACTIVE_TAPES = _tape.ACTIVE_TAPES
_KERNELS: dict = {}  # kernel key -> _Kernel
_STATIC: dict = {}  # (op type, attrs key) -> input positions whose values are compiled in
_HOST_TYPES: set = set()  # op types the compiler refused and that run on the host
# op types compiled per exact input shapes (the lowering needs the sizes; a slice's bounds
# clamp to the input's size, which a program for any size does not do)
_EXACT: set = {"StridedSlice", "Slice"}
_MAX_STATIC_ELEMENTS = 64
_MAX_KERNELS = 4096  # the oldest kernel is dropped beyond this

# compiles: programs built; hits: calls served by a cached program; host: ops run in
# Python; probes: lowering attempts that chose static inputs
STATS = {"compiles": 0, "hits": 0, "host": 0, "probes": 0, "validations": 0}

_BROADCASTING = frozenset({
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "TruncateDiv",
    "TruncateMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Less", "LessEqual", "Greater",
    "GreaterEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "Atan2", "BiasAdd", "Select", "SelectV2",
    "Xdivy", "Xlogy", "ApproximateEqual",
})
_SUFFIX = re.compile(r" \(in '[^']*'\)$")
_GRAPH_SUFFIX = re.compile(r" for '[^']*' \(op: '[^']*'\) with input shapes: .*$", re.S)


def clear_cache() -> None:
    """Forget every compiled kernel (tests measuring compiles)."""
    _KERNELS.clear()


def _tf_type(dtype) -> str:
    from tfc.passes.lower import tf_type_name

    return tf_type_name(dtype)


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# -- keys ------------------------------------------------------------------------------------
_PLAIN = frozenset({int, float, bool, str, bytes, type(None)})


def _freeze(value):
    if type(value) in _PLAIN:
        return value
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, TensorShape):
        return ("shape", None if value.dims is None else tuple(value.as_list()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if hasattr(value, "SerializeToString"):
        return ("proto", type(value).__name__, value.SerializeToString())
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def _attrs_key(attrs: dict) -> tuple:
    if not attrs:
        return ()
    if len(attrs) == 1:
        ((k, v),) = attrs.items()
        return ((k, _freeze(v)),)
    return tuple(sorted([(k, _freeze(v)) for k, v in attrs.items()]))


def _sig(t) -> tuple:
    """What of an input the program is specialised on: dtype, rank, which dims are 1
    (a ref: its variable's exact shape)."""
    sig = t._sig
    if sig is None:
        if isinstance(t, EagerRefTensor):
            sig = ("ref", t._eager_dtype.name, t._variable._array.shape)
        else:
            sig = (t._eager_dtype.name, tuple([d == 1 for d in t._array.shape]))
        t._sig = sig
    return sig


def _static_value(t) -> tuple:
    a = t._array
    return (a.shape, a.tobytes())


# -- kernels ---------------------------------------------------------------------------------
class _Kernel:
    """A compiled program for one kernel key, and how to call it with the op's inputs."""

    __slots__ = ("op_type", "attrs", "executable", "feed_positions", "ref_args", "out_dtypes", "validated",
                 "has_refs", "entry", "exact")

    def __init__(self, op_type, attrs, entry, executable, feed_positions, ref_args, out_dtypes):
        self.op_type = op_type
        self.attrs = attrs
        self.entry = entry
        self.executable = executable
        self.feed_positions = feed_positions
        self.ref_args = ref_args  # per ref argument: (input position, written) or an rng state array
        self.has_refs = bool(ref_args)
        self.out_dtypes = out_dtypes
        self.validated: set = set()
        self.exact = False  # compiled for the exact input shapes

    def call(self, inputs: list, name) -> list:
        arrays = [inputs[i]._array for i in self.feed_positions]
        shapes = tuple([a.shape for a in arrays])
        if shapes not in self.validated:  # once per distinct input shapes
            _validate(self.entry, self.attrs, inputs, name)
            if len(self.validated) > 4096:
                self.validated.clear()
            self.validated.add(shapes)
        if self.has_refs:
            for item in self.ref_args:
                if type(item) is tuple:
                    position, written = item
                    arrays.append(inputs[position]._variable._buffer(written))
                else:
                    arrays.append(item)
        try:
            outputs = self.executable.run(arrays)
        except errors.OpError as e:
            _validate(self.entry, self.attrs, inputs, name, force=True)  # the graph's message, when it has one
            raise _eager_error(type(e), _SUFFIX.sub("", e.message), self.op_type, name) from None
        except ShapeBindingError as e:  # a shape the inference accepted and the program did not
            raise _eager_error(errors.InvalidArgumentError, str(e), self.op_type, name) from None
        except ValueError as e:  # sizes the program's symbolic shapes do not cover (a slice past the end)
            if self.exact:
                raise _eager_error(errors.InvalidArgumentError, str(e), self.op_type, name) from None
            raise _NeedsExactShapes() from None
        return [EagerTensor(o, d) for o, d in zip(outputs, self.out_dtypes)]


class _NeedsExactShapes(Exception):
    """A kernel compiled for any size failed on these sizes: compile the op per shape."""


class _HostKernel:
    """An op run by its registry entry's ``host`` function on numpy values."""

    __slots__ = ("op_type", "attrs", "entry", "out_dtypes")

    def __init__(self, op_type, attrs, entry, out_dtypes):
        self.op_type = op_type
        self.attrs = attrs
        self.entry = entry
        self.out_dtypes = out_dtypes

    def call(self, inputs: list, name) -> list:
        STATS["host"] += 1
        op = EagerOperation(self.op_type, name, self.attrs, inputs, [])
        values = [t._array for t in inputs]
        outputs = self.entry.host(op, *values)
        outputs = [] if outputs is None else list(outputs)
        out_dtypes = self.out_dtypes
        result = []
        for i, value in enumerate(outputs):
            dtype = out_dtypes[i] if i < len(out_dtypes) else dtypes.as_dtype(np.asarray(value).dtype)
            array = np.asarray(value) if dtype == dtypes.string else \
                contiguous(value, dtype.as_numpy_dtype)
            result.append(EagerTensor(array, dtype))
        return result


def _eager_error(cls, message: str, op_type: str, name) -> Exception:
    text = f"{message} [Op:{op_type}]"
    if name:
        text += f" name: {name}"
    return cls(None, None, text)


def _validate(entry, attrs, inputs, name, force: bool = False) -> None:
    """The graph op's shape inference on the concrete shapes (and the values of the inputs
    it reads): TF's eager error if it fails."""
    STATS["validations"] += 1
    if entry.infer is None:
        return
    op = EagerOperation(entry.type_name, name, attrs, inputs, [])
    try:
        entry.run_inference(op)
    except ValueError as e:
        raise _eager_error(errors.InvalidArgumentError, _kernel_message(entry.type_name, inputs, str(e)),
                           entry.type_name, name) from None
    except (TypeError, AttributeError, IndexError, KeyError):
        pass  # an inference that needs a graph op: the program's own run-time checks remain


def _kernel_message(op_type: str, inputs, graph_message: str) -> str:
    """What TF's kernel says where the graph's shape inference said ``graph_message``."""
    shapes = [t._array.shape for t in inputs]
    if op_type in _BROADCASTING and len(shapes) >= 2:
        return f"Incompatible shapes: {_shape_text(shapes[0])} vs. {_shape_text(shapes[1])}"
    if op_type == "Reshape" and len(inputs) == 2:
        requested = [int(d) for d in inputs[1]._array.reshape(-1)]
        known = int(np.prod([d for d in requested if d != -1], dtype=np.int64))
        if -1 in requested:
            return (f"Input to reshape is a tensor with {inputs[0]._array.size} values, but the requested shape "
                    f"requires a multiple of {known}")
        return f"Input to reshape is a tensor with {inputs[0]._array.size} values, but the requested shape has {known}"
    if op_type in ("MatMul", "BatchMatMul", "BatchMatMulV2") and len(shapes) == 2:
        return f"Matrix size-incompatible: In[0]: {_shape_text(shapes[0])}, In[1]: {_shape_text(shapes[1])}"
    return _GRAPH_SUFFIX.sub("", graph_message)


def _exact_sig(t) -> tuple:
    if isinstance(t, EagerRefTensor):
        return _sig(t)
    return (t._eager_dtype.name, t._array.shape)


def _private_op(entry, attrs, inputs, static, exact=False):
    """The op built alone in a private graph: (graph op, [(input position, placeholder)])."""
    from ..graph import Graph
    from ..ops.constant_op import constant
    from ..ops.state_ops import variable_op_v2

    graph = Graph()
    feeds = []
    with graph.as_default():
        tensors = []
        for i, t in enumerate(inputs):
            if isinstance(t, EagerRefTensor):
                tensors.append(variable_op_v2(t.shape, t.dtype.base_dtype, name=f"ref{i}"))
            elif i in static:
                tensors.append(constant(t._array, dtype=t.dtype, name=f"c{i}"))
            else:
                shape = TensorShape(t._array.shape if exact else [1 if d == 1 else None for d in t._array.shape])
                placeholder = graph.create_op("Placeholder", [], name=f"x{i}",
                                              attrs={"dtype": t.dtype.base_dtype, "shape": shape}).outputs[0]
                tensors.append(placeholder)
                feeds.append((i, placeholder))
        op = graph.create_op(entry.type_name, tensors, name=entry.type_name, attrs=dict(attrs))
    return op, feeds


def _lower(entry, attrs, inputs, static, exact=False):
    from tfc.passes.lower import FeedSpec, lower_graph

    op, feeds = _private_op(entry, attrs, inputs, static, exact)
    specs = [FeedSpec(p, p.dtype.base_dtype, inputs[i]._array.shape) for i, p in feeds]
    lowered = lower_graph(list(op.outputs), [op], specs)
    return op, feeds, lowered


def _try_lower(entry, attrs, inputs, static, exact=False):
    from tfc.passes.lower import LoweringError, UnsupportedOpsError

    STATS["probes"] += 1
    try:
        return _lower(entry, attrs, inputs, static, exact), None
    except (UnsupportedOpsError, LoweringError) as e:
        return None, e
    except Exception as e:  # noqa: BLE001 - IR built on sizes the lowering assumed: retried with them
        if exact:
            raise
        return None, e


def _static_candidates(inputs) -> list:
    return [i for i, t in enumerate(inputs)
            if not isinstance(t, EagerRefTensor) and t._eager_dtype in (dtypes.int32, dtypes.int64)
            and t._array.size <= _MAX_STATIC_ELEMENTS]


def _choose_static(entry, attrs, inputs, static: tuple, exact=False):
    """Lower with ``static``; if the lowering refuses, find the fewest small integer inputs
    whose values it needs (each must be compiled in). Returns (lowered, static, error)."""
    lowered, error = _try_lower(entry, attrs, inputs, static, exact)
    if lowered is not None:
        return lowered, static, None
    candidates = [i for i in _static_candidates(inputs) if i not in static]
    if not candidates:
        return None, static, error
    chosen = set(static) | set(candidates)
    lowered, error = _try_lower(entry, attrs, inputs, chosen, exact)
    if lowered is None:
        return None, static, error
    for i in candidates:
        trial = chosen - {i}
        attempt, _ = _try_lower(entry, attrs, inputs, trial, exact)
        if attempt is not None:
            chosen, lowered = trial, attempt
    return lowered, tuple(sorted(chosen)), None


def _wants_host(entry, inputs, out_dtypes) -> bool:
    if getattr(entry, "host", None) is None:
        return False
    if getattr(entry, "host_only", False) or getattr(entry, "host_effect", False) or \
            entry.type_name in _HOST_TYPES:
        return True
    return any(t._eager_dtype == dtypes.string for t in inputs) or dtypes.string in out_dtypes


def _build(entry, raw_attrs: dict, inputs: list, name):
    """A kernel for these inputs (compiled, or a host one); registered under its key."""
    from tfc.compiler import compile_module
    from tfc.runtime.session import _ref_accesses

    op_type = entry.type_name
    attrs = entry.complete_attrs(raw_attrs, name or op_type)
    view = EagerOperation(op_type, name, attrs, inputs, [])
    try:
        out_dtypes = [d.base_dtype for d in entry.output_dtypes(view)]
    except (KeyError, TypeError):
        out_dtypes = []
    if _wants_host(entry, inputs, out_dtypes):
        return _HostKernel(op_type, attrs, entry, out_dtypes), ()
    _validate(entry, attrs, inputs, name)  # a shape error is TF's error, not a refused lowering
    static_key = (op_type, _attrs_key(raw_attrs))
    static = _STATIC.get(static_key, ())
    exact = op_type in _EXACT
    lowered, static, error = _choose_static(entry, attrs, inputs, static, exact)
    if lowered is None and not exact:  # the lowering needs the sizes: one program per shape
        lowered, static, error = _choose_static(entry, attrs, inputs, static, True)
        if lowered is not None:
            _EXACT.add(op_type)
    if lowered is None:
        if getattr(entry, "host", None) is not None:
            _HOST_TYPES.add(op_type)
            return _HostKernel(op_type, attrs, entry, out_dtypes), ()
        reason = error.failures[0][1] if getattr(error, "failures", None) else str(error)
        raise errors.UnimplementedError(None, None, f"tfc cannot run {op_type} eagerly: {reason} [Op:{op_type}]")
    if static:
        _STATIC[static_key] = static
    graph_op, feeds, low = lowered
    _, written = _ref_accesses(low.function)
    try:
        result = compile_module(low.module, constraints=low.constraints)
    except Exception:  # noqa: BLE001 - a lowering that trusted sizes it did not know: compile per shape
        if exact:
            raise
        _EXACT.add(op_type)
        return _build(entry, raw_attrs, inputs, name)
    ref_args = []
    for slot in low.refs:
        if slot.kind == "variable":
            ref_args.append((int(slot.name[3:]), slot.name in written))
        else:  # a random op's state: the kernel's own, advanced by each call
            ref_args.append(np.zeros((), dtype=np.int64))
    STATS["compiles"] += 1
    out_dtypes = [t.dtype.base_dtype for t in graph_op.outputs]
    kernel = _Kernel(op_type, attrs, entry, result.executable, [i for i, _ in feeds], ref_args, out_dtypes)
    kernel.exact = exact or op_type in _EXACT
    return kernel, static


# -- ops answered without a program ----------------------------------------------------------
def _run_const(entry, inputs, attrs, name):
    from ..tensor_util import make_ndarray

    value = contiguous(make_ndarray(attrs["value"]))
    dtype = dtypes.as_dtype(attrs["dtype"])
    return [EagerTensor(value, dtype)]


def _value_of(t) -> np.ndarray:
    if isinstance(t, EagerRefTensor):
        return t._variable._snapshot_array()
    return t._array


def _run_identity(entry, inputs, attrs, name):
    return [EagerTensor(_value_of(t), t._eager_dtype.base_dtype) for t in inputs]


def _run_shape(entry, inputs, attrs, name):
    out = dtypes.as_dtype(attrs.get("out_type", dtypes.int32))
    if entry.type_name == "ShapeN":
        return [EagerTensor(np.array(t._array.shape, dtype=out.as_numpy_dtype), out) for t in inputs]
    array = inputs[0]._array
    if entry.type_name == "Shape":
        value = np.array(array.shape, dtype=out.as_numpy_dtype)
    elif entry.type_name == "Size":
        value = np.array(array.size, dtype=out.as_numpy_dtype)
    else:
        value, out = np.array(array.ndim, dtype=np.int32), dtypes.int32
    return [EagerTensor(value, out)]


def _run_noop(entry, inputs, attrs, name):
    return []


def _summarize(t, summarize: int) -> str:
    """TF 1.x's _summarize_eager (Tensor::SummarizeValue in Python)."""
    array = t._array
    if summarize is None:
        summarize = 3
    elif summarize < 0:
        summarize = array.size
    if array.ndim:
        flat = array.reshape(-1)
        items = [str(v) for v in flat[:summarize]]
        if len(items) < flat.size:
            items.append("...")
    else:
        items = [str(array[()])] if summarize != 0 else []
    return ", ".join(items)


def _run_assert(entry, inputs, attrs, name):
    """TF 1.x's eager tf.Assert: raise now when the condition is false."""
    condition = inputs[0]
    if not bool(condition._array):
        data = "\n".join(_summarize(t, attrs.get("summarize", 3)) for t in inputs[1:])
        raise errors.InvalidArgumentError(None, None, f"Expected '{condition!s}' to be true. Summarized data: {data}")
    return []


def _no_placeholders(entry, inputs, attrs, name):
    raise RuntimeError("tf.placeholder() is not compatible with eager execution.")


def _no_raw_variables(entry, inputs, attrs, name):
    raise RuntimeError(f"{entry.type_name} ops cannot be created in eager mode: use tf.Variable or "
                       "tf.get_variable (resource variables).")


_SPECIAL = {
    "Const": _run_const, "Identity": _run_identity, "StopGradient": _run_identity, "Snapshot": _run_identity,
    "IdentityN": _run_identity, "Shape": _run_shape, "ShapeN": _run_shape, "Size": _run_shape, "Rank": _run_shape,
    "NoOp": _run_noop, "Assert": _run_assert, "Placeholder": _no_placeholders, "PlaceholderV2": _no_placeholders,
    "VariableV2": _no_raw_variables, "Variable": _no_raw_variables,
}


# -- the entry points --------------------------------------------------------------------------
def _key(op_type: str, attrs: dict, inputs: list) -> tuple:
    """The kernel key: op type, attrs, the inputs' signatures (exact shapes for the op types
    that need them) and the values of the inputs compiled in."""
    if op_type in _EXACT:
        sigs = tuple([_exact_sig(t) for t in inputs])
    else:
        sigs = tuple([t._sig or _sig(t) for t in inputs])
    attrs_key = _attrs_key(attrs)
    static = _STATIC.get((op_type, attrs_key))
    if static:
        return (op_type, attrs_key, sigs, tuple([_static_value(inputs[i]) for i in static if i < len(inputs)]))
    return (op_type, attrs_key, sigs)


def execute(entry, inputs: list, attrs: dict, name=None) -> EagerOperation:
    """Run op ``entry`` on EagerTensors ``inputs`` (flat) with ``attrs`` (dtypes bound)."""
    op_type = entry.type_name
    special = _SPECIAL.get(op_type)
    if special is not None:
        full = entry.complete_attrs(attrs, name or op_type) if attrs is not None else {}
        op = EagerOperation(op_type, name, full, inputs, special(entry, inputs, full, name))
        if _ACTIVE_TAPES:
            _tape.record(op, entry)
        return op
    key = _key(op_type, attrs, inputs)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel, _ = _build(entry, attrs, inputs, name)
        if len(_KERNELS) >= _MAX_KERNELS:  # keys by value or exact shape can grow without bound
            del _KERNELS[next(iter(_KERNELS))]
        _KERNELS[_key(op_type, attrs, inputs)] = kernel  # what _build chose (static inputs, exact shapes)
    else:
        STATS["hits"] += 1
    try:
        outputs = kernel.call(inputs, name)
    except _NeedsExactShapes:
        _EXACT.add(op_type)
        return execute(entry, inputs, attrs, name)
    op = EagerOperation(op_type, name, kernel.attrs, inputs, outputs)
    if _ACTIVE_TAPES:
        _tape.record(op, entry)
    return op


def _fast_constant(value, want) -> Optional[EagerTensor]:
    """A Python number as a tensor of dtype ``want`` when TF's conversion would give exactly
    that (else None: the general conversion decides, with its errors)."""
    kind = type(value)
    if want is None or want._is_ref:
        return None
    base = want._base
    if kind is float:
        if base in ("float32", "float64", "float16"):
            return EagerTensor(np.array(value, dtype=want.as_numpy_dtype), want)
        return None
    if kind is int:
        if base in ("float32", "float64"):
            return EagerTensor(np.array(value, dtype=want.as_numpy_dtype), want)
        if base in ("int32", "int64"):
            info = np.iinfo(want.as_numpy_dtype)
            if info.min <= value <= info.max:
                return EagerTensor(np.array(value, dtype=want.as_numpy_dtype), want)
        return None
    if kind is bool and base == "bool":
        return EagerTensor(np.array(value), want)
    return None


_HELPERS: list = []


def _op_helpers() -> tuple:
    if not _HELPERS:
        from ..op_helper import _bound_dtype, _convert_list, _convert_one

        _HELPERS.extend([_bound_dtype, _convert_list, _convert_one])
    return tuple(_HELPERS)


_INT32 = np.iinfo(np.int32)


def _list_constant(value, dtype) -> Optional[EagerTensor]:
    """A (nested) list of Python numbers of one kind, as TF converts it (ints: int32 when
    they fit, floats: float32, bools); None for anything else."""
    if not value or not all(type(v) in (int, float, bool, list, tuple) for v in value):
        return None
    try:
        array = np.array(value)
    except ValueError:  # ragged
        return None
    kind = array.dtype.kind
    if kind == "i":
        if array.size and int(np.abs(array).max()) > _INT32.max:
            natural = dtypes.int64
        else:
            natural = dtypes.int32
    elif kind == "f":
        natural = dtypes.float32
    elif kind == "b":
        natural = dtypes.bool
    else:
        return None
    want = natural if dtype is None else dtypes.as_dtype(dtype)
    if want is not natural:
        if want._is_ref or not (want.is_floating and kind in "if" or want.is_integer and kind == "i"
                                and want._base in ("int32", "int64")):
            return None
        if kind == "i" and want._base == "int32" and natural is dtypes.int64:
            return None
    return EagerTensor(np.ascontiguousarray(array, dtype=want.as_numpy_dtype), want)


def eager_constant(value, dtype, shape, verify_shape) -> Optional[EagerTensor]:
    """tf.constant's value as an EagerTensor for the common cases (numbers, numpy arrays
    kept in their dtype); None for everything else (the TensorProto path decides)."""
    if shape is not None or verify_shape:
        return None
    kind = type(value)
    if kind is np.ndarray:
        if value.dtype == object or value.dtype.kind in "USV":
            return None
        natural = dtypes.as_dtype(value.dtype)
        if dtype is not None and dtypes.as_dtype(dtype) != natural:
            return None
        return EagerTensor(np.array(value, order="C", copy=True), natural)
    if kind is list or kind is tuple:
        return _list_constant(value, dtype)
    if dtype is not None:
        return _fast_constant(value, dtypes.as_dtype(dtype))
    if kind is float:
        return EagerTensor(np.array(value, dtype=np.float32), dtypes.float32)
    if kind is bool:
        return EagerTensor(np.array(value), dtypes.bool)
    if kind is int:
        if _INT32.min <= value <= _INT32.max:
            return EagerTensor(np.array(value, dtype=np.int32), dtypes.int32)
        return None
    return None


_DTYPE = dtypes.DType


def eager_apply(entry, inputs, attrs, name) -> EagerOperation:
    """apply_op in eager mode: TF's input conversion (dtypes bound through type attrs,
    Python values converted), then ``execute``."""
    _bound_dtype, _convert_list, _convert_one = _HELPERS or _op_helpers()
    specs = entry.input_specs
    if len(inputs) != len(specs):
        raise TypeError(f"{entry.type_name} takes {len(specs)} inputs, got {len(inputs)}")
    attrs = dict(attrs) if attrs else {}
    flat: list = []
    bound: dict = {}
    for spec, value in zip(specs, inputs):
        if spec.number_attr:
            flat.extend(_as_eager(t) for t in _convert_list(entry, spec, value, attrs, bound))
            continue
        if not spec.is_ref:
            type_attr = spec.type_attr
            if type_attr is not None and type(value) is EagerTensor and type_attr not in attrs \
                    and type_attr not in bound:  # the common case: this input binds the type
                bound[type_attr] = value._eager_dtype
                bound["__source_" + type_attr] = spec.name
                flat.append(value)
                continue
            want = _bound_dtype(spec, attrs, bound)
            if type(value) is EagerTensor:
                if want is None:
                    if spec.type_attr:
                        bound[spec.type_attr] = value._eager_dtype
                        bound[f"__source_{spec.type_attr}"] = spec.name
                elif want is not value._eager_dtype and want != value._eager_dtype:
                    raise errors.InvalidArgumentError(
                        None, None, f"cannot compute {entry.type_name} as input #{len(flat)}(zero-based) was "
                                    f"expected to be a {_tf_type(want)} tensor but is a "
                                    f"{_tf_type(value._eager_dtype)} tensor [Op:{entry.type_name}]"
                                    + (f" name: {name}" if name else ""))
                flat.append(value)
                continue
            fast = _fast_constant(value, want)
            if fast is not None:
                flat.append(fast)
                continue
        flat.append(_as_eager(_convert_one(entry, spec, value, attrs, bound)))
    for key, value in bound.items():
        if not key.startswith("__source_"):
            attrs.setdefault(key, value)
    return execute(entry, flat, attrs, name)


def _as_eager(t):
    if isinstance(t, EagerTensor):
        return t
    raise TypeError(f"An op outside of the eager context was given as input: {t!r}. Graph tensors cannot be "
                    "used in eager mode.")


def execute_create_op(op_type: str, inputs, attrs, name) -> EagerOperation:
    """Graph.create_op in eager mode (frontend code that builds ops directly)."""
    from ..convert import convert_to_tensor

    entry = lookup_op_type(op_type)
    flat = [t if isinstance(t, EagerTensor) else _as_eager(convert_to_tensor(t)) for t in inputs]
    return execute(entry, flat, dict(attrs) if attrs else {}, name)


# -- Python operators on eager tensors: straight to the kernel ----------------------------------
def _t_key(dtype) -> tuple:
    return (("T", dtype.name),)


def _binary_operator(op_type: str, python_name: str, reflected: bool, kinds: tuple):
    """``EagerTensor.__<python_name>__``: the op on the cached kernel when both operands
    are (or convert exactly to) this tensor's dtype; TF's general path otherwise."""
    from ..graph import Tensor

    entry = lookup_op_type(op_type)
    fallback = getattr(Tensor, python_name)
    scope = python_name.strip("_").lstrip("r") if reflected else python_name.strip("_")
    scope = {"truediv": "truediv", "floordiv": "floordiv", "and": "and", "or": "or"}.get(scope, scope) + "/"
    keys: dict = {}

    def operator(self, other):
        dtype = self._eager_dtype
        if dtype._base not in kinds:
            return fallback(self, other)
        if type(other) is EagerTensor:
            if other._eager_dtype is not dtype:
                return fallback(self, other)
            y = other
        else:
            y = _fast_constant(other, dtype)
            if y is None:
                return fallback(self, other)
        inputs = [y, self] if reflected else [self, y]
        attrs_key = keys.get(dtype)
        if attrs_key is None:
            attrs_key = keys[dtype] = _t_key(dtype)
        a, b = inputs
        kernel = _KERNELS.get((op_type, attrs_key, (a._sig or _sig(a), b._sig or _sig(b))))
        if kernel is None:
            return execute(entry, inputs, {"T": dtype}, scope)._outputs[0]
        STATS["hits"] += 1
        try:
            outputs = kernel.call(inputs, scope)
        except _NeedsExactShapes:
            _EXACT.add(op_type)
            return execute(entry, inputs, {"T": dtype}, scope)._outputs[0]
        if _ACTIVE_TAPES:
            _tape.record(EagerOperation(op_type, scope, kernel.attrs, inputs, outputs), entry)
        return outputs[0]

    operator.__name__ = python_name
    return operator


def _unary_operator(op_type: str, python_name: str, kinds: tuple):
    from ..graph import Tensor

    entry = lookup_op_type(op_type)
    fallback = getattr(Tensor, python_name)
    keys: dict = {}

    def operator(self):
        dtype = self._eager_dtype
        if dtype._base not in kinds:
            return fallback(self)
        attrs_key = keys.get(dtype)
        if attrs_key is None:
            attrs_key = keys[dtype] = _t_key(dtype)
        kernel = _KERNELS.get((op_type, attrs_key, (self._sig or _sig(self),)))
        if kernel is None:
            return execute(entry, [self], {"T": dtype}, None)._outputs[0]
        STATS["hits"] += 1
        try:
            outputs = kernel.call([self], None)
        except _NeedsExactShapes:
            _EXACT.add(op_type)
            return execute(entry, [self], {"T": dtype}, None)._outputs[0]
        if _ACTIVE_TAPES:
            _tape.record(EagerOperation(op_type, None, kernel.attrs, [self], outputs), entry)
        return outputs[0]

    operator.__name__ = python_name
    return operator


_FLOATS = ("float16", "float32", "float64")
_NUMBERS = _FLOATS + ("int32", "int64")


def install_operators() -> None:
    """The fast operators of EagerTensor (the Tensor class's general ones stay the fallback)."""
    for python_name, op_type, kinds in (("add", "AddV2", _NUMBERS), ("sub", "Sub", _NUMBERS),
                                        ("mul", "Mul", _NUMBERS), ("truediv", "RealDiv", _FLOATS)):
        setattr(EagerTensor, f"__{python_name}__", _binary_operator(op_type, f"__{python_name}__", False, kinds))
        setattr(EagerTensor, f"__r{python_name}__", _binary_operator(op_type, f"__r{python_name}__", True, kinds))
    for python_name, op_type in (("lt", "Less"), ("le", "LessEqual"), ("gt", "Greater"), ("ge", "GreaterEqual")):
        setattr(EagerTensor, f"__{python_name}__", _binary_operator(op_type, f"__{python_name}__", False, _NUMBERS))
    EagerTensor.__neg__ = _unary_operator("Neg", "__neg__", _NUMBERS)
    EagerTensor.__abs__ = _unary_operator("Abs", "__abs__", _NUMBERS)


install_operators()


def _install_graph_methods() -> None:
    """The eager graph calls this module directly (no import per op)."""
    from .context import EagerGraph

    def _eager_apply(self, entry, inputs, attrs, name, control_inputs=()):
        return eager_apply(entry, inputs, attrs, name)

    def create_op(self, op_type, inputs=(), dtypes_=None, input_types=None, name=None, attrs=None, op_def=None,
                  compute_shapes=True, compute_device=True, control_inputs=()):
        return execute_create_op(op_type, inputs, attrs, name)

    def _eager_constant(self, value, dtype, shape, verify_shape):
        return eager_constant(value, dtype, shape, verify_shape)

    EagerGraph._eager_apply = _eager_apply
    EagerGraph.create_op = create_op
    EagerGraph._eager_constant = _eager_constant


_install_graph_methods()
