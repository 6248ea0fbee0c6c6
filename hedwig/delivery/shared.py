"""The dispatcher of a shared (or pull) subscription: every member's deliveries.

One durable subscription, any number of members (one for an exclusive pull
subscription). The dispatcher reads entries from the cache as a cursor does and hands
each member, in turn, a slice of an entry as large as its room (its window less what it
holds; a pull member no more than its FETCH asks for) and its share of what is at hand
(the messages from there to the topic's end, divided among it and the members idle,
holding nothing): the whole rest of the entry when a backlog of many entries is at hand
or nobody else is idle, so the hub still works per entry, and a small publish is spread
over the members waiting for work rather than all of it going to the first one. A
member is sent the stored bytes with start and stop as any subscriber is. Messages go
to one member at a time; each member receives first deliveries in seq-id order,
redeliveries when they come, and nothing orders deliveries across members.

What a member was sent and has not acknowledged is a lease (leases.py), taken back when
it is NACKed, when `ack_timeout` passes, or when the member leaves, and then delivered
again (REDELIVERY, with its delivery count) before anything new, or dead-lettered after
`max_deliveries`. The acknowledgement bookkeeping (acks above the consumed seq-id,
expiry, dead letters, the message bound's skips) is the AckBook's (shared_acks.py).

Waiting: for the next publish (a tail stub) the dispatcher still serves redeliveries;
for a ledger read it waits, as a cursor does. A pull member's FETCH ends (FETCH_DONE)
once it has been given something and nothing more is at hand, or at its timeout.
"""

from bisect import bisect_left
from collections import deque
from heapq import heappop, heappush

from twisted.internet.defer import CancelledError, Deferred
from twisted.logger import Logger

from hedwig.delivery.delays import DelayedRuns
from hedwig.delivery.interface import SubscribeError
from hedwig.delivery.key_shared import MAX_PARKED_RUNS, KeyRouting
from hedwig.delivery.leases import Holdings, Lease
from hedwig.delivery.schedules import now_ms, timing
from hedwig.delivery.shared_acks import AckBook
from hedwig.protocol.entry import ENTRY_FLAG_SPARSE
from hedwig.protocol.schedule import DUE, EXPIRED, LATER
from hedwig.protocol.status import Status
from hedwig.protocol.work_requests import selection_of
from hedwig.topiclog.errors import EntriesUnreadable

_logger = Logger()

_SETTLE = "settle"  # the pump stopped with nothing more at hand: fetches that got something end
_WAIT = "wait"  # a ledger read, or the reactor's next turn: fetches go on
_FULL = "full"  # (_timing: a delayed message met while max_delayed_runs are held)


def _segment_start(segment) -> int:
    return segment[0]


class SharedDispatcher(AckBook):
    """Members, leases and redeliveries of one shared or pull subscription."""

    def __init__(self, subscription, table, clock, settings, counters, hooks, acked):
        """`hooks` (WorkQueues, sharing.py): advance(dispatcher, seq), channel_error(member),
        unreadable(dispatcher, failure), dead_letter(dispatcher, first, last, count)."""
        self.subscription = subscription
        self.table = table  # the topic's TopicTable: its current log, the least pointer
        self.clock = clock
        self.counters = counters  # the manager's totals, for STATS and /metrics
        self.hooks = hooks
        self.max_burst = settings.max_burst_entries
        self.members = {}  # channel -> Member
        self._order = []  # the members, in turn
        self._turn = 0
        self.acked = acked  # RangeSet: acknowledged seq-ids above the consumed one
        self.holdings = Holdings()
        self.queue = []  # heap of (first, last, delivery count) to deliver again
        self.expiry = deque()  # leases, in the order they were made (deadlines ascending)
        self.next_seq = subscription.consumed_seq + 1  # the first seq-id never delivered
        self.redelivered = 0
        self.dead_lettered = 0
        self.dead_letter_failures = 0
        self.dead_letters_in_flight = 0
        self.skipped_by_bound = 0
        self.skipped_by_retention = 0
        self.ttl_expired = 0  # messages whose TTL passed before their delivery
        self.passed_over = 0  # seq-ids the filter passed over
        self._fetching = set()  # pull members with a FETCH in progress
        self._reading = None  # the ledger read the pump waits on
        self._tail = None  # the wait for the next publish
        self._timer = None  # the pump's next turn
        self._expiry_timer = None
        self._pumping = False
        self.stopped = False
        self.ack_timeout_s = settings.ack_timeout_ms / 1000.0
        self.max_deliveries = None
        self.dead_letter_topic = None
        # The subscription's MessageFilter (filtering.py; the manager sets it), or None.
        self.message_filter = None
        # A key_shared subscription's routing of keys to members (key_shared.py), else None.
        self.keys = KeyRouting() if subscription.kind == "key_shared" else None
        self.leases_made = 0  # (each lease's serial: the moves of keys wait on those before them)
        self._evaluated = None  # (filter, entry, runs) of the last entry evaluated in steps
        # Delayed messages held aside until their time (delays.py).
        self.delays = DelayedRuns(clock, settings.max_delayed_runs, self.pump)
        self._time_timer = None  # a key_shared subscription's wait for its next message's time
        # The expiry of messages without one of their own: the topic's, else the hub's (0: none).
        self.ttl_ms = table.topic_log.ttl_ms or settings.message_ttl_ms
        self.configure(settings)

    def configure(self, settings) -> None:
        """Take the subscription's preferences (set at SUBSCRIBE; the hub's defaults)."""
        preferences = self.subscription.preferences
        self.ack_timeout_s = preferences.get("ack_timeout_ms", settings.ack_timeout_ms) / 1000.0
        self.max_deliveries = preferences.get("max_deliveries")
        self.dead_letter_topic = preferences.get("dead_letter_topic") or f"{self.subscription.topic}.dlq"

    @property
    def pull(self) -> bool:
        return self.subscription.pull

    # -- members -------------------------------------------------------------------------

    def add(self, member) -> None:
        self.members[member.channel] = member
        self._order.append(member)
        if self.keys is not None:
            self.keys.join(member, self.leases_made, self.queue)

    def remove(self, member) -> None:
        """The member left (closed, disconnected, forced out): what it holds goes back,
        counted as a delivery that failed; when the hub itself detaches it (the
        dispatcher is stopped: shutdown, the topic released or deleted) it only goes back
        to be delivered again, never to the dead-letter topic."""
        if self.members.get(member.channel) is not member:
            return
        del self.members[member.channel]
        index = self._order.index(member)
        del self._order[index]
        if index < self._turn:
            self._turn -= 1
        self._stop_fetch(member)
        for start, end, lease in self.holdings.release_where(lambda lease: lease.member is not member):
            if self.stopped:
                heappush(self.queue, (start, end, lease.count + 1))
            else:
                self.give_back(start, end, lease.count)
        if self.keys is not None:
            self.keys.leave(member, self.queue)
        self.pump_soon()  # (the next turn: a hub detaching everyone redelivers to nobody)

    def member_of(self, channel):
        return self.members.get(channel)

    def _next_member(self):
        """(the next member in turn with room, its place in the order), or (None, None)."""
        order = self._order
        count = len(order)
        turn = self._turn
        for k in range(count):
            i = (turn + k) % count
            member = order[i]
            if member.room > 0:
                return member, i
        return None, None

    def _share(self, taker, first: int, last: int) -> int:
        """What `taker` takes of the messages first..last at hand: an equal part for it
        and each idle member (with room, holding nothing), rounded up; all of them when
        no other member is idle."""
        sharing = 0 if taker.held == 0 else 1
        for member in self._order:
            if member.held == 0 and member.room > 0:
                sharing += 1
        at_hand = last - first + 1
        return at_hand if sharing < 2 else -(-at_hand // sharing)

    # -- FETCH (pull members) ---------------------------------------------------------------

    def fetch(self, member, max_messages: int, timeout_s: float) -> None:
        """Give `member` up to `max_messages`: what is at hand now, else the first that
        comes within `timeout_s`; FETCH_DONE ends it."""
        if not member.pull:
            raise SubscribeError(
                Status.WRONG_SUBSCRIPTION_KIND,
                f"{self.subscription.subscriber_id} on {self.subscription.topic} is pushed to:"
                " FETCH is for pull subscriptions",
            )
        if member.fetching:
            raise SubscribeError(Status.FETCH_IN_PROGRESS, "the previous FETCH on this handle has not ended")
        member.fetching = True
        member.credit = max_messages
        member.fetched = 0
        self._fetching.add(member)
        member.fetch_timer = self.clock.callLater(timeout_s, self._fetch_expired, member)
        self.counters.fetches += 1
        self.pump_soon()  # (the next turn: the FETCH's reply is usually out first)

    def _fetch_expired(self, member) -> None:
        member.fetch_timer = None
        self._end_fetch(member)

    def _settle_fetches(self) -> None:
        for member in [m for m in self._fetching if m.fetched]:
            self._end_fetch(member)

    def _stop_fetch(self, member) -> None:
        member.fetching = False
        member.credit = 0
        self._fetching.discard(member)
        timer, member.fetch_timer = member.fetch_timer, None
        if timer is not None and timer.active():
            timer.cancel()

    def _end_fetch(self, member) -> None:
        if not member.fetching:
            return
        self._stop_fetch(member)
        try:
            member.channel.fetch_done(member.handle)
        except Exception:
            _logger.failure("ending a FETCH of {handle} failed; detaching it", handle=member.handle)
            self.hooks.channel_error(member)

    # -- the pump ---------------------------------------------------------------------------

    def pump_soon(self) -> None:
        if self._timer is None and not self.stopped:
            self._timer = self.clock.callLater(0, self._turned)

    def _turned(self) -> None:
        self._timer = None
        self.pump()

    def pump(self) -> None:
        """Deliver while a member has room and something is at hand."""
        if self._pumping or self._reading is not None or self.stopped or self._timer is not None:
            return
        self._pumping = True
        try:
            stopped = self._pump()
        finally:
            self._pumping = False
        self.delays.arm()
        if stopped is _SETTLE and self._fetching:
            self._settle_fetches()

    def _pump(self):
        if self.keys is not None:
            return self._pump_keyed()
        budget = self.max_burst
        log = self.table.topic_log
        self._drop_collected(log)
        delays = self.delays
        while True:
            member, place = self._next_member()
            if member is None:
                return _SETTLE
            piece = self._take_queued(self.queue)
            due_at = None
            if piece is None and len(delays):
                piece, due_at = self._take_due()
            if piece is None:
                piece = self._take_new(log)
                if piece is None:
                    return _SETTLE
            self._turn = (place + 1) % len(self._order)
            first, last, count = piece
            found = log.get(first)
            if type(found) is Deferred:
                if count > 1:
                    heappush(self.queue, piece)
                elif due_at is not None:
                    delays.hold(due_at, first, last)
                self._reading = found
                found.addCallbacks(self._read, self._read_failed)
                return _WAIT
            if count == 1 and self.message_filter is not None and due_at is None:
                runs = self._runs(found)
                if type(runs) is Deferred:  # (a large entry, evaluated in steps)
                    self._reading = runs
                    runs.addCallbacks(self._filtered, self._read_failed, (self.message_filter, found))
                    return _WAIT
                first, last = self._passing(runs, first, min(last, found.last_seq))
                if first is None:  # (none of it passes: passed over, acknowledged)
                    budget -= 1
                    if not budget:
                        self.pump_soon()
                        return _WAIT
                    continue
                piece = (first, last, 1)
            if found.schedule is not None or self.ttl_ms:
                what, through = self._timing(found, first, min(last, found.last_seq), count, due_at)
                if what is _FULL:  # (max_delayed_runs are held: nothing new until one is due)
                    return _SETTLE
                if what is not DUE:  # (held aside until its time, or expired)
                    if count > 1 and through < piece[1]:
                        heappush(self.queue, (through + 1, piece[1], count))
                    elif due_at is not None and through < piece[1]:
                        delays.hold(due_at, through + 1, piece[1])
                    budget -= 1
                    if not budget:
                        self.pump_soon()
                        return _WAIT
                    continue
                last = through
            if found.data[1] & ENTRY_FLAG_SPARSE:  # (a compacted entry goes whole: its messages end it)
                last = min(last, found.last_seq)
            else:
                room = min(member.room, self._share(member, first, piece[1]))
                last = min(last, found.last_seq, first + room - 1)
            if count > 1 and last < piece[1]:
                heappush(self.queue, (last + 1, piece[1], count))
            elif due_at is not None and last < piece[1]:
                delays.hold(due_at, last + 1, piece[1])
            if count == 1 and self.message_filter is not None:
                base = found.first_seq
                found = self.message_filter.part(found, first - base, last - base + 1)[0]
            self._deliver(member, found, first, last, count)
            budget -= 1
            if not budget:  # let other subscribers and connections have the reactor
                self.pump_soon()
                return _WAIT

    def _pump_keyed(self):
        """A key_shared subscription's turn: each run split by key among the members
        (key_shared.py); what a member cannot take now is parked for it, in seq-id order,
        and taken again only when it has room."""
        keys = self.keys
        log = self.table.topic_log
        self._drop_collected(log)
        settled = keys.settle(self._oldest_held())
        sources = keys.begin(self._order, self.queue, settled)
        budget = self.max_burst
        try:
            while True:
                if not keys.any_room():
                    return _SETTLE
                piece, heap = self._take_keyed(log, sources)
                if piece is None:
                    return _SETTLE
                first, last, count = piece
                found = log.get(first)
                if type(found) is Deferred:
                    if heap is not None:
                        heappush(heap, piece)
                    self._reading = found
                    found.addCallbacks(self._read, self._read_failed)
                    return _WAIT
                end = min(last, found.last_seq)
                if heap is None and (found.schedule is not None or self.ttl_ms):
                    end = self._keyed_timing(found, first, end)
                    if end < first:  # (in seq-id order, as keys' order asks: it waits, or it expired)
                        if self.next_seq > first:
                            continue
                        return _SETTLE
                if heap is not None and end < last:
                    heappush(heap, (end + 1, last, count))
                if heap is None:
                    self.next_seq = end + 1
                runs = keys.split(found, first, end)
                if heap is not None and heap is not self.queue and count == 1:
                    runs = self._parked_with(found, heap, sources, runs, end)
                delivered = self._deliver_split(found, runs, count)
                # (only what is delivered counts: a turn takes each parked run at most once)
                budget -= delivered
                if not budget:
                    self.pump_soon()
                    return _WAIT
        finally:
            keys.end()

    def _parked_with(self, entry, heap, sources, runs, through: int) -> list:
        """`runs` (of a parked run of `entry` taken from `heap`, up to `through`) and
        those of the runs parked after it on the same heap, in the same entry, that come
        before the first run of every source that may hold the same keys (the queue of
        redeliveries, the moving slots' and keyless runs; another member's parked runs
        are its own keys): a member's keys of an entry, parked while its window was
        full, go out as one delivery again, each key still in seq-id order."""
        limit = self.next_seq
        for other, member in sources:
            if member is None and other is not heap and other and other[0][0] < limit:
                limit = other[0][0]
        last_seq = entry.last_seq
        split = self.keys.split
        while heap and through < heap[0][0] <= last_seq and heap[0][0] < limit and heap[0][2] == 1:
            piece = self._take_queued(heap)
            if piece is None:
                break
            start, stop, count = piece
            if start > last_seq or start >= limit or count != 1:  # (past acknowledged runs it popped)
                heappush(heap, piece)
                break
            if stop > last_seq:
                heappush(heap, (last_seq + 1, stop, 1))
                stop = last_seq
            runs += split(entry, start, stop)
            through = stop
        return runs

    def _deliver_split(self, entry, runs, count: int) -> bool:
        """Deliver the runs of `entry` KeyRouting.split made (delivered `count` times
        before): each parked run to its heap; a member that takes subsets its first
        deliveries of the entry as one (_deliver_subsets), any other run by itself.
        Whether anything went out."""
        keys = self.keys
        delivered = False
        subsets = None
        for to, start, stop in runs:
            if type(to) is list:
                heappush(to, (start, stop, count))
            elif count == 1 and to.subsets:
                if subsets is None:
                    subsets = {}
                subsets.setdefault(to, []).append((start, stop))
            elif self._deliver(to, keys.cut(entry, start, stop), start, stop, count):
                delivered = True
            elif count == 1:
                heappush(self.queue, (start, stop, count))  # (a redelivery is queued already)
        if subsets is not None and self._deliver_subsets(entry, subsets):
            delivered = True
        return delivered

    def _deliver_subsets(self, entry, subsets) -> bool:
        """First deliveries of `entry`, {member: its runs [(first, last)]}: a member's runs
        go as one SUBSET_DELIVERY and one lease (a single run as a DELIVERY of its own, as
        ever); what a failed channel was to take goes back to the queue. Whether any went out."""
        keys = self.keys
        base = entry.first_seq
        deadline = self.clock.seconds() + self.ack_timeout_s
        segments = []
        delivered = False
        for member, runs in subsets.items():
            if len(runs) == 1:
                start, stop = runs[0]
                if self._deliver(member, keys.cut(entry, start, stop), start, stop, 1):
                    delivered = True
                else:
                    heappush(self.queue, (start, stop, 1))
                continue
            first, last = runs[0][0], runs[-1][1]
            low, high = first - base, last - base + 1
            n = 0
            for start, stop in runs:
                n += stop - start + 1
            selection = selection_of([(start - base, stop - base) for start, stop in runs], low, high)
            try:
                member.channel.deliver_subset(member.handle, entry, low, high, selection, n)
            except Exception:
                _logger.failure("delivering to {handle} failed; detaching it", handle=member.handle)
                for start, stop in runs:
                    heappush(self.queue, (start, stop, 1))
                self.hooks.channel_error(member)
                continue
            self.leases_made += 1
            lease = Lease(member, first, last, 1, deadline, self.leases_made)
            lease.held = n
            segments += [(start, stop, lease) for start, stop in runs]
            member.took(n)
            if last >= self.next_seq:
                self.next_seq = last + 1
            self.lease_made(lease)
            delivered = True
        if segments:
            segments.sort(key=_segment_start)
            self.holdings.add_segments(segments)
        return delivered

    def _take_due(self):
        """((first, last, 1), its time) of the earliest delayed run that is due and not
        acknowledged meanwhile, or (None, None)."""
        delays = self.delays
        now = now_ms(self.clock)
        while True:
            run = delays.take_due(now)
            if run is None:
                return None, None
            deliver_at, first, last = run
            part = self._unacked(first, last)
            if part is None:
                continue
            start, end = part
            if end < last:
                delays.hold(deliver_at, end + 1, last)
            return (start, end, 1), deliver_at

    def _timing(self, entry, first: int, last: int, count: int, due_at) -> tuple:
        """(what, through) of the messages from `first` (to `last`, of `entry`): DUE
        through a seq-id (deliver them); LATER (a new run held aside until its time);
        EXPIRED (their TTL passed: acknowledged, or dead-lettered when the subscription
        has a dead-letter topic, and counted); _FULL (a new run not due while
        max_delayed_runs are held: it waits)."""
        base = entry.first_seq
        what, stop, deliver_at = timing(entry, first - base, last - base + 1, now_ms(self.clock), self.ttl_ms)
        through = stop + base - 1
        new = count == 1 and due_at is None
        if what is LATER:
            if not new:  # (delivered before, or its run came due: it was due then)
                return DUE, through
            if self.delays.full:
                self.delays.waits += 1
                return _FULL, first - 1
            self.delays.hold(deliver_at, first, through)
        elif what is EXPIRED:
            self._expire_run(first, through, count)
            return EXPIRED, through
        else:
            return DUE, through
        if through >= self.next_seq:
            self.next_seq = through + 1
        return LATER, through

    def _expire_run(self, first: int, last: int, count: int) -> None:
        """first..last were not delivered within their TTL: counted, and dead-lettered
        when the subscription has a dead-letter topic (named, or max_deliveries set),
        else acknowledged."""
        n = last - first + 1
        self.ttl_expired += n
        self.counters.ttl_expired += n
        if last >= self.next_seq:
            self.next_seq = last + 1
        if self.max_deliveries is not None or self.subscription.preferences.get("dead_letter_topic"):
            self._dead_letter(first, last, count)
        else:
            newly = self._ack_range(first, last)
            if newly:
                self._acks_moved(newly)

    def _keyed_timing(self, entry, first: int, last: int):
        """The last seq-id of the due messages from `first` (new, of `entry`) on a
        key_shared subscription; first - 1 when the first is not due (it waits for its
        time, on a timer) or expired (passed: _expire_run)."""
        base = entry.first_seq
        what, stop, deliver_at = timing(entry, first - base, last - base + 1, now_ms(self.clock), self.ttl_ms)
        through = stop + base - 1
        if what is DUE:
            return through
        if what is EXPIRED:
            self._expire_run(first, through, 1)
        else:
            self._wait_for_time(deliver_at)
        return first - 1

    def _wait_for_time(self, deliver_at: int) -> None:
        """A key_shared subscription's next new message is not due: take nothing new
        until its time (a timer; parked runs and redeliveries go on meanwhile)."""
        if self._time_timer is not None and self._time_timer.active():
            return
        wait = max(0.001, deliver_at / 1000.0 - self.clock.seconds())
        self._time_timer = self.clock.callLater(wait, self._turned_at_time)

    def _turned_at_time(self) -> None:
        self._time_timer = None
        self.pump()

    def _take_keyed(self, log, sources):
        """(the next run to deliver, the heap it came from): the first of the heaps whose
        member has room (key_shared.KeyRouting.begin), else new seq-ids (heap None)
        unless MAX_PARKED_RUNS runs are parked; (None, None) when there is none."""
        keys = self.keys
        while True:
            heap = keys.next_source(sources)
            if heap is None:
                break
            piece = self._take_queued(heap)
            if piece is not None:
                return piece, heap
        if keys.parked_runs() >= MAX_PARKED_RUNS:
            return None, None
        piece = self._take_new(log)
        if piece is not None:
            first, last, count = piece
            share = keys.new_share(len(self._order))
            if share <= 0:
                return None, None
            piece = (first, min(last, first + share - 1), count)
        return piece, None

    def _oldest_held(self):
        """The serial of the oldest lease still held (None: none is)."""
        expiry = self.expiry
        while expiry and not expiry[0].held:
            expiry.popleft()
        return expiry[0].serial if expiry else None

    def _take(self, log):
        """(first, last, delivery count) of the next run to deliver: a redelivery first,
        else new seq-ids (skipping those acknowledged already); None when there is none
        (the dispatcher then waits for the next publish)."""
        return self._take_queued(self.queue) or self._take_new(log)

    def _take_queued(self, queue):
        """(first, last, delivery count) of the first run of `queue` (a heap of runs) that
        is not acknowledged (what was acknowledged meanwhile is done), or None."""
        while queue:
            first, last, count = heappop(queue)
            part = self._unacked(first, last)
            if part is None:
                continue
            start, end = part
            if end < last:
                heappush(queue, (end + 1, last, count))
            return start, end, count
        return None

    def _unacked(self, first: int, last: int):
        """(start, end) of the first run of first..last above the floor that is not
        acknowledged, or None when all of it is."""
        acked = self.acked
        start = acked.next_gap(max(first, self.subscription.consumed_seq + 1))
        if start > last:
            return None
        following = acked.next_start(start)
        return start, last if following is None or following > last else following - 1

    def _take_new(self, log):
        """(first, last, 1) of the seq-ids from the first never delivered, or None (the
        dispatcher waits for the next publish)."""
        acked = self.acked
        seq = acked.next_gap(self.next_seq)
        self.next_seq = seq
        if seq > log.last_seq:
            self._wait_for_publish(log, seq)
            return None
        bound = acked.next_start(seq)
        return seq, log.last_seq if bound is None else bound - 1, 1

    def _passing(self, runs, first: int, last: int) -> tuple:
        """(first, last) of the first run of first..last (new seq-ids of an entry whose
        passing runs are `runs`) that passes the filter, (None, None) when none does; the
        seq-ids before it, which it passes over, are acknowledged (no member is sent
        them: they count as consumed once everything before them is, as an exclusive
        subscriber's do)."""
        firsts, lasts = runs
        index = bisect_left(lasts, first)
        if index == len(lasts) or firsts[index] > last:
            passed_to, run = last, (None, None)
        else:
            start = max(firsts[index], first)
            passed_to, run = start - 1, (start, min(lasts[index], last))
        if passed_to >= first:
            self.next_seq = passed_to + 1
            self.passed_over += passed_to - first + 1
            newly = self._ack_range(first, passed_to)
            if newly:
                self._acks_moved(newly)
        return run

    def _drop_collected(self, log) -> None:
        """Seq-ids retention removed before they were consumed are skipped (counted)."""
        if self.subscription.consumed_seq + 1 < log.first_seq:
            self.skipped_by_retention += self.skip_through(log.first_seq - 1)

    def _deliver(self, member, entry, first: int, last: int, count: int) -> bool:
        """Send first..last of `entry` to `member` (count: the delivery's); False when its
        channel failed (the member is detached; a redelivery goes back to the queue)."""
        base = entry.first_seq
        try:
            if count == 1:
                member.channel.deliver(member.handle, entry, first - base, last - base + 1)
            else:
                member.channel.redeliver(member.handle, entry, first - base, last - base + 1, count)
        except Exception:
            _logger.failure("delivering to {handle} failed; detaching it", handle=member.handle)
            if count > 1:
                heappush(self.queue, (first, last, count))
            self.hooks.channel_error(member)
            return False
        n = last - first + 1
        self.leases_made += 1
        deadline = self.clock.seconds() + self.ack_timeout_s
        lease = Lease(member, first, last, count, deadline, self.leases_made)
        self.holdings.add(lease)
        member.took(n)
        if count == 1:
            if last >= self.next_seq:  # (a key_shared run parked earlier is behind it)
                self.next_seq = last + 1
        else:
            member.redelivered_messages += n
            self.redelivered += n
            self.counters.redelivered += n
        self.lease_made(lease)
        return True

    def _wait_for_publish(self, log, seq: int) -> None:
        if self._tail is not None:
            return
        waiting = log.get(seq)
        if type(waiting) is Deferred:
            self._tail = waiting
            waiting.addCallbacks(self._published, self._tail_failed)

    def _published(self, _entry) -> None:
        self._tail = None
        self.pump()

    def _tail_failed(self, failure) -> None:
        self._tail = None
        if not failure.check(CancelledError) and not self.stopped:
            self.pump_soon()

    def _read(self, _entry) -> None:
        self._reading = None
        self.pump()

    def _runs(self, entry):
        """The filter's runs of `entry`: those it answered after evaluating it in steps
        when `entry` is that entry (read again meanwhile, it may be another object of
        the same bytes: it is not evaluated again), else MessageFilter.runs."""
        evaluated = self._evaluated
        if evaluated is not None:
            message_filter, held, runs = evaluated
            if entry.first_seq > held.last_seq:  # (past it: not held any longer)
                self._evaluated = None
            elif (
                message_filter is self.message_filter
                and held.first_seq == entry.first_seq
                and held.last_seq == entry.last_seq
                and held.data == entry.data
            ):
                return runs
        return self.message_filter.runs(entry)

    def _filtered(self, runs, message_filter, entry) -> None:
        self._evaluated = (message_filter, entry, runs)
        self._read(entry)

    def _read_failed(self, failure) -> None:
        self._reading = None
        if failure.check(CancelledError) or self.stopped:
            return
        if failure.check(EntriesUnreadable):
            self.hooks.unreadable(self, failure)
            return
        delay = self.table.topic_log.cache.settings.retry_backoff_ms / 1000.0
        _logger.warn(
            "reading {topic} for shared subscription {subscriber} failed ({error}); retrying in {delay}s",
            topic=self.subscription.topic,
            subscriber=self.subscription.subscriber_id,
            error=failure.getErrorMessage(),
            delay=delay,
        )
        self._timer = self.clock.callLater(delay, self._turned)

    # -- lifecycle ---------------------------------------------------------------------------

    def restart(self) -> None:
        """Go on after a stop (an unsubscribe whose metadata write failed)."""
        self.stopped = False
        self._arm_expiry()
        self.delays.arm()
        self.pump_soon()

    def stop(self) -> None:
        """The subscription is going (released, deleted, the hub stopping): no timer or
        wait is left, and members detached from now on give back without a count."""
        self.stopped = True
        self.delays.stop()
        for member in self._order:
            self._stop_fetch(member)
        for name in ("_timer", "_expiry_timer", "_time_timer"):
            timer = getattr(self, name)
            setattr(self, name, None)
            if timer is not None and timer.active():
                timer.cancel()
        for name in ("_tail", "_reading"):
            waiting = getattr(self, name)
            setattr(self, name, None)
            if waiting is not None:
                waiting.cancel()
