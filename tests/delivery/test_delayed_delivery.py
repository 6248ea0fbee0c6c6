"""Delayed delivery (protocol/schedule.py): stored at once, delivered no earlier than its time.

The rules under a Clock first (an exclusive subscription's cursor holds a delayed message
and the ones after it until then), then real hubs: the blocking client's deliver_after,
a SIGKILL in the middle of thousands of delayed messages, and `hedwig publish --delay`.
"""

import datetime
import random
import time

import pytest
from zope.interface import implementer

from hedwig.client import Client
from hedwig.delivery.interface import IRelayPolicy
from hedwig.protocol.compression import encode_published_set
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.schedule import (
    DELIVER_AT,
    DUE,
    EXPIRE_AT,
    EXPIRED,
    LATER,
    EntrySchedule,
    scheduled_properties,
)
from hedwig.testing.hubprocess import HubProcess
from tests.cli.test_cli import hedwig, lines
from tests.delivery.harness import Harness, fired
from tests.delivery.shared_harness import MemberChannel, SharedHarness
from tests.delivery.test_shared import row


def entry_bytes(first, properties, codec=None):
    payloads = [b"m%d" % i for i in range(len(properties))]
    if codec is None:
        message_set = encode_message_set(payloads, properties)
    else:
        message_set = encode_published_set(payloads, properties, codec)
    return encode_entry_header(first, len(properties), 0, b"r", first) + message_set


def delivered(channel):
    return [(first, last) for _, first, last, _ in channel.deliveries]


# -- the schedule of an entry -------------------------------------------------------------


def test_scheduled_properties_are_absolute_milliseconds_and_keep_the_others():
    assert scheduled_properties(None, 100.0) is None
    assert scheduled_properties({"a": b"1"}, 100.0, deliver_after=2.5, ttl=10) == {
        "a": b"1",
        DELIVER_AT: 102_500,
        EXPIRE_AT: 110_000,
    }
    assert scheduled_properties(None, 100.0, deliver_at=5000.25) == {DELIVER_AT: 5_000_250}
    with pytest.raises(ValueError, match="not both"):
        scheduled_properties(None, 1.0, deliver_after=1, deliver_at=2)
    with pytest.raises(ValueError, match="deliver_after"):
        scheduled_properties(None, 1.0, deliver_after=-1)
    with pytest.raises(ValueError, match="ttl"):
        scheduled_properties(None, 1.0, ttl=0)


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_an_entry_schedule_reads_each_message_time_and_none_without_any(codec):
    times = [{}, {DELIVER_AT: 5000}, {"x": 3, EXPIRE_AT: 9000}, {DELIVER_AT: 7000}]
    schedule = EntrySchedule.of(entry_bytes(1, times, codec))
    assert list(schedule.deliver_at) == [0, 5000, 0, 7000]
    assert list(schedule.expire_at) == [0, 0, 9000, 0]
    assert schedule.run_at(0, 4, 4999) == (DUE, 1, 0)
    assert schedule.run_at(1, 4, 4999) == (LATER, 2, 5000)
    assert schedule.run_at(2, 4, 5000) == (DUE, 3, 0)
    assert schedule.run_at(3, 4, 5000) == (LATER, 4, 7000)
    assert schedule.run_at(2, 4, 9000) == (EXPIRED, 3, 0)
    assert schedule.run_at(0, 2, 7000) == (DUE, 2, 0)
    assert EntrySchedule.of(entry_bytes(1, [{"x": 1}, {}], codec)) is None
    # a property of the name that is not a typed int is no time (a foreign publisher's)
    assert EntrySchedule.of(entry_bytes(1, [{DELIVER_AT: b"soon"}], codec)) is None


# -- an exclusive subscription's cursor, under a Clock ---------------------------------------


def test_a_cursor_holds_a_delayed_message_and_those_after_it_until_its_time(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    h.log.append_entry(3, lambda first: entry_bytes(first, [{}, {DELIVER_AT: 5000}, {}]))
    assert delivered(channel) == [(1, 1)], "the message before it goes at once"
    h.clock.advance(4.9)
    assert delivered(channel) == [(1, 1)]
    h.manager.consume("t", "s", 1)
    h.clock.advance(0.2)
    assert delivered(channel) == [(1, 1), (2, 3)]
    assert h.manager.describe("t")[0]["consumed_seq"] == 1, "consumed only up to what was acknowledged"
    h.publish(count=2)  # not delayed: goes on after it
    assert delivered(channel)[-1] == (4, 5)


def test_a_stopped_cursor_leaves_no_timer_behind(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    h.log.append_entry(1, lambda first: entry_bytes(first, [{DELIVER_AT: 60_000}]))
    assert h.clock.getDelayedCalls(), "it waits for the message's time"
    h.manager.channel_lost(channel)
    assert not [call for call in h.clock.getDelayedCalls() if call.active()]


# -- real hubs ---------------------------------------------------------------------------


def received_on_time(subscription, count, timeout=30.0):
    """(seq -> (message, wall time it came)) of `count` messages, each acknowledged."""
    got = {}
    while len(got) < count:
        message = subscription.receive(timeout=timeout)
        assert message is not None, f"only {len(got)} of {count} came"
        got[message.seq] = (message, time.time())
        subscription.ack(message)
    return got


def early(got):
    """The seq-ids delivered before their time."""
    return [
        seq
        for seq, (message, at) in got.items()
        if DELIVER_AT in message.properties and at * 1000 < message.properties[DELIVER_AT]
    ]


def test_deliver_after_on_an_exclusive_subscription_of_a_real_hub(hub):
    with Client(hub.address) as client:
        subscription = client.subscribe("delayed.one", "s", start="earliest")
        before = client.publish("delayed.one", b"now")
        later = client.publish("delayed.one", b"later", deliver_after=1.5)
        after = client.publish("delayed.one", b"after")
        assert (before, later, after) == (1, 2, 3), "stored at once, numbered as published"
        got = received_on_time(subscription, 3)
        assert [got[seq][0].payload for seq in (1, 2, 3)] == [b"now", b"later", b"after"]
        assert early(got) == []
        assert got[1][1] < got[2][1] <= got[3][1]
        assert got[2][0].properties[DELIVER_AT] >= (got[1][1] + 1.0) * 1000


def test_a_sigkill_among_thousands_of_delayed_messages_loses_none_and_delivers_none_early(tmp_path):
    count, spread = 2000, 4.0
    process = HubProcess(tmp_path / "data").start()
    try:
        with Client(process.address) as client:
            client.subscribe("delayed.kill", "s", start="earliest").close()
            start = time.time()
            rng = random.Random(39)
            # in publish order, so that an exclusive subscription's one stream is not held
            # back behind a later time (that ordering is the other test's)
            delays = sorted(rng.uniform(0, spread) for _ in range(count))
            properties = [scheduled_properties(None, start, deliver_after=d) for d in delays]
            for i in range(0, count, 100):
                client.publish_many(
                    "delayed.kill", [b"%d" % n for n in range(i, i + 100)], properties[i : i + 100]
                )
            subscription = client.subscribe("delayed.kill", "s", mode="attach")
            first_half = received_on_time(subscription, count // 2)
        process.kill()
        process.restart()
        with Client(process.address) as client:
            subscription = client.subscribe("delayed.kill", "s", mode="attach")
            rest = {}
            while len(set(first_half) | set(rest)) < count:
                rest.update(received_on_time(subscription, 1))
        assert early(first_half) == [] and early(rest) == []
        assert set(first_half) | set(rest) == set(range(1, count + 1))
    finally:
        process.stop()


def test_hedwig_publish_delay_stores_at_once_and_delivers_after_the_delay(hub):
    started = time.time()
    assert lines(hedwig("publish", "delayed.cli", "soon", "--delay", "1500ms", hub=hub)) == [
        "published 1 message to delayed.cli: seq-id 1"
    ]
    with Client(hub.address) as client:
        (stored,) = client.read("delayed.cli")
        assert started * 1000 + 1500 <= stored.properties[DELIVER_AT] <= time.time() * 1000 + 1500
        subscription = client.subscribe("delayed.cli", "s", start="earliest")
        got = received_on_time(subscription, 1)
        assert early(got) == []
    at = datetime.datetime.fromtimestamp(time.time() + 3600, datetime.UTC).replace(microsecond=0)
    published = hedwig(
        "publish", "delayed.cli", "hour", "--deliver-at", at.isoformat(), "--ttl", "2h", hub=hub
    )
    assert lines(published) == ["published 1 message to delayed.cli: seq-id 2"]
    with Client(hub.address) as client:
        (stored,) = client.read("delayed.cli", 2)
        assert stored.properties[DELIVER_AT] == int(at.timestamp() * 1000)
        assert 7200_000 <= stored.properties[EXPIRE_AT] - started * 1000 <= 7200_000 + 60_000
    refused = hedwig("publish", "delayed.cli", "x", "--delay", "soon", hub=hub)
    assert refused.returncode == 2 and b"expected a duration" in refused.stderr
    both = hedwig(
        "publish", "delayed.cli", "x", "--delay", "1s", "--deliver-at", "2030-01-01T00:00:00Z", hub=hub
    )
    assert both.returncode == 2 and b"not allowed with" in both.stderr


# -- shared subscriptions, under a Clock ----------------------------------------------------


def shared_publish(h, times):
    """Publish one entry of len(times) messages, each with its DELIVER_AT (None: none)."""
    properties = [{} if at is None else {DELIVER_AT: at} for at in times]
    payloads = [b"%d" % i for i in range(len(times))]
    return fired(h.topic_log.append(encode_message_set(payloads, properties), len(times)))


def test_a_shared_subscription_holds_a_delayed_run_aside_and_delivers_the_rest(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    shared_publish(h, [None, 5000, 5000, None, 3000])
    assert a.take() == [1, 4], "the messages after a delayed one go on"
    assert row(h)["delayed"] == 3
    h.manager.acknowledge("t", "w", a, [(1, 1), (4, 4)])
    assert row(h)["consumed_seq"] == 1, "the floor stays below the delayed message"
    h.clock.advance(2.9)
    assert a.take() == []
    h.clock.advance(0.2)
    assert a.take() == [5]
    h.clock.advance(2.0)
    assert a.take() == [2, 3]
    assert row(h)["delayed"] == 0
    h.manager.acknowledge("t", "w", a, [(2, 3), (5, 5)])
    assert row(h)["consumed_seq"] == 5


def test_a_restarted_dispatcher_finds_its_delayed_messages_again_from_the_floor(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    shared_publish(h, [None, 4000, None])
    assert a.take() == [1, 3]
    h.manager.acknowledge("t", "w", a, [(1, 1), (3, 3)])
    fired(h.manager.channel_lost(a))  # the last member leaves: the dispatcher's state goes
    b = h.member_channel()
    h.join("w", b, window=100)
    h.turn()
    assert b.take() == [], "acknowledged above the floor stays done; the delayed one waits"
    h.clock.advance(4.1)
    assert b.take() == [2]


def test_at_max_delayed_runs_new_messages_wait_for_the_earliest_and_none_is_lost(tmp_path):
    h = SharedHarness(tmp_path, max_delayed_runs=2)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    shared_publish(h, [3000, 1000, 2000, None])
    assert a.take() == [] and row(h)["delayed"] == 2, "two runs held, the third waits unread"
    h.clock.advance(1.05)
    assert a.take() == [2, 4], "the earliest went, the third run is held now, the one after it is due"
    assert row(h)["delayed"] == 2
    h.clock.advance(1.0)
    assert a.take() == [3]
    h.clock.advance(1.0)
    assert a.take() == [1]


def test_ten_thousand_delayed_messages_on_a_shared_subscription_survive_a_sigkill(tmp_path):
    """10k messages of random delays over 0-5 s, published out of time order: none comes
    early, and a SIGKILL of the hub half-way loses none (the floor stays below what is
    held, so the restarted hub finds the rest again in the ledger)."""
    count, spread = 10_000, 5.0
    process = HubProcess(tmp_path / "data").start()
    try:
        with Client(process.address) as client:
            client.subscribe("delayed.shared", "w", kind="shared", start="earliest").close()
            rng = random.Random(3939)
            start = time.time()
            for i in range(0, count, 500):
                times = [
                    scheduled_properties(None, start, deliver_after=rng.uniform(0, spread))
                    for _ in range(500)
                ]
                client.publish_many("delayed.shared", [b"%d" % n for n in range(i, i + 500)], times)
            member = client.subscribe("delayed.shared", "w", kind="shared", mode="attach", window=1000)
            first_half = received_on_time(member, count // 2)
        process.kill()
        process.restart()
        with Client(process.address) as client:
            member = client.subscribe("delayed.shared", "w", kind="shared", mode="attach", window=1000)
            rest = {}
            while len(set(first_half) | set(rest)) < count:
                rest.update(received_on_time(member, 1))
        assert early(first_half) == [] and early(rest) == []
        assert set(first_half) | set(rest) == set(range(1, count + 1))
    finally:
        process.stop()


def test_a_key_shared_subscription_keeps_seq_id_order_and_waits_for_a_delayed_message(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, kind="key_shared", window=100)
    h.turn()
    shared_publish(h, [None, 2000, None])
    assert a.take() == [1], "keys keep their order: what follows waits behind it"
    h.clock.advance(1.9)
    assert a.take() == []
    h.clock.advance(0.2)
    assert a.take() == [2, 3]


def test_a_filtered_exclusive_subscription_waits_for_a_delayed_message_that_passes(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel, filter="x = 1")
    h.turn()
    h.log.append_entry(3, lambda first: entry_bytes(first, [{"x": 1}, {"x": 1, DELIVER_AT: 5000}, {"x": 2}]))
    assert delivered(channel) == [(1, 1)]
    h.clock.advance(4.9)
    assert delivered(channel) == [(1, 1)]
    h.clock.advance(0.2)
    assert delivered(channel) == [(1, 1), (2, 2)]


# -- message expiry (TTL) ------------------------------------------------------------------


def test_a_cursor_passes_over_expired_messages_and_counts_them(tmp_path):
    h = Harness(tmp_path)
    channel = MemberChannel(h.manager)  # (records deliveries with gaps between them)
    h.subscribe("s", channel)
    h.turn()
    h.clock.advance(2.0)
    h.log.append_entry(4, lambda first: entry_bytes(first, [{EXPIRE_AT: 1000}, {}, {EXPIRE_AT: 1500}, {}]))
    assert channel.seqs() == [2, 4]
    assert h.manager.stats()["ttl_expired"] == 2
    h.manager.consume("t", "s", 4)
    assert h.manager.describe("t")[0]["consumed_seq"] == 4, "the expired ones count as consumed"


def test_a_delayed_message_whose_ttl_passes_first_is_never_delivered(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    h.log.append_entry(2, lambda first: entry_bytes(first, [{DELIVER_AT: 3000, EXPIRE_AT: 2000}, {}]))
    assert delivered(channel) == []
    h.clock.advance(3.1)
    assert delivered(channel) == [(2, 2)]
    assert h.manager.stats()["ttl_expired"] == 1


def expiring_publish(h, expire_at):
    properties = [{} if at is None else {EXPIRE_AT: at} for at in expire_at]
    payloads = [b"%d" % i for i in range(len(expire_at))]
    return fired(h.topic_log.append(encode_message_set(payloads, properties), len(expire_at)))


def test_a_shared_subscription_acknowledges_expired_messages_without_a_dead_letter_topic(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    h.clock.advance(2.0)
    expiring_publish(h, [1000, None, 1000])
    assert a.take() == [2]
    h.manager.acknowledge("t", "w", a, [(2, 2)])
    assert row(h)["consumed_seq"] == 3
    assert h.manager.stats()["ttl_expired"] == 2 and h.dead_letters == []


def test_a_shared_subscription_dead_letters_a_message_that_expires_while_held_back(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100, max_deliveries=3, dead_letter_topic="t.expired")
    h.turn()
    properties = [{DELIVER_AT: 2000, EXPIRE_AT: 1000, "k": b"v"}, {}]
    fired(h.topic_log.append(encode_message_set([b"late", b"now"], properties), 2))
    assert a.take() == [2]
    h.clock.advance(2.1)
    assert a.take() == [], "it expired before its time"
    ((topic, message_set),) = h.dead_letters
    assert topic == "t.expired"
    (letter,) = decode_entry("t.expired", encode_entry_header(1, 1, 0, b"r", 1) + message_set)
    assert letter.payload == b"late" and letter.properties["k"] == b"v"
    assert EXPIRE_AT not in letter.properties, "it is not expired again in the dead-letter topic"
    h.manager.acknowledge("t", "w", a, [(2, 2)])
    assert row(h)["consumed_seq"] == 2 and h.manager.stats()["ttl_expired"] == 1


def test_ttl_on_a_real_hub_counts_and_dead_letters_what_expired_undelivered(hub):
    with Client(hub.address) as client:
        before = client.stats()["delivery"]["ttl_expired"]
        member = client.subscribe(
            "ttl.real", "w", kind="shared", max_deliveries=5, dead_letter_topic="ttl.dlq"
        )
        letters = client.subscribe("ttl.dlq", "reader", start="earliest")
        client.publish("ttl.real", b"too late", deliver_after=1.0, ttl=0.5)
        client.publish("ttl.real", b"fine", ttl=60)
        (got,) = received_on_time(member, 1).values()
        assert got[0].payload == b"fine"
        letter = letters.receive(timeout=30)
        assert letter.payload == b"too late"
        assert client.stats()["delivery"]["ttl_expired"] == before + 1


def test_the_hub_default_ttl_expires_messages_without_their_own(tmp_path):
    h = Harness(tmp_path, message_ttl_ms=1000)
    channel = MemberChannel(h.manager)
    h.subscribe("s", channel)
    h.turn()
    h.publish(count=2)  # published at 1 s (the test log's time): due until 2 s
    assert channel.seqs() == [1, 2]
    h.clock.advance(5.0)
    h.publish(count=2)  # published at 1.001 s: expired by now
    h.log.append_entry(2, lambda first: entry_bytes(first, [{EXPIRE_AT: 10_000}, {}]))
    assert channel.seqs() == [1, 2, 5], "its own TTL wins over the hub's"
    assert h.manager.stats()["ttl_expired"] == 3


def test_a_shared_subscription_applies_the_hub_default_ttl(tmp_path):
    h = SharedHarness(tmp_path, message_ttl_ms=1000)
    a = h.member_channel()
    h.join("w", a, window=1)
    h.turn()
    h.publish(1)
    assert a.take() == [1]
    h.publish(2)  # the member has no room: they wait, published at the clock's 0 s
    h.clock.advance(1.5)
    h.manager.acknowledge("t", "w", a, [(1, 1)])
    h.turn()
    assert a.take() == [], "expired while waiting"
    assert row(h)["consumed_seq"] == 3 and h.manager.stats()["ttl_expired"] == 2


@implementer(IRelayPolicy)
class RelayEverything:
    """A region's relay policy as delivery sees it: `relay` is a relay subscriber, sent
    every entry (none came from its side)."""

    def entry_filter(self, subscriber_id):
        return (lambda entry: False) if subscriber_id == "relay" else None

    def subscription_changed(self, topic, subscriber_id, added):
        pass


def test_a_region_relay_sends_delayed_and_expired_messages_on_at_once(tmp_path):
    h = Harness(tmp_path)
    h.manager.use_relay_policy(RelayEverything())
    relay, local = h.channel(), h.channel()
    h.subscribe("relay", relay)
    h.subscribe("local", local, handle=2)
    h.turn()
    h.clock.advance(2.0)
    h.log.append_entry(3, lambda first: entry_bytes(first, [{DELIVER_AT: 60_000}, {EXPIRE_AT: 1000}, {}]))
    assert delivered(relay) == [(1, 3)], "relayed whole, its times with it"
    assert delivered(local) == []


def test_a_message_given_back_after_its_ttl_passed_is_not_delivered_again(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    expiring_publish(h, [3000, None])
    assert a.take() == [1, 2]
    h.clock.advance(4.0)
    h.manager.acknowledge("t", "w", a, [(2, 2)])
    assert h.manager.reject("t", "w", a, [(1, 1)]) == 1
    h.turn()
    assert a.take() == []
    assert row(h)["consumed_seq"] == 2 and h.manager.stats()["ttl_expired"] == 1


def test_hedwig_describe_shows_the_delayed_messages_a_shared_subscription_holds(hub):
    with Client(hub.address) as client:
        member = client.subscribe("delayed.describe", "w", kind="shared", start="earliest")
        client.publish("delayed.describe", b"in an hour", deliver_after=3600)
        client.publish("delayed.describe", b"now")
        (now,) = received_on_time(member, 1).values()
        assert now[0].payload == b"now"
        shown = lines(hedwig("describe", "delayed.describe", hub=hub))
        assert "    delayed 1: held until their time" in shown
