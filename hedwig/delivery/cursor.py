"""A cursor: one attached subscriber's position, fed entry by entry from the cache.

The cursor asks the cache for the entry holding its next seq-id and hands it to the
channel whole (sliced only at its starting point or by the window), then moves past it.
A cached entry comes back at once; otherwise the cache returns a Deferred (a stub) and the
cursor sleeps until the publish or the ledger read fills it. It stops asking while its
channel is paused or its window is full, so a slow subscriber costs one held entry, never
a growing buffer. Window accounting is arithmetic on seq-ids: per entry, not per message.

A cursor may carry a filter, a `skip` predicate (region relays: entries that came from
the neighbour the subscriber relays to; filtering.py): an entry it accepts is passed over,
not delivered, and `on_skip` tells the delivery manager its seq-ids, which count as
consumed once everything before them is (`filtered_runs`, a PassedOver). One call per
entry, never per message.

A delayed message (protocol/schedule.py) is delivered no earlier than its time: an
exclusive subscription is one ordered stream, so the cursor delivers the entry up to it,
holds it, and goes on at that time (a timer, no polling); the messages after it wait
behind it, and the consumed position passes it only once it was delivered and consumed.
Nothing but the stored message says when: after a restart the cursor finds it again.

A message whose TTL passed before it was delivered is passed over as a filter passes
over a message (`on_expired`): counted, consumed once everything before it is.

A failed read is retried after the back-off, except when the entry cannot be read at all
(damaged, or its ledger lost: EntriesUnreadable): everything before it was delivered,
and `on_unreadable` tells the delivery manager, which ends the subscription with an event
saying so, instead of retrying in silence for ever.
"""

from functools import partial

from twisted.internet.defer import CancelledError, Deferred
from twisted.logger import Logger

from hedwig.cache.waits import TailWaiter
from hedwig.delivery.schedules import now_ms, timing
from hedwig.protocol.entry import ENTRY_FLAG_SPARSE
from hedwig.protocol.schedule import DUE, LATER
from hedwig.topiclog.errors import EntriesUnreadable

_logger = Logger()

IDLE = "idle"
DELIVERING = "delivering"
WAITING = "waiting"  # on a stub: the next publish, or a ledger read
WINDOW_FULL = "window_full"
PAUSED = "paused"
RETRYING = "retrying"  # a read failed; asks again after the back-off
STOPPED = "stopped"


class Cursor:
    __slots__ = (
        "_cache",
        "_get",
        "_tail_waiter",
        "_wait_tail",
        "_log_bounds",
        "_clock",
        "_max_burst",
        "_on_channel_error",
        "_on_unreadable",
        "_pumping",
        "_retry_s",
        "_timer",
        "_waiting",
        "active",
        "channel",
        "delivered_entries",
        "delivered_messages",
        "delay_waits",
        "expired",
        "on_expired",
        "ttl_ms",
        "timed",
        "filtered_runs",
        "handle",
        "held",
        "topic_log",
        "next_seq",
        "on_skip",
        "passed_over",
        "paused",
        "pulls",
        "push_waits",
        "read_retries",
        "retrying",
        "skip",
        "skipped",
        "subscription",
        "window",
        "window_full",
    )

    delivers = True  # (an AckOnlyAttachment, held in the same places, does not)

    def __init__(
        self,
        subscription,
        topic_log,
        channel,
        handle,
        window,
        clock,
        *,
        max_burst,
        on_channel_error,
        on_unreadable,
    ):
        self.subscription = subscription
        self.topic_log = topic_log  # an ICachedTopicLog
        self.channel = channel
        self.handle = handle
        self.window = window  # 0: unlimited
        self.next_seq = subscription.consumed_seq + 1
        self.held = None  # an entry holding next_seq, kept across a pause or a full window
        self.paused = False
        self.active = False
        self.window_full = False
        self.delivered_entries = 0
        self.delivered_messages = 0
        self.read_retries = 0
        self.delay_waits = 0  # times it held a delayed message until its time
        self.expired = 0  # messages whose TTL passed before their delivery: passed over
        self.on_expired = None  # called (cursor, first, last) for those (the manager's)
        self.ttl_ms = 0  # the expiry of messages without one of their own ([delivery] message_ttl_ms)
        self.timed = True  # delays and TTLs apply (not to a region relay: its copies keep them)
        self.pulls = 0  # requests the cache had to read from the ledger (published, not cached)
        self.push_waits = 0  # waits at the tail for the next publish
        self.retrying = False
        self.skipped = 0  # seq-ids garbage collection removed before they were delivered
        self.skip = None  # predicate(entry): entries not sent to this subscriber (region relays)
        self.on_skip = None  # called (cursor, from_seq, last_seq) for each entry passed over
        self.passed_over = 0  # entries `skip` accepted
        self.filtered_runs = None  # with a filter: the PassedOver runs no consume reached yet
        self._cache = cache = topic_log.cache  # (its counters tell a pull from a hit)
        # The per-entry path reads the cache for this log and the log's bounds directly:
        # the same calls ICachedTopicLog.get and its bounds make, without their extra
        # Python call per entry per subscriber (about a tenth of a push to ten).
        self._get = partial(cache.get, topic_log.inner)
        self._wait_tail = partial(cache.wait_tail, topic_log.inner)
        self._tail_waiter = TailWaiter(self._arrived, self._failed)  # (registered again per entry)
        self._log_bounds = topic_log.inner
        self._clock = clock
        self._retry_s = cache.settings.retry_backoff_ms / 1000.0
        self._max_burst = max_burst
        self._on_channel_error = on_channel_error
        self._on_unreadable = on_unreadable  # called (cursor, failure)
        self._waiting = None
        self._timer = None
        self._pumping = False

    @property
    def delivered_seq(self) -> int:
        return self.next_seq - 1

    @property
    def state(self) -> str:
        if not self.active:
            return STOPPED if self.subscription.cursor is not self else IDLE
        if self.paused:
            return PAUSED
        if self.window_full:
            return WINDOW_FULL
        if self._waiting is not None:
            return WAITING
        if self.retrying:
            return RETRYING
        return DELIVERING

    def start(self) -> None:
        """Begin on the next reactor turn, after the hub has answered the SUBSCRIBE."""
        self.active = True
        self._timer = self._clock.callLater(0, self._turn)

    def stop(self) -> None:
        """Stop cleanly: no stub waiter and no timer is left behind."""
        self.active = False
        self.held = None
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            waiting.cancel()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self.pump()

    def window_opened(self) -> None:
        """A consume moved the subscription's pointer."""
        if self.window_full:
            self.pump()

    def move_past(self, seq: int) -> None:
        """The subscription moved over every seq-id up to `seq` without their delivery
        (its message bound skipped them): go on after them."""
        if self.next_seq <= seq:
            self.next_seq = seq + 1
            self.held = None
        if self.window_full:
            self.window_opened()

    def _turn(self) -> None:
        self._timer = None
        self.retrying = False
        self.pump()

    def pump(self) -> None:
        """Deliver while there is an entry, room in the window and an unpaused channel."""
        if self._timer is not None or self._waiting is not None or self._pumping:
            return  # (a channel consuming or resuming inside deliver() lands here: the loop
            # below re-reads the window and the pause flag after every delivery)
        self._pumping = True
        try:
            self._pump()
        finally:
            self._pumping = False

    def _pump(self) -> None:
        budget = self._max_burst
        window = self.window
        subscription = self.subscription
        cache = self._cache
        get = self._get
        topic_log = self._log_bounds
        while self.active and not self.paused:
            if window:
                room = window - (self.next_seq - 1 - subscription.consumed_seq)
                if room <= 0:
                    self.window_full = True
                    return
            self.window_full = False
            next_seq = self.next_seq
            entry = self.held
            if entry is None or entry.last_seq < next_seq:
                self.held = None
                if next_seq > topic_log.last_seq:  # caught up: the next publish comes to it
                    self.push_waits += 1
                    self._waiting = self._wait_tail(next_seq, self._tail_waiter)
                    return
                if next_seq < topic_log.first_seq:
                    self.skipped += topic_log.first_seq - next_seq
                    self.next_seq = next_seq = topic_log.first_seq
                misses = cache.misses
                found = get(next_seq)
                if cache.misses != misses:
                    self.pulls += 1
                if type(found) is Deferred:
                    self._waiting = found
                    found.addCallbacks(self._arrived, self._failed)
                    return
                entry = found
            if self.skip is not None and self.skip(entry):
                self.held = None
                self.next_seq = entry.last_seq + 1
                self.passed_over += 1
                self.on_skip(self, next_seq, entry.last_seq)
                budget -= 1
                if not budget:
                    self._timer = self._clock.callLater(0, self._turn)
                    return
                continue
            first = entry.first_seq
            start = next_seq - first
            stop = entry.last_seq - first + 1
            # (a compacted entry goes whole: cut inside its gap, it would carry no message
            # to acknowledge, and the window would never open again)
            if window and stop - start > room and not entry.data[1] & ENTRY_FLAG_SPARSE:
                stop = start + room
                self.held = entry
            else:
                self.held = None
            stop = self._due_stop(entry, start, stop)
            if stop is None:
                return
            if stop > start and not self._send(first, start, stop, (entry, start, stop)):
                return  # (stop == start: they expired, passed over)
            budget -= 1
            if not budget:  # let other cursors and connections have the reactor
                self._timer = self._clock.callLater(0, self._turn)
                return

    def _send(self, first: int, start: int, stop: int, delivery) -> bool:
        """Deliver messages [start, stop) of the entry at seq-id `first` (`delivery`: the
        channel's deliver arguments after the handle); False when the channel failed
        (the cursor is stopped)."""
        try:
            self.channel.deliver(self.handle, *delivery)
        except Exception:
            _logger.failure("delivering to {handle} failed; stopping it", handle=self.handle)
            self._on_channel_error(self)
            return False
        self.next_seq = first + stop
        self.delivered_entries += 1
        self.delivered_messages += stop - start
        return True

    def _due_stop(self, entry, start: int, stop: int):
        """What to deliver now of [start, stop) of `entry`: its stop when nothing of it is
        timed (no delays or TTLs, or a relay's cursor, which sends them on), else
        _timed_stop's (None: wait; `start`: the first ones expired, passed over)."""
        if self.timed and (entry.schedule is not None or self.ttl_ms):
            return self._timed_stop(entry, start, stop)
        return stop

    def _timed_stop(self, entry, start: int, stop: int):
        """What to deliver of [start, stop) of `entry`, which may hold delayed or expiring
        messages (protocol/schedule.py): its stop (the entry is held when it is cut
        short); None when its first message is not due (the cursor waits for its time on
        a timer); `start` when the first ones expired: passed over (`on_expired`)."""
        what, end, deliver_at = timing(entry, start, stop, now_ms(self._clock), self.ttl_ms)
        if what is DUE:
            if end < stop:
                self.held = entry
            return end
        if what is LATER:
            self.held = entry
            self.delay_waits += 1
            wait = (deliver_at - now_ms(self._clock)) / 1000.0
            self._timer = self._clock.callLater(max(wait, 0.001), self._turn)
            return None
        first = entry.first_seq
        self.next_seq = first + end
        self.held = entry if first + end <= entry.last_seq else None
        self.expired += end - start
        self.on_expired(self, first + start, first + end - 1)
        return start

    def _arrived(self, entry) -> None:
        self._waiting = None
        if self.active:
            self.held = entry
            self.pump()

    def _failed(self, failure) -> None:
        self._waiting = None
        if not self.active or failure.check(CancelledError):
            return None
        if failure.check(EntriesUnreadable):
            self._on_unreadable(self, failure)
            return None
        self.read_retries += 1
        self.retrying = True
        _logger.warn(
            "reading seq {seq} of {topic} for {handle} failed ({error}); retrying in {delay}s",
            seq=self.next_seq,
            topic=self.topic_log.topic,
            handle=self.handle,
            error=failure.getErrorMessage(),
            delay=self._retry_s,
        )
        self._timer = self._clock.callLater(self._retry_s, self._turn)
        return None
