"""Request and response bodies: round trips, and the status each bad body earns."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import FrameDecoder, Op, Status, encode_message_set
from hedwig.protocol.ops import HUB_FEATURES
from hedwig.protocol.requests import (
    MAX_START,
    Hello,
    HelloReply,
    Published,
    ReadRange,
    RequestRefused,
    Subscribe,
    Subscribed,
    Unsubscribe,
    decode_close_subscription,
    decode_consume,
    decode_describe_topic,
    decode_empty,
    decode_hello,
    decode_publish,
    decode_read_range,
    decode_subscribe,
    decode_unsubscribe,
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_hello,
    encode_hello_reply,
    encode_json,
    encode_publish,
    encode_published,
    encode_read_range,
    encode_subscribe,
    encode_subscribed,
    encode_unsubscribe,
    publish_prefix,
    read_range_reply_parts,
)
from hedwig.protocol.responses import (
    decode_response,
    encode_response,
    published_response,
    response_frame,
    response_frame_parts,
)

names = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=255)


def test_hello_round_trip():
    assert decode_hello(encode_hello("cli", version=7)) == Hello(7, "cli")
    reply = encode_hello_reply("eu", "10.0.0.1:4080", 16 << 20, 1 << 20)
    response = decode_response(encode_response(Op.HELLO, payload=reply))
    assert response.value == HelloReply(1, 16 << 20, 1 << 20, "eu", "10.0.0.1:4080", HUB_FEATURES)


@given(names, st.binary(min_size=1, max_size=200))
def test_publish_round_trip_keeps_the_message_set_bytes(topic, message_set):
    body = encode_publish(topic, message_set)
    assert body == publish_prefix(topic) + message_set
    assert decode_publish(body) == (topic, message_set)


starts = st.one_of(
    st.none(),
    st.just("earliest"),
    st.just("latest"),
    st.tuples(st.just("seq"), st.integers(1, 2**64 - 1)),
    st.tuples(st.just("time"), st.integers(0, MAX_START)),  # (a later one is refused)
)


@given(
    names,
    names.filter(lambda n: True),
    st.sampled_from(["create", "attach", "create_or_attach"]),
    starts,
    st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    st.booleans(),
    st.booleans(),
)
def test_subscribe_round_trip(topic, subscriber, mode, start, window, force, deliver):
    body = encode_subscribe(topic, subscriber, mode, start, window, force, deliver)
    assert decode_subscribe(body) == Subscribe(topic, subscriber, mode, start, window, force, deliver)


def test_the_no_delivery_flag_is_bit_2_and_absent_means_deliver():
    """A SUBSCRIBE as clients sent it before the flag existed still asks for deliveries."""
    before = b"\x01t\x01s\x03\x00" + bytes(8) + b"\x01" + bytes(4)  # create_or_attach, force_attach
    assert decode_subscribe(before) == Subscribe("t", "s", "create_or_attach", None, None, True, True)
    body = encode_subscribe("t", "s", deliver=False)
    assert body == b"\x01t\x01s\x03\x00" + bytes(8) + b"\x04" + bytes(4)
    assert decode_subscribe(body).deliver is False
    # (bits 3-5 are the options block, the filter block and its replace flag since, bit 6
    # asks for SUBSET_DELIVERY frames)
    with pytest.raises(RequestRefused, match="unknown subscribe flags 0x84"):
        decode_subscribe(b"\x01t\x01s\x03\x00" + bytes(8) + b"\x84" + bytes(4))


def test_small_bodies_round_trip():
    assert decode_consume(encode_consume(3, 2**40)) == (3, 2**40)
    assert decode_close_subscription(encode_close_subscription(9)) == 9
    assert decode_unsubscribe(encode_unsubscribe("t", "s")) == Unsubscribe("t", "s")
    assert decode_describe_topic(encode_describe_topic("t.x")) == "t.x"
    assert decode_read_range(encode_read_range("t", 5, 9, 100)) == ReadRange("t", 5, 9, 100)
    decode_empty(b"", "STATS")


def test_responses_decode_by_op():
    published = decode_response(encode_response(Op.PUBLISH, payload=encode_published(4, 6)))
    assert published.value == Published(4, 6)
    subscribed = decode_response(encode_response(Op.SUBSCRIBE, payload=encode_subscribed(2, 10, 11)))
    assert subscribed.value == Subscribed(2, 10, 11)
    listed = decode_response(encode_response(Op.LIST_TOPICS, payload=encode_json(["a", "b"])))
    assert listed.value == ["a", "b"]
    failed = decode_response(encode_response(Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "h:4081"))
    assert (failed.status, failed.message, failed.value) == (Status.NOT_RESPONSIBLE_FOR_TOPIC, "h:4081", None)


def test_response_frames_carry_the_request_id():
    frame = response_frame(77, Op.PUBLISH, payload=encode_published(1, 1))
    [(op, request_id, body)] = FrameDecoder().feed(frame)
    assert (op, request_id) == (Op.RESPONSE, 77)
    assert decode_response(body).value == Published(1, 1)


def test_read_range_reply_passes_entry_bytes_through():
    entries = [(0, 2, b"entry-one"), (1, 3, b"entry-two!")]
    parts = response_frame_parts(5, Op.READ_RANGE, read_range_reply_parts(1, 20, entries))
    assert parts[3] is entries[0][2] and parts[5] is entries[1][2]  # the stored objects, not copies
    [(_op, request_id, body)] = FrameDecoder().feed(b"".join(parts))
    reply = decode_response(body).value
    assert request_id == 5 and (reply.first_seq, reply.last_seq) == (1, 20)
    assert [(s, e, bytes(d)) for s, e, d in reply.entries] == entries


@pytest.mark.parametrize(
    ("decoder", "body", "status"),
    [
        (decode_publish, b"", Status.MALFORMED_REQUEST),
        (decode_publish, b"\x05ab", Status.MALFORMED_REQUEST),
        (decode_publish, b"\x01t", Status.MALFORMED_REQUEST),
        (decode_publish, encode_publish("a b", b"x"), Status.INVALID_TOPIC),
        (decode_publish, encode_publish("", b"x"), Status.INVALID_TOPIC),
        (decode_subscribe, encode_subscribe("t", "s")[:-1], Status.MALFORMED_REQUEST),
        (decode_subscribe, encode_subscribe("t", "s") + b"x", Status.MALFORMED_REQUEST),
        (decode_subscribe, encode_subscribe("t", "s/x"), Status.INVALID_SUBSCRIBER_ID),
        (decode_subscribe, b"\x01t\x01s\x09\x00" + bytes(13), Status.MALFORMED_REQUEST),
        (decode_subscribe, b"\x01t\x01s\x01\x09" + bytes(13), Status.MALFORMED_REQUEST),
        (
            decode_subscribe,
            encode_subscribe("t", "s", start=("seq", 1))[:-14] + b"\x03" + bytes(13),
            Status.MALFORMED_REQUEST,
        ),
        (decode_consume, b"\x00\x00", Status.MALFORMED_REQUEST),
        (decode_read_range, encode_read_range("t", 0), Status.MALFORMED_REQUEST),
        (decode_read_range, encode_read_range("t", 5, 4), Status.MALFORMED_REQUEST),
        (decode_hello, b"\x00", Status.MALFORMED_REQUEST),
    ],
)
def test_bad_bodies_get_their_status(decoder, body, status):
    with pytest.raises(RequestRefused) as caught:
        decoder(body)
    assert caught.value.status is status


def test_a_real_message_set_survives_publish_decoding():
    message_set = encode_message_set([b"a", b"bc"], [None, {"k": b"v"}])
    assert decode_publish(encode_publish("t", message_set)).message_set == message_set


def test_published_response_is_the_generic_frame():
    assert published_response(9, 3, 7) == response_frame(9, Op.PUBLISH, payload=encode_published(3, 7))
