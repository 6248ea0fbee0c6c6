"""Dead letters in a region of several hubs: a shared subscription's dead-letter topic may
be owned by another hub than its topic. The topic's owner then publishes the dead letter
on the dead-letter topic's owner, as a client of it (hedwig.hub.forwarding); with [auth]
on, as [auth] hub_user. Before, the publish failed NotOwner and the message went round
again and again."""

import json

import pytest

from hedwig.auth import hash_password
from hedwig.auth.settings import hub_credentials
from hedwig.client import Client
from hedwig.config.loading import ConfigError, load_config
from hedwig.delivery.dead_letters import DELIVERIES, ORIGINAL_SEQ, ORIGINAL_TOPIC, SUBSCRIPTION
from hedwig.protocol.auth_request import Credentials
from hedwig.testing.polling import wait_until

TOPIC = "t.jobs"
DLQ = f"{TOPIC}.dlq"
USERS = {
    # The worker may publish, subscribe and create t.* (its SUBSCRIBE naming max_deliveries
    # needs publish and create on the dead-letter topic); the hubs' user publishes there.
    "worker": ("worker-pw", {"publish": ["t.*"], "subscribe": ["t.*"], "create": ["t.*"]}),
    "hubs": ("hubs-pw", {"publish": ["t.*"], "create": ["t.*"]}),
}


def auth_conf(directory) -> tuple[str, Credentials]:
    """[auth] on, with a users file and the hubs' password file: (conf text, credentials)."""
    users_file = directory / "users.json"
    users = {
        name: {"password": hash_password(pw, log2_n=10), **record} for name, (pw, record) in USERS.items()
    }
    users_file.write_text(json.dumps({"users": users}))
    password_file = directory / "hubs-password"
    password_file.write_text("hubs-pw\n")
    conf = (
        f"[auth]\nenabled = true\nusers_file = {users_file}\nfailure_delay_s = 0.2\n"
        f"hub_user = hubs\nhub_password_file = {password_file}\n"
    )
    return conf, Credentials("worker", "worker-pw")


@pytest.mark.parametrize("auth", [False, True], ids=["open", "auth"])
def test_a_dead_letter_whose_topic_another_hub_owns_is_published_on_that_hub(region, tmp_path, auth):
    conf, credentials = auth_conf(tmp_path) if auth else ("", None)
    hubs = region(1, conf=conf)
    first = hubs.hubs[0]
    with Client(first.address, credentials=credentials) as client:
        client.create_topic(TOPIC)
    second = hubs.add()
    with Client(second.address, max_redirects=0, credentials=credentials) as client:
        client.create_topic(DLQ)  # the hub asked owns fewer topics: it claims this one
    with Client(hubs.addresses, credentials=credentials) as client:
        assert client.describe(TOPIC)["owner"] == first.address
        assert client.describe(DLQ)["owner"] == second.address
        member = client.subscribe(TOPIC, "w", kind="shared", start="earliest", max_deliveries=2)
        client.publish(TOPIC, b"poison", {"kind": b"test"})
        client.publish(TOPIC, b"fine")
        counts = []
        while len(counts) < 2:
            message = member.receive(timeout=30)
            if message.payload == b"poison":
                counts.append(message.delivery_count)
                member.nack(message)
            else:
                member.ack(message)
        assert counts == [1, 2]
        [dead] = wait_until(lambda: client.read(DLQ, 1), "the dead letter on the other hub", 30)
        assert dead.payload == b"poison"
        assert dead.properties == {
            "kind": b"test",
            ORIGINAL_TOPIC: TOPIC.encode(),
            ORIGINAL_SEQ: b"1",
            SUBSCRIPTION: b"w",
            DELIVERIES: b"2",
        }
        row = wait_until(
            lambda: (r := client.describe(TOPIC)["subscribers"][0])["consumed_seq"] == 2 and r,
            "the dead letter acknowledged",
            30,
        )
        assert (row["dead_lettered"], row["pending"], row["queued"]) == (1, 0, 0)
        member.close()
    assert "delivering them again" not in first.output(), "the first attempt stored it"


@pytest.mark.parametrize(
    ("password", "said"),
    [
        (None, "[auth] hub_user needs hub_password_file"),
        ("", "[auth] hub_password_file = "),  # an empty file
        ("missing", "No such file"),
    ],
)
def test_a_hub_user_without_a_readable_password_is_refused_at_load(tmp_path, password, said):
    settings = {"auth.hub_user": "hubs"}
    if password is not None:
        path = tmp_path / "password"
        if password != "missing":
            path.write_text(password)
        settings["auth.hub_password_file"] = str(path)
    with pytest.raises(ConfigError) as refused:
        load_config(None, settings)
    assert said in str(refused.value)


def test_a_hub_user_with_its_password_gives_the_hubs_credentials(tmp_path):
    path = tmp_path / "password"
    path.write_text("hubs-pw\n")
    config = load_config(None, {"auth.hub_user": "hubs", "auth.hub_password_file": str(path)})
    assert hub_credentials(config) == Credentials("hubs", "hubs-pw")
    assert hub_credentials(load_config(None, {})) is None


def test_a_dead_letter_its_owner_may_not_publish_is_not_forwarded_as_the_hubs_user(region, tmp_path):
    """Issue 28, finding 1: the owner hub forwards a dead letter to the dead-letter
    topic's hub as [auth] hub_user, who may publish there; so the subscription owner's
    own permission is checked before forwarding, as the users file says (read again when
    it changed, at the next login)."""
    conf, credentials = auth_conf(tmp_path)
    hubs = region(1, conf=conf)
    first = hubs.hubs[0]
    with Client(first.address, credentials=credentials) as client:
        client.create_topic(TOPIC)
    second = hubs.add()
    with Client(second.address, max_redirects=0, credentials=credentials) as client:
        client.create_topic(DLQ)
    with Client(first.address, credentials=credentials) as client:
        assert client.describe(DLQ)["owner"] == second.address
        member = client.subscribe(TOPIC, "w", kind="shared", start="earliest", max_deliveries=1)
        client.publish(TOPIC, b"poison")
        message = member.receive(timeout=30)
        users_file = tmp_path / "users.json"
        users = json.loads(users_file.read_text())
        users["users"]["worker"]["publish"] = [TOPIC]  # the dead-letter topic no more
        users_file.with_name("users.tmp").write_text(json.dumps(users))
        users_file.with_name("users.tmp").replace(users_file)
        with Client(first.address, credentials=credentials):
            pass  # (a login: the hub reads the changed file)
        member.nack(message)
        assert first.wait_for_log(f"user worker may not publish on dead-letter topic {DLQ}")
        assert member.receive(timeout=30).payload == b"poison"  # kept, delivered again
        member.close()
        assert client.read(DLQ, 1) == []
