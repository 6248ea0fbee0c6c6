"""The checker on synthetic histories: a valid run passes, and each kind of violation
(lost, duplicated, reordered, split brain, phantom, subscriber gaps, mismatches and
reordering) is found and named."""

import itertools

from hedwig.testing.faults.history import History, check, longest_stall


def _history():
    ticks = itertools.count(1)
    return History(clock=lambda: float(next(ticks)))


def _publish(history, topic, payload, seq=None):
    """An attempt acknowledged at `seq`, or indeterminate (seq None)."""
    publish = history.invoke(topic, payload)
    if seq is None:
        history.indeterminate(publish, "ConnectionLost()")
    else:
        history.acknowledged(publish, seq)
    return publish


def _valid():
    history = _history()
    _publish(history, "t", b"a", 1)
    _publish(history, "t", b"b", 2)
    _publish(history, "t", b"c")  # indeterminate, and stored
    _publish(history, "t", b"d")  # indeterminate, not stored
    _publish(history, "t", b"e", 4)
    history.record_log("t", [(1, b"a"), (2, b"b"), (3, b"c"), (4, b"e")])
    for seq, payload in [(1, b"a"), (2, b"b"), (2, b"b"), (3, b"c"), (4, b"e")]:  # one redelivery
        history.receive("t", "s", seq, payload)
    return history


def test_a_valid_history_passes_with_its_indeterminate_attempts_counted():
    report = check(_valid())
    assert report.valid, report.violations()
    assert report.summary() == {
        "acked": 3, "indeterminate": 2, "indeterminate_stored": 1, "lost": 0, "duplicated": 0,
        "reordered": 0, "split_brain": 0, "phantom": 0, "subscriber_gaps": 0,
        "subscriber_mismatches": 0, "subscriber_reordered": 0, "unavailable_s": 0.0,
    }  # fmt: skip


def test_an_acknowledged_payload_missing_or_moved_is_lost():
    history = _history()
    _publish(history, "t", b"a", 1)
    _publish(history, "t", b"b", 2)
    _publish(history, "t", b"c", 3)
    history.record_log("t", [(1, b"a"), (2, b"c")])  # b gone, c at another seq-id
    report = check(history)
    assert report.lost == [("t", 2, b"b", None), ("t", 3, b"c", 2)]
    assert not report.valid


def test_a_payload_stored_twice_is_duplicated_even_if_never_acknowledged():
    history = _history()
    _publish(history, "t", b"a", 1)
    _publish(history, "t", b"b")
    history.record_log("t", [(1, b"a"), (2, b"b"), (3, b"b")])
    assert check(history).duplicated == [("t", b"b", 2, 3)]


def test_acknowledgements_against_the_log_order_and_holes_are_reordered():
    history = _history()
    _publish(history, "t", b"a", 2)
    _publish(history, "t", b"b", 1)
    history.record_log("t", [(1, b"b"), (2, b"a")])
    assert check(history).reordered == [("t", "acknowledged before an earlier-stored one", 2, 1)]
    holed = _history()
    _publish(holed, "t", b"a", 1)
    holed.record_log("t", [(1, b"a"), (3, b"x")])
    assert ("t", "seq-ids not dense", [1, 3]) in check(holed).reordered


def test_one_seq_id_acknowledged_for_two_payloads_is_split_brain():
    history = _history()
    _publish(history, "t", b"old owner", 5)
    _publish(history, "t", b"new owner", 5)
    history.record_log("t", [(seq, b"x%d" % seq) for seq in range(1, 5)] + [(5, b"new owner")])
    report = check(history)
    assert report.split_brain == [("t", 5, b"old owner", b"new owner")]
    assert report.lost == [("t", 5, b"old owner", None)]


def test_a_payload_nobody_sent_is_a_phantom():
    history = _history()
    _publish(history, "t", b"a", 1)
    history.record_log("t", [(1, b"a"), (2, b"forged")])
    assert check(history).phantom == [("t", 2, b"forged")]


def test_subscriber_gaps_mismatches_and_reordering_are_found():
    history = _valid()
    history.received[("t", "s")] = [(1, b"a"), (3, b"c"), (2, b"b"), (4, b"zz")]
    report = check(history)
    assert report.subscriber_reordered == [("t", "s", 2, 3)]
    assert report.subscriber_mismatches == [("t", "s", 4, b"zz")]
    assert report.subscriber_gaps == []
    history.received[("t", "s")] = [(1, b"a"), (3, b"c")]
    assert check(history).subscriber_gaps == [("t", "s", [2], 1)]


def test_the_longest_stall_is_the_longest_time_without_an_acknowledgement():
    history = _history()  # clock: each invoke and outcome is one tick
    for seq in (1, 2):
        _publish(history, "t", b"%d" % seq, seq)  # acknowledged at 2 and 4
    _publish(history, "t", b"lost in a partition")  # gave up at 6
    _publish(history, "t", b"3", 3)  # acknowledged at 8
    assert longest_stall(history.publishes, 0.0, 10.0) == 4.0
    history.record_log("t", [(1, b"1"), (2, b"2"), (3, b"3")])
    assert check(history, window=(0.0, 10.0)).unavailable_s == 4.0
