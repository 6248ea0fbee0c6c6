"""The SQLite store given a reactor: every statement on one worker thread, in call order,
answered on the reactor's thread, so a commit's fsync never stalls the hub."""

import threading

import pytest

from hedwig.meta import NEW, BadVersion, LedgerRange, MetadataError, SqliteMetadataStore, SubscriptionState
from tests.meta.answers import ThreadAnswers

RANGES = [LedgerRange(1, 1, None)]


@pytest.fixture
def answers():
    return ThreadAnswers()


@pytest.fixture
def store(tmp_path, answers):
    backend = SqliteMetadataStore(tmp_path / "hedwig.db", reactor=answers)
    yield backend
    if not backend._closed:
        answers.wait_for(backend.close())


def test_statements_run_on_a_worker_thread_and_answer_through_the_reactor(store, answers):
    threads = set()
    store._db.set_trace_callback(lambda _statement: threads.add(threading.get_ident()))
    put = store.put_topic("t", RANGES, NEW)
    assert not put.called, "answers arrive through the reactor, not in the caller's call"
    assert answers.wait_for(put) == 0
    assert threads and threading.get_ident() not in threads


def test_writes_keep_their_call_order(store, answers):
    """Each write names the version the one before it makes: only in order do all win."""
    answers.wait_for(store.put_subscription("t", "s", SubscriptionState(0, {}), NEW))
    writes = [store.put_subscription("t", "s", SubscriptionState(n, {}), n - 1) for n in range(1, 201)]
    assert [answers.wait_for(d) for d in writes] == list(range(1, 201))
    record = answers.wait_for(store.get_subscription("t", "s"))
    assert record.value.consumed_seq == 200 and record.version == 200


def test_a_lost_compare_and_set_reaches_its_caller(store, answers):
    answers.wait_for(store.put_topic("t", RANGES, NEW))
    with pytest.raises(BadVersion, match="already exists"):
        answers.wait_for(store.put_topic("t", RANGES, NEW))


def test_close_waits_for_every_write_called_before_it(tmp_path, store, answers):
    writes = [store.put_subscription("t", f"s{n}", SubscriptionState(n, {}), NEW) for n in range(100)]
    closed = store.close()
    with pytest.raises(MetadataError, match="closed"):
        answers.wait_for(store.get_topic("t"))
    answers.wait_for(closed)
    assert all(d.called for d in writes)
    reopened = SqliteMetadataStore(tmp_path / "hedwig.db")
    try:
        found = reopened.list_subscriptions("t")
        records = []
        found.addCallback(records.append)
        assert sorted(r.value.consumed_seq for r in records[0].values()) == list(range(100))
    finally:
        reopened.close()
