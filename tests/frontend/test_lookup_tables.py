"""Lookup tables (tf.lookup, tf.lookup.experimental, tf.contrib.lookup) and string hash
buckets against TensorFlow (fixture: tests/fixtures/make_lookup_fixture.py, whose programs
run here with tfc): graphs (node names, types, inputs, attrs), values and errors."""
import importlib.util
import json
import os

import pytest

import tfc
import tfc.compat.v1 as tf
import tfc.contrib.lookup as contrib_lookup
from tfc.frontend import lookup as lk
from tfc.frontend.ops.string_hash_ops import fingerprint64, hash64, siphash24

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
spec = importlib.util.spec_from_file_location("make_lookup_fixture", os.path.join(FIXTURES, "make_lookup_fixture.py"))
fx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fx)
with open(os.path.join(FIXTURES, "lookup_tables.json")) as f:
    EXPECTED = json.load(f)["programs"]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


@pytest.fixture
def vocab_dir(tmp_path, monkeypatch):
    fx.write_files(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tf115_graph(ops):
    """TF 2's ``math_ops.add`` makes AddV2 where TF 1.15 (and tfc) make Add."""
    return [[name, "Add" if (op_type == "AddV2" and name.rsplit("/", 1)[-1].startswith("Add")) else op_type,
             inputs, attrs] for name, op_type, inputs, attrs in ops]


@pytest.mark.parametrize("program", fx.PROGRAMS, ids=lambda p: p.__name__)
def test_program_matches_tensorflow(program, vocab_dir):
    name = program.__name__
    got = fx.run_program(tf, lk, program, name in fx.GRAPH_PROGRAMS)
    expected = EXPECTED[name]
    if "graph" in expected:
        assert got["graph"] == _tf115_graph(expected["graph"])
    assert got.get("build_error") == expected.get("build_error")
    assert got.get("steps") == expected.get("steps")


def test_hash_functions_match_tensorflow():
    strings = [s.encode() for s in fx.HASH_STRINGS] + fx.HASH_BYTES
    steps = EXPECTED["hash_buckets"]["steps"][0]
    for nb in fx.BUCKETS:
        assert [fingerprint64(s) % nb for s in strings] == steps[f"fast_{nb}"]["value"]
        assert [hash64(s) % nb for s in strings] == steps[f"legacy_{nb}"]["value"]
        for i, key in enumerate(fx.STRONG_KEYS):
            assert [siphash24(key, s) % nb for s in strings] == steps[f"strong{i}_{nb}"]["value"]
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F  # farmhash's k2, as TF's bucket of "" shows
    assert steps[f"fast_{2 ** 62 + 3}"]["value"][0] == 0x9AE16A3B2F90404F % (2 ** 62 + 3)


def test_tf1_namespaces():
    assert tf.lookup.StaticHashTable is lk.StaticHashTable
    assert tf.lookup.StaticVocabularyTable is lk.StaticVocabularyTable
    assert tf.lookup.TextFileIndex.WHOLE_LINE == -2 and tf.lookup.TextFileIndex.LINE_NUMBER == -1
    assert tf.lookup.experimental.MutableHashTable is lk.MutableHashTable
    assert tf.lookup.experimental.DenseHashTable is lk.DenseHashTable
    assert tf.initialize_all_tables is lk.initialize_all_tables
    assert tf.strings.to_hash_bucket_fast is tf.string_to_hash_bucket_fast
    assert tf.strings.to_hash_bucket_strong is tf.string_to_hash_bucket_strong
    assert tf.strings.to_hash_bucket is tf.string_to_hash_bucket
    assert tfc.contrib.lookup is contrib_lookup
    assert contrib_lookup.MutableDenseHashTable is lk.DenseHashTable
    assert contrib_lookup.index_table_from_file is lk.index_table_from_file
    with pytest.raises(AttributeError) as e:
        tf.lookup.experimental.NoSuchTable  # noqa: B018
    assert str(e.value) == "module 'tfc.lookup.experimental' has no attribute 'NoSuchTable'"


def test_contrib_helpers(vocab_dir):
    mapping = tf.constant(["emerson", "lake", "palmer"])
    table = contrib_lookup.index_table_from_tensor(mapping=mapping, num_oov_buckets=1, default_value=-1)
    ids = table.lookup(tf.constant(["emerson", "lake", "and", "palmer"]))
    plain = contrib_lookup.string_to_index(tf.constant(["lake", "x"]), mapping=mapping)
    names = contrib_lookup.index_to_string(tf.constant([1, 5], tf.int64), mapping=mapping, default_value="UNKNOWN")
    legacy = contrib_lookup.string_to_index_table_from_file("vocab.txt", num_oov_buckets=2)
    hash_table = contrib_lookup.HashTable(contrib_lookup.KeyValueTensorInitializer(["k"], [4]), -1)
    assert hash_table.resource_handle.op.get_attr("shared_name") == b""  # contrib's HashTable: no shared name
    assert (ids.op.type, ids.op.name) == ("SelectV2", "hash_table_Lookup/SelectV2")
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got = sess.run([ids, plain, names, legacy.lookup(tf.constant(["palmer", "and"])),
                        hash_table.lookup(tf.constant(["k", "j"])), hash_table.export()])
    # 'and' -> 3 is TF's bucket (fixture: index_table_from_tensor_oov / file_oov use the same hash)
    assert got[0].tolist() == [0, 1, 3, 2]
    assert got[1].tolist() == [1, -1]
    assert got[2].tolist() == [b"lake", b"UNKNOWN"]
    assert got[3].tolist() == [2, 3 + fingerprint64(b"and") % 2]
    assert got[4].tolist() == [4, -1] and got[5][0].tolist() == [b"k"] and got[5][1].tolist() == [4]
    with pytest.raises(ValueError) as e:
        contrib_lookup.string_to_index_table_from_tensor([1, 2])
    assert str(e.value) == "string_to_index_table_from_tensor requires string."


def test_tables_live_in_their_session_and_shared_across_steps():
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a", "b"], [1, 2]), -1)
    found = table.lookup(tf.constant(["b", "c"]))
    mutable = lk.MutableHashTable(tf.int64, tf.int64, 0)
    insert = mutable.insert(tf.constant([3], tf.int64), tf.constant([30], tf.int64))
    with tf.Session() as first, tf.Session() as second:
        first.run([table.initializer, insert])
        assert first.run(found).tolist() == [2, -1]
        assert first.run(mutable.lookup(tf.constant([3, 4], tf.int64))).tolist() == [30, 0]
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            second.run(found)
        assert e.value.message == "Table not initialized."
        assert second.run(mutable.size()) == 0


def test_fed_and_computed_keys_with_compiled_consumers():
    table = lk.index_table_from_tensor(["zero", "one", "two"], num_oov_buckets=2)
    words = tf.placeholder(tf.string, [None])
    ids = table.lookup(words)
    doubled = ids * 2 + 1  # compiled, from the host lookup's result
    names = lk.index_to_string_table_from_tensor(["zero", "one", "two"])
    logits = tf.placeholder(tf.float32, [None, 3])
    best = names.lookup(tf.argmax(logits, axis=1))  # keys computed by the program
    assert ids.shape.as_list() == [None] and best.dtype == tf.string
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got = sess.run([ids, doubled, best], {words: ["two", "zero", "many"],
                                              logits: [[0.0, 1.0, 0.5], [3.0, 1.0, 2.0]]})
    oov = 3 + fingerprint64(b"many") % 2
    assert got[0].tolist() == [2, 0, oov] and got[1].tolist() == [5, 1, 2 * oov + 1]
    assert got[2].tolist() == [b"one", b"zero"]


def test_graph_def_round_trip_runs_imported_tables(vocab_dir):
    graph = tf.Graph()
    with graph.as_default():
        table = lk.index_table_from_file("vocab.txt", num_oov_buckets=1)
        table.lookup(tf.constant(["palmer", "nope"]), name="ids")
        tf.tables_initializer(name="init_tables")
    imported = tf.Graph()
    with imported.as_default():
        tf.import_graph_def(graph.as_graph_def(), name="")
        with tf.Session() as sess:
            sess.run("init_tables")
            assert sess.run("ids/SelectV2:0").tolist() == [2, 3 + fingerprint64(b"nope") % 1]


def test_mutable_hash_table_checkpoint(tmp_path):
    table = lk.MutableHashTable(tf.string, tf.float32, -1.0, name="weights")
    insert = table.insert(tf.constant(["a", "b"]), tf.constant([0.5, 1.5]))
    found = table.lookup(tf.constant(["b", "a", "c"]))
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model")
    with tf.Session() as sess:
        sess.run(insert)
        saver.save(sess, prefix)
    assert sorted(name for name, _ in tf.train.list_variables(prefix)) == ["weights-keys", "weights-values"]
    with tf.Session() as sess:
        assert sess.run(found).tolist() == [-1.0, -1.0, -1.0]
        saver.restore(sess, prefix)
        assert sess.run(found).tolist() == [1.5, 0.5, -1.0]
        assert sess.run(table.size()) == 2


def test_python_errors_are_tf_1_15s(vocab_dir):
    ti = tf.lookup.TextFileInitializer
    cases = [
        (lambda: lk.index_table_from_file("vocab.txt", vocab_size=0), ValueError,
         "vocab_size must be greater than 0, got 0. vocabulary_file: vocab.txt"),
        (lambda: lk.index_table_from_file("vocab.txt", num_oov_buckets=-1), ValueError,
         "num_oov_buckets must be greater or equal than 0, got -1."),
        (lambda: lk.index_table_from_file(""), ValueError, "vocabulary_file must be specified and must not be empty."),
        (lambda: lk.index_table_from_tensor(None), ValueError, "vocabulary_list must be specified."),
        (lambda: lk.index_table_from_tensor([1, 2]), ValueError, "Expected non-integer, got <dtype: 'int32'>."),
        (lambda: lk.index_table_from_file("vocab.txt", key_dtype=tf.float32), TypeError,
         "Only integer and string keys are supported."),
        (lambda: ti("vocab.txt", tf.string, -3, tf.int64, -1), ValueError, "Invalid key index -3."),
        (lambda: ti("vocab.txt", tf.string, -1, tf.int64, -1), ValueError,
         "Signature mismatch. Keys must be dtype <dtype: 'int64'>, got <dtype: 'string'>."),
        (lambda: ti("vocab.txt", tf.string, -2, tf.int32, -1), ValueError,
         "Signature mismatch. Values must be dtype <dtype: 'int64'>, got <dtype: 'int32'>."),
        (lambda: ti("vocab.txt", tf.string, -2, tf.int64, -1, vocab_size=0), ValueError, "Invalid vocab_size 0."),
        (lambda: tf.lookup.StaticVocabularyTable(None, 0), ValueError, "oov_buckets must be > 0."),
        (lambda: lk.StrongHashSpec([1, 2, 3]), ValueError, "key must have size 2, got 3."),
        (lambda: tf.lookup.StaticHashTable(ti("vocab.txt", tf.string, -2, tf.int64, -1), [1, 2]), ValueError,
         "Shapes (2,) and () are not compatible"),
        (lambda: tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["a"], [1]), -1).lookup(
            tf.constant([1])), TypeError, "Signature mismatch. Keys must be dtype <dtype: 'string'>, got "
                                          "<dtype: 'int32'>."),
        (lambda: lk.MutableHashTable(tf.int64, tf.int64, 0).remove(tf.constant(["a"])), TypeError,
         "Signature mismatch. Keys must be dtype <dtype: 'int64'>, got <dtype: 'string'>."),
    ]
    for make, error, message in cases:
        with pytest.raises(error) as e:
            make()
        assert str(e.value) == message


def test_node_attrs_and_shapes():
    dense = lk.DenseHashTable(tf.int64, tf.float32, [0.0, 0.0], empty_key=-1, deleted_key=-2)
    handle = dense.resource_handle.op
    assert (handle.type, handle.get_attr("initial_num_buckets"), [d.size for d in handle.get_attr("value_shape").dim],
            handle.get_attr("max_load_factor")) == ("MutableDenseHashTableV2", 131072, [2], pytest.approx(0.8))
    assert [t.name for t in handle.inputs] == ["empty_key:0", "deleted_key:0"]
    assert dense.lookup(tf.constant([[1, 2]], tf.int64)).shape.as_list() == [1, 2, 2]
    vectors = lk.MutableHashTable(tf.string, tf.int32, [0, 0, 0])
    assert vectors.resource_handle.op.type == "MutableHashTableOfTensorsV2"
    assert vectors.lookup(tf.constant(["a", "b"])).shape.as_list() == [2, 3]
    keys, values = vectors.export()
    assert keys.shape.as_list() == [None] and values.shape.as_list() == [None, 3]
    saveables = tf.get_collection(tf.GraphKeys.SAVEABLE_OBJECTS)
    assert [s.name for s in saveables] == ["MutableDenseHashTable", "MutableHashTable"]
    no_checkpoint = lk.MutableHashTable(tf.int64, tf.int64, 0, checkpoint=False)
    assert no_checkpoint.resource_handle.op.get_attr("use_node_name_sharing") is False
    assert len(tf.get_collection(tf.GraphKeys.SAVEABLE_OBJECTS)) == 2


def test_saved_model_carries_the_vocabulary_as_an_asset(vocab_dir):
    table = lk.index_table_from_file("vocab.txt", num_oov_buckets=1)
    words = tf.placeholder(tf.string, [None], name="words")
    tf.identity(table.lookup(words), name="ids")
    assets = tf.get_collection(tf.GraphKeys.ASSET_FILEPATHS)
    assert [t.op.name for t in assets] == ["string_to_index/hash_table/asset_path"]
    with tf.Session() as sess:
        builder = tf.saved_model.builder.SavedModelBuilder("export")
        builder.add_meta_graph_and_variables(sess, ["serve"],
                                             assets_collection=assets, main_op=tf.tables_initializer())
        builder.save()
    os.remove("vocab.txt")  # the loaded model reads export/assets/vocab.txt
    with tf.Session(graph=tf.Graph()) as sess:
        tf.saved_model.loader.load(sess, ["serve"], "export")
        assert sess.run("ids:0", {"words:0": ["palmer", "nope"]}).tolist() == [2, 3]
