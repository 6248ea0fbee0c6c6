"""GROUP_OFFSET (hedwig/kafka/offsets.py): a hub of a ZooKeeper region acts on a Kafka
group's subscription on the topic's owner on behalf of the user who committed. The
owner trusts the named user from [auth] hub_user alone: over raw sockets against a real
hub with [auth] on, anyone else naming a user (an admin included) is refused
NOT_AUTHORIZED and nothing changes; hub_user's request is checked as the named user's
(the user must exist, may subscribe on the topic, and own the subscription), and the
subscription it makes is that user's."""

import json

import pytest

from hedwig.auth import hash_password
from hedwig.protocol import Op, Status, encode_message_set
from hedwig.protocol.admin_requests import GroupAction, encode_group_offset, encode_list_subscriptions
from hedwig.protocol.requests import encode_publish, encode_subscribe
from hedwig.testing.hubprocess import HubProcess
from tests.auth import peers
from tests.auth.peers import FAST, Peer

HUBS = ("hubs-pw", {"subscribe": ["t.*"]})  # [auth] hub_user


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("group-offset-hub")
    users = {**peers.USERS, "hubs": HUBS}
    records = {name: {"password": hash_password(pw, log2_n=FAST), **r} for name, (pw, r) in users.items()}
    (directory / "users.json").write_text(json.dumps({"users": records}))
    (directory / "hubs-password").write_text("hubs-pw\n")
    conf = directory / "hub.conf"
    conf.write_text(
        f"[auth]\nenabled = true\nusers_file = {directory / 'users.json'}\nfailure_delay_s = 0.2\n"
        f"hub_user = hubs\nhub_password_file = {directory / 'hubs-password'}\n"
    )
    with HubProcess(directory / "data", 0, "--conf", str(conf)) as process:
        yield process


def hub_user(hub):
    return Peer(hub.address, "hubs", HUBS[0])


def group_offset(peer, topic, subscriber, user, action, seq=0):
    status, message, payload = peer.request(
        Op.GROUP_OFFSET, encode_group_offset(topic, subscriber, user, action, seq)
    )
    return status, message, json.loads(bytes(payload)) if status is Status.SUCCESS else None


def subscriptions(hub, topic):
    """{subscriber id: (consumed seq-id, user)} as an admin sees them."""
    root = Peer(hub.address, "root")
    status, message, payload = root.request(Op.LIST_SUBSCRIPTIONS, encode_list_subscriptions(topic))
    assert status is Status.SUCCESS, message
    return {
        row["subscriber_id"]: (row["consumed_seq"], row.get("user")) for row in json.loads(bytes(payload))
    }


@pytest.fixture
def topic(hub, request):
    name = "t." + "".join(c if c.isalnum() else "-" for c in request.node.name[5:])[:60]
    alice = Peer(hub.address, "alice")
    for _ in range(3):
        assert (
            alice.request(Op.PUBLISH, encode_publish(name, encode_message_set([b"m"])))[0] is Status.SUCCESS
        )
    return name


@pytest.mark.parametrize("forger", ["bob", "root", "alice"])
def test_a_user_other_than_hub_user_naming_a_user_is_refused_and_nothing_changes(hub, topic, forger):
    peer = Peer(hub.address, forger)
    for action in GroupAction:
        status, message, _ = group_offset(peer, topic, "kafka.g", "alice", action, 2)
        assert status is Status.NOT_AUTHORIZED, (action, message)
        assert "hub_user" in message and peer.auth_status is Status.SUCCESS
    assert "kafka.g" not in subscriptions(hub, topic)


def test_hub_user_places_fetches_and_deletes_a_groups_subscription_as_the_user_named(hub, topic):
    hubs = hub_user(hub)
    assert group_offset(hubs, topic, "kafka.g", "bob", GroupAction.FETCH)[2] == {"consumed_seq": None}
    assert group_offset(hubs, topic, "kafka.g", "bob", GroupAction.PLACE, 2)[0] is Status.SUCCESS
    assert subscriptions(hub, topic)["kafka.g"] == (2, "bob")  # bob's, not hub_user's
    assert group_offset(hubs, topic, "kafka.g", "bob", GroupAction.FETCH)[2] == {"consumed_seq": 2}
    assert group_offset(hubs, topic, "kafka.g", "bob", GroupAction.PLACE, 3)[0] is Status.SUCCESS
    assert subscriptions(hub, topic)["kafka.g"] == (3, "bob")
    # Another user may not move or delete bob's group subscription through hub_user.
    for action in (GroupAction.PLACE, GroupAction.DELETE):
        status, message, _ = group_offset(hubs, topic, "kafka.g", "alice", action, 1)
        assert status is Status.NOT_AUTHORIZED and "belongs to another user" in message, message
    assert subscriptions(hub, topic)["kafka.g"] == (3, "bob")
    assert group_offset(hubs, topic, "kafka.g", "bob", GroupAction.DELETE)[0] is Status.SUCCESS
    assert "kafka.g" not in subscriptions(hub, topic)


def test_hub_user_acting_for_a_user_without_subscribe_or_for_nobody_is_refused(hub, topic):
    hubs = hub_user(hub)
    for user, said in (("writer", "may not subscribe"), ("mallory", "no such user"), ("", "no such user")):
        status, message, _ = group_offset(hubs, topic, "kafka.g", user, GroupAction.PLACE, 1)
        assert status is Status.NOT_AUTHORIZED and said in message, (user, message)
    assert "kafka.g" not in subscriptions(hub, topic)


def test_hub_user_may_act_on_group_subscriptions_only(hub, topic):
    alice = Peer(hub.address, "alice")
    assert alice.request(Op.SUBSCRIBE, encode_subscribe(topic, "alices", mode="create"))[0] is Status.SUCCESS
    alice.close()
    hubs = hub_user(hub)
    status, message, _ = group_offset(hubs, topic, "alices", "alice", GroupAction.PLACE, 1)
    assert status is Status.INVALID_SUBSCRIBER_ID, message
    assert subscriptions(hub, topic)["alices"] == (3, "alice")  # (made at the latest: unmoved)
