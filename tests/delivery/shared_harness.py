"""Shared and pull subscriptions over the real topic log (memory ledgers, SQLite metadata)
on a Clock, and a channel that records what each member is sent."""

from zope.interface import implementer

from hedwig.config.settings import LogSettings
from hedwig.delivery.interface import ISharedDeliveryChannel
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import encode_message_set
from hedwig.protocol.entry import decode_entry
from hedwig.protocol.work_requests import selected_indexes
from hedwig.topiclog import TopicLogManager
from tests.delivery.harness import Harness, TurnClock, fired


@implementer(ISharedDeliveryChannel)
class MemberChannel:
    """One connection holding members: what each handle was sent, in order."""

    def __init__(self, manager=None):
        self.manager = manager
        self.sent = []  # (handle, first seq, last seq, delivery count)
        self.subsets = []  # (handle, first seq, last seq, messages) of each SUBSET_DELIVERY
        self.fetches_done = []  # handles, in the order their FETCH ended
        self.ended = []  # (handle, event)
        self.paused = False

    def deliver(self, handle, entry, start, stop):
        self._record(handle, entry, start, stop, 1)

    def redeliver(self, handle, entry, start, stop, count):
        assert count >= 2
        self._record(handle, entry, start, stop, count)

    def deliver_subset(self, handle, entry, start, stop, selection, messages):
        """A SUBSET_DELIVERY: each run of what `selection` picks recorded as sent (the
        frames counted in `subsets`)."""
        indexes = selected_indexes(start, stop, selection)
        assert len(indexes) == messages and indexes[0] == start and indexes[-1] == stop - 1
        self.subsets.append((handle, entry.first_seq + start, entry.first_seq + stop - 1, messages))
        run_start = previous = indexes[0]
        for index in indexes[1:]:
            if index != previous + 1:
                self._record(handle, entry, run_start, previous + 1, 1)
                run_start = index
            previous = index
        self._record(handle, entry, run_start, previous + 1, 1)

    def _record(self, handle, entry, start, stop, count):
        assert 0 <= start < stop <= entry.count, (start, stop, entry)
        self.sent.append((handle, entry.first_seq + start, entry.first_seq + stop - 1, count))
        self.last_entry = entry

    def fetch_done(self, handle):
        self.fetches_done.append(handle)

    def subscription_ended(self, handle, event):
        self.ended.append((handle, event))

    def seqs(self, handle=None, count=None) -> list:
        """Every seq-id sent (to `handle`; of delivery `count`), in the order sent."""
        return [
            seq
            for h, first, last, n in self.sent
            if (handle is None or h == handle) and (count is None or n == count)
            for seq in range(first, last + 1)
        ]

    def take(self) -> list:
        """The seq-ids sent since the last take."""
        seqs = self.seqs()
        self.sent.clear()
        return seqs


class SharedHarness(Harness):
    """A Harness over a real topic log (its entries decode as published)."""

    def __init__(self, tmp_path, metadata=None, store=None, topic="t", **settings):
        clock = TurnClock()
        metadata = metadata or SqliteMetadataStore(tmp_path / "meta.db")
        self.store = store or MemoryLedgerStore()
        self.logs = TopicLogManager(self.store, metadata, LogSettings(), "standalone", clock)
        log = fired(self.logs.open(topic))
        super().__init__(tmp_path, log=log, metadata=metadata, clock=clock, **settings)
        self.dead_letters = []  # (topic, message set) published for dead letters
        self.manager.use_publisher(self._publish_dead_letters)

    def _publish_dead_letters(self, topic, message_set, owner=None):
        from twisted.internet.defer import succeed

        self.dead_letters.append((topic, message_set))
        return succeed(None)

    def member_channel(self):
        return MemberChannel(self.manager)

    def publish(self, count=1, size=10):
        payloads = [b"%d" % i for i in range(count)]
        return fired(self.topic_log.append(encode_message_set(payloads), count))

    def join(self, sid, channel, handle=1, kind="shared", **kw):
        return self.subscribe(sid, channel, handle, kind=kind, **kw)

    def messages(self, first, last):
        """The decoded messages first..last, from the log."""
        out = []
        for entry in fired(self.topic_log.read(first, 1000, 1 << 30)):
            out += [m for m in decode_entry(self.log.topic, entry.data) if first <= m.seq <= last]
        return out
