"""Waiting on another process (a hub, a Spark job) for something it reports: poll a
condition against what it says about itself until a deadline, never a sleep that hopes
things are done."""

import time


def wait_until(condition, what: str, timeout: float = 60.0, interval: float = 0.05):
    """Poll condition() until it returns a true value (returned). An exception counts as
    "not yet" (a hub restarting, a connection in flux: ask again). At the deadline:
    AssertionError naming `what` and the last value or exception."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = condition()
        except Exception as e:
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)  # (the pace of polling, not a synchronisation)
