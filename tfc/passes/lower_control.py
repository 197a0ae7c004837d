"""Lowering TF1 control flow (the v1 encoding) to the IR's structured ``if`` and ``while``.

TF1 graphs branch and loop with dataflow primitives: ``Switch(data, pred)`` sends data to
output 1 (pred true) or output 0; ``Merge`` forwards whichever input arrives. A cond is
Switches on one predicate, two branches, Merges joining them. A loop is a frame: ``Enter``
brings values in (``is_constant``: invariants), ``Merge(Enter, NextIteration)`` is a loop
variable, ``LoopCond`` the predicate, ``Switch(Merge, LoopCond)`` sends the variable to the
body (output 1) or to ``Exit`` (output 0), and ``NextIteration`` feeds the body's result
back to the Merge. Graphs written by TensorFlow and graphs built by tfc's ``tf.cond`` /
``tf.while_loop`` have exactly this structure, so it is recovered from the graph alone:

1. Every op gets a context stack, propagated in topological order (NextIteration ->
   Merge edges are back edges): a cond Switch's output k pushes (pred, k), a cond Merge
   pops, Enter pushes its frame, Exit pops; any other op sits in the deepest context of
   its (data and control) inputs, which must all be prefixes of it.
2. Lowering walks one level at a time. Ops at the level lower as usual. The first Merge
   of a cond lowers the whole cond: an ``if`` on the Switches' predicate whose regions
   are the two branches' ops (lowered recursively), yielding the Merges' inputs. The first
   Enter of a frame lowers the whole loop: a ``while`` whose carried values are the
   Merges' initial values, whose condition region computes LoopCond's input from the
   Merges and whose body computes the NextIteration inputs from the Switches' outputs;
   Exits are its results.
3. Regions are built referring to outer values directly (a Switch's output in a branch
   is its data input; an invariant Enter's output is its input), then ``isolate`` turns
   every outer value a region uses into an operand and a region argument: the IR's
   regions see nothing else.

A structure that does not fit (a Merge of unrelated values, an op mixing two branches)
is reported on the op, with its file:line, like any op the compiler cannot lower.
"""
from __future__ import annotations

from tfc import ir

from .lower import prune
from .lower_arrays import PendingArray, zeros
from .lower_stacks import StackState, allocate, pushes_of, static_element, touched_stacks
from .loop_bounds import trip_bound

SWITCH = frozenset({"Switch", "RefSwitch"})
MERGE = frozenset({"Merge", "RefMerge"})
ENTER = frozenset({"Enter", "RefEnter"})
EXIT = frozenset({"Exit", "RefExit"})
NEXT_ITERATION = frozenset({"NextIteration", "RefNextIteration"})
LOOP_COND = frozenset({"LoopCond"})
PRIMITIVES = SWITCH | MERGE | ENTER | EXIT | NEXT_ITERATION | LOOP_COND
FUNCTIONAL_IF = frozenset({"If", "StatelessIf"})
FUNCTIONAL_WHILE = frozenset({"While", "StatelessWhile"})


# A loop whose variables change shape is unrolled when it runs exactly this many times or fewer.
MAX_UNROLL = 256


class ControlFlowError(ValueError):
    def __init__(self, op, reason: str):
        super().__init__(reason)
        self.op = op


def has_control_flow(ops) -> bool:
    return any(op.type in PRIMITIVES or op.type in FUNCTIONAL_IF or op.type in FUNCTIONAL_WHILE for op in ops)


def predicate_source(tensor):
    """The tensor a Switch's predicate copies (through Identity ops): TF's cond switches
    its pivot on ``pred`` and its data on ``cond/pred_id``, an Identity of ``pred``."""
    while tensor.op.type == "Identity" and tensor.op._inputs:
        tensor = tensor.op._inputs[0]
    return tensor


def _is_back_edge(op, tensor) -> bool:
    return op.type in MERGE and tensor.op.type in NEXT_ITERATION


def _is_loop_switch(op) -> bool:
    return op.type in SWITCH and op._inputs[1].op.type in LOOP_COND


# -- 1. contexts -------------------------------------------------------------------------------
def topological_order(ops) -> list:
    """``ops`` ordered so that every op comes after its inputs (back edges aside)."""
    members = set(ops)
    pending = {}
    consumers: dict = {}
    for op in ops:
        producers = {t.op for t in op._inputs if not _is_back_edge(op, t) and t.op in members}
        producers |= {c for c in op._control_inputs if c in members}
        pending[op] = len(producers)
        for producer in producers:
            consumers.setdefault(producer, []).append(op)
    ready = [op for op in ops if pending[op] == 0]
    order = []
    while ready:
        op = ready.pop(0) if len(ready) < 2 else ready.pop(0)
        order.append(op)
        for consumer in consumers.get(op, ()):
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    if len(order) != len(ops):
        stuck = next(op for op in ops if pending[op] > 0)
        raise ControlFlowError(stuck, "the graph has a cycle that is not a while loop's NextIteration -> Merge")
    return order


class Contexts:
    """The context stack of every op and output: a tuple of frames, each ("cond", pred
    tensor, branch) or ("loop", frame name)."""

    def __init__(self, order: list):
        self.of_op: dict = {}
        self.of_tensor: dict = {}
        for op in order:
            self._visit(op)

    def tensor(self, t) -> tuple:
        return self.of_tensor.get(t, ())

    def _deepest(self, op, stacks) -> tuple:
        deepest = ()
        for stack in stacks:
            if len(stack) > len(deepest):
                deepest = stack
        for stack in stacks:
            if deepest[:len(stack)] != stack:
                raise ControlFlowError(op, f"op '{op.name}' uses values of two different branches or loops")
        return deepest

    def _visit(self, op) -> None:
        inputs = [t for t in op._inputs if not _is_back_edge(op, t)]
        stacks = [self.tensor(t) for t in inputs] + [self.of_op.get(c, ()) for c in op._control_inputs]
        if op.type in MERGE and any(_is_back_edge(op, t) for t in op._inputs):
            stack = self.tensor(op._inputs[0])  # a loop variable: the Enter's frame
        elif op.type in MERGE:
            popped = []
            for t in op._inputs:
                s = self.tensor(t)
                if not s or s[-1][0] != "cond":
                    raise ControlFlowError(op, f"Merge '{op.name}' joins a value that comes from no branch of a cond")
                popped.append(s[:-1])
            stack = self._deepest(op, popped)
        elif op.type == "ControlTrigger":
            # It waits for ops in several branches (TF's f_sync: stack pushes in a cond's two
            # branches) and sits where they meet.
            stack = _common_prefix(stacks)
        elif op.type in EXIT:
            inner = self._deepest(op, stacks)
            if not inner or inner[-1][0] != "loop":
                raise ControlFlowError(op, f"Exit '{op.name}' is not inside a while loop")
            stack = inner[:-1]
        else:
            stack = self._deepest(op, stacks)
        self.of_op[op] = stack
        for port, t in enumerate(op.outputs):
            out = stack
            if op.type in ENTER:
                out = stack + (("loop", op._attrs.get("frame_name")),)
            elif op.type in SWITCH and not _is_loop_switch(op):
                out = stack + (("cond", predicate_source(op._inputs[1]), port),)
            self.of_tensor[t] = out


# -- 2. lowering, level by level ---------------------------------------------------------------
class ControlFlowLowering:
    """Lowers the pruned ops of a graph with control flow through ``lowering`` (the
    ``passes.lower._Lowering`` driving it: its values, ``_lower_op``, builder)."""

    def __init__(self, lowering, ops):
        self.lowering = lowering
        self.order = topological_order(ops)
        self.position = {op: i for i, op in enumerate(self.order)}
        self.contexts = Contexts(self.order)
        self.done: set = set()
        self.loop_conds = {self.contexts.of_op[op][-1][1]: op for op in self.order
                           if op.type in LOOP_COND and self.contexts.of_op[op]}
        self.learning = 0  # > 0 while a loop body is lowered once to learn types

    def run(self) -> None:
        self.lower_level((), self.order)

    def lower_level(self, prefix: tuple, ops, needed: tuple = ()) -> None:
        """Lower the ops of one level: its own ops one by one, each cond or loop nested one
        level down as a whole, in an order where every construct comes after the values it
        takes in and before the ops using its results."""
        depth = len(prefix)
        level = [op for op in ops if op not in self.done and self.contexts.of_op[op][:depth] == prefix]
        generations = self._generations(level, depth)
        node_of = {}
        for op in level:
            node = self._construct_of(op, depth, generations)
            if node is None and op.type == "NoOp":
                self.done.add(op)  # emits nothing; what waits for it waits for its control inputs
                continue
            node_of[op] = op if node is None else node
        exported = self._escaping_values(node_of, depth, needed)
        for node in _contracted_order(node_of):
            if not isinstance(node, tuple):
                self.done.add(node)
                if node.type in FUNCTIONAL_IF or node.type in FUNCTIONAL_WHILE:
                    self.lower_functional(node)
                else:
                    self.lowering._lower_op(node)
            elif node[0] == "cond":
                self.lower_cond(prefix, node, [op for op, key in node_of.items() if key == node],
                                exported.get(node, []))
            else:
                self.lower_loop(prefix, node)

    def _generations(self, level: list, depth: int) -> dict:
        """op -> the generation of the cond (one level down) it belongs to. Conds on one
        predicate form generations: a cond whose inputs depend on an earlier cond's result
        (the gradient of a cond: a Switch of the loss's gradient) is a later one, and an op
        of a branch belongs to the latest generation among its inputs."""
        generation: dict = {}
        merged: dict = {}  # op -> {pred: the latest generation of a cond Merge it depends on}
        for op in level:
            producers = [t.op for t in op._inputs if not _is_back_edge(op, t)] + list(op._control_inputs)
            depends: dict = {}
            for producer in producers:
                for pred, g in merged.get(producer, {}).items():
                    depends[pred] = max(depends.get(pred, -1), g)
            stack = self.contexts.of_op[op]
            if op.type in SWITCH and not _is_loop_switch(op) and len(stack) == depth:
                generation[op] = depends.get(predicate_source(op._inputs[1]), -1) + 1
            elif len(stack) > depth and stack[depth][0] == "cond":
                pred = stack[depth][1]
                generation[op] = max([generation[p] for p in producers if p in generation
                                      and self._cond_pred(p, depth) is pred] or [0])
            elif op.type in MERGE and len(stack) == depth and not any(_is_back_edge(op, t) for t in op._inputs):
                pred = self.contexts.tensor(op._inputs[0])[depth][1]
                generation[op] = max(generation.get(t.op, 0) for t in op._inputs)
                depends[pred] = max(depends.get(pred, -1), generation[op])
            merged[op] = depends
        return generation

    def _cond_pred(self, op, depth: int):
        """The predicate of the cond one level down that ``op`` is part of (None if none)."""
        stack = self.contexts.of_op[op]
        if len(stack) > depth and stack[depth][0] == "cond":
            return stack[depth][1]
        if op.type in SWITCH and not _is_loop_switch(op) and len(stack) == depth:
            return predicate_source(op._inputs[1])
        return None

    def _construct_of(self, op, depth: int, generations: dict):
        """The construct one level below ``depth`` that ``op`` belongs to: ("cond", pred,
        generation) or ("loop", frame); None for an ordinary op of the level."""
        stack = self.contexts.of_op[op]
        if len(stack) > depth:
            frame = stack[depth]
            return ("cond", frame[1], generations[op]) if frame[0] == "cond" else frame[:2]
        if op.type in SWITCH and not _is_loop_switch(op):
            return ("cond", predicate_source(op._inputs[1]), generations[op])
        if op.type in MERGE:
            return ("cond", self.contexts.tensor(op._inputs[0])[depth][1], generations[op])
        if op.type in ENTER:
            return ("loop", op._attrs.get("frame_name"))
        if op.type in EXIT:
            return self.contexts.tensor(op._inputs[0])[depth][:2]
        return None

    def _escaping_values(self, node_of: dict, depth: int, needed: tuple) -> dict:
        """construct -> the tensors of its branches (or of conds nested in them) that another
        construct on the same predicate uses, or that the level above ``needed``: it must
        yield them (regions' values never escape otherwise)."""
        exported: dict = {}

        def export(source, t) -> None:
            if t not in exported.setdefault(source, []):
                exported[source].append(t)

        for t in needed:
            source = node_of.get(t.op)
            if isinstance(source, tuple) and source[0] == "cond" and len(self.contexts.of_op[t.op]) > depth:
                export(source, t)
        for op, node in node_of.items():
            for t in op._inputs:
                source = node_of.get(t.op)
                if source is None or source == node or not isinstance(source, tuple) or source[0] != "cond":
                    continue
                if len(self.contexts.of_op[t.op]) == depth:
                    continue  # a cond's result (Merge), or a Switch: bound to its data input in the branch
                if not (isinstance(node, tuple) and node[:2] == source[:2]):
                    raise ControlFlowError(op, f"op '{op.name}' uses '{t.name}', a value computed inside a branch"
                                               f" of a cond, outside that cond")
                export(source, t)
        return exported

    # -- cond --------------------------------------------------------------------------
    def lower_cond(self, prefix: tuple, key: tuple, ops: list, exported: list) -> None:
        """One ``if`` for the cond ``key`` (its Switches, branch ops and Merges: ``ops``);
        besides the Merges' values it yields ``exported`` (branch values a later cond on the
        same predicate uses; the other branch yields zeros in their place)."""
        frame_pred = key[1]
        depth = len(prefix)
        merges = [op for op in ops if op.type in MERGE and self.contexts.of_op[op] == prefix]
        switches = [op for op in ops if op.type in SWITCH and self.contexts.of_op[op] == prefix]
        lowering = self.lowering
        # The Switches' own predicate input (an Identity of ``frame_pred`` may be what a
        # later cond can reach, as an escaping value of an earlier one).
        pred = self._value_in_region(switches[0]._inputs[1] if switches else frame_pred)
        stacks = touched_stacks(ops)
        if self.learning:  # a loop body lowered to learn what its pushes push: let them tell
            stacks = [stack for stack in stacks if not self._unknown_elements([stack])]
        self._allocate_stacks(stacks, depth)
        regions, yields, exported_values, stack_yields = [], [], {}, {}
        for branch in (1, 0):
            frame = ("cond", frame_pred, branch)
            inner = prefix + (frame,)
            block = ir.Block()
            members = [op for op in ops if self.contexts.of_op[op][:depth + 1] == inner]
            bindings = {op.outputs[branch]: self._switched_value(op._inputs[0]) for op in switches}
            for member in members:  # Switches of earlier conds on this predicate stand for their data
                for t in member._inputs:
                    producer = t.op
                    if producer.type in SWITCH and t not in bindings and not _is_loop_switch(producer) \
                            and self.contexts.of_op[producer] == prefix and t.value_index == branch \
                            and predicate_source(producer._inputs[1]) is frame_pred:
                        bindings[t] = self._switched_value(producer._inputs[0])
            with self._region(block, bindings):
                self.lower_level(inner, members, tuple(t for t in exported if self.contexts.of_op[t.op][depth] == frame))
                values = [self._value_in_region(merge._inputs[_branch_input(self.contexts, merge, depth, frame)])
                          for merge in merges]
                for merge in merges:
                    if _value_index_used(merge):
                        index = _branch_input(self.contexts, merge, depth, frame)
                        values.append(lowering.ctx.b.value("constant", [], {"value": _int32(index)},
                                                           ir.TensorType(ir.ElemType.I32, ())))
                for t in exported:
                    if self.contexts.of_op[t.op][depth] == frame:
                        exported_values[t] = self._value_in_region(t)
                stack_yields[branch] = _stack_values(lowering.ctx, stacks)
            regions.append(block)
            yields.append(values)
        for block, values, branch in zip(regions, yields, (1, 0)):
            builder = ir.Builder(block)
            for t in exported:
                if self.contexts.of_op[t.op][depth][2] == branch:
                    values.append(exported_values[t])
                else:
                    values.append(_zeros(builder, exported_values[t].type))
            builder.op("yield", values + stack_yields[branch])
        for op in switches:
            self.done.add(op)
        anchor = merges[0] if merges else switches[0]
        _check_branch_types(anchor, regions)
        lowering.ctx.b.loc = _loc_of(lowering, anchor)
        result_types = [v.type for v in regions[0].ops[-1].operands]
        if_op = lowering.ctx.b.op("if", [pred], {}, result_types, regions=regions)
        isolate(if_op)
        results = iter(if_op.results)
        for merge in merges:
            lowering.values[merge.outputs[0]] = next(results)
            self.done.add(merge)
        for merge in merges:
            if _value_index_used(merge):
                lowering.values[merge.outputs[1]] = next(results)
        for t in exported:
            lowering.values[t] = next(results)
        _bind_stacks(lowering.ctx, stacks, list(results))

    # -- while -------------------------------------------------------------------------
    def lower_loop(self, prefix: tuple, frame: tuple) -> None:
        lowering = self.lowering
        frame = ("loop", frame[1])
        inner = prefix + (frame,)
        depth = len(prefix)
        members = [op for op in self.order if self.contexts.of_op[op][:depth + 1] == inner
                   or (op.type in ENTER and self.contexts.of_op[op] == prefix
                       and op._attrs.get("frame_name") == frame[1])]
        enters = [op for op in members if op.type in ENTER and self.contexts.of_op[op] == prefix]
        merges = [op for op in members if op.type in MERGE and any(_is_back_edge(op, t) for t in op._inputs)
                  and self.contexts.of_op[op] == inner]
        loop_cond = next((op for op in members if op.type in LOOP_COND and self.contexts.of_op[op] == inner), None)
        if loop_cond is None or not merges:
            raise ControlFlowError(enters[0], f"while loop frame '{frame[1]}' has no LoopCond or no loop variable")
        switches, exits, next_iterations = [], [], []
        for merge in merges:
            switch = next((c for c in merge.outputs[0]._consumers if c.type in SWITCH and _is_loop_switch(c)), None)
            if switch is None:
                raise ControlFlowError(merge, f"loop variable '{merge.name}' has no Switch on the LoopCond")
            switches.append(switch)
            exits.append(next((c for c in switch.outputs[0]._consumers if c.type in EXIT), None))
            next_iterations.append(next(t.op for t in merge._inputs if t.op.type in NEXT_ITERATION))
        for enter in enters:
            self.done.add(enter)
        inits = []
        for merge in merges:
            value = lowering.values[merge._inputs[0].op._inputs[0]]
            if isinstance(value.type, ir.RefType):
                value = lowering.ctx.b.value("read", [value])
            inits.append(value)
        invariant_bindings = {enter.outputs[0]: lowering.values[enter._inputs[0]] for enter in enters
                              if enter.outputs[0] not in {m._inputs[0] for m in merges}}
        boundary = set(merges) | set(switches) | set(enters)
        cond_ops = self._ancestors([loop_cond._inputs[0]], members, boundary)
        body_roots = [n._inputs[0] for n in next_iterations]
        # A NextIteration's control inputs (TF's stack pushes, f_sync) run in the body too.
        body_ops = self._ancestors(body_roots, members, boundary,
                                   [c for n in next_iterations for c in n._control_inputs])
        stacks = touched_stacks(members)
        if any(lowering.ctx.stacks[stack].items is not None for stack in stacks):
            # It pops what an unrolled loop pushed (TF's gradient of that loop): unroll it too.
            self._unroll(self._exact_count(loop_cond, stacks), inner, members, merges, switches, exits,
                         invariant_bindings, inits, body_ops, body_roots, stacks)
            return
        unallocated = [stack for stack in stacks if lowering.ctx.stacks[stack].contents is None]
        if any(isinstance(v, PendingArray) for v in inits) or self._unknown_elements(stacks):
            inits = self._materialize_arrays(inits, merges, switches, invariant_bindings, inner, body_ops, body_roots)
        self._allocate_stacks(stacks, depth)
        while True:
            carried = inits + _stack_values(lowering.ctx, stacks)
            carried_types = [v.type for v in carried]
            condition, body = ir.Block(carried_types), ir.Block(carried_types)
            widen: dict = {}
            for region, region_ops, roots in ((condition, cond_ops, None), (body, body_ops, body_roots)):
                bindings = dict(invariant_bindings)
                for k, merge in enumerate(merges):
                    bindings[merge.outputs[0]] = region.args[k]
                    bindings[switches[k].outputs[1]] = region.args[k]
                with self._region(region, bindings):
                    _bind_stacks(lowering.ctx, stacks, region.args[len(inits):])
                    self.lower_level(inner, region_ops)
                    if roots is None:
                        flag = self._value_in_region(loop_cond._inputs[0])
                        lowering.ctx.b.op("yield", [flag])
                    else:
                        next_values = [self._value_in_region(t) for t in roots]
                        widen = _zero_scalars_to_widen(lowering.ctx, inits, next_values)
                        changing = [k for k, v in enumerate(next_values) if v.type != carried_types[k]]
                        if not widen and not changing:
                            lowering.ctx.b.op("yield", next_values + _stack_values(lowering.ctx, stacks))
                for op in region_ops:
                    self.done.discard(op)  # ops both regions use are lowered in each
            if not widen and changing:
                _discard(condition)
                _discard(body)
                bound = trip_bound(loop_cond, self._static_scalar)
                if bound is None or not bound.exact or not isinstance(bound.count, int) or bound.count > MAX_UNROLL:
                    _check_loop_types(merges, carried_types, next_values)
                for stack in unallocated:  # each iteration pushes its own shape: a list of values
                    lowering.ctx.stacks[stack] = StackState(None, lowering.ctx.stacks[stack].top, ())
                self._unroll(bound.count, inner, members, merges, switches, exits, invariant_bindings, inits,
                             body_ops, body_roots, stacks)
                return
            if not widen:
                break
            _discard(condition)
            _discard(body)
            inits = [lowering.ctx.b.value("broadcast", [v], {"dims": []}, widen[k]) if k in widen else v
                     for k, v in enumerate(inits)]
        for op in members:
            self.done.add(op)
        lowering.ctx.b.loc = _loc_of(lowering, loop_cond)
        loop = lowering.ctx.b.op("while", carried, {"carried": len(carried)}, carried_types,
                                 regions=[condition, body])
        isolate(loop)
        for k, exit_op in enumerate(exits):
            if exit_op is not None:
                lowering.values[exit_op.outputs[0]] = loop.results[k]
        _bind_stacks(lowering.ctx, stacks, loop.results[len(inits):])

    def _exact_count(self, loop_cond, stacks) -> int:
        bound = trip_bound(loop_cond, self._static_scalar)
        if bound is None or not bound.exact or not isinstance(bound.count, int) or bound.count > MAX_UNROLL:
            stack = next(s for s in stacks if self.lowering.ctx.stacks[s].items is not None)
            raise ControlFlowError(loop_cond, f"the loop pops stack '{stack.name}', which holds values of an unrolled"
                                              f" loop (their shapes differ from one iteration to the next); tfc"
                                              f" unrolls this loop too only when it counts to a limit known at"
                                              f" compile time ({MAX_UNROLL} iterations at most)")
        return bound.count

    def _unroll(self, count: int, inner, members, merges, switches, exits, invariant_bindings, inits, body_ops,
                body_roots, stacks) -> None:
        """A loop some variable of which changes shape from one iteration to the next
        (shape_invariants that let a tensor grow), and that runs exactly ``count`` times:
        the body ``count`` times in a row, each iteration's values of their own shape."""
        lowering = self.lowering
        values = inits
        for _ in range(count):
            bindings = dict(invariant_bindings)
            for k, merge in enumerate(merges):
                bindings[merge.outputs[0]] = values[k]
                bindings[switches[k].outputs[1]] = values[k]
            with self._region(lowering.ctx.b.block, bindings):
                self.lower_level(inner, body_ops)
                values = [self._value_in_region(t) for t in body_roots]
                states = {stack: lowering.ctx.stacks[stack] for stack in stacks}
            lowering.ctx.stacks.update(states)
            for op in body_ops:
                self.done.discard(op)
        for op in members:
            self.done.add(op)
        for k, exit_op in enumerate(exits):
            if exit_op is not None:
                lowering.values[exit_op.outputs[0]] = values[k]

    # -- TF2's functional If / While (bodies in the function library) ------------------------
    def lower_functional(self, op) -> None:
        from tfc.frontend.function_library import instantiate

        lowering = self.lowering
        inputs = [self._value_in_region(t) for t in op._inputs]
        if op.type in FUNCTIONAL_IF:
            pred, inputs = inputs[0], inputs[1:]
            if pred.type != ir.TensorType(ir.ElemType.PRED, ()):
                raise ControlFlowError(op, f"{op.type} '{op.name}' has a {pred.type} condition; tfc supports a"
                                           f" scalar bool")
            functions = [instantiate(op.graph, op._attrs[key]) for key in ("then_branch", "else_branch")]
            blocks = [ir.Block() for _ in functions]
        else:
            functions = [instantiate(op.graph, op._attrs[key]) for key in ("cond", "body")]
            if any(isinstance(v, PendingArray) for v in inputs):
                inputs = self._materialize_lists(op, functions[1], inputs)
            blocks = [ir.Block([v.type for v in inputs]) for _ in functions]
        for function, block in zip(functions, blocks):
            bindings = {t: (block.args[i] if block.args else inputs[i]) for i, t in enumerate(function.inputs)}
            with self._region(block, bindings):
                body_ops = prune(function.outputs, (), function.inputs)
                lowering._lower_ops(body_ops)
                if lowering.failures:
                    return
                values = [self._value_in_region(t) for t in function.outputs]
                if op.type in FUNCTIONAL_WHILE and function is functions[1]:
                    _check_loop_types([op] * len(values), [v.type for v in inputs], values)
                lowering.ctx.b.op("yield", values)
        lowering.ctx.b.loc = _loc_of(lowering, op)
        if op.type in FUNCTIONAL_IF:
            _check_branch_types(op, blocks)
            types = [v.type for v in blocks[0].ops[-1].operands]
            construct = lowering.ctx.b.op("if", [pred], {}, types, regions=blocks)
        else:
            types = [v.type for v in inputs]
            construct = lowering.ctx.b.op("while", inputs, {"carried": len(inputs)}, types, regions=blocks)
        isolate(construct)
        for tensor, value in zip(op.outputs, construct.results):
            lowering.values[tensor] = value

    def _materialize_lists(self, op, body, inputs) -> list:
        """A functional While carrying TensorLists nothing was written to before it: lower
        its body once (then throw it away) to learn their element types."""
        lowering = self.lowering
        scratch = ir.Block()
        failures = len(lowering.failures)
        with self._region(scratch, dict(zip(body.inputs, inputs))):
            lowering._lower_ops(prune(body.outputs, (), body.inputs))
            learned = [lowering.values.get(t) for t in body.outputs]
        _discard(scratch)
        del lowering.failures[failures:]
        return self._started_arrays(inputs, learned, lambda k: (op, f"loop variable {k} of '{op.name}'"))

    def _started_arrays(self, inits, learned, blame) -> list:
        """``inits`` with each pending array replaced by zeros of the type the loop body
        (lowered once: ``learned``) gives it; ``blame(k)``: (op, what) for the error."""
        out = []
        for k, value in enumerate(inits):
            if isinstance(value, PendingArray):
                written = learned[k]
                if written is None or isinstance(written, PendingArray) or written.type is None:
                    op, what = blame(k)
                    raise ControlFlowError(op, f"{what} is an array the loop never writes to")
                value = zeros(self.lowering.ctx.b, written.type)
            out.append(value)
        return out

    def _materialize_arrays(self, inits, merges, switches, invariant_bindings, inner, body_ops, body_roots) -> list:
        """Loop-carried TensorArrays nothing was written to before the loop, and stacks the
        loop pushes values of unknown shape onto: lower the body once (then throw it away)
        to learn what the loop writes into them (the pushes record it in ``stack_facts``).
        The arrays start as zeros of that type."""
        lowering = self.lowering
        scratch = ir.Block()
        bindings = dict(invariant_bindings)
        for k, merge in enumerate(merges):
            bindings[merge.outputs[0]] = inits[k]
            bindings[switches[k].outputs[1]] = inits[k]
        done = set(self.done)
        failures = len(lowering.failures)
        self.learning += 1
        with self._region(scratch, bindings):
            self.lower_level(inner, body_ops)
            learned = [lowering.values.get(t) for t in body_roots]
        _discard(scratch)
        self.done = done
        self.learning -= 1
        del lowering.failures[failures:]
        return self._started_arrays(inits, learned, lambda k: (merges[k], f"loop variable '{merges[k].name}'"))

    # -- stacks (lower_stacks.py) ------------------------------------------------------------
    def _unknown_elements(self, stacks) -> bool:
        ctx = self.lowering.ctx
        return any(ctx.stacks[s].contents is None and self._element(s) is None for s in stacks)

    def _element(self, stack):
        return static_element(stack) or self.lowering.ctx.stack_facts[stack].element

    def _allocate_stacks(self, stacks, depth: int) -> None:
        """Contents for each of ``stacks`` not allocated yet (its pushes are all one level
        below ``depth`` or deeper): as many rows as the loops around its pushes can iterate."""
        ctx = self.lowering.ctx
        for stack in stacks:
            if ctx.stacks[stack].contents is not None:
                continue
            element = self._element(stack)
            if element is None:
                raise ControlFlowError(stack, f"tfc cannot tell the shape of the values pushed onto stack"
                                              f" '{stack.name}'")
            allocate(ctx, stack, self._stack_capacity(stack, depth), element)

    def _stack_capacity(self, stack, depth: int):
        """The most values the pushes of ``stack`` can push: for each push, the product of the
        trip-count bounds of the loops around it below ``depth``."""
        total = 0
        for push in pushes_of(stack):
            count = 1
            for frame in self.contexts.of_op.get(push, ())[depth:]:
                if frame[0] != "loop":
                    continue
                loop_cond = self.loop_conds[frame[1]]
                bound = trip_bound(loop_cond, self._static_scalar)
                if bound is None:
                    raise ControlFlowError(loop_cond, f"the gradient of while loop '{frame[1]}' keeps values of each"
                                                      f" iteration on stack '{stack.name}', and tfc sizes stacks by"
                                                      f" a bound on the loop's iterations known at compile time:"
                                                      f" pass maximum_iterations (a constant) to tf.while_loop, or"
                                                      f" count to a constant limit")
                count = count * bound.count
            total = total + count
        return total

    def _static_scalar(self, tensor):
        """``tensor``'s value if known at compile time (through Enter and Identity ops): an
        int, or a symbolic dim; else None."""
        import numpy as np

        from tfc.frontend.tensor_util import constant_value
        from .lower import _as_dim

        while tensor.op.type in ("Enter", "RefEnter", "Identity") and tensor.op._inputs:
            tensor = tensor.op._inputs[0]
        value = self.lowering.values.get(tensor)
        known = None
        if isinstance(getattr(value, "type", None), ir.TensorType):
            known = self.lowering.ctx.static(value)
        if known is None:
            known = constant_value(tensor)
        if known is None or np.asarray(known).size != 1:
            return None
        return _as_dim(np.asarray(known).reshape(-1)[0])

    def _ancestors(self, roots, members, boundary, root_ops=()) -> list:
        """The members ``roots`` (tensors) and ``root_ops`` depend on (data and control
        inputs; inner loops' back edges too), up to this loop's ``boundary`` ops, in
        lowering order."""
        member_set = set(members)
        found = set()
        pending = [t.op for t in roots] + list(root_ops)
        while pending:
            op = pending.pop()
            if op in found or op not in member_set or op in boundary:
                continue
            found.add(op)
            pending.extend(t.op for t in op._inputs)
            pending.extend(op._control_inputs)
        return [op for op in members if op in found]

    # -- regions -----------------------------------------------------------------------
    def _region(self, block: ir.Block, bindings: dict):
        return _RegionScope(self.lowering, block, bindings)

    def _switched_value(self, tensor):
        """The value a Switch forwards: its data input's (through chains of cond Switches,
        which nested conds build for captured tensors)."""
        value = self.lowering.values.get(tensor)
        if value is None and tensor.op.type in SWITCH and not _is_loop_switch(tensor.op):
            return self._switched_value(tensor.op._inputs[0])
        if value is None:
            raise ControlFlowError(tensor.op, f"'{tensor.name}' is used by a cond before tfc has computed it")
        return value

    def _value_in_region(self, tensor) -> ir.Value:
        """``tensor``'s value where the builder is (a cond Switch's output is its data; a
        ref is read)."""
        value = self._switched_value(tensor)
        if isinstance(value.type, ir.RefType):
            value = self.lowering.ctx.b.value("read", [value])
        return value


class _RegionScope:
    """Lower into ``block`` with ``bindings`` (tensor -> IR value) in effect; afterwards
    the tensors lowered inside are forgotten (region values never escape)."""

    def __init__(self, lowering, block, bindings):
        self.lowering = lowering
        self.block = block
        self.bindings = bindings

    def __enter__(self):
        lowering = self.lowering
        self.saved_builder = lowering.ctx.b
        self.saved_values = dict(lowering.values)
        self.saved_stacks = dict(lowering.ctx.stacks)
        lowering.ctx.b = ir.Builder(block=self.block, loc=self.saved_builder.loc)
        lowering.values.update(self.bindings)
        return self

    def __exit__(self, *exc):
        lowering = self.lowering
        lowering.ctx.b = self.saved_builder
        lowering.values.clear()
        lowering.values.update(self.saved_values)
        lowering.ctx.stacks = self.saved_stacks
        return False


# -- 3. isolation --------------------------------------------------------------------------
def isolate(op: ir.Operation) -> None:
    """Turn each outer value the ops of ``op``'s regions use into an operand of ``op`` and
    an argument of every region (for a ``while``: a loop invariant, after the carried)."""
    free: list = []
    seen: set = set()
    for region in op.regions:
        defined = set(region.args)
        for inner in region.ops:
            for value in inner.operands:
                if value not in defined and value not in seen:
                    seen.add(value)
                    free.append(value)
            defined.update(inner.results)
    if not free:
        return
    op.operands.extend(free)
    for region in op.regions:
        mapping = {value: region.add_arg(value.type, value.name_hint) for value in free}
        for inner in region.ops:
            for i, value in enumerate(inner.operands):
                replacement = mapping.get(value)
                if replacement is not None:
                    inner.operands[i] = replacement


def _common_prefix(stacks) -> tuple:
    if not stacks:
        return ()
    prefix = stacks[0]
    for stack in stacks[1:]:
        length = 0
        while length < min(len(prefix), len(stack)) and prefix[length] == stack[length]:
            length += 1
        prefix = prefix[:length]
    return prefix


def _contracted_order(node_of: dict) -> list:
    """The nodes (ops, or construct keys standing for all their ops) in an order where
    each comes after the nodes producing its inputs; ties keep the ops' order."""
    first: dict = {}
    for op, node in node_of.items():
        first.setdefault(node, len(first))
    pending = {node: set() for node in first}
    consumers: dict = {node: set() for node in first}
    for op, node in node_of.items():
        # A control input on a cond's Switch orders nothing compiled code cares about (a Switch
        # has no effect; TF's gradients put such edges on constants used inside branches).
        control = [c for c in _through_no_ops(op._control_inputs) if c.type not in SWITCH]
        producers = [t.op for t in op._inputs if not _is_back_edge(op, t)] + control
        for producer in producers:
            source = node_of.get(producer)
            if source is not None and source != node:
                pending[node].add(source)
                consumers[source].add(node)
    ready = sorted((n for n in first if not pending[n]), key=first.get)
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for consumer in sorted(consumers[node], key=first.get):
            pending[consumer].discard(node)
            if not pending[consumer]:
                ready.append(consumer)
                ready.sort(key=first.get)
    if len(order) != len(first):
        stuck = next(op for op, node in node_of.items() if node not in order)
        raise ControlFlowError(stuck, f"op '{stuck.name}' is part of a cycle of conds and loops that depend on"
                                      f" each other")
    return order


def _zero_scalars_to_widen(ctx, inits, next_values) -> dict:
    """loop variable -> the type to start it as, when each variable changing type in an
    iteration starts as a zero scalar and becomes a tensor of its dtype: TF's gradient
    accumulators (``b_acc``) of a TensorArray's flow start as a scalar zero, the flow of a
    scalar float in TF, which compiled is the array itself. Starting them as zeros of the
    array's shape computes the same sums. Empty when there is nothing (else) to widen."""
    import numpy as np

    widen = {}
    for k, (init, value) in enumerate(zip(inits, next_values)):
        if init.type == value.type:
            continue
        known = ctx.static(init)
        if init.type.shape != () or init.type.elem != value.type.elem or known is None or np.any(known != 0):
            return {}
        widen[k] = value.type
    return widen


def _stack_values(ctx, stacks) -> list:
    """The IR values standing for ``stacks`` where the builder is: contents and top of each."""
    for stack in stacks:
        if ctx.stacks[stack].items is not None:
            raise ControlFlowError(stack, f"stack '{stack.name}' holds values of an unrolled loop (their shapes"
                                          f" differ), which a loop or cond that is not unrolled pushes or pops")
    return [value for stack in stacks for value in (ctx.stacks[stack].contents, ctx.stacks[stack].top)]


def _bind_stacks(ctx, stacks, values) -> None:
    """Make ``values`` (contents and top of each of ``stacks``) their state from here on."""
    for k, stack in enumerate(stacks):
        ctx.stacks[stack] = StackState(values[2 * k], values[2 * k + 1])


def _discard(block: ir.Block) -> None:
    """Drop a scratch block's ops (and their uses of outer values)."""
    for op in block.ops:
        for region in op.regions:
            _discard(region)
        op.drop_references()
    block.ops = []


def _check_branch_types(op, regions) -> None:
    """Both branches of a cond must give each result the same type: a result whose shape
    depends on the branch taken would be a shape known only at run time."""
    then_types = [v.type for v in regions[0].ops[-1].operands]
    else_types = [v.type for v in regions[1].ops[-1].operands]
    for k, (a, b) in enumerate(zip(then_types, else_types)):
        if a != b:
            raise ControlFlowError(op, f"result {k} of the cond is {a} when the predicate is true and {b} when it"
                                       f" is false: tfc compiles conds whose branches agree on each result's"
                                       f" shape and type")


def _check_loop_types(ops, carried_types, next_values) -> None:
    """A loop variable must keep its type (shape included) from one iteration to the next:
    the loop state lives in fixed buffers."""
    for k, (op, before, value) in enumerate(zip(ops, carried_types, next_values)):
        if value.type != before:
            raise ControlFlowError(op, f"loop variable {k} of the while loop changes from {before} to {value.type}"
                                       f" in an iteration: tfc compiles loops whose variables keep their shape,"
                                       f" and unrolls a loop whose variables grow when it counts to a limit known"
                                       f" at compile time ({MAX_UNROLL} iterations at most)")


def _through_no_ops(ops) -> list:
    """``ops`` with each NoOp replaced by what it waits for (its control inputs): a NoOp
    (tf.group, tf.tuple's gate) orders nothing by itself, and one waiting for a cond's
    Switch must not make the cond wait for it."""
    out, pending, seen = [], list(ops), set()
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "NoOp":
            pending.extend(op._control_inputs)
        else:
            out.append(op)
    return out


def _branch_input(contexts: Contexts, merge, depth: int, frame: tuple) -> int:
    """Which input of a cond Merge comes from the branch ``frame``."""
    for index, t in enumerate(merge._inputs):
        if contexts.tensor(t)[depth:depth + 1] == (frame,):
            return index
    raise ControlFlowError(merge, f"Merge '{merge.name}' has no input from the {'true' if frame[2] else 'false'}"
                                  f" branch of its cond")


def _value_index_used(merge) -> bool:
    return len(merge.outputs) > 1 and bool(merge.outputs[1]._consumers)


def _zeros(builder: ir.Builder, t: ir.TensorType) -> ir.Value:
    """Zeros (false) of type ``t``: what a branch yields for the other branch's value."""
    import numpy as np

    scalar = ir.TensorType(t.elem, ())
    zero = builder.value("constant", [], {"value": np.zeros((), t.elem.np_dtype)}, scalar)
    return builder.value("broadcast", [zero], {"dims": []}, t) if t.shape else zero


def _int32(value: int):
    import numpy as np

    return np.array(value, np.int32)


def _loc_of(lowering, op):
    from .lower import _location

    return _location(op)
