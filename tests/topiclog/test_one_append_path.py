"""Property: the one-call append (TopicLog._append_local, a client's message set to an idle
log) and the general path (TopicLog._hand_over, which every other append takes) leave a
topic log in the same state. Two topics of one stack take the same operations, one
publishing as a client does, the other naming its own region as the origin (so every
append of it goes the general way): after every operation both answered alike and hold
the same seq-ids, entries, open ledger, ranges, rolls and queues. Operations: appends of
any size, time passing (age rolls), the store holding acknowledgements and releasing
them, refusing an append at once, failing one after storing it (a failed sync), garbage
collection and roll_if_aged, under roll limits drawn at random."""

import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from hedwig.config.settings import LogSettings
from hedwig.ledger import LedgerStoreFull
from hedwig.topiclog.entry import LogEntry
from tests.topiclog.conftest import _backend_param
from tests.topiclog.harness import BACKENDS, LogStack, message_set, settle

REGION = "r1"  # the stack's manager's region: the general log's appends name it as their origin

appends = st.tuples(st.just("append"), st.integers(1, 5), st.integers(1, 400))
ticks = st.tuples(st.just("tick"), st.sampled_from([0.001, 0.002, 0.003, 0.011]))
holds = st.tuples(st.just("hold"))
releases = st.tuples(st.just("release"))
refusals = st.tuples(st.just("refuse"), st.integers(1, 400))
sync_failures = st.tuples(st.just("fail_sync"), st.integers(1, 400))
collections = st.tuples(st.just("gc"), st.integers(0, 60))
age_checks = st.tuples(st.just("roll_if_aged"))
plain_operations = st.lists(
    st.one_of(appends, appends, ticks, ticks, collections, age_checks), min_size=1, max_size=40
)
faulty_operations = st.lists(
    st.one_of(
        appends, appends, appends, ticks, holds, releases, refusals, collections, age_checks, sync_failures
    ),
    min_size=1,
    max_size=40,
)
limits = st.tuples(st.integers(0, 5), st.sampled_from([0, 300, 1000]), st.sampled_from([0.0, 0.002, 0.01]))


class Answer:
    """What an append answered: the entry at once, or a Deferred whose outcome is kept
    when it fires."""

    def __init__(self, result):
        self.result = result
        self.fired = []
        if isinstance(result, Deferred):
            result.addBoth(self.fired.append)

    def outcome(self):
        """Comparable across topics: ("entry", ...), ("waiting",), ("acknowledged", ...)
        or ("failed", its type)."""
        result = self.result
        if type(result) is LogEntry:
            return ("entry", result.first_seq, result.last_seq, result.data, result.publish_time_us)
        assert isinstance(result, Deferred), result
        if not self.fired:
            return ("waiting",)
        if isinstance(self.fired[0], Failure):
            return ("failed", self.fired[0].type)
        entry = self.fired[0]
        return ("acknowledged", entry.first_seq, entry.last_seq, entry.data, entry.publish_time_us)


def state(topic_log) -> dict:
    """Everything an append may change, except ledger ids (the two topics share a store)."""
    ledger = topic_log.open_ledger
    return {
        "last_seq": topic_log.last_seq,
        "next_seq": topic_log._next_seq,
        "last_time_us": topic_log._last_time_us,
        "first_seq": topic_log.first_seq,
        "open": topic_log.is_open,
        "stopped_by": type(topic_log.stopped_by),
        "rolls": topic_log.rolls,
        "ranges": [(r.first_seq, r.last_seq) for r in topic_log.ranges],
        "open_ledger": (
            ledger.first_seq,
            ledger.entries,
            ledger.bytes,
            ledger.closed,
            ledger.roll_after_us,
            [ledger.index.first_seq(i) for i in range(len(ledger.index))],
        ),
        "inflight": [(op.done, op.out, op.entry and op.entry.first_seq) for op in topic_log._inflight],
        "waiting": len(topic_log._waiting),
        "rolling": topic_log._rolling,
    }


def fired_now(d):
    """A Deferred's result when it fired already (GC, roll_if_aged): its kind, comparable."""
    out = []
    d.addBoth(out.append)
    if not out:
        return ("waiting",)
    return ("failed", out[0].type) if isinstance(out[0], Failure) else ("done", out[0])


def run(backend, ops, limit):
    max_entries, max_bytes, max_age_s = limit
    log_settings = LogSettings(
        max_ledger_entries=max_entries, max_ledger_bytes=max_bytes, max_ledger_age_s=max_age_s
    )
    with tempfile.TemporaryDirectory() as directory:
        stack = LogStack(backend, directory, log_settings)
        try:
            manager = stack.manager(REGION)
            one_call, general = settle(stack, manager.open("a")), settle(stack, manager.open("b"))
            taken = []
            append_local = one_call._append_local
            one_call._append_local = lambda *args: taken.append(1) or append_local(*args)
            answers = {"a": [], "b": []}
            for tag, op in enumerate(ops):
                kind = op[0]
                if kind in ("append", "refuse", "fail_sync"):
                    count, size = (op[1], op[2]) if kind == "append" else (1, op[1])
                    payload = message_set(count, size, tag)
                    for topic_log, options in ((one_call, {}), (general, {"origin_region": REGION})):
                        if kind == "refuse":
                            stack.ledgers.fail_appends(LedgerStoreFull("full"))
                        elif kind == "fail_sync":
                            stack.ledgers.fail_appends(OSError("sync failed"), after_storing=True)
                        answers[topic_log.topic].append(
                            Answer(topic_log.append_now(payload, count, **options))
                        )
                        if kind != "append":
                            # An append that waits (behind a roll) leaves the failure unused: it
                            # is for this append only, not for whichever reaches the store next.
                            stack.ledgers._failures.clear()
                elif kind == "tick":
                    stack.clock.advance(op[1])
                elif kind == "hold":
                    stack.ledgers.hold_acks()
                elif kind == "release":
                    stack.ledgers.release_acks()
                elif kind == "gc":
                    assert fired_now(one_call.collect_garbage(op[1])) == fired_now(
                        general.collect_garbage(op[1])
                    )
                else:
                    assert fired_now(one_call.roll_if_aged()) == fired_now(general.roll_if_aged())
                assert state(one_call) == state(general), f"after {op}"
                assert [a.outcome() for a in answers["a"]] == [b.outcome() for b in answers["b"]], (
                    f"after {op}"
                )
            if backend == "memory":
                stack.ledgers.release_acks()
            assert [a.outcome() for a in answers["a"]] == [b.outcome() for b in answers["b"]]
            assert state(one_call) == state(general)
            return len(taken)
        finally:
            stack.close()


EXAMPLES = int(os.environ.get("HEDWIG_EXAMPLES", "100"))


@pytest.mark.parametrize("backend", [_backend_param(name) for name in BACKENDS])
@settings(max_examples=EXAMPLES, deadline=None)
@given(ops=plain_operations, limit=limits)
def test_the_one_call_append_and_the_general_path_leave_the_same_state(backend, ops, limit):
    run(backend, ops, limit)


@settings(max_examples=EXAMPLES, deadline=None)
@given(ops=faulty_operations, limit=limits)
def test_the_same_state_whatever_the_store_answers(ops, limit):
    """(The in-memory store holds acknowledgements and fails appends on command.)"""
    run("memory", ops, limit)


def test_the_comparison_runs_through_the_one_call_append():
    """The property above compares the two paths, not the general path with itself: a
    plain run of appends takes the one-call path on the client's topic."""
    ops = [("append", 2, 50), ("tick", 0.001), ("append", 1, 10), ("append", 3, 200)]
    assert run("memory", ops, (2, 0, 0.0)) == 3
