"""SUBSCRIBE's filter block on the wire: a request without a filter is the body of old (an
older client's request means what it did), a filter and the replace flag round-trip with
and without the options block, a malformed filter block is refused, and a position sends
its filter again when it resumes but never its replace flag."""

import struct

import pytest

from hedwig.protocol import Status
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.requests import (
    Subscribe,
    Subscribed,
    decode_subscribe,
    encode_subscribe,
    encode_subscribe_request,
)
from hedwig.protocol.shared_position import SharedPosition
from hedwig.protocol.work_requests import SubscribeOptions

OLD_TAIL = struct.pack("!BBQBI", 3, 0, 0, 0, 0)


def test_a_subscribe_without_a_filter_is_the_body_of_old():
    assert encode_subscribe("t", "s", filter=None, replace_filter=False) == b"\x01t\x01s" + OLD_TAIL
    assert decode_subscribe(b"\x01t\x01s" + OLD_TAIL).filter is None


def test_the_filter_block_follows_the_tail_and_its_flag_is_bit_4():
    body = encode_subscribe("t", "s", filter="n > 1")
    assert body == b"\x01t\x01s" + struct.pack("!BBQBI", 3, 0, 0, 0x10, 0) + b"\x00\x05n > 1"


@pytest.mark.parametrize(
    "request_",
    [
        Subscribe("t", "s", filter="color = 'red'"),
        Subscribe("t", "s", filter="ключ = 'значение'", replace_filter=True),
        Subscribe("t", "s", replace_filter=True),  # (no filter: the subscription's goes)
        Subscribe("t", "s", kind="shared", pull=True, max_deliveries=3, filter="n BETWEEN 1 AND 2"),
        Subscribe("t", "s", message_bound=10, window=4, filter="key LIKE 'a%'"),
    ],
)
def test_filters_round_trip(request_):
    assert decode_subscribe(encode_subscribe_request(request_)) == request_


def body(flags, tail=b""):
    return b"\x01t\x01s" + struct.pack("!BBQBI", 3, 0, 0, flags, 0) + tail


@pytest.mark.parametrize(
    "raw, match",
    [
        (body(0x10), "filter"),  # the flag without its block
        (body(0x10, b"\x00\x09n > 1"), "filter runs past"),
        (body(0x10, b"\x00\x02\xff\xfe"), "not UTF-8"),
        (body(0x14, b"\x00\x05n > 1"), "subscriptions that deliver"),
        (body(0x10, b"\x00\x05n > 1x"), "unexpected bytes"),
        (body(0x80), "unknown subscribe flags"),
    ],
)
def test_a_malformed_filter_block_is_refused(raw, match):
    with pytest.raises(RequestRefused, match=match) as refused:
        decode_subscribe(raw)
    assert refused.value.status == Status.MALFORMED_REQUEST


def test_a_filter_on_an_acknowledgement_only_subscribe_is_not_sent():
    with pytest.raises(ValueError, match="deliver"):
        encode_subscribe("t", "s", deliver=False, filter="n > 1")


def test_a_position_resumes_with_its_filter_but_never_replaces_it_again():
    options = SubscribeOptions(filter="n > 1", replace_filter=True)
    exclusive = SubscriptionPosition("t", "s", "create_or_attach", None, 10, False, options=options)
    assert (exclusive.subscribe_request().filter, exclusive.subscribe_request().replace_filter) == (
        "n > 1",
        True,
    )
    exclusive.on_subscribed(Subscribed(1, 0, 1))
    again = exclusive.subscribe_request()
    assert (again.filter, again.replace_filter) == ("n > 1", False)
    shared = SharedPosition("t", "s", "create_or_attach", None, 10, False, options._replace(kind="shared"))
    shared.on_subscribed(Subscribed(1, 0, 1))
    assert (shared.subscribe_request().filter, shared.subscribe_request().replace_filter) == ("n > 1", False)
