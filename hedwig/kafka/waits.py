"""A Fetch's long poll: the answer waits for a publish to one of the partitions it asked
for, or for max_wait_ms, whichever comes first.

The wait is the read-ahead cache's tail wait (hedwig.cache.waits.TailWaiter), the one a
caught-up native subscriber's cursor uses: the publish hands its entry to the waiter
itself, so a waiting Fetch costs nothing until something is published, and nothing
polls the ledger."""

from twisted.internet.defer import Deferred

from hedwig.cache.waits import TailWaiter


class FetchWait:
    """Waits on every log in `logs` (caught-up topic logs) for at most `timeout_s`;
    `done` fires (with None) once, at the first publish or at the timeout."""

    def __init__(self, cache, clock, logs, timeout_s: float):
        self.done = Deferred()
        self._clock = clock
        self._ended = False
        self._waits = []
        for log in logs:
            waiter = TailWaiter(self._end, self._end)
            self._waits.append(cache.wait_tail(log, log.last_seq + 1, waiter))
        self._timer = clock.callLater(timeout_s, self._end)

    def _end(self, _result=None) -> None:
        if self._ended:
            return
        self._ended = True
        if self._timer.active():
            self._timer.cancel()
        for wait in self._waits:
            wait.cancel()
        self._waits = []
        # Answered in a turn of its own: not inside the publish that woke it.
        self._clock.callLater(0, self.done.callback, None)
