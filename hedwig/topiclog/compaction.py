"""Compaction of a compacted topic: its sealed ledgers rewritten keeping the latest
message of each key, every kept message with its seq-id (gaps where messages went).

What stays (`LatestByKey`, a policy with no I/O): for each key the message with the
highest seq-id of the span compacted; a tombstone (a key with an empty payload) only
while younger than tombstone_retention_s; a message without a key always (a compacted
topic refuses them, a topic's older data may hold some); and the span's last message
always, so that the rewritten span ends where it did (see below; Kafka keeps the last
batch of a cleaned range for the same reason).

The key map is bounded, as Kafka's dedupe buffer is: `[log] compaction_key_map_bytes`
holds the latest seq-id of at most so many keys. A pass maps the keys of the span's
dirty part (after `clean_through`, what earlier passes left with one message per key)
until the map is full, then rewrites the whole span: a message is dropped when the map
holds a later seq-id of its key, or when it is an expired tombstone that is its key's
latest up to the map's end; anything after the map's end stays as it was. The span is
then clean up to the map's end, and the next pass maps from there: a span of more keys
than fit takes several passes, each the same ledgers' worth of work, and ends as one
big pass would (hedwig.topiclog's invariant test holds the two equal).

How it is written (`Compactor`): the span is a prefix of the topic's sealed ranges
(whose newest entry is older than the lag; an explicit COMPACT rolls the open ledger
first and takes them all); it is read through the log's reader, a chunk of entries at a
time, and each entry a slice of messages at a time (one entry may hold a million
messages): the reactor is given back after every `_STEP_MESSAGES` messages and every
chunk. Each run of kept messages of one entry becomes one entry covering the seq-ids
from the previous kept one (hedwig.protocol.entry, ENTRY_FLAG_SPARSE), cut from the
stored set without a loop over its messages: the new ledger covers every seq-id of the
span, so reads, the cache and delivery find an entry for any seq-id as before. A whole
entry kept is copied as it is.

Crash safety: the new ledger is recorded as garbage (a topic write that changes no
range) before a byte goes into it, so a crash while it is written leaves a ledger the
start-up sweep deletes (a crash between its creation and that record leaves an empty
ledger no record names, which the embedded sweep deletes too: hedwig.topiclog.manager);
once it is closed (durable), one compare-and-set of the ranges swaps the span's ranges
for its one range and records the old ledgers as garbage in the same write; only then
are the old ledgers deleted and the new one's garbage record forgotten. A crash at any
point leaves the ranges naming either the old ledgers or the new one, never a mix.
`HEDWIG_TEST_COMPACTION_KILL_AT` (tests only) names a step at which the process kills
itself with SIGKILL: "created", "written", "sealed", "swapped", "dropped" ("written:stop":
it stops itself with SIGSTOP there, a paused hub, until sent SIGCONT).

A compaction stops, dropping its new ledger, when its log closes (the topic deleted or
released): `stop()`, checked between steps, fails it with CompactionStopped.

On storage shared by a region's hubs, the new ledger's garbage record must not be acted
on by another hub's start-up sweep while this owner writes it: that sweep leaves the
records of a compacted topic that a live hub owns to the owner, which deletes them when
it acquires the topic (hedwig.topiclog.acquire) and a compaction's own failure path.
"""

import os
import secrets
import signal
import struct
from hashlib import blake2b
from itertools import accumulate, groupby

from twisted.internet.defer import gatherResults, inlineCallbacks, maybeDeferred
from twisted.internet.task import deferLater
from twisted.logger import Logger

from hedwig.meta.interface import LedgerRange
from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import decode_entry_header, encode_entry_header, message_part
from hedwig.protocol.messageset import FLAG_KEYS, MessageSetError, length_arrays, read_u32_array
from hedwig.protocol.status import Status
from hedwig.topiclog.errors import LogClosed, LogCorrupt, TopicFenced

_logger = Logger()
_CHUNK_ENTRIES = 8  # entries read at a time
_CHUNK_BYTES = 64 << 10
_STEP_MESSAGES = 4096  # messages looked at per step (a few milliseconds), the reactor given back between
_REST_S = 0.01  # the longest pause between two steps
_KILL_AT = "HEDWIG_TEST_COMPACTION_KILL_AT"
_DIGEST_BYTES = 16  # what the key map remembers of a key (shorter ones: themselves)
# What one key costs in the key map (a dict slot, the key of at most 16 bytes, the seq-id),
# measured by tests/topiclog/test_compaction_passes.py: the map holds budget // this keys.
KEY_COST_BYTES = 176
_SET_HEAD = struct.Struct("!BBI")  # a message set's version, flags, count (hedwig.protocol.messageset)


class CompactionStopped(LogClosed):
    """The compaction stopped because its log closed (the topic was deleted, released or
    the hub stops): nothing changed, its new ledger is gone."""


class StoredSet:
    """A stored entry's messages as compaction reads them: keys and which payloads are
    empty a slice at a time, and runs of consecutive messages cut as sets of their own,
    never a loop over all of a large entry's messages at once (nor a Python object per
    message but for the slice at hand). Slices and runs are asked in increasing order."""

    def __init__(self, data):
        header = decode_entry_header(data)
        body, offset = plain_message_set(data, header.body_offset)
        self.data = data
        self.sparse = header.sparse
        version, flags, count = _SET_HEAD.unpack_from(body, offset)
        if self.sparse:  # (its header as if dense: first_seq and count its messages')
            header = message_part(header, count, 0, None)[0]
        self.header = header
        self.count = count
        self._head = (version, flags)
        self._body = body if isinstance(body, bytes) else bytes(body)
        columns = length_arrays(flags)
        arrays_at = offset + _SET_HEAD.size
        self._arrays_at = [arrays_at + 4 * count * i for i in range(columns)]
        self._lengths = [read_u32_array(self._body, at, count) for at in self._arrays_at]
        position = arrays_at + 4 * count * columns
        self._starts = []
        for lengths in self._lengths:
            self._starts.append(position)
            position += sum(lengths)
        if position != len(self._body):
            raise MessageSetError(Status.MALFORMED_REQUEST, "message set lengths do not match its size")
        self.payload_lengths = self._lengths[0]
        self._key_lengths = self._lengths[-1] if flags & FLAG_KEYS else None
        self._keys_at = (0, self._starts[-1])  # (message index, its key's offset): keys' cursor
        self._cut_at = (0, list(self._starts))  # (message index, each column's offset): cuts' cursor

    def short_keys(self, start: int, stop: int) -> bool:
        """Whether every message of [start, stop) has a key of 1 to 15 bytes (one the key
        map holds as it is: a slice of them is mapped and looked up without a call per
        message)."""
        lengths = self._key_lengths
        if lengths is None:
            return False
        piece = lengths[start:stop]
        return min(piece) > 0 and max(piece) < _DIGEST_BYTES

    def keys(self, start: int, stop: int) -> list:
        """The keys of messages [start, stop) (None: no key)."""
        lengths = self._key_lengths
        if lengths is None:
            return [None] * (stop - start)
        at, position = self._keys_at
        if start != at:
            position += sum(lengths[at:start])
        offsets = list(accumulate(lengths[start:stop], initial=position))
        self._keys_at = (stop, offsets[-1])
        body = self._body
        return [body[offsets[i] : offsets[i + 1]] or None for i in range(stop - start)]

    def cut(self, start: int, stop: int) -> bytes:
        """The plain set of messages [start, stop), each exactly as stored."""
        at, positions = self._cut_at
        body = self._body
        parts = [_SET_HEAD.pack(*self._head, stop - start)]
        sections = []
        for i, lengths in enumerate(self._lengths):
            begin = positions[i] + (sum(lengths[at:start]) if start != at else 0)
            end = begin + sum(lengths[start:stop])
            positions[i] = end
            parts.append(body[self._arrays_at[i] + 4 * start : self._arrays_at[i] + 4 * stop])
            sections.append(body[begin:end])
        self._cut_at = (stop, positions)
        return b"".join(parts + sections)


class LatestByKey:
    """The compaction policy of one pass: which messages of a span stay.

    `see` the messages of the dirty part in seq-id order until it answers False (the
    map is full: that message and those after it are not mapped); then ask `keeps` of
    each message of the span. The map holds at most `max_keys` keys, each by at most 16
    bytes: a key of up to 15 bytes as it is, a longer one (a key may be a megabyte) by
    its 16-byte BLAKE2b, keyed with a secret of this pass's, so that no publisher can
    make two keys that collide (one would lose its latest message)."""

    def __init__(self, span_last: int, tombstone_cutoff_us: int, max_keys: int, clean_through: int = 0):
        self.span_last = span_last
        self.tombstone_cutoff_us = tombstone_cutoff_us
        self.max_keys = max(1, max_keys)
        self.latest = {}  # key (or its digest) -> the latest seq-id mapped
        self.mapped_through = clean_through  # the last seq-id the map accounts for
        self.full = False
        self._secret = secrets.token_bytes(16)

    def _held(self, key: bytes) -> bytes:
        if len(key) < _DIGEST_BYTES:
            return key
        return blake2b(key, digest_size=_DIGEST_BYTES, key=self._secret).digest()

    def see(self, seq: int, key) -> bool:
        """Map the message: False (nothing mapped) when its key is new and the map full."""
        if key is not None:
            held = self._held(key)
            latest = self.latest
            if held not in latest and len(latest) >= self.max_keys:
                self.full = True
                return False
            latest[held] = seq
        self.mapped_through = seq
        return True

    def see_short(self, keys: list, first_seq: int) -> bool:
        """Map consecutive messages from `first_seq` whose keys are all short (1 to 15
        bytes: held as they are), at once; False, mapping nothing, when the map has no
        room for them all (see them one by one then)."""
        latest = self.latest
        if len(latest) + len(keys) > self.max_keys:
            return False
        latest.update(zip(keys, range(first_seq, first_seq + len(keys)), strict=True))
        self.mapped_through = first_seq + len(keys) - 1
        return True

    def keeps_short(self, keys: list, first_seq: int) -> list:
        """keeps() of consecutive messages from `first_seq` with short keys and payloads
        (no tombstone among them), one flag each."""
        mapped, last, get = self.mapped_through, self.span_last, self.latest.get
        return [
            seq > mapped or seq == last or get(key, seq) == seq
            for seq, key in zip(range(first_seq, first_seq + len(keys)), keys, strict=True)
        ]

    def keeps(self, seq: int, key, tombstone: bool, time_us: int) -> bool:
        if key is None or seq == self.span_last or seq > self.mapped_through:
            return True
        latest = self.latest.get(self._held(key))
        if latest is not None and latest != seq:
            return False  # a later message of its key is mapped
        return not (tombstone and time_us < self.tombstone_cutoff_us)


def map_keys(stored: StoredSet, policy: LatestByKey, from_seq: int):
    """Map the messages of `stored` from seq-id `from_seq` on: yields the count of
    messages of each slice; stops early when the policy's map is full."""
    first = stored.header.first_seq
    start = max(0, from_seq - first)
    count = stored.count
    see = policy.see
    while start < count:
        stop = min(count, start + _STEP_MESSAGES)
        keys = stored.keys(start, stop)
        if not (stored.short_keys(start, stop) and policy.see_short(keys, first + start)):
            for i, key in enumerate(keys, first + start):
                if not see(i, key):
                    yield i - first - start
                    return
        yield stop - start
        start = stop


def rewritten(stored: StoredSet, policy: LatestByKey, covered_through: int, emit):
    """emit(bytes, last seq-id, publish time) for each entry that stands for `stored` once
    compacted: one per run of kept messages, each covering the seq-ids after
    `covered_through` (the previous one's last) up to its last message. Yields the count
    of messages of each slice looked at; returns the seq-id covered through and the
    messages kept, and the publish time of any tombstone kept before the span's end."""
    header = stored.header
    first, count, time_us = header.first_seq, stored.count, header.publish_time_us
    keeps = policy.keeps
    sizes = stored.payload_lengths  # (0: a tombstone, when keyed)
    runs = []  # [lo, hi) of kept messages, closed ones emitted as the slices go
    kept = 0
    tombstone_us = None
    start = 0
    while start < count:
        stop = min(count, start + _STEP_MESSAGES)
        keys = stored.keys(start, stop)
        if 0 not in sizes[start:stop] and stored.short_keys(start, stop):  # (the common case, in bulk)
            flags = policy.keeps_short(keys, first + start)
        else:
            flags = [keeps(first + i, key, not sizes[i], time_us) for i, key in enumerate(keys, start)]
            for i, key in enumerate(keys, start):  # (a tombstone kept before the span's end)
                if flags[i - start] and key is not None and not sizes[i] and first + i != policy.span_last:
                    tombstone_us = time_us
                    break
        kept += flags.count(True)
        i = start
        for keep, group in groupby(flags):  # (runs of kept messages, a step per run)
            n = len(list(group))
            if keep:
                if runs and runs[-1][1] == i:
                    runs[-1][1] = i + n
                else:
                    runs.append([i, i + n])
            i += n
        while len(runs) > 1:  # (closed: a dropped message came after them)
            lo, hi = runs.pop(0)
            covered_through = _emit_run(stored, lo, hi, covered_through, emit)
        yield stop - start
        start = stop
    if runs:
        lo, hi = runs[0]
        if lo == 0 and hi == count and not stored.sparse and first == covered_through + 1:
            emit(stored.data, first + count - 1, time_us)  # whole and dense: as stored
            covered_through = first + count - 1
        else:
            covered_through = _emit_run(stored, lo, hi, covered_through, emit)
    return covered_through, kept, tombstone_us


def _emit_run(stored: StoredSet, lo: int, hi: int, covered_through: int, emit) -> int:
    header = stored.header
    span_first = covered_through + 1
    last = header.first_seq + hi - 1
    gap = header.first_seq + lo - span_first
    producer = (header.producer_id, header.sequence) if header.producer_id else None
    head = encode_entry_header(
        span_first,
        last - span_first + 1,
        header.publish_time_us,
        header.origin_region.encode("utf-8"),
        header.origin_seq + lo,  # (the first message's own: hedwig.protocol.entry)
        header.via.encode("utf-8"),
        producer,
        sparse=gap > 0,
    )
    emit(head + stored.cut(lo, hi), last, header.publish_time_us)
    return last


def run_steps(steps):
    """Run a generator of rewritten's or map_keys's to its end; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def compacted(entries, span_last: int, tombstone_cutoff_us: int, max_keys: int = 1 << 20) -> list:
    """The passes a Compactor runs, over stored entries in memory (seq-ids 1..span_last)
    until they are clean: [(entry, its last seq-id)] of the result (tests, tools)."""
    out = [(data, None) for data in entries]
    clean_through = 0
    while clean_through < span_last:
        policy = LatestByKey(span_last, tombstone_cutoff_us, max_keys, clean_through)
        for data, _last in out:
            run_steps(map_keys(StoredSet(data), policy, clean_through + 1))
            if policy.full:
                break
        rewritten_entries, covered = [], 0
        emit = rewritten_entries.append
        for data, _last in out:
            covered, _kept, _tombstone = run_steps(
                rewritten(
                    StoredSet(data),
                    policy,
                    covered,
                    lambda entry, last, _time, emit=emit: emit((entry, last)),
                )
            )
        out, clean_through = rewritten_entries, policy.mapped_through
    return out


class Compactor:
    """Compactions of one topic log: its reader reads the span, its roller swaps the
    ranges and drops the old ledgers. One at a time (the caller's: TopicLog.compact).

    What it remembers between compactions (in memory: a hub that opens the topic anew
    compacts it all once more): `clean_through`, the seq-id up to which the topic holds
    at most one message per key, and the publish time of the oldest tombstone it kept,
    so that a span with nothing new is compacted again once that tombstone expires."""

    def __init__(self, topic: str, *, ledgers, roller, reader, settings, clock, topic_ops):
        self.topic = topic
        self._ledgers = ledgers
        self._roller = roller
        self._reader = reader
        self._settings = settings
        self._clock = clock
        self._topic_ops = topic_ops
        self._kill_at = os.environ.get(_KILL_AT, "")
        self.max_keys = max(1, settings.compaction_key_map_bytes // KEY_COST_BYTES)
        self.clean_through = 0
        self._tombstone_us = None  # the oldest tombstone kept before a span's end, if any
        self._stopped = False
        self.compactions = 0
        self.passes = 0
        self.largest_step = 0  # the most messages looked at between two rests (for tests)
        self.largest_map = 0  # the most keys a pass's map held (for tests)

    def stop(self) -> None:
        """The log closes: a compaction under way stops at its next step."""
        self._stopped = True

    def _check_stopped(self) -> None:
        if self._stopped:
            raise CompactionStopped(f"topic {self.topic}: the compaction stopped, its log closed")

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
        """For every stored entry holding seq-ids first..last, run visit(StoredSet), a
        generator yielding the messages it looked at per slice; read a chunk of entries
        at a time. After each chunk, and whenever _STEP_MESSAGES messages were looked at,
        the reactor is given back for as long as the step took (at most _REST_S): a
        compaction takes at most about half the hub's time, so a busy machine's
        scheduler still sees a hub that waits, and publishes and deliveries wait for
        one step at the most. A visit returning True stops the walk."""
        seq = first
        clock = self._clock
        began = clock.seconds()
        looked = 0
        while seq <= last:
            self._check_stopped()
            entries = yield self._reader.read(seq, _CHUNK_ENTRIES, _CHUNK_BYTES)
            if not entries:
                return
            for entry in entries:
                if entry.first_seq > last:
                    return
                steps = visit(StoredSet(entry.data))
                while True:
                    try:
                        looked += next(steps)
                    except StopIteration as done:
                        if done.value is True:
                            return
                        break
                    if looked >= _STEP_MESSAGES:
                        self.largest_step = max(self.largest_step, looked)
                        looked = 0
                        yield self._rest(began)
                        began = clock.seconds()
                        self._check_stopped()
                seq = entry.last_seq + 1
            self.largest_step = max(self.largest_step, looked)
            looked = 0
            yield self._rest(began)
            began = clock.seconds()

    def _rest(self, began: float):
        took = self._clock.seconds() - began
        return deferLater(self._clock, min(max(took, 0.0), _REST_S), lambda: None)

    def _nothing(self, why: str, **more) -> dict:
        return {
            "topic": self.topic,
            "span": None,
            "ledgers": [],
            "messages": 0,
            "entries": 0,
            "why": why,
            **more,
        }

    @inlineCallbacks
    def compact(self, lag_s: float, explicit: bool = False):
        """Compact the sealed ledgers older than lag_s, pass after pass until the span is
        clean: Deferred[dict] saying what was done ("span": [first, last] rewritten, or
        None with "why" nothing was). `explicit`: a COMPACT, for which the caller rolled
        the open ledger first (it covers everything published before it)."""
        span = yield self._span(lag_s)
        if not span:
            if len(self._roller.ranges) > 1:
                return self._nothing(f"no closed ledger is older than min_compaction_lag_s ({lag_s:g} s)")
            if explicit:  # (its open ledger was rolled first, if it held anything)
                return self._nothing("nothing is published")
            return self._nothing("everything is in the open ledger, which is never compacted")
        first, last = span[0].first_seq, span[-1].last_seq
        if self.clean_through > last:  # (ranges changed under a remembered span: start over)
            self.clean_through = 0
        cutoff = int((self._clock.seconds() - self._settings.tombstone_retention_s) * 1_000_000)
        tombstones_due = self._tombstone_us is not None and self._tombstone_us < cutoff
        if self.clean_through >= last and not tombstones_due:
            since = "since" if explicit else "since but in the open ledger"
            return self._nothing(
                f"seq-ids {first}..{last} are compacted already: nothing was published {since},"
                " and no tombstone kept has expired"
            )
        report = {"messages": 0, "kept": 0, "entries": 0, "passes": 0, "ledgers": []}
        while True:
            done = yield self._pass(span, cutoff, report)
            if done is None:  # the ranges changed meanwhile (GC, another hub): dropped
                return self._nothing("the topic's ledgers changed during the compaction")
            if self.clean_through >= last:
                break
            span = [LedgerRange(done, first, last)]
        self.compactions += 1
        _logger.info(
            "topic {topic}: compacted seq-ids {first}..{last} of {count} ledger(s) into ledger "
            "{ledger_id} in {passes} pass(es): {kept} of {messages} messages kept, in {entries} entries",
            topic=self.topic,
            first=first,
            last=last,
            count=len(report["ledgers"]),
            ledger_id=done,
            passes=report["passes"],
            kept=report["kept"],
            messages=report["messages"],
            entries=report["entries"],
        )
        return {
            "topic": self.topic,
            "span": [first, last],
            "ledgers": report["ledgers"],
            "ledger": done,
            "messages": report["messages"],
            "kept": report["kept"],
            "entries": report["entries"],
            "passes": report["passes"],
        }

    @inlineCallbacks
    def _pass(self, span, cutoff: int, report: dict):
        """One pass over `span`: map the dirty part's keys (as many as the map holds),
        rewrite the span into a new ledger, swap it in. Deferred[the new ledger's id],
        None when the ranges changed meanwhile."""
        first, last = span[0].first_seq, span[-1].last_seq
        policy = LatestByKey(last, cutoff, self.max_keys, clean_through=max(self.clean_through, first - 1))
        dirty_from = policy.mapped_through + 1

        def see(stored):
            yield from map_keys(stored, policy, dirty_from)
            return policy.full

        if dirty_from <= last:
            yield self._each_entry(dirty_from, last, see)
        self.largest_map = max(self.largest_map, len(policy.latest))
        # The new ledger, known as garbage before a byte is in it (a crash: the sweep's).
        new_id = yield self._ledgers.create()
        self._step("created")
        try:
            yield self._topic_ops.run(self.topic, self._roller.change_ranges, list, garbage=[new_id])
        except BaseException:  # (fenced, or the metadata failed: the empty ledger goes)
            yield maybeDeferred(self._ledgers.delete, new_id).addErrback(lambda _failure: None)
            raise
        written = {"covered": first - 1, "entries": 0, "kept": 0, "messages": 0, "tombstone_us": None}
        appends = []

        def emit(entry, entry_last, time_us):
            appends.append(self._ledgers.append(new_id, entry, time_us))
            written["entries"] += 1
            if len(appends) > 64:  # (settled as they go: no Deferred per entry held to the end)
                pending = list(appends)
                appends.clear()
                gatherResults(pending, consumeErrors=True).addErrback(
                    lambda failure: written.setdefault("failed", failure)
                )

        def write(stored):
            covered, kept, tombstone_us = yield from rewritten(stored, policy, written["covered"], emit)
            written["covered"] = covered
            written["kept"] += kept
            written["messages"] += stored.count
            if tombstone_us is not None and written["tombstone_us"] is None:
                written["tombstone_us"] = tombstone_us  # (entries come in publish order)
            return False

        old_ids = [r.ledger_id for r in span]

        def swap(current):
            if current[: len(span)] != span:
                raise _SpanChanged()
            return [LedgerRange(new_id, first, last), *current[len(span) :]]

        try:
            yield self._each_entry(first, last, write)
            yield gatherResults(appends, consumeErrors=True)
            if "failed" in written:
                written["failed"].raiseException()
            if written["covered"] != last:
                raise LogCorrupt(
                    f"topic {self.topic}: compaction covered up to {written['covered']}, not {last}"
                )
            self._check_stopped()
            self._step("written")
            yield maybeDeferred(self._ledgers.close_ledger, new_id)
            self._step("sealed")
            yield self._topic_ops.run(self.topic, self._roller.change_ranges, swap, garbage=old_ids)
        except _SpanChanged:
            yield self._roller.drop_ledgers([new_id])
            return None
        except TopicFenced:
            raise
        except BaseException:
            yield self._roller.drop_ledgers([new_id])
            raise
        self._step("swapped")
        # The new ledger is no garbage now; the old ones go, and their records with them.
        self.clean_through = policy.mapped_through
        self._tombstone_us = written["tombstone_us"]
        self.passes += 1
        report["passes"] += 1
        report["kept"] = written["kept"]
        report["entries"] = written["entries"]
        if not report["ledgers"]:  # (the first pass: what the span was)
            report["ledgers"] = old_ids
            report["messages"] = written["messages"]
        yield self._roller.forget_garbage([new_id])
        yield self._roller.drop_ledgers(old_ids[:1])
        self._step("dropped")
        yield self._roller.drop_ledgers(old_ids[1:])
        return new_id


class _SpanChanged(Exception):
    """The ranges compacted changed meanwhile (GC, another hub): the work is dropped."""
