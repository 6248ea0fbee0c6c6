"""Issue 41, point 1 (Kafka's KIP-360): a client whose producer the hub forgot, with
nothing in doubt, starts a new producer by itself, in all three clients. A real hub with
[auth] on remembers two producers per user and topic here; alice's raw connection
starts producers of her own, which push out her client's (one set, on probation), and
the client's next publish met PRODUCER_SEQUENCE_GAP for good."""

import pytest

from hedwig.protocol import Op, Status, encode_message_set
from hedwig.protocol.auth_request import Credentials
from hedwig.protocol.producer_requests import encode_idempotent_publish
from hedwig.testing.hubprocess import HubProcess
from tests.auth.peers import USERS, Peer, write_conf, write_users
from tests.client.every_client import Aio, Blocking, Twisted


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("auth-hub-two-producers")
    conf = write_conf(directory, write_users(directory / "users.json"))
    with open(conf, "a") as f:
        f.write("[hub]\nmax_producers = 2\n")
    with HubProcess(directory / "data", 0, "--conf", conf) as process:
        yield process


@pytest.mark.parametrize("kind", [Blocking, Twisted, Aio], ids=["blocking", "twisted", "asyncio"])
def test_a_client_whose_producer_was_forgotten_goes_on_as_a_new_one(hub, kind):
    topic = f"t.forgotten-{kind.name}"
    client = kind(hub.address, credentials=Credentials("alice", USERS["alice"][0]), idempotent=True)
    try:
        assert client.call("publish", topic, b"first") == 1
        other = Peer(hub.address, "alice")
        for invented in (101, 102):  # her own: the share of two holds them, not the client's
            body = encode_idempotent_publish(topic, invented, 0, encode_message_set([b"raw"]), True)
            status, message, _ = other.request(Op.IDEMPOTENT_PUBLISH, body)
            assert status is Status.SUCCESS, message
        assert client.call("publish", topic, b"second") == 4  # (a gap for good before)
        assert client.call("publish", topic, b"third") == 5
        stored = client.call("read", topic)
    finally:
        client.close()
    assert [m.payload for m in stored] == [b"first", b"raw", b"raw", b"second", b"third"]
