"""Starting points of a subscription, resolved to the consumed seq-id delivery follows.

A subscription delivers from consumed + 1, so every starting point is expressed as the
consumed seq-id it implies: "earliest" retained, "latest" (the next publish), a seq-id,
or a timestamp (the first message published at or after it, via the log's binary search).
"""

from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.status import Status


def consumed_for_start(topic_log, start) -> int:
    """The consumed seq-id that makes delivery begin at `start` (not None)."""
    if start == "earliest":
        return topic_log.first_seq - 1
    if start == "latest":
        return topic_log.last_seq
    if isinstance(start, tuple) and len(start) == 2:
        kind, value = start
        if kind == "seq":
            if not isinstance(value, int) or value < 1:
                raise SubscribeError(
                    Status.MALFORMED_REQUEST, f"start seq-id {value!r} is not a positive integer"
                )
            if value < topic_log.first_seq:
                raise SubscribeError(
                    Status.SEQ_OUT_OF_RANGE,
                    f"seq-id {value} of {topic_log.topic} was removed;"
                    f" the earliest retained is {topic_log.first_seq}",
                )
            return value - 1
        if kind == "time":
            if not isinstance(value, int) or value < 0:
                raise SubscribeError(Status.MALFORMED_REQUEST, f"start time {value!r} is not a time in us")
            return topic_log.find_by_time(value) - 1
    raise SubscribeError(
        Status.MALFORMED_REQUEST,
        f"unknown starting point {start!r}: expected earliest, latest, ('seq', n) or ('time', us)",
    )
