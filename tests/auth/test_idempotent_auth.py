"""Idempotent publishing on a real hub process with [auth] on: INIT_PRODUCER needs only
an authenticated user, IDEMPOTENT_PUBLISH the publish permission on its topic, as
PUBLISH does (without the gate's entries both would be admins' only)."""

from hedwig.protocol import Op, Status, encode_frame, encode_message_set
from hedwig.protocol.entry import decode_entry, decode_entry_header
from hedwig.protocol.producer_requests import decode_producer_id, encode_idempotent_publish
from hedwig.protocol.requests import (
    decode_published,
    decode_read_range_reply,
    encode_publish,
    encode_read_range,
)
from tests.auth.peers import Peer


def idempotent_publish(peer, topic, producer_id, sequence):
    body = encode_idempotent_publish(topic, producer_id, sequence, encode_message_set([b"m"]))
    return peer.request(Op.IDEMPOTENT_PUBLISH, body)


def test_a_publisher_gets_a_producer_id_and_publishes_where_it_may(hub):
    alice = Peer(hub.address, "alice")
    first = encode_publish("t.idem", encode_message_set([b"first"]))
    assert alice.request(Op.PUBLISH, first)[0] is Status.SUCCESS
    bob = Peer(hub.address, "bob")
    status, message, payload = bob.request(Op.INIT_PRODUCER, b"")
    assert status is Status.SUCCESS, message
    producer_id = decode_producer_id(payload)
    status, message, _ = idempotent_publish(bob, "t.idem", producer_id, 0)
    assert status is Status.SUCCESS, message
    status, message, _ = idempotent_publish(bob, "u.idem", producer_id, 0)
    assert status is Status.NOT_AUTHORIZED and "publish" in message


def test_a_user_without_the_publish_permission_is_refused(hub):
    leaf = Peer(hub.address, "leaf")  # a region's user: may relay, not publish
    status, message, _ = idempotent_publish(leaf, "t.idem", 7, 0)
    assert status is Status.NOT_AUTHORIZED, message


def test_another_user_cannot_publish_as_a_users_producer(hub):
    """A producer id is in the header of every entry its sets made, so any reader of the
    topic learns it (and the last sequence). Bob, who may publish there too, sends the set
    alice would send next under her producer id: it must not become hers. Else her own
    next set is answered as a repeat of bob's (her messages acknowledged, never stored),
    or refused as out of sequence."""
    topic = "t.idem-forged"
    alice = Peer(hub.address, "alice")
    producer_id = decode_producer_id(alice.request(Op.INIT_PRODUCER, b"")[2])
    status, message, _ = idempotent_publish(alice, topic, producer_id, 0)
    assert status is Status.SUCCESS, message
    bob = Peer(hub.address, "bob")
    status, message, payload = bob.request(Op.READ_RANGE, encode_read_range(topic, 1))
    assert status is Status.SUCCESS, message
    (_, _, data), *_ = decode_read_range_reply(payload).entries
    seen = decode_entry_header(bytes(data))
    assert seen.producer_id and seen.sequence == 0  # what any reader learns

    forged = encode_idempotent_publish(
        topic, seen.producer_id, seen.sequence + 1, encode_message_set([b"bob's"])
    )
    status, message, _ = bob.request(Op.IDEMPOTENT_PUBLISH, forged)
    # Under that id bob has a producer of his own, new to the topic: set 1 cannot follow.
    assert status is Status.PRODUCER_SEQUENCE_GAP, message

    mine = encode_idempotent_publish(topic, producer_id, 1, encode_message_set([b"alice's"]))
    status, message, payload = alice.request(Op.IDEMPOTENT_PUBLISH, mine)
    assert status is Status.SUCCESS, message
    assert decode_published(payload) == (2, 2)  # stored
    status, message, payload = bob.request(Op.READ_RANGE, encode_read_range(topic, 1))
    payloads = [
        bytes(m.payload)
        for start, stop, data in decode_read_range_reply(payload).entries
        for m in decode_entry(topic, bytes(data), start, stop)
    ]
    assert payloads == [b"m", b"alice's"]
    # Her producer is still hers: a repeat of her set 1 is answered, not stored again.
    status, message, payload = alice.request(Op.IDEMPOTENT_PUBLISH, mine)
    assert status is Status.SUCCESS and decode_published(payload) == (2, 2), message


def test_another_users_flood_of_producers_does_not_push_out_hers(hub):
    """Issue 41, point 1: a topic remembered 1,024 producers, whoever owned them; bob's
    1,100 one-set producers under invented ids pushed alice's out, and her next set was
    a gap for good. Each user has a share of the table of its own."""
    topic = "t.idem-flooded"
    alice = Peer(hub.address, "alice")
    producer_id = decode_producer_id(alice.request(Op.INIT_PRODUCER, b"")[2])
    status, message, _ = idempotent_publish(alice, topic, producer_id, 0)
    assert status is Status.SUCCESS, message
    bob = Peer(hub.address, "bob")
    first_id = bob.next_id
    for invented in range(1, 1101):
        body = encode_idempotent_publish(topic, invented, 0, encode_message_set([b"b"]), True)
        bob.send(encode_frame(Op.IDEMPOTENT_PUBLISH, bob.next_id, body))
        bob.next_id += 1
    for request_id in range(first_id, first_id + 1100):
        assert bob.reply(request_id)[0] is Status.SUCCESS
    status, message, payload = idempotent_publish(alice, topic, producer_id, 1)
    assert status is Status.SUCCESS, message
    assert decode_published(payload) == (1102, 1102)


def test_a_known_producer_is_answered_before_an_unknown_ones_scan_of_the_topic_ends(hub):
    """Issue 41, point 5: bob's one IDEMPOTENT_PUBLISH of an unknown producer at set 5
    makes the hub read the whole topic down (30,000 entries: at least 30 reads, a
    reactor turn apart); alice's known producer's next set, sent just after it, used to
    wait for that scan. She is answered first now: when her answer has come, bob's
    refusal has not been written (on loopback a reply the hub wrote is in the socket at
    once, so an empty socket then is the order, not a timing)."""
    topic = "t.idem-scanned"
    filler = Peer(hub.address, "alice")  # (she may create the topic)
    body = encode_publish(topic, encode_message_set([b"x"]))
    first_id = filler.next_id
    filler.send(b"".join(encode_frame(Op.PUBLISH, first_id + n, body) for n in range(30_000)))
    filler.next_id += 30_000
    for request_id in range(first_id, first_id + 30_000):
        assert filler.reply(request_id)[0] is Status.SUCCESS
    alice = Peer(hub.address, "alice")
    producer_id = decode_producer_id(alice.request(Op.INIT_PRODUCER, b"")[2])
    first = encode_idempotent_publish(topic, producer_id, 0, encode_message_set([b"a0"]), True)
    assert alice.request(Op.IDEMPOTENT_PUBLISH, first)[0] is Status.SUCCESS  # known: no scan
    bob = Peer(hub.address, "bob")
    unknown = encode_idempotent_publish(topic, 0x5EED, 5, encode_message_set([b"u"]))
    bob.send(encode_frame(Op.IDEMPOTENT_PUBLISH, bob.next_id, unknown))
    status, message, _payload = idempotent_publish(alice, topic, producer_id, 1)
    assert status is Status.SUCCESS, message
    bob.sock.setblocking(False)
    try:
        pending = bob.sock.recv(1 << 16)
    except BlockingIOError:
        pending = None
    assert pending is None, "bob's scan ended before alice was answered"
    bob.sock.setblocking(True)
    assert bob.reply(bob.next_id)[0] is Status.PRODUCER_SEQUENCE_GAP
