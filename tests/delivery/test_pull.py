"""Pull subscriptions (deliver="pull") in the delivery manager, on a Clock: nothing is
pushed; FETCH gives what is at hand at once, else waits for the first message up to its
timeout, and FETCH_DONE ends every FETCH."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status, SubscriptionEvent
from tests.delivery.shared_harness import SharedHarness


def fetch(h, channel, max_messages, timeout_s, sid="p"):
    """A FETCH, and the reactor's next turn (when its deliveries begin)."""
    h.manager.fetch("t", sid, channel, max_messages, timeout_s)
    h.turn()


def test_nothing_is_pushed_to_a_pull_subscription(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    h.join("p", channel, kind="exclusive", pull=True)
    h.turn()
    h.publish(5)
    h.turn()
    assert channel.sent == []


def test_a_fetch_returns_at_once_what_is_there_up_to_its_maximum(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    h.join("p", channel, kind="exclusive", pull=True, start="earliest")
    h.turn()
    h.publish(3)
    h.publish(4)
    fetch(h, channel, 5, 30.0)
    assert channel.take() == [1, 2, 3, 4, 5]
    assert channel.fetches_done == [1], "ended at once: nothing waits"
    fetch(h, channel, 100, 30.0)
    assert channel.take() == [6, 7]
    assert channel.fetches_done == [1, 1]


def test_a_fetch_with_nothing_there_waits_for_the_first_publish(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    h.join("p", channel, kind="shared", pull=True)
    h.turn()
    fetch(h, channel, 10, 30.0)
    h.clock.advance(10)
    assert channel.sent == [] and channel.fetches_done == []
    h.publish(3)
    assert channel.take() == [1, 2, 3]
    assert channel.fetches_done == [1]


def test_a_fetch_ends_empty_at_its_timeout(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    h.join("p", channel, kind="shared", pull=True)
    h.turn()
    fetch(h, channel, 10, 2.0)
    h.clock.advance(1.9)
    assert channel.fetches_done == []
    h.clock.advance(0.2)
    assert channel.fetches_done == [1] and channel.sent == []
    h.publish(1)
    assert channel.sent == [], "the fetch is over: nothing pushed"


def test_one_fetch_at_a_time_and_only_on_pull_subscriptions(tmp_path):
    h = SharedHarness(tmp_path)
    channel, pushed = h.member_channel(), h.member_channel()
    h.join("p", channel, kind="shared", pull=True)
    h.join("s", pushed, kind="shared")
    fetch(h, channel, 1, 5.0)
    with pytest.raises(SubscribeError) as refused:
        fetch(h, channel, 1, 5.0)
    assert refused.value.status == Status.FETCH_IN_PROGRESS
    with pytest.raises(SubscribeError) as refused:
        fetch(h, pushed, 1, 5.0, sid="s")
    assert refused.value.status == Status.WRONG_SUBSCRIPTION_KIND


def test_pull_members_share_the_messages_and_the_window_still_bounds_them(tmp_path):
    h = SharedHarness(tmp_path)
    a, b = h.member_channel(), h.member_channel()
    h.join("p", a, kind="shared", pull=True, window=3)
    h.join("p", b, kind="shared", pull=True, window=3)
    h.turn()
    h.publish(10)
    fetch(h, a, 100, 1.0)
    fetch(h, b, 2, 1.0)
    assert (a.take(), b.take()) == ([1, 2, 3], [4, 5])
    h.manager.acknowledge("t", "p", a, [(1, 3)])
    fetch(h, a, 100, 1.0)
    assert a.take() == [6, 7, 8]


def test_an_exclusive_pull_subscription_has_one_member_and_takes_consume(tmp_path):
    h = SharedHarness(tmp_path)
    first, second = h.member_channel(), h.member_channel()
    h.join("p", first, handle=7, kind="exclusive", pull=True, start="earliest")
    failure = h.manager.subscribe(h.topic_log, second, 1, h.request("p", pull=True))
    failure.addErrback(lambda f: f.value.status).addCallback(lambda s: setattr(h, "status", s))
    assert h.status == Status.TOPIC_BUSY
    h.publish(4)
    h.turn()
    fetch(h, first, 10, 1.0)
    h.manager.consume("t", "p", 2)
    assert h.manager.describe("t")[0]["consumed_seq"] == 2
    h.join("p", second, kind="exclusive", pull=True, force_attach=True)
    assert first.ended == [(7, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    h.turn()
    fetch(h, second, 10, 1.0)
    assert second.seqs(count=2) == [3, 4], "what the first held goes to the new member"
