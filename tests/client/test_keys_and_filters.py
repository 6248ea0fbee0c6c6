"""Message keys, typed properties and server-side filters, through each of the three
clients (tests/client/every_client.py) against a real hub process: what is published
with a key and typed properties comes back as it was; a subscription's filter is run by
the hub, kept with the subscription, changed only by a SUBSCRIBE that says so, and its
consumed position moves past what it passes over."""

import struct

import pytest

from hedwig.client import Client
from hedwig.client.errors import InvalidMessageFilter, ResubscribeRequired
from hedwig.testing.polling import wait_until
from tests.client import test_every_client

connect = test_every_client.connect  # the fixture: each client in turn, against the module's hub
TYPED = {"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"\x00\xff"}


def _subscriber_row(client, topic, subscriber_id):
    rows = client.call("subscriptions", topic)
    return next(row for row in rows if row["subscriber_id"] == subscriber_id)


# -- keys and typed properties --------------------------------------------------------------


def test_keys_and_typed_properties_come_back_as_published(connect):
    client = connect()
    topic = f"keys-typed-{connect.kind}"
    subscription = client.subscribe(topic, "s", start="earliest")
    assert client.call("publish", topic, b"one", TYPED, key="k1") == 1
    assert client.call("publish", topic, b"two", key=b"\x01k2") == 2
    assert client.call(
        "publish_many", topic, [b"three", b"four", b"five"], [{"n": -3}, None, {"s": "x"}], ["a", None, b"c"]
    ) == [3, 4, 5]
    got = [subscription.receive() for _ in range(5)]
    assert [(m.seq, m.payload, m.key) for m in got] == [
        (1, b"one", b"k1"),
        (2, b"two", b"\x01k2"),
        (3, b"three", b"a"),
        (4, b"four", None),
        (5, b"five", b"c"),
    ]
    assert got[0].properties == TYPED
    assert [type(v) for v in got[0].properties.values()] == [int, float, bool, str, bytes]
    assert got[2].properties == {"n": -3} and got[4].properties == {"s": "x"}
    read = client.call("read", topic, 1, 5)
    assert [(m.key, m.properties) for m in read] == [(m.key, m.properties) for m in got]


def test_a_compressing_idempotent_publisher_keeps_keys_and_types(connect, hub):
    client = connect(idempotent=True, compression="gzip")
    topic = f"keys-idempotent-{connect.kind}"
    client.call("publish", topic, b"p", {"n": 7, "f": 0.25}, key="only")
    client.call("publish_many", topic, [b"q", b"r"], [{"ok": False}, {"ok": True}], keys=["x", "y"])
    with Client(hub.address) as reader:
        read = reader.read(topic, 1, 3)
    assert [(m.payload, m.key, m.properties) for m in read] == [
        (b"p", b"only", {"n": 7, "f": 0.25}),
        (b"q", b"x", {"ok": False}),
        (b"r", b"y", {"ok": True}),
    ]


def test_an_old_clients_message_set_is_still_accepted(hub):
    """A set as publishers wrote it before keys and typed properties: version 1, flags 1
    (untyped properties), no key array."""
    blob = struct.pack("!H", 1) + b"k" + struct.pack("!I", 2) + b"v1"
    lengths = struct.pack("!II", 3, len(blob))
    old_set = struct.pack("!BBI", 1, 1, 1) + lengths + b"old" + blob
    with Client(hub.address) as client:
        assert client.publish_set("keys-old-set", old_set) == [1]
        (message,) = client.read("keys-old-set", 1, 1)
    assert (message.payload, message.key, message.properties) == (b"old", None, {"k": b"v1"})


def test_a_bad_key_is_refused_before_anything_is_sent(connect):
    client = connect()
    with pytest.raises(ValueError, match="at least one byte"):
        client.call("publish", f"keys-bad-{connect.kind}", b"p", key=b"")
    with pytest.raises(TypeError, match="a message key is bytes or str, not int"):
        client.call("publish_many", f"keys-bad-{connect.kind}", [b"p"], keys=[42])
    with pytest.raises(TypeError, match="a message key is bytes or str, not float"):
        client.call("publish", f"keys-bad-{connect.kind}", b"p", key=1.5)


# -- filters ----------------------------------------------------------------------------------


def test_a_filter_delivers_only_what_it_selects_and_moves_past_the_rest(connect):
    client = connect()
    topic = f"filter-select-{connect.kind}"
    properties = [{"color": "red", "n": 150}, {"color": "blue", "n": 150}, {"color": "red", "n": 20}, None]
    properties += [{"color": "red", "n": 199}] + [{"color": "blue"}] * 5
    client.call("publish_many", topic, [b"%d" % i for i in range(1, 11)], properties)
    subscription = client.subscribe(
        topic, "red", start="earliest", filter="color = 'red' AND n BETWEEN 100 AND 200"
    )
    first = subscription.receive()
    second = subscription.receive()
    assert [(first.seq, first.payload), (second.seq, second.payload)] == [(1, b"1"), (5, b"5")]
    subscription.ack(second)
    subscription.close()  # (sends the ack; the hub writes the pointer)
    row = _subscriber_row(client, topic, "red")
    # Seq-ids 6-10 were passed over: consumed, although never delivered.
    assert row["consumed_seq"] == 10
    assert row["filter"] == "color = 'red' AND n BETWEEN 100 AND 200"
    client.call("publish_many", topic, [b"11", b"12"], [{"color": "blue"}, {"color": "red", "n": 100}])
    again = client.subscribe(topic, "red", filter="color = 'red' AND n BETWEEN 100 AND 200")
    assert again.receive().seq == 12


def test_a_filter_reads_the_key(connect):
    client = connect()
    topic = f"filter-key-{connect.kind}"
    subscription = client.subscribe(topic, "s", start="earliest", filter="key LIKE 'user-%'")
    assert subscription.subscription.filter == "key LIKE 'user-%'"
    client.call("publish_many", topic, [b"a", b"b", b"c"], keys=["order-1", "user-7", None])
    message = subscription.receive()
    assert (message.seq, message.key) == (2, b"user-7")


def test_an_invalid_filter_is_refused_naming_its_column(connect):
    client = connect()
    with pytest.raises(InvalidMessageFilter) as refused:
        client.subscribe(f"filter-invalid-{connect.kind}", "s", filter="color = 'red' AND AND n > 1")
    assert "column 19" in str(refused.value)
    assert refused.value.status == 504


def test_another_filter_needs_a_subscribe_that_replaces_it(connect):
    client = connect()
    topic = f"filter-change-{connect.kind}"
    first = client.subscribe(topic, "s", filter="n > 10")
    first.close()
    with pytest.raises(ResubscribeRequired) as refused:
        client.subscribe(topic, "s", filter="n > 20")
    assert "n > 10" in str(refused.value)
    kept = client.subscribe(topic, "s")  # (naming no filter resumes with the one it has)
    assert _subscriber_row(client, topic, "s")["filter"] == "n > 10"
    kept.close()
    replaced = client.subscribe(topic, "s", filter="n > 20", replace_filter=True)
    assert _subscriber_row(client, topic, "s")["filter"] == "n > 20"
    client.call("publish_many", topic, [b"a", b"b", b"c"], [{"n": 15}, {"n": 25}, {"n": 5}])
    selected = replaced.receive()
    assert selected.payload == b"b"
    replaced.ack(selected)
    replaced.close()
    unfiltered = client.subscribe(topic, "s", replace_filter=True)
    assert _subscriber_row(client, topic, "s")["filter"] is None
    client.call("publish", topic, b"d", {"n": 1})
    assert unfiltered.receive().payload == b"d"


def test_a_shared_subscription_filters_and_acknowledges_what_it_passes_over(connect):
    client = connect()
    topic = f"filter-shared-{connect.kind}"
    client.call("publish_many", topic, [b"%d" % i for i in range(1, 9)], [{"n": i} for i in range(1, 9)])
    selector = "n = 2 OR n = 5 OR n = 8"
    member = client.subscribe(topic, "work", kind="shared", start="earliest", filter=selector)
    got = [member.receive() for _ in range(3)]
    assert [m.seq for m in got] == [2, 5, 8]
    for message in got:
        member.ack(message)
    member.close()
    row = _subscriber_row(client, topic, "work")
    assert (row["consumed_seq"], row["filter"], row["kind"]) == (8, selector, "shared")


def test_a_pull_subscription_fetches_only_what_its_filter_selects(connect):
    client = connect()
    topic = f"filter-pull-{connect.kind}"
    properties = [{"ok": i % 3 == 0} for i in range(1, 7)]
    client.call("publish_many", topic, [b"%d" % i for i in range(1, 7)], properties)
    subscription = client.subscribe(topic, "puller", deliver="pull", start="earliest", filter="ok")
    fetched = subscription.fetch(10, 5.0)
    assert [m.seq for m in fetched] == [3, 6]


def test_a_filter_passes_over_a_whole_backlog_so_the_consumed_position_is_not_held_back(connect):
    """A subscriber none of whose messages pass: its consumed seq-id follows the topic's
    last one all the same (pruning and garbage collection are not held back)."""
    client = connect()
    topic = f"filter-none-pass-{connect.kind}"
    client.call("publish_many", topic, [b"%d" % i for i in range(50)], [{"n": i} for i in range(50)])
    subscription = client.subscribe(topic, "picky", start="earliest", filter="n > 1000")
    client.call("publish_many", topic, [b"late"], [{"n": 1}])
    wait_until(lambda: _subscriber_row(client, topic, "picky")["consumed_seq"] == 51, "passed over")
    client.call("publish", topic, b"wanted", {"n": 5000})
    assert subscription.receive().seq == 52


def test_a_filter_is_kept_across_a_hub_restart(own_hub):
    own_hub.start()
    topic = "filter-restart"
    with Client(own_hub.address) as client:
        client.subscribe(topic, "s", filter="color = 'red'").close()
    own_hub.stop()
    own_hub.restart()
    with Client(own_hub.address) as client:
        assert client.subscriptions(topic)[0]["filter"] == "color = 'red'"
        with pytest.raises(ResubscribeRequired):
            client.subscribe(topic, "s", filter="color = 'blue'")
        subscription = client.subscribe(topic, "s")  # (resumed with the filter it has)
        client.publish_many(topic, [b"blue", b"red"], [{"color": "blue"}, {"color": "red"}])
        assert subscription.receive(timeout=30).payload == b"red"
