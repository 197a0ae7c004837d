"""Input mutators for fuzzing parsers and loaders, and a minimiser for failing inputs.

Every mutator takes a seeded ``numpy.random.Generator`` so a run is reproducible from
its seed: :func:`mutate_bytes` (truncate, flip, overwrite, delete, duplicate, insert),
:func:`mutate_text` (the same on characters, plus token-level edits: delete, duplicate,
swap, replace a number by an extreme one, replace a token by another token of the
text, and deep nesting). :func:`minimise` shrinks a failing input (delta debugging
over chunks) while a predicate still holds.
"""
from __future__ import annotations

import re
import time
from typing import Callable, TypeVar

import numpy as np

Data = TypeVar("Data", bytes, str)

_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|[-+]?\d[\w.+-]*|[%@#^]?[A-Za-z_][\w.$-]*|%\w+|.', re.S)
EXTREME_NUMBERS = ("0", "-1", "-0", "2147483648", "9223372036854775808", "-9223372036854775809",
                   "99999999999999999999999", "1e309", "-1e309", "nan", "inf", "0x10", "1.5", "00", "1_0")
NESTING_OPENERS = ("[", "(", "{", "<", "[[", "dense<[", "f32[", "ref<", "{a=[")


def mutate_bytes(rng: np.random.Generator, data: bytes) -> bytes:
    """One random byte-level edit of ``data``."""
    data = bytearray(data)
    n = len(data)
    kind = int(rng.integers(0, 6)) if n else 5
    if kind == 0:
        return bytes(data[:int(rng.integers(0, n))])
    if kind == 1:
        for _ in range(int(rng.integers(1, 5))):
            i = int(rng.integers(0, n))
            data[i] ^= int(rng.integers(1, 256))
        return bytes(data)
    if kind == 2:
        start = int(rng.integers(0, n))
        length = int(rng.integers(1, 9))
        fill = int(rng.choice([0x00, 0xFF, 0x7F, 0x80]))
        data[start:start + length] = bytes([fill]) * len(data[start:start + length])
        return bytes(data)
    if kind == 3:
        start = int(rng.integers(0, n))
        del data[start:start + int(rng.integers(1, max(2, n // 4)))]
        return bytes(data)
    if kind == 4:
        start = int(rng.integers(0, n))
        span = data[start:start + int(rng.integers(1, 64))]
        return bytes(data[:start] + span + data[start:])
    position = int(rng.integers(0, n + 1))
    junk = rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8).tobytes()
    return bytes(data[:position]) + junk + bytes(data[position:])


def tokens(text: str) -> list:
    return _TOKEN.findall(text)


def mutate_text(rng: np.random.Generator, text: str) -> str:
    """One random edit of ``text``: a character-level edit (any code point, via latin-1)
    a third of the time, else a token-level edit or deep nesting."""
    kind = int(rng.integers(0, 9))
    if kind <= 2:
        return mutate_bytes(rng, text.encode("utf-8")).decode("latin-1")
    parts = tokens(text)
    if not parts:
        return text + "{"
    i = int(rng.integers(0, len(parts)))
    if kind == 3:
        del parts[i]
    elif kind == 4:
        parts.insert(i, parts[i])
    elif kind == 5:
        j = int(rng.integers(0, len(parts)))
        parts[i], parts[j] = parts[j], parts[i]
    elif kind == 6:
        numbers = [k for k, p in enumerate(parts) if p[:1].isdigit() or p[:2] in ("-1", "-2")]
        k = int(rng.choice(numbers)) if numbers else i
        parts[k] = str(rng.choice(EXTREME_NUMBERS))
    elif kind == 7:
        parts[i] = parts[int(rng.integers(0, len(parts)))]
    else:
        opener = str(rng.choice(NESTING_OPENERS))
        depth = int(rng.choice([50, 1000, 20000]))
        parts.insert(i, opener * depth)
    return "".join(parts)


def minimise(data: Data, fails: Callable[[Data], bool], max_runs: int = 400, max_seconds: float = 10.0) -> Data:
    """A smaller ``data`` for which ``fails`` still holds: remove chunks (halves, quarters,
    ... single elements) while the predicate holds (ddmin without the subset phase)."""
    deadline = time.monotonic() + max_seconds
    runs = 0
    chunks = 2
    while len(data) >= 2 and runs < max_runs and time.monotonic() < deadline:
        size = max(1, len(data) // chunks)
        removed = False
        for start in range(0, len(data), size):
            candidate = data[:start] + data[start + size:]
            runs += 1
            if fails(candidate):
                data, removed = candidate, True
                chunks = max(chunks - 1, 2)
                break
            if runs >= max_runs or time.monotonic() >= deadline:
                return data
        if not removed:
            if size == 1:
                break
            chunks = min(chunks * 2, len(data))
    return data


# -- GraphDef protos: wrong but parseable ------------------------------------------------------
ODD_INTS = (-1, 0, 1, 2, 7, -(2**31), 2**31 - 1, 2**40, -(2**62))
ODD_TYPES = (0, 1, 2, 3, 5, 7, 9, 10, 19, 23, 30, 101, 999)  # DT_INVALID, float, double, int32, ... refs, unknown
ODD_STRINGS = (b"", b"SAME", b"VALID", b"NCHW", b"\xff\xfe", b"x" * 300, b"EXPLICIT")


def _odd_attr(rng: np.random.Generator, attr) -> None:
    """Overwrite an AttrValue with a value of a random kind."""
    kind = int(rng.integers(0, 8))
    attr.Clear()
    if kind == 0:
        attr.i = int(rng.choice(ODD_INTS))
    elif kind == 1:
        attr.f = float(rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e30]))
    elif kind == 2:
        attr.b = bool(rng.integers(0, 2))
    elif kind == 3:
        attr.s = bytes(rng.choice(ODD_STRINGS))
    elif kind == 4:
        attr.type = int(rng.choice(ODD_TYPES))
    elif kind == 5:
        _odd_shape(rng, attr.shape)
    elif kind == 6:
        _odd_tensor(rng, attr.tensor)
    else:
        attr.list.i.extend(int(v) for v in rng.choice(ODD_INTS, int(rng.integers(0, 5))))


def _odd_shape(rng: np.random.Generator, shape) -> None:
    shape.Clear()
    if rng.random() < 0.2:
        shape.unknown_rank = True
    for _ in range(int(rng.integers(0, 5))):
        shape.dim.add(size=int(rng.choice((-1, -5, 0, 1, 3, 2**40))))


def _odd_tensor(rng: np.random.Generator, tensor) -> None:
    """A TensorProto whose dtype, shape and contents may disagree."""
    kind = int(rng.integers(0, 5))
    if kind == 0:
        tensor.dtype = int(rng.choice(ODD_TYPES))
    elif kind == 1:
        _odd_shape(rng, tensor.tensor_shape)
    elif kind == 2:
        tensor.tensor_content = bytes(tensor.tensor_content)[:int(rng.integers(0, 9))] + b"\x01\x02\x03"
    elif kind == 3:
        tensor.float_val.extend([1.0] * int(rng.integers(0, 7)))
        tensor.int_val.extend([2**31 - 1] * int(rng.integers(0, 3)))
    else:
        tensor.string_val.append(b"\xff" * int(rng.integers(0, 4)))


def _odd_input(rng: np.random.Generator, graph_def, node) -> None:
    names = [n.name for n in graph_def.node] or ["x"]
    kind = int(rng.integers(0, 6))
    if kind == 0 and node.input:
        del node.input[int(rng.integers(0, len(node.input)))]
    elif kind == 1:
        node.input.append(str(rng.choice(names)))
    elif kind == 2:
        node.input.append(f"{rng.choice(names)}:{rng.choice(['1', '7', '-1', '99999999999999999999', 'x', ''])}")
    elif kind == 3:
        node.input.append("^" + str(rng.choice(names + ["missing"])))
    elif kind == 4:
        node.input.append(node.name)  # a self loop
    elif node.input:
        node.input[int(rng.integers(0, len(node.input)))] = str(rng.choice(["", ":", "^", "a:b:c", "missing:0"]))


def mutate_graph_def(rng: np.random.Generator, graph_def, op_types=()) -> None:
    """One random semantic edit of ``graph_def`` (in place): a node's op type, attrs,
    inputs, name or device, a deleted or duplicated node, odd versions or library."""
    nodes = graph_def.node
    if not nodes:
        nodes.add(name="x", op="Placeholder")
        return
    node = nodes[int(rng.integers(0, len(nodes)))]
    kind = int(rng.integers(0, 10))
    if kind == 0:
        node.op = str(rng.choice(list(op_types) or ["Const"]))
    elif kind == 1 and node.attr:
        del node.attr[str(rng.choice(sorted(node.attr)))]
    elif kind in (1, 2):
        key = str(rng.choice(sorted(node.attr) + ["T", "dtype", "value", "shape", "N"]))
        _odd_attr(rng, node.attr[key])
    elif kind == 3 and "value" in node.attr:
        _odd_tensor(rng, node.attr["value"].tensor)
    elif kind in (3, 4):
        _odd_input(rng, graph_def, node)
    elif kind == 5:
        node.name = str(rng.choice([n.name for n in nodes] + ["", "a b", "x:0", "^y", "/", "_z"]))
    elif kind == 6:
        node.device = str(rng.choice(["/device:GPU:99", "garbage", "/job:x/task:-1", "/cpu:0/cpu:1"]))
    elif kind == 7:
        del nodes[int(rng.integers(0, len(nodes)))]
    elif kind == 8:
        nodes.add().CopyFrom(node)
    else:
        graph_def.versions.producer = int(rng.choice([-1, 0, 2**30]))
        graph_def.versions.min_consumer = int(rng.choice([0, 2**30]))


def minimise_graph_def(graph_def, fails: Callable, max_runs: int = 400):
    """A copy of ``graph_def`` with as many nodes, inputs and attrs removed as keep
    ``fails`` true (greedy, one removal at a time)."""
    current = type(graph_def)()
    current.CopyFrom(graph_def)
    runs = 0

    def attempt(edit) -> bool:
        nonlocal current, runs
        candidate = type(current)()
        candidate.CopyFrom(current)
        edit(candidate)
        runs += 1
        if fails(candidate):
            current = candidate
            return True
        return False

    changed = True
    while changed and runs < max_runs:
        changed = False
        for i in reversed(range(len(current.node))):
            if i < len(current.node) and attempt(lambda g, i=i: _delete_node(g, i)):
                changed = True
            elif i < len(current.node) and current.node[i].op != "Placeholder" and \
                    attempt(lambda g, i=i: _to_placeholder(g.node[i])):
                changed = True
        for i in range(len(current.node)):
            for j in reversed(range(len(current.node[i].input))):
                if attempt(lambda g, i=i, j=j: g.node[i].input.__delitem__(j)):
                    changed = True
            for key in sorted(current.node[i].attr):
                if attempt(lambda g, i=i, key=key: g.node[i].attr.__delitem__(key)):
                    changed = True
    return current


def _delete_node(graph_def, i: int) -> None:
    """Delete node ``i`` and every input that names it."""
    name = graph_def.node[i].name
    del graph_def.node[i]
    for node in graph_def.node:
        kept = [inp for inp in node.input if inp.lstrip("^").split(":")[0] != name]
        if len(kept) != len(node.input):
            del node.input[:]
            node.input.extend(kept)


def _to_placeholder(node) -> None:
    """Turn ``node`` into a float32 Placeholder of the same name (cutting its inputs)."""
    name = node.name
    node.Clear()
    node.name = name
    node.op = "Placeholder"
    node.attr["dtype"].type = 1
