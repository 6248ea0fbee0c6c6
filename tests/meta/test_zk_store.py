"""What the ZooKeeper store adds to the IMetadataStore contract (test_store_contract.py runs
that): an owner's writes checked against its ownership epoch, names ZooKeeper would
refuse, and a connection that is down, all against a real ZooKeeper."""

import base64
import json

import pytest

from hedwig.meta import NEW, BadVersion, LedgerRange, SubscriptionState, Versioned
from hedwig.meta.codec import BadRecord
from hedwig.meta.interface import OwnershipLost
from hedwig.meta.zk_layout import decode_name, encode_name
from tests.conftest import start_zookeeper
from tests.meta.test_store_contract import _answers, result, zookeeper_store

RANGES = [LedgerRange(1, 1, None)]
STATE = SubscriptionState(0, {})


@pytest.fixture
def zk(zookeeper, request):
    root = f"/zk-store-{request.node.name}"
    store, client = zookeeper_store(zookeeper, root)
    yield store
    _answers.clear()
    client.stop()
    client.close()


def epoch(store, topic, bumps: int) -> int:
    """Bump the topic's epoch znode as `bumps` claims would; its version."""
    client = store.session.client
    client.ensure_path(store.layout.epoch(topic))
    for _ in range(bumps):
        client.set(store.layout.epoch(topic), b"a hub")
    return client.exists(store.layout.epoch(topic)).version


def test_an_owners_writes_carry_its_epoch_and_fail_once_another_hub_claimed(zk):
    zk.epochs = {"t": epoch(zk, "t", 1)}
    assert result(zk.put_topic("t", RANGES, NEW)) == 0
    assert result(zk.put_subscription("t", "s", STATE, NEW)) == 0
    epoch(zk, "t", 1)  # another hub claims the topic: its epoch moves on
    with pytest.raises(OwnershipLost, match="another hub claimed it"):
        result(zk.put_topic("t", [LedgerRange(1, 1, 4), LedgerRange(2, 5, None)], 0))
    with pytest.raises(OwnershipLost):
        result(zk.put_subscription("t", "s", STATE._replace(consumed_seq=3), 0))
    with pytest.raises(OwnershipLost):
        result(zk.delete_subscription("t", "s", 0))
    assert isinstance(OwnershipLost("t", "x"), BadVersion)  # (a lost compare-and-set)
    zk.epochs = None  # what the other hub finds: nothing changed
    assert result(zk.get_topic("t")) == Versioned(RANGES, 0)
    assert result(zk.get_subscription("t", "s")) == Versioned(STATE, 0)


def test_a_hub_writes_no_record_of_a_topic_it_does_not_own(zk):
    zk.epochs = {}
    with pytest.raises(OwnershipLost, match="does not own it"):
        result(zk.put_topic("t", RANGES, NEW))
    zk.epochs = None
    assert result(zk.get_topic("t")) is None


@pytest.mark.parametrize("name", [".", "..", "...", "a.b", "_-.", "with space", "slash/inside", "pct%"])
def test_names_zookeeper_would_refuse_are_stored_and_listed_as_they_are(zk, name):
    assert decode_name(encode_name(name)) == name
    assert encode_name(name) not in (".", "..") and "/" not in encode_name(name)
    result(zk.put_topic(name, RANGES, NEW))
    result(zk.put_subscription(name, name, STATE, NEW))
    assert result(zk.list_topics()) == [name]
    assert list(result(zk.list_subscriptions(name))) == [name]


def test_a_write_made_while_zookeeper_is_down_is_made_once_it_is_back(tmp_path):
    """kazoo keeps requests made while its connection is down and sends them on the next
    one: a hub's metadata writes wait out a ZooKeeper restart (its session lives on).
    The session may last 120 s: a restart of the server (a JVM) on a loaded machine can
    take longer than 10 s, and kazoo's attempt to reconnect may have reached the server
    while it started and then wait out its read timeout (2/3 of the session timeout)
    before the next; an expired session is another test's matter."""
    server = start_zookeeper(tmp_path / "zookeeper", max_ticks=1200)
    store, client = zookeeper_store(server, "/restarted", session_timeout_ms=120_000)
    try:
        result(store.put_topic("t", RANGES, NEW))
        server.stop()
        written = store.put_topic("t", [LedgerRange(1, 1, 3), LedgerRange(2, 4, None)], 0)
        assert not written.called
        server.start()
        assert _answers[0].wait_for(written, timeout=110) == 1
        assert result(store.get_topic("t")).version == 1
    finally:
        _answers.clear()
        client.stop()
        client.close()
        server.stop()


def test_acked_bytes_are_base64_in_the_node_and_a_node_written_before_them_reads_empty(zk):
    """A subscription node holds its acked bytes as base64 under "acked" (left out when
    empty: the same JSON as a node written before the field, which reads as b"")."""
    client = zk.session.client
    path = zk.layout.subscription("t", "s")
    result(zk.put_subscription("t", "s", SubscriptionState(4, {"window": 9}, b"\x00\xff\x10"), NEW))
    assert json.loads(client.get(path)[0]) == {
        "consumed_seq": 4,
        "preferences": {"window": 9},
        "acked": base64.b64encode(b"\x00\xff\x10").decode(),
    }
    client.set(path, b'{"consumed_seq":7,"preferences":{}}')  # as a hub before the field wrote it
    assert result(zk.get_subscription("t", "s")) == Versioned(SubscriptionState(7, {}, b""), 1)
    for acked in (b'"not base64!"', b"5"):
        unreadable = b'{"consumed_seq":7,"preferences":{},"acked":' + acked + b"}"
        client.set(path, unreadable)
        with pytest.raises(BadRecord, match="unreadable"):
            result(zk.get_subscription("t", "s"))
