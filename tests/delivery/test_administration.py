"""The delivery manager's administration: a reset moves a detached subscription (written at
once, pruning bounds following it) and refuses an attached one; dropping a topic's
subscriptions ends the attached ones and deletes every record."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status, SubscriptionEvent
from tests.delivery.harness import Harness, fired


def test_a_reset_moves_a_detached_subscription_and_writes_it(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.subscribe("s", h.channel(), start=("seq", 4))
    fired(h.manager.close_subscription("t", "s"))
    moved = fired(h.manager.reset(h.topic_log, "s", "earliest"))
    assert moved == {"consumed_seq": 0, "previous_seq": 3, "next_seq": 1}
    assert h.record("s").consumed_seq == 0
    assert h.manager.min_consumed("t") == 0
    assert fired(h.manager.reset(h.topic_log, "s", "latest"))["consumed_seq"] == 10
    assert (h.record("s").consumed_seq, h.manager.min_consumed("t")) == (10, 10)
    channel = h.channel()
    assert h.subscribe("s", channel) == {"consumed_seq": 10, "next_seq": 11}


@pytest.mark.parametrize(
    "start, status",
    [(("seq", 12), Status.SEQ_OUT_OF_RANGE), ("earliest", Status.TOPIC_BUSY)],
)
def test_a_reset_refuses_what_it_cannot_do(tmp_path, start, status):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.subscribe("s", h.channel(), start=("seq", 4))
    if status is not Status.TOPIC_BUSY:
        fired(h.manager.close_subscription("t", "s"))
    with pytest.raises(SubscribeError) as refused:
        fired(h.manager.reset(h.topic_log, "s", start))
    assert refused.value.status == status
    assert h.record("s").consumed_seq == 3


def test_a_reset_of_no_subscription_is_client_not_subscribed(tmp_path):
    h = Harness(tmp_path)
    with pytest.raises(SubscribeError) as refused:
        fired(h.manager.reset(h.topic_log, "nobody", "earliest"))
    assert refused.value.status == Status.CLIENT_NOT_SUBSCRIBED


def test_dropping_ends_the_attached_and_deletes_every_record(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(3)
    attached = h.channel()
    h.subscribe("a", attached, start="earliest")
    h.subscribe("b", h.channel(), handle=2, start="latest")
    fired(h.manager.close_subscription("t", "b"))
    assert fired(h.manager.drop_subscriptions(h.topic_log)) == ["a", "b"]
    assert attached.ended == [(1, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    assert h.record("a") is None and h.record("b") is None
    assert h.manager.describe("t") == []
