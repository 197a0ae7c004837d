"""Symbolic dimensions.

A dimension is either a Python ``int`` or a :class:`SymExpr`: a polynomial with integer
coefficients over *atoms*. An atom is a shape symbol (``s0``, ``s1``...) or an opaque
floor division ``(e)//k`` that could not be simplified. Polynomials are kept in a
canonical form, so structural equality is semantic equality for everything shape rules
build (products for reshape, sums for concat, affine maps for slices and convs).

A constant expression always collapses to a plain ``int``: code that sees an ``int``
knows the dimension is static.
"""
from __future__ import annotations

import functools
import re
from typing import Mapping, Union

Monomial = tuple  # sorted tuple of atoms (str symbol names or FloorDiv), with repetition


class FloorDiv:
    """The opaque atom ``num // den`` (den a positive int or a SymExpr)."""

    __slots__ = ("num", "den", "_key")

    def __init__(self, num: "Dim", den: "Dim"):
        self.num = num
        self.den = den
        self._key = f"({dim_str(num)})//{_wrap(den)}"

    def __repr__(self) -> str:
        return self._key

    def __eq__(self, other) -> bool:
        return isinstance(other, FloorDiv) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __lt__(self, other) -> bool:
        return _atom_key(self) < _atom_key(other)

    def eval(self, env: Mapping[str, int]) -> int:
        return dim_eval(self.num, env) // dim_eval(self.den, env)

    def symbols(self) -> set[str]:
        return dim_symbols(self.num) | dim_symbols(self.den)


def _atom_key(atom) -> tuple:
    if isinstance(atom, str):
        match = re.fullmatch(r"([A-Za-z_]+)(\d*)", atom)
        if match:
            return (0, match.group(1), int(match.group(2) or -1), "")
        return (0, atom, -1, "")
    return (1, "", 0, atom._key)


class SymExpr:
    """A canonical polynomial: {monomial: coefficient}, no zero coefficients."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self._hash = hash(frozenset(self.terms.items()))

    # -- construction -------------------------------------------------------------
    @staticmethod
    def symbol(name: str) -> "SymExpr":
        return SymExpr({(name,): 1})

    # -- arithmetic (results normalised through _norm) -----------------------------
    def __add__(self, other):
        return dim_add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return dim_sub(self, other)

    def __rsub__(self, other):
        return dim_sub(other, self)

    def __mul__(self, other):
        return dim_mul(self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return dim_floordiv(self, other)

    def __rfloordiv__(self, other):
        return dim_floordiv(other, self)

    def __neg__(self):
        return dim_mul(self, -1)

    def __eq__(self, other) -> bool:
        if isinstance(other, SymExpr):
            return self.terms == other.terms
        return False

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return dim_str(self)

    def eval(self, env: Mapping[str, int]) -> int:
        total = 0
        for monomial, coeff in self.terms.items():
            value = coeff
            for atom in monomial:
                value *= env[atom] if isinstance(atom, str) else atom.eval(env)
            total += value
        return total

    def symbols(self) -> set[str]:
        out: set[str] = set()
        for monomial in self.terms:
            for atom in monomial:
                if isinstance(atom, str):
                    out.add(atom)
                else:
                    out |= atom.symbols()
        return out

    def is_symbol(self) -> bool:
        if len(self.terms) != 1:
            return False
        (monomial, coeff), = self.terms.items()
        return coeff == 1 and len(monomial) == 1 and isinstance(monomial[0], str)


Dim = Union[int, SymExpr]


def _as_terms(d: Dim) -> dict:
    if isinstance(d, SymExpr):
        return d.terms
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"not a dimension: {d!r}")
    return {(): d} if d else {}


def _norm(terms: dict) -> Dim:
    terms = {m: c for m, c in terms.items() if c != 0}
    if not terms:
        return 0
    if set(terms) == {()}:
        return terms[()]
    return SymExpr(terms)


def sym(name: str) -> SymExpr:
    """The dimension that is the symbol ``name``."""
    return SymExpr.symbol(name)


def is_static(d: Dim) -> bool:
    return isinstance(d, int)


def dim_add(a: Dim, b: Dim) -> Dim:
    out = dict(_as_terms(a))
    for m, c in _as_terms(b).items():
        out[m] = out.get(m, 0) + c
    return _norm(out)


def dim_sub(a: Dim, b: Dim) -> Dim:
    return dim_add(a, dim_mul(b, -1))


def dim_mul(a: Dim, b: Dim) -> Dim:
    out: dict = {}
    for ma, ca in _as_terms(a).items():
        for mb, cb in _as_terms(b).items():
            m = tuple(sorted(ma + mb, key=_atom_key))
            out[m] = out.get(m, 0) + ca * cb
    return _norm(out)


def _divide_exactly(num: dict, den: dict):
    """num / den as a polynomial when den is a single term dividing every term."""
    if len(den) != 1:
        return None
    (dm, dc), = den.items()
    out = {}
    for m, c in num.items():
        if c % dc:
            return None
        rest = list(m)
        for atom in dm:
            if atom not in rest:
                return None
            rest.remove(atom)
        out[tuple(rest)] = c // dc
    return out


def dim_floordiv(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("dimension division by zero")
        return a // b
    if b == 1:
        return a
    exact = _divide_exactly(_as_terms(a), _as_terms(b))
    if exact is not None:
        return _norm(exact)
    if a == b:
        return 1
    return SymExpr({(FloorDiv(a, b),): 1})


def dim_ceildiv(a: Dim, b: Dim) -> Dim:
    if not (isinstance(a, int) and isinstance(b, int)) and b != 0:
        exact = _divide_exactly(_as_terms(a), _as_terms(b))  # ceil(5*s0 / 5) is s0
        if exact is not None:
            return _norm(exact)
    return dim_floordiv(dim_add(a, dim_sub(b, 1)), b)


def dim_eval(d: Dim, env: Mapping[str, int]) -> int:
    return d if isinstance(d, int) else d.eval(env)


def dim_symbols(d: Dim) -> set[str]:
    return set() if isinstance(d, int) else d.symbols()


def dims_product(dims) -> Dim:
    out: Dim = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def _wrap(d: Dim) -> str:
    text = dim_str(d)
    if isinstance(d, int) and d >= 0:
        return text
    if isinstance(d, SymExpr) and d.is_symbol():
        return text
    return f"({text})"


def _term_str(monomial: Monomial, coeff: int) -> str:
    magnitude = abs(coeff)
    alone = len(monomial) == 1 and magnitude == 1
    factors = [a if isinstance(a, str) else (repr(a) if alone else f"({a!r})") for a in monomial]
    if magnitude != 1 or not factors:
        factors.insert(0, str(magnitude))
    return "*".join(factors)


def _monomial_order(item) -> tuple:
    monomial, _ = item
    return (-len(monomial), [_atom_key(a) for a in monomial])


def ordered_terms(d: "SymExpr") -> list:
    """``d``'s (monomial, coefficient) pairs in canonical order (``terms`` keeps the order
    the expression was built in): code emitted from them is the same for equal dims."""
    return sorted(d.terms.items(), key=_monomial_order)


def dim_str(d: Dim) -> str:
    """Canonical text: ``s0``, ``784*s0``, ``s0+s1``, ``(s0-5)//2+1``."""
    if isinstance(d, int):
        return str(d)
    pieces = []
    for i, (monomial, coeff) in enumerate(sorted(d.terms.items(), key=_monomial_order)):
        text = _term_str(monomial, coeff)
        if i == 0:
            pieces.append(("-" if coeff < 0 else "") + text)
        else:
            pieces.append(("-" if coeff < 0 else "+") + text)
    return "".join(pieces)


# -- parsing ---------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(//|[-+*()]))")


class DimParseError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


@functools.lru_cache(maxsize=8192)
def parse_dim(text: str) -> Dim:
    """Parse the text form of a dimension expression (the inverse of dim_str). Memoised:
    buffer annotations hold offsets as text, read again by every later phase, and a
    parsed Dim is immutable."""
    tokens = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match:
            raise DimParseError(f"unexpected character {text[pos]!r} in dimension", pos)
        tokens.append((match.group(1) or match.group(2) or match.group(3), match.start(0)))
        pos = match.end()
    parser = _DimParser(tokens, len(text))
    value = parser.expr()
    if parser.i != len(tokens):
        raise DimParseError(f"unexpected {tokens[parser.i][0]!r} in dimension", tokens[parser.i][1])
    return value


class _DimParser:
    def __init__(self, tokens, end):
        self.tokens = tokens
        self.i = 0
        self.end = end

    def peek(self):
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def take(self):
        if self.i >= len(self.tokens):
            raise DimParseError("unexpected end of dimension", self.end)
        tok = self.tokens[self.i][0]
        self.i += 1
        return tok

    def expr(self) -> Dim:
        sign = 1
        if self.peek() == "-":
            self.take()
            sign = -1
        value = dim_mul(self.term(), sign)
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            value = dim_add(value, rhs) if op == "+" else dim_sub(value, rhs)
        return value

    def term(self) -> Dim:
        value = self.factor()
        while self.peek() in ("*", "//"):
            op = self.take()
            rhs = self.factor()
            value = dim_mul(value, rhs) if op == "*" else dim_floordiv(value, rhs)
        return value

    def factor(self) -> Dim:
        offset = self.tokens[self.i][1] if self.i < len(self.tokens) else self.end
        tok = self.take()
        if tok == "(":
            value = self.expr()
            if self.take() != ")":
                raise DimParseError("expected ')' in dimension", offset)
            return value
        if tok.isdigit():
            return int(tok)
        if tok[0].isalpha() or tok[0] == "_":
            return sym(tok)
        raise DimParseError(f"unexpected {tok!r} in dimension", offset)


def dim_substitute(d: Dim, mapping: Mapping[str, Dim]) -> Dim:
    """Replace symbols by dims (ints or expressions), re-normalising the result."""
    if isinstance(d, int) or not (d.symbols() & set(mapping)):
        return d
    total: Dim = 0
    for monomial, coeff in d.terms.items():
        term: Dim = coeff
        for atom in monomial:
            if isinstance(atom, str):
                factor = mapping.get(atom, sym(atom))
            else:
                factor = dim_floordiv(dim_substitute(atom.num, mapping), dim_substitute(atom.den, mapping))
            term = dim_mul(term, factor)
        total = dim_add(total, term)
    return total
