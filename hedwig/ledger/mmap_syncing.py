"""Syncing a memory-mapped store's ledgers to disk under its fsync policy: the interval
timer, and the group commit's rounds (what each covers, what it made durable, what a
failed one breaks). `LedgerSyncer` is MmapLedgerStore's collaborator for durability."""

import os

from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from hedwig.ledger.groupcommit import GroupCommit
from hedwig.ledger.layout import (
    DURABLE,
    DURABLE_OFFSET,
    HEADER_FILE,
    data_page_name,
    index_page_name,
)
from hedwig.ledger.pagefiles import sync_path


class LedgerSyncer:
    """Group commit over the ledgers stored into since the last round (`dirty`, which the
    store's append path adds to directly). `before_ack(marks)` runs after a round's
    fsyncs and before its acknowledgements (a shared store checks its fences there);
    `on_failure(ledger, reason)` is told of each ledger a failed round covered."""

    log = Logger()

    def __init__(self, reactor, directory: str, *, policy: str, interval_ms: int, before_ack, on_failure):
        self.dirty: set = set()
        self.directory_changed = False  # a ledger directory appeared since the last round
        self._directory = directory
        self._before_ack = before_ack
        self._on_failure = on_failure
        self._commit = GroupCommit(reactor, self._snapshot, self._sync_one, self._synced, self._failed)
        self._timer = None
        if policy == "interval":
            self._timer = LoopingCall(self._interval_sync)
            self._timer.clock = reactor
            self._timer.start(interval_ms / 1000.0, now=False)

    @property
    def syncs(self) -> int:
        """Rounds completed."""
        return self._commit.syncs

    def wait(self, result):
        """A Deferred firing with `result` once a round started from now on covers what
        was stored so far (group commit)."""
        return self._commit.wait(result)

    def stop_timer(self) -> None:
        if self._timer is not None and self._timer.running:
            self._timer.stop()

    def _interval_sync(self) -> None:
        if self.dirty:
            self._commit.kick()

    def _snapshot(self):
        """On the reactor thread, as a round starts: the files it must sync (every data
        and index page stored into since the previous round, and the header and directory
        entries of new files) and the counts it will make durable. A header's counts are
        not synced: after a power cut, recovery finds the entries from their index
        records (see recovery)."""
        paths = []
        marks = []
        if self.directory_changed:
            paths.append(self._directory)
            self.directory_changed = False
        for ledger in self.dirty:
            if ledger.deleted:
                continue
            marks.append((ledger, ledger.count))
            if ledger.count:
                last_data_page = ledger.data_page
                last_index_page = (ledger.count - 1) // ledger.records_per_page
                paths.extend(
                    os.path.join(ledger.path, data_page_name(p))
                    for p in range(ledger.synced_data_page, last_data_page + 1)
                )
                paths.extend(
                    os.path.join(ledger.path, index_page_name(p))
                    for p in range(ledger.synced_index_page, last_index_page + 1)
                )
                ledger.synced_data_page, ledger.synced_index_page = last_data_page, last_index_page
            created = 0
            if ledger.data_stream is not None:
                created = ledger.data_stream.pages_created + ledger.index_stream.pages_created
            if ledger.new:  # its header (geometry) and directory entry must reach the disk
                paths.append(os.path.join(ledger.path, HEADER_FILE))
                paths.append(ledger.path)
                ledger.new = False
            elif created != ledger.synced_pages_created:
                paths.append(ledger.path)
            ledger.synced_pages_created = created
        self.dirty.clear()
        return paths, marks

    @staticmethod
    def _sync_one(path: str) -> None:
        sync_path(path)  # (looked up at each call: tests put a failing disk in its place)

    def _synced(self, marks) -> None:
        self._before_ack(marks)
        for ledger, count in marks:
            if count > ledger.durable:
                ledger.durable = count
                if ledger.header_mm is not None:  # (an unmapped one gets it when mapped again)
                    DURABLE.pack_into(ledger.header_mm, DURABLE_OFFSET, count)

    def _failed(self, marks, failure) -> None:
        """After a failed fsync the kernel may have dropped the dirty pages it could not
        write; nothing about those ledgers' tails can be trusted, so they take no more
        appends (reopening the store recovers them)."""
        self.log.failure("ledger sync failed", failure)
        for ledger, _count in marks or ():
            self._on_failure(ledger, f"an fsync failed: {failure.getErrorMessage()}")
