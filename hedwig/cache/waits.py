"""What readers of the read-ahead cache wait on (readahead.py): a stub (a seq-id someone
waits for, filled by a publish or a range read), a range read in flight, and a caught-up
reader's wait at a topic's tail."""


class Stub:
    """A seq-id someone waits for; `read` is the range read expected to fill it (None at
    the tail, where a publish will)."""

    __slots__ = ("done", "entry", "failure", "read", "seq", "waiters")

    def __init__(self, seq: int):
        self.seq = seq
        self.waiters = []
        self.read = None
        self.done = False
        self.entry = None
        self.failure = None


class TailWaiter:
    """A caught-up reader's wait for the next entry published (ReadAheadCache.wait_tail):
    the publish hands the entry to `arrived` itself, with no stub and no Deferred.
    Made once per reader and registered again after each entry; `failed(failure)` is
    called if the topic leaves the cache while it waits."""

    __slots__ = ("arrived", "failed", "topic")

    def __init__(self, arrived, failed):
        self.arrived = arrived
        self.failed = failed
        self.topic = None  # the topic cache (readahead.py) it waits in, while it waits

    def cancel(self) -> None:
        """Stop waiting (nothing is called)."""
        topic, self.topic = self.topic, None
        if topic is not None:
            try:
                topic.tail.remove(self)
            except ValueError:
                pass


class RangeRead:
    """One ledger read in flight: up to `max_entries` entries from `from_seq`, expected
    to reach about `reach` (estimated from the topic's recent entry sizes)."""

    __slots__ = ("from_seq", "max_entries", "reach", "stubs")

    def __init__(self, from_seq: int, max_entries: int, reach: int, stubs: list):
        self.from_seq = from_seq
        self.max_entries = max_entries
        self.reach = reach
        self.stubs = stubs
