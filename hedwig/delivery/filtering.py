"""Entries an attached subscriber is not sent, and what passing over them does to its
consumed seq-id.

A cursor may carry a filter of whole entries, a predicate of the entries it passes over
instead of delivering (region relays', IRelayPolicy.entry_filter: a relay subscriber is
not sent what came from the region it relays to), and a subscription may carry a
message filter, its selector (hedwig.selector), kept in its preferences: a
MessageFilter says which runs of an entry's seq-ids pass it, and a FilteredCursor
(filtered_cursor.py), or a shared subscription's dispatcher, delivers those runs and
passes over the rest. Both are asked for in one place, DeliveryManager._entry_filter
and _message_filter.

Seq-ids passed over are never acknowledged by the subscriber, so they count as consumed
once everything before them is: at once when the subscriber's consumed seq-id already
reaches them, else when a consume does. PassedOver keeps those runs, in seq-ids (not
entries), so a filter that passes over part of an entry fits the same rule.
"""

from collections import OrderedDict, deque

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import Waiters
from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import ENTRY_FLAG_SPARSE, EntrySlices, decode_entry_header
from hedwig.protocol.messageset import message_set_count
from hedwig.protocol.status import Status, StatusError
from hedwig.selector import SelectorError, compile_selector
from hedwig.topiclog.entry import LogEntry

_logger = Logger()

# The most messages of an entry, and bytes of their properties and keys, a filter
# evaluates in one go (MessageFilter).
STEP_MESSAGES = 256
STEP_BYTES = 64 << 10
# Where a subscription keeps its filter's text (a preference, so it is stored with the
# subscription and read back after a restart or by the hub that takes the topic over).
FILTER_PREFERENCE = "filter"


class PassedOver:
    """The runs of seq-ids a subscriber's filter passed over that no consume reached yet,
    and how many seq-ids they hold (`pending`: a filtered cursor's window does not count
    them as delivered)."""

    __slots__ = ("_runs", "pending")

    def __init__(self):
        self._runs = deque()  # [the consumed seq-id that reaches the run, its last seq-id]
        self.pending = 0

    def add(self, from_seq: int, last_seq: int) -> None:
        """Seq-ids from_seq..last_seq were passed over (after every earlier run)."""
        runs = self._runs
        self.pending += last_seq - from_seq + 1
        if runs and runs[-1][1] == from_seq - 1:
            runs[-1][1] = last_seq
        else:
            runs.append([from_seq - 1, last_seq])

    def reach(self, seq: int) -> int:
        """The consumed seq-id a consume of `seq` comes to: past every run it reaches
        (those runs are then done)."""
        runs = self._runs
        while runs and runs[0][0] <= seq:
            reached, last = runs.popleft()
            self.pending -= last - reached
            seq = max(seq, last)
        return seq

    def __len__(self) -> int:
        return len(self._runs)


class MessageFilter:
    """A subscription's selector over stored entries: the runs of an entry's seq-ids
    whose messages it selects, as two sorted lists (firsts, lasts), and what to send of
    a run (`part`). The selector is compiled once (Filters shares it among the
    subscriptions with the same text), and the last entry's runs and parts are kept, so
    the subscribers of one filter at the tail, each handed the same entry in turn,
    evaluate and cut it once.

    An entry of more than `step` messages (or STEP_BYTES) is evaluated a step at a time
    by `cooperator`, the reactor given back between steps: one set may hold a million
    messages (a compressed PUBLISH of a few kilobytes) and a selector within its limits
    cost tens of microseconds a message, and evaluated in one go that would stall every
    connection of the hub for a minute. `runs` then answers a Deferred of the runs; the
    subscribers asking for that entry meanwhile wait for the same evaluation."""

    __slots__ = (
        "_cooperator",
        "_entry",
        "_evaluating",
        "_parts",
        "_runs",
        "_slices",
        "_step",
        "counters",
        "selector",
        "text",
    )

    def __init__(self, text: str, selector, cooperator=None, step: int = STEP_MESSAGES, counters=None):
        self.text = text
        self.selector = selector  # a hedwig.selector.Selector
        self._cooperator = cooperator  # None: every entry evaluated at once (no reactor to give back)
        self._step = step
        self.counters = counters if counters is not None else FilterCounters()
        self._entry = None
        self._runs = None
        self._slices = None  # the EntrySlices of _entry, once a part of it was cut
        self._parts = {}  # (start, stop) -> the LogEntry cut from _entry
        self._evaluating = {}  # entry -> the waiters of its evaluation in steps

    def part(self, entry, start: int, stop: int) -> tuple:
        """(entry, start, stop) to deliver for messages [start, stop) of `entry` (whose
        runs were asked for last): the entry itself when they are more than half of it,
        else an entry of their own (EntrySlices), so that a selective subscriber is not
        sent an entry's bytes once for every run it takes of it."""
        if (
            2 * (stop - start) > entry.last_seq - entry.first_seq + 1
            or entry is not self._entry
            or entry.data[1] & ENTRY_FLAG_SPARSE  # (compacted: sent as it is, its pieces are seq-ids)
        ):
            return entry, start, stop
        cut = self._parts.get((start, stop))
        if cut is None:
            if self._slices is None:
                self._slices = EntrySlices(entry.data)
            first = entry.first_seq
            cut = LogEntry(
                first + start, first + stop - 1, self._slices.cut(start, stop), entry.publish_time_us
            )
            self._parts[start, stop] = cut
        return cut, 0, stop - start

    def runs(self, entry):
        """(firsts, lasts) of the runs of `entry` (a LogEntry) that pass, in seq-ids; a
        Deferred of them while a large entry is evaluated. (A
        caller that stops waiting cancels its Deferred; the evaluation goes on for the
        others.)"""
        if entry is self._entry:
            return self._runs
        waiters = self._evaluating.get(entry)
        if waiters is not None:
            return waiters.wait()
        data = entry.data
        base = entry.first_seq
        try:
            header = decode_entry_header(data)
            message_set, offset = plain_message_set(data, header.body_offset)
            count = message_set_count(message_set, offset)
            if header.sparse:  # (compacted: its messages are its last seq-ids)
                base += header.count - count
            if self._cooperator is not None and (
                count > self._step or len(message_set) - offset > STEP_BYTES
            ):
                return self._evaluate_in_steps(entry, base, message_set, offset)
            selected = self.selector.select(message_set, offset)
        except StatusError as e:  # (the hub checked every set it stored: a damaged entry)
            self._unfiltered(entry, e)
            selected = []
        runs = _runs_of(selected, base)
        self._keep(entry, runs)
        return runs

    def _keep(self, entry, runs) -> None:
        self._runs = runs
        self._entry = entry
        self._slices = None
        self._parts = {}

    def _unfiltered(self, entry, error) -> None:
        _logger.error(
            "entry {first}..{last} cannot be filtered ({error}): none of it passes {text!r}",
            first=entry.first_seq,
            last=entry.last_seq,
            error=error.reason,
            text=self.text,
        )

    def _evaluate_in_steps(self, entry, base: int, message_set, offset: int) -> Deferred:
        waiters = self._evaluating[entry] = Waiters()
        selected = []
        counters = self.counters
        counters.evaluating += 1
        if not isinstance(message_set, bytes):
            message_set = bytes(message_set)
        steps = self.selector.select_in_steps(message_set, offset, selected, self._step, STEP_BYTES)

        def done(result):
            counters.evaluating -= 1
            counters.evaluated_in_steps += 1
            del self._evaluating[entry]
            if isinstance(result, Failure):
                if result.check(StatusError):
                    self._unfiltered(entry, result.value)
                else:
                    _logger.failure("filtering entry {first}", result, first=entry.first_seq)
                selected.clear()
            runs = _runs_of(selected, base)
            self._keep(entry, runs)
            waiters.fire(runs)

        self._cooperator.cooperate(steps).whenDone().addBoth(done)
        return waiters.wait()


def _runs_of(selected, base: int) -> tuple:
    """(firsts, lasts) of the runs of ascending indexes `selected`, as seq-ids from `base`."""
    firsts = []
    lasts = []
    previous = -2
    for index in selected:
        if index == previous + 1:
            lasts[-1] = base + index
        else:
            firsts.append(base + index)
            lasts.append(base + index)
        previous = index
    return firsts, lasts


class FilterCounters:
    """How many entries filters evaluate in steps now, and have (the delivery stats)."""

    __slots__ = ("evaluated_in_steps", "evaluating")

    def __init__(self):
        self.evaluating = 0
        self.evaluated_in_steps = 0


class _NothingPasses:
    """The MessageFilter of a stored filter this hub cannot compile: no message passes
    (a selective subscriber is never sent what it did not ask for)."""

    text = None

    def runs(self, entry) -> tuple:
        return (), ()

    def part(self, entry, start: int, stop: int) -> tuple:
        return entry, start, stop


NOTHING_PASSES = _NothingPasses()


def compiled_weight(text: str) -> int:
    """About what the compiled selector of `text` holds (bytes), at most: its `matches`
    function (code a few times its text's size; see hedwig.selector.compiler), and a
    compiled pattern per distinct LIKE with `_` (a regular expression, a few hundred
    bytes: the costliest text, ~32 bytes a character when every LIKE differs; 132 copies
    of one pattern are one). Measured (tests/auth/test_selector_budget.py): ~2.6 KB for
    `color = 'red' AND n > 1`, ~9 KB for 4,096 characters of one LIKE pattern repeated,
    ~131 KB for 4,096 characters of distinct ones. Counted from the text, so a budget is
    checked before anything is compiled."""
    return COMPILED_BYTES_BASE + COMPILED_BYTES_PER_CHAR * len(text)


COMPILED_BYTES_BASE = 3072
COMPILED_BYTES_PER_CHAR = 32


class Filters:
    """The MessageFilters of a hub's subscriptions, one per selector text (compiled once,
    whatever the number of subscriptions using it). Those kept for later subscriptions
    weigh at most `kept_bytes` together (compiled_weight), the least recently asked for
    dropped first: a filter in use stays alive with its subscriptions whatever this
    holds, and one no subscription uses any more is held by this cache alone."""

    def __init__(self, kept_bytes: int = 16 << 20, cooperator=None, step: int = STEP_MESSAGES):
        self._kept_bytes = kept_bytes
        self._by_text = OrderedDict()  # text -> MessageFilter, least recently asked for first
        self.weight = 0  # of what _by_text holds
        self._cooperator = cooperator  # evaluates large entries in steps (MessageFilter)
        self._step = step
        self.counters = FilterCounters()

    def compiled(self, text) -> bool:
        """Whether `get(text)` compiles nothing: no filter, or one kept."""
        return text is None or text in self._by_text or not text.strip(" \t\f\n\r")

    def get(self, text):
        """The MessageFilter of `text` (None for no filter: None or blank text); a
        SubscribeError with INVALID_MESSAGE_FILTER, naming where, for text that is not
        a selector."""
        if text is None:
            return None
        found = self._by_text.get(text)
        if found is not None:
            self._by_text.move_to_end(text)
            return found
        try:
            selector = compile_selector(text)
        except SelectorError as e:
            raise SubscribeError(Status.INVALID_MESSAGE_FILTER, e.reason) from None
        if selector is None:
            return None
        made = MessageFilter(text, selector, self._cooperator, self._step, self.counters)
        self._by_text[text] = made
        self.weight += compiled_weight(text)
        while self.weight > self._kept_bytes and len(self._by_text) > 1:
            dropped, _ = self._by_text.popitem(last=False)
            self.weight -= compiled_weight(dropped)
        return made
