"""The ledger store seam: BookKeeper-style ledgers behind one interface.

A ledger is an append-only sequence of entries with dense entry ids from 0, written by
one writer, closed once and immutable afterwards. The embedded default keeps ledgers in
memory-mapped page files (`hedwig.ledger.mmap_store`); replicated ledgers live in a Ceph
RADOS pool (`hedwig.ledger.rados_store`) behind the same interface, as BookKeeper's did.
"""

from zope.interface import Interface


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


class LedgerStoreFull(LedgerError):
    """No space could be allocated; nothing of the failed append was stored (answered
    STORAGE_FULL, a client's StorageFull)."""


class EntryDamaged(LedgerError):
    """An entry cannot be read back: its index record points outside its ledger's pages,
    or its page is missing or unreadable. The message is for the operator: it names the
    ledger, the entry and where it was looked for (page and offset), never a file path."""

    def __init__(self, ledger_id: int, entry_id: int, where: str):
        super().__init__(f"ledger {ledger_id} entry {entry_id}: {where}")
        self.ledger_id = ledger_id
        self.entry_id = entry_id


class LedgerUnavailable(LedgerError):
    """The storage did not answer in time (a replicated store whose pool has fewer
    replicas up than it needs, or cannot be reached): the operation may or may not have
    taken effect there. An append failing so was not acknowledged; the ledger takes no
    more appends (its end is learned again when its topic is next acquired)."""


class ILedgerStore(Interface):
    """BookKeeper-style ledgers: append-only, dense entry ids from 0, one writer, closed
    once. Everything that may wait for storage answers with a Deferred, because a store may
    be remote (hedwig.ledger.rados_store) and the reactor never waits; a local store
    (mmap, memory) answers with Deferreds that have fired already, and callers on hot
    paths take those results at once (hedwig.concurrency.deferreds.run_now). What a store
    keeps in memory about the ledgers it knows (created, loaded or fenced here) is
    answered synchronously: last_entry_id, ledger_bytes, is_closed, location,
    list_ledgers; for a ledger it does not know they raise NoSuchLedger, and `load`
    makes it known.

    Every store runs the contract suite tests/ledger/test_contract.py."""

    def create():
        """Deferred[int]: a new empty open ledger's id, never reused (by any writer sharing
        the storage). Fails with LedgerStoreFull or LedgerError."""

    def append(ledger_id, data, publish_time_us):
        """Append one entry: `data` is bytes-like, or a list of bytes-like chunks stored as
        their concatenation. Returns a Deferred firing with the entry id once the entry is
        durable (under the fsync policy; on every replica of a replicated store);
        Deferreds fire in append order, and an append acknowledged implies every earlier
        one of the ledger was. Fails with LedgerStoreFull (nothing stored), LedgerClosed,
        LedgerFenced (another writer took the ledger over), LedgerUnavailable or
        LedgerError; after a failure other than LedgerStoreFull or a refusal made before
        anything was stored, the ledger takes no more appends.

        A store may also offer `append_now(ledger_id, data, publish_time_us)` (the topic
        log uses it when present): the entry id itself, an int, when the entry is
        acknowledged within the call, else what append returns. A store that adds a
        check to append (hedwig.ledger.shared_store: fencing) gives append_now the same."""

    def read(ledger_id, first_entry, last_entry, max_bytes=None):
        """Deferred[list of bytes]: entries first_entry..last_entry (inclusive, at most
        the last entry acknowledged), stopping early once `max_bytes` is reached (always
        at least one entry) or before a damaged entry. Fails with EntryDamaged when the
        first entry asked for is damaged, LedgerError when the range is outside the
        ledger, NoSuchLedger when the ledger is missing."""

    def load(ledger_id):
        """Deferred firing once the store knows the ledger (its state, last entry, size):
        at once for a ledger it knows; NoSuchLedger when the storage has no such ledger.
        A ledger another writer still writes is known as it is now, and is not made
        writable here."""

    def last_entry_id(ledger_id):
        """The last entry id appended (and acknowledged, or found by recovery), -1 when
        the ledger is empty. Known ledgers only."""

    def entry_time(ledger_id, entry_id):
        """Deferred[int]: the publish time (us) recorded with an entry."""

    def find_by_time(ledger_id, time_us):
        """Deferred[int or None]: the first entry id whose publish time is >= time_us, or
        None (publish times never decrease within a ledger: a binary search)."""

    def ledger_bytes(ledger_id):
        """Bytes of entry data the ledger holds (for rolls and retention). Known ledgers."""

    def is_closed(ledger_id):
        """Whether the ledger was closed. Known ledgers."""

    def location(ledger_id):
        """Where the ledger lives, for an operator (DESCRIBE_TOPIC): a directory, or a
        pool and object names. Known ledgers."""

    def close_ledger(ledger_id):
        """Close the ledger: appends are refused at once; Deferred firing once every
        entry acknowledged and the closed state are durable."""

    def fence(ledger_id):
        """Deferred firing once the ledger takes no more acknowledged appends from any
        writer and is closed here at its last whole entry: a new owner recovering a
        topic's open ledger. A store that alone writes its ledgers closes it; a store
        whose storage other writers share (hedwig.ledger.shared_store,
        hedwig.ledger.rados_store) fences it there first, so a writer that was only
        paused acknowledges nothing more. The ledger is known afterwards."""

    def delete(ledger_id):
        """Deferred firing once the ledger is gone and its space free; NoSuchLedger when
        there is no such ledger."""

    def list_ledgers():
        """Ids of the ledgers the store knows, ascending: every ledger of an embedded
        store; those created, loaded or fenced here for a store shared with other
        writers."""

    def close():
        """Flush and release everything; returns a Deferred."""
