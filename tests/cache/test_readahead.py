"""The read-ahead cache's rules, one test each, over a log whose reads the test completes."""

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from hedwig.cache import ReadAheadCache
from hedwig.cache.readahead import TopicReleased
from hedwig.cache.waits import TailWaiter
from hedwig.config.settings import CacheSettings
from hedwig.ledger import LedgerError
from tests.cache.controllable_log import ControllableLog


def make(cache_bytes=1 << 20, readahead_count=10, **kw):
    settings = CacheSettings(readahead_count=readahead_count, cache_bytes=cache_bytes, **kw)
    return ReadAheadCache(Clock(), settings)


def publish(cache, log, count=1, size=100):
    results = []
    cache.wrap(log).append(bytes(size), count).addCallback(results.append)
    return results[0]


@pytest.fixture
def caplog_failures():
    """The texts of the failures logged meanwhile (twisted.logger)."""
    from twisted.logger import globalLogPublisher

    texts = []

    def observe(event):
        failure = event.get("log_failure")
        if failure is not None:
            texts.append(failure.getErrorMessage())

    globalLogPublisher.addObserver(observe)
    yield texts
    globalLogPublisher.removeObserver(observe)


def result_of(d):
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    return out[0]


# -- the three cases of a request -----------------------------------------------------------


def test_cached_entry_is_returned_at_once():
    cache, log = make(), ControllableLog()
    entry = publish(cache, log, count=5)
    assert cache.get(log, 1) is entry
    assert cache.stats()["hits"] == 1
    assert log.reads == []


def test_seq_inside_an_entry_is_served_by_that_entry():
    cache, log = make(), ControllableLog()
    first = publish(cache, log, count=1000)
    second = publish(cache, log, count=1000)
    assert cache.get(log, 1500) is second
    assert cache.get(log, 999) is first
    assert cache.get(log, 2000) is second
    assert log.reads == []


def test_beyond_the_tail_a_stub_waits_for_the_publish():
    cache, log = make(), ControllableLog()
    publish(cache, log, count=3)
    waiting = cache.get(log, 4)
    assert isinstance(waiting, Deferred) and not waiting.called
    assert cache.stats()["stubs"] == 1 and cache.stats()["stub_waiters"] == 1
    entry = publish(cache, log, count=2)
    assert result_of(waiting) is entry
    assert log.reads == [], "a caught-up reader never reads the ledger"
    assert cache.stats()["stubs"] == 0


def test_a_caught_up_reader_waits_at_the_tail_and_the_publish_hands_it_the_entry():
    """wait_tail: the entry after last_seq comes to the waiter itself, with no stub and no
    Deferred; the counters and describe show the wait as the stub it stands for."""
    cache, log = make(), ControllableLog()
    publish(cache, log, count=3)
    got, failed = [], []
    waiter = TailWaiter(got.append, failed.append)
    assert cache.wait_tail(log, 4, waiter) is waiter
    assert cache.stats()["stubs"] == 1 and cache.stats()["stub_waiters"] == 1
    assert cache.stats()["tail_waits"] == 1 and cache.describe(log.topic)["stubs"] == [4]
    entry = publish(cache, log, count=2)
    assert got == [entry] and failed == []
    assert cache.stats()["stubs"] == 0 and cache.stats()["stub_waiters"] == 0
    # Registered again, then cancelled: the next publish calls nothing.
    cache.wait_tail(log, 6, waiter).cancel()
    publish(cache, log)
    assert got == [entry] and cache.stats()["stub_waiters"] == 0
    # A topic released while it waits fails the wait.
    cache.wait_tail(log, 7, waiter)
    cache.drop_topic(log.topic)
    assert got == [entry] and failed[0].check(TopicReleased)


def test_a_tail_waiter_that_fails_keeps_the_entry_from_no_one_else(caplog_failures):
    cache, log = make(), ControllableLog()
    got = []

    def broken(entry):
        raise RuntimeError("a broken reader")

    cache.wait_tail(log, 1, TailWaiter(broken, None))
    cache.wait_tail(log, 1, TailWaiter(got.append, None))
    entry = publish(cache, log)  # the publish itself is answered
    assert got == [entry] and cache.get(log, 1) is entry
    assert any("a broken reader" in text for text in caplog_failures)


def test_a_wait_further_ahead_than_the_tail_waits_on_a_stub():
    cache, log = make(), ControllableLog()
    publish(cache, log, count=3)
    got = []
    waiting = cache.wait_tail(log, 6, TailWaiter(got.append, None))
    assert isinstance(waiting, Deferred) and cache.describe(log.topic)["stubs"] == [6]
    publish(cache, log, count=2)
    assert got == []
    entry = publish(cache, log, count=2)
    assert got == [entry] and cache.stats()["stubs"] == 0


def test_a_stub_far_beyond_the_tail_is_filled_by_the_entry_holding_it():
    cache, log = make(), ControllableLog()
    waiting = cache.get(log, 25)
    publish(cache, log, count=10)
    publish(cache, log, count=10)
    assert not waiting.called
    third = publish(cache, log, count=10)
    assert result_of(waiting) is third


def test_published_but_not_cached_is_read_from_the_ledger():
    cache, log = make(), ControllableLog()
    backlog = log.backlog(30)
    waiting = cache.get(log, 5)
    assert isinstance(waiting, Deferred) and not waiting.called
    assert log.reads == [(5, 10, 4 << 20)]
    assert cache.stats()["misses"] == 1
    log.complete()
    assert result_of(waiting) is backlog[4]
    assert cache.cached_ranges("t") == [(s, s) for s in range(5, 15)]


# -- read-ahead ------------------------------------------------------------------------------


def test_a_miss_sets_n_stubs_fetched_by_one_range_read():
    cache, log = make(readahead_count=10), ControllableLog()
    log.backlog(40, count=3)
    waiting = cache.get(log, 31)  # inside the entry 31..33
    assert len(log.reads) == 1 and log.reads[0][:2] == (31, 10)
    assert cache.stats()["entries_in_flight"] == 10
    # A second reader close behind joins the read in flight instead of reading again.
    joined = cache.get(log, 34)
    assert len(log.reads) == 1
    log.complete()
    assert result_of(waiting).first_seq == 31
    assert result_of(joined).first_seq == 34
    assert cache.cached_ranges("t") == [(f, f + 2) for f in range(31, 61, 3)]
    assert cache.stats()["range_reads"] == 1 and cache.stats()["stubs"] == 0


def test_the_range_read_is_bounded_by_readahead_bytes():
    cache, log = make(readahead_count=10, readahead_bytes=250), ControllableLog()
    log.backlog(20, size=100)
    waiting = cache.get(log, 1)
    assert log.reads == [(1, 10, 250)]
    log.complete()
    assert result_of(waiting).first_seq == 1
    assert cache.cached_ranges("t") == [(1, 1), (2, 2)]


def test_a_hit_looks_half_n_ahead_and_reads_half_n_more():
    cache, log = make(readahead_count=10), ControllableLog()
    log.backlog(40)
    cache.get(log, 1)
    log.complete()  # entries 1..10 cached
    for seq in range(1, 6):  # 5 entries ahead of each of these are cached
        assert cache.get(log, seq).first_seq == seq
    assert len(log.reads) == 1
    assert cache.get(log, 6).first_seq == 6  # 6 + 5 = 11: neither cached nor stubbed
    assert log.reads[1][:2] == (11, 5)
    assert cache.stats()["lookahead_reads"] == 1
    cache.get(log, 7)  # 11 is being read: no second read
    assert len(log.reads) == 2
    log.complete()
    assert cache.cached_ranges("t") == [(s, s) for s in range(1, 16)]
    cache.get(log, 11)  # 11 + 5 = 16 missing: the next half
    assert log.reads[2][:2] == (16, 5)


def test_no_lookahead_past_the_tail():
    cache, log = make(readahead_count=10), ControllableLog()
    for _ in range(3):
        publish(cache, log)
    cache.get(log, 1)
    assert log.reads == []


# -- pruning and the byte budget ---------------------------------------------------------------


def test_pruning_drops_what_every_subscriber_consumed():
    cache, log = make(), ControllableLog()
    for _ in range(5):
        publish(cache, log, count=10)  # 1..10, 11..20, ..., 41..50
    assert cache.prune("t", 25) == 2  # 21..30 holds unconsumed messages: it stays
    assert cache.cached_ranges("t") == [(21, 30), (31, 40), (41, 50)]
    assert cache.stats()["evicted_pruned"] == 2
    assert cache.stats()["bytes"] == 300
    assert cache.prune("t", 50) == 3
    assert cache.stats()["bytes"] == 0 and cache.stats()["entries"] == 0


def test_over_the_budget_entries_leave_oldest_inserted_first_and_stubs_stay():
    cache, log = make(cache_bytes=300), ControllableLog()
    other = ControllableLog("u")
    other.backlog(3)
    tail = cache.get(log, 100)  # a stub: weighs nothing, never evicted
    publish(cache, log)  # seq 1
    publish(cache, log)  # seq 2
    early = cache.get(other, 1)
    other.complete()  # u:1..3 inserted after t:1 and t:2
    assert cache.stats()["bytes"] <= 300
    assert cache.cached_ranges("t") == []
    assert cache.cached_ranges("u") == [(1, 1), (2, 2), (3, 3)]
    assert result_of(early).first_seq == 1
    publish(cache, log)  # t:3 pushes u:1 out (oldest inserted)
    assert cache.cached_ranges("u") == [(2, 2), (3, 3)]
    assert cache.cached_ranges("t") == [(3, 3)]
    assert cache.stats()["evicted_fifo"] == 3
    assert cache.stats()["bytes"] == 300
    assert cache.stats()["stubs"] == 1 and not tail.called
    log.backlog(96)  # up to seq 99 straight to the log
    entry = publish(cache, log)
    assert result_of(tail) is entry


def test_an_entry_larger_than_the_cache_is_delivered_but_not_kept():
    cache, log = make(cache_bytes=300), ControllableLog()
    waiting = cache.get(log, 1)
    entry = publish(cache, log, size=1000)
    assert result_of(waiting) is entry
    assert cache.stats()["entries"] == 0 and cache.stats()["uncacheable"] == 1


# -- failures ----------------------------------------------------------------------------------


def test_a_failed_read_fails_its_waiters_and_leaves_no_stub():
    cache, log = make(), ControllableLog()
    log.backlog(20)
    first = cache.get(log, 3)
    second = cache.get(log, 4)
    log.fail(LedgerError("disk on fire"))
    for waiting in (first, second):
        failure = result_of(waiting)
        assert failure.check(LedgerError) and "disk on fire" in failure.getErrorMessage()
    stats = cache.stats()
    assert stats["stubs"] == 0 and stats["stub_waiters"] == 0 and stats["reads_in_flight"] == 0
    assert stats["read_failures"] == 1
    retry = cache.get(log, 3)  # the retry reads again
    assert len(log.reads) == 2
    log.complete()
    assert result_of(retry).first_seq == 3


def test_a_read_that_returns_the_wrong_entries_is_a_failure():
    cache, log = make(), ControllableLog()
    log.backlog(20)
    waiting = cache.get(log, 5)
    log.complete(entries=[])
    assert result_of(waiting).check(LedgerError)
    assert cache.stats()["stubs"] == 0


def test_a_read_cut_short_by_bytes_reads_again_for_the_stubs_it_missed():
    cache, log = make(readahead_count=10, readahead_bytes=200), ControllableLog()
    log.backlog(20, size=100)
    near = cache.get(log, 1)
    far = cache.get(log, 5)  # estimated inside the first read
    assert len(log.reads) == 1
    log.complete()  # brings 1..2 only
    assert result_of(near).first_seq == 1
    assert not far.called
    assert log.reads[1][0] == 5
    log.complete()
    assert result_of(far).first_seq == 5


def test_a_slow_read_never_delays_a_push():
    cache, log = make(), ControllableLog()
    log.backlog(50)
    lagging = cache.get(log, 1)
    caught_up = cache.get(log, 51)
    entry = publish(cache, log)
    assert result_of(caught_up) is entry
    assert not lagging.called
    log.complete()
    assert result_of(lagging).first_seq == 1


def test_cancelling_a_wait_removes_its_stub():
    cache, log = make(), ControllableLog()
    waiting = cache.get(log, 1)
    waiting.addErrback(lambda f: None)
    waiting.cancel()
    assert cache.stats()["stubs"] == 0
    publish(cache, log)
    assert cache.stats()["stub_waiters"] == 0


def test_dropping_a_topic_releases_its_waiters_and_bytes():
    cache, log = make(), ControllableLog()
    publish(cache, log)
    waiting = cache.get(log, 2)
    cache.drop_topic("t")
    assert result_of(waiting).check(TopicReleased)
    assert cache.stats()["bytes"] == 0 and cache.stats()["stubs"] == 0


def test_a_synchronous_read_returns_the_entry_directly():
    cache, log = make(), ControllableLog(auto_complete=True)
    backlog = log.backlog(5)
    assert cache.get(log, 2) is backlog[1]
    assert cache.stats()["stubs"] == 0


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        make(readahead_count=0)


def test_a_tail_stub_the_log_passed_without_a_publish_here_is_read():
    cache, log = make(), ControllableLog()
    first = cache.get(log, 1)
    log.backlog(3)  # appended behind the cache's back
    second = cache.get(log, 1)
    assert len(log.reads) == 1
    log.complete()
    assert result_of(first).first_seq == 1 and result_of(second).first_seq == 1
