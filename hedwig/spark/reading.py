"""One Spark task's work: read a seq-id range from a hub and yield Arrow record batches.

The range is read in READ_RANGE requests of at most `max_bytes` of entries each, so a
task holds one reply and one batch being built, whatever the size of the range. Each
reply's entries go straight into the batch builder (no per-message work). The reader
trusts nothing it did not ask for: pieces beyond the range are clipped, a gap is an
error, and a range that garbage collection removed between planning and reading fails
the task (or is skipped, with failOnDataLoss false). `read_table` reads a topic as a
table instead (the `compacted` option): one row per live key.
"""

from collections.abc import Iterator

import pyarrow as pa

from hedwig.protocol.entry import decode_entry_header, entry_messages
from hedwig.protocol.errors import SeqOutOfRange
from hedwig.spark.batches import RecordBatchBuilder
from hedwig.spark.offsets import TopicBounds, skip_lost

# A batch is handed to Spark once it holds this many payload bytes, whatever its rows,
# so large messages do not make a batch (and a Python worker) grow without bound.
MAX_BATCH_BYTES = 32 << 20


class RangeNotAvailable(RuntimeError):
    """The hub holds fewer messages than were planned (it was replaced, or lost data)."""


def read_seq_range(
    hub,
    topic: str,
    from_seq: int,
    to_seq: int,
    *,
    max_bytes: int,
    rows_per_batch: int,
    fail_on_data_loss: bool = True,
    log=None,
) -> Iterator[pa.RecordBatch]:
    """Yield seq-ids from_seq..to_seq of `topic` as record batches.

    `hub` needs read_range(topic, from_seq, to_seq, max_bytes) -> a reply with
    first_seq, last_seq and entries [(start, stop, entry bytes)], and bounds(topic) ->
    TopicBounds (hedwig.spark.hubs.HubReader).
    """
    builder = RecordBatchBuilder(topic, next_seq=from_seq)
    while builder.next_seq <= to_seq:
        next_seq = builder.next_seq
        try:
            reply = hub.read_range(topic, next_seq, to_seq, max_bytes)
        except SeqOutOfRange:
            bounds = hub.bounds(topic)
            if bounds.first_seq <= next_seq:  # the hub said it was gone: it must be
                raise
            reply = None
        else:
            bounds = TopicBounds(reply.first_seq, reply.last_seq)
        if bounds.first_seq > next_seq:
            builder.next_seq = skip_lost(topic, next_seq - 1, bounds, fail_on_data_loss, log) + 1
            continue
        if not reply.entries:
            raise RangeNotAvailable(
                f"topic {topic!r}: seq-ids {next_seq}..{to_seq} were planned for this read, "
                f"but the hub holds {bounds.first_seq}..{bounds.last_seq}"
            )
        added = 0
        for start, stop, entry in reply.entries:
            added += builder.add(start, stop, entry, up_to=to_seq)
            if builder.rows >= rows_per_batch or builder.payload_bytes >= MAX_BATCH_BYTES:
                yield builder.build()
        if not added and builder.next_seq == next_seq:  # (a compacted topic's gaps move it on)
            raise RangeNotAvailable(
                f"topic {topic!r}: the hub answered a read of seq {next_seq} with no message of it"
            )
    if builder.rows:
        yield builder.build()


def read_table(
    hub,
    topic: str,
    from_seq: int,
    to_seq: int,
    *,
    max_bytes: int,
    rows_per_batch: int,
) -> Iterator[pa.RecordBatch]:
    """Seq-ids from_seq..to_seq of `topic` read as a table (the source's `compacted`
    option): one row per live key, its latest message, in seq-id order; a key whose
    latest message is a tombstone (an empty payload) and messages without a key give
    none. The whole range is read first (holding the entries of the latest messages)."""
    latest = {}  # key -> (seq, entry bytes, its offset from the entry's first seq-id, empty)
    seq = from_seq
    while seq <= to_seq:
        reply = hub.read_range(topic, seq, to_seq, max_bytes)
        if not reply.entries:
            break
        before = seq
        for _start, _stop, entry in reply.entries:
            entry = bytes(entry)
            header, _sparse, _set, _offset, keys, empty = entry_messages(entry)
            stored_first = decode_entry_header(entry).first_seq
            for i, key in enumerate(keys):
                message_seq = header.first_seq + i
                if key is not None and from_seq <= message_seq <= to_seq:
                    latest[bytes(key)] = (message_seq, entry, message_seq - stored_first, empty[i])
            seq = max(seq, header.last_seq + 1)
        if seq == before:
            break
    builder = RecordBatchBuilder(topic)
    for _seq, entry, offset, empty in sorted(latest.values(), key=lambda row: row[0]):
        if empty:
            continue
        builder.next_seq = None  # (rows of the table are not consecutive seq-ids)
        builder.add(offset, offset + 1, entry)
        if builder.rows >= rows_per_batch or builder.payload_bytes >= MAX_BATCH_BYTES:
            yield builder.build()
    if builder.rows:
        yield builder.build()
