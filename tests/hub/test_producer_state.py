"""The hub's idempotent producers (hedwig.hub.producer_state), through the connection
protocol on a hub of real parts (tests/hub/harness.py): a repeated set is answered with
its first seq-ids and not stored again, a gap is refused, and a hub started again on the
same ledgers and metadata knows every acknowledged set from the entries' headers."""

import pytest

from hedwig.hub.producer_state import ProducerTable
from hedwig.protocol import Op, Status, encode_message_set
from hedwig.protocol.producer_requests import decode_idempotent_publish, encode_idempotent_publish
from hedwig.protocol.requests import RequestRefused
from tests.hub.harness import HubHarness

PRODUCER = 0x1234_5678_9ABC


def publish(peer, topic, sequence, payloads, producer=PRODUCER, first_send=False):
    body = encode_idempotent_publish(topic, producer, sequence, encode_message_set(payloads), first_send)
    return peer.send(Op.IDEMPOTENT_PUBLISH, body)


def answers(peer):
    return [(r.status, r.value if r.status is Status.SUCCESS else r.message) for _id, r in peer.responses()]


def seq_ids(peer):
    out = []
    for status, value in answers(peer):
        assert status is Status.SUCCESS, value
        out.append((value.first_seq, value.last_seq))
    return out


def test_init_producer_hands_out_distinct_nonzero_ids(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    for _ in range(3):
        peer.send(Op.INIT_PRODUCER)
    ids = [value for _status, value in answers(peer)]
    assert len(set(ids)) == 3 and all(isinstance(i, int) and 0 < i < 1 << 64 for i in ids)


def test_a_repeated_set_is_answered_with_its_first_seq_ids_and_not_stored_again(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"a", b"b"])
    publish(peer, "t", 1, [b"c"])
    harness.clock.advance(1)
    assert seq_ids(peer) == [(1, 2), (3, 3)]
    stored = harness.stored_entries()
    publish(peer, "t", 0, [b"a", b"b"])
    publish(peer, "t", 1, [b"c"])
    publish(peer, "t", 2, [b"d"])
    harness.clock.advance(1)
    assert seq_ids(peer) == [(1, 2), (3, 3), (4, 4)]
    assert harness.stored_entries() == stored + 1


def test_a_repeat_of_a_set_still_in_flight_waits_for_its_outcome(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    other = harness.connect()
    publish(peer, "t", 0, [b"a"])
    publish(other, "t", 0, [b"a"])  # (a resend on a new connection, the first not yet answered)
    harness.clock.advance(1)
    assert seq_ids(peer) == [(1, 1)]
    assert seq_ids(other) == [(1, 1)]
    assert harness.stored_entries() == 1


def test_a_gap_is_refused_and_nothing_is_stored(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"a"])
    publish(peer, "t", 2, [b"c"])
    harness.clock.advance(1)
    [first, gap] = answers(peer)
    assert first[0] is Status.SUCCESS
    assert gap[0] is Status.PRODUCER_SEQUENCE_GAP and "expected 1" in gap[1]
    assert harness.stored_entries() == 1


def test_a_producer_new_to_a_topic_starts_at_zero(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 5, [b"a"])
    harness.clock.advance(1)
    [(status, message)] = answers(peer)
    assert status is Status.PRODUCER_SEQUENCE_GAP and "unknown" in message
    assert harness.stored_entries() == 0


def test_producers_are_counted_per_topic(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"a"])
    publish(peer, "u", 0, [b"b"])
    publish(peer, "t", 1, [b"c"])
    harness.clock.advance(1)
    assert seq_ids(peer) == [(1, 1), (1, 1), (2, 2)]


def test_a_restarted_hub_knows_every_acknowledged_set_from_the_ledgers(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    for sequence in range(5):
        publish(peer, "t", sequence, [b"%d" % sequence])
    peer.publish("t", [b"plain"])  # an entry without a producer, in between
    publish(peer, "t", 0, [b"x"], producer=PRODUCER + 1)
    harness.clock.advance(1)
    assert seq_ids(peer) == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
    stored = harness.stored_entries()
    # Started again on the same ledgers and metadata, as after a SIGKILL.
    again = HubHarness(tmp_path, ledgers=harness.ledgers, metadata=harness.metadata)
    peer = again.connect()
    publish(peer, "t", 3, [b"3"])
    publish(peer, "t", 4, [b"4"])
    publish(peer, "t", 0, [b"x"], producer=PRODUCER + 1)
    publish(peer, "t", 5, [b"5"])
    again.clock.advance(1)
    assert seq_ids(peer) == [(4, 4), (5, 5), (7, 7), (8, 8)]
    assert again.ledgers.appends - stored == 1
    publish(peer, "t", 9, [b"9"])
    again.clock.advance(1)
    [(status, _message)] = answers(peer)
    assert status is Status.PRODUCER_SEQUENCE_GAP


def test_a_repeat_older_than_the_window_is_refused_as_a_duplicate(tmp_path):
    harness = HubHarness(tmp_path)
    harness.hub.producers.window = 4
    peer = harness.connect()
    for sequence in range(6):
        publish(peer, "t", sequence, [b"m"])
    harness.clock.advance(1)
    assert len(seq_ids(peer)) == 6
    publish(peer, "t", 2, [b"m"])
    publish(peer, "t", 1, [b"m"])
    harness.clock.advance(1)
    [(status, value), (old, _message)] = answers(peer)
    assert status is Status.SUCCESS and (value.first_seq, value.last_seq) == (3, 3)
    assert old is Status.DUPLICATE_SEQUENCE
    assert harness.stored_entries() == 6


def test_producers_remembered_per_topic_are_capped_oldest_first(tmp_path):
    harness = HubHarness(tmp_path)
    harness.hub.producers.max_producers = 3
    peer = harness.connect()
    for producer in range(1, 5):
        publish(peer, "t", 0, [b"m"], producer=producer)
    harness.clock.advance(1)
    assert len(seq_ids(peer)) == 4
    table = harness.hub.producers.table(harness.topics.get("t"))
    assert list(table.producers) == [2, 3, 4] and table.evicted == 1
    publish(peer, "t", 1, [b"m"], producer=1)  # forgotten: the hub cannot tell, and refuses
    publish(peer, "t", 1, [b"m"], producer=4)
    harness.clock.advance(1)
    [(forgotten, _message), (kept, _value)] = answers(peer)
    assert forgotten is Status.PRODUCER_SEQUENCE_GAP and kept is Status.SUCCESS


def test_a_crowd_of_short_lived_producers_does_not_push_out_a_long_lived_one(tmp_path):
    """Issue 41, point 1, with [auth] off: 1,100 producers of one set each (more than the
    1,024 a topic remembers) pushed out the producer that had published all along, whose
    next set was then a gap for good. One heard from again is protected from new ones:
    the newcomers push out each other."""
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"long"])
    publish(peer, "t", 1, [b"long"])
    for producer in range(1, 1101):
        publish(peer, "t", 0, [b"short"], producer=producer)
    publish(peer, "t", 2, [b"long"])
    harness.clock.advance(1)
    assert len(seq_ids(peer)) == 1103  # the long-lived producer's set 2 was stored, not a gap
    table = harness.hub.producers.table(harness.topics.get("t"))
    assert len(table.producers) == 1024 and table.evicted == 1101 - 1024
    assert PRODUCER in table.producers


@pytest.mark.parametrize(
    "body, status",
    [
        (b"\x01t" + b"\x00" * 8 + b"\x00" * 5 + encode_message_set([b"a"]), Status.MALFORMED_REQUEST),
        (b"\x01t" + b"\x00" * 7 + b"\x01" + b"\x00" * 4, Status.MALFORMED_REQUEST),
        (b"\x01t" + b"\x00" * 7 + b"\x01" + b"\x00" * 5, Status.MALFORMED_REQUEST),
        (
            b"\x01t" + b"\x00" * 7 + b"\x01" + b"\x00" * 4 + b"\x02" + encode_message_set([b"a"]),
            Status.MALFORMED_REQUEST,
        ),
        (b"\x01!" + b"\x00" * 7 + b"\x01" + b"\x00" * 5 + encode_message_set([b"a"]), Status.INVALID_TOPIC),
    ],
    ids=["producer-0", "truncated", "no-message-set", "unknown-flag", "bad-topic"],
)
def test_idempotent_publish_fields_are_checked_where_decoded(body, status):
    with pytest.raises(RequestRefused) as refused:
        decode_idempotent_publish(body)
    assert refused.value.status is status


def test_a_hostile_set_is_refused_and_the_producer_goes_on(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.send(Op.IDEMPOTENT_PUBLISH, encode_idempotent_publish("t", PRODUCER, 0, b"\x00\x01"))
    publish(peer, "t", 0, [b"a"])
    harness.clock.advance(1)
    [(bad, _message), (good, _value)] = answers(peer)
    assert bad is Status.MALFORMED_REQUEST and good is Status.SUCCESS
    assert isinstance(harness.hub.producers.table(harness.topics.get("t")), ProducerTable)


def test_recovery_scans_down_in_steps_past_entries_of_other_publishers(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"mine"])
    for _ in range(5):  # 5,000 seq-ids above the producer's set: more than the first step's span
        peer.publish("t", [b"other"] * 1000)
    harness.clock.advance(1)
    assert len(answers(peer)) == 6
    again = HubHarness(tmp_path, ledgers=harness.ledgers, metadata=harness.metadata)
    peer = again.connect()
    publish(peer, "t", 0, [b"mine"])
    publish(peer, "t", 1, [b"next"])
    again.clock.advance(0)  # (the steps after the first wait a reactor turn each)
    again.clock.advance(1)
    assert seq_ids(peer) == [(1, 1), (5002, 5002)]
    table = again.hub.producers.table(again.topics.get("t"))
    assert table.entries_scanned == 6 and table.scanned_all


def test_stored_sets_are_counted_once_repeats_not(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"a", b"b"])
    publish(peer, "t", 0, [b"a", b"b"])
    harness.clock.advance(1)
    assert len(seq_ids(peer)) == 2
    assert harness.hub.stats.messages_published == 2
    assert harness.hub.hub_stats()["ops"]["idempotent_publish"]["ok"] == 2


def test_a_new_producers_first_send_of_set_0_needs_no_scan_of_the_log(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    for sequence in range(3):
        publish(peer, "t", sequence, [b"old"])
    harness.clock.advance(1)
    assert len(seq_ids(peer)) == 3
    again = HubHarness(tmp_path, ledgers=harness.ledgers, metadata=harness.metadata)
    peer = again.connect()
    publish(peer, "t", 0, [b"new"], producer=PRODUCER + 1, first_send=True)
    again.clock.advance(1)
    assert seq_ids(peer) == [(4, 4)]
    table = again.hub.producers.table(again.topics.get("t"))
    assert table.entries_scanned == 0 and not table.scanned_all
    # A resend of set 0 (no first-send flag) by the earlier producer is looked for, and found.
    publish(peer, "t", 0, [b"old"])
    again.clock.advance(1)
    assert seq_ids(peer) == [(1, 1)]
    assert table.entries_scanned == 3  # (the entries below the one appended through the table)


def _log_of_plain_entries(tmp_path, entries: int):
    """A hub started again over `entries` plain entries below producer PRODUCER's set 0."""
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    publish(peer, "t", 0, [b"mine"])
    for _ in range(entries):
        peer.publish("t", [b"x"])
    harness.clock.advance(1)
    assert len(answers(peer)) == entries + 1
    return HubHarness(tmp_path, ledgers=harness.ledgers, metadata=harness.metadata)


def test_a_known_producer_is_answered_while_an_unknown_ones_scan_reads_the_log(tmp_path):
    """Issue 41, point 5: one IDEMPOTENT_PUBLISH of an unknown producer at set 5 made
    every idempotent publish to the topic wait until the whole log was read. A known
    producer's next set needs nothing of the scan: it is decided at once."""
    again = _log_of_plain_entries(tmp_path, 10_000)
    known, unknown = again.connect(), again.connect()
    publish(known, "t", 0, [b"k0"], producer=PRODUCER + 1, first_send=True)  # known, no scan
    again.clock.advance(0)
    assert seq_ids(known) == [(10_002, 10_002)]
    publish(unknown, "t", 5, [b"u"], producer=PRODUCER + 2)  # the whole log is read for it
    publish(known, "t", 1, [b"k1"], producer=PRODUCER + 1)
    turns = 0
    while not (got := answers(known)):
        again.clock.advance(0)
        turns += 1
        assert turns < 100
    assert got[0][0] is Status.SUCCESS
    assert answers(unknown) == []  # its scan goes on meanwhile
    while not (refused := answers(unknown)):
        again.clock.advance(0)
        turns += 1
        assert turns < 100
    [(status, _message)] = refused
    assert status is Status.PRODUCER_SEQUENCE_GAP
    table = again.hub.producers.table(again.topics.get("t"))
    assert table.scanned_all and PRODUCER in table.producers  # learnt on the way down


def test_a_scan_reads_a_bounded_number_of_entries_per_reactor_turn(tmp_path):
    """Issue 41, point 5: read_window read a whole window (up to 16M seq-ids) in one turn
    from a mapped ledger, whatever SCAN_STEP_BYTES said. Each read takes at most
    SCAN_STEP_ENTRIES entries, and the next waits for a later turn."""
    from twisted.internet.defer import Deferred

    from hedwig.topiclog.backward import SCAN_STEP_ENTRIES, read_window

    again = _log_of_plain_entries(tmp_path, 10_000)
    publish(again.connect(), "t", 0, [b"n"], producer=PRODUCER + 1, first_send=True)  # (opens it)
    again.clock.advance(1)
    topic_log = again.topics.get("t")
    turns = []  # the Deferreds the reading waits on: a reactor turn each

    def next_turn():
        turns.append(Deferred())
        return turns[-1]

    window = []
    done = read_window(topic_log, 1, topic_log.last_seq - 1, window, next_turn)
    sizes = [len(window)]
    while not done.called:
        turns[-1].callback(None)
        sizes.append(len(window))
    step = SCAN_STEP_ENTRIES
    assert step <= 4096 and sizes == [*range(step, 10_001, step), 10_001]
    assert [entry.first_seq for entry, _head in window] == list(range(1, 10_002))
    assert window[0][1].producer_id == PRODUCER
