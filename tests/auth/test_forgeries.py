"""Issue 14, finding 4: every forgery, tried over raw sockets against a real hub process
with [auth] on. Without authentication each of them succeeds (any client could attach to,
acknowledge or unsubscribe another's subscription, link as any region, relay any origin,
kick a child's link, create topics, read the hub's state); here each is refused with its
own status, and what it tried to change is unchanged."""

import json

import pytest

from hedwig.protocol import Op, Status, encode_message_set
from hedwig.protocol.admin_requests import encode_list_subscriptions
from hedwig.protocol.requests import (
    encode_describe_topic,
    encode_publish,
    encode_subscribe,
    encode_unsubscribe,
)
from hedwig.region.wire import encode_region_link, relay_publish_parts
from tests.auth.peers import Peer
from tests.region.test_hostile_relay import relayed


def publish(peer, topic, payload=b"m"):
    return peer.request(Op.PUBLISH, encode_publish(topic, encode_message_set([payload])))


def subscribe(peer, topic, subscriber_id, **options):
    return peer.request(Op.SUBSCRIBE, encode_subscribe(topic, subscriber_id, **options))


@pytest.fixture
def owned(hub, request):
    """A topic with a durable subscription alice created, detached again."""
    topic = "t." + "".join(c if c.isalnum() else "-" for c in request.node.name[5:])
    alice = Peer(hub.address, "alice")
    assert publish(alice, topic)[0] is Status.SUCCESS
    assert subscribe(alice, topic, "alices", mode="create")[0] is Status.SUCCESS
    alice.close()
    return topic


def test_attaching_to_another_users_subscription_is_refused(hub, owned):
    bob = Peer(hub.address, "bob")
    status, message, _ = subscribe(bob, owned, "alices", mode="attach")
    assert status is Status.NOT_AUTHORIZED, message
    assert "belongs to another user" in message and bob.auth_status is Status.SUCCESS
    # The owner still attaches; an admin may too (admins excepted).
    alice = Peer(hub.address, "alice")
    assert subscribe(alice, owned, "alices", mode="attach")[0] is Status.SUCCESS


def test_force_attach_cannot_take_another_users_live_subscription(hub, owned):
    alice = Peer(hub.address, "alice")
    assert subscribe(alice, owned, "alices", mode="attach")[0] is Status.SUCCESS
    bob = Peer(hub.address, "bob")
    status, message, _ = subscribe(bob, owned, "alices", mode="attach", force_attach=True)
    assert status is Status.NOT_AUTHORIZED, message
    # alice's attachment was not forced closed: a publish reaches her, on her connection.
    assert publish(bob, owned, b"after")[0] is Status.SUCCESS
    op, _request_id, body = alice.next_frame()
    assert op == Op.DELIVERY and b"after" in body
    root = Peer(hub.address, "root")
    assert subscribe(root, owned, "alices", mode="attach", force_attach=True)[0] is Status.SUCCESS


def test_acknowledging_for_another_users_subscription_is_refused(hub, owned):
    bob = Peer(hub.address, "bob")
    status, message, _ = subscribe(bob, owned, "alices", mode="attach", deliver=False)
    assert status is Status.NOT_AUTHORIZED, message


def test_unsubscribing_another_users_subscription_is_refused(hub, owned):
    bob = Peer(hub.address, "bob")
    status, message, _ = bob.request(Op.UNSUBSCRIBE, encode_unsubscribe(owned, "alices"))
    assert status is Status.NOT_AUTHORIZED, message
    alice = Peer(hub.address, "alice")
    assert subscribe(alice, owned, "alices", mode="attach")[0] is Status.SUCCESS  # still there


def test_creating_a_topic_without_the_permission_is_refused_and_creates_nothing(hub, owned):
    bob = Peer(hub.address, "bob")  # publish and subscribe on t.*, create nothing
    status, message, _ = publish(bob, "t.bobs-new")
    assert status is Status.NOT_AUTHORIZED, message
    status, message, _ = subscribe(bob, "t.bobs-new-2", "b")
    assert status is Status.NOT_AUTHORIZED, message
    assert publish(bob, owned)[0] is Status.SUCCESS  # a topic that exists takes his publish
    root = Peer(hub.address, "root")
    for topic in ("t.bobs-new", "t.bobs-new-2"):
        assert root.request(Op.DESCRIBE_TOPIC, encode_describe_topic(topic))[0] is Status.NO_SUCH_TOPIC
    status, message, _ = publish(Peer(hub.address, "alice"), "x.elsewhere")  # outside her patterns
    assert status is Status.NOT_AUTHORIZED, message


@pytest.mark.parametrize("op", [Op.STATS, Op.LIST_TOPICS, Op.DESCRIBE_TOPIC])
def test_admin_reads_need_admin_or_read_permission_on_the_topic(hub, owned, op):
    """STATS and LIST_TOPICS are an admin's; DESCRIBE_TOPIC needs subscribe on the topic
    (a reader plans by a topic's bounds), so alice may describe hers, not another's."""
    root = Peer(hub.address, "root")
    assert publish(root, "x.admins")[0] is Status.SUCCESS
    body = encode_describe_topic("x.admins") if op == Op.DESCRIBE_TOPIC else b""
    status, message, _ = Peer(hub.address, "alice").request(op, body)
    assert status is Status.NOT_AUTHORIZED, message
    assert root.request(op, body)[0] is Status.SUCCESS
    if op == Op.DESCRIBE_TOPIC:
        assert Peer(hub.address, "alice").request(op, encode_describe_topic(owned))[0] is Status.SUCCESS


def test_a_request_before_auth_or_with_a_wrong_password_is_refused_and_the_connection_closed(hub):
    anonymous = Peer(hub.address, None)
    status, message, _ = publish(anonymous, "t.anything")
    assert status is Status.AUTHENTICATION_FAILED, message
    assert anonymous.closed_by_hub()
    for user, password in (("alice", "wrong"), ("nobody", "alice-pw")):
        guess = Peer(hub.address, user, password)
        assert guess.auth_status is Status.AUTHENTICATION_FAILED
        assert guess.closed_by_hub()
    assert "Traceback" not in hub.output()


def test_region_link_needs_the_regions_user(hub):
    alice = Peer(hub.address, "alice")
    status, message, _ = alice.request(Op.REGION_LINK, encode_region_link("leaf"))
    assert status is Status.NOT_AUTHORIZED, message
    other = Peer(hub.address, "other")
    status, message, _ = other.request(Op.REGION_LINK, encode_region_link("leaf"))
    assert status is Status.NOT_AUTHORIZED, message


def test_a_linked_childs_link_cannot_be_kicked_by_another_client(hub):
    leaf = Peer(hub.address, "leaf")
    assert leaf.request(Op.REGION_LINK, encode_region_link("leaf"))[0] is Status.SUCCESS
    for user in ("alice", "other"):
        status, message, _ = Peer(hub.address, user).request(Op.REGION_LINK, encode_region_link("leaf"))
        assert status is Status.NOT_AUTHORIZED, message
    # The child's link is still up: its next relay is stored and answered on it.
    leaf.send(b"".join(relay_publish_parts(9, "t.kick", 0, 1, relayed([b"x"], origin=b"leaf"))))
    assert leaf.reply(9)[0] is Status.SUCCESS
    leaf.next_id = 10


def test_relays_of_origins_outside_the_childs_side_of_the_tree_are_refused(hub):
    leaf = Peer(hub.address, "leaf")
    assert leaf.request(Op.REGION_LINK, encode_region_link("leaf"))[0] is Status.SUCCESS
    for request_id, origin in enumerate((b"other", b"root", b"elsewhere"), start=10):
        leaf.send(b"".join(relay_publish_parts(request_id, "t.forged", 0, 1, relayed([b"x"], origin=origin))))
        status, message, _ = leaf.reply(request_id)
        assert status is Status.NOT_AUTHORIZED, (origin, message)
    leaf.send(b"".join(relay_publish_parts(20, "t.forged", 0, 1, relayed([b"x"], origin=b"leaf"))))
    assert leaf.reply(20)[0] is Status.SUCCESS
    root = Peer(hub.address, "root")
    status, _message, payload = root.request(Op.DESCRIBE_TOPIC, encode_describe_topic("t.forged"))
    assert status is Status.SUCCESS and json.loads(bytes(payload))["last_seq"] == 1  # the one from leaf


def test_relay_publish_needs_a_region_user(hub):
    bob = Peer(hub.address, "bob")
    bob.send(b"".join(relay_publish_parts(5, "t.relay", 0, 1, relayed([b"x"], origin=b"leaf"))))
    status, message, _ = bob.reply(5)
    assert status is Status.NOT_AUTHORIZED, message


def test_dead_letters_need_publish_and_create_on_the_dead_letter_topic(hub, owned):
    """The hub publishes a subscription's dead letters itself: naming max_deliveries asks
    it to, so the user must be allowed to publish (and create) there."""
    bob = Peer(hub.address, "bob")  # publish and subscribe on t.*, create nothing
    status, message, _ = subscribe(bob, owned, "bobs", kind="shared", max_deliveries=3)
    assert status is Status.NOT_AUTHORIZED and f"{owned}.dlq" in message, message
    alice = Peer(hub.address, "alice")
    status, message, _ = subscribe(
        alice, owned, "work", kind="shared", max_deliveries=3, dead_letter_topic="x.dead"
    )
    assert status is Status.NOT_AUTHORIZED and "x.dead" in message, message
    assert subscribe(alice, owned, "work", kind="shared", max_deliveries=3)[0] is Status.SUCCESS


def test_joining_another_users_shared_subscription_is_refused(hub, owned):
    alice = Peer(hub.address, "alice")
    assert subscribe(alice, owned, "team", kind="shared")[0] is Status.SUCCESS
    bob = Peer(hub.address, "bob")
    status, message, _ = subscribe(bob, owned, "team", kind="shared")
    assert status is Status.NOT_AUTHORIZED, message


def test_a_user_who_may_subscribe_sees_its_own_subscriptions_and_only_the_number_of_others(hub, owned):
    """Issue 28: DESCRIBE_TOPIC and a topic's LIST_SUBSCRIPTIONS need subscribe on the
    topic, not admin; bob may subscribe to alice's topic, but the name of her
    subscription (and its position) is hers: he sees his own rows and a count. An admin
    sees every row with the user who made it."""
    bob = Peer(hub.address, "bob")
    assert subscribe(bob, owned, "bobs", mode="create")[0] is Status.SUCCESS
    status, message, payload = bob.request(Op.DESCRIBE_TOPIC, encode_describe_topic(owned))
    assert status is Status.SUCCESS, message
    described = json.loads(bytes(payload))
    assert [row["subscriber_id"] for row in described["subscribers"]] == ["bobs"]
    assert described["hidden_subscriptions"] == 1 and "alices" not in bytes(payload).decode()
    status, message, payload = bob.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions(owned))
    assert status is Status.SUCCESS, message
    assert [row["subscriber_id"] for row in json.loads(bytes(payload))] == ["bobs"]
    root = Peer(hub.address, "root")
    status, _message, payload = root.request(Op.DESCRIBE_TOPIC, encode_describe_topic(owned))
    rows = {row["subscriber_id"]: row["user"] for row in json.loads(bytes(payload))["subscribers"]}
    assert rows == {"alices": "alice", "bobs": "bob"}
    status, _message, payload = root.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions(owned))
    assert {row["subscriber_id"]: row["user"] for row in json.loads(bytes(payload))} == rows


def test_a_user_who_is_not_an_admin_sees_ledger_ids_not_paths(hub, owned):
    """Issue 41, point 6: DESCRIBE_TOPIC gave alice each ledger's path on the hub's disk
    (the data directory's layout is the operator's); she sees ids, bounds and sizes,
    an admin the location too."""
    alice = Peer(hub.address, "alice")
    status, message, payload = alice.request(Op.DESCRIBE_TOPIC, encode_describe_topic(owned))
    assert status is Status.SUCCESS, message
    ledgers = json.loads(bytes(payload))["ledgers"]
    assert ledgers and all(isinstance(row["ledger_id"], int) and row["bytes"] > 0 for row in ledgers)
    assert all("location" not in row for row in ledgers), ledgers
    assert str(hub.data_dir) not in bytes(payload).decode()
    root = Peer(hub.address, "root")
    status, message, payload = root.request(Op.DESCRIBE_TOPIC, encode_describe_topic(owned))
    assert all(row["location"] for row in json.loads(bytes(payload))["ledgers"]), message


def test_hedwig_subscriptions_shows_who_made_each_subscription(hub, owned):
    """`hedwig subscriptions TOPIC` as an admin: a USER column naming alice."""
    from hedwig.commands.admin import format_subscriptions

    root = Peer(hub.address, "root")
    status, message, payload = root.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions(owned))
    assert status is Status.SUCCESS, message
    lines = format_subscriptions(json.loads(bytes(payload)), owned)
    assert lines[0].split()[:3] == ["TOPIC", "SUBSCRIBER", "USER"], lines
    assert lines[1].split()[:3] == [owned, "alices", "alice"], lines
