"""Idempotent publishing on a real hub process with [auth] on: INIT_PRODUCER needs only
an authenticated user, IDEMPOTENT_PUBLISH the publish permission on its topic, as
PUBLISH does (without the gate's entries both would be admins' only)."""

from hedwig.protocol import Op, Status, encode_message_set
from hedwig.protocol.producer_requests import decode_producer_id, encode_idempotent_publish
from hedwig.protocol.requests import encode_publish
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
