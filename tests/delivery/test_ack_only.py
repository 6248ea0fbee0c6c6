"""Acknowledgement-only attachments (SUBSCRIBE with deliver=False): held like any attach,
never delivered to, and consumed up to the topic's last published seq-id through the
ordinary consume path (pointer writes, pruning, min_consumed)."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status, SubscriptionEvent
from tests.delivery.harness import Harness, failure_of, fired


def refused(h, sid, channel, **kw):
    failure = failure_of(h.manager.subscribe(h.topic_log, channel, 1, h.request(sid, **kw)))
    assert failure.check(SubscribeError)
    return failure.value.status


def test_nothing_is_ever_delivered_nor_read_for_it(tmp_path):
    h = Harness(tmp_path, readahead_count=4)
    h.log.backlog(5, count=2)
    channel = h.channel(high_water=1)
    assert h.subscribe("drain", channel, start="earliest", deliver=False) == {
        "consumed_seq": 0,
        "next_seq": 1,
    }
    h.turn()
    for _ in range(3):
        h.publish(count=4)
        h.turn()
    h.manager.pause_channel(channel)
    h.manager.resume_channel(channel)
    h.manager.consume("t", "drain", 3)
    h.turn()
    assert channel.deliveries == []
    assert h.log.reads == [], "no entry is read from the ledger for it"
    assert h.cache.stats()["misses"] == 0
    [row] = h.manager.describe("t")
    assert row["state"] == "ack_only" and row["delivered_seq"] == 3 and row["backlog"] == 19
    stats = h.manager.stats()
    assert stats["attached"] == 1 and stats["ack_only"] == 1
    assert stats["delivered_entries"] == stats["delivered_messages"] == 0


def test_consume_is_capped_at_the_last_published_seq_id(tmp_path):
    h = Harness(tmp_path, consume_interval=1, consume_write_gap_ms=0)
    h.log.backlog(10, count=5)  # 1..50, never delivered to anyone
    channel = h.channel()
    h.subscribe("drain", channel, start="earliest", deliver=False)
    h.manager.consume("t", "drain", 30)
    assert h.record("drain").consumed_seq == 30, "beyond anything delivered (nothing was)"
    h.manager.consume("t", "drain", 1000)
    assert h.record("drain").consumed_seq == 50, "not beyond the last published seq-id"
    h.manager.consume("t", "drain", 20)
    assert h.record("drain").consumed_seq == 50, "cumulative: never back"
    h.publish(count=5)
    h.manager.consume("t", "drain", 55)
    assert h.record("drain").consumed_seq == 55


def test_a_delivering_attach_stays_capped_at_what_it_was_delivered(tmp_path):
    """The cap is lifted only for the attachment that takes no deliveries."""
    h = Harness(tmp_path, default_window=4)
    h.log.backlog(10, count=5)
    h.subscribe("reader", h.channel(), start="earliest")
    h.turn()
    h.manager.consume("t", "reader", 50)
    assert h.manager.describe("t")[0]["consumed_seq"] == 4


def test_its_consumes_prune_the_cache_and_move_min_consumed(tmp_path):
    h = Harness(tmp_path, consume_interval=50, consume_write_gap_ms=0)
    reader = h.channel()
    h.subscribe("reader", reader, handle=1)
    h.subscribe("drain", h.channel(), handle=2, deliver=False)
    h.turn()
    for _ in range(10):
        h.publish(count=10)
    h.manager.consume("t", "reader", 100)
    assert len(h.cache.cached_ranges("t")) == 10, "the drain holds every entry back"
    assert h.manager.min_consumed("t") == 0
    h.manager.consume("t", "drain", 35)
    assert h.cache.cached_ranges("t")[0] == (31, 40), "pruned up to the drain's pointer"
    assert h.manager.min_consumed("t") == 0, "35 is not written yet (consume_interval 50)"
    h.manager.consume("t", "drain", 60)
    assert h.manager.min_consumed("t") == 60
    assert h.cache.cached_ranges("t")[0] == (61, 70)
    h.manager.consume("t", "drain", 100)
    assert h.cache.cached_ranges("t") == []
    assert reader.messages() == 100, "the other subscriber got everything"


def test_it_is_held_like_any_attach_busy_and_force_attach(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(4)
    holder, other = h.channel(), h.channel()
    h.subscribe("s", holder, handle=5, start="earliest", deliver=False)
    assert refused(h, "s", other, mode="attach") == Status.TOPIC_BUSY
    assert refused(h, "s", other, mode="attach", deliver=False) == Status.TOPIC_BUSY
    assert refused(h, "s", holder, deliver=False) == Status.CLIENT_ALREADY_SUBSCRIBED
    assert refused(h, "s", other, mode="create", deliver=False) == Status.CLIENT_ALREADY_SUBSCRIBED
    # A delivering attach forces it out, and delivers from its pointer.
    h.manager.consume("t", "s", 2)
    assert h.subscribe("s", other, handle=6, force_attach=True) == {"consumed_seq": 2, "next_seq": 3}
    assert holder.ended == [(5, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    h.turn()
    assert [(f, last) for _, f, last, _ in other.deliveries] == [(3, 3), (4, 4)]
    # An acknowledgement-only attach forces a delivering one out: its deliveries stop.
    third = h.channel()
    h.subscribe("s", third, handle=7, force_attach=True, deliver=False)
    assert other.ended == [(6, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    h.publish(count=3)
    h.turn()
    assert other.last_seq(6) == 4 and third.deliveries == []
    h.manager.consume("t", "s", 7)
    assert h.manager.describe("t")[0]["consumed_seq"] == 7


@pytest.mark.parametrize("how", ["close", "channel_lost", "stop"])
def test_close_channel_loss_and_shutdown_write_its_pointer_and_free_it(tmp_path, how):
    h = Harness(tmp_path, consume_interval=1000)
    h.log.backlog(20)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest", deliver=False)
    h.manager.consume("t", "s", 12)
    assert h.record("s").consumed_seq == 0
    if how == "close":
        fired(h.manager.close_subscription("t", "s"))
    elif how == "channel_lost":
        fired(h.manager.channel_lost(channel))
    else:
        fired(h.manager.stop())
    assert h.record("s").consumed_seq == 12
    assert h.manager.describe("t")[0]["state"] == "detached"
    assert h.manager.stats()["ack_only"] == 0
    if how != "stop":
        again = h.channel()
        assert h.subscribe("s", again, mode="attach", deliver=False) == {"consumed_seq": 12, "next_seq": 13}


def test_a_window_is_not_recorded_and_a_start_repositions_as_for_any_attach(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.subscribe("s", h.channel(), window=3)
    fired(h.manager.close_subscription("t", "s"))
    assert h.record("s").preferences == {"window": 3, "created_us": 0}
    result = h.subscribe("s", h.channel(), start=("seq", 6), window=50, deliver=False)
    assert result == {"consumed_seq": 5, "next_seq": 6}
    assert h.record("s").consumed_seq == 5, "written before the answer, as for any start"
    assert h.record("s").preferences == {"window": 3, "created_us": 0}
    fired(h.manager.close_subscription("t", "s"))
    created = h.subscribe("new", h.channel(), start="earliest", window=9, deliver=False)
    assert created == {"consumed_seq": 0, "next_seq": 1}
    assert h.record("new").preferences == {"created_us": 0}


def test_unsubscribe_ends_it_and_releases_what_it_held(tmp_path):
    h = Harness(tmp_path)
    h.subscribe("s", h.channel(), deliver=False)
    h.publish(count=10)
    assert h.cache.stats()["entries"] == 1
    fired(h.manager.unsubscribe("t", "s"))
    assert h.record("s") is None
    assert h.cache.stats()["entries"] == 0
    assert h.manager.stats()["attached"] == 0
