"""The cache's byte budget: oldest entries out first, by their bytes, each eviction told."""

import pytest

from hedwig.cache.fifo import ByteBudgetFifo
from hedwig.topiclog.entry import LogEntry


def entry(first: int, size: int) -> LogEntry:
    return LogEntry(first, first, b"x" * size, 0)


def test_the_oldest_entries_leave_until_a_new_one_fits():
    evicted = []
    fifo = ByteBudgetFifo(100, lambda e, topic: evicted.append((topic, e.first_seq)))
    a, b, c = entry(1, 40), entry(2, 40), entry(3, 20)
    fifo.add(a, "t")
    fifo.add(b, "u")
    fifo.add(c, "t")
    assert (len(fifo), fifo.currsize, evicted) == (3, 100, [])
    fifo.add(entry(4, 50), "t")  # a (40) and b (40) go: 20 + 50 fit
    assert evicted == [("t", 1), ("u", 2)]
    assert (len(fifo), fifo.currsize) == (2, 70) and c in fifo and a not in fifo


def test_a_removal_gives_its_bytes_back_and_is_not_an_eviction():
    evicted = []
    fifo = ByteBudgetFifo(100, lambda e, topic: evicted.append(e))
    a, b = entry(1, 60), entry(2, 30)
    fifo.add(a, "t")
    fifo.add(b, "t")
    fifo.remove(a)
    assert (len(fifo), fifo.currsize) == (1, 30)
    fifo.add(entry(3, 70), "t")
    assert evicted == [] and fifo.currsize == 100
    with pytest.raises(ValueError):
        fifo.add(entry(4, 101), "t")
    assert fifo.currsize == 100
