"""Bodies of the administration requests: create and delete a topic, list subscriptions,
move a subscription's consumed seq-id; and a region hub's GROUP_OFFSET.

They are rare and small, so they live apart from the hot path's layouts (requests.py);
every reply is JSON (requests.encode_json). Decoders check every field where it is read:
names by the topic and subscriber rules, flags against the known bits, a start as
SUBSCRIBE's start is checked (seq-ids from 1, times up to MAX_START us).
"""

import struct
from enum import IntEnum
from typing import NamedTuple

from hedwig.protocol.layouts import (
    RequestRefused,
    StartKind,
    expect_end,
    read_str8,
    read_subscriber,
    read_topic,
    str8,
    unpack_field,
)
from hedwig.protocol.partitions import MAX_PARTITIONS
from hedwig.protocol.requests import MAX_START, _start_fields, decode_topic_only, encode_topic_only
from hedwig.protocol.status import Status

CREATE_FLAG_COMPACTION = 0x01  # a compacted topic: the latest message of each key is kept
CREATE_FLAG_PARTITIONS = 0x02  # a partition count follows the flags (hedwig.protocol.partitions)
# The topic's default TTL (u64 ms, after the partition count if any): a message published
# without a ttl of its own and not delivered within it after its publish is not delivered.
CREATE_FLAG_TTL = 0x04
CREATE_FLAGS = CREATE_FLAG_COMPACTION | CREATE_FLAG_PARTITIONS | CREATE_FLAG_TTL
MAX_TOPIC_TTL_MS = 2**53  # (about 285,000 years: any TTL a person means)
DELETE_FLAG_FORCE = 0x01  # delete the topic's subscriptions with it
DELETE_FLAGS = DELETE_FLAG_FORCE
_FLAGS = struct.Struct("!B")
_PARTITIONS = struct.Struct("!H")
_TTL = struct.Struct("!Q")
_START = struct.Struct("!BQ")  # start kind, start value (as in SUBSCRIBE)
_GROUP_ACTION = struct.Struct("!BQ")  # GROUP_OFFSET's action, consumed seq-id (PLACE's)


class CreateTopic(NamedTuple):
    topic: str
    compaction: bool  # a compacted topic (keyed messages only; compacted by the hub)
    # Its partitions (hedwig.protocol.partitions); 0: not said (1 for a new topic, any
    # for one that exists).
    partitions: int = 0
    # Its default TTL in ms, for messages published without one (0: not said: none for a
    # new topic, any for one that exists).
    ttl_ms: int = 0


class DeleteTopic(NamedTuple):
    topic: str
    force: bool  # False: refused (TOPIC_BUSY) while the topic has subscriptions


class ResetSubscription(NamedTuple):
    topic: str
    subscriber_id: str
    start: object  # "earliest" | "latest" | ("seq", n) | ("time", time_us)


# -- CREATE_TOPIC -----------------------------------------------------------------------------


def encode_create_topic(topic: str, compaction: bool = False, partitions: int = 0, ttl_ms: int = 0) -> bytes:
    """The topic, then a flags byte only when a flag is set (and the partition count and
    the TTL after it when they are asked for): a plain creation is the body it always
    was (the topic alone), which every hub takes."""
    if ttl_ms and (type(ttl_ms) is not int or not 1 <= ttl_ms <= MAX_TOPIC_TTL_MS):
        raise ValueError(f"a topic's ttl is 1 ms to {MAX_TOPIC_TTL_MS} ms, not {ttl_ms!r}")
    flags = (
        (CREATE_FLAG_COMPACTION if compaction else 0)
        | (CREATE_FLAG_PARTITIONS if partitions else 0)
        | (CREATE_FLAG_TTL if ttl_ms else 0)
    )
    if not flags:
        return encode_topic_only(topic)
    body = str8(topic) + _FLAGS.pack(flags)
    if partitions:
        body += _PARTITIONS.pack(partitions)
    return body + _TTL.pack(ttl_ms) if ttl_ms else body


def topic_ttl_ms(ttl) -> int:
    """A topic's default TTL as CREATE_TOPIC carries it: `ttl` seconds (None: none, 0)
    as whole milliseconds, at least 1; ValueError for anything else."""
    if ttl is None:
        return 0
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl * 1000 <= MAX_TOPIC_TTL_MS:
        raise ValueError(f"a topic's ttl is a number of seconds > 0, not {ttl!r}")
    return max(1, round(ttl * 1000))


def decode_create_topic(body) -> CreateTopic:
    topic, offset = read_topic(body, 0)
    if offset == len(body):  # (the topic alone: no flags)
        return CreateTopic(topic, False)
    (flags,) = unpack_field(_FLAGS, body, offset, "CREATE_TOPIC")
    offset += _FLAGS.size
    if not flags or flags & ~CREATE_FLAGS:  # (a flags byte comes only with a flag in it)
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown CREATE_TOPIC flags {flags:#x}")
    partitions, offset = _optional_field(
        flags & CREATE_FLAG_PARTITIONS,
        _PARTITIONS,
        body,
        offset,
        MAX_PARTITIONS,
        "a topic has 1 to {} partitions",
    )
    ttl_ms, offset = _optional_field(
        flags & CREATE_FLAG_TTL, _TTL, body, offset, MAX_TOPIC_TTL_MS, "a topic's ttl is 1 ms to {} ms"
    )
    expect_end(body, offset, "CREATE_TOPIC")
    return CreateTopic(topic, bool(flags & CREATE_FLAG_COMPACTION), partitions, ttl_ms)


def _optional_field(present, layout, body, offset: int, most: int, says: str) -> tuple:
    """(the value of 1..`most` a flag says follows at `offset`, or 0 without it; the
    offset after it); MALFORMED_REQUEST with `says` (formatted with `most`) otherwise."""
    if not present:
        return 0, offset
    (value,) = unpack_field(layout, body, offset, "CREATE_TOPIC")
    if not 1 <= value <= most:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{says.format(most)}, not {value}")
    return value, offset + layout.size


# -- COMPACT ----------------------------------------------------------------------------------


def encode_compact(topic: str) -> bytes:
    return encode_topic_only(topic)


def decode_compact(body) -> str:
    return decode_topic_only(body, "COMPACT")


# -- DELETE_TOPIC -----------------------------------------------------------------------------


def encode_delete_topic(topic: str, force: bool = False) -> bytes:
    return str8(topic) + _FLAGS.pack(DELETE_FLAG_FORCE if force else 0)


def decode_delete_topic(body) -> DeleteTopic:
    topic, offset = read_topic(body, 0)
    (flags,) = unpack_field(_FLAGS, body, offset, "DELETE_TOPIC")
    expect_end(body, offset + _FLAGS.size, "DELETE_TOPIC")
    if flags & ~DELETE_FLAGS:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown DELETE_TOPIC flags {flags:#x}")
    return DeleteTopic(topic, bool(flags & DELETE_FLAG_FORCE))


# -- LIST_SUBSCRIPTIONS -----------------------------------------------------------------------


def encode_list_subscriptions(topic: str | None = None) -> bytes:
    """An empty topic name asks for every topic's subscriptions."""
    return str8(topic or "")


def decode_list_subscriptions(body) -> str | None:
    raw, offset = read_str8(body, 0, "topic")
    if raw:
        topic, offset = read_topic(body, 0)
    else:
        topic = None
    expect_end(body, offset, "LIST_SUBSCRIPTIONS")
    return topic


# -- RESET_SUBSCRIPTION -----------------------------------------------------------------------


def encode_reset_subscription(topic: str, subscriber_id: str, start) -> bytes:
    if start is None:
        raise ValueError("a reset names where the subscription goes: earliest, latest, a seq-id or a time")
    kind, value = _start_fields(start)
    return str8(topic) + str8(subscriber_id) + _START.pack(kind, value)


def decode_reset_subscription(body) -> ResetSubscription:
    topic, offset = read_topic(body, 0)
    subscriber_id, offset = read_subscriber(body, offset)
    kind, value = unpack_field(_START, body, offset, "RESET_SUBSCRIPTION")
    expect_end(body, offset + _START.size, "RESET_SUBSCRIPTION")
    if kind == StartKind.EARLIEST:
        start = "earliest"
    elif kind == StartKind.LATEST:
        start = "latest"
    elif kind == StartKind.SEQ:
        if not 1 <= value <= MAX_START:
            raise RequestRefused(Status.MALFORMED_REQUEST, f"seq-id {value} is not in 1..{MAX_START}")
        start = ("seq", value)
    elif kind == StartKind.TIME:
        if value > MAX_START:
            raise RequestRefused(Status.MALFORMED_REQUEST, f"time {value} us is past {MAX_START}")
        start = ("time", value)
    else:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"a reset needs a start, not kind {kind}")
    return ResetSubscription(topic, subscriber_id, start)


# -- GROUP_OFFSET -----------------------------------------------------------------------------


class GroupAction(IntEnum):
    """What a GROUP_OFFSET does with the group's subscription."""

    FETCH = 0  # answer its consumed seq-id (null: none)
    PLACE = 1  # set its consumed seq-id, creating it when missing
    DELETE = 2  # delete it


class GroupOffset(NamedTuple):
    """A Kafka group's subscription on a topic, read, placed at `seq` (its consumed
    seq-id) or deleted, on behalf of the user `on_behalf_of` ("": none, [auth] off)."""

    topic: str
    subscriber_id: str
    on_behalf_of: str
    action: GroupAction
    seq: int = 0


def encode_group_offset(
    topic: str, subscriber_id: str, on_behalf_of: str | None, action, seq: int = 0
) -> bytes:
    if not 0 <= seq <= MAX_START:
        raise ValueError(f"a consumed seq-id is in 0..{MAX_START}, not {seq}")
    return str8(topic) + str8(subscriber_id) + str8(on_behalf_of or "") + _GROUP_ACTION.pack(action, seq)


def decode_group_offset(body) -> GroupOffset:
    topic, offset = read_topic(body, 0)
    subscriber_id, offset = read_subscriber(body, offset)
    raw, offset = read_str8(body, offset, "user it acts on behalf of")
    try:
        on_behalf_of = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestRefused(Status.MALFORMED_REQUEST, "the user it acts on behalf of is not UTF-8") from None
    action, seq = unpack_field(_GROUP_ACTION, body, offset, "GROUP_OFFSET")
    expect_end(body, offset + _GROUP_ACTION.size, "GROUP_OFFSET")
    if action not in GroupAction._value2member_map_:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"GROUP_OFFSET action {action} is not 0, 1 or 2")
    if seq > MAX_START:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"seq-id {seq} is past {MAX_START}")
    return GroupOffset(topic, subscriber_id, on_behalf_of, GroupAction(action), seq)
