"""Records Kafka producers sent, kept to answer Fetches of them as they came.

A Fetch answer built from a stored entry costs a few Python operations per record (the
records are framed one by one: records.entry_batch); a consumer reading what a Kafka
producer has just written, the usual consumer, can be answered with the records the
producer sent instead, under a header of the entry's offsets and publish time
(records.records_as_stored): per entry, not per record. Only a batch whose records read
back from the entry byte for byte as they came is kept (Batch.records), and it serves
only the entry it became (the same first and last seq-id and publish time: a topic
deleted and created again has other entries under the same seq-ids), in a topic that
is not compacted (a compaction rewrites entries and turns empty values into tombstones).

Bounded by `[kafka] produced_cache_bytes`, the oldest kept leaving first: a consumer far
behind is answered from the ledger, as before.
"""

from collections import OrderedDict


class ProducedBatches:
    """(topic, first seq-id) -> (last seq-id, publish time, records), `max_bytes` of
    records at most (0: none kept)."""

    __slots__ = ("_batches", "bytes", "max_bytes")

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._batches = OrderedDict()

    def __len__(self) -> int:
        return len(self._batches)

    def keep(self, topic: str, entry, records: bytes) -> None:
        """Keep `records`, stored as `entry` (a LogEntry) of `topic`."""
        size = len(records)
        if size > self.max_bytes:
            return
        key = (topic, entry.first_seq)
        batches = self._batches
        old = batches.pop(key, None)
        if old is not None:
            self.bytes -= len(old[2])
        while self.bytes + size > self.max_bytes:
            _key, (_last, _time, gone) = batches.popitem(last=False)
            self.bytes -= len(gone)
        batches[key] = (entry.last_seq, entry.publish_time_us, records)
        self.bytes += size

    def records(self, topic: str, entry):
        """The records kept for `entry` (a LogEntry) of `topic`, or None."""
        kept = self._batches.get((topic, entry.first_seq))
        if kept is None or kept[0] != entry.last_seq or kept[1] != entry.publish_time_us:
            return None
        return kept[2]
