"""Each user's share of the reactor for compiling selectors.

Compiling a selector new to the hub runs on the reactor (tens of milliseconds for the
longest), and a user may replace its filters as fast as it likes: unsubscribing and
subscribing again with new texts, back to back, held every other connection of the hub
for seconds. So a user (with [auth] off, a source host) compiles at most `share` of
the time: after a compile that took c seconds its next one waits (1 / share - 1) * c,
and the SUBSCRIBEs behind it wait their turn, in order, the reactor serving everyone
else meanwhile. A short selector (well under a millisecond) waits next to nothing; a
user replacing 4 KB selectors does it a few times a second, not fifty.

At most `max_waiting` compiles wait per user: past that a SUBSCRIBE is refused.
"""

import time
from collections import deque

from twisted.internet.defer import Deferred, fail, maybeDeferred

from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.status import Status


class CompileTurns:
    """Runs each user's compiles (`run(who, work)`) in its own order, spaced so that
    they take at most `share` of the time; `timer` measures what one took."""

    def __init__(
        self, clock, share: float, burst_s: float = 0.25, max_waiting: int = 256, timer=time.perf_counter
    ):
        self._clock = clock
        self._burst_s = burst_s
        self._rest_per_second = 1 / share - 1  # (how long a user waits per second it compiled)
        self._max_waiting = max_waiting
        self._timer = timer
        self._free_at = {}  # who -> when its next compile may start (absent: now)
        self._waiting = {}  # who -> deque of (Deferred, work) waiting their turn, in order

    def run(self, who, work) -> Deferred:
        """Deferred of work()'s result (or failure): work is run now if it is `who`'s
        turn, else when it comes."""
        queue = self._waiting.get(who)
        if queue is None:
            if self._free_at.get(who, 0.0) - self._burst_s <= self._clock.seconds():
                return maybeDeferred(self._timed, who, work)
            queue = self._waiting[who] = deque()
            self._wake_later(who)
        elif len(queue) >= self._max_waiting:
            return fail(
                SubscribeError(
                    Status.TOO_MANY_SUBSCRIPTIONS,
                    f"{len(queue)} filters of this user already wait to be compiled: subscribe"
                    " with fewer new filters at once",
                )
            )
        waiting = Deferred()
        queue.append((waiting, work))
        return waiting

    def waiting(self, who=None) -> int:
        """How many compiles of `who` (of everyone: None) wait for their turn."""
        if who is None:
            return sum(len(queue) for queue in self._waiting.values())
        return len(self._waiting.get(who, ()))

    def _timed(self, who, work):
        started = self._timer()
        try:
            return work()
        finally:
            spent = self._timer() - started
            now = self._clock.seconds()
            self._forget_past(now)
            self._free_at[who] = max(self._free_at.get(who, 0.0), now) + spent * self._rest_per_second

    def _forget_past(self, now: float) -> None:
        if len(self._free_at) > 1024:  # (users that may compile at once need no entry)
            for who in [who for who, at in self._free_at.items() if at <= now]:
                del self._free_at[who]

    def _wake_later(self, who) -> None:
        delay = max(0.0, self._free_at.get(who, 0.0) - self._burst_s - self._clock.seconds())
        self._clock.callLater(delay, self._next, who)

    def _next(self, who) -> None:
        queue = self._waiting[who]
        waiting, work = queue.popleft()
        maybeDeferred(self._timed, who, work).chainDeferred(waiting)
        if queue:
            self._wake_later(who)
        else:
            del self._waiting[who]
