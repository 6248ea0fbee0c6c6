"""Consume pointers: cumulative, written every consume_interval or consume_flush_ms, and
on close and shutdown; the minimum over subscribers prunes the cache and bounds GC."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status
from tests.delivery.harness import Harness, failure_of, fired


def subscribed(tmp_path, messages=200, **settings):
    h = Harness(tmp_path, **settings)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    for _ in range(messages // 10):
        h.publish(count=10)
    return h, channel


def test_the_pointer_is_written_after_consume_interval_messages(tmp_path):
    h, _ = subscribed(tmp_path, consume_interval=50, consume_write_gap_ms=0)
    h.manager.consume("t", "s", 30)
    assert h.record("s").consumed_seq == 0
    h.manager.consume("t", "s", 49)
    assert h.record("s").consumed_seq == 0
    h.manager.consume("t", "s", 50)
    assert h.record("s").consumed_seq == 50
    h.manager.consume("t", "s", 99)
    assert h.record("s").consumed_seq == 50
    h.manager.consume("t", "s", 120)
    assert h.record("s").consumed_seq == 120


def test_the_pointer_is_written_after_consume_flush_ms(tmp_path):
    h, _ = subscribed(tmp_path, consume_interval=50, consume_flush_ms=1000)
    h.manager.consume("t", "s", 3)
    h.clock.advance(0.999)
    assert h.record("s").consumed_seq == 0
    h.clock.advance(0.001)
    assert h.record("s").consumed_seq == 3
    assert h.clock.getDelayedCalls() == []


@pytest.mark.parametrize("how", ["close", "channel_lost", "stop"])
def test_the_pointer_is_written_on_close_and_shutdown(tmp_path, how):
    h, channel = subscribed(tmp_path)
    h.manager.consume("t", "s", 7)
    if how == "close":
        fired(h.manager.close_subscription("t", "s"))
    elif how == "channel_lost":
        fired(h.manager.channel_lost(channel))
    else:
        fired(h.manager.stop())
    assert h.record("s").consumed_seq == 7
    assert h.clock.getDelayedCalls() == []


def test_consume_is_cumulative_and_capped_at_what_was_delivered(tmp_path):
    h, _ = subscribed(tmp_path, messages=20)
    h.manager.consume("t", "s", 15)
    h.manager.consume("t", "s", 5)
    fired(h.manager.close_subscription("t", "s"))
    assert h.record("s").consumed_seq == 15
    h2, _ = subscribed(tmp_path / "b", messages=20, default_window=4)
    h2.manager.consume("t", "s", 1000)
    assert h2.manager.describe("t")[0]["consumed_seq"] == 4


def test_consume_of_an_unknown_subscription_is_refused(tmp_path):
    h, _ = subscribed(tmp_path)
    with pytest.raises(SubscribeError) as caught:
        h.manager.consume("t", "nobody", 3)
    assert caught.value.status == Status.CLIENT_NOT_SUBSCRIBED
    assert (
        failure_of(h.manager.close_subscription("t", "nobody")).value.status == Status.CLIENT_NOT_SUBSCRIBED
    )
    assert failure_of(h.manager.unsubscribe("t", "nobody")).value.status == Status.CLIENT_NOT_SUBSCRIBED


def test_the_cache_is_pruned_when_every_subscriber_consumed(tmp_path):
    h = Harness(tmp_path)
    a, b = h.channel(), h.channel()
    h.subscribe("a", a, handle=1)
    h.subscribe("b", b, handle=2)
    h.turn()
    for _ in range(5):
        h.publish(count=10)
    h.manager.consume("t", "a", 30)
    assert len(h.cache.cached_ranges("t")) == 5, "b has consumed nothing"
    h.manager.consume("t", "b", 25)
    assert h.cache.cached_ranges("t") == [(21, 30), (31, 40), (41, 50)]
    h.manager.consume("t", "b", 50)
    assert h.cache.cached_ranges("t") == [(31, 40), (41, 50)]
    h.manager.consume("t", "a", 50)
    assert h.cache.cached_ranges("t") == []


def test_a_detached_subscriber_holds_pruning_back(tmp_path):
    h = Harness(tmp_path)
    h.subscribe("a", h.channel(), handle=1)
    h.subscribe("b", h.channel(), handle=2)
    h.turn()
    h.publish(count=10)
    fired(h.manager.close_subscription("t", "b"))
    h.manager.consume("t", "a", 10)
    assert h.cache.cached_ranges("t") == [(1, 10)]


def test_min_consumed_is_over_persisted_pointers(tmp_path):
    h, _ = subscribed(tmp_path, consume_interval=50)
    assert h.manager.min_consumed("other") == 0, "not loaded: nothing may be collected"
    h.subscribe("late", h.channel(), handle=2)
    h.manager.consume("t", "s", 60)
    assert h.manager.min_consumed("t") == 60
    h.manager.consume("t", "s", 70)
    assert h.manager.min_consumed("t") == 60, "70 is not written yet"
    fired(h.manager.unsubscribe("t", "late"))
    assert h.manager.min_consumed("t") == 60
    fired(h.manager.unsubscribe("t", "s"))
    assert h.manager.min_consumed("t") is None


def test_unsubscribe_deletes_the_durable_subscription(tmp_path):
    h, channel = subscribed(tmp_path)
    fired(h.manager.unsubscribe("t", "s"))
    assert h.record("s") is None
    attach = h.request("s", mode="attach")
    status = failure_of(h.manager.subscribe(h.topic_log, channel, 1, attach)).value.status
    assert status == Status.CLIENT_NOT_SUBSCRIBED
    assert h.cache.stats()["entries"] == 0, "no subscriber is left to need the cached entries"


def test_load_topic_makes_detached_subscribers_count(tmp_path):
    h, _ = subscribed(tmp_path)
    h.manager.consume("t", "s", 40)
    fired(h.manager.stop())
    again = Harness(tmp_path, log=h.log, metadata=h.metadata)
    fired(again.manager.load_topic(h.log))
    assert again.manager.min_consumed("t") == 40
    assert [row["state"] for row in again.manager.describe("t")] == ["detached"]


def test_consume_write_gap_spaces_one_subscribers_writes(tmp_path):
    h, _ = subscribed(tmp_path, messages=1000, consume_interval=50, consume_write_gap_ms=100)
    h.manager.consume("t", "s", 100)
    assert h.record("s").consumed_seq == 100, "the first write goes at once"
    h.clock.advance(0.05)
    h.manager.consume("t", "s", 600)
    h.manager.consume("t", "s", 700)
    assert h.record("s").consumed_seq == 100
    h.clock.advance(0.049)
    assert h.record("s").consumed_seq == 100
    h.clock.advance(0.001)
    assert h.record("s").consumed_seq == 700, "one write for both consumes, 100 ms after the last"
    assert h.manager.stats()["pointer_writes"] == 2
    h.clock.advance(0.2)
    h.manager.consume("t", "s", 800)
    assert h.record("s").consumed_seq == 800


def test_a_failed_pointer_write_is_reported_and_retried(tmp_path):
    from hedwig.meta.interface import BadVersion, MetadataError, SubscriptionState

    h, _ = subscribed(tmp_path, consume_interval=50, consume_flush_ms=500)
    # Someone else writes the record: our next write loses the compare-and-set...
    current = fired(h.metadata.get_subscription("t", "s"))
    fired(h.metadata.put_subscription("t", "s", SubscriptionState(5, {}), current.version))
    h.manager.consume("t", "s", 60)
    assert h.manager.stats()["pointer_write_failures"] == 1
    assert h.record("s").consumed_seq == 5
    # ... learns the record's version, and the timer writes the pointer again.
    h.clock.advance(0.5)
    assert h.record("s").consumed_seq == 60
    # A store that fails outright: close reports the error, the pointer stays in memory.
    h.manager.consume("t", "s", 150)
    fired(h.metadata.close())
    h.manager.consume("t", "s", 200)
    failure = failure_of(h.manager.close_subscription("t", "s"))
    assert failure.check(MetadataError) and not failure.check(BadVersion)
    assert h.manager.describe("t")[0]["consumed_seq"] == 200


def test_a_pointer_write_racing_a_delete_is_no_hub_fault(tmp_path):
    """An UNSUBSCRIBE (or another hub) deleting the record while a CONSUME's write is on
    its way makes that write lose its compare-and-set: logged as a warning without a
    traceback (never critical), and the pointer is not written again once it is gone."""
    from twisted.logger import LogLevel, globalLogPublisher

    events = []
    globalLogPublisher.addObserver(events.append)
    try:
        h, _ = subscribed(tmp_path, consume_interval=50, consume_flush_ms=500)
        current = fired(h.metadata.get_subscription("t", "s"))
        fired(h.metadata.delete_subscription("t", "s", current.version))
        h.manager.consume("t", "s", 60)
        h.clock.advance(0.5)
        h.manager.consume("t", "s", 120)
        h.clock.advance(0.5)
    finally:
        globalLogPublisher.removeObserver(events.append)
    ours = [e for e in events if e.get("subscriber") == "s"]
    assert [e["log_level"] for e in ours] == [LogLevel.warn]
    assert "log_failure" not in ours[0]
    assert h.manager.stats()["pointer_write_failures"] == 1, "written again after the record went"
    assert h.record("s") is None
