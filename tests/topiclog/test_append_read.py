"""Appends and reads: seq-id assignment, entry bytes, acknowledgement order, read bounds."""

import pytest

from hedwig.config.settings import LogSettings
from hedwig.protocol import decode_entry, decode_entry_header
from hedwig.topiclog import SeqNotRetained
from tests.topiclog.harness import failure_of, message_set, settle


@pytest.fixture
def stack(make_stack):
    return make_stack(LogSettings(max_ledger_entries=4))


@pytest.fixture
def topic_log(stack):
    return settle(stack, stack.manager().open("t"))


def append_all(stack, topic_log, counts, size=16):
    return [settle(stack, topic_log.append(message_set(n, size, tag=i), n)) for i, n in enumerate(counts)]


def test_fresh_topic_is_empty(topic_log):
    assert (topic_log.first_seq, topic_log.last_seq) == (1, 0)


def test_seq_ids_are_dense_over_message_sets(stack, topic_log):
    entries = append_all(stack, topic_log, [1, 3, 2, 5])
    assert [(e.first_seq, e.last_seq) for e in entries] == [(1, 1), (2, 4), (5, 6), (7, 11)]
    assert topic_log.last_seq == 11


def test_entry_bytes_are_header_plus_the_message_set_as_sent(stack, topic_log):
    stack.clock.advance(2.5)
    body = message_set(3, 40, tag=7)
    entry = settle(stack, topic_log.append(body, 3))
    header = decode_entry_header(entry.data)
    assert entry.data[header.body_offset :] == body
    assert (header.first_seq, header.count, header.origin_region, header.origin_seq) == (1, 3, "r1", 1)
    assert header.publish_time_us == entry.publish_time_us == int(stack.clock.seconds() * 1e6)
    assert [m.seq for m in decode_entry("t", entry.data)] == [1, 2, 3]


def test_relayed_entries_keep_their_origin(stack, topic_log):
    append_all(stack, topic_log, [2])
    entry = settle(stack, topic_log.append(message_set(2), 2, origin_region="eu", origin_seq=500))
    header = decode_entry_header(entry.data)
    assert (header.first_seq, header.origin_region, header.origin_seq) == (3, "eu", 500)


def test_read_returns_exactly_what_was_appended_across_ledgers(stack, topic_log):
    entries = append_all(stack, topic_log, [1, 2, 3, 1, 1, 4, 2, 2, 1, 1])
    assert len(topic_log.describe()["ledgers"]) == 3
    got = settle(stack, topic_log.read(1, 100, 1 << 30))
    assert [(e.first_seq, e.last_seq, e.data, e.publish_time_us) for e in got] == [
        (e.first_seq, e.last_seq, e.data, e.publish_time_us) for e in entries
    ]


def test_read_from_the_middle_of_an_entry_returns_that_entry(stack, topic_log):
    append_all(stack, topic_log, [3, 3, 3])
    got = settle(stack, topic_log.read(5, 10, 1 << 30))
    assert [(e.first_seq, e.last_seq) for e in got] == [(4, 6), (7, 9)]


def test_read_stops_at_max_entries(stack, topic_log):
    append_all(stack, topic_log, [1] * 10)
    got = settle(stack, topic_log.read(2, 6, 1 << 30))
    assert [e.first_seq for e in got] == [2, 3, 4, 5, 6, 7]  # crosses a ledger boundary at 5


def test_read_keeps_within_max_bytes_but_returns_at_least_one_entry(stack, topic_log):
    entries = append_all(stack, topic_log, [1] * 8, size=100)
    size = entries[0].size
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 100, 3 * size))] == [1, 2, 3]
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 100, 3 * size - 1))] == [1, 2]
    assert [e.first_seq for e in settle(stack, topic_log.read(3, 100, 5 * size + 3))] == [3, 4, 5, 6, 7]
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 100, 1))] == [1]


def test_read_beyond_the_end_is_empty(stack, topic_log):
    assert settle(stack, topic_log.read(1, 10, 1000)) == []
    append_all(stack, topic_log, [2])
    assert settle(stack, topic_log.read(3, 10, 1000)) == []
    assert settle(stack, topic_log.read(1000, 10, 1000)) == []


def test_read_before_the_first_retained_seq_fails(stack, topic_log):
    append_all(stack, topic_log, [1] * 9)
    assert settle(stack, topic_log.collect_garbage(4)) == 1
    assert topic_log.first_seq == 5
    failure = failure_of(stack, topic_log.read(4, 10, 1000))
    assert failure.check(SeqNotRetained)
    assert (failure.value.seq, failure.value.first_seq) == (4, 5)
    assert settle(stack, topic_log.read(5, 1, 1000))[0].first_seq == 5


@pytest.mark.parametrize(
    "args", [(0, 1, 1), (-3, 1, 1), (1, 0, 1), (1, 1, 0), ("1", 1, 1), (1, 1.5, 1), (1, 1, None)]
)
def test_read_refuses_nonsense_bounds(stack, topic_log, args):
    append_all(stack, topic_log, [1])
    assert failure_of(stack, topic_log.read(*args)).check(ValueError)


@pytest.mark.parametrize(
    "args, message",
    [
        ((b"", 1), "empty"),
        ((message_set(1), 0), "1.."),
        ((message_set(1), -1), "1.."),
        ((message_set(1), 1 << 32), "1.."),
        ((message_set(1), True), "1.."),
        (("text", 1), "bytes-like"),
        ((message_set(1), 1, "x" * 256), "255 bytes"),
        ((message_set(1), 1, "eu", 0), "origin seq-ids"),
    ],
)
def test_append_refuses_bad_input_and_consumes_no_seq_ids(stack, topic_log, args, message):
    append_all(stack, topic_log, [2])
    failure = failure_of(stack, topic_log.append(*args))
    assert failure.check(TypeError, ValueError)
    assert message in str(failure.value)
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 3


def test_bytearray_and_memoryview_message_sets_are_stored_as_bytes(stack, topic_log):
    body = message_set(2, 32)
    a = settle(stack, topic_log.append(bytearray(body), 2))
    b = settle(stack, topic_log.append(memoryview(body), 2))
    assert type(a.data) is bytes and a.data.endswith(body) and b.data.endswith(body)


def test_publish_times_never_go_backwards(stack, topic_log):
    stack.clock.advance(10)
    first = settle(stack, topic_log.append(message_set(1), 1))
    stack.clock.rightNow -= 5  # the wall clock steps back
    second = settle(stack, topic_log.append(message_set(1), 1))
    assert second.publish_time_us == first.publish_time_us


def test_describe_is_json_able_and_accurate(stack, topic_log):
    import json

    entries = append_all(stack, topic_log, [2] * 5)
    described = json.loads(json.dumps(topic_log.describe()))
    assert (described["first_seq"], described["last_seq"]) == (1, 10)
    assert [(d["first_seq"], d["last_seq"]) for d in described["ledgers"]] == [(1, 8), (9, 10)]
    assert sum(d["bytes"] for d in described["ledgers"]) == sum(e.size for e in entries)
