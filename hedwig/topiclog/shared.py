"""One operation's outcome handed to any number of waiters.

Concurrent opens of a topic and concurrent closes share one underlying operation, but each
caller gets a Deferred of its own: callbacks one caller adds cannot change the result
another caller sees, as they would if the same Deferred were handed out twice.
"""

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

_PENDING = object()


class SharedResult:
    def __init__(self, operation: Deferred):
        self._result = _PENDING
        self._waiters: list[Deferred] = []
        operation.addBoth(self._settle)

    @property
    def done(self) -> bool:
        return self._result is not _PENDING

    def wait(self) -> Deferred:
        d = Deferred()
        if self._result is _PENDING:
            self._waiters.append(d)
        else:
            self._pass(d)
        return d

    def _settle(self, result):
        self._result = result
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            self._pass(d)
        return None  # every waiter received any failure; the operation itself is handled

    def _pass(self, d: Deferred) -> None:
        if isinstance(self._result, Failure):
            d.errback(self._result)
        else:
            d.callback(self._result)
