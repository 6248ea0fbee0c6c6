"""The ledger store seam: BookKeeper-style ledgers behind one interface.

A ledger is an append-only sequence of entries with dense entry ids from 0, written by
one writer, closed once and immutable afterwards. The embedded default keeps ledgers in
memory-mapped page files (`hedwig.ledger.mmap_store`); a BookKeeper backend sits behind
the same interface.
"""

from zope.interface import Attribute, Interface


class LedgerError(Exception):
    """A ledger operation failed; the message says which ledger and why."""


class NoSuchLedger(LedgerError):
    pass


class LedgerClosed(LedgerError):
    """An append to a ledger that was closed (closed ledgers are immutable)."""


class LedgerFenced(LedgerClosed):
    """An append to a ledger that another writer fenced (it recovered the ledger to take
    its topic over, hedwig.ledger.fencing): the entry is not acknowledged, and the ledger
    takes no more appends from this writer."""


class StorageFull(LedgerError):
    """No space could be allocated; nothing of the failed append was stored."""


class EntryDamaged(LedgerError):
    """An entry cannot be read back: its index record points outside its ledger's pages,
    or its page is missing or unreadable. The message is for the operator: it names the
    ledger, the entry and where it was looked for (page and offset), never a file path."""

    def __init__(self, ledger_id: int, entry_id: int, where: str):
        super().__init__(f"ledger {ledger_id} entry {entry_id}: {where}")
        self.ledger_id = ledger_id
        self.entry_id = entry_id


class ILedgerStore(Interface):
    fsync_policy = Attribute("'never' | 'interval' | 'always'")

    def create():
        """Create an empty open ledger and return its id (an int, never reused)."""

    def append(ledger_id, data, publish_time_us):
        """Append one entry: `data` is bytes-like, or a list of bytes-like chunks stored as
        their concatenation. Returns a Deferred firing with the entry id once the entry is
        durable under the fsync policy; Deferreds fire in append order. Fails with
        StorageFull (nothing stored) or LedgerError.

        A store may also offer `append_now(ledger_id, data, publish_time_us)` (the topic
        log uses it when present): the entry id itself, an int, when the entry is
        acknowledged within the call, else what append returns. A store that adds a
        check to append (hedwig.ledger.shared_store: fencing) gives append_now the same."""

    def read(ledger_id, first_entry, last_entry, max_bytes=None):
        """Entries first_entry..last_entry (inclusive) as a list of bytes, stopping early
        once `max_bytes` is reached (always at least one entry) or before a damaged entry.
        Raises EntryDamaged when the first entry asked for is damaged. Synchronous."""

    def last_entry_id(ledger_id):
        """The last appended entry id, -1 when the ledger is empty."""

    def entry_time(ledger_id, entry_id):
        """The publish time (us) recorded with an entry."""

    def find_by_time(ledger_id, time_us):
        """The first entry id whose publish time is >= time_us, or None: binary search."""

    def ledger_bytes(ledger_id):
        """Bytes of entry data the ledger holds (for rolls and retention)."""

    def is_closed(ledger_id):
        """Whether the ledger was closed."""

    def close_ledger(ledger_id):
        """Close the ledger: no more appends; returns a Deferred that fires once durable."""

    def fence(ledger_id):
        """Deferred firing once the ledger takes no more acknowledged appends from any
        writer and is closed here at its last whole entry: a new owner recovering a
        topic's open ledger. A store that alone writes its ledgers closes it; a store
        on storage shared with other writers (hedwig.ledger.shared_store) fences it
        there first, so a writer that was only paused acknowledges nothing more."""

    def delete(ledger_id):
        """Delete the ledger and free its disk space."""

    def list_ledgers():
        """Ids of every ledger in the store, ascending."""

    def close():
        """Flush and release everything; returns a Deferred."""
