"""Group commit: one round of fsyncs, off the reactor thread, covers every append made
meanwhile.

An fsync costs about the same however much it writes, so appends that wait for
durability wait together: the first one starts a round at once, every append made while
it runs joins the next one, which starts as soon as the first completes. A round syncs
each file it covers in its own pool thread, all at once: the file system commits its
journal once for all of them, where one file after another would pay a journal commit
each. Acknowledgements fire on the reactor thread, in append order, after the round
that covers them.
"""

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import in_thread
from hedwig.ledger.interface import LedgerError


class GroupCommit:
    """Batches waiters behind rounds of syncs; at most one round runs at a time.

    snapshot() runs on the reactor thread when a round starts and returns (items, token):
    what that round must sync, so everything stored before it is covered; sync_one(item)
    runs in a pool thread per item; synced(token) or failed(token, failure) runs on the
    reactor thread once every item is done.
    """

    def __init__(self, reactor, snapshot, sync_one, synced, failed):
        self._reactor = reactor
        self._snapshot = snapshot
        self._sync_one = sync_one
        self._synced = synced
        self._failed = failed
        self._waiting = []  # (Deferred, result or Failure) for the next round, in order
        self._running = False
        self._firing = False
        self.syncs = 0  # rounds completed (for tests and metrics)

    @property
    def running(self) -> bool:
        return self._running

    def wait(self, result) -> Deferred:
        """A Deferred firing with `result` once a round started from now on completes (or
        failing with `result` there, if it is a Failure: failures keep their place in
        the order too)."""
        d = Deferred()
        self._waiting.append((d, result))
        if not self._running and not self._firing:
            self._start()
        return d

    def kick(self) -> None:
        """Start a round now if none runs (the interval policy's timer)."""
        if not self._running and not self._firing:
            self._start()

    def _start(self) -> None:
        self._running = True
        batch, self._waiting = self._waiting, []
        try:
            items, token = self._snapshot()
        except BaseException:
            self._done(None, batch, [Failure()])
            return
        if not items:
            self._done(token, batch, [])
            return
        outstanding = [len(items)]
        failures = []

        def one_done(result):
            if isinstance(result, Failure):
                failures.append(result)
            outstanding[0] -= 1
            if not outstanding[0]:
                self._done(token, batch, failures)

        for item in items:
            in_thread(self._reactor, self._sync_one, item).addBoth(one_done)

    def _done(self, token, batch, failures) -> None:
        self._running = False
        self.syncs += 1
        if not failures:
            self._synced(token)
            error = None
        else:
            self._failed(token, failures[0])
            error = Failure(LedgerError(f"fsync failed: {failures[0].getErrorMessage()}"))
        self._firing = True
        try:
            for d, result in batch:
                if isinstance(result, Failure):
                    d.errback(result)
                elif error is not None:
                    d.errback(error)
                else:
                    d.callback(result)
        finally:
            self._firing = False
        if self._waiting:
            self._start()
