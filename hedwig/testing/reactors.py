"""Reactors for ledger tests: a Clock for time, and thread work run on the test's terms.

The store sends blocking file work (fsync, page preparation, deletion) to
`reactor.callInThread` and its results back with `reactor.callFromThread`. These run
that work on the calling thread, at once or when the test says, so the tests are
deterministic; the work itself (real files, real fsync, real mmap) is unchanged. A
RADOS store's answers come from librados's threads: PumpedReactor queues them for the
test's thread.
"""

import queue
import threading
import time

from twisted.internet.task import Clock
from twisted.python.failure import Failure


class InlineThreadsReactor(Clock):
    """Thread work runs at once, on the calling thread."""

    def __init__(self):
        super().__init__()
        self.thread_calls = 0

    def callInThread(self, f, *args, **kwargs):
        self.thread_calls += 1
        f(*args, **kwargs)

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)


class QueuedThreadsReactor(Clock):
    """Thread work waits in `queued` until run_threads(): the test sees what happens while
    an fsync or a page preparation is still running."""

    def __init__(self):
        super().__init__()
        self.queued = []

    def callInThread(self, f, *args, **kwargs):
        self.queued.append((f, args, kwargs))

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)

    def run_one(self) -> None:
        f, args, kwargs = self.queued.pop(0)
        f(*args, **kwargs)

    def run_threads(self) -> None:
        while self.queued:
            self.run_one()


class PumpedReactor(Clock):
    """For stores whose answers come from threads of their own (librados's): work they
    hand to callFromThread waits in a queue that `run_until` runs on the test's thread,
    as the reactor thread would; callInThread starts a real thread. Time is the Clock's:
    `run_until` also runs what is due now (callLater(0))."""

    def __init__(self):
        super().__init__()
        self._calls = queue.SimpleQueue()

    def callFromThread(self, f, *args, **kwargs):
        self._calls.put((f, args, kwargs))

    def callInThread(self, f, *args, **kwargs):
        threading.Thread(target=f, args=args, kwargs=kwargs, daemon=True).start()

    def run_until(self, d, timeout_s: float = 30.0):
        """The outcome of `d` (its failure raised), running queued calls until it fires;
        AssertionError after `timeout_s` of real time without it."""
        out = []
        d.addBoth(out.append)
        deadline = time.monotonic() + timeout_s
        while True:
            self.advance(0)
            if out:
                break
            try:
                f, args, kwargs = self._calls.get(timeout=max(0.0, min(0.05, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise AssertionError(f"{d!r} has not fired within {timeout_s} s") from None
                continue
            f(*args, **kwargs)
        if isinstance(out[0], Failure):
            out[0].raiseException()
        return out[0]

    def run_pending(self) -> int:
        """Run the calls queued so far (and what is due now); how many ran."""
        ran = 0
        while True:
            self.advance(0)
            try:
                f, args, kwargs = self._calls.get_nowait()
            except queue.Empty:
                return ran
            f(*args, **kwargs)
            ran += 1
