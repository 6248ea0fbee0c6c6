"""A hub's start, watched: when it fails, the cause is the last thing the process says.

A hub that cannot start (its port taken or out of range, its data directory held by
another hub, its metadata lost) logs the cause, then shuts down, and the shutdown logs
lines of its own ("Main loop terminated.", twistd's "Server Shut Down."): a user reading
the end of the output would see those, not why. So both ways of running a hub keep the
cause and say it again once nothing else will be logged: `hedwig hub` (hedwig.hub.main)
after its reactor returns, `twistd hedwig` (twisted/plugins/hedwig_plugin.py) at exit,
with exit status 1 (twistd itself would exit 0 after an orderly stop).
"""

import atexit
import os
import sys

from twisted.application.service import Service
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()


def describe(failure: Failure) -> str:
    """A start failure as one line: the exception's message, or its type without one."""
    message = " ".join(str(failure.getErrorMessage()).split())
    return message or failure.type.__name__


class StartWatch:
    """Starts a HubService and stops the reactor if it cannot serve; `cause` says why."""

    def __init__(self, reactor):
        self.reactor = reactor
        self.cause = None

    def start(self, service) -> None:
        try:
            service.startService()
        except Exception:
            self.failed(Failure())
            return
        service.listening.addErrback(self.failed)

    def failed(self, failure: Failure) -> None:
        self.cause = describe(failure)
        log.critical("hedwig hub could not start: {cause}", cause=self.cause)
        if self.reactor.running:
            self.reactor.stop()
        else:  # twistd starts the services before it runs the reactor
            self.reactor.callWhenRunning(self.reactor.stop)


class WatchedHubService(Service):
    """The service `twistd hedwig` runs: the HubService, started through a StartWatch.
    A failed start ends the process with the cause on standard error as its last line
    and exit status 1, after twistd's own shutdown messages."""

    def __init__(self, hub_service, reactor=None):
        if reactor is None:
            from twisted.internet import reactor
        self.hub_service = hub_service
        self.watch = StartWatch(reactor)

    def startService(self):
        super().startService()
        self.watch.start(self.hub_service)
        atexit.register(self._exit_with_cause)

    def stopService(self):
        super().stopService()
        return self.hub_service.stopService()

    def _exit_with_cause(self) -> None:
        if self.watch.cause is None:
            return
        # twistd put loggers in place of sys.stdout and sys.stderr: the process's own now.
        sys.__stdout__.flush()
        print(f"twistd hedwig: could not start: {self.watch.cause}", file=sys.__stderr__, flush=True)
        os._exit(1)  # the only way to a failing status once twistd has returned
