"""The delayed messages a shared subscription holds until their time (protocol/schedule.py).

A shared dispatcher that meets a message whose time is later takes it aside as a run
(its time, first seq-id, last seq-id: consecutive messages of one time, such as a
publish_many with one delay, are one run) and goes on with the messages after it; at
that time the run is delivered as any first delivery. The run is neither delivered nor
acknowledged meanwhile, so the subscription's consumed seq-id (the floor) stays below
it: after a restart or a takeover the dispatcher reads from the floor again and meets
the run again. Nothing is written: the stored message is the record of its time.

Memory: a run costs one heap slot and a tuple of three ints (about 170 bytes, measured
by bench/delay_bench.py: some 6 million runs per GiB). At `max_runs` held the
dispatcher takes no new delayed message until the earliest run is due (the ones after
it are read again then, from the cache or the ledger), so a subscription never holds
more, whatever is published.
"""

from heapq import heappop, heappush


class DelayedRuns:
    """Runs of seq-ids held until their time, earliest first, and the timer that wakes
    the dispatcher at the earliest."""

    __slots__ = ("_clock", "_heap", "_timer", "_timer_at", "_wake", "held_messages", "max_runs", "waits")

    def __init__(self, clock, max_runs: int, wake):
        self._clock = clock
        self._wake = wake  # called when the earliest run is due
        self._heap = []  # (deliver_at ms, first, last)
        self._timer = None
        self._timer_at = None
        self.max_runs = max_runs
        self.held_messages = 0
        self.waits = 0  # times a new message waited because max_runs were held

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def full(self) -> bool:
        return len(self._heap) >= self.max_runs

    def hold(self, deliver_at: int, first: int, last: int) -> None:
        heappush(self._heap, (deliver_at, first, last))
        self.held_messages += last - first + 1

    def take_due(self, now_ms: int):
        """(deliver_at, first, last) of the earliest run due at `now_ms`, or None."""
        heap = self._heap
        if heap and heap[0][0] <= now_ms:
            run = heappop(heap)
            self.held_messages -= run[2] - run[1] + 1
            return run
        return None

    def earliest(self):
        """The time (ms) of the earliest run held, or None."""
        return self._heap[0][0] if self._heap else None

    def drop_through(self, seq: int) -> None:
        """Forget what is at or below `seq` (the floor moved over it: a bound, retention,
        a reset)."""
        kept = [(at, max(first, seq + 1), last) for at, first, last in self._heap if last > seq]
        kept.sort()
        self._heap = kept
        self.held_messages = sum(last - first + 1 for _, first, last in kept)

    def arm(self) -> None:
        """Have the timer fire at the earliest run's time (after the dispatcher's turn)."""
        earliest = self.earliest()
        if earliest is None or earliest == self._timer_at:
            return
        self.stop()
        delay = max(0.001, earliest / 1000.0 - self._clock.seconds())
        self._timer_at = earliest
        self._timer = self._clock.callLater(delay, self._fired)

    def _fired(self) -> None:
        self._timer = self._timer_at = None
        self._wake()

    def stop(self) -> None:
        timer, self._timer = self._timer, None
        self._timer_at = None
        if timer is not None and timer.active():
            timer.cancel()
