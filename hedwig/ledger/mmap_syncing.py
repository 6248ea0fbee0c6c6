"""Syncing ledgers to disk under the fsync policy: the interval sync, and the group commit's
snapshots of what a sync covers (MmapLedgerStore's part for durability)."""

import os

from hedwig.ledger.layout import (
    DURABLE,
    DURABLE_OFFSET,
    HEADER_FILE,
    data_page_name,
    index_page_name,
)
from hedwig.ledger.pagefiles import sync_path


class SyncingLedgers:
    """Part of MmapLedgerStore (mmap_store.py): fsyncs under the policy."""

    def _interval_sync(self) -> None:
        if self._dirty:
            self._commit.kick()

    def _snapshot(self):
        """On the reactor thread, as a round starts: the files it must sync (every data
        and index page stored into since the previous round, and the header and directory
        entries of new files) and the counts it will make durable. A header's counts are
        not synced: after a power cut, recovery finds the entries from their index
        records (see recovery)."""
        paths = []
        marks = []
        if self._dir_new:
            paths.append(self._dir)
            self._dir_new = False
        for ledger in self._dirty:
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
        self._dirty.clear()
        return paths, marks

    def _sync_one(self, path: str) -> None:
        sync_path(path)

    def _synced(self, marks) -> None:
        for ledger, count in marks:
            if count > ledger.durable:
                ledger.durable = count
                if ledger.header_mm is not None:  # (an unmapped one gets it when mapped again)
                    DURABLE.pack_into(ledger.header_mm, DURABLE_OFFSET, count)

    def _sync_failed(self, token, failure) -> None:
        """After a failed fsync the kernel may have dropped the dirty pages it could not
        write; nothing about those ledgers' tails can be trusted, so they take no more
        appends (reopening the store recovers them)."""
        self.log.failure("ledger sync failed", failure)
        for ledger, _count in token or ():
            ledger.broken = f"an fsync failed: {failure.getErrorMessage()}"
            self._writable.pop(ledger.id, None)
            self._headers.discard(ledger)
