"""Compaction of a compacted topic: its sealed ledgers rewritten keeping the latest
message of each key, every kept message with its seq-id (gaps where messages went).

What stays (`LatestByKey`, a policy with no I/O): for each key the message with the
highest seq-id of the span compacted; a tombstone (a key with an empty payload) only
while younger than tombstone_retention_s; a message without a key always (a compacted
topic refuses them, a topic's older data may hold some); and the span's last message
always, so that the rewritten span ends where it did (see below).

How it is written (`Compactor`): the span is a prefix of the topic's sealed ranges
whose newest entry is older than the lag; it is read twice through the log's reader
(the latest seq-id of each key first, then the messages kept), a chunk of entries at a
time, giving the reactor back between chunks. Each run of kept messages of one entry
becomes one entry covering the seq-ids from the previous kept one (hedwig.protocol.entry,
ENTRY_FLAG_SPARSE): the new ledger covers every seq-id of the span, so reads, the cache
and delivery find an entry for any seq-id as before. A whole entry kept is copied as it is.

Crash safety: the new ledger is recorded as garbage (a topic write that changes no
range) before a byte goes into it, so a crash while it is written leaves a ledger the
start-up sweep deletes; once it is closed (durable), one compare-and-set of the ranges
swaps the span's ranges for its one range and records the old ledgers as garbage in the
same write; only then are the old ledgers deleted and the new one's garbage record
forgotten. A crash at any point leaves the ranges naming either the old ledgers or the
new one, never a mix. `HEDWIG_TEST_COMPACTION_KILL_AT` (tests only) names a step at
which the process kills itself with SIGKILL: "written", "sealed", "swapped", "dropped"
("written:stop": it stops itself with SIGSTOP there, a paused hub, until sent SIGCONT).

On storage shared by a region's hubs, the new ledger's garbage record must not be acted
on by another hub's start-up sweep while this owner writes it: that sweep leaves the
records of a compacted topic that a live hub owns to the owner, which deletes them when
it acquires the topic (hedwig.topiclog.acquire) and a compaction's own failure path.
"""

import os
import secrets
import signal
from hashlib import blake2b
from itertools import pairwise

from twisted.internet.defer import gatherResults, inlineCallbacks, maybeDeferred
from twisted.internet.task import deferLater
from twisted.logger import Logger

from hedwig.meta.interface import LedgerRange
from hedwig.protocol.entry import encode_entry_header, entry_messages
from hedwig.protocol.messageset import select_messages
from hedwig.topiclog.errors import LogCorrupt, TopicFenced

_logger = Logger()
_CHUNK_ENTRIES = 8  # entries read per step, the reactor given back between steps (about a millisecond)
_CHUNK_BYTES = 64 << 10
_REST_S = 0.01  # the longest pause between two chunks
_KILL_AT = "HEDWIG_TEST_COMPACTION_KILL_AT"
_DIGEST_BYTES = 16  # what LatestByKey remembers of a key (shorter ones: themselves)


class LatestByKey:
    """The compaction policy: which messages of a span stay. `see` every message in
    seq-id order, then ask `keeps` of each.

    It remembers every key of the span, so a key is remembered by at most 16 bytes: a
    key of up to 15 bytes as it is, a longer one (a key may be a megabyte) by its
    16-byte BLAKE2b, keyed with a secret of this compaction's, so that no publisher can
    make two keys that collide (one would lose its latest message)."""

    def __init__(self, span_last: int, tombstone_cutoff_us: int):
        self.span_last = span_last
        self.tombstone_cutoff_us = tombstone_cutoff_us
        self.latest = {}  # key (or its digest) -> (seq-id, tombstone expired)
        self._secret = secrets.token_bytes(16)

    def _held(self, key: bytes) -> bytes:
        if len(key) < _DIGEST_BYTES:
            return key
        return blake2b(key, digest_size=_DIGEST_BYTES, key=self._secret).digest()

    def see(self, seq: int, key, tombstone: bool, time_us: int) -> None:
        if key is not None:
            self.latest[self._held(key)] = (seq, tombstone and time_us < self.tombstone_cutoff_us)

    def keeps(self, seq: int, key) -> bool:
        if key is None or seq == self.span_last:
            return True
        latest, expired = self.latest[self._held(key)]
        return latest == seq and not expired


def rewritten(data, policy: LatestByKey, covered_through: int) -> list:
    """The entries (bytes, last seq-id, publish time) that stand for the stored entry
    `data` once compacted: one per run of kept messages, each covering the seq-ids
    after `covered_through` (the previous one's last) up to its last message."""
    header, sparse, message_set, offset, keys, _empty = entry_messages(data)
    first = header.first_seq
    kept = [i for i, key in enumerate(keys) if policy.keeps(first + i, key)]
    if not kept:
        return []
    time_us = header.publish_time_us
    if len(kept) == len(keys) and first == covered_through + 1 and not sparse:
        return [(data, header.last_seq, time_us)]  # whole and dense: as stored
    runs = []
    start = kept[0]
    for previous, i in pairwise(kept):
        if i != previous + 1:
            runs.append((start, previous))
            start = i
    runs.append((start, kept[-1]))
    region = header.origin_region.encode("utf-8")
    via = header.via.encode("utf-8")
    producer = (header.producer_id, header.sequence) if header.producer_id else None
    out = []
    for lo, hi in runs:
        span_first = covered_through + 1
        last = first + hi
        gap = first + lo - span_first
        head = encode_entry_header(
            span_first,
            last - span_first + 1,
            time_us,
            region,
            header.origin_seq + lo,  # (the first message's own: hedwig.protocol.entry)
            via,
            producer,
            sparse=gap > 0,
        )
        out.append((head + select_messages(message_set, offset, range(lo, hi + 1)), last, time_us))
        covered_through = last
    return out


class Compactor:
    """Compactions of one topic log: its reader reads the span, its roller swaps the
    ranges and drops the old ledgers. One at a time (the caller's: TopicLog.compact)."""

    def __init__(self, topic: str, *, ledgers, roller, reader, settings, clock, topic_ops):
        self.topic = topic
        self._ledgers = ledgers
        self._roller = roller
        self._reader = reader
        self._settings = settings
        self._clock = clock
        self._topic_ops = topic_ops
        self._kill_at = os.environ.get(_KILL_AT, "")
        self._written = set()  # ledgers this compactor wrote (one alone is compacted already)
        self.compactions = 0

    def _step(self, name: str) -> None:
        if self._kill_at == name:  # (tests: a crash at this step, as kill -9 makes one)
            os.kill(os.getpid(), signal.SIGKILL)
        elif self._kill_at == f"{name}:stop":  # (tests: a hub paused at this step)
            os.kill(os.getpid(), signal.SIGSTOP)

    @inlineCallbacks
    def _span(self, lag_s: float):
        """The ranges to compact: the longest prefix of sealed ranges whose newest entry
        is older than `lag_s`."""
        cutoff = int((self._clock.seconds() - lag_s) * 1_000_000)
        chosen = []
        for r in self._roller.ranges[:-1]:
            last_entry = self._ledgers.last_entry_id(r.ledger_id)
            if last_entry < 0:
                break
            if lag_s > 0 and (yield self._ledgers.entry_time(r.ledger_id, last_entry)) > cutoff:
                break
            chosen.append(r)
        return chosen

    @inlineCallbacks
    def _each_entry(self, first: int, last: int, visit):
        """visit(entry bytes) for every stored entry holding seq-ids first..last, read a
        chunk at a time. Between chunks the reactor is given back for as long as the
        chunk took (at most _REST_S): a compaction takes at most about half the hub's
        time, so a busy machine's scheduler still sees a hub that waits, and publishes
        and deliveries wait for one chunk at the most."""
        seq = first
        clock = self._clock
        while seq <= last:
            began = clock.seconds()
            entries = yield self._reader.read(seq, _CHUNK_ENTRIES, _CHUNK_BYTES)
            if not entries:
                return
            for entry in entries:
                if entry.first_seq > last:
                    return
                visit(entry.data)
                seq = entry.last_seq + 1
            took = clock.seconds() - began
            yield deferLater(clock, min(max(took, 0.0), _REST_S), lambda: None)

    @inlineCallbacks
    def compact(self, lag_s: float):
        """Compact the sealed ledgers older than lag_s: Deferred[dict] saying what was
        done ("span": [first, last] rewritten, or None when there was nothing to do)."""
        span = yield self._span(lag_s)
        if not span or (len(span) == 1 and span[0].ledger_id in self._written):
            return {"topic": self.topic, "span": None, "ledgers": [], "messages": 0, "entries": 0}
        first, last = span[0].first_seq, span[-1].last_seq
        cutoff = int((self._clock.seconds() - self._settings.tombstone_retention_s) * 1_000_000)
        policy = LatestByKey(last, cutoff)
        counted = [0]

        def see(data):
            header, _sparse, _set, _offset, keys, empty = entry_messages(data)
            first_seq, time_us = header.first_seq, header.publish_time_us
            for i, key in enumerate(keys):
                policy.see(first_seq + i, key, empty[i], time_us)
            counted[0] += len(keys)

        yield self._each_entry(first, last, see)
        # The new ledger, known as garbage before a byte is in it (a crash: the sweep's).
        new_id = yield self._ledgers.create()
        try:
            yield self._topic_ops.run(self.topic, self._roller.change_ranges, list, garbage=[new_id])
        except BaseException:  # (fenced, or the metadata failed: the empty ledger goes)
            yield maybeDeferred(self._ledgers.delete, new_id).addErrback(lambda _failure: None)
            raise
        written = {"covered": first - 1, "entries": 0, "appends": []}

        def write(data):
            for entry, entry_last, time_us in rewritten(data, policy, written["covered"]):
                written["appends"].append(self._ledgers.append(new_id, entry, time_us))
                written["covered"] = entry_last
                written["entries"] += 1

        old_ids = [r.ledger_id for r in span]

        def swap(current):
            if current[: len(span)] != span:
                raise _SpanChanged()
            return [LedgerRange(new_id, first, last), *current[len(span) :]]

        try:
            yield self._each_entry(first, last, write)
            yield gatherResults(written.pop("appends"), consumeErrors=True)
            if written["covered"] != last:
                raise LogCorrupt(
                    f"topic {self.topic}: compaction covered up to {written['covered']}, not {last}"
                )
            self._step("written")
            yield maybeDeferred(self._ledgers.close_ledger, new_id)
            self._step("sealed")
            yield self._topic_ops.run(self.topic, self._roller.change_ranges, swap, garbage=old_ids)
        except _SpanChanged:
            yield self._roller.drop_ledgers([new_id])
            return {"topic": self.topic, "span": None, "ledgers": [], "messages": 0, "entries": 0}
        except TopicFenced:
            raise
        except BaseException:
            yield self._roller.drop_ledgers([new_id])
            raise
        self._step("swapped")
        # The new ledger is no garbage now; the old ones go, and their records with them.
        self._written.add(new_id)
        yield self._roller.forget_garbage([new_id])
        yield self._roller.drop_ledgers(old_ids[:1])
        self._step("dropped")
        yield self._roller.drop_ledgers(old_ids[1:])
        self.compactions += 1
        _logger.info(
            "topic {topic}: compacted seq-ids {first}..{last} of {count} ledger(s) into ledger "
            "{ledger_id}: {entries} entries keep the latest of {messages} messages",
            topic=self.topic,
            first=first,
            last=last,
            count=len(span),
            ledger_id=new_id,
            entries=written["entries"],
            messages=counted[0],
        )
        return {
            "topic": self.topic,
            "span": [first, last],
            "ledgers": old_ids,
            "ledger": new_id,
            "messages": counted[0],
            "entries": written["entries"],
        }


class _SpanChanged(Exception):
    """The ranges compacted changed meanwhile (GC, another hub): the work is dropped."""
