"""The IR's data structures: values, operations, blocks, functions, modules.

Structure, not semantics: what each op means lives in ``ops.py`` (the core op table);
how it prints in ``printer.py``; how it evaluates in ``evaluator.py``.

Use lists, as in MLIR: every value knows its uses, ``(op, operand index)`` pairs, kept up
to date by every change of an op's operands (constructing an op, assigning
``op.operands`` or one of its items, :meth:`Operation.erase`). So ``value.uses`` is O(1)
to reach and :meth:`Value.replace_all_uses_with` costs the number of uses, not the size
of the function: passes never rescan a function to find who reads a value.

An op uses its operands from its construction until it is erased (``op.erase()``, or
``Block.remove``, which erases). An op that is built but never placed (a rewrite that is
dropped) must be erased too, or it stays a user. ``Block.detach`` takes an op out of its
block but keeps it a user (to move it elsewhere).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from .types import RefType, TensorType, Type


@dataclass(frozen=True)
class Location:
    """Where the user created the graph node: ``loc("name"("file.py":12))``."""

    file: Optional[str] = None
    line: Optional[int] = None
    name: Optional[str] = None

    def __str__(self) -> str:
        parts = []
        if self.name:
            parts.append(self.name)
        if self.file:
            parts.append(f"{self.file}:{self.line}")
        return " at ".join(parts) if parts else "<unknown>"


class Value:
    """An SSA value: an op result or a block argument."""

    __slots__ = ("type", "owner", "index", "name_hint", "_uses")

    def __init__(self, type: Type, owner: Any = None, index: int = 0, name_hint: Optional[str] = None):
        self.type = type
        self.owner = owner  # Operation (result) or Block (argument)
        self.index = index
        self.name_hint = name_hint
        # (user op, operand index) -> None: an insertion-ordered set, O(1) add and remove.
        self._uses: dict = {}

    # -- uses ----------------------------------------------------------------------------
    @property
    def uses(self) -> list:
        """``[(op, operand_index), ...]``: every operand slot that reads this value, in the
        order the uses were made."""
        return list(self._uses)

    @property
    def users(self) -> list:
        """The distinct ops that read this value (an op using it twice appears once)."""
        return list(dict.fromkeys(op for op, _ in self._uses))

    @property
    def num_uses(self) -> int:
        return len(self._uses)

    @property
    def has_uses(self) -> bool:
        return bool(self._uses)

    def replace_all_uses_with(self, new: "Value") -> int:
        """Make every use of this value read ``new``; returns how many uses moved. Costs the
        number of uses."""
        if new is self:
            return 0
        moved = list(self._uses)
        for op, index in moved:
            op._operands[index] = new
        return len(moved)

    @property
    def defining_op(self) -> Optional["Operation"]:
        return self.owner if isinstance(self.owner, Operation) else None

    @property
    def is_block_arg(self) -> bool:
        return isinstance(self.owner, Block)

    def __repr__(self) -> str:
        where = self.owner.name if isinstance(self.owner, Operation) else "arg"
        return f"<Value {self.name_hint or ''} {where}#{self.index}: {self.type}>"


class OperandList(list):
    """An op's operands: a list that keeps each value's use list in step with its items.

    Reading is a plain list's; every mutation (item or slice assignment, append, insert,
    pop, ...) unregisters the old values' uses and registers the new ones'."""

    __slots__ = ("_op",)

    def __init__(self, op: "Operation", values: Sequence[Value] = ()):
        list.__init__(self, values)
        self._op = op
        for i, v in enumerate(self):
            v._uses[(op, i)] = None

    def _drop(self) -> None:
        op = self._op
        for i, v in enumerate(self):
            v._uses.pop((op, i), None)

    def _add(self) -> None:
        op = self._op
        for i, v in enumerate(self):
            v._uses[(op, i)] = None

    def _assign(self, values) -> None:
        """Replace the contents; only slots whose value changes touch use lists."""
        values = list(values)
        op = self._op
        if len(values) == len(self):
            for i, (old, new) in enumerate(zip(self, values)):
                if old is not new:
                    old._uses.pop((op, i), None)
                    new._uses[(op, i)] = None
                    list.__setitem__(self, i, new)
            return
        self._drop()
        list.__setitem__(self, slice(None), values)
        self._add()

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):
            items = list(self)
            items[index] = value
            self._assign(items)
            return
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("operand index out of range")
        old = list.__getitem__(self, i)
        if old is value:
            return
        op = self._op
        old._uses.pop((op, i), None)
        value._uses[(op, i)] = None
        list.__setitem__(self, i, value)

    def _rebuild(method):  # noqa: N805 - a decorator for the mutators that shift slots
        def wrapper(self, *args):
            self._drop()
            try:
                return method(self, *args)
            finally:
                self._add()

        wrapper.__name__ = method.__name__
        return wrapper

    __delitem__ = _rebuild(list.__delitem__)
    __iadd__ = _rebuild(list.__iadd__)
    __imul__ = _rebuild(list.__imul__)
    append = _rebuild(list.append)
    extend = _rebuild(list.extend)
    insert = _rebuild(list.insert)
    pop = _rebuild(list.pop)
    remove = _rebuild(list.remove)
    clear = _rebuild(list.clear)
    sort = _rebuild(list.sort)
    reverse = _rebuild(list.reverse)
    del _rebuild

    def __reduce_ex__(self, protocol):
        raise TypeError("an op's operand list cannot be pickled on its own")


class Operation:
    """One IR operation: a core op name, operands, typed results, attributes,
    optional regions (fusion bodies) and a source location."""

    __slots__ = ("name", "_operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(
        self,
        name: str,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attrs: Optional[dict] = None,
        regions: Sequence["Block"] = (),
        loc: Optional[Location] = None,
    ):
        self.name = name
        self._operands = OperandList(self, operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions)
        for region in self.regions:
            region.parent_op = self
        self.loc = loc
        self.parent: Optional[Block] = None

    @property
    def operands(self) -> "OperandList":
        """The operand values (a list; assigning it or its items keeps the use lists)."""
        return self._operands

    @operands.setter
    def operands(self, values: Sequence[Value]) -> None:
        self._operands._assign(values)

    def drop_references(self) -> None:
        """Stop using operands: this op's and those of every op nested in its regions."""
        for op in self.walk():
            op._operands._assign(())

    def erase(self) -> None:
        """Take the op out of its block (if any) and drop its references (and its regions').

        Its results should have no uses left outside it; uses that remain still point at
        the erased op's results (the verifier reports them as undefined values)."""
        if self.parent is not None:
            self.parent.detach(self)
        self.drop_references()

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"op '{self.name}' has {len(self.results)} results, not 1")
        return self.results[0]

    @property
    def result_types(self) -> list:
        return [r.type for r in self.results]

    def walk(self) -> Iterator["Operation"]:
        """This op, then every op nested in its regions (pre-order)."""
        yield self
        for region in self.regions:
            for op in region.ops:
                yield from op.walk()

    def __repr__(self) -> str:
        return f"<Operation {self.name} -> {', '.join(map(str, self.result_types))}>"


class Block:
    """A list of operations with typed arguments; the last op is a terminator."""

    __slots__ = ("args", "ops", "parent_op")

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[Optional[str]] = ()):
        names = list(arg_names) + [None] * (len(arg_types) - len(arg_names))
        self.args = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent_op: Optional[Operation] = None

    def add_arg(self, type: Type, name: Optional[str] = None) -> Value:
        value = Value(type, self, len(self.args), name)
        self.args.append(value)
        return value

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def remove(self, op: Operation) -> None:
        """Erase ``op``: take it out of this block and drop its references (O(block size);
        to delete many ops use :meth:`erase_ops`)."""
        self.detach(op)
        op.drop_references()

    def detach(self, op: Operation) -> None:
        """Take ``op`` out of this block; it keeps its operands (and stays their user)."""
        self.ops.remove(op)
        op.parent = None

    def erase_ops(self, ops) -> None:
        """Erase every op of this block that is in ``ops`` (a set), in one pass."""
        if not ops:
            return
        kept = []
        for op in self.ops:
            if op in ops:
                op.parent = None
                op.drop_references()
            else:
                kept.append(op)
        self.ops = kept

    @property
    def terminator(self) -> Operation:
        if not self.ops or self.ops[-1].name not in ("return", "yield"):
            raise ValueError("block has no terminator")
        return self.ops[-1]

    def uses(self) -> dict:
        """{Value: [(op, operand_index), ...]} over this block and nested regions.

        A scan of the whole block: prefer ``value.uses`` (the use list, O(1)). This table
        only counts users inside the block, which matters for values used elsewhere."""
        table: dict = {}
        for top in self.ops:
            for op in top.walk():
                for i, operand in enumerate(op.operands):
                    table.setdefault(operand, []).append((op, i))
        return table

    def contains(self, op: Operation) -> bool:
        """Is ``op`` in this block or nested in the region of one of its ops?"""
        block = op.parent
        while block is not None:
            if block is self:
                return True
            parent_op = block.parent_op
            block = parent_op.parent if parent_op is not None else None
        return False

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make the uses of ``old`` inside this block (and its regions) read ``new``; costs
        the number of uses of ``old`` (times the region depth), not the block's size."""
        if new is old:
            return
        for op, index in old.uses:
            if self.contains(op):
                op.operands[index] = new


class Function:
    """``func @name(args) -> (types) { ... return ... }``."""

    __slots__ = ("name", "body")

    def __init__(self, name: str, arg_types: Sequence[Type] = (), arg_names: Sequence[Optional[str]] = ()):
        self.name = name
        self.body = Block(arg_types, arg_names)

    @property
    def args(self) -> list[Value]:
        return self.body.args

    @property
    def result_types(self) -> list:
        return [v.type for v in self.body.terminator.operands]

    @property
    def results(self) -> list[Value]:
        return list(self.body.terminator.operands)

    def walk(self) -> Iterator[Operation]:
        for op in self.body.ops:
            yield from op.walk()

    def op_count(self) -> int:
        """Ops of the body and of every nested region, terminators not counted."""
        return _count_ops(self.body)


def _count_ops(block: "Block") -> int:
    ops = block.ops
    count = len(ops)
    for op in ops:
        if op.regions:
            for region in op.regions:
                count += _count_ops(region)
        elif op.name == "return" or op.name == "yield":
            count -= 1
    return count


class Module:
    """An ordered collection of functions; ``main`` is the program entry."""

    __slots__ = ("functions",)

    def __init__(self, functions: Sequence[Function] = ()):
        self.functions: dict[str, Function] = {}
        for f in functions:
            self.add(f)

    def add(self, function: Function) -> Function:
        if function.name in self.functions:
            raise ValueError(f"duplicate function @{function.name}")
        self.functions[function.name] = function
        return function

    @property
    def main(self) -> Function:
        return self.functions["main"]

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)

    def op_count(self) -> int:
        return sum(f.op_count() for f in self.functions.values())


class Builder:
    """Appends ops to a block, inferring result types from the core op table."""

    def __init__(self, block: Block, loc: Optional[Location] = None):
        self.block = block
        self.loc = loc

    def op(
        self,
        name: str,
        operands: Sequence[Value] = (),
        attrs: Optional[dict] = None,
        result_types: Optional[Sequence[Type]] = None,
        regions: Sequence[Block] = (),
        loc: Optional[Location] = None,
    ) -> Operation:
        from .ops import infer_result_types

        attrs = dict(attrs or {})
        if result_types is None:
            result_types = infer_result_types(name, [v.type for v in operands], attrs)
        op = Operation(name, operands, result_types, attrs, regions, loc or self.loc)
        return self.block.append(op)

    def value(self, name: str, operands: Sequence[Value] = (), attrs: Optional[dict] = None,
              result_type: Optional[Type] = None, loc: Optional[Location] = None) -> Value:
        """Build a single-result op and return its result."""
        types = None if result_type is None else [result_type]
        return self.op(name, operands, attrs, types, loc=loc).result


def tensor_type_of(t: Type) -> TensorType:
    return t.tensor if isinstance(t, RefType) else t
