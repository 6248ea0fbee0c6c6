"""The client side of idempotent publishing without I/O (hedwig.client.idempotent_lane):
numbering, the cap on sets in flight, the rewind after a failure a resend may get past,
and a set refused for good."""

from hedwig.client.idempotent_lane import PublishLane


def sequences(items):
    return [item.sequence for item in items]


def test_sets_are_numbered_once_and_sent_in_order_within_the_cap():
    lane = PublishLane(max_sets_in_flight=3)
    items = [lane.add(b"set", 1, None) for _ in range(5)]
    assert sequences(items) == [0, 1, 2, 3, 4]
    assert sequences(lane.ready()) == [0, 1, 2]
    assert lane.ready() == []  # three on the wire: the cap
    assert lane.answered(items[0])
    assert sequences(lane.ready()) == [3]


def test_after_a_lost_connection_the_unanswered_sets_go_again_lowest_first_before_newer_ones():
    lane = PublishLane(max_sets_in_flight=10)
    items = [lane.add(b"set", 1, None) for _ in range(4)]
    lane.ready()
    assert lane.answered(items[0])
    # The connection drops: the replies of 1..3 fail, in any order.
    assert lane.failed(items[2], retryable=True, gap=False) == []
    newer = lane.add(b"newer", 1, None)
    assert lane.ready() == []  # nothing new goes out while a rewind waits
    assert not lane.rewind_due()  # 1 and 3 are still on the wire
    lane.failed(items[3], retryable=True, gap=False)
    lane.failed(items[1], retryable=True, gap=False)
    assert lane.rewind_due()
    lane.rewind()
    assert sequences(lane.ready()) == [1, 2, 3, newer.sequence]
    assert all(item.attempts == 2 for item in items[1:])


def test_a_gap_is_retried_only_while_a_lower_set_is_unanswered():
    lane = PublishLane()
    first, second = lane.add(b"a", 1, None), lane.add(b"b", 1, None)
    lane.ready()
    lane.failed(first, retryable=True, gap=False)  # (the hub never saw it)
    assert lane.failed(second, retryable=False, gap=True) == []  # refused as a gap behind it
    lane.rewind()
    assert sequences(lane.ready()) == [0, 1]
    lane.answered(first)
    # Nothing lower: the hub forgot the producer; past the time for resends, it fails.
    assert lane.failed(second, retryable=False, gap=True, may_restart=False) == [second]


def test_a_set_refused_for_good_fails_with_the_sets_behind_it_and_its_number_is_used_again():
    lane = PublishLane()
    items = [lane.add(b"set", 1, None) for _ in range(3)]
    lane.ready()
    lane.answered(items[0])
    given_up = lane.failed(items[1], retryable=False, gap=False)
    assert given_up == [items[1], items[2]]
    assert lane.failed(items[2], retryable=False, gap=True) == []  # its answer, already given up
    assert lane.add(b"next", 1, None).sequence == 1
    assert lane.on_wire == 0 and sequences(lane.ready()) == [1]


def test_a_set_answered_after_it_was_given_up_is_not_told_twice():
    lane = PublishLane()
    first, second = lane.add(b"a", 1, None), lane.add(b"b", 1, None)
    lane.ready()
    assert lane.failed(first, retryable=False, gap=False) == [first, second]  # second still out
    assert lane.answered(second) is False
    assert lane.idle and lane.on_wire == 0


def test_a_full_lane_hands_over_to_one_after_it_once_idle():
    full = PublishLane(max_sequence=1)
    items = [full.add(b"set", 1, None) for _ in range(2)]
    assert full.full
    after = PublishLane(after=full, max_sequence=1)
    newer = after.add(b"newer", 1, None)
    assert newer.sequence == 0  # numbered afresh: it will have a producer id of its own
    full.ready()
    assert after.ready() == []  # the full lane's sets are still out
    for item in items:
        full.answered(item)
    assert after.ready() == [newer] and after.after is None


def test_a_gap_with_nothing_lower_unanswered_starts_a_new_producer_numbered_from_zero():
    """Issue 41, point 1 (KIP-360): the hub forgot the producer (its next set is a gap
    although every lower set was answered): nothing is in doubt, so once nothing is on
    the wire the unanswered sets go on as a new producer's 0, 1, ..., in order, each a
    first send under it."""
    lane = PublishLane()
    lane.producer_id = 7
    first, second, third = (lane.add(b"%d" % i, 1, None) for i in range(3))
    lane.ready()
    assert lane.answered(first)
    assert lane.failed(second, retryable=False, gap=True) == []  # nothing lower: forgotten
    assert not lane.rewind_due()  # the third is still out
    assert lane.failed(third, retryable=False, gap=True) == []  # a gap behind the second
    newer = lane.add(b"newer", 1, None)
    assert lane.rewind_due()
    lane.rewind()
    assert lane.producer_id is None and lane.restarted == 1
    sent = lane.ready()
    assert sent == [second, third, newer] and sequences(sent) == [0, 1, 2]
    assert [item.attempts for item in sent] == [1, 1, 1]
    assert lane.add(b"next", 1, None).sequence == 3


def test_a_forgotten_producer_is_not_restarted_once_its_time_is_up():
    lane = PublishLane()
    first, second = lane.add(b"a", 1, None), lane.add(b"b", 1, None)
    lane.ready()
    lane.answered(first)
    assert lane.failed(second, retryable=False, gap=True, may_restart=False) == [second]
    assert lane.restarted == 0
