"""Shared subscriptions in the delivery manager, on a Clock over the real topic log:
members split the messages by their free windows, per-message acknowledgements move the
consumed seq-id, and what is not acknowledged (timeout, NACK, a member leaving) goes out
again with its delivery count, then to the dead-letter topic."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.delivery.dead_letters import DELIVERIES, ORIGINAL_SEQ, ORIGINAL_TOPIC, SUBSCRIPTION
from hedwig.protocol import Status, SubscriptionEvent
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.messageset import encode_message_set, parse_message_set
from tests.delivery.harness import failure_of, fired
from tests.delivery.shared_harness import SharedHarness


def refusal(h, sid, channel, handle=1, **kw):
    failure = failure_of(h.manager.subscribe(h.topic_log, channel, handle, h.request(sid, **kw)))
    assert failure.check(SubscribeError), failure
    return failure.value.status


def row(h, sid="w"):
    return next(r for r in h.manager.describe("t") if r["subscriber_id"] == sid)


def test_members_split_the_messages_each_one_to_one_member_in_turn(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, window=100)
    h.join("w", b, window=100)
    h.turn()
    for _ in range(10):
        h.publish(10)
    got_a, got_b = a.seqs(), b.seqs()
    assert sorted(got_a + got_b) == list(range(1, 101)), "each message to exactly one member"
    # The first entry found both idle: half each. Then each holds some: whole entries, in turn.
    assert got_a == [*range(1, 6), *[s for e in (1, 3, 5, 7, 9) for s in range(e * 10 + 1, e * 10 + 11)]]
    assert got_b == [*range(6, 11), *[s for e in (2, 4, 6, 8) for s in range(e * 10 + 1, e * 10 + 11)]]
    r = row(h)
    assert (r["kind"], r["members"], r["pending"], r["state"]) == ("shared", 2, 100, "shared")


@pytest.mark.parametrize("members", [2, 3, 4])
def test_a_small_publish_is_spread_over_the_idle_members(tmp_path, members):
    """Members waiting for work share the first publish: none is left idle while
    another holds several messages of it."""
    h = SharedHarness(tmp_path)
    channels = [h.member_channel() for _ in range(members)]
    for channel in channels:
        h.join("w", channel, window=100)
    h.turn()
    h.publish(4)
    got = [channel.seqs() for channel in channels]
    assert sorted(seq for seqs in got for seq in seqs) == [1, 2, 3, 4]
    assert max(map(len, got)) == -(-4 // members)  # as even as it can be
    assert all(got)


class HeldSubscriptionWrites:
    """A metadata store whose subscription writes wait for `release()` (a slow store)."""

    def __init__(self, store):
        self._store = store
        self._held = []

    def __getattr__(self, name):
        return getattr(self._store, name)

    def put_subscription(self, *args):
        from twisted.internet.defer import Deferred

        waiting = Deferred()
        self._held.append((waiting, args))
        return waiting

    def release(self):
        held, self._held = self._held, []
        for waiting, args in held:
            waiting.callback(fired(self._store.put_subscription(*args)))


def test_members_joining_while_the_subscription_is_being_created_wait_and_all_join(tmp_path):
    """Workers started at the same moment: the first creates the shared subscription,
    the others, arriving while its record is written, join it once it is (never
    TOPIC_BUSY)."""
    from hedwig.meta.sqlite_store import SqliteMetadataStore

    store = HeldSubscriptionWrites(SqliteMetadataStore(tmp_path / "meta.db"))
    h = SharedHarness(tmp_path, metadata=store)
    channels = [h.member_channel() for _ in range(3)]
    joining = [
        h.manager.subscribe(h.topic_log, channel, 1, h.request("w", kind="shared", window=100))
        for channel in channels
    ]
    answers = []
    for d in joining:
        d.addBoth(answers.append)
    assert answers == []  # (the record is being written: nobody is answered, nobody refused)
    store.release()
    assert [answer["consumed_seq"] for answer in answers] == [0, 0, 0], answers
    assert row(h)["members"] == 3


def test_a_member_gets_no_more_than_its_window_and_the_rest_waits_for_room(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, window=4)
    h.join("w", b, window=3)
    h.turn()
    h.publish(20)
    assert (len(a.seqs()), len(b.seqs())) == (4, 3), "an entry is sliced by the members' room"
    assert row(h)["pending"] == 7
    h.manager.acknowledge("t", "w", a, [(1, 2)])  # a held 1..4: two acknowledged, room for two
    assert a.seqs() == [1, 2, 3, 4, 8, 9]
    assert row(h)["consumed_seq"] == 2


def test_per_message_acks_move_the_consumed_seq_id_over_what_is_acknowledged_below_it(tmp_path):
    h = SharedHarness(tmp_path, consume_interval=1, consume_write_gap_ms=0)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    h.publish(10)
    h.manager.acknowledge("t", "w", a, [(2, 4), (7, 7)])
    assert row(h)["consumed_seq"] == 0, "1 is not acknowledged: nothing below it moves"
    assert row(h)["acked_above"] == 4
    h.manager.acknowledge("t", "w", a, [(1, 1)])
    r = row(h)
    assert (r["consumed_seq"], r["acked_above"], r["pending"]) == (4, 1, 5)
    assert h.manager.min_consumed("t") == 4, "what GC sees"
    h.manager.acknowledge("t", "w", a, [(3, 100)])  # below the floor and never sent: ignored
    r = row(h)
    assert (r["consumed_seq"], r["pending"]) == (10, 0)


def test_an_ack_of_anything_not_yet_delivered_changes_nothing(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=2)
    h.turn()
    h.publish(5)
    assert h.manager.acknowledge("t", "w", a, [(3, 5)]) == 0
    assert h.manager.acknowledge("t", "w", a, [(1, 5)]) == 2
    assert row(h)["consumed_seq"] == 2


def test_unacknowledged_deliveries_go_out_again_after_ack_timeout(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, window=10, ack_timeout_ms=5000)
    h.turn()
    h.publish(3)
    h.manager.acknowledge("t", "w", a, [(2, 2)])
    h.join("w", b, window=10)
    h.turn()
    h.clock.advance(4.9)
    assert a.seqs(count=2) == b.seqs(count=2) == [], "not before the timeout"
    h.clock.advance(0.2)
    redelivered = a.seqs(count=2) + b.seqs(count=2)
    assert sorted(redelivered) == [1, 3], "the unacknowledged ones, each once, with count 2"
    assert row(h)["redeliveries"] == 2
    assert h.manager.stats()["expired"] == 2


def test_a_nack_delivers_again_now_and_only_what_the_member_holds(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, window=3)
    h.join("w", b, window=3)
    h.turn()
    h.publish(6)  # a: 1..3, b: 4..6
    assert h.manager.reject("t", "w", a, [(4, 6)]) == 0, "b's messages are b's"
    assert h.manager.reject("t", "w", a, [(2, 2)]) == 1
    assert b.seqs(count=2) + a.seqs(count=2) == [2]
    assert row(h)["pending"] == 6


def test_a_member_leaving_gives_what_it_holds_to_the_others(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, window=5)
    h.join("w", b, window=5)
    h.turn()
    h.publish(10)
    h.manager.acknowledge("t", "w", a, [(1, 2)])
    h.manager.channel_lost(a)
    h.turn()
    assert row(h)["members"] == 1
    h.manager.acknowledge("t", "w", b, [(6, 10)])
    h.turn()
    assert b.seqs(count=2) == [3, 4, 5]


def test_after_max_deliveries_a_message_goes_to_the_dead_letter_topic_and_is_acknowledged(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=10, ack_timeout_ms=1000, max_deliveries=2)
    h.turn()
    entry = h.publish(3)
    h.manager.acknowledge("t", "w", a, [(1, 1), (3, 3)])
    h.clock.advance(1.0)
    assert a.seqs(count=2) == [2]
    h.clock.advance(1.0)
    [(topic, message_set)] = h.dead_letters
    assert topic == "t.dlq"
    wrapped = encode_entry_header(1, 1, 0, b"", 1) + message_set
    [dead] = decode_entry("t.dlq", wrapped)
    assert dead.payload == decode_entry("t", entry.data)[1].payload
    assert dead.properties == {
        ORIGINAL_TOPIC: b"t",
        ORIGINAL_SEQ: b"2",
        SUBSCRIPTION: b"w",
        DELIVERIES: b"2",
    }
    r = row(h)
    assert (r["consumed_seq"], r["dead_lettered"], r["pending"]) == (3, 1, 0)
    assert parse_message_set(message_set).count == 1


def test_the_dead_letter_topic_is_checked_when_subscribing(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    assert refusal(h, "w", channel, kind="shared", max_deliveries=3, dead_letter_topic="t") == (
        Status.MALFORMED_REQUEST
    )
    long_named = SharedHarness(tmp_path / "long", topic="x" * 253)
    status = refusal(long_named, "w", channel, kind="shared", max_deliveries=3)
    assert status == Status.INVALID_TOPIC, "<topic>.dlq of a 253-byte name is too long"
    assert long_named.join("w", channel, max_deliveries=3, dead_letter_topic="short.dlq")["next_seq"] == 1


def test_acks_above_the_floor_are_written_and_survive_a_restart(tmp_path):
    h = SharedHarness(tmp_path, consume_interval=1, consume_write_gap_ms=0)
    a = h.member_channel()
    h.join("w", a, window=1000)
    h.turn()
    for _ in range(10):
        h.publish(100)
    h.manager.acknowledge("t", "w", a, [(seq, seq) for seq in range(1, 1001, 2)])  # every odd one
    record = h.record("w")
    assert record.consumed_seq == 1
    assert len(record.acked) < 40, "a regular stride compresses to almost nothing"
    h.manager.stop()

    again = SharedHarness(tmp_path / "again", metadata=h.metadata, store=h.store)
    b = again.member_channel()
    again.join("w", b, window=1000)
    again.turn()
    assert b.seqs() == list(range(2, 1001, 2)), "exactly what was not acknowledged"
    assert again.record("w").consumed_seq == 1


def test_a_shared_subscription_refuses_what_does_not_fit_its_kind(tmp_path):
    h = SharedHarness(tmp_path)
    a, other = h.member_channel(), h.member_channel()
    h.join("w", a)
    assert refusal(h, "w", other, kind="exclusive") == Status.WRONG_SUBSCRIPTION_KIND
    assert refusal(h, "w", other, pull=True) == Status.WRONG_SUBSCRIPTION_KIND
    assert refusal(h, "w", a, kind="shared") == Status.CLIENT_ALREADY_SUBSCRIBED, "one member per connection"
    with pytest.raises(SubscribeError) as refused:
        h.manager.consume("t", "w", 5)
    assert refused.value.status == Status.WRONG_SUBSCRIPTION_KIND
    h.subscribe("solo", other)
    assert refusal(h, "solo", a, kind="shared") == Status.WRONG_SUBSCRIPTION_KIND
    with pytest.raises(SubscribeError) as refused:
        h.manager.acknowledge("t", "solo", other, [(1, 1)])
    assert refused.value.status == Status.WRONG_SUBSCRIPTION_KIND


def test_a_start_applies_only_when_the_shared_subscription_is_created(tmp_path):
    h = SharedHarness(tmp_path)
    for _ in range(3):
        h.publish(2)
    a, b = h.member_channel(), h.member_channel()
    assert h.join("w", a, start="earliest")["next_seq"] == 1
    assert h.join("w", b, start="latest")["consumed_seq"] == 0, "attaching moves nothing"


def test_reset_moves_a_shared_subscription_only_with_no_member_and_forgets_its_acks(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=100)
    h.turn()
    h.publish(10)
    h.manager.acknowledge("t", "w", a, [(5, 6)])
    assert failure_of(h.manager.reset(h.topic_log, "w", "earliest")).value.status == Status.TOPIC_BUSY
    h.manager.close_subscription("t", "w", a)
    h.turn()
    assert fired(h.manager.reset(h.topic_log, "w", ("seq", 4)))["consumed_seq"] == 3
    b = h.member_channel()
    h.join("w", b, window=100)
    h.turn()
    assert b.seqs() == list(range(4, 11)), "from the reset, the old acks forgotten"


def test_a_channel_that_fails_is_detached_and_its_messages_go_to_the_others(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()

    def broken(*args):
        raise OSError("gone")

    a.deliver = broken
    h.join("w", a, window=5)
    h.join("w", b, window=5)
    h.turn()
    h.publish(4)
    assert b.seqs() == [1, 2, 3, 4]
    assert row(h)["members"] == 1


def test_release_ends_every_member_and_writes_the_acks(tmp_path):
    h = SharedHarness(tmp_path, consume_interval=1000)
    a, b = h.member_channel(), h.member_channel()
    h.join("w", a, handle=3, window=10)
    h.join("w", b, handle=4, window=10)
    h.turn()
    h.publish(10)
    h.manager.acknowledge("t", "w", a, [(3, 4)])
    h.manager.release_topic("t")
    assert a.ended == [(3, SubscriptionEvent.TOPIC_MOVED)]
    assert b.ended == [(4, SubscriptionEvent.TOPIC_MOVED)]
    assert h.record("w").acked != b""
    assert not h.clock.getDelayedCalls(), "no timer left behind"


def test_a_members_window_is_never_unlimited_nor_above_the_hubs_cap(tmp_path):
    h = SharedHarness(tmp_path, shared_window=7, max_shared_window=50)
    asked_none, asked_zero, asked_huge = h.member_channel(), h.member_channel(), h.member_channel()
    h.join("w", asked_none)
    h.join("w", asked_zero, window=0)
    h.join("w", asked_huge, window=2**32 - 1)
    h.turn()
    h.publish(200)
    assert [len(c.seqs()) for c in (asked_none, asked_zero, asked_huge)] == [7, 7, 50]


def test_the_hub_detaching_members_never_dead_letters_what_they_hold(tmp_path):
    """A member leaving by itself counts as a failed delivery (max_deliveries may send a
    message to the dead-letter topic); the hub stopping, or releasing the topic, does not."""
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=10, max_deliveries=1)
    h.turn()
    h.publish(3)
    fired(h.manager.release_topic("t"))
    assert h.dead_letters == []
    again = SharedHarness(tmp_path / "again", metadata=h.metadata, store=h.store)
    b = again.member_channel()
    again.join("w", b, window=10)
    again.turn()
    fired(again.manager.stop())
    assert again.dead_letters == []
    third = SharedHarness(tmp_path / "third", metadata=h.metadata, store=h.store)
    c = third.member_channel()
    third.join("w", c, window=10)
    third.turn()
    fired(third.manager.channel_lost(c))
    assert len(third.dead_letters) == 1, "a member that went away: its deliveries failed"


def test_what_retention_removed_before_it_was_consumed_is_skipped_and_counted(tmp_path):
    from tests.delivery.harness import Harness
    from tests.delivery.shared_harness import MemberChannel

    h = Harness(tmp_path)
    h.log.backlog(20)
    member = MemberChannel(h.manager)
    h.subscribe("w", member, kind="shared", start="earliest", window=5)
    h.turn()
    assert member.take() == [1, 2, 3, 4, 5]
    h.log.forget_upto(10)  # retention removed 1..10, acknowledged or not
    h.manager.acknowledge("t", "w", member, [(1, 1)])
    r = row(h)
    assert (r["consumed_seq"], r["skipped_by_retention"], r["pending"]) == (10, 9, 5)
    assert member.take() == [11, 12, 13, 14, 15]


def test_a_dead_letter_keeps_its_key_and_typed_properties(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=10, ack_timeout_ms=1000, max_deliveries=1)
    h.turn()
    sent = encode_message_set([b"x", b"y"], [{"n": 150, "ok": True}, None], [b"user-1", None])
    fired(h.topic_log.append(sent, 2))
    h.clock.advance(1.0)
    [(_topic, message_set)] = h.dead_letters
    dead = decode_entry("t.dlq", encode_entry_header(1, 2, 0, b"", 1) + message_set)
    assert [(m.payload, m.key) for m in dead] == [(b"x", b"user-1"), (b"y", None)]
    assert (dead[0].properties["n"], dead[0].properties["ok"], dead[0].properties[ORIGINAL_SEQ]) == (
        150,
        True,
        b"1",
    )
