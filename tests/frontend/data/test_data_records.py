"""TFRecord files: tfc's writer gives TensorFlow's bytes, files TensorFlow wrote read back
in tfc (TFRecordDataset and tf_record_iterator), compressed files both ways, and corrupt
files raise TF's DataLossError messages at the same record."""
import gzip
import zlib

import numpy as np
import pytest

import tfc.compat.v1 as tf

from conftest import drain, load_fixture

RECORDS = load_fixture()["records"]
PAYLOADS = [bytes.fromhex(h) for h in RECORDS["records_hex"]]


def test_writer_writes_tensorflows_bytes(tmp_path):
    path = str(tmp_path / "mine.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for payload in PAYLOADS:
            writer.write(payload)
    assert open(path, "rb").read() == bytes.fromhex(RECORDS["file_hex"])
    other = str(tmp_path / "py_io.tfrecord")  # the tf.python_io spelling, records as str too
    writer = tf.python_io.TFRecordWriter(other)
    writer.write("hello")
    writer.flush()
    writer.close()
    assert list(tf.python_io.tf_record_iterator(other)) == [b"hello"]


def test_file_written_by_tensorflow_reads_back(tmp_path):
    path = tmp_path / "tf.tfrecord"
    path.write_bytes(bytes.fromhex(RECORDS["file_hex"]))
    assert list(tf.io.tf_record_iterator(str(path))) == PAYLOADS
    with tf.Graph().as_default():
        got = [e[0].item() for e in drain(tf.data.TFRecordDataset([str(path), str(path)]))]
    assert got == PAYLOADS * 2


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_compressed_files_both_ways(tmp_path, kind):
    theirs = tmp_path / "theirs"
    theirs.write_bytes(bytes.fromhex(RECORDS[f"{kind.lower()}_file_hex"]))
    options = tf.io.TFRecordOptions(kind)
    assert list(tf.io.tf_record_iterator(str(theirs), options)) == PAYLOADS
    mine = str(tmp_path / "mine")
    with tf.io.TFRecordWriter(mine, options) as writer:
        for payload in PAYLOADS:
            writer.write(payload)
    raw = open(mine, "rb").read()
    plain = gzip.decompress(raw) if kind == "GZIP" else zlib.decompress(raw)
    assert plain == bytes.fromhex(RECORDS["file_hex"])  # TF's framing inside TF's container format
    with tf.Graph().as_default():
        got = [e[0].item() for e in drain(tf.data.TFRecordDataset(mine, compression_type=kind))]
    assert got == PAYLOADS
    assert tf.io.TFRecordOptions.get_compression_type_string(tf.io.TFRecordCompressionType.GZIP) == "GZIP"


@pytest.mark.parametrize("name", sorted(RECORDS["corrupt"]))
def test_corrupt_files_raise_tensorflows_data_loss_errors(tmp_path, name):
    case = RECORDS["corrupt"][name]
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(bytes.fromhex(case["file_hex"]))
    if "iterator_error" in case:
        with pytest.raises(tf.errors.DataLossError) as info:
            list(tf.io.tf_record_iterator(str(path)))
        assert [type(info.value).__name__, str(info.value)] == case["iterator_error"]
    else:
        assert [r.hex() for r in tf.io.tf_record_iterator(str(path))] == case["iterator_records"]
    with tf.Graph().as_default():
        element = tf.data.TFRecordDataset(str(path)).make_one_shot_iterator().get_next()
        got = []
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OpError) as info:  # DataLossError, or End of sequence (a cut header)
                while True:
                    got.append(sess.run(element).hex())
            assert [type(info.value).__name__, info.value.message] == case["dataset_error"]
            assert info.value.op.name == "IteratorGetNext"
    assert got == case["dataset_records"]


def test_round_trip_of_examples_through_a_pipeline(tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    images = np.random.RandomState(0).rand(10, 4).astype(np.float32)
    with tf.io.TFRecordWriter(path) as writer:
        for i, image in enumerate(images):
            feature = {"image": tf.train.Feature(float_list=tf.train.FloatList(value=image)),
                       "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3]))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    spec = {"image": tf.io.FixedLenFeature([2, 2], tf.float32), "label": tf.io.FixedLenFeature([], tf.int64)}
    with tf.Graph().as_default():
        dataset = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec)) \
            .map(lambda d: (d["image"] * 2.0, d["label"])).batch(4)
        assert dataset.output_shapes[0].as_list() == [None, 2, 2]
        batches = drain(dataset)
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), images.reshape(10, 2, 2) * 2)
    assert np.concatenate([b[1] for b in batches]).tolist() == [i % 3 for i in range(10)]


def test_text_and_fixed_length_files(tmp_path):
    text = tmp_path / "t.txt.gz"
    text.write_bytes(gzip.compress(b"one\r\ntwo\n\nthree\n"))
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"xx" + bytes(range(7)))
    with tf.Graph().as_default():
        lines = [e[0].item() for e in drain(tf.data.TextLineDataset(str(text), compression_type="GZIP"))]
        assert lines == [b"one", b"two", b"", b"three"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="not an exact multiple of the record length"):
            drain(tf.data.FixedLengthRecordDataset(str(binary), 2, header_bytes=2))
        records = [e[0].item() for e in drain(tf.data.FixedLengthRecordDataset(str(binary), 7, header_bytes=2))]
        assert records == [bytes(range(7))]
        with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
            drain(tf.data.TextLineDataset(str(tmp_path / "missing.txt")))
