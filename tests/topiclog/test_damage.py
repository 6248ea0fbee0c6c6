"""A topic with a damaged entry or a missing ledger serves what remains: a read stops
before the seq-ids it cannot read and returns what precedes them; a read starting at them
fails with EntriesUnreadable, which names the topic and the seq-ids and no server path,
while the operator's log line names the ledger and where."""

import os

from twisted.logger import capturedLogs

from hedwig.ledger.layout import data_page_name
from hedwig.testing.deferreds import fired
from hedwig.topiclog.errors import EntriesUnreadable
from tests.topiclog.harness import failure_of, message_set, settle


def seqs(entries):
    return [(e.first_seq, e.last_seq) for e in entries]


def two_ledgers(stack):
    """Topic "t": seq-ids 1..3 in a closed ledger, 4..5 in the next one (after a restart).
    Returns the first ledger's id."""
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(1), 1))
    first_ledger = topic_log.open_ledger_id
    topic_log = settle(stack, stack.restart().open("t"))
    settle(stack, topic_log.append(message_set(2), 2))
    return first_ledger


def test_a_missing_ledger_loses_its_seq_ids_only(make_stack, tmp_path):
    stack = make_stack()
    first_ledger = two_ledgers(stack)
    settle(stack, stack.ledgers.delete(first_ledger))
    with capturedLogs() as events:
        topic_log = settle(stack, stack.restart().open("t"))
    lost = [e for e in events if "lost" in e.get("log_format", "")]
    assert [(e["ledger_id"], e["first"], e["last"]) for e in lost] == [(first_ledger, 1, 3)]
    assert seqs(settle(stack, topic_log.read(4, 10, 1 << 20))) == [(4, 5)]
    failure = failure_of(stack, topic_log.read(1, 10, 1 << 20))
    assert failure.check(EntriesUnreadable)
    assert (failure.value.first_seq, failure.value.last_seq) == (1, 3)
    assert "topic t: seq-ids 1..3 cannot be read" in str(failure.value)
    assert str(tmp_path) not in str(failure.value)
    assert topic_log.describe()["ledgers"][0]["bytes"] is None
    # It still takes publishes, after what it had.
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 6


def test_a_read_stops_before_a_damaged_entry(make_stack, backend, tmp_path):
    if backend == "memory":
        return  # (nothing to damage: the in-memory store holds no files)
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(5):
        settle(stack, topic_log.append(message_set(1, size=100), 1))
    ledger_id = topic_log.open_ledger_id
    path = stack.ledgers.ledger_path(ledger_id)
    entry_size = len(fired(stack.ledgers.read(ledger_id, 0, 0))[0])
    with open(os.path.join(path, data_page_name(0)), "r+b") as f:
        f.seek(2 * entry_size)  # entry 2 holds seq-id 3: its header becomes zeros
        f.write(bytes(20))
    with capturedLogs() as events:
        assert seqs(settle(stack, topic_log.read(1, 10, 1 << 20))) == [(1, 1), (2, 2)]
        failure = failure_of(stack, topic_log.read(3, 10, 1 << 20))
    assert failure.check(EntriesUnreadable)
    assert failure.value.first_seq == 3
    assert str(tmp_path) not in str(failure.value)
    logged = [e for e in events if e.get("detail")]
    assert logged and f"ledger {ledger_id} entry 2" in logged[0]["detail"]
    assert seqs(settle(stack, topic_log.read(4, 10, 1 << 20))) == [(4, 4), (5, 5)]
