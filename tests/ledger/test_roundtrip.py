"""Property: whatever the sequence of appends (random sizes, page and index rolls),
ledger closes, deletes and store reopens, every ledger reads back exactly what was
appended, in order, with its publish times."""

import shutil
import tempfile

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from hedwig.ledger.interface import LedgerClosed
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor

PAGE = 4096
OPTIONS = {"page_bytes": PAGE, "index_page_records": 8, "max_mapped_pages": 3}

sizes = st.one_of(st.integers(0, 64), st.integers(65, PAGE // 2), st.integers(PAGE - 64, PAGE), st.just(PAGE))


class LedgerRoundTrip(RuleBasedStateMachine):
    @initialize()
    def open_store(self):
        self.directory = tempfile.mkdtemp(prefix="ledger-roundtrip-")
        self.store = MmapLedgerStore(self.directory, reactor=InlineThreadsReactor(), **OPTIONS)
        self.model = {}  # ledger id -> [(bytes, time)]
        self.closed = set()
        self.serial = 0

    def teardown(self):
        if hasattr(self, "store"):
            result_of(self.store.close())
            shutil.rmtree(self.directory, ignore_errors=True)

    @rule()
    def create(self):
        ledger = result_of(self.store.create())
        assert ledger not in self.model
        self.model[ledger] = []

    def _open_ledgers(self):
        return sorted(set(self.model) - self.closed)

    @precondition(lambda self: len(set(self.model) - self.closed) > 0)
    @rule(data=st.data(), size=sizes, chunked=st.booleans())
    def append(self, data, size, chunked):
        ledger = data.draw(st.sampled_from(self._open_ledgers()))
        self.serial += 1
        payload = bytes([self.serial % 251]) * size
        if size:
            payload = (b"%d:" % self.serial + payload)[:size]
        t = 1_000 * self.serial
        if chunked:
            cut = data.draw(st.integers(0, size))
            argument = [payload[:cut], payload[cut:]]
        else:
            argument = payload
        assert result_of(self.store.append(ledger, argument, t)) == len(self.model[ledger])
        self.model[ledger].append((payload, t))

    @precondition(lambda self: len(set(self.model) - self.closed) > 0)
    @rule(data=st.data())
    def close_ledger(self, data):
        ledger = data.draw(st.sampled_from(self._open_ledgers()))
        result_of(self.store.close_ledger(ledger))
        self.closed.add(ledger)
        try:
            result_of(self.store.append(ledger, b"late", 0))
        except LedgerClosed:
            pass
        else:
            raise AssertionError("a closed ledger took an append")

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def delete(self, data):
        ledger = data.draw(st.sampled_from(sorted(self.model)))
        result_of(self.store.delete(ledger))
        del self.model[ledger]
        self.closed.discard(ledger)

    @rule()
    def reopen(self):
        result_of(self.store.close())
        self.store = MmapLedgerStore(self.directory, reactor=InlineThreadsReactor(), **OPTIONS)

    @precondition(lambda self: any(self.model.values()))
    @rule(data=st.data())
    def read_range(self, data):
        ledger = data.draw(st.sampled_from(sorted(k for k, v in self.model.items() if v)))
        entries = self.model[ledger]
        first = data.draw(st.integers(0, len(entries) - 1))
        last = data.draw(st.integers(first, len(entries) - 1))
        max_bytes = data.draw(st.none() | st.integers(1, 3 * PAGE))
        got = result_of(self.store.read(ledger, first, last, max_bytes))
        expected = [payload for payload, _t in entries[first : last + 1]]
        assert got == expected[: len(got)]
        if max_bytes is None:
            assert len(got) == len(expected)
        else:
            total = sum(map(len, got))
            assert len(got) == len(expected) or total >= max_bytes
            assert len(got) == 1 or total - len(got[-1]) < max_bytes
        entry = data.draw(st.integers(first, last))
        assert result_of(self.store.entry_time(ledger, entry)) == entries[entry][1]

    @invariant()
    def everything_reads_back(self):
        if not hasattr(self, "store"):
            return
        assert self.store.list_ledgers() == sorted(self.model)
        for ledger, entries in self.model.items():
            assert self.store.last_entry_id(ledger) == len(entries) - 1
            assert self.store.is_closed(ledger) == (ledger in self.closed)
            assert self.store.ledger_bytes(ledger) == sum(len(p) for p, _t in entries)
            if entries:
                assert result_of(self.store.read(ledger, 0, len(entries) - 1)) == [p for p, _t in entries]
        assert self.store.mapped_pages <= OPTIONS["max_mapped_pages"]


TestLedgerRoundTrip = LedgerRoundTrip.TestCase
TestLedgerRoundTrip.settings = settings(max_examples=60, stateful_step_count=40)
