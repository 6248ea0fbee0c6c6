"""One black-box suite, run against the blocking, Twisted and asyncio clients alike
(tests/client/every_client.py gives them one face), each against a real hub process:
what a user of any of them relies on behaves the same in all three."""

import threading
import time

import pytest

from hedwig.client.errors import (
    ClientClosed,
    HedwigError,
    InvalidKey,
    InvalidTopic,
    KeyRequired,
    NotCompacted,
    SubscriptionClosed,
    TooManyRedirects,
)
from hedwig.protocol.compression import Codec, encode_published_set
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.schedule import DELIVER_AT
from tests.client.every_client import CLIENTS
from tests.client.redirector import Redirector


@pytest.fixture(params=CLIENTS, ids=lambda kind: kind.name)
def connect(request, hub):
    """connect(address=the hub, **options) -> a client of the parametrised kind, closed
    after the test; topics are named per kind, since the hub is shared."""
    opened = []

    def make(address=None, **options):
        client = request.param(address or hub.address, **options)
        opened.append(client)
        return client

    make.kind = request.param.name
    yield make
    for client in opened:
        client.close()


def test_published_messages_arrive_in_order_with_their_properties(connect):
    client = connect()
    topic = f"every-order-{connect.kind}"
    subscription = client.subscribe(topic, "s", start="earliest")
    assert client.call("publish", topic, b"one", {"k": b"v"}) == 1
    assert client.call("publish_many", topic, [b"two", b"three"]) == [2, 3]
    got = [subscription.receive() for _ in range(3)]
    assert [(m.seq, m.payload, m.properties) for m in got] == [
        (1, b"one", {"k": b"v"}),
        (2, b"two", {}),
        (3, b"three", {}),
    ]
    assert all(m.topic == topic for m in got)


def test_deliver_after_and_ttl_are_taken_by_every_client(connect):
    client = connect()
    topic = f"every-delay-{connect.kind}"
    subscription = client.subscribe(topic, "s", start="earliest")
    before = time.time()
    assert client.call("publish", topic, b"later", deliver_after=1.0, ttl=60) == 1
    assert client.call("publish", topic, b"expired", deliver_after=1.0, ttl=0.5) == 2
    assert client.call("publish", topic, b"now") == 3
    got = [subscription.receive() for _ in range(2)]
    arrived = time.time()
    assert [m.payload for m in got] == [b"later", b"now"]
    assert got[0].properties[DELIVER_AT] >= int(before * 1000) + 1000
    assert arrived * 1000 >= got[0].properties[DELIVER_AT], "none delivered before its time"


def test_a_durable_subscription_resumes_after_its_last_ack(connect):
    client = connect()
    topic = f"every-resume-{connect.kind}"
    client.call("publish_many", topic, [b"%d" % i for i in range(1, 7)])
    first = client.subscribe(topic, "worker", start="earliest")
    for _ in range(3):
        message = first.receive()
        first.ack(message)
    first.close()
    again = connect().subscribe(topic, "worker")
    assert again.receive().seq == 4


def test_reads_need_no_subscription(connect):
    client = connect()
    topic = f"every-read-{connect.kind}"
    client.call("publish_many", topic, [b"a", b"b", b"c"])
    assert [m.payload for m in client.call("read", topic, 2)] == [b"b", b"c"]
    assert client.call("describe", topic)["subscribers"] == []


def test_errors_are_the_same_typed_errors(connect):
    client = connect()
    with pytest.raises(InvalidTopic):
        client.call("publish", "not a topic", b"x")
    topic = f"every-forced-{connect.kind}"
    taken = client.subscribe(topic, "s")
    connect().subscribe(topic, "s", force_attach=True)
    with pytest.raises(SubscriptionClosed):
        taken.receive()


def test_redirects_are_followed_and_a_loop_is_refused(connect, hub):
    with Redirector(hub.address) as redirector, Redirector("") as nowhere:
        client = connect(redirector.address)
        assert client.call("publish", f"every-redirected-{connect.kind}", b"x") >= 1
        with pytest.raises(TooManyRedirects):
            connect(nowhere.address).call("publish", f"every-nowhere-{connect.kind}", b"x")


def test_members_of_a_shared_subscription_split_the_messages_each_acknowledged_once(connect):
    topic = f"every-shared-{connect.kind}"
    first, second = connect(), connect()
    members = [
        first.subscribe(topic, "workers", kind="shared", start="earliest", window=10),
        second.subscribe(topic, "workers", kind="shared", window=10),
    ]
    first.call("publish_many", topic, [b"%d" % i for i in range(1, 41)])
    got = [[], []]
    while sum(map(len, got)) < 40:
        for i, member in enumerate(members):
            message = member.receive(timeout=0.2)
            if message is not None:
                assert message.delivery_count == 1
                got[i].append(message.seq)
                member.ack(message)
    assert sorted(got[0] + got[1]) == list(range(1, 41)), "each message to one member"
    assert got[0] and got[1], "both members took part"
    for member in members:
        member.close()
    [row] = first.call("describe", topic)["subscribers"]
    assert (row["kind"], row["consumed_seq"], row["pending"], row["members"]) == ("shared", 40, 0, 0)


def test_members_of_a_key_shared_subscription_take_each_key_whole_and_in_order(connect):
    topic = f"every-key-shared-{connect.kind}"
    first, second = connect(), connect()
    members = [
        first.subscribe(topic, "workers", kind="key_shared", start="earliest", window=50),
        second.subscribe(topic, "workers", kind="key_shared", window=50),
    ]
    keys = [f"k{i % 20}" for i in range(200)]  # (every message another key: runs of one or two)
    delivered = first.call("stats")["delivered"]["entries"]
    first.call("publish_many", topic, [b"%d" % i for i in range(200)], keys=keys)
    got = [[], []]
    while sum(map(len, got)) < 200:
        for i, member in enumerate(members):
            message = member.receive(timeout=0.2)
            if message is not None:
                got[i].append((message.key, message.seq))
                member.ack(message)
    of_member = [{key for key, _ in taken} for taken in got]
    assert of_member[0] and of_member[1], "both members took keys"
    assert not of_member[0] & of_member[1], "each key on one member"
    for taken in got:
        for key in {key for key, _ in taken}:
            seqs = [seq for k, seq in taken if k == key]
            assert seqs == sorted(seqs), f"{key!r} in seq-id order"
    for member in members:
        member.close()
    [row] = first.call("describe", topic)["subscribers"]
    assert (row["kind"], row["consumed_seq"], row["pending"]) == ("key_shared", 200, 0)
    # Each client asked for SUBSET_DELIVERY frames and decoded them: a member's keys of the
    # entry come in a frame per window's worth, not a DELIVERY per run.
    assert first.call("stats")["delivered"]["entries"] - delivered < 40


def test_a_nacked_or_timed_out_message_comes_again_with_its_delivery_count(connect):
    topic = f"every-redeliver-{connect.kind}"
    client = connect()
    member = client.subscribe(topic, "w", kind="shared", start="earliest", ack_timeout=0.3)
    client.call("publish", topic, b"job")
    first = member.receive()
    member.nack(first)
    again = member.receive()
    assert (again.seq, again.payload, again.delivery_count) == (first.seq, b"job", 2)
    third = member.receive()  # not acknowledged: back after the 0.3 s ack timeout
    assert (third.seq, third.delivery_count) == (first.seq, 3)
    member.ack(third)
    member.close()
    [row] = client.call("describe", topic)["subscribers"]
    assert (row["consumed_seq"], row["redeliveries"]) == (1, 2)


def test_a_pull_subscription_fetches_at_once_after_the_first_publish_or_nothing_at_the_timeout(connect):
    topic = f"every-pull-{connect.kind}"
    client = connect()
    puller = client.subscribe(topic, "p", deliver="pull", start="earliest")
    client.call("publish_many", topic, [b"a", b"b", b"c"])
    assert [m.payload for m in puller.fetch(2, 10.0)] == [b"a", b"b"]
    got = puller.fetch(10, 10.0)
    assert [m.seq for m in got] == [3]
    for message in got:
        puller.ack(message)
    assert puller.fetch(10, 0.2) == []
    publisher = connect()
    waiting = threading.Timer(0.3, publisher.call, ("publish", topic, b"d"))
    waiting.start()
    assert [m.payload for m in puller.fetch(10, 20.0)] == [b"d"], "the first publish ends the wait"
    waiting.join()


def test_a_pull_subscription_gives_a_message_back_and_acknowledges_each_as_a_shared_member(connect):
    topic = f"every-pull-nack-{connect.kind}"
    client = connect()
    puller = client.subscribe(topic, "p", deliver="pull", start="earliest")
    client.call("publish_many", topic, [b"a", b"b"])
    first, second = puller.fetch(2, 10.0)
    puller.nack(first)
    puller.ack(second)
    [again] = puller.fetch(10, 10.0)
    assert (again.seq, again.payload, again.delivery_count) == (first.seq, b"a", 2)
    puller.ack(again)
    puller.close()
    [row] = client.call("describe", topic)["subscribers"]
    assert (row["consumed_seq"], row["pending"], row["redeliveries"]) == (2, 0, 1)


def test_a_set_encoded_already_is_published_as_it_is(connect):
    topic = f"every-set-{connect.kind}"
    client = connect()
    message_set = encode_published_set([b"one", b"two"], [{"k": b"v"}, None], Codec.NONE)
    assert client.call("publish_set", topic, message_set) == [1, 2]
    assert [(m.payload, m.properties) for m in client.call("read", topic)] == [
        (b"one", {"k": b"v"}),
        (b"two", {}),
    ]


def test_a_compacted_topic_is_created_refuses_keyless_messages_and_compacts(connect):
    topic = f"every-compacted-{connect.kind}"
    client = connect()
    assert client.call("create_topic", topic, compaction=True) == {
        "topic": topic,
        "created": True,
        "compaction": True,
        "partitions": 1,
        "ttl_ms": 0,
    }
    assert client.call("describe", topic)["compaction"] is True
    with pytest.raises(KeyRequired):
        client.call("publish", topic, b"no key")
    keyed = encode_message_set([b"1", b"2", b"3"], None, [b"a", b"b", b"a"])
    assert client.call("publish_set", topic, keyed) == [1, 2, 3]
    report = client.call("compact", topic)  # (everything published before it: its open ledger rolled)
    assert report["topic"] == topic and report["span"] == [1, 3] and report["kept"] == 2
    assert [(m.seq, m.key, m.payload) for m in client.call("read", topic)] == [
        (2, b"b", b"2"),
        (3, b"a", b"3"),
    ]
    client.call("publish", f"{topic}-plain", b"x")
    with pytest.raises(NotCompacted):
        client.call("compact", f"{topic}-plain")


def test_an_empty_key_is_refused_with_a_hedwig_error_saying_what_keys_may_be(connect):
    """Issue 42: key="" raised a plain ValueError."""
    topic = f"every-empty-key-{connect.kind}"
    client = connect()
    for call in (("publish", topic, b"x"), ("publish_many", topic, [b"x"])):
        keys = {"key": ""} if call[0] == "publish" else {"keys": [b""]}
        with pytest.raises(InvalidKey) as refused:
            client.call(*call, **keys)
        assert isinstance(refused.value, HedwigError) and isinstance(refused.value, ValueError)
        assert "an empty key: a message key is at least one byte (bytes, or str sent as UTF-8)" in str(
            refused.value
        )
    assert client.call("publish", topic, b"x", key="k") == 1  # (nothing of the refused ones was sent)


def test_unsubscribe_closes_the_subscription_attached_through_the_client_first(connect):
    topic = f"every-unsubscribe-{connect.kind}"
    client = connect()
    subscription = client.subscribe(topic, "gone", start="earliest")
    client.call("unsubscribe", topic, "gone")
    assert client.call("describe", topic)["subscribers"] == []
    with pytest.raises(SubscriptionClosed):
        subscription.receive(timeout=0.1)


def test_a_closed_client_refuses_publishes_and_subscribes(connect):
    topic = f"every-closed-{connect.kind}"
    client = connect()
    client.call("publish", topic, b"x")
    client.call("close")
    client.call("close")  # (again: nothing more to do)
    for method, args in (
        ("publish", (topic, b"y")),
        ("publish_many", (topic, [b"y"])),
        ("subscribe", (topic, "s")),
    ):
        with pytest.raises(ClientClosed):
            client.call(method, *args)


def test_an_idempotent_client_stores_a_redirected_set_once(connect, hub):
    topic = f"every-idempotent-{connect.kind}"
    with Redirector(hub.address) as redirector:
        client = connect(redirector.address, idempotent=True)
        assert client.call("publish_many", topic, [b"a", b"b"]) == [1, 2]
        assert client.call("publish", topic, b"c") == 3
    assert [m.payload for m in connect().call("read", topic)] == [b"a", b"b", b"c"]


def test_a_subscription_resumes_after_a_hub_restart_from_its_last_ack_without_gap_or_duplicate(
    connect, own_hub
):
    own_hub.start()
    topic = f"every-restart-{connect.kind}"
    client = connect(own_hub.address, reconnect_timeout=60)
    subscription = client.subscribe(topic, "s", start="earliest")
    client.call("publish_many", topic, [b"1", b"2", b"3"])
    first, second = subscription.receive(), subscription.receive()
    subscription.ack(first)
    assert (first.seq, second.seq) == (1, 2)
    own_hub.kill()
    own_hub.restart()
    client.call("publish", topic, b"4")
    got = [subscription.receive() for _ in range(2)]
    assert [m.seq for m in got] == [3, 4], "2 was handed over already: the client drops it again"
