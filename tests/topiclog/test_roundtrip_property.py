"""Property: whatever mix of appends, rolls, restarts, garbage collection and reads, every
read returns exactly the retained entries that were acknowledged, in order, within its
bounds, and seq-ids stay dense."""

import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hedwig.config.settings import LogSettings
from hedwig.topiclog import SeqNotRetained
from tests.topiclog.conftest import _backend_param
from tests.topiclog.harness import BACKENDS, LogStack, failure_of, message_set, settle

appends = st.tuples(st.just("append"), st.integers(1, 6), st.integers(1, 700))
reads = st.tuples(st.just("read"), st.integers(0, 1000), st.integers(1, 12), st.integers(1, 4000))
restarts = st.tuples(st.just("restart"))
collections = st.tuples(st.just("gc"), st.integers(0, 1000))
operations = st.lists(
    st.one_of(appends, appends, appends, reads, reads, restarts, collections), min_size=1, max_size=60
)
limits = st.tuples(st.integers(0, 6), st.sampled_from([0, 600, 2000]))


def check_read(stack, topic_log, model, from_seq, max_entries, max_bytes):
    """Compare a read with the model: model holds (first_seq, last_seq, data) retained."""
    first = model[0][0] if model else topic_log.first_seq
    d = topic_log.read(from_seq, max_entries, max_bytes)
    if from_seq > topic_log.last_seq:
        assert settle(stack, d) == []
        return
    if from_seq < first:
        assert failure_of(stack, d).check(SeqNotRetained)
        return
    got = settle(stack, d)
    start = next(i for i, (f, last, _) in enumerate(model) if f <= from_seq <= last)
    expected = []
    total = 0
    for f, last, data in model[start : start + max_entries]:
        if expected and total + len(data) > max_bytes:
            break
        expected.append((f, last, data))
        total += len(data)
    assert [(e.first_seq, e.last_seq, e.data) for e in got] == expected


@pytest.mark.parametrize("backend", [_backend_param(name) for name in BACKENDS])
@settings(max_examples=int(__import__("os").environ.get("HEDWIG_EXAMPLES", "40")))
@given(ops=operations, limits=limits)
def test_append_read_roundtrip(backend, ops, limits):
    max_entries, max_bytes = limits
    with tempfile.TemporaryDirectory() as directory:
        stack = LogStack(
            backend, directory, LogSettings(max_ledger_entries=max_entries, max_ledger_bytes=max_bytes)
        )
        try:
            manager = stack.manager()
            topic_log = settle(stack, manager.open("t"))
            model = []  # (first_seq, last_seq, data) of every retained, acknowledged entry
            next_seq = 1
            for tag, op in enumerate(ops):
                if op[0] == "append":
                    _, count, size = op
                    stack.clock.advance(0.001)
                    entry = settle(stack, topic_log.append(message_set(count, size, tag), count))
                    assert (entry.first_seq, entry.last_seq) == (next_seq, next_seq + count - 1)
                    assert topic_log.last_seq == entry.last_seq
                    model.append((entry.first_seq, entry.last_seq, entry.data))
                    next_seq += count
                elif op[0] == "read":
                    _, from_seq, n, nbytes = op
                    check_read(stack, topic_log, model, min(from_seq, next_seq + 1) or 1, n, nbytes)
                elif op[0] == "restart":
                    manager = stack.restart()
                    topic_log = settle(stack, manager.open("t"))
                    assert topic_log.last_seq == next_seq - 1
                else:
                    consumed = min(op[1], next_seq - 1)
                    before = topic_log.first_seq
                    settle(stack, topic_log.collect_garbage(consumed))
                    # only whole ledgers at or below `consumed` may have gone
                    assert topic_log.first_seq == before or topic_log.first_seq <= consumed + 1
                    model = [m for m in model if m[0] >= topic_log.first_seq]
                    assert not model or model[0][0] == topic_log.first_seq
            # everything retained reads back in one pass
            if model:
                check_read(stack, topic_log, model, model[0][0], len(model), 1 << 30)
            assert [(r.first_seq, r.last_seq) for r in topic_log.ranges] == [
                (r.first_seq, r.last_seq) for r in settle(stack, stack.metadata.get_topic("t")).value
            ]
        finally:
            stack.close()
