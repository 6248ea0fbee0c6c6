"""The connection protocol over a StringTransport: handshake, publish, ordering, and
every bad input of the protocol: each gets its status, is logged once, stores nothing,
and leaves the other connections serving."""

import pytest

from hedwig.config.settings import Config
from hedwig.protocol import (
    PROTOCOL_VERSION,
    FrameDecoder,
    Op,
    Status,
    decode_entry,
    encode_frame,
    encode_message_set,
)
from hedwig.protocol.ops import HUB_FEATURES
from hedwig.protocol.requests import (
    HelloReply,
    Published,
    encode_consume,
    encode_describe_topic,
    encode_hello,
    encode_publish,
    encode_read_range,
    encode_subscribe,
)
from tests.hub.harness import HubHarness, LogCapture


@pytest.fixture
def harness(tmp_path):
    return HubHarness(tmp_path)


def small_limits():
    config = Config()
    config.hub.max_frame_bytes = 4096
    config.hub.max_message_bytes = 100
    return config


# -- handshake ----------------------------------------------------------------------------


def test_hello_states_version_region_and_limits(harness):
    peer = harness.connect(greet=False)
    peer.send(Op.HELLO, encode_hello("app"), request_id=7)
    [(request_id, response)] = peer.responses()
    assert request_id == 7 and response.op == Op.HELLO and response.status is Status.SUCCESS
    assert response.value == HelloReply(
        PROTOCOL_VERSION, 16 << 20, 1 << 20, "standalone", "127.0.0.1:4080", HUB_FEATURES
    )
    assert peer.connection.client_name == "app" and not peer.closing


def test_wrong_version_is_refused_and_closed(harness):
    peer = harness.connect(greet=False)
    with LogCapture() as logs:
        peer.send(Op.HELLO, encode_hello("old", version=PROTOCOL_VERSION + 1), request_id=1)
        peer.publish("t", [b"after"])  # ignored: the connection is closing
    [(request_id, response)] = peer.responses()
    assert (request_id, response.status) == (1, Status.UNSUPPORTED_VERSION)
    assert str(PROTOCOL_VERSION) in response.message
    assert peer.closing
    assert harness.stored_entries() == 0
    assert len(logs.about(peer)) == 1


def test_a_request_before_hello_is_refused_and_closed(harness):
    peer = harness.connect(greet=False)
    peer.publish("t", [b"x"])
    [(_, response)] = peer.responses()
    assert response.status is Status.MALFORMED_REQUEST and "HELLO" in response.message
    assert peer.closing and harness.stored_entries() == 0


def test_a_second_hello_is_refused_and_the_connection_goes_on(harness):
    peer = harness.connect()
    peer.send(Op.HELLO, encode_hello("again"))
    peer.publish("t", [b"x"])
    [(_, again), (_, published)] = peer.responses()
    assert again.status is Status.MALFORMED_REQUEST
    assert published.value == Published(1, 1) and not peer.closing


# -- publish ------------------------------------------------------------------------------


def test_publish_assigns_dense_seq_ids_and_stores_the_publishers_bytes(harness):
    peer = harness.connect()
    message_set = encode_message_set([b"a", b"bb", b"ccc"], [None, {"k": b"v"}, None])
    peer.send(Op.PUBLISH, encode_publish("orders", message_set))
    peer.publish("orders", [b"d"])
    [(_, first), (_, second)] = peer.responses()
    assert first.value == Published(1, 3) and second.value == Published(4, 4)
    log = harness.logs.get("orders")
    [entry] = log.read(1, 1, 1 << 20).result
    assert entry.data.endswith(message_set)  # stored as sent, behind the entry header
    messages = decode_entry("orders", entry.data)
    assert [(m.seq, m.payload, m.properties) for m in messages] == [
        (1, b"a", {}),
        (2, b"bb", {"k": b"v"}),
        (3, b"ccc", {}),
    ]
    assert messages[0].publish_time_us == int(harness.clock.seconds() * 1e6)


def test_replies_leave_in_request_order_across_topics_and_ops(harness):
    peer = harness.connect()
    peer.publish("slow", [b"1"])  # opens the topic
    peer.responses()
    harness.ledgers.hold_acks()
    first = peer.publish("slow", [b"2"])
    second = peer.publish("other", [b"x"])
    third = peer.send(Op.LIST_TOPICS)  # answerable at once, yet waits its turn
    assert peer.responses() == []
    harness.ledgers.release_acks()
    responses = peer.responses()
    assert [request_id for request_id, _ in responses] == [first, second, third]
    assert responses[0][1].value == Published(2, 2)
    assert responses[1][1].value == Published(1, 1)
    assert responses[2][1].value == ["other", "slow"]


def test_publishes_in_flight_on_two_connections_keep_each_topics_order(harness):
    a, b = harness.connect(), harness.connect()
    harness.ledgers.hold_acks()
    for i in range(3):
        a.publish("t", [b"a%d" % i])
        b.publish("t", [b"b%d" % i])
    harness.ledgers.release_acks()
    seqs_a = [r.value.first_seq for _, r in a.responses()]
    seqs_b = [r.value.first_seq for _, r in b.responses()]
    assert seqs_a == [1, 3, 5] and seqs_b == [2, 4, 6]


# -- bad input: framing errors close the connection ---------------------------------------


def test_malformed_frame_is_answered_then_closed_and_others_go_on(harness):
    peer, other = harness.connect(), harness.connect()
    with LogCapture() as logs:
        peer.send_raw(b"\x00\x00\x00\x02ab")  # a length shorter than a frame header
        peer.publish("t", [b"after"])
        peer.disconnect()  # the hub closed it
    [(request_id, response)] = peer.responses()
    assert (request_id, response.op, response.status) == (0, 0, Status.MALFORMED_REQUEST)
    assert peer.closing and harness.stored_entries() == 0
    assert len(logs.about(peer)) == 1
    other.publish("t", [b"fine"])
    [(_, response)] = other.responses()
    assert response.value == Published(1, 1)
    assert harness.hub.stats.protocol_errors == 1


def test_oversized_frame_is_refused_before_its_body_arrives(tmp_path):
    harness = HubHarness(tmp_path, small_limits())
    peer = harness.connect()
    frame = encode_frame(Op.PUBLISH, 9, encode_publish("t", encode_message_set([b"x" * 5000])))
    peer.send_raw(frame[:9])  # only the header: refused already
    [(_, response)] = peer.responses()
    assert response.status is Status.FRAME_TOO_LARGE and "4096" in response.message
    assert peer.closing and harness.stored_entries() == 0


def test_replies_already_owed_go_out_before_the_framing_error(harness):
    peer = harness.connect()
    harness.ledgers.hold_acks()
    owed = peer.publish("t", [b"stored"])
    peer.send_raw(b"\x00\x00\x00\x00")
    assert peer.responses() == [] and not peer.closing
    harness.ledgers.release_acks()
    [(first, published), (_, error)] = peer.responses()
    assert (first, published.value) == (owed, Published(1, 1))
    assert error.status is Status.MALFORMED_REQUEST and peer.closing


def test_a_whole_frame_before_a_bad_one_in_the_same_chunk_is_still_answered(harness):
    peer = harness.connect()
    good = encode_frame(Op.PUBLISH, 41, encode_publish("t", encode_message_set([b"kept"])))
    peer.send_raw(good + b"\x00\x00\x00\x01")
    [(first, published), (_, error)] = peer.responses()
    assert (first, published.value) == (41, Published(1, 1))
    assert error.status is Status.MALFORMED_REQUEST and peer.closing
    assert harness.stored_entries() == 1


# -- bad input: per-request errors, the connection goes on ---------------------------------


def test_unknown_operation_gets_its_status_and_the_connection_goes_on(harness):
    peer = harness.connect()
    with LogCapture() as logs:
        unknown = peer.send(99, b"whatever")
        hub_only = peer.send(Op.DELIVERY, b"")
    peer.publish("t", [b"x"])
    responses = peer.responses()
    assert [(r.op, r.status) for _, r in responses[:2]] == [
        (99, Status.UNKNOWN_OPERATION),
        (Op.DELIVERY, Status.UNKNOWN_OPERATION),
    ]
    assert [request_id for request_id, _ in responses[:2]] == [unknown, hub_only]
    assert responses[2][1].value == Published(1, 1) and not peer.closing
    # One line per peer per interval (hub/peerlog.py); the rest counted when it ends.
    assert len(logs.about(peer)) == 1
    with LogCapture() as later:
        harness.clock.advance(harness.config.hub.client_error_log_interval_s)
    assert [(e["peer"], e["count"]) for e in later.events] == [("127.0.0.1", 1)]


def test_oversized_message_is_refused_and_nothing_is_stored(tmp_path):
    harness = HubHarness(tmp_path, small_limits())
    peer = harness.connect()
    with LogCapture() as logs:
        peer.publish("t", [b"ok", b"x" * 101])
    peer.publish("t", [b"x" * 100])
    [(_, refused), (_, accepted)] = peer.responses()
    assert refused.status is Status.MESSAGE_TOO_LARGE and "100" in refused.message
    assert accepted.value == Published(1, 1)  # the refused set used no seq-ids
    assert harness.stored_entries() == 1 and len(logs.about(peer)) == 1


def test_properties_count_toward_the_message_limit(tmp_path):
    harness = HubHarness(tmp_path, small_limits())
    peer = harness.connect()
    peer.publish("t", [b"x" * 60], [{"k": b"v" * 60}])
    [(_, response)] = peer.responses()
    assert response.status is Status.MESSAGE_TOO_LARGE and harness.stored_entries() == 0


@pytest.mark.parametrize(
    "message_set",
    [
        b"",  # no message set at all
        b"\x01\x00\x00\x00\x00\x00",  # zero messages
        b"\x07\x00\x00\x00\x00\x01\x00\x00\x00\x01x",  # unknown version
        b"\x01\x00\x00\x00\x00\x02\x00\x00\x00\x01",  # truncated length array
        encode_message_set([b"abc"])[:-1],  # lengths add up to more than it holds
        encode_message_set([b"abc"]) + b"!",  # and to less
    ],
)
def test_malformed_message_sets_are_refused(harness, message_set):
    peer = harness.connect()
    peer.send(Op.PUBLISH, encode_publish("t", b"") + message_set)
    [(_, response)] = peer.responses()
    assert response.status is Status.MALFORMED_REQUEST and not peer.closing
    assert harness.stored_entries() == 0


@pytest.mark.parametrize(
    "topic_str8",
    [
        b"\x00",  # empty
        b"\x09has space",
        b"\x08slash/ed",
        b"\x05\xc3\xbcn\xc3\xaf",  # utf-8, outside [A-Za-z0-9._-]
        b"\x03a\x00b",
    ],
)
def test_invalid_topic_is_refused_and_creates_nothing(harness, topic_str8):
    peer = harness.connect()
    with LogCapture() as logs:
        peer.send(Op.PUBLISH, topic_str8 + encode_message_set([b"m"]))
        peer.send(Op.SUBSCRIBE, topic_str8 + encode_subscribe("t", "s")[2:])
        peer.send(Op.READ_RANGE, topic_str8 + encode_read_range("t", 1)[2:])
    statuses = [r.status for _, r in peer.responses()]
    assert statuses == [Status.INVALID_TOPIC] * 3
    assert harness.stored_entries() == 0 and harness.metadata.list_topics().result == []
    assert len(logs.about(peer)) == 1 and not peer.closing  # (once per peer per interval)


def test_reserved_subscriber_ids_are_refused_from_clients(harness):
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", "__eu"))
    [(_, response)] = peer.responses()
    assert response.status is Status.INVALID_SUBSCRIBER_ID and "reserved" in response.message


def test_consume_for_an_unknown_subscription(harness):
    peer = harness.connect()
    with LogCapture() as logs:
        peer.send(Op.CONSUME, encode_consume(42, 10), request_id=5)
    [(request_id, response)] = peer.responses()
    assert (request_id, response.op, response.status) == (5, Op.CONSUME, Status.CLIENT_NOT_SUBSCRIBED)
    assert "42" in response.message and len(logs.about(peer)) == 1 and not peer.closing


def test_truncated_request_bodies_are_malformed_not_fatal(harness):
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", "s")[:-3])
    peer.send(Op.CONSUME, b"\x00")
    peer.send(Op.READ_RANGE, encode_read_range("t", 1)[:-1])
    peer.send(Op.STATS, b"unexpected")
    statuses = [r.status for _, r in peer.responses()]
    assert statuses == [Status.MALFORMED_REQUEST] * 4 and not peer.closing


def test_client_disconnecting_mid_frame_stores_nothing(harness):
    peer, other = harness.connect(), harness.connect()
    frame = encode_frame(Op.PUBLISH, 3, encode_publish("t", encode_message_set([b"half"])))
    with LogCapture() as logs:
        peer.send_raw(frame[:-2])
        peer.disconnect()
    assert harness.stored_entries() == 0
    assert len(logs.about(peer)) == 1 and "mid-frame" in logs.about(peer)[0]["log_format"]
    other.publish("t", [b"x"])
    [(_, response)] = other.responses()
    assert response.value == Published(1, 1)


# -- reads --------------------------------------------------------------------------------


def test_read_range_returns_stored_entries_sliced_to_the_range(harness):
    peer = harness.connect()
    peer.publish("t", [b"1", b"2", b"3"])
    peer.publish("t", [b"4", b"5"])
    peer.publish("t", [b"6"])
    peer.responses()
    stored = [e.data for e in harness.logs.get("t").read(1, 10, 1 << 20).result]
    peer.send(Op.READ_RANGE, encode_read_range("t", 2, 4))
    [(_, response)] = peer.responses()
    reply = response.value
    assert (reply.first_seq, reply.last_seq) == (1, 6)
    assert [(s, e, bytes(d)) for s, e, d in reply.entries] == [(1, 3, stored[0]), (0, 1, stored[1])]


def test_read_range_edges(harness):
    peer = harness.connect()
    peer.send(Op.READ_RANGE, encode_read_range("never", 1))
    peer.publish("t", [b"1"])
    peer.send(Op.READ_RANGE, encode_read_range("t", 2))  # nothing yet
    peer.send(Op.READ_RANGE, encode_read_range("t", 1, 0, 1))  # at least one entry
    [(_, missing), _, (_, empty), (_, one)] = peer.responses()
    assert missing.status is Status.NO_SUCH_TOPIC
    assert empty.value.entries == [] and empty.value.last_seq == 1
    assert [(s, e) for s, e, _ in one.value.entries] == [(0, 1)]
    assert harness.metadata.list_topics().result == ["t"]  # reads create no topic


def test_describe_and_stats(harness):
    peer = harness.connect()
    peer.publish("t", [b"a", b"b"])
    peer.send(Op.DESCRIBE_TOPIC, encode_describe_topic("t"))
    peer.send(Op.DESCRIBE_TOPIC, encode_describe_topic("nope"))
    peer.send(Op.STATS)
    [_, (_, described), (_, missing), (_, stats)] = peer.responses()
    assert described.value["last_seq"] == 2 and described.value["owner"] == "127.0.0.1:4080"
    assert described.value["subscribers"] == []
    assert missing.status is Status.NO_SUCH_TOPIC
    ops = stats.value["ops"]
    assert ops["publish"]["ok"] == 1 and ops["describe_topic"] == {
        **ops["describe_topic"],
        "ok": 1,
        "failed": 1,
    }
    [entry] = harness.logs.get("t").read(1, 1, 1 << 20).result
    assert stats.value["published"] == {"messages": 2, "bytes": len(entry.data)}
    assert stats.value["connections"]["open"] == 1


def test_frames_split_anywhere_are_reassembled(harness):
    peer = harness.connect()
    stream = b"".join(
        encode_frame(Op.PUBLISH, i, encode_publish("t", encode_message_set([b"%d" % i]))) for i in range(1, 6)
    )
    for i in range(0, len(stream), 7):
        peer.send_raw(stream[i : i + 7])
    assert [r.value.first_seq for _, r in peer.responses()] == [1, 2, 3, 4, 5]


def test_decoder_limit_matches_the_setting(tmp_path):
    harness = HubHarness(tmp_path, small_limits())
    peer = harness.connect()
    assert isinstance(peer.connection._decoder, FrameDecoder)
    peer.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"x" * 90] * 40)))  # 3.6 KiB: fits
    [(_, response)] = peer.responses()
    assert response.value == Published(1, 40)


def test_a_publish_in_flight_when_the_client_leaves_is_stored_and_nothing_breaks(harness):
    peer = harness.connect()
    harness.ledgers.hold_acks()
    peer.publish("t", [b"orphan"])
    peer.disconnect()
    with LogCapture() as logs:
        harness.ledgers.release_acks()  # the reply has nowhere to go
    assert logs.events == []
    assert harness.logs.get("t").last_seq == 1 and peer.transport.value() == b""


def test_ops_beyond_the_core_protocol_plug_in_with_register_op(harness):
    from twisted.internet.defer import succeed

    from hedwig.protocol.requests import RequestRefused
    from hedwig.protocol.responses import response_frame

    def link(connection, request_id, body, started):
        if not body:
            raise RequestRefused(Status.MALFORMED_REQUEST, "name the region")
        connection.is_hub_peer = True
        reply = lambda region: response_frame(request_id, Op.REGION_LINK, payload=region)  # noqa: E731
        connection.answer(succeed(body), request_id, Op.REGION_LINK, started, reply)

    harness.hub.register_op(Op.REGION_LINK, link)
    with pytest.raises(ValueError, match="already served"):
        harness.hub.register_op(Op.PUBLISH, link)
    peer = harness.connect()
    peer.send(Op.REGION_LINK, b"")
    peer.send(Op.REGION_LINK, b"eu")
    [(_, refused), (_, linked)] = peer.responses()
    assert refused.status is Status.MALFORMED_REQUEST and linked.status is Status.SUCCESS
    assert peer.connection.is_hub_peer and not harness.connect().connection.is_hub_peer
    assert harness.hub.stats.snapshot()["ops"]["region_link"] | {"latency_us": None} == {
        "ok": 1,
        "failed": 1,
        "redirected": 0,
        "latency_us": None,
    }


@pytest.mark.parametrize("bound", ["requests", "bytes"])
def test_too_many_requests_in_flight_stop_reading_until_half_are_answered(harness, bound):
    peer = harness.connect()
    if bound == "requests":
        peer.connection.max_inflight_requests = 4
    else:
        peer.connection.max_inflight_bytes = 4 * len(encode_publish("t", encode_message_set([b"x"])))
    harness.ledgers.hold_acks()
    for _ in range(3):
        peer.publish("t", [b"x"])
    assert peer.transport.producerState == "producing"
    peer.publish("t", [b"x"])
    assert peer.transport.producerState == "paused"  # TCP now holds the client back
    harness.ledgers.release_acks(1, keep_holding=True)
    assert peer.transport.producerState == "paused"  # 3 of 4 still in flight
    harness.ledgers.release_acks(1, keep_holding=True)
    assert peer.transport.producerState == "producing"
    harness.ledgers.release_acks()
    assert [r.value.first_seq for _, r in peer.responses()] == [1, 2, 3, 4]
