"""Fusion: group ops into kernels, XLA-style, recording every decision and refusal.

Three kinds of fusion, each a ``fusion`` op whose region holds the members:

- ``loop``: elemental ops (elementwise math, broadcast, reshape, transpose, slice, pad,
  concatenate, reverse, iota, small constants). One loop nest computes the root's
  elements; every member is evaluated per element, so nothing in between is stored.
- ``input``: a ``reduce`` root with its elemental producers (a reduction reads its
  operand expression directly instead of a materialised tensor).
- ``output``: a ``dot``/``conv`` root with an elementwise epilogue of the contraction's
  result (bias add, activation, residual add) applied while writing the result.
- ``row``: a loop fusion that also holds reductions over the trailing dims of its own
  shape, whose results it broadcasts back along those dims (softmax, layer norm): one
  kernel walks each row, reduces it, and writes it while it is still in cache.

Why it is safe: members are pure; the fusion op is placed where its root was, after every
value it reads; a member's result is used only inside the fusion (the root is yielded),
except for ops cheap enough to recompute (broadcasts, index remaps, iota), which are
duplicated into each fusion that needs them while the original stays for other users.
Ops with effects (read, assign, rng), results returned by the function, and contraction
operands always stay materialised.

Greedy in reverse program order: an op joins the fusion of its consumers when all of them
are in one fusion that accepts it; otherwise it starts a fusion of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from tfc import ir
from tfc.ir.ops import CONTROL_FLOW, CORE_OPS

from .manager import Pass

ELEMENTAL_SHAPE_OPS = {"broadcast", "reshape", "transpose", "slice", "pad", "concatenate", "reverse"}
GENERATORS = {"constant", "iota", "dims"}
CHEAP_TO_DUPLICATE = {"constant", "iota", "dims", "broadcast", "reshape", "transpose", "slice", "reverse",
                      "convert"}
CONTRACTIONS = {"dot", "conv"}
MAX_FUSION_SIZE = 96
MAX_CLONED_CONSTANT_ELEMENTS = 64


def is_elemental(op: ir.Operation) -> bool:
    if op.name == "constant":
        value = op.attrs["value"]
        return value.size <= MAX_CLONED_CONSTANT_ELEMENTS or value.size == 1
    info = CORE_OPS.get(op.name)
    return info is not None and (info.category == "elementwise" or op.name in ELEMENTAL_SHAPE_OPS
                                 or op.name in GENERATORS)


@dataclass
class Group:
    """A fusion being grown: its root (the op whose result it yields) and members."""

    gid: int
    kind: str  # loop, input, output
    root: ir.Operation
    members: list = field(default_factory=list)  # in program order after finish()
    core: Optional[ir.Operation] = None  # the dot/conv of an output fusion
    row_dims: int = 0  # a row fusion: how many trailing dims its reductions remove


@dataclass
class Decision:
    """One fusion decision, for ``tfc dump-ir --fusion-report``."""

    op: ir.Operation
    fused: bool
    group: Optional[int]
    reason: str


class Fusion(Pass):
    name = "fusion"

    def __init__(self, max_size: int = MAX_FUSION_SIZE):
        self.max_size = max_size
        self.decisions: list = []
        self.kernels: list = []  # [(fusion op, kind, [member ops])]
        self.notes: list = []

    def run(self, module: ir.Module) -> bool:
        self.decisions, self.kernels, self.notes = [], [], []
        changed = False
        for function in module.functions.values():
            changed |= self._run_function(function)
        return changed

    # -- grouping ----------------------------------------------------------------------
    def _run_function(self, function: ir.Function) -> bool:
        return self._run_block(function.body)

    def _run_block(self, body: ir.Block) -> bool:
        """Fuse ``body`` (the function's, or an if/while region: fusion happens inside
        branches and loop bodies, never across their boundaries)."""
        changed = False
        for op in body.ops:
            if op.name in CONTROL_FLOW:
                for region in op.regions:
                    changed |= self._run_block(region)
        ops = [op for op in body.ops if op.name not in ("return", "yield")]
        uses = body.uses()
        returned = set(body.terminator.operands)
        group_of: dict = {}  # op -> list of groups containing it (several when duplicated)
        groups: list = []
        for op in reversed(ops):
            self._place(op, uses, returned, group_of, groups)
        fusible = [g for g in groups if len(g.members) > 1]
        if fusible:
            self._build_all(body, fusible)
        return changed or bool(fusible)

    def _consumer_groups(self, op, uses, group_of) -> tuple:
        """(groups of all consumers, whether some consumer is outside any group)."""
        consumer_groups: list = []
        outside = False
        for result in op.results:
            for user, _ in uses.get(result, []):
                user_groups = group_of.get(user)
                if not user_groups:
                    outside = True
                    continue
                for g in user_groups:
                    if g not in consumer_groups:
                        consumer_groups.append(g)
        return consumer_groups, outside

    def _place(self, op, uses, returned, group_of, groups) -> None:
        if op.name in CONTRACTIONS or op.name == "reduce" or is_elemental(op):
            target = self._join_target(op, uses, returned, group_of)
            if target is not None:
                for g in target:
                    self._add(g, op, group_of)
                return
            self._start_group(op, groups, group_of)

    def _join_target(self, op, uses, returned, group_of) -> Optional[list]:
        consumers, outside = self._consumer_groups(op, uses, group_of)
        if not consumers:
            return None
        if any(r in returned for r in op.results):
            self._refuse(op, consumers[0], "its result is returned by the program, so it is materialised")
            return None
        if op.name in CONTRACTIONS:
            return self._contraction_target(op, consumers, outside, uses)
        if op.name == "reduce":
            reason = self._row_reduction_refusal(op, consumers, outside, uses)
            if reason is None:
                consumers[0].kind = "row"
                consumers[0].row_dims = len(op.attrs["dims"])
                return consumers
            self._refuse(op, consumers[0], reason)
            return None
        for g in consumers:
            if g.core is not None and any(user is g.core for r in op.results for user, _ in uses.get(r, [])):
                self._refuse(op, g, f"it is an operand of the {g.core.name}, which reads materialised buffers")
                return None
            if len(g.members) >= self.max_size:
                self._refuse(op, g, f"fusion is at its size limit ({self.max_size} ops)")
                return None
        if len(consumers) == 1 and not outside:
            return consumers
        if op.name in CHEAP_TO_DUPLICATE:
            return consumers
        where = "ops outside any fusion" if outside else f"{len(consumers)} fusions"
        self._refuse(op, consumers[0], f"its result is used by {where} and '{op.name}' is too costly to duplicate")
        return None

    def _row_reduction_refusal(self, op, consumers, outside, uses) -> Optional[str]:
        """None if ``op`` (a reduce) can join its consumers' fusion as a row reduction."""
        g = consumers[0]
        if outside or len(consumers) != 1 or g.kind not in ("loop", "row") or g.core is not None:
            return "a reduction is the root of its own input fusion"
        operand = op.operands[0].type
        dims = sorted(op.attrs["dims"])
        trailing = list(range(operand.rank - len(dims), operand.rank))
        if dims != trailing or operand.shape != g.root.results[0].type.shape:
            return "a reduction is the root of its own input fusion (not a row reduction of the fusion's shape)"
        if g.kind == "row" and g.row_dims != len(dims):
            return "the row fusion reduces a different number of trailing dims"
        outer = tuple(operand.shape[:operand.rank - len(dims)])
        reason = _row_misalignment(op, g, uses, outer, tuple(operand.shape))
        if reason is not None:
            return f"a reduction is the root of its own input fusion ({reason})"
        if len(g.members) >= self.max_size:
            return f"fusion is at its size limit ({self.max_size} ops)"
        return None

    def _contraction_target(self, op, consumers, outside, uses) -> Optional[list]:
        g = consumers[0]
        if outside or len(consumers) != 1:
            self._refuse(op, g, "its result has users outside one elementwise epilogue")
            return None
        if g.kind != "loop" or g.core is not None:
            self._refuse(op, g, f"the consuming fusion is a {g.kind} fusion, not an elementwise epilogue")
            return None
        if not self._is_epilogue(g, op, uses):
            self._refuse(op, g, "the consuming fusion reshapes, transposes or broadcasts the result")
            return None
        return consumers

    def _is_epilogue(self, g: Group, core: ir.Operation, uses) -> bool:
        """Every path from the contraction to the root is elementwise at the same shape."""
        shape = core.result.type.shape
        if g.root.result_types[0] != core.result.type:
            return False
        frontier = [core.result]
        seen = set()
        while frontier:
            value = frontier.pop()
            for user, _ in uses.get(value, []):
                if user in seen or user not in g.members:
                    continue
                seen.add(user)
                info = CORE_OPS[user.name]
                if info.category != "elementwise" or user.result.type.shape != shape:
                    return False
                frontier.append(user.result)
        return True

    def _start_group(self, op, groups, group_of) -> None:
        kind = "input" if op.name == "reduce" else "output" if op.name in CONTRACTIONS else "loop"
        g = Group(len(groups), kind, op)
        if op.name in CONTRACTIONS:
            g.core = op
        g.members.append(op)
        groups.append(g)
        group_of.setdefault(op, []).append(g)

    def _add(self, g: Group, op, group_of) -> None:
        g.members.append(op)
        group_of.setdefault(op, []).append(g)
        if op.name in CONTRACTIONS:
            g.kind = "output"
            g.core = op
        self.decisions.append(Decision(op, True, g.gid, f"fused into {g.kind} fusion #{g.gid}"))

    def _refuse(self, op, g: Optional[Group], reason: str) -> None:
        self.decisions.append(Decision(op, False, None if g is None else g.gid, reason))

    # -- materialising groups as fusion ops ----------------------------------------------
    def _build_all(self, body: ir.Block, groups: list) -> None:
        """Replace every group by a fusion op at its root's place, then erase the originals
        nobody reads any more, in one pass over the block (use lists, no rescans)."""
        order = {op: i for i, op in enumerate(body.ops)}
        fusion_at: dict = {}  # root -> its fusion op
        for g in groups:
            members = sorted(set(g.members), key=order.__getitem__)
            fusion = self._fusion_op(g, members)
            g.root.results[0].replace_all_uses_with(fusion.result)
            fusion_at[g.root] = fusion
            self.kernels.append((fusion, g.kind, members))
        grouped = {op for g in groups for op in g.members}
        dead = set(fusion_at)
        for op in reversed(body.ops):  # users come after their producers
            if op in grouped and op not in dead and all(user in dead for r in op.results for user in r.users):
                dead.add(op)
        placed = []
        for op in body.ops:
            fusion = fusion_at.get(op)
            if fusion is not None:
                fusion.parent = body
                placed.append(fusion)
            placed.append(op)
        body.ops = placed
        body.erase_ops(dead)

    @staticmethod
    def _fusion_op(g: Group, members: list) -> ir.Operation:
        """A fusion op whose region clones ``members`` (in program order) and yields the root."""
        member_set = set(members)
        inputs: list = []
        for op in members:
            for v in op.operands:
                if v.defining_op not in member_set and v not in inputs:
                    inputs.append(v)
        region = ir.Block([v.type for v in inputs], [None] * len(inputs))
        mapping = dict(zip(inputs, region.args))
        for op in members:
            clone = ir.Operation(op.name, [mapping[v] for v in op.operands], op.result_types, dict(op.attrs),
                                 loc=op.loc)
            region.append(clone)
            for old, new in zip(op.results, clone.results):
                mapping[old] = new
        region.append(ir.Operation("yield", [mapping[g.root.results[0]]]))
        fusion = ir.Operation("fusion", inputs, [g.root.results[0].type], {"kind": g.kind}, [region], loc=g.root.loc)
        fusion.regions[0].parent_op = fusion
        return fusion

    # -- reporting ---------------------------------------------------------------------------
    def report(self) -> str:
        """Each fused kernel with its members and their source lines, then the refusals."""
        lines = []
        for index, (fusion, kind, members) in enumerate(self.kernels):
            lines.append(f"kernel #{index}: {kind} fusion of {len(members)} ops -> {fusion.result.type}")
            for op in members:
                lines.append(f"    {op.name:<12} {_where(op.loc)}")
        refusals = [d for d in self.decisions if not d.fused]
        if refusals:
            lines.append("not fused:")
            for d in refusals:
                lines.append(f"    {d.op.name:<12} {_where(d.op.loc)}: {d.reason}")
        return "\n".join(lines) if lines else "no fusion opportunities"


def _row_misalignment(reduce_op, g: Group, uses, outer: tuple, full: tuple) -> Optional[str]:
    """Why the row kernel cannot compute ``g`` with ``reduce_op`` held in a register per
    row, or None if it can.

    The row kernel reduces row r, then evaluates every member at the elements of row r,
    reading the reduction's value for row r only. That is right only if every value
    derived from the reduction, at any element, depends on the reduction at that
    element's own row. Walking forward from the reduction, a derived value is either
    row-shaped (the outer dims, maybe with trailing 1s: ``max(x, 1)``, keep_dims) or
    full-shaped; the ops that keep it row-aligned are elementwise ops and trailing-1
    reshapes on row-shaped values, a broadcast that maps the row dims onto themselves,
    elementwise ops on full-shaped values, and a later row reduction of a full-shaped
    value. A transpose, slice, reverse, pad, concatenate, a broadcast along other axes
    or any other reshape reads another row's element (``s + transpose(s)``, ``s + s[0]``,
    ``x - reduce_max(x, 1)`` broadcast along the columns).
    """
    def row_shaped(shape) -> bool:
        shape = tuple(shape)
        while len(shape) > len(outer) and shape[-1] == 1:
            shape = shape[:-1]
        return shape == outer

    def keeps_rows(broadcast) -> bool:
        dims = broadcast.attrs["dims"]
        return all(d == k if k < len(outer) else d >= len(outer) for k, d in enumerate(dims))

    root_value = g.root.results[0]
    frontier = [(reduce_op.result, "row")]
    seen = set()
    while frontier:
        value, form = frontier.pop()
        for user, _ in uses.get(value, []):
            if user not in g.members:
                if value is root_value:
                    continue
                return f"'{user.name}' outside the fusion reads a value derived from it"
            if (user, form) in seen:
                continue
            seen.add((user, form))
            result_shape = tuple(user.results[0].type.shape)
            next_form = _row_aligned_form(user, form, result_shape, row_shaped, keeps_rows, full)
            if next_form is None:
                return f"'{user.name}' reads a value derived from it at another row"
            frontier.append((user.results[0], next_form))
    return None


def _row_aligned_form(user, form: str, result_shape: tuple, row_shaped, keeps_rows, full: tuple) -> Optional[str]:
    """The form ("row" or "full") of ``user``'s result when it reads a row-aligned value
    of ``form``, or None when ``user`` reads across rows."""
    elementwise = CORE_OPS[user.name].category == "elementwise"
    if form == "row":
        if (elementwise or user.name == "reshape") and row_shaped(result_shape):
            return "row"
        if user.name == "broadcast" and result_shape == full and keeps_rows(user):
            return "full"
        return None
    if (elementwise or user.name == "reshape") and result_shape == full:
        return "full"
    if user.name == "reduce" and row_shaped(result_shape):
        operand_rank = len(full)
        count = len(user.attrs["dims"])
        if sorted(user.attrs["dims"]) == list(range(operand_rank - count, operand_rank)):
            return "row"
    return None


def _where(loc: Optional[ir.Location]) -> str:
    if loc is None:
        return "(no location)"
    return str(loc)
