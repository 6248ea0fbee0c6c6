"""Relayed entries arriving at a region: dropped when held already, else appended locally.

Every relayed entry of a topic, from whichever neighbour, goes through that topic's
TopicInbox, in arrival order: its origin mark (highwater.py) says whether the entry is
new, held already (a re-read after a reconnect: dropped) or straddling (its head is cut),
and new messages are appended through the cache (so local subscribers are pushed at
once) with their origin and origin seq-ids kept and `via` naming the neighbour.

Outcomes resolve in arrival order: a link acknowledges an entry to its neighbour only
once it and every entry before it are stored here, so a crash never loses an entry that
a neighbour was told was stored. The first failure from a source (one link incarnation)
breaks that source: its later entries fail too until it reconnects and re-reads from its
consumed seq-id, so an entry can never be stored after one that failed before it.
Work is per entry: a header decode, a complete check of the entry (entries.RelayedPart),
one append.
"""

from collections import deque

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import Waiters
from hedwig.protocol.messageset import MessageSetError
from hedwig.region.entries import RelayedPart, slice_message_set
from hedwig.region.highwater import HighWater

_logger = Logger()

HELD = (0, 0)  # the outcome of an entry every message of which was held already


class SourceBroken(Exception):
    """An earlier entry from this link failed; it must reconnect and re-read."""


class RelaySource:
    """One incarnation of one link into this region (a connection): entries from it are
    stored in order, and after its first failure none more is."""

    __slots__ = ("broken", "name")

    def __init__(self, name: str):
        self.name = name  # the neighbour region
        self.broken = None  # the first failure, once there was one


class _Item:
    __slots__ = ("data", "deferred", "outcome", "part", "size", "source")

    def __init__(self, data, source, size):
        self.data = data
        self.source = source
        self.size = size
        self.part = None
        self.deferred = Deferred()
        self.outcome = None  # (first, last) | HELD | Failure, once known


class TopicInbox:
    """One topic's relayed entries, in arrival order."""

    def __init__(self, topic: str, inboxes: "Inboxes"):
        self.topic = topic
        self._inboxes = inboxes
        self._queue = deque()  # items waiting to be decided, in arrival order
        self._order = deque()  # items not yet resolved, in arrival order
        self._log = None
        self._high = None
        self._blocked = False
        self._inflight = 0
        self._drained = Waiters()  # fired once _inflight is 0

    @property
    def high_water(self) -> HighWater | None:
        return self._high

    def receive(self, data, start: int, stop: int, source: RelaySource) -> Deferred:
        inboxes = self._inboxes
        # Every field is checked before anything is queued: an entry that failed later,
        # with an error nothing expects, would hold every later outcome of the topic
        # (and the bytes counted pending) for ever. One that fails the check takes its
        # place in the order already failed, so outcomes still resolve in arrival order.
        try:
            part = RelayedPart(data, start, stop, inboxes.max_message_bytes, inboxes.max_plain_bytes)
        except MessageSetError as e:
            part = Failure(e)
        item = _Item(data, source, len(data))
        inboxes.pending_bytes += item.size
        self._order.append(item)
        if source.broken is not None:
            self._fail(item, Failure(SourceBroken(f"an earlier entry from {source.name} failed")))
        elif isinstance(part, Failure):
            self._fail(item, part)
        else:
            item.part = part
            self._queue.append(item)
            self._run()
        self._resolve()
        return item.deferred

    # -- deciding and appending -----------------------------------------------------------

    def _run(self) -> None:
        if self._blocked:
            return
        inboxes = self._inboxes
        queue = self._queue
        while queue:
            topic_log = self._log
            if topic_log is None or not topic_log.is_open:
                self._log = inboxes.hub.topics.get(self.topic)
                if self._log is None:
                    self._block(inboxes.hub.topics.acquire(self.topic), self._opened)
                    return
                continue
            high = self._high
            if high is None or high.topic_log is not topic_log:
                if self._inflight:
                    self._block(self._until_drained(), None)  # marks must see every append
                    return
                high = self._high = HighWater(topic_log, inboxes.clock)
            item = queue[0]
            if item.source.broken is not None:
                queue.popleft()
                self._fail(item, Failure(SourceBroken(f"an earlier entry from {item.source.name} failed")))
                continue
            part = item.part
            if part.empty:  # (gaps of a compacted entry only)
                queue.popleft()
                self._held(item)
                continue
            if part.origin == inboxes.region:
                queue.popleft()
                inboxes.looped_entries += 1
                _logger.warn(
                    "{topic}: an entry of this region ({region}) came back from {via}; dropped",
                    topic=self.topic,
                    region=part.origin,
                    via=item.source.name,
                )
                self._held(item)
                continue
            mark = high.mark(part.origin)
            if mark is None:
                inboxes.scans += 1
                self._block(high.scan(part.origin), None)
                return
            queue.popleft()
            if part.origin_last <= mark:
                inboxes.duplicate_entries += 1
                inboxes.duplicate_messages += part.stop - part.start
                self._held(item)
                continue
            if part.origin_first <= mark:
                inboxes.duplicate_messages += mark - part.origin_first + 1
                inboxes.sliced_entries += 1
                part.drop_through(mark)
            self._append(item, high)  # (refused at once, it broke its source and the marks)

    def _append(self, item, high) -> None:
        part = item.part
        body = memoryview(item.data)[part.body_offset :]
        if part.start == 0 and part.stop == part.count:
            message_set = body
        else:
            message_set = slice_message_set(body, part.start, part.stop)
        high.appended(part.origin, part.origin_last)
        self._inflight += 1
        inboxes = self._inboxes
        try:
            d = inboxes.hub.publish(self.topic, message_set, part.origin, part.origin_first, item.source.name)
        except Exception:
            d = fail()  # (checked already: never left unresolved, should it raise after all)
        d.addCallbacks(self._appended, self._append_failed, (item,), None, (item,))

    def _appended(self, entry, item) -> None:
        inboxes = self._inboxes
        inboxes.appended_entries += 1
        inboxes.appended_messages += entry.last_seq - entry.first_seq + 1
        item.outcome = (entry.first_seq, entry.last_seq)
        self._settled()
        self._resolve()

    def _append_failed(self, failure, item) -> None:
        self._high = None  # its marks may count what failed: derive them again
        self._fail(item, failure)
        self._settled()
        self._resolve()

    def _settled(self) -> None:
        self._inflight -= 1
        if not self._inflight:
            self._drained.fire()

    def _until_drained(self) -> Deferred:
        if not self._inflight:
            return succeed(None)
        return self._drained.wait()

    def _block(self, d: Deferred, then) -> None:
        self._blocked = True

        def unblocked(result):
            self._blocked = False
            if then is not None:
                then(result)
            self._run()
            self._resolve()

        def failed(failure):
            self._blocked = False
            self._log = None
            self._high = None
            while self._queue:
                self._fail(self._queue.popleft(), failure)
            self._resolve()

        d.addCallbacks(unblocked, failed)

    def _opened(self, topic_log) -> None:
        self._log = topic_log

    # -- outcomes ---------------------------------------------------------------------------

    def _held(self, item) -> None:
        item.outcome = HELD

    def _fail(self, item, failure: Failure) -> None:
        if item.source.broken is None:
            item.source.broken = failure
            if not failure.check(SourceBroken):
                _logger.warn(
                    "{topic}: relaying from {via} failed ({error}); the link re-reads from its pointer",
                    topic=self.topic,
                    via=item.source.name,
                    error=failure.getErrorMessage(),
                )
        item.outcome = failure
        self._inboxes.failed_entries += 1

    def _resolve(self) -> None:
        order = self._order
        inboxes = self._inboxes
        while order and order[0].outcome is not None:
            item = order.popleft()
            inboxes.pending_bytes -= item.size
            outcome = item.outcome
            item.data = item.part = None
            if isinstance(outcome, Failure):
                item.deferred.errback(outcome)
            else:
                item.deferred.callback(outcome)
        inboxes.check_pending()


class Inboxes:
    """Every topic's inbox at this hub, the bytes they hold and the relay counters."""

    def __init__(self, hub, region: str, clock):
        self.hub = hub
        self.region = region
        self.clock = clock
        self.max_message_bytes = hub.max_message_bytes
        self.max_plain_bytes = hub.max_frame_bytes  # (a compressed set's plain size, as at publish)
        self._topics: dict[str, TopicInbox] = {}
        self.pending_bytes = 0
        self._below = []  # (limit, Deferred) waiting for pending_bytes <= limit
        self.appended_entries = 0
        self.appended_messages = 0
        self.duplicate_entries = 0
        self.duplicate_messages = 0
        self.sliced_entries = 0
        self.looped_entries = 0
        self.failed_entries = 0
        self.scans = 0

    def receive(self, topic: str, data, start: int, stop: int, source: RelaySource) -> Deferred:
        """Deferred[(first_seq, last_seq)] once stored here, or HELD (0, 0) when every
        message was held already; fails when the entry cannot be stored."""
        inbox = self._topics.get(topic)
        if inbox is None:
            inbox = self._topics[topic] = TopicInbox(topic, self)
        return inbox.receive(data, start, stop, source)

    def inbox(self, topic: str) -> TopicInbox | None:
        return self._topics.get(topic)

    def when_below(self, limit: int) -> Deferred:
        """Fires once the inboxes hold at most `limit` bytes."""
        if self.pending_bytes <= limit:
            return succeed(None)
        waiter = Deferred()
        self._below.append((limit, waiter))
        return waiter

    def check_pending(self) -> None:
        if not self._below:
            return
        pending = self.pending_bytes
        ready = [w for w in self._below if pending <= w[0]]
        if ready:
            self._below = [w for w in self._below if pending > w[0]]
            for _limit, waiter in ready:
                waiter.callback(None)

    def stats(self) -> dict:
        return {
            "pending_bytes": self.pending_bytes,
            "appended_entries": self.appended_entries,
            "appended_messages": self.appended_messages,
            "duplicate_entries": self.duplicate_entries,
            "duplicate_messages": self.duplicate_messages,
            "sliced_entries": self.sliced_entries,
            "looped_entries": self.looped_entries,
            "failed_entries": self.failed_entries,
            "origin_scans": self.scans,
        }
