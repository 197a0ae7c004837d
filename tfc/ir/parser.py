"""Read the IR's text form (docs/IR.md) back into a Module.

A small tokenizer and a hand-written recursive-descent parser. Every malformed input
raises :class:`IRParseError` with a 1-based line and column and the offending source line,
however deep it nests: dense literals are read without recursion and may nest
``MAX_DENSE_DEPTH`` lists, regions and parenthesised dims may nest ``MAX_NESTING`` levels,
and a Python stack that still runs out (a parser called from deep inside a program) is
reported as a parse error too.

The parser is structural: it builds ops with their printed result types and checks what
the text alone decides (names defined once and before use, result counts, attribute names
and kinds, dense literals against their type). Operand counts, required attributes and
type rules are the verifier's job.
"""
from __future__ import annotations

import bisect
import math
import re
from collections import ChainMap
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .core import Block, Function, Location, Module, Operation, Value
from .dims import dim_add, dim_floordiv, dim_mul, dim_sub, sym
from .ops import (BOOL, CALLEE, CORE_OPS, DENSE, DIM_LIST, DIMS, FLOAT, INT, INT_PAIRS, INTS, STR, STRS,
                  attr_kinds)
from .types import ElemType, RefType, TensorType

MAX_NESTING = 100  # regions inside regions plus parentheses inside dims, at any point of the text
MAX_DENSE_DEPTH = 254  # lists inside a dense literal: TensorFlow's largest rank


class IRParseError(ValueError):
    """Malformed IR text: ``"<line>:<column>: <message>"``, the source line, a caret."""

    def __init__(self, message: str, line: int, column: int, source_line: str):
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        prefix = "".join(ch if ch == "\t" else " " for ch in source_line[:column - 1])
        super().__init__(f"{line}:{column}: {message}\n{source_line}\n{prefix}^")


# -- tokens --------------------------------------------------------------------------------
@dataclass
class Token:
    kind: str  # ident int float string value at punct newline eof
    text: str  # source text (decoded contents for strings)
    pos: int  # offset into the source

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of input"
        if self.kind == "newline":
            return "end of line"
        if self.kind == "string":
            return "a string"
        return f"'{self.text}'"


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+)
  | (?P<newline>\n)
  | (?P<value>%[A-Za-z0-9_.$-]+)
  | (?P<at>@[A-Za-z0-9_.$-]+)
  | (?P<float>\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\.\.\.|->|//|[()\[\]{}<>,:=\#^*+\-@])
""", re.VERBOSE)

_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


class _Source:
    """The text with a line table, to turn offsets into line, column and source line."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def error(self, pos: int, message: str) -> IRParseError:
        index = bisect.bisect_right(self.line_starts, pos) - 1
        start = self.line_starts[index]
        end = self.text.find("\n", start)
        source_line = self.text[start:] if end < 0 else self.text[start:end]
        return IRParseError(message, index + 1, pos - start + 1, source_line.rstrip("\r"))


def tokenize(source: _Source) -> list:
    """The tokens of the text, ending with an ``eof`` token after the last non-blank."""
    text, pos, tokens = source.text, 0, []
    while pos < len(text):
        if text[pos] == '"':
            contents, end = _scan_string(source, pos)
            tokens.append(Token("string", contents, pos))
            pos = end
            continue
        match = _TOKEN.match(text, pos)
        if match is None:
            raise source.error(pos, _bad_char_message(text[pos]))
        kind = match.lastgroup
        if kind != "ws":
            tokens.append(Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(Token("eof", "", len(text.rstrip())))
    return tokens


def _bad_char_message(ch: str) -> str:
    if ch == "?":
        return "unexpected '?': unknown dims are written as symbols (s0, s1, ...)"
    if ch == "%":
        return "expected a value name after '%'"
    return f"unexpected character {ch!r}"


def _scan_string(source: _Source, start: int):
    """The decoded contents of the string literal at ``start`` and the offset after it."""
    text, pos, out = source.text, start + 1, []
    while True:
        if pos >= len(text) or text[pos] == "\n":
            raise source.error(start, "unterminated string")
        ch = text[pos]
        if ch == '"':
            return "".join(out), pos + 1
        if ch != "\\":
            out.append(ch)
            pos += 1
            continue
        escape = text[pos + 1:pos + 2]
        if escape in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[escape])
            pos += 2
        elif escape == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[pos + 2:pos + 4]):
            out.append(chr(int(text[pos + 2:pos + 4], 16)))
            pos += 4
        else:
            raise source.error(pos, f"unknown escape '\\{escape}' in string")


# -- the parser ----------------------------------------------------------------------------
def parse_module(text: str) -> Module:
    """Parse the text form of a module (zero or more functions)."""
    parser = _Parser(text)
    try:
        return parser.module()
    except RecursionError:
        raise parser.error(parser.peek(), "the text nests too deeply for the parser's stack") from None


@dataclass
class _ElemLit:
    token: Token
    negative: bool


@dataclass
class _ListLit:
    token: Token  # the '['
    items: list


@dataclass
class _RawDense:
    """A dense literal as written, converted once the result type is known."""

    token: Token
    hex_text: Optional[str] = None
    literal: object = None  # a _ListLit, or one _ElemLit (a splat)


class _Parser:
    def __init__(self, text: str):
        self.source = _Source(text)
        self.tokens = tokenize(self.source)
        self.i = 0
        self.nesting = 0  # regions and dim parentheses open at the current token

    # -- token helpers ---------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        if token.kind != "eof":
            self.i += 1
        return token

    def at(self, kind: str, text: Optional[str] = None) -> bool:
        token = self.peek()
        return token.kind == kind and (text is None or token.text == text)

    def accept(self, kind: str, text: Optional[str] = None) -> Optional[Token]:
        return self.next() if self.at(kind, text) else None

    def expect(self, kind: str, text: Optional[str] = None, what: Optional[str] = None) -> Token:
        if self.at(kind, text):
            return self.next()
        raise self.error(self.peek(), f"expected {what or repr(text or kind)}, found {self.peek().describe()}")

    def punct(self, text: str) -> Token:
        return self.expect("punct", text)

    def error(self, token: Token, message: str) -> IRParseError:
        return self.source.error(token.pos, message)

    def enter(self, token: Token, what: str) -> None:
        """One more level of nesting (``leave`` closes it); refused past MAX_NESTING."""
        if self.nesting >= MAX_NESTING:
            raise self.error(token, f"{what} nested deeper than {MAX_NESTING} levels")
        self.nesting += 1

    def leave(self) -> None:
        self.nesting -= 1

    def int_of(self, token: Token) -> int:
        """An int token's value (Python refuses to convert very long digit strings)."""
        try:
            return int(token.text)
        except ValueError:
            raise self.error(token, f"integer literal of {len(token.text)} digits is out of range") from None

    def skip_newlines(self) -> None:
        while self.accept("newline"):
            pass

    def end_of_line(self) -> None:
        self.expect("newline", what="end of line")

    # -- module and functions --------------------------------------------------------------
    def module(self) -> Module:
        module = Module()
        self.skip_newlines()
        while not self.at("eof"):
            token = self.peek()
            func = self.function()
            if func.name in module.functions:
                raise self.error(token, f"duplicate function @{func.name}")
            module.add(func)
            self.skip_newlines()
        return module

    def function(self) -> Function:
        self.expect("ident", "func", "'func'")
        name = self.symbol_name()
        arg_tokens, arg_types, arg_names = self.arg_list()
        self.punct("->")
        result_types = self.delimited("(", ")", self.type)
        self.punct("{")
        self.end_of_line()
        hints = [None if n == f"arg{i}" else n for i, n in enumerate(arg_names)]
        func = Function(name, arg_types, hints)
        scope: ChainMap = ChainMap()  # value name -> list of values; a child map per region
        for token, value in zip(arg_tokens, func.args):
            self.define(scope, token, [value])
        last = self.op_list(func.body, scope)
        if not self.at("eof"):
            self.end_of_line()
        self.check_return(func, result_types, last)
        return func

    def symbol_name(self) -> str:
        """``@name`` or ``@"any name"``."""
        token = self.accept("at")
        if token is not None:
            return token.text[1:]
        at = self.peek()
        if self.accept("punct", "@") and self.at("string"):
            return self.next().text
        raise self.error(at, f"expected '@' and a function name, found {at.describe()}")

    def delimited(self, open_: str, close: str, item) -> list:
        """``open_ [item (',' item)*] close``: the items."""
        self.punct(open_)
        items = []
        if self.accept("punct", close):
            return items
        while True:
            items.append(item())
            if self.accept("punct", close):
                return items
            self.punct(",")

    def arg_list(self):
        """``(%a: type, ...)``: the name tokens, the types and the names (without %)."""
        args = self.delimited("(", ")", self.arg)
        return [a[0] for a in args], [a[1] for a in args], [a[0].text[1:] for a in args]

    def arg(self):
        token = self.expect("value", what="an argument name like %x")
        self.punct(":")
        return token, self.type()

    def check_return(self, func: Function, declared: list, last) -> None:
        """The header's result types must be the final return's operand types."""
        ops = func.body.ops
        if ops and ops[-1].name == "return":
            actual = [v.type for v in ops[-1].operands]
            if actual != declared:
                raise self.error(last, f"return types ({_types(actual)}) do not match the declared"
                                       f" result types ({_types(declared)}) of @{func.name}")
        elif declared:
            raise self.error(last or self.peek(), f"@{func.name} declares results but its body does not"
                                                  f" end with return")

    # -- blocks and ops --------------------------------------------------------------------
    def op_list(self, block: Block, scope: ChainMap) -> Optional[Token]:
        """Ops up to and including the closing '}'; returns the last op's name token."""
        last = None
        while True:
            self.skip_newlines()
            if self.accept("punct", "}"):
                return last
            if self.at("eof"):
                raise self.error(self.peek(), "expected '}' to close the block, found end of input")
            last = self.op(block, scope)

    def op(self, block: Block, scope: ChainMap) -> Token:
        def_token, def_count = self.defs()
        name_token = self.expect("ident", what="an op name")
        name = name_token.text
        if name not in CORE_OPS:
            raise self.error(name_token, f"unknown op '{name}'")
        raw_attrs = {}
        if name == "constant" and self.at("ident", "dense"):
            raw_attrs["value"] = self.dense()
        operands = self.uses(scope) if self.at("value") else []
        if self.at("punct", "{") and self.peek(1).kind != "newline":
            raw_attrs.update(self.attr_dict(name, raw_attrs))
        result_types = []
        if self.accept("punct", ":"):
            result_types = self.delimited("(", ")", self.type) if self.at("punct", "(") else [self.type()]
        loc = self.location() if self.at("ident", "loc") else None
        self.check_def_count(def_token, def_count, name_token, result_types)
        attrs = self.finish_attrs(raw_attrs, result_types)
        regions = []
        while self.at("punct", "{"):
            regions.append(self.region(scope))
        self.end_of_line()
        op = block.append(Operation(name, operands, result_types, attrs, regions, loc))
        if def_token is not None:
            self.define(scope, def_token, op.results)
        return name_token

    def defs(self):
        """``%n =`` or ``%n:k =`` (or nothing): the name token and result count."""
        if not self.at("value"):
            return None, 0
        token = self.next()
        count = 1
        if self.accept("punct", ":"):
            count_token = self.expect("int", what="a result count")
            count = self.int_of(count_token)
            if count < 1:
                raise self.error(count_token, "a result count must be at least 1")
        self.punct("=")
        return token, count

    def check_def_count(self, def_token, count, name_token, result_types) -> None:
        if def_token is None:
            if result_types:
                raise self.error(name_token, "op has result types but defines no result names")
            return
        if not result_types:
            raise self.error(self.peek(), f"expected ':' and result types for {def_token.text}")
        if count != len(result_types):
            raise self.error(def_token, f"{def_token.text} defines {count} result(s) but the op has"
                                        f" {len(result_types)} result type(s)")

    def define(self, scope: ChainMap, token: Token, values: list) -> None:
        name = token.text[1:]
        if name in scope:
            raise self.error(token, f"redefinition of {token.text}")
        scope[name] = values

    def uses(self, scope: ChainMap) -> list:
        values = [self.use(scope)]
        while self.accept("punct", ","):
            values.append(self.use(scope))
        return values

    def use(self, scope: ChainMap) -> Value:
        """``%x`` or ``%x#i``."""
        token = self.expect("value", what="a value like %0")
        values = scope.get(token.text[1:])
        if values is None:
            raise self.error(token, f"use of undefined value {token.text} (values must be defined before use)")
        if self.accept("punct", "#"):
            index_token = self.expect("int", what="a result index")
            index = self.int_of(index_token)
            if index >= len(values):
                raise self.error(index_token, f"{token.text} has {len(values)} result(s); no #{index}")
            return values[index]
        if len(values) != 1:
            raise self.error(token, f"{token.text} has {len(values)} results; name one as"
                                    f" {token.text}#0 ... {token.text}#{len(values) - 1}")
        return values[0]

    def region(self, scope: ChainMap) -> Block:
        """``{`` NEWLINE ``^(%p: type, ...):`` NEWLINE op* ``}``."""
        self.enter(self.peek(), "regions")
        try:
            return self.region_body(scope)
        finally:
            self.leave()

    def region_body(self, scope: ChainMap) -> Block:
        self.punct("{")
        self.end_of_line()
        self.skip_newlines()
        self.punct("^")
        arg_tokens, arg_types, arg_names = self.arg_list()
        self.punct(":")
        self.end_of_line()
        hints = [None if n == f"p{i}" else n for i, n in enumerate(arg_names)]
        block = Block(arg_types, hints)
        inner = scope.new_child()
        for token, value in zip(arg_tokens, block.args):
            self.define(inner, token, [value])
        self.op_list(block, inner)
        return block

    def location(self) -> Location:
        """``loc("file":N)``, ``loc("name"("file":N))`` or ``loc("name")``."""
        self.expect("ident", "loc")
        self.punct("(")
        first = self.expect("string", what="a string")
        loc = Location(name=first.text)
        if self.accept("punct", ":"):
            loc = Location(first.text, self.int_value())
        elif self.accept("punct", "("):
            file_token = self.expect("string", what="a file name string")
            self.punct(":")
            loc = Location(file_token.text, self.int_value(), first.text)
            self.punct(")")
        self.punct(")")
        return loc

    # -- types and dims --------------------------------------------------------------------
    def type(self):
        token = self.expect("ident", what="a type like f32[4]")
        if token.text == "ref":
            self.punct("<")
            inner = self.tensor_type(self.expect("ident", what="an element type"))
            self.punct(">")
            return RefType(inner)
        return self.tensor_type(token)

    def tensor_type(self, elem_token: Token) -> TensorType:
        try:
            elem = ElemType(elem_token.text)
        except ValueError:
            names = ", ".join(e.value for e in ElemType)
            raise self.error(elem_token, f"unknown element type '{elem_token.text}' (expected {names})") from None
        return TensorType(elem, tuple(self.list_of(self.type_dim)))

    def type_dim(self):
        """A dim of a type: an expression that is not a negative integer."""
        token = self.peek()
        dim = self.dim()
        if isinstance(dim, int) and dim < 0:
            raise self.error(token, f"dimension {dim} is negative")
        return dim

    def dim(self):
        """A dim expression: terms joined by + and -, with an optional leading -."""
        negate = self.accept("punct", "-") is not None
        value = self.dim_term()
        if negate:
            value = dim_mul(value, -1)
        while self.at("punct", "+") or self.at("punct", "-"):
            op = self.next().text
            rhs = self.dim_term()
            value = dim_add(value, rhs) if op == "+" else dim_sub(value, rhs)
        return value

    def dim_term(self):
        value = self.dim_factor()
        while self.at("punct", "*") or self.at("punct", "//"):
            op = self.next()
            rhs = self.dim_factor()
            if op.text == "*":
                value = dim_mul(value, rhs)
            elif rhs == 0:
                raise self.error(op, "dimension division by zero")
            else:
                value = dim_floordiv(value, rhs)
        return value

    def dim_factor(self):
        token = self.next()
        if token.kind == "int":
            return self.int_of(token)
        if token.kind == "ident":
            return sym(token.text)
        if token.kind == "punct" and token.text == "(":
            self.enter(token, "parentheses")
            try:
                value = self.dim()
                self.punct(")")
            finally:
                self.leave()
            return value
        raise self.error(token, f"expected a dimension (an integer, a symbol or '('), found {token.describe()}")

    # -- attributes ------------------------------------------------------------------------
    def attr_dict(self, op_name: str, taken: dict) -> dict:
        """``{name=attr, ...}``, each parsed by its kind in the op table."""
        kinds = attr_kinds(op_name)
        attrs: dict = {}

        def item():
            key = self.expect("ident", what="an attribute name")
            if key.text.startswith("_"):
                if key.text in attrs:
                    raise self.error(key, f"attribute '{key.text}' given twice")
                self.punct("=")
                attrs[key.text] = self.annotation_value()
                return
            if key.text not in kinds:
                known = ", ".join(sorted(kinds)) or "none"
                raise self.error(key, f"unknown attribute '{key.text}' for op '{op_name}' (known: {known})")
            if key.text in attrs or key.text in taken:
                raise self.error(key, f"attribute '{key.text}' given twice")
            self.punct("=")
            attrs[key.text] = self.attr_value(kinds[key.text], key.text)

        self.delimited("{", "}", item)
        return attrs

    def attr_value(self, kind: str, name: str):
        readers = {
            INT: self.int_value,
            INTS: lambda: self.list_of(self.int_value),
            DIMS: lambda: self.list_of(self.dim),
            DIM_LIST: lambda: self.list_of(self.dim),
            INT_PAIRS: lambda: self.list_of(lambda: self.list_of(self.int_value)),
            BOOL: self.bool_value,
            STR: lambda: self.expect("string", what=f"a string for '{name}'").text,
            STRS: lambda: self.list_of(lambda: self.expect("string", what=f"a string in '{name}'").text),
            FLOAT: self.float_value,
            CALLEE: self.symbol_name,
            DENSE: self.dense,
        }
        if kind not in readers:
            raise self.error(self.peek(), f"attribute '{name}' has unsupported kind '{kind}'")
        return readers[kind]()

    def annotation_value(self):
        """A pass annotation (``_name=...``): a string or a list of strings."""
        if self.at("punct", "["):
            return self.list_of(lambda: self.expect("string", what="a string").text)
        return self.expect("string", what="a string or a list of strings").text

    def list_of(self, item) -> list:
        return self.delimited("[", "]", item)

    def int_value(self) -> int:
        negate = self.accept("punct", "-") is not None
        value = self.int_of(self.expect("int", what="an integer"))
        return -value if negate else value

    def bool_value(self) -> bool:
        token = self.next()
        if token.kind == "ident" and token.text in ("true", "false"):
            return token.text == "true"
        raise self.error(token, f"expected true or false, found {token.describe()}")

    def float_value(self) -> float:
        negate = self.accept("punct", "-") is not None
        token = self.next()
        if token.kind in ("int", "float") or (token.kind == "ident" and token.text in ("inf", "nan")):
            value = float(token.text)
            return -value if negate else value
        raise self.error(token, f"expected a number, found {token.describe()}")

    # -- dense literals --------------------------------------------------------------------
    def dense(self) -> _RawDense:
        """``dense<literal>`` or ``dense<"0x...">``, kept raw until the type is known."""
        token = self.expect("ident", "dense")
        self.punct("<")
        raw = _RawDense(token)
        if self.at("punct", "..."):
            raise self.error(self.peek(), "elided constant 'dense<...>' cannot be parsed (it was printed with"
                                          " elide_constants_over; print without eliding to round-trip)")
        if self.at("string"):
            raw.hex_text = self.hex_string()
        else:
            raw.literal = self.dense_literal()
        self.punct(">")
        return raw

    def hex_string(self) -> str:
        token = self.next()
        if not re.fullmatch(r"0x([0-9a-fA-F]{2})*", token.text):
            raise self.error(token, 'expected "0x" followed by an even number of hex digits')
        return token.text[2:]

    def dense_literal(self):
        """A nested list literal (``_ListLit``) or one element (``_ElemLit``), read with a
        stack of the open lists (no recursion), at most MAX_DENSE_DEPTH of them."""
        open_lists: list = []
        while True:
            if self.at("punct", "["):
                if len(open_lists) == MAX_DENSE_DEPTH:
                    raise self.error(self.peek(), f"dense literal lists nested deeper than {MAX_DENSE_DEPTH} levels")
                node = _ListLit(self.next(), [])
                if not self.accept("punct", "]"):
                    open_lists.append(node)
                    continue
            else:
                node = self.dense_element()
            while open_lists:  # ``node`` is complete: add it to its list, close finished lists
                open_lists[-1].items.append(node)
                if not self.accept("punct", "]"):
                    self.punct(",")
                    break
                node = open_lists.pop()
            else:
                return node

    def dense_element(self) -> _ElemLit:
        negative = self.accept("punct", "-") is not None
        token = self.next()
        if token.kind not in ("int", "float", "ident"):
            raise self.error(token, f"expected a dense element, found {token.describe()}")
        return _ElemLit(token, negative)

    def finish_attrs(self, raw_attrs: dict, result_types: list) -> dict:
        """Convert raw dense literals with the op's (single) result type."""
        attrs = {}
        for key, value in raw_attrs.items():
            if isinstance(value, _RawDense):
                value = self.dense_array(value, result_types)
            attrs[key] = value
        return attrs

    def dense_array(self, raw: _RawDense, result_types: list) -> np.ndarray:
        if len(result_types) != 1 or not isinstance(result_types[0], TensorType):
            raise self.error(raw.token, "a dense literal needs exactly one tensor result type")
        ttype = result_types[0]
        if not ttype.is_static:
            raise self.error(raw.token, f"a constant's type must be static, got {ttype}")
        if raw.hex_text is not None:
            return self.hex_array(raw, ttype)
        if isinstance(raw.literal, _ListLit):
            return self.list_array(raw.literal, ttype)
        return np.array(self.element(raw.literal, ttype.elem), dtype=ttype.elem.np_dtype)

    def hex_array(self, raw: _RawDense, ttype: TensorType) -> np.ndarray:
        data = bytes.fromhex(raw.hex_text)
        dtype = ttype.elem.np_dtype
        needed = math.prod(ttype.shape) * dtype.itemsize
        if len(data) != needed:
            raise self.error(raw.token, f"hex constant has {len(data)} bytes; {ttype} needs {needed}")
        if ttype.elem is ElemType.PRED and any(b not in (0, 1) for b in data):
            raise self.error(raw.token, "pred constant bytes must be 00 or 01")
        array = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
        return array.reshape(ttype.shape)

    def list_array(self, literal: "_ListLit", ttype: TensorType) -> np.ndarray:
        """A nested literal as an array of the type's shape (same element count)."""
        flat: list = []
        shape = self.flatten(literal, ttype.elem, flat)
        if len(flat) != math.prod(ttype.shape):
            raise self.error(literal.token, f"dense literal of shape {shape} does not fit {ttype}")
        return np.array(flat, dtype=ttype.elem.np_dtype).reshape(ttype.shape)

    def flatten(self, root, elem: ElemType, flat: list) -> tuple:
        """Append a nested literal's elements to ``flat`` in order; its shape (ragged is an
        error). Iterative: a list's shape is found once all its items have theirs."""
        shapes: dict = {}  # id(node) -> shape
        stack = [(root, False)]
        while stack:
            node, items_done = stack.pop()
            if isinstance(node, _ElemLit):
                flat.append(self.element(node, elem))
                shapes[id(node)] = ()
            elif not items_done:
                stack.append((node, True))
                stack.extend((item, False) for item in reversed(node.items))
            else:
                item_shapes = [shapes.pop(id(item)) for item in node.items]
                for item, shape in zip(node.items, item_shapes):
                    if shape != item_shapes[0]:
                        raise self.error(item.token, f"ragged dense literal: shape {shape} where {item_shapes[0]} "
                                                     "was expected")
                shapes[id(node)] = (len(node.items),) + (item_shapes[0] if item_shapes else ())
        return shapes[id(root)]

    def element(self, node: "_ElemLit", elem: ElemType):
        """One element (with its sign) as a Python value of the element type."""
        negate, token = node.negative, node.token
        text = token.text
        if elem is ElemType.PRED:
            if negate or text not in ("true", "false"):
                raise self.error(token, f"expected true or false for a pred element, found {token.describe()}")
            return text == "true"
        if elem.is_float:
            if token.kind not in ("int", "float") and text not in ("inf", "nan"):
                raise self.error(token, f"expected a float element, found {token.describe()}")
            value = -float(text) if negate else float(text)
            with np.errstate(over="ignore"):
                overflows = not np.isfinite(elem.np_dtype.type(value)) and text not in ("inf", "nan")
            if overflows:
                shown = value if np.isfinite(value) else ("-" if negate else "") + _abbreviated(text)
                raise self.error(token, f"{shown} is out of range for {elem}")
            return value
        if token.kind != "int":
            raise self.error(token, f"expected an integer element, found {token.describe()}")
        value = -self.int_of(token) if negate else self.int_of(token)
        info = np.iinfo(elem.np_dtype)
        if not info.min <= value <= info.max:
            raise self.error(token, f"{value} is out of range for {elem}")
        return value


def _abbreviated(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _types(types: list) -> str:
    return ", ".join(str(t) for t in types)
