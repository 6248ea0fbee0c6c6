"""Blocking file work off the reactor thread, with the reactor passed in (never imported)."""

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure


def in_thread(reactor, f, *args) -> Deferred:
    """Run f(*args) in the reactor's thread pool; the Deferred fires on the reactor thread."""
    d = Deferred()

    def run():
        try:
            result = f(*args)
        except BaseException:
            reactor.callFromThread(d.errback, Failure())
        else:
            reactor.callFromThread(d.callback, result)

    run.target = f  # what runs, for whoever inspects queued thread work (tests)
    reactor.callInThread(run)
    return d
