"""Reactors for ledger tests: a Clock for time, and thread work run on the test's terms.

The store sends blocking file work (fsync, page preparation, deletion) to
`reactor.callInThread` and its results back with `reactor.callFromThread`. These run
that work on the calling thread, at once or when the test says, so the tests are
deterministic; the work itself (real files, real fsync, real mmap) is unchanged.
"""

from twisted.internet.task import Clock


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
