"""Issue 28, finding 1: dead letters on a hub with [auth] on go where their subscription's
owner may publish, and create nothing it may not create.

A user named another user's topic as its dead-letter topic with no max_deliveries
(nothing was checked), then subscribed again with max_deliveries=1: its NACKed message
was published into the other user's topic, and a dead-letter topic that did not exist
was created though the user had no create permission. Here the first SUBSCRIBE is
refused, and every dead letter is checked against the owner's permissions as the users
file says when it is published: a refused one is kept (delivered again), never stored
elsewhere."""

import json

import pytest

from hedwig.auth import hash_password
from hedwig.client import Client
from hedwig.client.errors import NotAuthorized
from hedwig.protocol.auth_request import Credentials
from hedwig.testing.hubprocess import HubProcess
from tests.auth.peers import FAST

PASSWORDS = {"carol": "carol-pw", "dave": "dave-pw", "root": "root-pw"}


def write_users(path, carol_on_dead_letters=("publish", "create")):
    """carol works on c.*; dave owns d.*; carol's rights on c.dead.* vary by test."""
    carol = {"publish": ["c.*"], "subscribe": ["c.*"], "create": ["c.*"]}
    for action in carol_on_dead_letters:
        carol[action] = [*carol[action], "dead.c.*"]
    users = {
        "carol": {"password": hash_password(PASSWORDS["carol"], log2_n=FAST), **carol},
        "dave": {"password": hash_password(PASSWORDS["dave"], log2_n=FAST), "publish": ["d.*"],
                 "subscribe": ["d.*"], "create": ["d.*"]},
        "root": {"password": hash_password(PASSWORDS["root"], log2_n=FAST), "admin": True},
    }  # fmt: skip
    temporary = path.with_name("users.tmp")
    temporary.write_text(json.dumps({"users": users}))
    temporary.replace(path)  # (as `hedwig user` does: the hub reads whole files only)


@pytest.fixture
def hub(tmp_path):
    users = tmp_path / "users.json"
    write_users(users)
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[auth]\nenabled = true\nusers_file = {users}\nfailure_delay_s = 0\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf)) as process:
        process.users = users
        yield process


def client(hub, user):
    return Client(hub.address, credentials=Credentials(user, PASSWORDS[user]))


def test_naming_another_users_topic_for_dead_letters_is_refused_without_max_deliveries(hub):
    with client(hub, "dave") as dave:
        dave.publish("d.orders", b"dave's own")
    with client(hub, "carol") as carol:
        with pytest.raises(NotAuthorized, match=r"d\.orders"):
            carol.subscribe("c.jobs", "w", kind="shared", dead_letter_topic="d.orders")
        # ...so the stored topic can never be used by a later SUBSCRIBE naming max_deliveries.
        member = carol.subscribe("c.jobs", "w", kind="shared", start="earliest", max_deliveries=1)
        carol.publish("c.jobs", b"poison")
        member.nack(member.receive(timeout=30))
        member.close()
    with client(hub, "root") as root:
        assert [m.payload for m in root.read("d.orders")] == [b"dave's own"]


def nack_once(hub, topic):
    """carol's shared subscription gives up on one message (max_deliveries=1)."""
    with client(hub, "carol") as carol:
        carol.publish(topic, b"poison")
        member = carol.subscribe(topic, "w", kind="shared", start="earliest")
        message = member.receive(timeout=30)
        member.nack(message)
        return member, carol


def test_a_dead_letter_its_owner_may_no_longer_publish_is_kept_not_stored(hub):
    with client(hub, "carol") as carol:  # allowed when made
        carol.subscribe("c.work", "w", kind="shared", start="earliest", max_deliveries=1,
                        dead_letter_topic="dead.c.work").close()  # fmt: skip
        carol.publish("c.work", b"poison")
    write_users(hub.users, carol_on_dead_letters=())  # the operator takes the right away
    with client(hub, "carol") as carol:
        member = carol.subscribe("c.work", "w", kind="shared", max_deliveries=1)
        member.nack(member.receive(timeout=30))
        assert hub.wait_for_log("user carol may not publish on dead-letter topic dead.c.work")
        again = member.receive(timeout=30)  # kept, and delivered again
        assert again.payload == b"poison"
    with client(hub, "root") as root:
        assert "dead.c.work" not in root.topics()


def test_a_dead_letter_topic_its_owner_may_not_create_is_not_created(hub):
    with client(hub, "carol") as carol:  # allowed to create it when subscribing
        carol.subscribe("c.more", "w", kind="shared", start="earliest", max_deliveries=1,
                        dead_letter_topic="dead.c.more").close()  # fmt: skip
        carol.publish("c.more", b"poison")
    write_users(hub.users, carol_on_dead_letters=("publish",))  # publish, but create no more
    with client(hub, "carol") as carol:
        member = carol.subscribe("c.more", "w", kind="shared", max_deliveries=1)
        member.nack(member.receive(timeout=30))
        assert hub.wait_for_log("dead-letter topic dead.c.more does not exist; user carol may not create it")
        assert member.receive(timeout=30).payload == b"poison"
    with client(hub, "root") as root:
        assert "dead.c.more" not in root.topics()
