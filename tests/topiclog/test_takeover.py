"""A topic taken over on shared storage: two hubs' topic log managers over one storage root
(SharedLedgerStore each) and one metadata store. The new owner fences the old owner's
open ledger, recovers it, records it closed and opens its own; the old owner, should it
wake, acknowledges nothing more; readers never read past the recorded end."""

import os

import pytest

from hedwig.config.settings import LogSettings
from hedwig.ledger.shared_store import SharedLedgerStore
from hedwig.meta import NEW, LedgerRange
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol.entry import encode_entry_header
from hedwig.testing.deferreds import fired
from hedwig.testing.reactors import InlineThreadsReactor
from hedwig.topiclog import TopicFenced
from hedwig.topiclog.manager import TopicLogManager
from tests.topiclog.harness import START_TIME, failure_of, message_set, settle


class Hub:
    """What a hub holds of a topic log: its own ledger store over the shared root."""

    def __init__(self, name, root, metadata, clock):
        self.clock = clock
        self.ledgers = SharedLedgerStore(
            root, reactor=clock, writer=name, page_bytes=64 << 10, index_page_records=256
        )
        self.manager = TopicLogManager(self.ledgers, metadata, LogSettings(), "r1", clock)


@pytest.fixture
def region(tmp_path):
    clock = InlineThreadsReactor()
    clock.advance(START_TIME)
    metadata = SqliteMetadataStore(os.path.join(tmp_path, "meta.db"), synchronous="OFF")
    hubs = []

    def hub(name):
        hubs.append(Hub(name, tmp_path / "root", metadata, clock))
        return hubs[-1]

    yield hub
    for one in hubs:
        settle(one, one.manager.close(), check=False)
        settle(one, one.ledgers.close(), check=False)
    metadata.close()


def payloads(entries):
    return [(e.first_seq, e.last_seq) for e in entries]


def test_the_new_owner_continues_where_the_old_one_acknowledged(region):
    a, b = region("a:1"), region("b:2")
    old = settle(a, a.manager.open("t"))
    acknowledged = [settle(a, old.append(message_set(3, tag=i), 3)).last_seq for i in range(10)]
    assert acknowledged[-1] == 30
    taken = settle(b, b.manager.open("t"))  # b takes over: fences a's ledger
    assert taken.last_seq == 30
    recovered, opened = taken.ranges
    assert recovered == LedgerRange(old.open_ledger_id, 1, 30) and opened.first_seq == 31
    assert b.ledgers.is_closed(recovered.ledger_id)

    # a wakes and publishes: stored in its mapping, never acknowledged, and it stops
    failure = failure_of(a, old.append(message_set(2, tag=99), 2))
    assert failure.check(TopicFenced)
    assert not old.is_open
    assert failure_of(a, old.append(message_set(1), 1)).check(TopicFenced)

    # b goes on from 31; what a stored after the fence is never read
    assert settle(b, taken.append(message_set(4, tag=7), 4)).first_seq == 31
    entries = settle(b, taken.read(1, 1000, 1 << 20))
    assert payloads(entries) == [(3 * i + 1, 3 * i + 3) for i in range(10)] + [(31, 34)]


def stored_entry(seq: int, tag: int) -> bytes:
    return encode_entry_header(seq, 1, 1_000_000 + seq, b"r1", seq) + message_set(1, tag=tag)


def test_a_reader_never_reads_past_a_closed_range_whatever_the_ledger_holds(region):
    """Entries past a closed range's recorded end (as a fenced writer leaves: stored,
    never acknowledged) are never read: the next seq-id comes from the next ledger."""
    a, b = region("a:1"), region("b:2")
    first, second = fired(a.ledgers.create()), fired(a.ledgers.create())
    for seq in range(1, 6):  # seq-ids 1..5, of which the metadata records 1..3 only
        settle(a, a.ledgers.append(first, stored_entry(seq, tag=seq), 1_000_000 + seq))
    settle(a, a.ledgers.close_ledger(first))
    for seq in range(4, 7):  # the next owner's ledger: seq-ids 4..6 again, other payloads
        settle(a, a.ledgers.append(second, stored_entry(seq, tag=100 + seq), 1_000_000 + seq))
    settle(a, a.ledgers.close_ledger(second))
    ranges = [LedgerRange(first, 1, 3), LedgerRange(second, 4, 6)]
    settle(b, b.manager.metadata.put_topic("t", ranges, NEW))
    topic_log = settle(b, b.manager.open("t"))
    entries = settle(b, topic_log.read(1, 100, 1 << 20))
    assert [e.first_seq for e in entries] == [1, 2, 3, 4, 5, 6]
    assert [e.data for e in entries] == [stored_entry(s, tag=s) for s in (1, 2, 3)] + [
        stored_entry(s, tag=100 + s) for s in (4, 5, 6)
    ]
