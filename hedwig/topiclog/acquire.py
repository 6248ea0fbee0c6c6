"""Acquiring a topic: recover its previous ledger, write the ranges back.

As Hedwig does when a hub takes a topic: the previous owner's open ledger is recovered
(closed in the store, its last entry read to learn where the log ends; sealed in the
ranges, or dropped when empty), and the ranges are written back with compare-and-set on
the version that was read, so of two hubs racing for the topic only one wins. They end
with an open range that names no ledger (NO_LEDGER) from the next seq-id: this owner's
first append creates its ledger (a roll), so a ledger is only ever written by one owner,
and a topic acquired to be read (a READ, a SUBSCRIBE, a DESCRIBE) creates none.
"""

from twisted.internet.defer import DeferredList, inlineCallbacks, maybeDeferred
from twisted.logger import Logger

from hedwig.ledger.interface import LedgerError, NoSuchLedger
from hedwig.meta.interface import NEW, BadVersion, LedgerRange, MetadataFull
from hedwig.protocol.entry import decode_entry_header
from hedwig.protocol.messageset import MessageSetError
from hedwig.topiclog.errors import LogCorrupt, TopicCapReached, TopicFenced
from hedwig.topiclog.pending import NO_LEDGER
from hedwig.topiclog.topic_log import TopicLog

_logger = Logger()


def check_ranges(topic: str, ranges: list[LedgerRange]) -> None:
    """Ranges must be contiguous and ascending, only the last one open."""
    for i, r in enumerate(ranges):
        if r.last_seq is None and i != len(ranges) - 1:
            raise LogCorrupt(f"topic {topic}: ledger {r.ledger_id} is open but not the last range")
        if r.last_seq is not None and r.last_seq < r.first_seq:
            raise LogCorrupt(
                f"topic {topic}: ledger {r.ledger_id} has an empty range {r.first_seq}..{r.last_seq}"
            )
        if i and r.first_seq != ranges[i - 1].last_seq + 1:
            raise LogCorrupt(
                f"topic {topic}: ledger {r.ledger_id} starts at {r.first_seq}, "
                f"after ledger {ranges[i - 1].ledger_id} ending at {ranges[i - 1].last_seq}"
            )


@inlineCallbacks
def _read_header(ledgers, topic: str, ledger_id: int, entry_id: int):
    (data,) = yield ledgers.read(ledger_id, entry_id, entry_id, 1)
    try:
        return decode_entry_header(data)
    except MessageSetError as e:
        raise LogCorrupt(f"topic {topic}: ledger {ledger_id} entry {entry_id}: {e}") from None


@inlineCallbacks
def _recover_open_ledger(ledgers, topic: str, r: LedgerRange):
    """Fence the previous owner's ledger (closing it at its last whole entry, so that the
    previous owner, should it only have paused, acknowledges nothing more); (last seq-id
    it holds, its last publish time, whether it had to be recovered: False for a ledger
    its owner closed, as a graceful stop or a release does)."""
    try:
        yield ledgers.load(r.ledger_id)
        recovered = not ledgers.is_closed(r.ledger_id)
        if recovered:
            yield maybeDeferred(ledgers.fence, r.ledger_id)
        last_entry = ledgers.last_entry_id(r.ledger_id)
    except NoSuchLedger:
        raise LogCorrupt(
            f"topic {topic}: its open ledger {r.ledger_id} is missing from the ledger store"
        ) from None
    if last_entry < 0:
        return r.first_seq - 1, None, recovered
    first = yield _read_header(ledgers, topic, r.ledger_id, 0)
    if first.first_seq != r.first_seq:
        raise LogCorrupt(
            f"topic {topic}: ledger {r.ledger_id} begins at seq-id {first.first_seq}, "
            f"its range at {r.first_seq}"
        )
    last = yield _read_header(ledgers, topic, r.ledger_id, last_entry)
    return last.last_seq, last.publish_time_us, recovered


@inlineCallbacks
def _drop_leftover_garbage(ledgers, metadata, topic: str, ranges) -> None:
    """Delete the compacted topic's ledgers recorded as garbage that its ranges do not
    name: a compaction's new ledger or old ones, left by an earlier owner that died or
    paused half-way (hedwig.topiclog.compaction). Other hubs' start-up sweeps leave these
    to the owner, for one may be a ledger its compaction is writing; the ranges written
    above fence an earlier owner's compaction (its swap fails), so this one may delete.
    The record of a ledger the ranges name is stale (a swap done, its record not yet
    forgotten): forgotten, the ledger kept. A failure is logged and the records stay for
    a later owner."""
    named = {r.ledger_id for r in ranges}
    try:
        garbage = yield metadata.list_garbage()
        recorded = sorted(i for i, t in garbage.items() if t == topic)
        doomed = [i for i in recorded if i not in named]
        for ledger_id in doomed:
            try:
                yield maybeDeferred(ledgers.delete, ledger_id)
            except NoSuchLedger:
                pass  # (deleted before the record was forgotten)
        if recorded:
            yield metadata.forget_garbage(recorded)
        if doomed:
            _logger.info(
                "topic {topic}: deleted ledgers {ids} an earlier owner recorded as garbage",
                topic=topic,
                ids=doomed,
            )
    except Exception as e:
        _logger.warn("topic {topic}: could not delete its leftover garbage: {error}", topic=topic, error=e)


# The key under which creations of new topics queue, one at a time, when topics are
# capped: counting the topics and recording the new one must not interleave. (Not a valid
# topic name, so no topic's own operations share it.)
_CREATING = "\0creating"


@inlineCallbacks
def _create_within_cap(metadata, topic: str, ranges, max_topics: int, options: dict):
    """Record a new topic unless the metadata already holds max_topics: its version."""
    if len((yield metadata.list_topics())) >= max_topics:
        raise TopicCapReached(topic, max_topics)
    return (yield metadata.put_topic(topic, ranges, NEW, options=options))


@inlineCallbacks
def acquire_topic(
    topic: str,
    *,
    ledgers,
    metadata,
    settings,
    region: str,
    clock,
    locator=None,
    on_close=None,
    topic_ops=None,
    gate=None,
    new_options=None,
):
    """Deferred[TopicLog]: the topic's log, owned by the caller. Fails with TopicFenced when
    another hub changed the ranges meanwhile, LogCorrupt when metadata and ledgers disagree.
    `new_options`: the topic's options if this creates it (those recorded stay otherwise)."""
    versioned = yield metadata.get_topic(topic)
    if versioned is None:
        ranges, version, options = [], NEW, dict(new_options or {})
    else:
        ranges, version = [LedgerRange(*r) for r in versioned.value], versioned.version
        options = dict(versioned.options or {})
    check_ranges(topic, ranges)
    closed_ranges = ranges[:-1] if ranges and ranges[-1].last_seq is None else ranges
    # The store learns the closed ledgers (at once, for a local one; for a remote one the
    # reads of their heads go out together).
    loads = yield DeferredList([ledgers.load(r.ledger_id) for r in closed_ranges], consumeErrors=True)
    for r, (loaded, outcome) in zip(closed_ranges, loads, strict=True):
        if not loaded and not outcome.check(NoSuchLedger):
            outcome.raiseException()
        if not loaded:
            # The topic serves what remains; reads of these seq-ids fail with
            # EntriesUnreadable, which names them.
            _logger.error(
                "topic {topic}: ledger {ledger_id} is missing from the ledger store (or could not "
                "be opened): seq-ids {first}..{last} are lost; the rest is served",
                topic=topic,
                ledger_id=r.ledger_id,
                first=r.first_seq,
                last=r.last_seq,
            )
    last_time_us = 0
    empty_ledger = None
    next_seq = ranges[-1].last_seq + 1 if ranges and ranges[-1].last_seq is not None else 1
    if ranges and ranges[-1].last_seq is None:
        previous = ranges.pop()
        next_seq = previous.first_seq
        if previous.ledger_id == NO_LEDGER:  # (no append since it was last acquired)
            last_seq, time_us, recovered = previous.first_seq - 1, None, False
        else:
            last_seq, time_us, recovered = yield _recover_open_ledger(ledgers, topic, previous)
        if last_seq >= previous.first_seq:
            next_seq = last_seq + 1
            ranges.append(LedgerRange(previous.ledger_id, previous.first_seq, last_seq))
            last_time_us = time_us
            if recovered:  # (one its writer closed, at a graceful stop or a release, needed nothing)
                _logger.info(
                    "topic {topic}: recovered ledger {ledger_id}, seq-ids {first}..{last}",
                    topic=topic,
                    ledger_id=previous.ledger_id,
                    first=previous.first_seq,
                    last=last_seq,
                )
        elif previous.ledger_id != NO_LEDGER:
            empty_ledger = previous.ledger_id  # nothing in it: drop it once the new ranges are written
    if not last_time_us and ranges:
        last = ranges[-1].ledger_id
        try:
            last_time_us = yield ledgers.entry_time(last, ledgers.last_entry_id(last))
        except NoSuchLedger:  # lost (logged above): publish times start from the clock
            last_time_us = 0
    ranges.append(LedgerRange(NO_LEDGER, next_seq, None))
    written = True
    try:
        if version == NEW and settings.max_topics > 0:
            create = (_create_within_cap, metadata, topic, ranges, settings.max_topics, options)
            if topic_ops is None:
                version = yield create[0](*create[1:])
            else:
                version = yield topic_ops.run(_CREATING, *create)
        else:
            version = yield metadata.put_topic(topic, ranges, version, options=options)
    except BadVersion:
        raise TopicFenced(f"topic {topic}: another hub acquired it meanwhile") from None
    except MetadataFull as e:
        # A full disk: serve what the topic holds; its first append writes the ranges
        # (and creates its ledger) once space returns, and fails until then. The
        # metadata stays as it was: its open range names the ledger recovered above.
        _logger.warn(
            "topic {topic}: no space to record it ({error}); serving its seq-ids up to {last},"
            " publishes refused until space returns",
            topic=topic,
            error=e,
            last=next_seq - 1,
        )
        written, empty_ledger = False, None
    if empty_ledger is not None:
        try:
            yield maybeDeferred(ledgers.delete, empty_ledger)
        except LedgerError as e:
            _logger.warn(
                "topic {topic}: could not delete empty ledger {ledger_id}: {error}",
                topic=topic,
                ledger_id=empty_ledger,
                error=e,
            )
    if written and options.get("compaction"):
        yield _drop_leftover_garbage(ledgers, metadata, topic, ranges)
    return TopicLog(
        topic,
        ledgers=ledgers,
        metadata=metadata,
        settings=settings,
        region=region,
        clock=clock,
        ranges=ranges,
        version=version,
        last_time_us=last_time_us,
        locator=locator,
        on_close=on_close,
        topic_ops=topic_ops,
        options=options,
        **({} if gate is None else {"gate": gate}),
    )
