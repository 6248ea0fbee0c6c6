"""The administration requests' bodies (hedwig.protocol.admin_requests): each round-trips,
and every field a hostile peer controls is checked where the hub decodes it."""

import struct

import pytest

from hedwig.protocol.admin_requests import (
    CreateTopic,
    DeleteTopic,
    GroupAction,
    GroupOffset,
    ResetSubscription,
    decode_compact,
    decode_create_topic,
    decode_delete_topic,
    decode_group_offset,
    decode_list_subscriptions,
    decode_reset_subscription,
    encode_compact,
    encode_create_topic,
    encode_delete_topic,
    encode_group_offset,
    encode_list_subscriptions,
    encode_reset_subscription,
)
from hedwig.protocol.layouts import RequestRefused, StartKind, str8
from hedwig.protocol.requests import MAX_START
from hedwig.protocol.status import Status


def refused(decode, body) -> Status:
    with pytest.raises(RequestRefused) as caught:
        decode(body)
    return caught.value.status


def test_each_body_round_trips():
    assert decode_create_topic(encode_create_topic("orders")) == CreateTopic("orders", False)
    assert decode_create_topic(encode_create_topic("orders", compaction=True)) == CreateTopic("orders", True)
    assert encode_create_topic("orders") == str8("orders")  # (what every hub took before the flag)
    assert decode_compact(encode_compact("orders")) == "orders"
    assert decode_delete_topic(encode_delete_topic("orders")) == DeleteTopic("orders", False)
    assert decode_delete_topic(encode_delete_topic("orders", force=True)) == DeleteTopic("orders", True)
    assert decode_list_subscriptions(encode_list_subscriptions()) is None
    assert decode_list_subscriptions(encode_list_subscriptions("orders")) == "orders"
    for start in ("earliest", "latest", ("seq", 1), ("seq", MAX_START), ("time", 0), ("time", MAX_START)):
        body = encode_reset_subscription("orders", "billing", start)
        assert decode_reset_subscription(body) == ResetSubscription("orders", "billing", start)


def test_names_follow_the_rules():
    assert refused(decode_create_topic, str8("bad topic")) is Status.INVALID_TOPIC
    assert refused(decode_delete_topic, str8("") + b"\0") is Status.INVALID_TOPIC
    assert refused(decode_list_subscriptions, str8("a/b")) is Status.INVALID_TOPIC
    body = str8("t") + str8("no way") + struct.pack("!BQ", StartKind.EARLIEST, 0)
    assert refused(decode_reset_subscription, body) is Status.INVALID_SUBSCRIBER_ID


@pytest.mark.parametrize(
    "decode, body",
    [
        (decode_create_topic, b""),
        (decode_create_topic, str8("t") + b"x"),  # trailing bytes
        (decode_create_topic, b"\x05ab"),  # a name running past the body
        (decode_create_topic, str8("t") + b"\x00"),  # a flags byte without a flag
        (decode_create_topic, str8("t") + b"\x02"),  # an unknown flag
        (decode_create_topic, str8("t") + b"\x01\x00"),
        (decode_compact, str8("t") + b"\x01"),
        (decode_delete_topic, str8("t")),  # no flags
        (decode_delete_topic, str8("t") + b"\x02"),  # an unknown flag
        (decode_delete_topic, str8("t") + b"\x01\x00"),
        (decode_list_subscriptions, b""),
        (decode_list_subscriptions, str8("") + b"\x00"),
        (decode_reset_subscription, str8("t") + str8("s")),  # no start
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", StartKind.DEFAULT, 0)),
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", 9, 0)),
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", StartKind.SEQ, 0)),
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", StartKind.SEQ, MAX_START + 1)),
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", StartKind.TIME, 2**64 - 1)),
        (decode_reset_subscription, str8("t") + str8("s") + struct.pack("!BQ", StartKind.LATEST, 0) + b"x"),
    ],
)
def test_malformed_bodies_are_refused(decode, body):
    assert refused(decode, body) is Status.MALFORMED_REQUEST


def test_a_reset_names_where_to_go():
    with pytest.raises(ValueError, match="names where"):
        encode_reset_subscription("t", "s", None)


def test_a_partition_count_travels_after_the_flags():
    body = encode_create_topic("orders", partitions=6)
    assert decode_create_topic(body) == CreateTopic("orders", False, 6)
    assert decode_create_topic(encode_create_topic("orders", True, 3)) == CreateTopic("orders", True, 3)
    assert decode_create_topic(encode_create_topic("orders")).partitions == 0  # (not said)
    assert (
        refused(decode_create_topic, str8("t") + b"\x02" + struct.pack("!H", 0)) is Status.MALFORMED_REQUEST
    )
    assert (
        refused(decode_create_topic, str8("t") + b"\x02" + struct.pack("!H", 1025))
        is Status.MALFORMED_REQUEST
    )
    assert refused(decode_create_topic, str8("t") + b"\x02\x00") is Status.MALFORMED_REQUEST  # (half a count)


def test_a_group_offset_round_trips_and_its_hostile_fields_are_refused():
    body = encode_group_offset("t", "kafka.g", "bob", GroupAction.PLACE, 7)
    assert decode_group_offset(body) == GroupOffset("t", "kafka.g", "bob", GroupAction.PLACE, 7)
    assert (
        decode_group_offset(encode_group_offset("t", "kafka.g", None, GroupAction.FETCH)).on_behalf_of == ""
    )
    head = str8("t") + str8("kafka.g") + str8("bob")
    for tail in (
        struct.pack("!BQ", 3, 0),  # no such action
        struct.pack("!BQ", GroupAction.PLACE, MAX_START + 1),
        struct.pack("!B", GroupAction.PLACE),  # cut short
        struct.pack("!BQ", GroupAction.PLACE, 1) + b"x",
    ):
        assert refused(decode_group_offset, head + tail) is Status.MALFORMED_REQUEST
    not_utf8 = str8("t") + str8("kafka.g") + str8(b"\xff") + struct.pack("!BQ", 0, 0)
    assert refused(decode_group_offset, not_utf8) is Status.MALFORMED_REQUEST
