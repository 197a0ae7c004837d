"""Fuzz every parser and loader: damaged input may only raise the project's own errors.

Seeded mutations (tfc.testing.mutate) of valid inputs, bounded to a few seconds per
loader. What may escape, per loader (what TensorFlow raises where tfc mirrors its API):

* IR text, ``tfc.ir.parse``: ``IRParseError``; on a module that parses, ``tfc.ir.verify``
  raises only ``VerifyError``; a module that verifies prints and parses back to the same
  text.
* GraphDefs, ``load_graph_def`` (bytes) and ``tf.import_graph_def`` (protos): ``ValueError``,
  ``TypeError`` and ``tf.errors.OpError``, as TF. An imported graph exports again.
  ``import_meta_graph`` also raises what TF's does: ``IOError`` ("Cannot parse file"),
  protobuf's ``DecodeError`` for a collection entry that is no proto, and ``KeyError``
  ("... does not exist", "... not in the graph") for a collection naming a missing element.
* Checkpoints, ``tf.train.load_checkpoint`` / ``Saver.restore``: ``tf.errors.OpError``
  (``DataLossError`` for damage, ``NotFoundError``, ...), and ``Saver.restore``'s
  ``ValueError`` for a prefix that is no checkpoint; whatever reads back equals what was
  saved.
* Event files, ``tf.train.summary_iterator``: ``DataLossError`` for bad framing, and
  protobuf's ``DecodeError`` for a well-framed record that is no Event (TF's
  ``Event.FromString`` raises the same).
* AOT artifacts, ``tfc.load``: ``ArtifactError``; an artifact that loads computes what it
  computed before its manifest was edited.

Anything else (IndexError, KeyError, RecursionError, struct.error, UnicodeDecodeError...)
fails the test with a minimised reproducer.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import struct
import traceback
from dataclasses import dataclass

import numpy as np
import pytest
from google.protobuf import text_format
from google.protobuf.message import DecodeError

import tfc
import tfc.compat.v1 as tf
from tfc import ir
from tfc.aot_runtime import ArtifactError, manifest_digest
from tfc.frontend import checkpoint_format as ckpt
from tfc.frontend import errors
from tfc.frontend.graph_io import graph_to_graph_def, load_graph_def
from tfc.frontend.registry import registered_op_types
from tfc.frontend.summary import tfrecord
from tfc.ir.parser import IRParseError
from tfc.ir.verifier import VerifyError
from tfc.protos import BundleEntryProto, BundleHeaderProto, GraphDef
from tfc.testing import fuzz
from tfc.testing.mutate import minimise, minimise_graph_def, mutate_bytes, mutate_graph_def, mutate_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPH_FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "graphs", "*.pb")))
GRAPHDEF_ERRORS = (ValueError, TypeError, errors.OpError)


@dataclass
class Escape:
    """An exception that should not have escaped: its type and where it was raised."""

    key: tuple
    text: str

    @staticmethod
    def of(error: BaseException) -> "Escape":
        frames = traceback.extract_tb(error.__traceback__)
        own = [f for f in frames if "/tfc/" in f.filename] or frames
        where = own[-1]
        key = (type(error).__name__, os.path.basename(where.filename), where.lineno)
        lines = traceback.format_exception(type(error), error, error.__traceback__)
        return Escape(key, "".join(lines[-6:]))


class Escapes:
    """The distinct escapes of one loader, each with a (minimised) reproducer."""

    def __init__(self, loader: str):
        self.loader = loader
        self.found: dict = {}

    def check(self, run, data, describe, minimiser=None) -> None:
        escape = _escape(run, data)
        if escape is None or escape.key in self.found:
            return
        if minimiser is not None:
            data = minimiser(data, lambda d: (_escape(run, d) or Escape((), "")).key == escape.key)
            escape = _escape(run, data) or escape
        self.found[escape.key] = f"{escape.key}\n{describe(data)}\n{escape.text}"

    def assert_none(self) -> None:
        if self.found:
            pytest.fail(f"{len(self.found)} distinct unexpected exception(s) from the {self.loader}:\n\n"
                        + "\n\n".join(self.found.values()))


def _escape(run, data):
    try:
        run(data)
    except AssertionError as e:
        return Escape.of(e)
    except Exception as e:  # noqa: BLE001 - run() lets through only what is not allowed
        return Escape.of(e)
    return None


def _byte_change(original, data) -> str:
    """Where ``data`` differs from ``original``: the span replaced and what replaced it."""
    prefix = 0
    while prefix < min(len(original), len(data)) and original[prefix] == data[prefix]:
        prefix += 1
    suffix = 0
    while (suffix < min(len(original), len(data)) - prefix
           and original[len(original) - 1 - suffix] == data[len(data) - 1 - suffix]):
        suffix += 1
    return (f"the original's {len(original)} bytes with [{prefix}:{len(original) - suffix}] replaced by "
            f"{data[prefix:len(data) - suffix][:200]!r}")


def _min_text(data, fails):
    return minimise(data, fails, max_runs=300, max_seconds=5.0)


# =====================================================================================
# IR text
# =====================================================================================
def _ir_sources() -> list:
    texts = []
    for seed in (3, 5, 11, 21, 40, 77):
        program = fuzz.generate(seed, 6)
        graph, names = fuzz.build(program)
        with graph.as_default():
            compiled = tfc.compile([names[f"v{i}"] for i in program.fetches],
                                   feeds=[names[f"v{i}"] for i in program.placeholders()], native=False)
        texts += [compiled.ir("lower"), compiled.ir("final")]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        y = tf.matmul(x, w) + tf.random_uniform([2], seed=1)
        update = tf.assign_add(w, tf.ones([3, 2]))
        compiled = tfc.compile([y, update], feeds=[x], native=False)
        texts += [compiled.ir("lower"), compiled.ir("final")]
    return texts


def _parse_ir(text: str) -> None:
    try:
        module = ir.parse(text)
    except IRParseError:
        return
    try:
        ir.verify(module)
    except VerifyError:
        return
    printed = str(module)
    assert str(ir.parse(printed)) == printed, "a verified module does not print and parse back to itself"


def test_ir_parser_raises_only_parse_errors():
    sources = _ir_sources()
    for text in sources:
        _parse_ir(text)
    escapes = Escapes("IR parser")
    rng = np.random.default_rng(18)
    for case in range(600):
        text = sources[case % len(sources)]
        for _ in range(int(rng.integers(1, 3))):
            text = mutate_text(rng, text)
        escapes.check(_parse_ir, text, lambda t: f"tfc.ir.parse({t[:3000]!r})", _min_text)
    escapes.assert_none()


def test_ir_parser_survives_deep_nesting():
    for opener in ("[", "(", "{", "<", "dense<[", "f32["):
        text = "func @main() -> () {\n  %0 = constant " + opener * 50000 + "\n}\n"
        with pytest.raises(IRParseError):
            ir.parse(text)


# =====================================================================================
# GraphDefs
# =====================================================================================
def _graph_sources() -> list:
    sources = [GraphDef.FromString(open(path, "rb").read()) for path in GRAPH_FIXTURES]
    with tf.Graph().as_default() as graph:
        program = fuzz.generate(5, 6)
        exec(compile(fuzz.source(program), "<fuzz program>", "exec"), {"tf": tf, "np": np, "rand": fuzz.rand})
        sources.append(graph_to_graph_def(graph))
    return sources


def _import_graph_def(graph_def) -> None:
    with tf.Graph().as_default() as graph:
        try:
            tf.import_graph_def(graph_def, name="")
        except GRAPHDEF_ERRORS:
            return
        graph_to_graph_def(graph)


def _describe_graph_def(graph_def) -> str:
    return ("tf.import_graph_def(text_format.Parse('''\n" + text_format.MessageToString(graph_def)[:4000]
            + "''', tf.GraphDef()), name='')")


def test_import_graph_def_of_wrong_but_parseable_graph_defs():
    sources = _graph_sources()
    op_types = sorted({node.op for g in sources for node in g.node} | set(registered_op_types()[:40]))
    escapes = Escapes("GraphDef importer")
    rng = np.random.default_rng(19)
    for case in range(500):
        graph_def = GraphDef()
        graph_def.CopyFrom(sources[case % len(sources)])
        for _ in range(int(rng.integers(1, 4))):
            mutate_graph_def(rng, graph_def, op_types)
        escapes.check(_import_graph_def, graph_def, _describe_graph_def,
                      lambda g, fails: minimise_graph_def(g, fails, max_runs=300))
    escapes.assert_none()


def test_load_graph_def_of_damaged_bytes(tmp_path):
    sources = [s.SerializeToString() for s in _graph_sources()]
    path = str(tmp_path / "graph.pb")

    def load(data: bytes) -> None:
        with open(path, "wb") as f:
            f.write(data)
        with tf.Graph().as_default() as graph:
            try:
                load_graph_def(path)
            except GRAPHDEF_ERRORS:
                return
            graph_to_graph_def(graph)

    escapes = Escapes("GraphDef file loader")
    rng = np.random.default_rng(20)
    for case in range(500):
        original = data = sources[case % len(sources)]
        for _ in range(int(rng.integers(1, 3))):
            data = mutate_bytes(rng, data)
        escapes.check(load, data, lambda d, o=original: f"load_graph_def(a file holding {_byte_change(o, d)})")
    escapes.assert_none()


def test_import_meta_graph_of_damaged_files(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="v")
        tf.add_to_collection("extra", tf.identity(v * 2.0, name="doubled"))
        tf.summary.scalar("loss", tf.reduce_sum(v))
        meta = tf.train.export_meta_graph()
    data = meta.SerializeToString()
    path = str(tmp_path / "model.meta")

    def load(content: bytes) -> None:
        with open(path, "wb") as f:
            f.write(content)
        with tf.Graph().as_default():
            try:
                tf.train.import_meta_graph(path)
            except (OSError, DecodeError) + GRAPHDEF_ERRORS:
                return
            except KeyError as e:  # TF's Graph.as_graph_element, for a collection naming a missing element
                assert "does not exist" in str(e) or "not in the graph" in str(e), e
                return

    escapes = Escapes("MetaGraphDef loader")
    rng = np.random.default_rng(21)
    for _ in range(400):
        content = data
        for _ in range(int(rng.integers(1, 3))):
            content = mutate_bytes(rng, content)
        escapes.check(load, content, lambda d: f"tf.train.import_meta_graph(a file holding {_byte_change(data, d)})")
    escapes.assert_none()


# =====================================================================================
# Checkpoints
# =====================================================================================
SAVED = {"dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "dense/bias": np.float32([1.5, -2, 0, 3]),
         "step": np.int32(42), "table": np.arange(40, dtype=np.int32)}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """(prefix, graph, saver, variables) of a Saver checkpoint of SAVED."""
    directory = tmp_path_factory.mktemp("ckpt")
    graph = tf.Graph()
    with graph.as_default():
        variables = {name: tf.Variable(value, name=name) for name, value in SAVED.items()}
        saver = tf.train.Saver()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            prefix = saver.save(session, str(directory / "model"))
    return prefix, graph, saver, variables


def _copy_checkpoint(prefix: str, target: str, index: bytes = None, data: bytes = None) -> str:
    for source, content in ((ckpt.index_filename(prefix), index), (ckpt.data_filename(prefix), data)):
        name = target + source[len(prefix):]
        if content is None:
            shutil.copyfile(source, name)
        else:
            with open(name, "wb") as f:
                f.write(content)
    return target


def _read_checkpoint(prefix: str, check_values: bool = True) -> None:
    """Every tensor through tf.train.load_checkpoint; with ``check_values``, what reads back
    must be what was saved (the checksums cover every byte of the files)."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        for name in shapes:
            value = reader.get_tensor(name)
            if check_values:
                assert name in SAVED and np.array_equal(value, SAVED[name]), f"{name} reads back as {value!r}"
    except errors.OpError:
        return


def _index_table(prefix: str) -> list:
    return ckpt.read_table(open(ckpt.index_filename(prefix), "rb").read())


def _build_index(entries: list) -> bytes:
    table = ckpt.TableBuilder()
    for key, value in sorted(entries, key=lambda kv: kv[0]):
        table.add(key, value)
    return table.finish()


def _odd_entry(rng: np.random.Generator, raw: bytes, is_header: bool) -> bytes:
    """A header or entry proto with one field set to an odd value (or garbage bytes)."""
    if rng.random() < 0.15:
        return mutate_bytes(rng, raw)
    if is_header:
        header = BundleHeaderProto.FromString(raw)
        field = int(rng.integers(0, 4))
        if field == 0:
            header.num_shards = int(rng.choice([0, 2, 7, 2**31 - 1]))
        elif field == 1:
            header.version.min_consumer = int(rng.choice([2, 2**30]))
        elif field == 2:
            header.version.producer = int(rng.choice([-1, 0, 2**30]))
        else:
            header.version.bad_consumers.append(1)
        return header.SerializeToString()
    entry = BundleEntryProto.FromString(raw)
    field = int(rng.integers(0, 7))
    if field == 0:
        entry.dtype = int(rng.choice([0, 1, 2, 3, 7, 9, 10, 14, 19, 23, 101, 999]))
    elif field == 1:
        entry.shape.dim.add(size=int(rng.choice([-1, 0, 2, 2**40, 2**62])))
    elif field == 2:
        del entry.shape.dim[:]
    elif field == 3:
        entry.offset = int(rng.choice([-8, 1, 2**40, 2**62]))
    elif field == 4:
        entry.size = int(rng.choice([0, 3, 2**40, 2**63 - 1]))
    elif field == 5:
        entry.shard_id = int(rng.choice([1, -1, 2**31 - 1]))
    else:
        entry.crc32c ^= 1
    return entry.SerializeToString()


def test_checkpoint_reader_of_damaged_files(checkpoint, tmp_path):
    prefix = checkpoint[0]
    _read_checkpoint(prefix)
    index = open(ckpt.index_filename(prefix), "rb").read()
    data = open(ckpt.data_filename(prefix), "rb").read()
    table = _index_table(prefix)
    escapes = Escapes("checkpoint reader")
    rng = np.random.default_rng(22)
    for case in range(600):
        target = str(tmp_path / f"c{case}")
        kind = case % 3
        if kind == 0:
            new_index, new_data, what = mutate_bytes(rng, index), None, "a damaged .index"
        elif kind == 1:
            new_index, new_data, what = None, mutate_bytes(rng, data), "a damaged .data file"
        else:
            position = int(rng.integers(0, len(table)))
            entries = [(k, _odd_entry(rng, v, k == b"") if i == position else v) for i, (k, v) in enumerate(table)]
            new_index, new_data = _build_index(entries), None
            what = f"an index whose entry {table[position][0]!r} is {entries[position][1]!r}"
        _copy_checkpoint(prefix, target, new_index, new_data)
        # a rebuilt index is consistent: it may well describe other tensors (an int32 of the same size...)
        escapes.check(lambda t, kind=kind: _read_checkpoint(t, check_values=kind != 2), target,
                      lambda t, what=what: f"tf.train.load_checkpoint() of {what}")
    escapes.assert_none()


def test_saver_restore_of_damaged_checkpoints(checkpoint, tmp_path):
    prefix, graph, saver, variables = checkpoint
    index = open(ckpt.index_filename(prefix), "rb").read()
    data = open(ckpt.data_filename(prefix), "rb").read()

    def restore(target: str) -> None:
        with graph.as_default(), tf.Session() as session:
            try:
                saver.restore(session, target)
            except errors.OpError:
                return
            except ValueError as e:
                assert "not a valid checkpoint" in str(e), e
                return
            for name, variable in variables.items():
                value = session.run(variable)
                assert np.array_equal(value, SAVED[name]), f"{name} restored as {value!r}"

    escapes = Escapes("Saver.restore")
    rng = np.random.default_rng(23)
    for case in range(30):
        target = str(tmp_path / f"r{case}")
        if case % 2:
            _copy_checkpoint(prefix, target, mutate_bytes(rng, index), None)
        else:
            _copy_checkpoint(prefix, target, None, mutate_bytes(rng, data))
        escapes.check(restore, target, lambda t, case=case: f"Saver.restore of damaged checkpoint case {case}")
    escapes.assert_none()


# =====================================================================================
# Event files
# =====================================================================================
def _event_file(directory: str) -> bytes:
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [3], name="x")
        summary = tf.summary.merge([tf.summary.scalar("mean", tf.reduce_mean(x)), tf.summary.histogram("x", x)])
        writer = tf.summary.FileWriter(directory, graph)
        with tf.Session() as session:
            for step in range(3):
                writer.add_summary(session.run(summary, {x: np.float32([1, 2, step])}), step)
        writer.close()
    (path,) = glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    return open(path, "rb").read()


def _records(data: bytes) -> list:
    out, position = [], 0
    while position < len(data):
        (length,) = struct.unpack("<Q", data[position:position + 8])
        out.append(data[position + 12:position + 12 + length])
        position += 16 + length
    return out


def test_summary_iterator_of_damaged_event_files(tmp_path):
    original = _event_file(str(tmp_path / "logs"))
    records = _records(original)
    assert len(records) >= 4
    path = str(tmp_path / "damaged.tfevents")

    def read(data: bytes) -> None:
        with open(path, "wb") as f:
            f.write(data)
        try:
            for _ in tf.train.summary_iterator(path):
                pass
        except (errors.DataLossError, DecodeError):
            return

    escapes = Escapes("event file reader")
    rng = np.random.default_rng(24)
    for case in range(600):
        if case % 2:
            data = mutate_bytes(rng, original)
        else:  # good framing around a damaged Event
            damaged = list(records)
            k = int(rng.integers(0, len(damaged)))
            damaged[k] = mutate_bytes(rng, damaged[k])
            data = b"".join(tfrecord(r) for r in damaged)
        escapes.check(read, data, lambda d: f"tf.train.summary_iterator(a file holding {_byte_change(original, d)})")
    escapes.assert_none()


# =====================================================================================
# AOT artifacts
# =====================================================================================
AOT_INPUT = np.linspace(-1, 1, 2 * 5, dtype=np.float32).reshape(2, 5)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """(directory, expected output) of a saved artifact with frozen weights and a symbolic batch."""
    directory = str(tmp_path_factory.mktemp("artifact"))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5], name="x")
        w = tf.Variable(np.linspace(-2, 2, 5 * 80, dtype=np.float32).reshape(5, 80), name="w")
        y = tf.nn.softmax(tf.matmul(x, w), name="y")
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            compiled = tfc.compile(y, feeds=[x], session=session, freeze_variables=True)
            compiled.save(directory)
            expected = session.run(y, {x: AOT_INPUT})
    return directory, expected


def _copy_artifact(directory: str, target: str) -> str:
    shutil.copytree(directory, target)
    return target


def _reseal(directory: str, manifest: dict) -> None:
    """Write ``manifest`` with its files' hashes and its own digest recomputed."""
    files = manifest.get("files")
    if isinstance(files, dict):
        for name, spec in files.items():
            path = os.path.join(directory, name)
            if isinstance(spec, dict) and os.path.isfile(path):
                content = open(path, "rb").read()
                spec["bytes"], spec["sha256"] = len(content), hashlib.sha256(content).hexdigest()
    manifest["manifest_sha256"] = manifest_digest(manifest)
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f)


ODD_JSON = (None, 0, -1, 2**70, 1.5, "", "x", [], {}, [1, 2], {"a": 1}, True)


def _odd_json(rng: np.random.Generator, node, path: str = "manifest") -> tuple:
    """(``node`` with one value somewhere inside replaced, deleted or retyped, what changed)."""
    if isinstance(node, dict) and node and rng.random() < 0.75:
        key = str(rng.choice(sorted(node)))
        if rng.random() < 0.2:
            return {k: v for k, v in node.items() if k != key}, f"del {path}[{key!r}]"
        value, change = _odd_json(rng, node[key], f"{path}[{key!r}]")
        return {**node, key: value}, change
    if isinstance(node, list) and node and rng.random() < 0.75:
        i = int(rng.integers(0, len(node)))
        if rng.random() < 0.2:
            return node[:i] + node[i + 1:], f"del {path}[{i}]"
        value, change = _odd_json(rng, node[i], f"{path}[{i}]")
        return node[:i] + [value] + node[i + 1:], change
    if isinstance(node, int) and not isinstance(node, bool) and rng.random() < 0.5:
        value = node + int(rng.choice([-1, 1, 64, -(2**40)]))
    else:
        value = ODD_JSON[int(rng.integers(0, len(ODD_JSON)))]
    return value, f"{path} = {value!r}"


def _load_and_call(directory: str, expected) -> None:
    try:
        model = tfc.load(directory)
    except ArtifactError:
        return
    got = model(AOT_INPUT)
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-6), "a damaged artifact loaded and computed a wrong result"


def test_aot_load_of_damaged_artifacts(artifact, tmp_path):
    directory, expected = artifact
    _load_and_call(directory, expected)
    manifest = json.load(open(os.path.join(directory, "manifest.json")))
    library, weights = manifest["library"], manifest["weights"]["file"]
    escapes = Escapes("AOT loader")
    rng = np.random.default_rng(25)
    for case in range(200):
        target = _copy_artifact(directory, str(tmp_path / f"a{case}"))
        kind = case % 5
        if kind == 0:
            name, what = "manifest.json", "damaged manifest.json bytes"
        elif kind == 1:
            name, what = library, f"a damaged {library}"
        elif kind == 2:
            name, what = weights, f"a damaged {weights}"
        if kind <= 2:
            path = os.path.join(target, name)
            content = mutate_bytes(rng, open(path, "rb").read())
            with open(path, "wb") as f:
                f.write(content)
        elif kind == 3:
            edited, change = _odd_json(rng, manifest)
            _reseal(target, edited if isinstance(edited, dict) else {"edited": edited})
            what = f"a manifest edited ({change}) and resealed"
        else:
            path = os.path.join(target, weights)
            content = bytearray(open(path, "rb").read())
            position = int(rng.integers(0, 64))  # the header: magic, version, sizes
            content[position] ^= 0xFF
            with open(path, "wb") as f:
                f.write(bytes(content))
            _reseal(target, json.loads(json.dumps(manifest)))
            what = f"a weights file with header byte {position} flipped, resealed"
        escapes.check(lambda t: _load_and_call(t, expected), target, lambda t, what=what: f"tfc.load({what})")
    escapes.assert_none()
