"""Stopping a running drain from a signal, without breaking what it is in the middle of.

A Python signal handler runs in the main thread between two bytecodes, wherever that
thread is. The drain's main thread spends its time inside calls to Spark (py4j, a
socket to the JVM) and to the hub (the blocking client): an exception raised there by a
handler (KeyboardInterrupt) cuts a call short. py4j then tears its connection down, and
the next call, the very `query.stop()` meant to end the run cleanly, can fail
(`Py4JNetworkError: Answer from Java side is empty`): the query is not stopped, what it
committed is not acknowledged, and the job exits 1 with a traceback.

So a signal only *asks* for a stop (StopRequest), and the drain looks at the request
between its calls, where stopping is safe: it stops the query, acknowledges what Spark
committed and returns. The interrupted system call is simply resumed (PEP 475). A second
signal, for an operator whose stop is taking too long, raises KeyboardInterrupt as
Python's default Ctrl-C does.
"""

import signal


class StopRequest:
    """Whether (and why) the drain was asked to stop. Set from a signal handler, or by a
    program running the drain in a thread of its own; read by the drain's loop."""

    def __init__(self):
        self.reason = None  # what asked, e.g. "SIGTERM"; None until a stop is requested

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Ask the drain to stop at its next safe point (the first reason is kept)."""
        if self.reason is None:
            self.reason = reason


class SignalStop:
    """While active (a context manager), each of `signals` requests a stop of `stop`;
    a second signal raises KeyboardInterrupt. The previous handlers come back on exit.

    `install()` puts the handlers in place again: creating a SparkContext installs
    PySpark's own SIGINT handler (cancel every job, raise KeyboardInterrupt), which would
    interrupt the drain in the middle of a call.
    """

    def __init__(self, stop: StopRequest, signals=(signal.SIGTERM, signal.SIGINT)):
        self.stop = stop
        self.signals = tuple(signals)
        self._previous = None

    def install(self) -> None:
        previous = {signum: signal.signal(signum, self._handle) for signum in self.signals}
        if self._previous is None:
            self._previous = previous

    def restore(self) -> None:
        previous, self._previous = self._previous, None
        for signum, handler in (previous or {}).items():
            signal.signal(signum, handler)

    def _handle(self, signum, frame):
        if self.stop.requested:
            raise KeyboardInterrupt
        self.stop.request(signal.Signals(signum).name)

    def __enter__(self):
        self.install()
        return self

    def __exit__(self, *exc_info):
        self.restore()
