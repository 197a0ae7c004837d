"""Buffer assignment: decide where every top-level value of ``main`` lives (and the values
of ``if``/``while`` regions, planned as if their ops ran right after the region op).

Each op with results gets a ``_buf`` annotation, one entry per result:

- ``const``: a constant, emitted as global data.
- ``alias``: the operand's own buffer (a top-level ``reshape``, or a ``read`` of a
  variable that no later write can change while the value is live).
- ``out<j>``: written straight into the program's j-th output buffer.
- ``ref<i>``: written straight into the variable (ref argument ``i``) that the following
  ``assign`` stores it to, which then does nothing: an in-place variable update.
- ``arena+<offset>``: a slice of the one temporary arena; the offset is a dim expression
  in bytes (symbolic with the batch size).

Why it is safe: a buffer is reused only after the last use of its previous value (uses
of aliases included), or by an op that reads that input at exactly the element it writes
(index-aligned elementwise work); a variable is updated in place only when nothing reads
its old value after the update starts; aliases of a variable are only made when no write
to it happens while they are live.
"""
from __future__ import annotations

import bisect
import heapq
from typing import Optional

from tfc import ir
from tfc.ir.dims import Dim, dim_add, dim_floordiv, dim_mul, dim_str, parse_dim
from tfc.ir.ops import CONTROL_FLOW, CORE_OPS, WRITE, op_effect

from .manager import Pass

ALIGN = 64


def planned_ops(block: ir.Block, spans: Optional[dict] = None) -> list:
    """The ops buffer assignment plans, in execution order: ``block``'s ops and, right
    after an ``if``/``while``, the ops of its regions (then, else / condition, body), yields
    included; not the insides of fusions (kernels), not ``return``. ``spans`` receives, for
    each if/while, the position of its last nested op."""
    out: list = []
    _flatten(block, out, spans if spans is not None else {})
    return out


def _flatten(block: ir.Block, out: list, spans: dict) -> None:
    for op in block.ops:
        if op.name == "return":
            continue
        out.append(op)
        if op.name in CONTROL_FLOW:
            for region in op.regions:
                _flatten(region, out, spans)
            spans[op] = len(out) - 1


def indexed_ops(function: ir.Function) -> list:
    """The ops run-time errors and profiles are indexed by: the top-level ops (``return``
    excluded), then the ops inside if/while regions in planned order (yields excluded)."""
    top = [op for op in function.body.ops if op.name != "return"]
    top_set = set(top)
    return top + [op for op in planned_ops(function.body) if op not in top_set and op.name != "yield"]


def region_arg_targets(op: ir.Operation) -> list:
    """(region argument, the value whose buffer it is) for an ``if``/``while``: an if's
    arguments are its captured operands; a while's carried arguments are its results (the
    loop state lives in the result buffers) and the others its invariant operands."""
    pairs = []
    if op.name == "if":
        for region in op.regions:
            pairs += list(zip(region.args, op.operands[1:]))
    elif op.name == "while":
        carried = op.attrs["carried"]
        targets = list(op.results) + list(op.operands[carried:])
        for region in op.regions:
            pairs += list(zip(region.args, targets))
    return pairs


def value_bytes(t: ir.TensorType) -> Dim:
    return dim_mul(t.num_elements, t.elem.nbytes)


def _aligned(size: Dim) -> Dim:
    if isinstance(size, int):
        return -(-size // ALIGN) * ALIGN
    if all(c % ALIGN == 0 for c in size.terms.values()):
        return size
    return dim_mul(dim_floordiv(dim_add(size, ALIGN - 1), ALIGN), ALIGN)


def aligned_operands(op: ir.Operation) -> set:
    """Operand indices that ``op`` reads at exactly the bytes it writes: the same shape and
    the same element width (a 4-byte result written over a 1-byte predicate would clobber
    predicates not read yet)."""
    if not op.results:
        return set()
    out = op.results[0].type
    if op.name != "fusion":
        info = CORE_OPS.get(op.name)
        if info is None or info.category != "elementwise":
            return set()
        return {i for i, v in enumerate(op.operands) if _same_layout(v.type, out)}
    if op.attrs.get("kind") != "loop":
        return set()
    region = op.regions[0]
    aligned = set()
    for i, arg in enumerate(region.args):
        if _same_layout(arg.type, out) and _only_elementwise_paths(arg, out.shape):
            aligned.add(i)
    return aligned


def _same_layout(t, out: ir.TensorType) -> bool:
    return isinstance(t, ir.TensorType) and t.shape == out.shape and t.elem.nbytes == out.elem.nbytes


def _only_elementwise_paths(value, shape) -> bool:
    frontier = [value]
    seen = set()
    while frontier:
        v = frontier.pop()
        for user, _ in v.uses:
            if user.name == "yield":
                continue
            if user in seen:
                continue
            seen.add(user)
            info = CORE_OPS.get(user.name)
            if info is None or info.category != "elementwise" or user.results[0].type.shape != shape:
                return False
            frontier.append(user.results[0])
    return True


class BufferAssign(Pass):
    name = "buffer_assign"

    def __init__(self):
        self.notes: list = []
        self.arena_bytes: Dim = 0

    def run(self, module: ir.Module) -> bool:
        self.notes = []
        changed = False
        for function in module.functions.values():
            changed |= _Planner(function).plan(self)
        return changed


class _Planner:
    """The plan of one function. Every query is answered from the use lists and from
    per-ref position lists (bisect), never by rescanning the function, so planning is
    near-linear in the number of ops (the arena's first-fit search is linear in the
    number of free slots)."""

    def __init__(self, function: ir.Function):
        self.function = function
        # An if/while's operands (captured values, loop state, invariants) and its results
        # are live over its whole span, the regions' ops that follow it in self.ops: a loop
        # reads them again in every iteration, an if writes its results at the end.
        self.span_end: dict = {}
        self.ops = planned_ops(function.body, self.span_end)
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.end = len(self.ops)
        self.returned = list(function.body.terminator.operands)
        self.buffers: dict = {}  # Value -> annotation string
        self.alias_of: dict = {}  # Value -> Value whose buffer it shares
        self.aliases: dict = {}  # Value -> [Values sharing its buffer directly] (alias_of reversed)
        self._ref_positions: dict = {}  # (ref, writes only) -> sorted top-level positions using it

    # -- liveness -----------------------------------------------------------------------
    def make_alias(self, value, target) -> None:
        self.alias_of[value] = target
        self.aliases.setdefault(target, []).append(value)

    def root(self, value):
        while value in self.alias_of:
            value = self.alias_of[value]
        return value

    def rooted_at(self, value) -> list:
        """Every value whose buffer is ``value``'s through a chain of aliases."""
        out, pending = [], list(self.aliases.get(value, ()))
        while pending:
            v = pending.pop()
            out.append(v)
            pending.extend(self.aliases.get(v, ()))
        return out

    def last_use(self, value) -> int:
        """Last top-level position reading ``value`` or any alias of it (return = end)."""
        producer = value.defining_op
        last = -1 if producer is None else self.span_end.get(producer, self.index.get(producer, -1))
        for v in [value, *self.rooted_at(value)]:
            for user, _ in v.uses:
                if user.name == "return":
                    last = max(last, self.end)
                else:
                    position = self.span_end.get(user, self.index.get(user))
                    if position is not None:
                        last = max(last, position)
        return last

    def ref_positions(self, ref_arg, writes_only: bool) -> list:
        """Sorted top-level positions of the ops using ``ref_arg`` (or only writing it:
        ``assign``/``rng`` with the ref as operand 0)."""
        key = (ref_arg, writes_only)
        positions = self._ref_positions.get(key)
        if positions is None:
            # The ref's own uses and those of the region arguments standing for it.
            names = [ref_arg] + [v for v in self.rooted_at(ref_arg) if v.is_block_arg]
            found = {self.index[op] for name in names for op, i in name.uses if op in self.index and
                     (not writes_only or (i == 0 and op.name in ("assign", "rng")))}
            for op, _ in ref_arg.uses:  # an if/while passing the ref in may use it anywhere in its span
                if op in self.span_end and (not writes_only or op_effect(op) == WRITE):
                    found |= {self.index[op], self.span_end[op]}
            positions = sorted(found)
            self._ref_positions[key] = positions
        return positions

    def ref_used_between(self, ref_arg, start: int, stop: int, writes_only: bool) -> bool:
        """Does an op at a position in (start, stop] use (or write) ``ref_arg``?"""
        positions = self.ref_positions(ref_arg, writes_only)
        k = bisect.bisect_right(positions, start)
        return k < len(positions) and positions[k] <= stop

    def writes_to_ref(self, ref_arg, start: int, stop: int) -> bool:
        """Does any op at a position in (start, stop] write ``ref_arg``?"""
        return self.ref_used_between(ref_arg, start, stop, writes_only=True)

    # -- the plan -----------------------------------------------------------------------
    def plan(self, pass_: BufferAssign) -> bool:
        for op in self.ops:
            if op.name in CONTROL_FLOW:
                for arg, target in region_arg_targets(op):
                    self.make_alias(arg, target)
        for op in self.ops:
            if op.name == "constant":
                self.buffers[op.result] = "const"
            elif op.name == "reshape" and op.operands[0].type.elem == op.result.type.elem:
                self.buffers[op.result] = "alias"
                self.make_alias(op.result, op.operands[0])
        for op in self.ops:
            if op.name == "read":
                self._plan_read(op)
        self._plan_outputs()
        self._plan_in_place_assigns()
        peak = self._plan_arena()
        for op in self.ops:
            if op.results:
                op.attrs["_buf"] = [self.buffers[r] for r in op.results]
        pass_.arena_bytes = peak
        pass_.notes.append(f"@{self.function.name}: arena {dim_str(peak)} bytes")
        return bool(self.ops)

    def _plan_read(self, op) -> None:
        ref = self.root(op.operands[0])  # a ref passed into a region: the variable's argument
        if ref not in self.function.args:
            return
        position = self.index[op]
        if not self.writes_to_ref(ref, position, self.last_use(op.result)):
            self.buffers[op.result] = "alias"
            self.make_alias(op.result, ref)

    def _plan_outputs(self) -> None:
        taken = set()
        for j, value in enumerate(self.returned):
            op = value.defining_op
            if op is None or value in taken or value in self.buffers or op.name in ("read", "assign"):
                continue
            self.buffers[value] = f"out{j}"
            taken.add(value)

    def _plan_in_place_assigns(self) -> None:
        for op in self.ops:
            if op.name != "assign":
                continue
            ref, value = op.operands
            producer = value.defining_op
            if producer is None or producer not in self.index or value in self.buffers:
                continue
            if ref not in self.function.args or producer.name in CONTROL_FLOW:
                continue  # a ref inside a region; or an if/while result (written at its end)
            if value.num_uses != 1 or not self._can_write_in_place(producer, ref, self.index[op]):
                continue
            self.buffers[value] = f"ref{self.function.args.index(ref)}"

    def _can_write_in_place(self, producer, ref, assign_position: int) -> bool:
        start = self.index[producer]
        if producer.name in ("read", "rng", "constant", "reshape") or len(producer.results) != 1:
            return False
        if self.ref_used_between(ref, start, assign_position - 1, writes_only=False):
            return False
        aligned = aligned_operands(producer)
        for alias in self.rooted_at(ref):
            last = self.last_use(alias)
            if last > start:
                return False
            if last == start:
                for i, operand in enumerate(producer.operands):
                    if self.root(operand) is ref and i not in aligned:
                        return False
        return all(self.root(operand) is not ref or i in aligned for i, operand in enumerate(producer.operands))

    def _loop_updates(self) -> dict:
        """A while loop's scatter_add into its own loop variable (a TensorArray write) that
        nothing else in the body reads, and that only the body's yield uses, writes in
        place into the loop variable's buffer: result -> the while result it then is.
        Safe: the body reads the variable nowhere else, and the condition region has run
        before the body in each iteration."""
        updates = {}
        for op in self.ops:
            if op.name != "while":
                continue
            body = op.regions[1]
            yielded = body.ops[-1].operands
            for k in range(op.attrs["carried"]):
                value, arg = yielded[k], body.args[k]
                producer = value.defining_op
                if (producer is not None and producer.parent is body and producer.name == "scatter_add"
                        and producer.operands[0] is arg and arg.num_uses == 1 and value.num_uses == 1
                        and producer.operands[1] is not arg and producer.operands[2] is not arg
                        and op.results[k].type.elem is not ir.ElemType.F16):
                    updates[value] = op.results[k]
        return updates

    def _plan_arena(self) -> Dim:
        """First fit in program order: each arena value takes the lowest-numbered slot that
        is free at its definition (or that one of its index-aligned operands frees there)
        and fits it, else a new slot."""
        pool = _SlotPool()
        slot_of: dict = {}
        loop_updates = self._loop_updates()
        for position, op in enumerate(self.ops):
            pool.advance(position)
            aligned = None
            for result in op.results:
                state = loop_updates.get(result)
                if state is not None:  # writes into the loop variable's own buffer
                    if state in self.buffers:
                        self.buffers[result] = self.buffers[state]
                    else:
                        slot_of[result] = slot_of[state]
                    continue
                if result in self.buffers:
                    continue
                size = _aligned(value_bytes(result.type))
                if aligned is None:
                    aligned = aligned_operands(op)
                chosen = self._reusable_slot(pool, slot_of, op, position, size, aligned)
                busy_until = self.last_use(result)
                if chosen is None:
                    chosen = pool.new(size, busy_until)
                else:
                    pool.take(chosen, busy_until)
                slot_of[result] = chosen
        offsets: list = []
        total: Dim = 0
        for size, _ in pool.slots:
            offsets.append(total)
            total = dim_add(total, size)
        for value, slot in slot_of.items():
            self.buffers[value] = f"arena+{dim_str(offsets[slot])}"
        return total

    def _reusable_slot(self, pool: "_SlotPool", slot_of, op, position: int, size: Dim,
                       aligned: set) -> Optional[int]:
        """The lowest slot that is free (busy only before ``position``) and fits, or that is
        busy until ``position`` only for operands ``op`` reads index-aligned."""
        best = pool.first_fit(size)
        in_place = {slot_of.get(self.root(op.operands[i])) for i in aligned} - {None}
        for index in in_place:
            slot_size, busy_until = pool.slots[index]
            if (busy_until == position and (best is None or index < best) and _fits(size, slot_size)
                    and self._slot_read_only_aligned(slot_of, index, op, aligned)):
                best = index
        return best

    def _slot_read_only_aligned(self, slot_of, slot: int, op, aligned: set) -> bool:
        for i, operand in enumerate(op.operands):
            if slot_of.get(self.root(operand)) == slot and i not in aligned:
                return False
        return True


class _SlotPool:
    """The arena's slots (``[size, busy_until]``) and which are free, for first-fit queries
    in O(log slots): a slot is free at ``position`` when ``busy_until < position``.

    A static size fits a free static slot at least as large (a segment tree of the free
    static slots' sizes finds the lowest such index); a symbolic size fits only a free
    slot of the very same size (a heap of free indices per size)."""

    def __init__(self):
        self.slots: list = []  # [size, busy_until]
        self._free: list = []  # per slot
        self._busy: list = []  # heap of (busy_until, index); stale entries are skipped
        self._by_size: dict = {}  # symbolic size -> heap of free indices (stale entries skipped)
        self._tree = _MaxTree()  # static slots: size when free, -1 when busy

    def advance(self, position: int) -> None:
        """Free every slot whose value's last use is before ``position``."""
        busy = self._busy
        while busy and busy[0][0] < position:
            busy_until, index = heapq.heappop(busy)
            if not self._free[index] and self.slots[index][1] == busy_until:
                self._free[index] = True
                size = self.slots[index][0]
                if isinstance(size, int):
                    self._tree.set(index, size)
                else:
                    heapq.heappush(self._by_size.setdefault(size, []), index)

    def first_fit(self, size: Dim) -> Optional[int]:
        if isinstance(size, int):
            return self._tree.leftmost_at_least(size)
        heap = self._by_size.get(size)
        while heap and not self._free[heap[0]]:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def take(self, index: int, busy_until: int) -> None:
        if self._free[index]:
            self._free[index] = False
            if isinstance(self.slots[index][0], int):
                self._tree.set(index, -1)
        self.slots[index][1] = busy_until
        heapq.heappush(self._busy, (busy_until, index))

    def new(self, size: Dim, busy_until: int) -> int:
        index = len(self.slots)
        self.slots.append([size, busy_until])
        self._free.append(False)
        heapq.heappush(self._busy, (busy_until, index))
        return index


class _MaxTree:
    """Values by index (growing), default -1; the lowest index whose value is >= x."""

    def __init__(self):
        self._capacity = 1
        self._tree = [-1, -1]

    def set(self, index: int, value: int) -> None:
        while index >= self._capacity:
            self._grow()
        node = self._capacity + index
        tree = self._tree
        tree[node] = value
        node //= 2
        while node:
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
            node //= 2

    def leftmost_at_least(self, x: int) -> Optional[int]:
        tree = self._tree
        if tree[1] < x:
            return None
        node = 1
        while node < self._capacity:
            node = 2 * node if tree[2 * node] >= x else 2 * node + 1
        return node - self._capacity

    def _grow(self) -> None:
        old, capacity = self._tree[self._capacity:], self._capacity * 2
        tree = [-1] * (2 * capacity)
        tree[capacity:capacity + len(old)] = old
        for node in range(capacity - 1, 0, -1):
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
        self._capacity, self._tree = capacity, tree


def _fits(size: Dim, slot_size: Dim) -> bool:
    if size == slot_size:
        return True
    return isinstance(size, int) and isinstance(slot_size, int) and size <= slot_size


def parse_buffer(annotation: str):
    """('const'|'alias'|'out'|'ref'|'arena', index or offset Dim)."""
    if annotation in ("const", "alias"):
        return annotation, None
    if annotation.startswith("arena+"):
        return "arena", parse_dim(annotation[len("arena+"):])
    for kind in ("out", "ref"):
        if annotation.startswith(kind):
            return kind, int(annotation[len(kind):])
    raise ValueError(f"bad buffer annotation {annotation!r}")


def arena_bytes(function: ir.Function) -> Dim:
    """The arena size a planned function needs: the sizes of its slots added up.

    Slots lie one after another, each as large as the first value placed in it (a later
    value fits: a smaller static size, or the same symbolic size), so grouping the arena
    values by offset and adding up each group's largest size gives exactly the planned
    total. (Taking the largest ``offset + size`` instead needs symbolic comparisons that
    cannot be decided, e.g. ``128*s0-128`` vs ``64*s0-64``, and once picked the smaller:
    the program then wrote past the end of its arena.)"""
    slots: dict = {}  # offset text -> the largest value size at that offset
    for op in planned_ops(function.body):
        for result, annotation in zip(op.results, op.attrs.get("_buf", [])):
            kind, offset = parse_buffer(annotation)
            if kind == "arena":
                size = _aligned(value_bytes(result.type))
                key = dim_str(offset)
                slots[key] = size if key not in slots else _larger(slots[key], size)
    total: Dim = 0
    for size in slots.values():
        total = dim_add(total, size)
    return total


def _larger(a: Dim, b: Dim) -> Dim:
    """The larger of two sizes that share a slot (one of them when they are equal or one
    provably dominates; their sum, a safe bound, otherwise)."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if _dominates(a, b):
        return a
    if _dominates(b, a):
        return b
    return dim_add(a, b)


def _dominates(a: Dim, b: Dim) -> bool:
    diff = dim_add(a, dim_mul(b, -1))
    if isinstance(diff, int):
        return diff >= 0
    return all(c >= 0 for c in diff.terms.values())
