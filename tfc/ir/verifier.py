"""Structural and type checks of IR modules and functions.

``verify(module_or_function)`` raises :class:`VerifyError` at the first problem found.
The message names the function, the op (printed by ``print_op``), its location and the
problem::

    @main: 'add' at mlp.py:10: add operands must have identical types, ...
        %3 = add %1, %2 : f32[4] loc("mlp.py":10)

What is checked: SSA dominance (a fusion region sees only its own arguments and values
defined inside it), single definition, terminators, op names, operand counts, attribute
presence, kinds and choices, result types (``infer``/``check`` of the op table), fusion
and call signatures, symbol binding by the function's arguments, and refs appearing only
as function arguments.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .core import Block, Function, Location, Module, Operation
from .dims import SymExpr, dim_symbols
from .ops import (BOOL, CALLEE, CONTROL_FLOW, CORE_OPS, DENSE, DIM_LIST, DIMS, FLOAT, INT, INT_PAIRS, INTS, PURE, STR,
                  STRS, IRTypeError, OpInfo, attr_kinds, check_arity)
from .types import ElemType, RefType, TensorType

# Exceptions a type rule may raise on malformed operands or attributes.
_RULE_ERRORS = (IRTypeError, ValueError, TypeError, KeyError, IndexError, ZeroDivisionError)


class VerifyError(ValueError):
    """An IR invariant does not hold; ``.op``, ``.function`` and ``.problem`` say where and what."""

    def __init__(self, problem: str, op: Optional[Operation] = None, function: Optional[str] = None):
        self.problem = problem
        self.op = op
        self.function = function
        self.loc = op.loc if op is not None else None
        super().__init__(_format_message(problem, op, function))


def _format_message(problem: str, op: Optional[Operation], function: Optional[str]) -> str:
    from .printer import print_op

    head = f"@{function}: " if function is not None else ""
    if op is None:
        return head + problem
    where = describe_location(op.loc)
    where = f" {where}" if where else ""
    return f"{head}'{op.name}'{where}: {problem}\n    {print_op(op)}"


def describe_location(loc: Optional[Location]) -> str:
    """``at file.py:12 (node "name")``, ``at file.py:12``, ``(node "name")`` or ''."""
    if loc is None:
        return ""
    parts = []
    if loc.file is not None:
        parts.append(f"at {loc.file}:{loc.line}")
    if loc.name:
        parts.append(f'(node "{loc.name}")')
    return " ".join(parts)


def verify(target) -> None:
    """Check a Module (every function, calls against the module) or a single Function."""
    if isinstance(target, Module):
        for name, func in target.functions.items():
            if name != func.name:
                raise VerifyError(f"module lists function @{func.name} under the name @{name}", function=name)
            _FunctionVerifier(func, target).run()
    elif isinstance(target, Function):
        _FunctionVerifier(target, None).run()
    else:
        raise TypeError(f"verify takes a Module or a Function, got {type(target).__name__}")


# -- attribute kinds -----------------------------------------------------------------------
def _is_annotation(v) -> bool:
    """Attributes named ``_...`` are pass annotations (e.g. buffer assignment): strings."""
    return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_list(v) -> bool:
    return isinstance(v, (list, tuple))


def _is_dims(v) -> bool:
    return _is_list(v) and all(_is_int(d) or isinstance(d, SymExpr) for d in v)


_KIND_CHECKS = {
    INT: (_is_int, "an integer"),
    INTS: (lambda v: _is_list(v) and all(_is_int(x) for x in v), "a list of integers"),
    DIMS: (_is_dims, "a list of dims"),
    DIM_LIST: (_is_dims, "a list of dims"),
    INT_PAIRS: (lambda v: _is_list(v) and all(_is_list(x) and all(_is_int(y) for y in x) for x in v),
                "a list of integer lists"),
    BOOL: (lambda v: isinstance(v, (bool, np.bool_)), "a bool"),
    STR: (lambda v: isinstance(v, str), "a string"),
    STRS: (lambda v: _is_list(v) and all(isinstance(x, str) for x in v), "a list of strings"),
    FLOAT: (lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool),
            "a number"),
    DENSE: (lambda v: isinstance(v, np.ndarray), "a numpy array"),
    CALLEE: (lambda v: isinstance(v, str), "a function name"),
}


def _attr_symbols(value) -> set:
    """Symbols in an attribute value (dims, nested lists)."""
    if isinstance(value, SymExpr):
        return value.symbols()
    if _is_list(value):
        out: set = set()
        for v in value:
            out |= _attr_symbols(v)
        return out
    return set()


def _plain_symbols(t) -> set:
    """Symbols that are a whole dim of the type (``s0`` in ``f32[s0,4]``, not in ``2*s0``)."""
    tensor = t.tensor if isinstance(t, RefType) else t
    out = set()
    for d in tensor.shape:
        if isinstance(d, SymExpr) and d.is_symbol():
            (monomial,) = d.terms
            out.add(monomial[0])
    return out


def _type_symbols(t) -> set:
    tensor = t.tensor if isinstance(t, RefType) else t
    out: set = set()
    for d in getattr(tensor, "shape", ()):
        out |= dim_symbols(d)
    return out


def _types_text(types) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


# -- the function verifier -----------------------------------------------------------------
class _FunctionVerifier:
    def __init__(self, func: Function, module: Optional[Module]):
        self.func = func
        self.module = module
        self.defined: set = set()
        self.bound: set = set()
        self.ops: set = set()
        self._type_symbols: dict = {}

    def fail(self, problem: str, op: Optional[Operation] = None) -> VerifyError:
        return VerifyError(problem, op, self.func.name)

    def run(self) -> None:
        self.check_arguments()
        body = self.func.body
        if not body.ops or body.ops[-1].name != "return":
            raise self.fail("function body must end with 'return'")
        self.verify_block(body, None)
        self.check_use_lists()

    def check_use_lists(self) -> None:
        """Every use recorded on a value of the function is by an op of the function."""
        for value in self.defined:
            for user, index in value._uses:
                if user in self.ops and index < len(user.operands) and user.operands[index] is value:
                    continue
                owner = value.owner
                what = f"result {value.index}" if isinstance(owner, Operation) else f"argument {value.index}"
                state = "not in the function (dropped without being erased?)" if user not in self.ops else \
                    f"whose operand {index} is another value"
                raise self.fail(f"the use list of {what} records a use by a '{user.name}' op {state}",
                                owner if isinstance(owner, Operation) else None)

    def check_arguments(self) -> None:
        for arg in self.func.args:
            if not isinstance(arg.type, (TensorType, RefType)):
                raise self.fail(f"argument {arg.index} has type {arg.type!r}, not a tensor or ref type")
            self.bound |= _plain_symbols(arg.type)
            self.defined.add(arg)
        for arg in self.func.args:
            unbound = _type_symbols(arg.type) - self.bound
            if unbound:
                raise self.fail(f"argument {arg.index} ({arg.type}) uses symbol(s) {', '.join(sorted(unbound))}"
                                f" that no argument has as a plain dim")

    # -- blocks ----------------------------------------------------------------------------
    def verify_block(self, block: Block, region_op: Optional[Operation]) -> None:
        """Check every op of the block; ``region_op`` is the fusion owning it (or None)."""
        if region_op is not None and not block.ops:
            raise self.fail(f"a {region_op.name} region must end with 'yield'", region_op)
        visible = set(block.args)
        for arg in block.args:
            self.defined.add(arg)
        for index, op in enumerate(block.ops):
            self.check_placement(op, index, block, region_op)
            self.check_operands(op, block, visible, region_op)
            self.check_op(op)
            for region in op.regions:
                self.verify_block(region, op)
            for result in op.results:
                if result in self.defined:
                    raise self.fail("defines a value that is already defined (the op appears twice?)", op)
                self.defined.add(result)
                visible.add(result)

    def check_placement(self, op: Operation, index: int, block: Block, region_op) -> None:
        last = index == len(block.ops) - 1
        if op.name == "return" and (region_op is not None or not last):
            raise self.fail("'return' must be the last op of the function body", op)
        if op.name == "yield" and (region_op is None or not last):
            raise self.fail(f"'yield' must be the last op of a {getattr(region_op, 'name', 'fusion')} region", op)
        if region_op is not None and last and op.name != "yield":
            raise self.fail(f"a {region_op.name} region must end with 'yield'", region_op)

    def check_operands(self, op: Operation, block: Block, visible: set, region_op) -> None:
        self.ops.add(op)
        for k, value in enumerate(op.operands):
            if (op, k) not in value._uses:
                raise self.fail(f"operand {k} is missing from its value's use list (operands changed"
                                f" behind the use lists' back)", op)
            if value in visible:
                continue
            owner = value.owner
            if isinstance(owner, Operation) and owner.parent is block:
                problem = f"operand {k} is used before its definition"
            elif region_op is not None:
                problem = (f"operand {k} is not defined inside the {region_op.name} region (a region sees only"
                           f" its arguments and its own values; pass outer values as {region_op.name} operands)")
            else:
                problem = f"operand {k} is not defined in this function before this use"
            raise self.fail(problem, op)

    # -- one op ----------------------------------------------------------------------------
    def check_op(self, op: Operation) -> None:
        info = CORE_OPS.get(op.name)
        if info is None:
            raise self.fail(f"unknown op '{op.name}'", op)
        try:
            check_arity(info, len(op.operands))
        except IRTypeError as e:
            raise self.fail(str(e), op) from None
        self.check_attrs(op, info)
        for result in op.results:
            if not isinstance(result.type, TensorType):
                raise self.fail(f"result {result.index} has type {result.type}; ops yield tensors (refs are"
                                f" only function arguments)", op)
        if op.regions and op.name != "fusion" and op.name not in CONTROL_FLOW:
            raise self.fail(f"'{op.name}' cannot have a region", op)
        if op.name == "fusion":
            self.check_fusion(op)
        elif op.name in CONTROL_FLOW:
            self.check_control(op)
        elif op.name == "call":
            self.check_call(op)
        else:
            self.check_types(op, info)
        self.check_symbols(op)

    def check_attrs(self, op: Operation, info: OpInfo) -> None:
        kinds = attr_kinds(op.name)
        for name in info.attrs:
            if name not in op.attrs:
                raise self.fail(f"missing attribute '{name}'", op)
        for name, value in op.attrs.items():
            if name.startswith("_"):
                if not _is_annotation(value):
                    raise self.fail(f"annotation '{name}' must be a string or a list of strings", op)
                continue
            if name not in kinds:
                known = ", ".join(sorted(kinds)) or "none"
                raise self.fail(f"unknown attribute '{name}' (known: {known})", op)
            if value is None and name in info.optional and info.optional[name][1] is None:
                continue
            check, description = _KIND_CHECKS[kinds[name]]
            if not check(value):
                raise self.fail(f"attribute '{name}' must be {description}, got {value!r:.80}", op)
            choices = info.choices.get(name)
            if choices is not None and value not in choices:
                raise self.fail(f"attribute '{name}' is {value!r}; expected one of {', '.join(choices)}", op)

    def check_types(self, op: Operation, info: OpInfo) -> None:
        """Result types against the op's ``infer`` rule, then its ``check``."""
        operand_types = [v.type for v in op.operands]
        if info.infer is None and info.check is not None and len(op.results) != 1:
            raise self.fail(f"'{op.name}' has exactly one result, got {len(op.results)}", op)
        try:
            if info.infer is not None:
                expected = list(info.infer(operand_types, op.attrs))
                if expected != op.result_types:
                    raise self.fail(f"result types {_types_text(op.result_types)} do not match the inferred"
                                    f" {_types_text(expected)}", op)
            if info.check is not None:
                info.check(operand_types, op.attrs, op.result_types)
        except _RULE_ERRORS as e:
            if isinstance(e, VerifyError):
                raise
            raise self.fail(str(e) or type(e).__name__, op) from None

    def type_symbols(self, t) -> set:
        """``_type_symbols``, memoised per type (a program has few distinct types)."""
        symbols = self._type_symbols.get(t)
        if symbols is None:
            symbols = self._type_symbols[t] = _type_symbols(t)
        return symbols

    def check_symbols(self, op: Operation) -> None:
        used = _attr_symbols(list(op.attrs.values()))
        for result in op.results:
            used |= self.type_symbols(result.type)
        for region in op.regions:
            for arg in region.args:
                used |= self.type_symbols(arg.type)
        unbound = used - self.bound
        if unbound:
            raise self.fail(f"symbol(s) {', '.join(sorted(unbound))} are not bound: each symbol must be a plain"
                            f" dim of some argument of @{self.func.name}", op)

    # -- control flow ----------------------------------------------------------------------
    def check_control(self, op: Operation) -> None:
        """``if``: a pred[] then the captured values, two regions taking the captured values
        and yielding the results. ``while``: both regions take every operand; the condition
        yields a pred[], the body the ``carried`` first operands' types (the results)."""
        if len(op.regions) != 2:
            raise self.fail(f"'{op.name}' has exactly two regions, got {len(op.regions)}", op)
        operand_types = [v.type for v in op.operands]
        if op.name == "if":
            if operand_types[0] != TensorType(ElemType.PRED, ()):
                raise self.fail(f"the predicate of 'if' must be pred[], got {operand_types[0]}", op)
            arg_types = operand_types[1:]
            yields = [("then", op.result_types), ("else", op.result_types)]
        else:
            carried = op.attrs["carried"]
            if not 0 <= carried <= len(operand_types):
                raise self.fail(f"'while' carries {carried} of its {len(operand_types)} operands", op)
            if op.result_types != operand_types[:carried]:
                raise self.fail(f"result types {_types_text(op.result_types)} do not match the carried operand"
                                f" types {_types_text(operand_types[:carried])}", op)
            arg_types = operand_types
            yields = [("condition", [TensorType(ElemType.PRED, ())]), ("body", op.result_types)]
        for region, (what, expected) in zip(op.regions, yields):
            found = [a.type for a in region.args]
            if found != arg_types:
                raise self.fail(f"the {what} region's argument types {_types_text(found)} do not match"
                                f" {_types_text(arg_types)}", op)
            if region.ops and region.ops[-1].name == "yield":
                yielded = [v.type for v in region.ops[-1].operands]
                if yielded != list(expected):
                    raise self.fail(f"the {what} region yields {_types_text(yielded)}, expected"
                                    f" {_types_text(expected)}", op)

    # -- fusion and call -------------------------------------------------------------------
    def check_fusion(self, op: Operation) -> None:
        if len(op.regions) != 1:
            raise self.fail(f"fusion has exactly one region, got {len(op.regions)}", op)
        region = op.regions[0]
        arg_types = [a.type for a in region.args]
        operand_types = [v.type for v in op.operands]
        if arg_types != operand_types:
            raise self.fail(f"region argument types {_types_text(arg_types)} do not match the operand types"
                            f" {_types_text(operand_types)}", op)
        for arg in region.args:
            if not isinstance(arg.type, TensorType):
                raise self.fail(f"region argument {arg.index} has type {arg.type}; refs are only function"
                                f" arguments", op)
        for inner in region.ops:
            info = CORE_OPS.get(inner.name)
            if info is not None and (info.effect != PURE or inner.name in ("fusion", "call")):
                raise self.fail(f"'{inner.name}' is not allowed in a fusion region (only pure ops)", inner)
        if region.ops and region.ops[-1].name == "yield":
            yielded = [v.type for v in region.ops[-1].operands]
            if yielded != op.result_types:
                raise self.fail(f"yield types {_types_text(yielded)} do not match the fusion result types"
                                f" {_types_text(op.result_types)}", op)

    def check_call(self, op: Operation) -> None:
        if self.module is None:
            return
        name = op.attrs["callee"]
        callee = self.module.functions.get(name)
        if callee is None:
            raise self.fail(f"callee @{name} is not a function of the module", op)
        arg_types = [a.type for a in callee.args]
        operand_types = [v.type for v in op.operands]
        if operand_types != arg_types:
            raise self.fail(f"argument types {_types_text(operand_types)} do not match @{name}'s parameters"
                            f" {_types_text(arg_types)}", op)
        ops = callee.body.ops
        if not ops or ops[-1].name != "return":
            raise self.fail(f"callee @{name} has no return", op)
        returned = [v.type for v in ops[-1].operands]
        if op.result_types != returned:
            raise self.fail(f"result types {_types_text(op.result_types)} do not match @{name}'s results"
                            f" {_types_text(returned)}", op)
