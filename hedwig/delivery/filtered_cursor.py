"""The cursor of a subscription with a message filter: it delivers the runs of each entry
that pass the filter and passes over the rest.

A Cursor (cursor.py) hands each entry on whole; a FilteredCursor asks the subscription's
MessageFilter (filtering.py) for the entry's passing runs once, delivers each run as a
slice of the stored entry (the same bytes, start and stop, as any delivery; a run of at
most half of it as an entry of its own, MessageFilter.part) and tells
the delivery manager of each gap it passes over (`on_skip`, as a relay cursor's skipped
entries), so the consumed seq-id moves past what the subscriber never sees and pruning
is not held back. Its window counts what it delivered and was not consumed, not the
seq-ids it passed over (`filtered_runs.pending`).

A class of its own, so that a cursor without a filter runs exactly the code it ran
before filters existed: a subscription without one costs what it cost.
"""

from bisect import bisect_left

from twisted.internet.defer import Deferred

from hedwig.delivery.cursor import Cursor


class FilteredCursor(Cursor):
    __slots__ = ("_firsts", "_lasts", "_runs_of", "message_filter")

    def __init__(self, subscription, topic_log, channel, handle, window, clock, *, message_filter, **parts):
        super().__init__(subscription, topic_log, channel, handle, window, clock, **parts)
        self.message_filter = message_filter
        self._runs_of = None  # the entry whose runs _firsts and _lasts are
        self._firsts = self._lasts = ()

    def _pump(self) -> None:
        budget = self._max_burst
        window = self.window
        subscription = self.subscription
        cache = self._cache
        get = self._get
        topic_log = self._log_bounds
        passed = self.filtered_runs
        while self.active and not self.paused:
            if window:
                room = window - (self.next_seq - 1 - subscription.consumed_seq - passed.pending)
                if room <= 0:
                    self.window_full = True
                    return
            self.window_full = False
            next_seq = self.next_seq
            entry = self.held
            if entry is None or entry.last_seq < next_seq:
                self.held = None
                if next_seq > topic_log.last_seq:
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
            if entry is not self._runs_of:
                runs = self.message_filter.runs(entry)
                if type(runs) is Deferred:  # (a large entry, evaluated in steps)
                    self.held = entry
                    self._waiting = runs
                    runs.addCallbacks(self._evaluated, self._failed, (entry,))
                    return
                self._firsts, self._lasts = runs
                self._runs_of = entry
            lasts = self._lasts
            index = bisect_left(lasts, next_seq)
            if index == len(lasts):  # nothing more of this entry passes
                self.held = None
                self.next_seq = entry.last_seq + 1
                self.passed_over += 1
                self.on_skip(self, next_seq, entry.last_seq)
            else:
                run_first = self._firsts[index]
                if run_first > next_seq:
                    self.next_seq = run_first
                    self.on_skip(self, next_seq, run_first - 1)
                    next_seq = run_first
                first = entry.first_seq
                start = next_seq - first
                stop = lasts[index] - first + 1
                if window and stop - start > room:
                    stop = start + room
                self.held = entry if first + stop <= entry.last_seq else None
                stop = self._due_stop(entry, start, stop)
                if stop is None:
                    return
                if stop > start and not self._send(
                    first, start, stop, self.message_filter.part(entry, start, stop)
                ):
                    return  # (stop == start: they expired, passed over)
            budget -= 1
            if not budget:  # let other cursors and connections have the reactor
                self._timer = self._clock.callLater(0, self._turn)
                return

    def _evaluated(self, runs, entry) -> None:
        self._waiting = None
        if self.active:
            self._firsts, self._lasts = runs
            self._runs_of = entry
            self.held = entry
            self.pump()
