"""A topic log stack for tests: a real ledger store (in memory, or mmap files when that
backend is present), a real SQLite metadata store and a deterministic clock."""

import importlib.util
import os

from twisted.python.failure import Failure

from hedwig.config.settings import LogSettings
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol.messageset import encode_message_set
from hedwig.testing.reactors import InlineThreadsReactor
from hedwig.topiclog.manager import TopicLogManager

HAVE_MMAP = importlib.util.find_spec("hedwig.ledger.mmap_store") is not None
BACKENDS = ["memory", "mmap"]
START_TIME = 1_700_000_000.0  # the clock starts at a realistic wall-clock time


class NotFired(AssertionError):
    pass


def message_set(count: int, size: int = 16, tag: int = 0) -> bytes:
    """A real message set of `count` payloads of `size` bytes, distinct per tag."""
    payload = (b"%08x" % tag) * (size // 8 + 1)
    return encode_message_set([payload[:size]] * count)


class LogStack:
    def __init__(self, backend: str, directory, settings: LogSettings | None = None, **ledger_options):
        self.backend = backend
        self.directory = os.fspath(directory)
        self.settings = settings or LogSettings()
        self.ledger_options = ledger_options
        self.clock = InlineThreadsReactor()
        self.clock.advance(START_TIME)
        # Power-cut durability (fsync per commit) is tested in tests/meta; these tests
        # need the same records and transactions, not the fsyncs.
        self.metadata = SqliteMetadataStore(
            os.path.join(self.directory, "meta.db"), synchronous="OFF", subscription_synchronous="OFF"
        )
        self.ledgers = self._open_ledgers()
        self.managers: list[TopicLogManager] = []

    def _open_ledgers(self):
        if self.backend == "memory":
            return MemoryLedgerStore(**self.ledger_options)
        from hedwig.ledger.mmap_store import MmapLedgerStore

        options = {"page_bytes": 256 << 10, "index_page_records": 1 << 10, "max_mapped_pages": 8}
        options.update(self.ledger_options)
        return MmapLedgerStore(os.path.join(self.directory, "ledgers"), reactor=self.clock, **options)

    def manager(self, region: str = "r1") -> TopicLogManager:
        manager = TopicLogManager(self.ledgers, self.metadata, self.settings, region, self.clock)
        self.managers.append(manager)
        return manager

    def restart(self) -> TopicLogManager:
        """A hub restart: close the managers, reopen the ledger store from its files (the
        in-memory store is kept: it stands for storage that outlives the process)."""
        for manager in self.managers:
            settle(self, manager.close())
        self.managers = []
        if self.backend != "memory":
            settle(self, self.ledgers.close())
            self.ledgers = self._open_ledgers()
        return self.manager()

    def close(self):
        for manager in self.managers:
            settle(self, manager.close(), check=False)
        settle(self, self.ledgers.close(), check=False)
        settle(self, self.metadata.close(), check=False)

    def disk_bytes(self) -> int:
        """Bytes the ledger files occupy on disk (allocated blocks, not apparent sizes)."""
        total = 0
        for root, _dirs, files in os.walk(os.path.join(self.directory, "ledgers")):
            for name in files:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
        return total


def settle(stack, d, check: bool = True):
    """The outcome of `d`, advancing the stack's clock while the store's timers run."""
    out = []
    d.addBoth(out.append)
    for _ in range(50):
        if out:
            break
        stack.clock.advance(0.01)
    if not out:
        raise NotFired(f"{d!r} has not fired")
    if check and isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]


def failure_of(stack, d) -> Failure:
    outcome = settle(stack, d, check=False)
    assert isinstance(outcome, Failure), f"expected a failure, got {outcome!r}"
    return outcome
