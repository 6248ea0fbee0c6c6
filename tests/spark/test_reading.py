"""A task's read loop, against a store that answers READ_RANGE as docs/protocol.md says.

The store holds real encoded entries and slices them the way a hub does, so the loop's
own decisions are tested here without sockets: batching, clipping, data loss between
planning and reading, and hubs that answer with less than was planned. The same loop
against real hubs is in test_source.py.
"""

import pytest

from hedwig.client.errors import SeqOutOfRange
from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.protocol.requests import ReadRangeReply
from hedwig.spark.offsets import DataLoss, TopicBounds
from hedwig.spark.reading import RangeNotAvailable, read_seq_range


class StoredTopic:
    """Entries of one topic, answered like READ_RANGE: whole entries holding from_seq
    onwards, each with [start, stop) inside the range, up to max_bytes (at least one)."""

    def __init__(self, sizes, payload=lambda seq: b"m%d" % seq):
        self.entries = []
        seq = 1
        for size in sizes:
            messages = [payload(s) for s in range(seq, seq + size)]
            header = encode_entry_header(seq, size, 1_700_000_000_000_000, b"eu", seq)
            self.entries.append((seq, size, header + encode_message_set(messages)))
            seq += size
        self.last_seq = seq - 1
        self.first_seq = 1
        self.requests = []

    def collect_below(self, seq):
        """Garbage collection: drop whole entries that end below `seq`."""
        self.entries = [e for e in self.entries if e[0] + e[1] - 1 >= seq]
        self.first_seq = self.entries[0][0] if self.entries else self.last_seq + 1

    def bounds(self, topic):
        return TopicBounds(self.first_seq, self.last_seq)

    def read_range(self, topic, from_seq, to_seq, max_bytes):
        self.requests.append((from_seq, to_seq))
        if from_seq < self.first_seq:
            raise SeqOutOfRange(message=f"{from_seq} < {self.first_seq}")
        to_seq = to_seq or self.last_seq
        reply, size = [], 0
        for first, count, data in self.entries:
            last = first + count - 1
            if last < from_seq or first > to_seq:
                continue
            if reply and size >= max_bytes:
                break
            reply.append((max(0, from_seq - first), min(count, to_seq - first + 1), memoryview(data)))
            size += len(data)
        return ReadRangeReply(self.first_seq, self.last_seq, reply)


def read_all(store, from_seq, to_seq, **kwargs):
    kwargs.setdefault("max_bytes", 200)
    kwargs.setdefault("rows_per_batch", 1000)
    return list(read_seq_range(store, "t", from_seq, to_seq, **kwargs))


def seqs(batches):
    return [s for b in batches for s in b.column("seq").to_pylist()]


def test_a_range_inside_entries_reads_exactly_its_seq_ids():
    store = StoredTopic([5, 5, 5, 5])
    batches = read_all(store, 3, 17)
    assert seqs(batches) == list(range(3, 18))
    assert [p for b in batches for p in b.column("payload").to_pylist()] == [b"m%d" % s for s in range(3, 18)]
    assert len(store.requests) > 1  # max_bytes made it several requests


def test_a_batch_closes_at_the_entry_that_reaches_rows_per_batch():
    store = StoredTopic([4] * 10)
    batches = read_all(store, 1, 40, rows_per_batch=10, max_bytes=10_000)
    assert seqs(batches) == list(range(1, 41))
    assert [b.num_rows for b in batches] == [12, 12, 12, 4]


def test_pieces_beyond_the_range_are_clipped_even_if_the_hub_sends_them():
    class Generous(StoredTopic):
        def read_range(self, topic, from_seq, to_seq, max_bytes):
            return super().read_range(topic, from_seq, 0, max_bytes)  # ignores to_seq

    assert seqs(read_all(Generous([5, 5, 5]), 2, 8)) == list(range(2, 9))


def test_a_range_collected_after_planning_fails_with_a_clear_message():
    store = StoredTopic([5, 5, 5])
    store.collect_below(6)
    with pytest.raises(DataLoss, match=r"seq-ids 2\.\.5 of topic 't' were removed"):
        read_all(store, 2, 15)


def test_with_fail_on_data_loss_false_the_rest_is_read():
    store = StoredTopic([5, 5, 5])
    store.collect_below(6)
    said = []
    batches = read_all(store, 2, 12, fail_on_data_loss=False, log=said.append)
    assert seqs(batches) == list(range(6, 13))
    assert "skipping seq-ids 2..5" in said[0]


def test_a_range_wholly_collected_reads_nothing_when_allowed():
    store = StoredTopic([5, 5, 5])
    store.collect_below(11)
    assert seqs(read_all(store, 1, 10, fail_on_data_loss=False)) == []


def test_a_hub_holding_less_than_planned_is_an_error():
    store = StoredTopic([5, 5])
    with pytest.raises(RangeNotAvailable, match=r"seq-ids 11\.\.12 were planned.*holds 1\.\.10"):
        read_all(store, 1, 12)
