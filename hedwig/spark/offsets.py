"""Stream offsets and the arithmetic on them, kept free of Spark and of sockets.

A stream offset is a JSON object {topic: seq-id}: everything up to and including that
seq-id has been read (0: nothing yet). That is also what a hedwig subscriber's
consumed seq-id means, so an offset Spark has committed is exactly what the drain job
acknowledges to the hub. A micro-batch from offset `start` to offset `end` reads seq-ids
start[t]+1 .. end[t] of each topic t.
"""

from typing import NamedTuple

from hedwig.spark.options import EARLIEST, LATEST


class TopicBounds(NamedTuple):
    """What a hub holds of a topic: seq-ids first_seq..last_seq (empty: first > last)."""

    first_seq: int
    last_seq: int


class DataLoss(RuntimeError):
    """Seq-ids a query needs are gone: garbage collection removed them from the hub."""


def offset_before(position, bounds: TopicBounds) -> int:
    """The offset just before a starting position (EARLIEST, LATEST or a first seq-id)."""
    if position == EARLIEST:
        return bounds.first_seq - 1
    if position == LATEST:
        return bounds.last_seq
    return position - 1


def last_seq_of(topic: str, position, bounds: TopicBounds) -> int:
    """The last seq-id an ending position (LATEST or a seq-id) stands for."""
    if position == LATEST:
        return bounds.last_seq
    if position > bounds.last_seq:
        raise ValueError(
            f"topic {topic!r}: endingSeq {position} is beyond its last published seq-id {bounds.last_seq}"
        )
    return position


def skip_lost(topic: str, offset: int, bounds: TopicBounds, fail: bool, log=None) -> int:
    """`offset` if seq-id offset+1 is still held (or not yet written); otherwise raise
    DataLoss, or with `fail` false skip to just before the first seq-id still held."""
    if offset + 1 >= bounds.first_seq:
        return offset
    lost = f"seq-ids {offset + 1}..{bounds.first_seq - 1} of topic {topic!r}"
    if fail:
        raise DataLoss(
            f"{lost} were removed by the hub's garbage collection before they were read "
            "(every subscriber had consumed them, or retention expired them). Set the option "
            "failOnDataLoss to false to skip what is gone and read on from "
            f"seq-id {bounds.first_seq}."
        )
    if log is not None:
        log(f"skipping {lost}: removed by garbage collection (failOnDataLoss is false)")
    return bounds.first_seq - 1


def admit(start: dict, latest: dict, max_messages: int | None) -> dict:
    """The end offset of a micro-batch reading at most `max_messages` over all topics.

    Each topic gets a share proportional to its backlog (as Spark's Kafka source does),
    rounded down; what rounding leaves goes to topics in order, so the batch holds
    exactly `max_messages` when there are that many and the result never depends on
    anything but the arguments (a restarted query plans the same batches).
    """
    backlog = {t: max(0, latest[t] - start.get(t, 0)) for t in latest}
    total = sum(backlog.values())
    if max_messages is None or total <= max_messages:
        return {t: max(latest[t], start.get(t, 0)) for t in latest}
    shares = {t: backlog[t] * max_messages // total for t in backlog}
    left = max_messages - sum(shares.values())
    for t in backlog:
        if left == 0:
            break
        extra = min(left, backlog[t] - shares[t])
        shares[t] += extra
        left -= extra
    return {t: start.get(t, 0) + shares[t] for t in latest}


def messages_between(start: dict, end: dict) -> int:
    return sum(max(0, end[t] - start.get(t, 0)) for t in end)
