"""ledgers_to_delete: the GC and retention policy on its own, no stores."""

from hedwig.config.settings import LogSettings
from hedwig.meta import LedgerRange
from hedwig.topiclog.retention import ledgers_to_delete

# Four closed ledgers of 10 seq-ids and 100 bytes, newest entry at 10, 20, 30, 40 s; one open.
RANGES = [LedgerRange(i, 10 * i + 1, 10 * i + 10) for i in range(4)] + [LedgerRange(4, 41, None)]
TIMES = {i: (i + 1) * 10_000_000 for i in range(5)}


def doomed(min_consumed, now_s=1000, sizes=None, **settings):
    return ledgers_to_delete(
        RANGES,
        min_consumed,
        LogSettings(**settings),
        now_s * 1_000_000,
        lambda r: TIMES[r.ledger_id],
        lambda r: (sizes or {}).get(r.ledger_id, 100),
    )


def test_consumption_takes_wholly_consumed_ledgers_only():
    assert [doomed(c) for c in (0, 9, 10, 19, 20, 39, 40, 10**9)] == [0, 0, 1, 1, 2, 3, 4, 4]


def test_age_takes_ledgers_whose_newest_entry_is_older_than_retention():
    # now 45 s, retention 20 s: cutoff 25 s: ledgers ending at 10 and 20 s go
    assert doomed(0, now_s=45, retention_secs=20) == 2
    assert doomed(0, now_s=45, retention_secs=0) == 0
    assert doomed(0, now_s=10**6, retention_secs=1) == 4  # never the open one


def test_size_takes_oldest_until_within_the_limit():
    assert doomed(0, retention_bytes=500) == 0
    assert doomed(0, retention_bytes=499) == 1
    assert doomed(0, retention_bytes=300) == 2
    assert doomed(0, retention_bytes=1) == 4
    assert doomed(0, retention_bytes=150, sizes={4: 1000}) == 4  # an oversized open ledger stays


def test_rules_add_up_in_order():
    assert doomed(10, now_s=45, retention_secs=20) == 2
    assert doomed(30, now_s=45, retention_secs=20) == 3
    assert doomed(10, retention_bytes=250) == 3


def test_a_topic_with_only_its_open_ledger_keeps_it():
    only_open = [LedgerRange(9, 1, None)]
    assert ledgers_to_delete(only_open, 100, LogSettings(retention_bytes=1), 0, None, lambda r: 10**9) == 0
