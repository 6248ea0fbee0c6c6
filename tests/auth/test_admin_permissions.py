"""The administration requests under [auth]: creating a topic needs `create` on it, listing
a topic's subscriptions `subscribe` on it; listing every topic's, deleting a topic and
moving a subscription are an admin's. Real hub, raw sockets."""

from hedwig.protocol import Op, Status
from hedwig.protocol.admin_requests import (
    encode_create_topic,
    encode_delete_topic,
    encode_list_subscriptions,
    encode_reset_subscription,
)
from tests.auth.peers import Peer


def test_create_topic_needs_the_create_permission(hub):
    bob = Peer(hub.address, "bob")  # publish and subscribe on t.*, create nothing
    status, message, _ = bob.request(Op.CREATE_TOPIC, encode_create_topic("t.admin-bobs"))
    assert status is Status.NOT_AUTHORIZED, message
    alice = Peer(hub.address, "alice")  # create on t.*
    assert alice.request(Op.CREATE_TOPIC, encode_create_topic("t.admin-alices"))[0] is Status.SUCCESS
    status, message, _ = alice.request(Op.CREATE_TOPIC, encode_create_topic("x.admin-outside"))
    assert status is Status.NOT_AUTHORIZED, message


def test_listing_subscriptions_needs_subscribe_on_the_topic_or_admin_for_all(hub):
    alice = Peer(hub.address, "alice")
    assert alice.request(Op.CREATE_TOPIC, encode_create_topic("t.admin-listed"))[0] is Status.SUCCESS
    assert (
        alice.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions("t.admin-listed"))[0] is Status.SUCCESS
    )
    status, message, _ = alice.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions())
    assert status is Status.NOT_AUTHORIZED, message
    root = Peer(hub.address, "root")
    assert root.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions())[0] is Status.SUCCESS


def test_deleting_topics_and_moving_subscriptions_are_an_admins(hub):
    alice = Peer(hub.address, "alice")
    assert alice.request(Op.CREATE_TOPIC, encode_create_topic("t.admin-kept"))[0] is Status.SUCCESS
    status, message, _ = alice.request(Op.DELETE_TOPIC, encode_delete_topic("t.admin-kept"))
    assert status is Status.NOT_AUTHORIZED, message
    status, message, _ = alice.request(
        Op.RESET_SUBSCRIPTION, encode_reset_subscription("t.admin-kept", "s", "earliest")
    )
    assert status is Status.NOT_AUTHORIZED, message
    root = Peer(hub.address, "root")
    assert root.request(Op.DELETE_TOPIC, encode_delete_topic("t.admin-kept"))[0] is Status.SUCCESS
