"""Where a subscription may start: at most the topic's last seq-id + 1, and from the first
retained seq-id when asked for an earlier one (the starting points themselves:
test_subscribe.py)."""

import pytest

from hedwig.delivery import SubscribeError
from hedwig.protocol import Status
from tests.delivery.harness import Harness


@pytest.mark.parametrize("start", [12, 1000, 2**63 - 1, 2**63, 2**64 - 1])
def test_a_start_past_the_end_is_refused_naming_the_last_seq_id(tmp_path, start):
    h = Harness(tmp_path)
    h.log.backlog(10)
    with pytest.raises(SubscribeError) as refused:
        h.subscribe("s", h.channel(), start=("seq", start))
    assert refused.value.status == Status.SEQ_OUT_OF_RANGE
    assert "last seq-id is 10" in refused.value.message and str(start) in refused.value.message
    assert h.record("s") is None, "a refused subscribe leaves nothing behind"


def test_an_existing_subscription_is_not_moved_past_the_end(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.subscribe("s", h.channel(), start=("seq", 4))
    h.manager.close_subscription("t", "s")
    with pytest.raises(SubscribeError) as refused:
        h.subscribe("s", h.channel(), start=("seq", 2**64 - 1))
    assert refused.value.status == Status.SEQ_OUT_OF_RANGE
    assert h.record("s").consumed_seq == 3


def test_the_next_publish_is_the_furthest_start(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    channel = h.channel()
    assert h.subscribe("s", channel, start=("seq", 11)) == {"consumed_seq": 10, "next_seq": 11}
    h.turn()
    h.publish(count=2)
    assert [(first, last) for _, first, last, _ in channel.deliveries] == [(11, 12)]


def test_a_start_before_the_first_retained_begins_at_it(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(10)
    h.log.forget_upto(4)
    channel = h.channel()
    assert h.subscribe("s", channel, start=("seq", 2)) == {"consumed_seq": 4, "next_seq": 5}
    h.turn()
    assert channel.deliveries[0][1] == 5 and channel.last_seq(1) == 10
