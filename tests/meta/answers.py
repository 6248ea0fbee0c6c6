"""A reactor stand-in for stores that work on threads of their own.

`callFromThread` queues the call; the test thread runs queued calls until the Deferred it
waits for has fired (`wait_for`), so answers arrive on the test's thread as they would on
the reactor thread, and nothing is slept on: each get() wakes when the worker answers."""

import queue

from twisted.internet.task import Clock
from twisted.python.failure import Failure


class ThreadAnswers:
    def __init__(self):
        self._calls = queue.Queue()
        # Timers (a session's SUSPENDED expiry) on a clock of the test's: they fire only
        # when a test advances it.
        self.clock = Clock()
        self.callLater = self.clock.callLater

    def callFromThread(self, f, *args, **kwargs):
        self._calls.put((f, args, kwargs))

    def wait_for(self, d, timeout: float = 30.0):
        """The result of `d` (its failure raised), running answers until it has fired."""
        out = []
        d.addBoth(out.append)
        while not out:
            f, args, kwargs = self._calls.get(timeout=timeout)
            f(*args, **kwargs)
        if isinstance(out[0], Failure):
            out[0].raiseException()
        return out[0]
