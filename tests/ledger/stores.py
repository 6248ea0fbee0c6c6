"""The ledger stores the contract suite (test_contract.py) runs over, each behind one small
harness: open a store, open it again over the same storage (a restart), open a second
writer over the same storage (stores that share theirs), and wait for a Deferred.

The local stores answer with fired Deferreds (their thread work runs inline); a RADOS
store's answers come from librados threads through the reactor's callFromThread, which
here is a queue the test thread runs (hedwig.testing.reactors.PumpedReactor) until the
Deferred it waits for has fired.
"""

import itertools

from twisted.python.failure import Failure

from hedwig.testing.reactors import InlineThreadsReactor

SMALL_MMAP = {"page_bytes": 8192, "index_page_records": 16, "max_mapped_pages": 4}
# Entries of the contract tests stay below this size, so every store takes them.
MAX_ENTRY_BYTES = 8192


class StoreHarness:
    """One kind of store under test. `durable`: reopening finds what was acknowledged;
    `shared`: several stores (writers) may open the same storage at once."""

    name = ""
    durable = True
    shared = False

    def __init__(self):
        self.stores = []

    def open(self):
        store = self._open(len(self.stores))
        self.stores.append(store)
        return store

    def reopen(self, store):
        """A restart: `store` closed, a new one over the same storage."""
        self.settle(store.close())
        return self.open()

    def settle(self, d):
        """The outcome of `d` (its failure raised), which must fire."""
        out = []
        d.addBoth(out.append)
        if not out:
            raise AssertionError(f"{d!r} has not fired")
        if isinstance(out[0], Failure):
            out[0].raiseException()
        return out[0]

    def close(self):
        for store in self.stores:
            try:
                self.settle(store.close())
            except Exception:
                pass

    def _open(self, n: int):
        raise NotImplementedError


class MemoryHarness(StoreHarness):
    name = "memory"
    durable = False

    def _open(self, n):
        from hedwig.ledger.memory_store import MemoryLedgerStore

        return MemoryLedgerStore()


class MmapHarness(StoreHarness):
    name = "mmap"

    def __init__(self, directory):
        super().__init__()
        self.directory = directory

    def _open(self, n):
        from hedwig.ledger.mmap_store import MmapLedgerStore

        return MmapLedgerStore(self.directory / "ledgers", reactor=InlineThreadsReactor(), **SMALL_MMAP)


class SharedHarness(MmapHarness):
    name = "shared"
    shared = True

    def _open(self, n):
        from hedwig.ledger.shared_store import SharedLedgerStore

        return SharedLedgerStore(
            self.directory / "ledgers", reactor=InlineThreadsReactor(), writer=f"hub{n}:1", **SMALL_MMAP
        )


_namespaces = itertools.count(1)


class RadosHarness(StoreHarness):
    """Stores over one pool of the session's cluster, in a namespace of the test's own."""

    name = "rados"
    shared = True

    def __init__(self, cluster, options=None):
        super().__init__()
        from hedwig.testing.reactors import PumpedReactor

        self.cluster = cluster
        self.reactor = PumpedReactor()
        self.namespace = f"contract-{next(_namespaces)}"
        self.options = {"segment_bytes": 3 * MAX_ENTRY_BYTES, **(options or {})}

    def _open(self, n):
        from hedwig.ledger.rados_store import RadosLedgerStore

        store = RadosLedgerStore(
            reactor=self.reactor,
            conf_file=self.cluster.conf_file,
            pool=self.cluster.pool,
            namespace=self.namespace,
            writer=f"hub{n}:1",
            **self.options,
        )
        self.settle(store.connect())
        return store

    def settle(self, d):
        return self.reactor.run_until(d, timeout_s=60.0)
