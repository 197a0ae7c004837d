"""``Dataset.reduce(initial_state, reduce_func)``: a fold over the whole dataset.

As in TF, ``reduce_func(state, element)`` is traced once on the state's and the
element's specs; where it returns a state whose shapes differ from the initial state's,
the state's shapes are relaxed to the most specific shapes both fit and the function is
traced again (TF's fixed point), and the new state's dtypes must be the initial state's.
The graph holds a ``ReduceDataset`` op (TF's op type and attrs) that runs the whole pass
on the host when a step needs it; in eager mode the op runs at once and the final state
is EagerTensors.
"""
from __future__ import annotations

import numpy as np

from .. import errors
from ..registry import Attr, OpType, register
from . import structure as nest
from .dataset_ops import _function, node_of
from .pipeline import Reader, chunk_size, element


@register
class ReduceDataset(OpType):
    inputs = ["input_dataset: variant", "initial_state: Tstate", "other_arguments: Targuments"]
    outputs = ["components: output_types"]
    attrs = {"f": Attr("func"), "Tstate": Attr("list(type)"), "Targuments": Attr("list(type)", []),
             "output_types": Attr("list(type)"), "output_shapes": Attr("list(shape)"),
             "use_inter_op_parallelism": Attr("bool", True)}
    host_only = True
    stateful = True
    not_differentiable = True

    def infer(op):
        return list(op._attrs["output_shapes"])

    def host(op, dataset, *rest):
        count = len(op._attrs["Tstate"])
        state, captured = [np.asarray(v) for v in rest[:count]], list(rest[count:])
        function = _function(op, "f")
        reader = Reader(node_of(dataset).iterator())
        try:
            while True:
                chunk = reader.read(1 << 10)
                if chunk is None:
                    break
                for i in range(chunk_size(chunk)):
                    state = function.call(state + element(chunk, i), captured)
        except errors.OpError as e:
            raise type(e)(None, op, e.message) from None
        finally:
            reader.close()
        return state


def reduce_dataset(dataset, initial_state, reduce_func):
    from ..graph import get_default_graph
    from .dataset import _normalize
    from .eager import executing_eagerly, run_host_op

    graph = dataset.graph
    with graph.as_default():
        state = _normalize(initial_state)
    state_structure = nest.map_structure(lambda t: nest.Spec(t.dtype, t.shape), state)
    flat_state = nest.flatten(state)
    while True:
        function = dataset._trace(reduce_func, "reduce", (state_structure, dataset._structure))
        new_structure = function.output_structure
        if not nest.same_structure(state_structure, new_structure):
            raise TypeError(f"The element classes for the new state must match the initial state. Expected "
                            f"{nest.classes_of(state_structure)}; got {nest.classes_of(new_structure)}.")
        if nest.flat_types(new_structure) != nest.flat_types(state_structure):
            raise TypeError(f"The element types for the new state must match the initial state. Expected "
                            f"{nest.types_of(state_structure)}; got {nest.types_of(new_structure)}.")
        weakened = nest.most_specific_compatible(state_structure, new_structure)
        if all(old.shape.ndims is None or (new.shape.ndims is not None and old.shape.as_list() == new.shape.as_list())
               for old, new in zip(nest.flatten(state_structure), nest.flatten(weakened))):
            break
        state_structure = weakened
    attrs = {"f": function.name, "Tstate": [t.dtype.base_dtype for t in flat_state],
             "Targuments": [t.dtype for t in function.captured_tensors],
             "output_types": nest.flat_types(state_structure), "output_shapes": nest.flat_shapes(state_structure)}
    inputs = [dataset._variant_tensor] + flat_state + function.captured_tensors
    if executing_eagerly(graph) and dataset._is_eager():
        from ..eager.tensor import EagerTensor, contiguous

        outputs, op = run_host_op("ReduceDataset", inputs, attrs, "ReduceDataset", {function.name: function})
        function.owner = op
        values = [EagerTensor(contiguous(v, d.as_numpy_dtype), d) for v, d in
                  zip(outputs, nest.flat_types(state_structure))]
        return nest.pack_sequence_as(state_structure, values)
    with graph.as_default():
        op = get_default_graph().create_op("ReduceDataset", inputs, name="ReduceDataset", attrs=attrs)
    function.owner = op
    return nest.pack_sequence_as(state_structure, op.outputs)
