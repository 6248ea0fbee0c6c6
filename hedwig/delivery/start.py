"""Starting points of a subscription, resolved to the consumed seq-id delivery follows.

A subscription delivers from consumed + 1, so every starting point is expressed as the
consumed seq-id it implies: "earliest" retained, "latest" (the next publish), a seq-id,
or a timestamp (the first message published at or after it, via the log's binary search:
resolve_time turns it into the seq-id start it names first, since the search reads
ledgers, a Deferred).

A seq-id start is bounded by the topic: past its last seq-id + 1 is refused
(SEQ_OUT_OF_RANGE naming the last seq-id) rather than kept, since such a subscription
would silently skip every message published up to it; this is also where a start no
integer column can hold (the wire carries a u64) stops before it reaches the metadata
store. Before the first retained seq-id, delivery begins at the first retained one.
"""

from twisted.internet.defer import Deferred, fail, succeed

from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.status import Status


def resolve_time(topic_log, start) -> Deferred:
    """Deferred[start]: a ("time", us) start as ("seq", n), n the first seq-id published at
    or after it (the topic log's search, which may read ledgers); any other start as it
    is, for consumed_for_start."""
    if isinstance(start, tuple) and len(start) == 2 and start[0] == "time":
        value = start[1]
        if not isinstance(value, int) or value < 0:
            return fail(SubscribeError(Status.MALFORMED_REQUEST, f"start time {value!r} is not a time in us"))
        return topic_log.find_by_time(value).addCallback(lambda seq: ("seq", seq))
    return succeed(start)


def consumed_for_start(topic_log, start) -> int:
    """The consumed seq-id that makes delivery begin at `start` (not None; a time start
    resolved by resolve_time)."""
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
            last = topic_log.last_seq
            if value > last + 1:
                raise SubscribeError(
                    Status.SEQ_OUT_OF_RANGE,
                    f"start seq-id {value} is past the end of {topic_log.topic}: its last seq-id is"
                    f" {last}, so a subscription starts at {last + 1} at the latest",
                )
            # Before the first retained seq-id: from the first retained one (what "earliest"
            # gives), as a subscription whose consumed seq-id was collected resumes there.
            return max(value, topic_log.first_seq) - 1
    raise SubscribeError(
        Status.MALFORMED_REQUEST,
        f"unknown starting point {start!r}: expected earliest, latest, ('seq', n) or ('time', us)",
    )
