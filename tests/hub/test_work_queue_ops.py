"""ACK, NACK and FETCH over a connection, byte for byte (a hub of real parts on a Clock):
what each answers, REDELIVERY frames with their counts, a FETCH's deliveries ended by
FETCH_DONE, dead letters through the hub's one publish path, and each bad request
refused with its status while the connection goes on."""

import struct

import pytest

from hedwig.delivery.dead_letters import DELIVERIES, ORIGINAL_SEQ, ORIGINAL_TOPIC, SUBSCRIPTION
from hedwig.protocol import Op, Status, SubscriptionEvent, decode_entry, parse_delivery, parse_event
from hedwig.protocol.requests import encode_describe_topic, encode_read_range, encode_subscribe
from hedwig.protocol.responses import decode_response
from hedwig.protocol.work_requests import encode_fetch, encode_ranges
from tests.hub.declared import declared
from tests.hub.harness import HubHarness


@pytest.fixture
def harness(tmp_path):
    return HubHarness(tmp_path)


def frames(peer):
    """[(kind, ...)]: ("response", request id, Response), ("delivery", handle, first, last,
    count) with the entry's seq-ids, ("event", handle, event)."""
    out = []
    for op, request_id, body in peer.frames():
        if op == Op.RESPONSE:
            out.append(("response", request_id, declared(decode_response(body))))
        elif op in (Op.DELIVERY, Op.REDELIVERY):
            if op == Op.DELIVERY:
                handle, start, stop, entry = parse_delivery(body)
                count = 1
            else:
                handle, start, stop, count = struct.unpack_from("!IIII", body)
                entry = body[16:]
            seqs = [m.seq for m in decode_entry("t", entry, start, stop)]
            out.append(("delivery", handle, seqs[0], seqs[-1], count))
        elif op == Op.EVENT:
            out.append(("event", *parse_event(body)))
    return out


def join(harness, peer, subscriber="w", **options):
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", subscriber, start="earliest", **options))
    harness.clock.advance(0)
    [(_, _, response)] = [f for f in frames(peer) if f[0] == "response"]
    assert response.status is Status.SUCCESS, response
    return response.value.handle


def publish(peer, count):
    peer.publish("t", [b"m%d" % i for i in range(count)])
    assert all(r.status is Status.SUCCESS for _, r in peer.responses())


def status_of(peer, op, body):
    request_id = peer.send(op, body)
    [(kind, answered, response)] = frames(peer)
    assert (kind, answered) == ("response", request_id)
    return response.status


def test_requests_naming_no_subscription_here_are_refused_and_the_connection_goes_on(harness):
    peer = harness.connect()
    assert status_of(peer, Op.ACK, encode_ranges(9, [(1, 1)])) == Status.CLIENT_NOT_SUBSCRIBED
    assert status_of(peer, Op.NACK, encode_ranges(9, [(1, 1)])) == Status.CLIENT_NOT_SUBSCRIBED
    assert status_of(peer, Op.FETCH, encode_fetch(9, 1, 0)) == Status.CLIENT_NOT_SUBSCRIBED
    assert status_of(peer, Op.ACK, struct.pack("!IH", 1, 0)) == Status.MALFORMED_REQUEST
    assert status_of(peer, Op.FETCH, encode_fetch(1, 0, 0)) == Status.MALFORMED_REQUEST
    handle = join(harness, peer, "solo")
    assert status_of(peer, Op.ACK, encode_ranges(handle, [(1, 1)])) == Status.WRONG_SUBSCRIPTION_KIND
    assert not peer.closing


def test_a_fetch_is_answered_at_once_then_its_deliveries_then_fetch_done(harness):
    publisher, puller = harness.connect(), harness.connect()
    publish(publisher, 5)
    handle = join(harness, puller, "p", pull=True)
    harness.clock.advance(0)
    assert frames(puller) == [], "nothing is pushed"
    request_id = puller.send(Op.FETCH, encode_fetch(handle, 3, 30_000))
    harness.clock.advance(0)
    got = frames(puller)
    assert got[0][:2] == ("response", request_id) and got[0][2].status is Status.SUCCESS
    assert got[1:] == [("delivery", handle, 1, 3, 1), ("event", handle, SubscriptionEvent.FETCH_DONE)]
    puller.send(Op.FETCH, encode_fetch(handle, 10, 2_000))
    harness.clock.advance(0)
    assert frames(puller)[1:] == [
        ("delivery", handle, 4, 5, 1),
        ("event", handle, SubscriptionEvent.FETCH_DONE),
    ]
    puller.send(Op.FETCH, encode_fetch(handle, 10, 2_000))
    harness.clock.advance(1.9)
    assert [f[0] for f in frames(puller)] == ["response"], "waiting for a publish"
    harness.clock.advance(0.2)
    assert frames(puller) == [("event", handle, SubscriptionEvent.FETCH_DONE)], "empty at the timeout"


def test_a_nack_comes_back_as_a_redelivery_carrying_its_count(harness):
    publisher, member = harness.connect(), harness.connect()
    handle = join(harness, member, kind="shared")
    publish(publisher, 3)
    harness.clock.advance(0)
    assert frames(member) == [("delivery", handle, 1, 3, 1)]
    member.send(Op.NACK, encode_ranges(handle, [(2, 2)]))
    member.send(Op.ACK, encode_ranges(handle, [(1, 1), (3, 3)]))
    harness.clock.advance(0)
    assert frames(member) == [("delivery", handle, 2, 2, 2)], "no reply to ACK and NACK that succeed"
    member.send(Op.ACK, encode_ranges(handle, [(2, 2)]))
    member.send(Op.DESCRIBE_TOPIC, encode_describe_topic("t"))
    [(_, _, described)] = frames(member)
    [row] = described.value["subscribers"]
    assert (row["consumed_seq"], row["redeliveries"], row["pending"]) == (3, 1, 0)


def test_dead_letters_are_published_to_the_dead_letter_topic_with_where_they_came_from(harness):
    publisher, member = harness.connect(), harness.connect()
    handle = join(harness, member, kind="shared", max_deliveries=2, ack_timeout_ms=1000)
    publish(publisher, 2)
    harness.clock.advance(0)
    member.send(Op.ACK, encode_ranges(handle, [(1, 1)]))
    harness.clock.advance(1.0)  # seq-id 2 goes out a second time ...
    harness.clock.advance(1.0)  # ... and then to t.dlq
    assert [f[1:] for f in frames(member)] == [(handle, 1, 2, 1), (handle, 2, 2, 2)]
    publisher.send(Op.READ_RANGE, encode_read_range("t.dlq", 1))
    [(_, reply)] = publisher.responses()
    [(start, stop, entry)] = reply.value.entries
    [dead] = decode_entry("t.dlq", entry, start, stop)
    assert dead.payload == b"m1"
    assert dead.properties == {ORIGINAL_TOPIC: b"t", ORIGINAL_SEQ: b"2", SUBSCRIPTION: b"w", DELIVERIES: b"2"}
    publisher.send(Op.DESCRIBE_TOPIC, encode_describe_topic("t"))
    [(_, described)] = publisher.responses()
    [row] = described.value["subscribers"]
    assert (row["consumed_seq"], row["dead_lettered"], row["dead_letter_topic"]) == (2, 1, "t.dlq")
    assert harness.hub.hub_stats()["delivery"]["dead_lettered"] == 1


def test_a_connection_lost_gives_its_members_messages_to_the_others(harness):
    publisher, first, second = harness.connect(), harness.connect(), harness.connect()
    one = join(harness, first, kind="shared", window=3)
    two = join(harness, second, kind="shared", window=3)
    publish(publisher, 6)
    harness.clock.advance(0)
    assert frames(first) == [("delivery", one, 1, 3, 1)]
    assert frames(second) == [("delivery", two, 4, 6, 1)]
    first.disconnect()
    second.send(Op.ACK, encode_ranges(two, [(4, 6)]))
    harness.clock.advance(0)
    assert frames(second) == [("delivery", two, 1, 3, 2)]
