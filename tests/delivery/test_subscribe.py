"""SUBSCRIBE: modes, starting points, attach rules and where delivery begins."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status, SubscriptionEvent
from tests.delivery.harness import Harness, failure_of


def refused(h, sid, channel, **kw):
    failure = failure_of(h.manager.subscribe(h.topic_log, channel, 1, h.request(sid, **kw)))
    assert failure.check(SubscribeError)
    return failure.value.status


def test_a_new_subscription_sees_only_later_messages(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(5, count=2)
    channel = h.channel()
    assert h.subscribe("s", channel) == {"consumed_seq": 10, "next_seq": 11}
    assert h.record("s").consumed_seq == 10
    h.turn()
    assert channel.deliveries == []
    h.publish(count=3)
    assert [(first, last) for _, first, last, _ in channel.deliveries] == [(11, 13)]


def test_delivery_begins_only_after_the_subscribe_is_answered(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(3)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest")
    assert channel.deliveries == []
    h.turn()
    assert channel.messages() == 3


@pytest.mark.parametrize(
    ("start", "first_delivered"),
    [("earliest", 1), ("latest", None), (("seq", 7), 7), (("seq", 31), 31), (("time", 1_003_500), 13)],
)
def test_starting_points(tmp_path, start, first_delivered):
    h = Harness(tmp_path)
    h.log.backlog(10, count=3)  # entries 1..3, 4..6, ...; published 1 ms apart
    channel = h.channel()
    result = h.subscribe("s", channel, start=start)
    h.turn()
    if first_delivered is None:
        assert result["next_seq"] == 31 and channel.deliveries == []
        return
    assert result["next_seq"] == first_delivered
    if first_delivered <= 30:
        assert channel.deliveries[0][1] == first_delivered
        assert channel.last_seq(1) == 30
    h.publish(count=3)
    assert channel.last_seq(1) == 33


def test_a_start_at_the_next_publish_waits_for_it(tmp_path):
    h = Harness(tmp_path)
    h.publish(count=4)
    channel = h.channel()
    assert refused(h, "s", channel, start=("seq", 6)) == Status.SEQ_OUT_OF_RANGE  # it would skip 5
    h.subscribe("s", channel, start=("seq", 5))
    h.turn()
    assert channel.deliveries == []
    h.publish(count=4)  # 5..8
    assert [(f, last) for _, f, last, _ in channel.deliveries] == [(5, 8)]


def test_bad_requests_get_clear_statuses(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.log.forget_upto(4)
    channel = h.channel()
    assert refused(h, "s", channel, mode="sometimes") == Status.MALFORMED_REQUEST
    assert refused(h, "s", channel, window=-1) == Status.MALFORMED_REQUEST
    assert refused(h, "s", channel, start=("seq", 0)) == Status.MALFORMED_REQUEST
    assert refused(h, "s", channel, start="yesterday") == Status.MALFORMED_REQUEST
    assert refused(h, "s", channel, start=("seq", 12)) == Status.SEQ_OUT_OF_RANGE
    assert refused(h, "s", channel, mode="attach") == Status.CLIENT_NOT_SUBSCRIBED
    assert h.record("s") is None, "a refused subscribe leaves nothing behind"


def test_create_attach_and_busy(tmp_path):
    h = Harness(tmp_path)
    first, second = h.channel(), h.channel()
    h.subscribe("s", first, mode="create")
    assert refused(h, "s", second, mode="create") == Status.CLIENT_ALREADY_SUBSCRIBED
    assert refused(h, "s", second, mode="attach") == Status.TOPIC_BUSY
    assert refused(h, "s", first) == Status.CLIENT_ALREADY_SUBSCRIBED


def test_force_attach_takes_over_and_ends_the_old_channel(tmp_path):
    h = Harness(tmp_path)
    old, new = h.channel(), h.channel()
    h.subscribe("s", old, handle=7)
    h.turn()
    h.publish(count=2)
    h.manager.consume("t", "s", 1)
    assert h.subscribe("s", new, handle=3, force_attach=True) == {"consumed_seq": 1, "next_seq": 2}
    assert old.ended == [(7, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    h.turn()
    h.publish(count=2)
    assert old.last_seq(7) == 2, "the old channel gets nothing more"
    assert [(f, last) for _, f, last, _ in new.deliveries] == [(2, 2), (3, 4)]


def test_a_subscription_is_durable_across_hub_restarts(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    h.publish(count=5)
    h.manager.consume("t", "s", 3)
    h.manager.close_subscription("t", "s")
    # A new hub process over the same metadata store.
    again = Harness(tmp_path, log=h.log, metadata=h.metadata)
    channel = again.channel()
    assert again.subscribe("s", channel, mode="attach") == {"consumed_seq": 3, "next_seq": 4}
    again.turn()
    assert [(f, last) for _, f, last, _ in channel.deliveries] == [(4, 5)]


def test_an_explicit_start_repositions_an_existing_subscription(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    channel = h.channel()
    h.subscribe("s", channel)
    h.manager.close_subscription("t", "s")
    assert h.subscribe("s", h.channel(), start=("seq", 4)) == {"consumed_seq": 3, "next_seq": 4}
    assert h.record("s").consumed_seq == 3


def test_reserved_ids_are_not_the_managers_business(tmp_path):
    h = Harness(tmp_path)
    h.subscribe("__region", h.channel())
    assert h.record("__region") is not None
