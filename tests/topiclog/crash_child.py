"""A hub stand-in for the crash test: opens topic "t" over mmap ledgers and SQLite in
`directory`, then appends forever, writing each acknowledged entry as
"first last count size" to `out` until it is killed. Rolls often, so kills land in rolls too.

The crash test runs `main` in a forked copy of itself, so the child appends with exactly
the code the parent then recovers and checks with (a child started as a new interpreter
imports the tree as it is at that moment, which other work may be changing). It still
runs on its own: python -m tests.topiclog.crash_child DIRECTORY SEED."""

import os
import sys

from hedwig.config.settings import LogSettings
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.testing.reactors import InlineThreadsReactor
from hedwig.topiclog.manager import TopicLogManager
from tests.topiclog.harness import message_set, settle


class _Stack:
    def __init__(self, clock):
        self.clock = clock


def main(directory: str, seed: int, out=None) -> None:
    out = sys.stdout if out is None else out
    clock = InlineThreadsReactor()
    clock.advance(1_700_000_000 + seed)
    stack = _Stack(clock)
    ledgers = MmapLedgerStore(
        os.path.join(directory, "ledgers"), reactor=clock, page_bytes=64 << 10, index_page_records=256
    )
    metadata = SqliteMetadataStore(os.path.join(directory, "meta.db"))
    manager = TopicLogManager(ledgers, metadata, LogSettings(max_ledger_entries=25), "r1", clock)
    topic_log = settle(stack, manager.open("t"))
    i = seed
    while True:
        i += 1
        count = 1 + i % 5
        size = 1 + (i * 37) % 900
        clock.advance(0.001)
        entry = settle(stack, topic_log.append(message_set(count, size, topic_log.last_seq + 1), count))
        out.write(f"{entry.first_seq} {entry.last_seq} {count} {size}\n")
        out.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
