"""A subscription's filter in the delivery manager, over a real topic log (memory ledgers,
SQLite metadata) and a Clock: what its cursor sends of an entry (the passing runs; a
sparse run as an entry of its own, not the whole entry again), its window (what it
delivered, not what it passed over), the consumed seq-id moving past what it passed
over, and a subscription without a filter keeping the cursor it always had."""

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.task import Clock, Cooperator
from zope.interface import implementer

from hedwig.cache import ReadAheadCache
from hedwig.config.settings import CacheSettings, DeliverySettings, LogSettings
from hedwig.delivery import DeliveryManager, IDeliveryChannel
from hedwig.delivery.cursor import Cursor
from hedwig.delivery.filtered_cursor import FilteredCursor
from hedwig.delivery.filtering import Filters
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import decode_entry, encode_message_set
from hedwig.protocol.entry import encode_entry_header
from hedwig.testing.deferreds import fired
from hedwig.topiclog import TopicLogManager
from hedwig.topiclog.entry import LogEntry
from tests.delivery.harness import subscribe_request
from tests.delivery.shared_harness import MemberChannel

COUNT = 1000


@implementer(IDeliveryChannel)
class GapsChannel:
    """Records deliveries: (handle, first seq, last seq, entry). A filtered subscriber's
    seq-ids have gaps (what was passed over), so none is checked for here."""

    def __init__(self):
        self.deliveries = []

    def deliver(self, handle, entry, start, stop):
        assert 0 <= start < stop <= entry.count, (start, stop, entry)
        self.deliveries.append((handle, entry.first_seq + start, entry.first_seq + stop - 1, entry))

    def subscription_ended(self, handle, event):
        pass


class Stack:
    def __init__(self, tmp_path):
        self.clock = Clock()
        self.metadata = SqliteMetadataStore(tmp_path / "meta.db")
        self.logs = TopicLogManager(
            MemoryLedgerStore(), self.metadata, LogSettings(), "standalone", self.clock
        )
        self.cache = ReadAheadCache(self.clock, CacheSettings())
        self.manager = DeliveryManager(self.metadata, self.clock, DeliverySettings())
        self.topic_log = self.cache.wrap(fired(self.logs.open("t")))

    def subscribe(self, sid, channel, **options):
        request = subscribe_request("t", sid, start="earliest", **options)
        fired(self.manager.subscribe(self.topic_log, channel, 1, request))
        self.clock.advance(0)

    def publish(self, message_set, count):
        fired(self.topic_log.append(message_set, count))
        self.clock.advance(0)

    def row(self, sid):
        return next(r for r in self.manager.describe("t") if r["subscriber_id"] == sid)


def numbered_set():
    """COUNT messages of 100 bytes, message i with property n = i % 100."""
    return encode_message_set([b"%099d" % i for i in range(COUNT)], [{"n": i % 100} for i in range(COUNT)])


def test_a_sparse_run_is_sent_as_an_entry_of_its_own_and_the_rest_is_passed_over(tmp_path):
    stack = Stack(tmp_path)
    message_set = numbered_set()
    stack.publish(message_set, COUNT)
    channel = GapsChannel()
    stack.subscribe("one-percent", channel, filter="n = 7")
    assert [(first, last) for _, first, last, _ in channel.deliveries] == [
        (8 + 100 * k,) * 2 for k in range(10)
    ]
    for _, first, _, entry in channel.deliveries:
        assert len(entry.data) < len(message_set) // 100, "a run's own bytes, not the entry's"
        (message,) = decode_entry("t", entry.data)
        assert (message.seq, message.properties, message.payload) == (first, {"n": 7}, b"%099d" % (first - 1))
    stack.manager.consume("t", "one-percent", 908)
    assert stack.row("one-percent")["consumed_seq"] == COUNT, "what follows the last run was passed over"


def test_a_run_of_more_than_half_an_entry_is_a_slice_of_it_a_shorter_one_an_entry_of_its_own(tmp_path):
    stack = Stack(tmp_path)
    stack.publish(encode_message_set([b"m"] * COUNT, [{"n": i} for i in range(COUNT)]), COUNT)
    channel = GapsChannel()
    stack.subscribe("most", channel, filter="n < 600 OR n >= 900")
    sent = [(first, last, entry.count) for _, first, last, entry in channel.deliveries]
    assert sent == [(1, 600, COUNT), (901, 1000, 100)]


def test_the_window_counts_what_was_delivered_not_what_was_passed_over(tmp_path):
    stack = Stack(tmp_path)
    stack.publish(numbered_set(), COUNT)
    channel = GapsChannel()
    stack.subscribe("windowed", channel, filter="n = 7", window=2)
    assert [first for _, first, _, _ in channel.deliveries] == [8, 108], "two delivered: the window is full"
    stack.manager.consume("t", "windowed", 108)
    stack.clock.advance(0)
    assert [first for _, first, _, _ in channel.deliveries] == [8, 108, 208, 308]


def test_a_subscription_without_a_filter_keeps_the_plain_cursor(tmp_path):
    stack = Stack(tmp_path)
    plain, filtered = GapsChannel(), GapsChannel()
    stack.subscribe("plain", plain)
    stack.subscribe("filtered", filtered, filter="n > 1")
    cursors = {sid: s.cursor for sid, s in stack.manager._tables.get("t").subscriptions.items()}
    assert type(cursors["plain"]) is Cursor
    assert type(cursors["filtered"]) is FilteredCursor


def test_a_large_entry_is_evaluated_once_in_steps_for_every_subscriber_that_waits():
    """MessageFilter.runs of an entry of more than a step: a Deferred, one evaluation
    (a step per tick of its cooperator) shared by every caller meanwhile; a caller that
    cancels (its cursor stopped) leaves the others their answer; then the runs at once."""
    ticks = []
    cooperator = Cooperator(scheduler=ticks.append, terminationPredicateFactory=lambda: lambda: True)
    filters = Filters(cooperator=cooperator, step=100)
    message_filter = filters.get("n = 7")
    entry = LogEntry(1, COUNT, encode_entry_header(1, COUNT, 0, b"r", 1) + numbered_set(), 0)
    first, second = message_filter.runs(entry), message_filter.runs(entry)
    assert type(first) is Deferred and type(second) is Deferred
    assert filters.counters.evaluating == 1, "one evaluation for both"
    first.cancel()
    assert first.called and not second.called
    first.addErrback(lambda failure: failure.trap(CancelledError))
    steps = 0
    while ticks:
        ticks.pop(0)()
        steps += 1
    expected = ([8 + 100 * k for k in range(10)], [8 + 100 * k for k in range(10)])
    assert fired(second) == expected
    assert steps >= COUNT // 100, "a step of at most 100 messages per tick"
    assert (filters.counters.evaluating, filters.counters.evaluated_in_steps) == (0, 1)
    assert message_filter.runs(entry) == expected  # (kept: at once now)


def test_a_shared_subscription_does_not_evaluate_again_an_entry_read_again(tmp_path):
    """A shared dispatcher handed the runs of an entry evaluated in steps keeps them for
    that entry: read again meanwhile (the cache evicted it), it is another object of the
    same bytes, and evaluating it again could go on for as long as the cache evicts it."""
    stack = Stack(tmp_path)
    stack.publish(numbered_set(), COUNT)  # (more than a step of messages)
    channel = MemberChannel()
    stack.subscribe("shared", channel, filter="n = 7", kind="shared")
    assert [first for _, first, _, _ in channel.sent][:1] == [8]
    counters = stack.manager._filters.counters
    assert counters.evaluated_in_steps == 1
    dispatcher = stack.manager._tables.get("t").subscriptions["shared"].dispatcher
    stored = stack.topic_log.get(1)
    again = LogEntry(stored.first_seq, stored.last_seq, bytes(bytearray(stored.data)), stored.publish_time_us)
    runs = dispatcher._runs(again)
    assert type(runs) is tuple and runs[0][:2] == [8, 108]
    assert counters.evaluated_in_steps == 1 and counters.evaluating == 0
