"""Fast paths of the run-time pipeline that must not change what it hands out:
``from_tensor_slices(...).shuffle(...)`` shuffles row numbers and gathers rows once (the
same order as shuffling the rows themselves), and ``take`` ends its input's pass as soon
as it has its elements (as TF resets it; a cache being written is discarded then)."""
import numpy as np

from tfc.frontend.data import batching, pipeline, shuffle


class _RowsShuffled(pipeline.Node):
    """The shuffle over the rows themselves (the general path), for comparison."""

    def __init__(self, node):
        self.node = node

    def iterator(self):
        return shuffle._ShuffleIter(self.node)


def _all(node, limit=1) -> list:
    reader = pipeline.Reader(node.iterator())
    out = []
    while True:
        chunk = reader.read(limit)
        if chunk is None:
            return out
        out.append(chunk)


def test_shuffled_row_numbers_give_the_rows_order():
    features = np.arange(1000 * 3, dtype=np.float32).reshape(1000, 3)
    words = np.array([b"w%d" % i for i in range(1000)], dtype=object)
    source = pipeline.TensorSlices([features, words])
    for batch in (1, 7, 128):
        fast = shuffle.Shuffle(source, 100, 5, 6, True)
        slow = shuffle.Shuffle(source, 100, 5, 6, True)
        assert isinstance(shuffle.Shuffle(source, 100, 5, 6, True).iterator(), shuffle._GatherIter)
        got = _all(batching.Batch(fast, batch, False))
        want = _all(batching.Batch(_RowsShuffled(slow), batch, False))
        assert len(got) == len(want) == -(-1000 // batch)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g[0], w[0])
            assert g[1].tolist() == w[1].tolist()
        rows = np.concatenate([g[0][0] for g in got])
        assert sorted(rows[:, 0].tolist()) == features[:, 0].tolist()  # a permutation of the rows
        assert rows.flags.writeable  # gathered: the consumer may keep it


def test_take_closes_its_input_when_done():
    closed = []

    class Watched(pipeline.Iter):
        def __init__(self):
            self.inner = pipeline.Range(0, 10, 1).iterator()

        def next_chunk(self, limit):
            return self.inner.next_chunk(limit)

        def close(self):
            closed.append(True)

    class Source(pipeline.Node):
        def iterator(self):
            return Watched()

    it = pipeline.Take(Source(), 3).iterator()
    assert it.next_chunk(5)[0].tolist() == [0, 1, 2]
    assert closed == []
    assert it.next_chunk(5) is None
    assert closed == [True]
    assert it.next_chunk(5) is None and closed == [True]
