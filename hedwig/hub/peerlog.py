"""Client errors logged once per peer per interval, with a count of the rest.

A client that sends bad frames, bad requests or refused handshakes in a loop must not
fill the operator's disk with log lines (one line per bad request made 168 MB of log in
90 s). So the lines the hub writes about a client's mistakes go through one PeerLog: the
first of each peer (its host: a client reconnecting from new ports is the same peer) in
an interval is written as it is; the others are counted, and when the interval ends one
line says how many were left out. A flood costs each peer at most two lines an
interval, and the memory of one counter per peer that erred in it.

These lines are warnings without tracebacks: a client's error is not the hub's fault.
The hub's own faults (an unexpected exception) are not rate-limited and keep their
level and traceback.
"""

from twisted.logger import Logger, LogLevel


class PeerLog:
    """Rate-limits log lines by peer. `clock` is an IReactorTime (task.Clock in tests)."""

    log = Logger()

    def __init__(self, clock, interval_s: float):
        self._clock = clock
        self.interval_s = interval_s
        self._left_out = {}  # peer -> lines not written in this interval
        self._interval_end = None  # the DelayedCall ending this interval, while any peer erred
        self.lines_left_out = 0  # over the hub's life, for STATS

    def warn(self, logger: Logger, source: str, format: str, **fields) -> bool:
        """Write `format` with `fields` through `logger` at warn level if it is the first
        line of `source` (a peer's host) in this interval, else count it. Whether it was
        written."""
        left_out = self._left_out.get(source)
        if left_out is not None:
            self._left_out[source] = left_out + 1
            self.lines_left_out += 1
            return False
        self._left_out[source] = 0
        if self._interval_end is None:
            self._interval_end = self._clock.callLater(self.interval_s, self._end_interval)
        logger.emit(LogLevel.warn, format, **fields)
        return True

    def _end_interval(self) -> None:
        self._interval_end = None
        left_out, self._left_out = self._left_out, {}
        for peer, count in left_out.items():
            if count:
                self.log.warn(
                    "{peer}: {count} more client error(s) in the last {interval_s:g}s not logged",
                    peer=peer,
                    count=count,
                    interval_s=self.interval_s,
                )

    def stop(self) -> None:
        """End the interval now (the hub stops): the counts so far are written."""
        if self._interval_end is not None and self._interval_end.active():
            self._interval_end.cancel()
            self._end_interval()
