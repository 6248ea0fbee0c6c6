"""At most max_mapped_pages pages are mapped, whatever is read: a log ten times larger
than the budget is written and read (in order, backwards, at random) with the budget
never exceeded, counted by the store and by the kernel's own list of mappings, and with
the process's resident file pages bounded by the budget, not by the log."""

import random

from hedwig.ledger.mapped import MappedPages
from hedwig.testing.deferreds import fired as result_of

PAGE = 1 << 20
BUDGET = 4


def mapped_under(path: str) -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if path in line and not line.rstrip().endswith("/header"))


def rss_file_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile in /proc/self/status")


def test_reading_a_log_ten_times_the_budget_stays_within_it(open_store, tmp_path):
    store = open_store(page_bytes=PAGE, index_page_records=256, max_mapped_pages=BUDGET)
    root = str(tmp_path / "ledgers")
    ledgers = [result_of(store.create()), result_of(store.create())]
    payload = bytes(range(256)) * 200  # 51,200 bytes: 20 entries per page
    count = 0
    rss_before = rss_file_bytes()
    rss_peak = 0
    while count < 420:  # per ledger: 21 pages each, 42 in all
        for ledger in ledgers:
            result_of(store.append(ledger, payload[: 51_000 + count % 200], count))
        count += 1
        assert store.mapped_pages <= BUDGET
    total = sum(store.ledger_bytes(ledger) for ledger in ledgers)
    assert total >= 10 * BUDGET * PAGE
    rng = random.Random(5)
    plans = [
        [(ledger, i, i + 9) for ledger in ledgers for i in range(0, count, 10)],  # in order
        [(ledger, i, i) for ledger in ledgers for i in reversed(range(count))],  # backwards
        [(rng.choice(ledgers), i, i) for i in (rng.randrange(count) for _ in range(300))],  # at random
    ]
    for plan in plans:
        for ledger, first, last in plan:
            got = result_of(store.read(ledger, first, last))
            assert [len(data) for data in got] == [51_000 + i % 200 for i in range(first, last + 1)]
            assert store.mapped_pages <= BUDGET
            assert mapped_under(root) <= BUDGET
            rss_peak = max(rss_peak, rss_file_bytes())
    assert store.mapped_pages_high_water == BUDGET
    # Resident file pages grow by the budget at most (plus slack for the interpreter),
    # never by the 40 MiB that went through.
    assert rss_peak - rss_before < (BUDGET + 4) * PAGE
    result_of(store.close())
    assert mapped_under(root) == 0


def test_least_recently_used_pages_go_first():
    closed = []

    class Page:
        def __init__(self, name):
            self.name = name

        def close(self):
            closed.append(self.name)

    pages = MappedPages(3, on_unmap=lambda key: None)
    for key in "abc":
        pages.get(key, lambda key=key: Page(key))
    pages.get("a", lambda: Page("again"))  # a hit: a becomes the most recent
    pages.get("d", lambda: Page("d"))
    assert closed == ["b"]
    pages.get("e", lambda: Page("e"))
    assert closed == ["b", "c"]
    assert len(pages) == 3 and pages.maps_made == 5
