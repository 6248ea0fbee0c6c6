"""Pause/resume from transport backpressure, and clean stops: no waiter, no timer left."""

import pytest

from hedwig.ledger import LedgerError
from hedwig.protocol import SubscriptionEvent
from tests.cache.controllable_log import ControllableLog
from tests.delivery.harness import Harness, TurnClock, fired


def test_a_paused_channel_gets_nothing_and_resumes_where_it_stopped(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel(high_water=25)
    h.subscribe("s", channel)
    h.turn()
    for _ in range(10):
        h.publish(count=10)
    assert channel.paused and channel.messages() == 30
    assert h.manager.describe("t")[0]["state"] == "paused"
    channel.drain()
    assert channel.messages() == 60  # paused again at the mark
    channel.drain()
    channel.drain()
    channel.drain()
    assert channel.messages() == 100 and channel.last_seq(1) == 100
    assert channel.calls_while_paused == 0
    h.publish(count=10)
    assert channel.last_seq(1) == 110


def test_pause_holds_every_subscription_of_the_channel_and_no_other(tmp_path):
    h = Harness(tmp_path)
    shared, other = h.channel(), h.channel()
    h.subscribe("a", shared, handle=1)
    h.subscribe("b", shared, handle=2)
    h.subscribe("c", other, handle=1)
    h.turn()
    h.manager.pause_channel(shared)
    h.publish(count=5)
    assert shared.deliveries == [] and other.messages() == 5
    h.manager.resume_channel(shared)
    assert shared.messages(1) == 5 and shared.messages(2) == 5


def test_a_subscription_attached_to_a_paused_channel_starts_paused(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("a", channel, handle=1)
    h.manager.pause_channel(channel)
    h.subscribe("b", channel, handle=2, start="earliest")
    h.publish(count=3)
    h.turn()
    assert channel.deliveries == []
    h.manager.resume_channel(channel)
    assert channel.messages(1) == 3 and channel.messages(2) == 3


def assert_nothing_left(h):
    stats = h.cache.stats()
    assert stats["stub_waiters"] == 0 and stats["stubs"] == 0
    assert h.clock.getDelayedCalls() == []


@pytest.mark.parametrize("how", ["close", "unsubscribe", "replaced", "channel_lost", "stop", "release"])
def test_stopping_leaves_no_waiter_and_no_timer(tmp_path, how):
    h = Harness(tmp_path, log=ControllableLog())
    h.log.backlog(30)
    lagging, tail = h.channel(), h.channel()
    h.subscribe("lagging", lagging, handle=1, start="earliest")  # waits on a ledger read
    h.subscribe("tail", tail, handle=2)  # waits on the next publish
    h.turn()
    h.manager.consume("t", "lagging", 0)
    assert h.cache.stats()["stub_waiters"] == 2
    if how == "close":
        fired(h.manager.close_subscription("t", "lagging"))
        fired(h.manager.close_subscription("t", "tail"))
    elif how == "unsubscribe":
        fired(h.manager.unsubscribe("t", "lagging"))
        fired(h.manager.unsubscribe("t", "tail"))
    elif how == "replaced":
        h.subscribe("lagging", h.channel(), force_attach=True)
        h.subscribe("tail", h.channel(), force_attach=True)
        assert lagging.ended == [(1, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
        fired(h.manager.stop())
    elif how == "channel_lost":
        fired(h.manager.channel_lost(lagging))
        fired(h.manager.channel_lost(tail))
    elif how == "stop":
        fired(h.manager.stop())
    else:
        fired(h.manager.release_topic("t"))
        assert tail.ended == [(2, SubscriptionEvent.TOPIC_MOVED)]
    h.log.complete_all()  # the read in flight lands with nobody waiting
    assert_nothing_left(h)
    h.publish()
    assert lagging.deliveries == [] and tail.deliveries == []
    assert h.manager.stats()["attached"] == 0


def test_a_failed_read_is_retried_after_the_back_off(tmp_path):
    h = Harness(tmp_path, log=ControllableLog(), retry_backoff_ms=500)
    h.log.backlog(20)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest")
    h.turn()
    h.log.fail(LedgerError("bad sector"))
    assert h.manager.describe("t")[0]["state"] == "retrying"
    h.clock.advance(0.499)
    assert len(h.log.reads) == 1
    h.clock.advance(0.001)
    assert len(h.log.reads) == 2
    h.log.complete_all()
    h.log.complete_all()
    assert channel.messages() == 20
    assert h.manager.stats()["read_retries"] == 1


def test_a_channel_that_raises_stops_only_its_subscriber(tmp_path):
    h = Harness(tmp_path)
    broken, fine = h.channel(), h.channel()

    def explode(*args):
        raise ConnectionError("gone")

    broken.deliver = explode
    h.subscribe("a", broken, handle=1)
    h.subscribe("b", fine, handle=2)
    h.turn()
    h.publish(count=3)
    h.publish(count=3)
    assert fine.messages() == 6
    assert h.manager.stats()["channel_errors"] == 1
    assert h.manager.describe("t")[0]["state"] == "detached"


def test_seq_ids_removed_by_retention_are_skipped_and_counted(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(20)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest")
    h.manager.pause_channel(channel)
    h.turn()
    h.log.forget_upto(10)
    h.manager.resume_channel(channel)
    assert channel.deliveries[0][1] == 11 and channel.last_seq(1) == 20
    assert h.manager.stats()["skipped_by_retention"] == 10


def test_a_long_backlog_is_delivered_in_bursts_that_yield_the_reactor(tmp_path):
    clock = TurnClock()
    h = Harness(tmp_path, clock=clock, max_burst_entries=10)
    h.log.backlog(35)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest")
    clock.turn()
    assert channel.messages() == 10
    clock.turn()
    assert channel.messages() == 20
    clock.turn()
    clock.turn()
    assert channel.messages() == 35


def test_a_transport_that_pauses_and_resumes_inside_deliver_gets_no_duplicate(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10, count=2)
    channel = h.channel()
    record = channel.deliver

    def deliver_pause_resume(handle, entry, start, stop):
        record(handle, entry, start, stop)  # asserts no gap and no duplicate
        h.manager.pause_channel(channel)
        h.manager.resume_channel(channel)

    channel.deliver = deliver_pause_resume
    h.subscribe("s", channel, start="earliest")
    h.turn()
    h.publish(count=2)
    assert channel.messages() == 22
