"""The blocking client against a real hub process on 127.0.0.1."""

import socket
import threading
from datetime import UTC, datetime, timedelta

import pytest

from hedwig.client import (
    Client,
    ClientAlreadySubscribed,
    ClientNotSubscribed,
    CouldNotConnect,
    InvalidSubscriberId,
    InvalidTopic,
    MessageTooLarge,
    NoSuchTopic,
    RequestTimeout,
    Status,
    SubscriptionClosed,
    TopicBusy,
)
from tests.client.redirector import Redirector
from tests.receiving import receive_all


def test_publish_returns_dense_seq_ids_and_messages_keep_their_content(hub):
    with Client(hub.address) as client:
        assert client.publish("content", b"first", {"kind": b"greeting", "lang": "en"}) == 1
        assert client.publish_many("content", [b"a", b"", b"c" * 1000]) == [2, 3, 4]
        assert client.publish_many("content", [b"p", b"q"], [None, {"k": b"v"}]) == [5, 6]
        before = datetime.now(UTC)
        sub = client.subscribe("content", "reader", start="earliest")
        messages = receive_all(sub, 6)
    assert [m.seq for m in messages] == [1, 2, 3, 4, 5, 6]
    assert [m.payload for m in messages] == [b"first", b"a", b"", b"c" * 1000, b"p", b"q"]
    assert messages[0].properties == {"kind": b"greeting", "lang": "en"}  # (a str value comes back a str)
    assert [m.properties for m in messages[1:]] == [{}, {}, {}, {}, {"k": b"v"}]
    assert all(m.topic == "content" and m.origin_seq == m.seq for m in messages)
    assert all(abs(m.publish_time - before) < timedelta(minutes=1) for m in messages)


@pytest.mark.parametrize(
    "start, expected",
    [
        (None, [11, 12]),  # a new subscription: after the last seq-id
        ("latest", [11, 12]),
        ("earliest", list(range(1, 13))),
        (7, list(range(7, 13))),
    ],
)
def test_each_start_point(hub, start, expected):
    topic = f"start-{start}"
    with Client(hub.address) as client:
        client.publish_many(topic, [b"%d" % i for i in range(1, 6)])
        client.publish_many(topic, [b"%d" % i for i in range(6, 11)])
        sub = client.subscribe(topic, "s", start=start)
        client.publish_many(topic, [b"11", b"12"])
        messages = receive_all(sub, len(expected))
        client.publish(topic, b"marker")  # nothing else came before it
        assert sub.receive(timeout=30).payload == b"marker"
    assert [m.seq for m in messages] == expected
    assert [m.payload for m in messages] == [b"%d" % s for s in expected]


def test_start_at_a_time(hub):
    with Client(hub.address) as client:
        client.publish_many("timed", [b"old1", b"old2"])
        old = client.read("timed")[-1].publish_time
        cut = old + timedelta(microseconds=1)
        # A later publish gets a later hub time; wait for it by publishing until it does.
        while True:
            seq = client.publish("timed", b"new")
            if client.read("timed", seq, seq)[0].publish_time >= cut:
                break
        sub = client.subscribe("timed", "s", start=cut)
        first = sub.receive(timeout=10)
    assert first.publish_time >= cut and first.payload == b"new"


def test_a_subscriber_resumes_after_what_it_acknowledged(hub):
    with Client(hub.address) as client:
        client.publish_many("resume", [b"%d" % i for i in range(1, 11)])
        sub = client.subscribe("resume", "s", start="earliest")
        for message in receive_all(sub, 4):
            sub.ack(message)
        sub.close()
        again = client.subscribe("resume", "s")
        message = again.receive(timeout=10)
    assert message.seq == 5


def test_a_hundred_subscriptions_share_one_connection(hub):
    with Client(hub.address) as client:
        subs = [client.subscribe(f"many-{i % 10}", f"s{i}") for i in range(100)]
        for i in range(10):
            client.publish_many(f"many-{i}", [b"one", b"two"])
        for sub in subs:
            assert [m.payload for m in receive_all(sub, 2)] == [b"one", b"two"]
        assert len(client._connections) == 1
        stats = client.stats()
    assert stats["connections"]["open"] >= 1
    assert stats["delivery"]["subscriptions"] >= 100


def test_iteration_yields_in_order_until_closed(hub):
    with Client(hub.address) as client:
        sub = client.subscribe("iterate", "s")
        client.publish_many("iterate", [b"%d" % i for i in range(50)])
        seen = []
        for message in sub:
            seen.append(message.seq)
            sub.ack(message)
            if len(seen) == 50:
                sub.close()
    assert seen == list(range(1, 51))


def test_receive_batch_takes_what_is_there_in_order(hub):
    with Client(hub.address) as client:
        sub = client.subscribe("batches", "s")
        assert sub.receive_batch(timeout=0.1) == []
        client.publish_many("batches", [b"%d" % i for i in range(1, 301)])
        seen = []
        while len(seen) < 300:
            batch = sub.receive_batch(timeout=10, max_messages=128)
            assert 1 <= len(batch) <= 128
            seen += [m.seq for m in batch]
            sub.ack(batch[-1])
    assert seen == list(range(1, 301))


def test_the_first_reachable_hub_of_a_list_is_used(hub):
    with socket.socket() as refusing:
        refusing.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        down = f"127.0.0.1:{refusing.getsockname()[1]}"
        with Client([down, hub.address]) as client:
            assert client.publish("failover", b"x") == 1
        with pytest.raises(CouldNotConnect, match="no hub reachable"):
            Client(down)


def test_a_hub_that_never_answers_times_out(hub):
    with (
        Redirector(answer=False) as silent,
        Client(silent.address, timeout=0.3) as client,
        pytest.raises(RequestTimeout) as error,
    ):
        client.publish("t", b"x")
    assert error.value.status is Status.UNCERTAIN_STATE


def test_closing_a_subscription_from_another_thread_ends_its_iteration(hub):
    with Client(hub.address) as client:
        sub = client.subscribe("close-elsewhere", "s")
        client.publish("close-elsewhere", b"one")
        seen = []
        got_one = threading.Event()

        def consume():
            for message in sub:
                seen.append(message.payload)
                sub.ack(message)
                got_one.set()

        reader = threading.Thread(target=consume)
        reader.start()
        # The reader got the message and waits for the next; close it from here.
        assert got_one.wait(10)
        sub.close()
        reader.join(10)
        assert not reader.is_alive()
    assert seen == [b"one"]


def test_threads_share_a_client(hub):
    with Client(hub.address) as client:
        sub = client.subscribe("threads", "s")
        results = {}

        def publisher(n):
            results[n] = [client.publish("threads", b"%d" % n) for _ in range(50)]

        threads = [threading.Thread(target=publisher, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        received = receive_all(sub, 200)
        for thread in threads:
            thread.join()
    seqs = sorted(s for r in results.values() for s in r)
    assert seqs == list(range(1, 201))
    assert [m.seq for m in received] == list(range(1, 201))


def test_read_range_returns_raw_entries_and_read_decodes_them(hub):
    with Client(hub.address) as client:
        client.publish_many("ranges", [b"a", b"b", b"c"])
        client.publish_many("ranges", [b"d", b"e"])
        reply = client.read_range("ranges", 2, 4)
        assert (reply.first_seq, reply.last_seq) == (1, 5)
        assert [(start, stop) for start, stop, _ in reply.entries] == [(1, 3), (0, 1)]
        assert [m.payload for m in client.read("ranges", 2, 4)] == [b"b", b"c", b"d"]
        assert [m.seq for m in client.read("ranges")] == [1, 2, 3, 4, 5]
        with pytest.raises(NoSuchTopic):
            client.read_range("never-published", 1)


def test_admin_reads(hub):
    with Client(hub.address) as client:
        client.publish_many("admin", [b"x"] * 3)
        sub = client.subscribe("admin", "watcher", start="earliest")
        receive_all(sub, 3)
        sub.close()
        assert "admin" in client.topics()
        info = client.describe("admin")
    assert (info["topic"], info["last_seq"]) == ("admin", 3)
    [watcher] = [s for s in info["subscribers"] if s["subscriber_id"] == "watcher"]
    assert (watcher["consumed_seq"], watcher["backlog"]) == (3, 0)


def test_typed_errors_carry_the_hubs_status(hub):
    with Client(hub.address) as client:
        with pytest.raises(InvalidTopic) as bad_topic:
            client.publish("no spaces", b"x")
        assert bad_topic.value.status is Status.INVALID_TOPIC
        assert "no spaces" in str(bad_topic.value)
        with pytest.raises(InvalidSubscriberId):
            client.subscribe("errors", "__relay")
        with pytest.raises(ClientNotSubscribed):
            client.subscribe("errors", "nobody", mode="attach")
        client.subscribe("errors", "one", mode="create").close()
        with pytest.raises(ClientAlreadySubscribed):
            client.subscribe("errors", "one", mode="create")
        with pytest.raises(NoSuchTopic):
            client.describe("errors-none")
        with pytest.raises(MessageTooLarge) as too_large:
            client.publish("errors", b"x" * ((1 << 20) + 1))
        assert too_large.value.status is Status.MESSAGE_TOO_LARGE
        # After all that the connection still serves.
        assert client.publish("errors", b"fine") == 1


def test_a_subscription_attached_elsewhere_is_busy_unless_forced(hub):
    with Client(hub.address) as first, Client(hub.address) as second:
        old = first.subscribe("busy", "s")
        with pytest.raises(TopicBusy):
            second.subscribe("busy", "s")
        new = second.subscribe("busy", "s", force_attach=True)
        with pytest.raises(SubscriptionClosed, match="forced"):
            old.receive(timeout=10)
        second.publish("busy", b"after")
        assert new.receive(timeout=10).payload == b"after"


def test_unsubscribe_forgets_the_position(hub):
    with Client(hub.address) as client:
        client.publish_many("unsub", [b"1", b"2"])
        sub = client.subscribe("unsub", "s", start="earliest")
        receive_all(sub, 2)
        client.unsubscribe("unsub", "s")
        assert sub.closed
        with pytest.raises(ClientNotSubscribed):
            client.subscribe("unsub", "s", mode="attach")
        with pytest.raises(ClientNotSubscribed):
            client.unsubscribe("unsub", "s")
