"""Moving a hub's ledgers from one store to another under the same ledger ids: an
embedded hub's page files into a RADOS pool (`hedwig migrate`), so a hub started on one
machine's disk goes on with every acknowledged message replicated, its history kept.

Ids stay as they are, so the metadata (topic ranges, subscriptions, producer state)
needs no change: the hub started afterwards with `[ledger] store = rados` finds every
ledger its ranges name in the pool. Each ledger is copied entry by entry with its publish
time, closed, then read back and compared (a CRC-32 of its entries, in order) before the
next; the target's id counter is first raised above the largest id copied, so the ledgers
hubs create later never meet a copied one.

A copy cut short (a crash, a pool that stopped answering) is resumed by running again:
a ledger found in the target closed with the same entries (same count and CRC) is kept,
one found otherwise (half-written) is deleted and copied again. The source is only read.
Garbage the metadata records is not copied (the hub's start-up sweep forgets its records).
`HEDWIG_TEST_MIGRATE_KILL_AT` (tests only): n, the run kills itself with SIGKILL once the
n-th ledger it copies is written, before it is closed (a copy cut short).
"""

import os
import signal
import zlib
from dataclasses import dataclass, field

from twisted.internet.defer import gatherResults, inlineCallbacks, succeed

from hedwig.ledger.interface import NoSuchLedger
from hedwig.meta.interface import ledger_ids

_CHUNK_ENTRIES = 256
_CHUNK_BYTES = 4 << 20
_WINDOW_BYTES = 32 << 20  # entries appended before waiting for their acknowledgements
_KILL_AT = "HEDWIG_TEST_MIGRATE_KILL_AT"
# A migrated data directory's page files, renamed (`hedwig migrate`); in it, MIGRATED_TO
# names the pool. A hub on page files refuses a directory that has it and no ledgers.
MIGRATED_DIR = "ledgers.migrated"
MIGRATED_TO = "MIGRATED"
# Where a run is copying a data directory's ledgers to, written before the first ledger
# and removed once all are copied: while it is there, no hub serves the directory.
MIGRATING_MARKER = "migrating.json"


class MigrationError(Exception):
    """The ledgers cannot be moved as asked; the message says why and what to do."""


@dataclass
class LedgerCopied:
    """One ledger's outcome: its entries, bytes and checksum; `kept`: found copied;
    `replaced`: a partial copy was found, deleted and copied again."""

    ledger_id: int
    topic: str
    entries: int
    bytes: int
    crc: int
    kept: bool = False
    replaced: bool = False


@dataclass
class Migration:
    """What a run did, ledger by ledger, in id order."""

    ledgers: list = field(default_factory=list)

    @property
    def entries(self) -> int:
        return sum(copied.entries for copied in self.ledgers)

    @property
    def bytes(self) -> int:
        return sum(copied.bytes for copied in self.ledgers)


@inlineCallbacks
def named_ledgers(metadata):
    """Deferred[dict]: ledger id -> topic, for every ledger a topic's ranges name."""
    named = {}
    for topic in (yield metadata.list_topics()):
        versioned = yield metadata.get_topic(topic)
        if versioned is None:  # (deleted meanwhile: no hub runs, so only by a crash's leftovers)
            continue
        for ledger_id in ledger_ids(versioned.value):
            named[ledger_id] = topic
    return named


@inlineCallbacks
def migrate_ledgers(metadata, source, target, *, resume: bool = False, starting=None, progress=None):
    """Copy every ledger the metadata's topics name from `source` to `target` (a store
    with `create_as` and `reserve_ids_from`, connected); Deferred[Migration].

    `resume`: the target may hold ledgers of an earlier run of this migration (without
    it, a target that holds any ledger is refused: its ids could be another hub's).
    `starting()`: called once the target is found fit, before anything is written to it.
    `progress(LedgerCopied)`: called after each ledger."""
    if not resume and (yield target.holds_ledgers()):
        raise MigrationError(
            "the target already holds ledgers (its id counter exists): migrate into an empty"
            " pool or namespace ([rados] namespace)"
        )
    named = yield named_ledgers(metadata)
    migration = Migration()
    if starting is not None:
        starting()
    if not named:
        return migration
    yield target.reserve_ids_from(max(named) + 1)
    kill_at = int(os.environ.get(_KILL_AT) or 0)
    copies = 0
    verifying = None  # the previous ledger's read-back, under way while the next is copied
    for ledger_id in sorted(named):
        try:
            copied = yield _copy(source, target, ledger_id, named[ledger_id], kill_at == copies + 1)
        except BaseException:
            if verifying is not None:  # (the copy's failure is the one said)
                verifying.addErrback(lambda _failure: None)
            raise
        copies += not copied.kept
        if verifying is not None:
            _done(migration, (yield verifying), progress)
        verifying = succeed(copied) if copied.kept else _verify(target, copied)
    if verifying is not None:
        _done(migration, (yield verifying), progress)
    return migration


def _done(migration: Migration, copied: LedgerCopied, progress) -> None:
    migration.ledgers.append(copied)
    if progress is not None:
        progress(copied)


@inlineCallbacks
def _copy(source, target, ledger_id: int, topic: str, kill: bool = False):
    """Deferred[LedgerCopied]: the ledger written to the target and closed there (not
    read back yet: _verify), or found copied already (`kept`)."""
    try:
        yield source.load(ledger_id)
    except NoSuchLedger:
        raise MigrationError(
            f"ledger {ledger_id} of topic {topic} is missing from the source: its seq-ids are"
            " lost already; nothing was changed for it (delete the topic, or restore the ledger)"
        ) from None
    last = source.last_entry_id(ledger_id)
    replaced = False
    try:
        yield target.load(ledger_id)
    except NoSuchLedger:
        pass
    else:  # (an earlier run's copy: kept when whole, else copied again)
        expected = yield _checksum(source, ledger_id, last)
        found = target.last_entry_id(ledger_id) if target.is_closed(ledger_id) else None
        if found == last and (yield _checksum(target, ledger_id, last)) == expected:
            return LedgerCopied(ledger_id, topic, *expected, kept=True)
        yield target.delete(ledger_id)
        replaced = True
    yield target.create_as(ledger_id)
    entry = crc = size = 0
    appends, pending_bytes = [], 0  # appends not yet acknowledged: up to _WINDOW_BYTES of them
    while entry <= last:
        chunk = yield source.read(ledger_id, entry, min(last, entry + _CHUNK_ENTRIES - 1), _CHUNK_BYTES)
        if not chunk:
            raise MigrationError(f"ledger {ledger_id} of topic {topic}: the source returned no entry {entry}")
        for data in chunk:
            time_us = yield source.entry_time(ledger_id, entry)
            data = bytes(data)
            appends.append(target.append(ledger_id, data, time_us))
            crc = zlib.crc32(data, crc)
            size += len(data)
            pending_bytes += len(data)
            entry += 1
        if pending_bytes >= _WINDOW_BYTES:
            yield gatherResults(appends, consumeErrors=True)
            appends, pending_bytes = [], 0
    yield gatherResults(appends, consumeErrors=True)
    if kill:  # (tests: a crash with this ledger written, not closed)
        os.kill(os.getpid(), signal.SIGKILL)
    yield target.close_ledger(ledger_id)
    return LedgerCopied(ledger_id, topic, entry, size, crc, replaced=replaced)


@inlineCallbacks
def _verify(target, copied: LedgerCopied):
    """Deferred[LedgerCopied] once the target's ledger reads back as what was written."""
    written = yield _checksum(target, copied.ledger_id, copied.entries - 1)
    if written != (copied.entries, copied.bytes, copied.crc):
        raise MigrationError(
            f"ledger {copied.ledger_id} of topic {copied.topic}: the copy reads back differently"
            f" ({written[0]} entries, {written[1]} bytes) from the source ({copied.entries},"
            f" {copied.bytes}); run again to copy it again"
        )
    return copied


@inlineCallbacks
def _checksum(store, ledger_id: int, last: int):
    """Deferred[(entries, bytes, CRC-32 of the entries in order)] of entries 0..last."""
    crc = size = 0
    entry = 0
    while entry <= last:
        chunk = yield store.read(ledger_id, entry, min(last, entry + _CHUNK_ENTRIES - 1), _CHUNK_BYTES)
        if not chunk:
            break
        for data in chunk:
            crc = zlib.crc32(data, crc)
            size += len(data)
        entry += len(chunk)
    return entry, size, crc
