"""Group commit: one sync, off the reactor thread, covers every append made meanwhile.

An fsync costs a few hundred microseconds however much it writes, so appends that wait
for durability wait together: the first one starts a sync at once, every append made while
it runs joins the next one, which starts as soon as the first completes. Acknowledgements
fire on the reactor thread, in append order, after the sync that covers them.
"""

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from hedwig.ledger.interface import LedgerError


class GroupCommit:
    """Batches waiters behind syncs; at most one sync runs at a time.

    snapshot() runs on the reactor thread when a sync starts and returns what that sync
    must cover (so everything stored before it is covered); sync(token) runs in a worker
    thread; synced(token) or failed(token, failure) runs on the reactor thread after it.
    """

    def __init__(self, reactor, snapshot, sync, synced, failed):
        self._reactor = reactor
        self._snapshot = snapshot
        self._sync = sync
        self._synced = synced
        self._failed = failed
        self._waiting = []  # (Deferred, result or Failure) for the next sync, in order
        self._running = False
        self._firing = False
        self.syncs = 0  # syncs completed (for tests and metrics)

    @property
    def running(self) -> bool:
        return self._running

    def wait(self, result) -> Deferred:
        """A Deferred firing with `result` once a sync started from now on completes (or
        failing with `result` there, if it is a Failure: failures keep their place in
        the order too)."""
        d = Deferred()
        self._waiting.append((d, result))
        if not self._running and not self._firing:
            self._start()
        return d

    def kick(self) -> None:
        """Start a sync now if none runs (the interval policy's timer)."""
        if not self._running and not self._firing:
            self._start()

    def _start(self) -> None:
        self._running = True
        batch, self._waiting = self._waiting, []
        try:
            token = self._snapshot()
        except BaseException:
            self._done(None, batch, Failure())
            return
        self._reactor.callInThread(self._run, token, batch)

    def _run(self, token, batch) -> None:
        try:
            self._sync(token)
            failure = None
        except BaseException:
            failure = Failure()
        self._reactor.callFromThread(self._done, token, batch, failure)

    def _done(self, token, batch, failure) -> None:
        self._running = False
        self.syncs += 1
        if failure is None:
            self._synced(token)
        else:
            self._failed(token, failure)
            error = Failure(LedgerError(f"fsync failed: {failure.getErrorMessage()}"))
        self._firing = True
        try:
            for d, result in batch:
                if isinstance(result, Failure):
                    d.errback(result)
                elif failure is not None:
                    d.errback(error)
                else:
                    d.callback(result)
        finally:
            self._firing = False
        if self._waiting:
            self._start()
