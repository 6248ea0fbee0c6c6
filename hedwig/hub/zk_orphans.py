"""Ledgers no topic names in a region's shared RADOS namespace: found, and deleted only
when that is safe.

A hub of a region creates a ledger (acquiring a topic, rolling) before the topic's
ranges name it; one that dies (or loses its ZooKeeper session) in between leaves a
ledger nothing names and no garbage record lists, which nothing would ever delete. The
hubs share the namespace, so a ledger unnamed now may be one a live hub is creating:
such a ledger is an orphan only when

- no topic's ranges name it and no garbage record lists it (read after the hubs, below),
- it holds no entry (a ledger's entries are appended only once its range is recorded,
  so an empty one never held an acknowledged message; one that holds entries is kept and
  reported, as a single hub keeps the ledgers its metadata does not know: it may be a
  topic's data whose record was lost),
- the hub that created it (its head's writer) is not registered in the region: it
  creates ledgers only while registered, so its session that made this one has ended,
  and with it every write that could name it,

and all three hold twice, `grace_s` apart (several session timeouts and ledger
operation timeouts: an acquire under way when its hub's session ended has failed by
then). A hub on RADOS in a region looks once, `grace_s` after it joined, and deletes what
both looks found; another hub doing the same meanwhile is harmless (a deletion finds
the ledger gone).
"""

from twisted.application.service import Service
from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from hedwig.ledger.interface import LedgerError, NoSuchLedger
from hedwig.ledger.migration import named_ledgers


class OrphanLedgers(Service):
    """Looks for orphan ledgers at start (after `grace_s`) and deletes them after a second
    look (`grace_s` later). `store`: the RadosLedgerStore; `metadata`: the region's
    ZkMetadataStore; `live_hubs`: () -> Deferred[set of registered hub names]."""

    log = Logger()

    def __init__(self, store, metadata, live_hubs, clock, grace_s: float):
        self.store = store
        self.metadata = metadata
        self.live_hubs = live_hubs
        self.clock = clock
        self.grace_s = grace_s
        self.deleted = []
        self.kept = {}  # ledger id -> why it stays (it holds entries, or its writer is live)
        self._call = None
        self.done = None  # the Deferred of the passes, once they started

    def startService(self):
        super().startService()
        self._call = self.clock.callLater(self.grace_s, self._start)

    def stopService(self):
        super().stopService()
        if self._call is not None and self._call.active():
            self._call.cancel()

    def _start(self):
        self.done = self.run()
        self.done.addErrback(self._failed)

    def _failed(self, failure):
        self.log.warn("looking for orphan ledgers failed: {error}", error=failure.value)

    @inlineCallbacks
    def run(self):
        """Both looks, `grace_s` apart, then the deletions: Deferred[list of ids deleted]."""
        first = yield self.candidates()
        if first and self.running:
            yield self._sleep(self.grace_s)
            if not self.running:
                return []
            second = yield self.candidates()
            for ledger_id in sorted(first & second):
                try:
                    yield self.store.delete(ledger_id)
                except NoSuchLedger:
                    continue  # (another hub's look deleted it)
                except LedgerError as e:
                    self.log.warn("could not delete orphan ledger {id}: {error}", id=ledger_id, error=e)
                    continue
                self.deleted.append(ledger_id)
        if self.deleted:
            self.log.info(
                "deleted {count} orphan ledger(s) of the region (empty, named by no topic, made by a hub"
                " no longer in the region): {ids}",
                count=len(self.deleted),
                ids=self.deleted,
            )
        if self.kept:
            self.log.warn(
                "kept {count} ledger(s) no topic names: {kept}",
                count=len(self.kept),
                kept="; ".join(f"{i} ({why})" for i, why in sorted(self.kept.items())),
            )
        return self.deleted

    def _sleep(self, seconds: float):
        from twisted.internet.task import deferLater

        return deferLater(self.clock, seconds, lambda: None)

    @inlineCallbacks
    def candidates(self):
        """Deferred[set]: the ledgers that are orphans now (the module docstring's three
        conditions); the others no topic names go to `kept`, with why."""
        live = yield self.live_hubs()  # (first: a writer absent now made no write after)
        listed = yield self.store.list_pool_ledgers()
        named = yield named_ledgers(self.metadata)
        garbage = yield self.metadata.list_garbage()
        orphans = set()
        self.kept = {}  # (the last look's)
        for ledger_id in sorted(listed - set(named) - set(garbage)):
            try:
                writer, entries = yield self.store.peek(ledger_id)
            except NoSuchLedger:
                continue
            if entries:
                self.kept[ledger_id] = f"{entries} entries: a topic's messages whose record was lost?"
            elif writer in live:
                self.kept[ledger_id] = f"empty, made by {writer}, which is in the region"
            else:
                orphans.add(ledger_id)
        return orphans
