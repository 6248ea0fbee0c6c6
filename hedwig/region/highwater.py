"""What a region holds of each origin: per topic, the highest origin seq-id stored here.

A relayed entry whose origin seq-ids are at or below that mark is held already (a link
re-reading what it had not acknowledged) and is dropped; one straddling it loses its head.
Origin seq-ids may leap (a compacted topic's entries hold the messages kept, with their
own origin seq-ids): the mark is a high-water mark, never a count, so an entry above it
is new however far above it starts.
The marks are derived from the topic's log, not kept beside it: the log is the one record
that is written atomically with the relayed entry, so after a restart or a SIGKILL the
marks are exactly what is durable. A mark kept elsewhere would need a write per relayed
entry, or would lag the log after a crash and need this same scan to catch up.

The scan is lazy and runs backwards: when an entry of origin O arrives and O's mark is not
known, the log is read from the tail down until an entry of O is found (every origin met
on the way is learnt too) or the retained log ends. A region that relays O often finds O
near the tail; the whole log is scanned at most once per opening of the topic. Marks of
entries appended here are set as they are handed to the log (appends are pipelined and
stored in call order).
"""

from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater

from hedwig.protocol.entry import origin_last
from hedwig.topiclog.backward import FIRST_SPAN, MAX_SPAN, read_window
from hedwig.topiclog.errors import SeqNotRetained


class HighWater:
    """Marks of one TopicLog (a reopened topic gets a new HighWater)."""

    def __init__(self, topic_log, clock):
        self.topic_log = topic_log
        self._clock = clock
        self.marks: dict[str, int] = {}
        # Every entry above `floor` is accounted for in `marks`: those appended through
        # here since, and those a scan has read.
        self.floor = topic_log.last_seq
        self.entries_scanned = 0
        self.scans = 0
        self.steps = 0
        self._span = FIRST_SPAN

    def mark(self, origin: str) -> int | None:
        """The highest origin seq-id of `origin` held here (0: none), or None when only a
        scan can tell."""
        mark = self.marks.get(origin)
        if mark is not None:
            return mark
        if self.floor < self.topic_log.first_seq:
            return 0  # the whole retained log was scanned
        return None

    def appended(self, origin: str, origin_last: int) -> None:
        self.marks[origin] = origin_last

    @inlineCallbacks
    def scan(self, origin: str):
        """Read the log backwards until `origin`'s mark is known; Deferred[int] (the mark).
        One step of at most SCAN_STEP_BYTES per reactor turn, so other topics go on."""
        self.scans += 1
        while True:
            mark = self.mark(origin)
            if mark is not None:
                return mark
            if self.steps:  # (a first step runs at once: most scans need only one)
                yield deferLater(self._clock, 0, lambda: None)
            yield self._step_down()

    def _next_turn(self):
        return deferLater(self._clock, 0, lambda: None)

    @inlineCallbacks
    def _step_down(self):
        """Read the entries of seq-ids [floor - span + 1, floor] and learn their origins."""
        self.steps += 1
        topic_log = self.topic_log
        floor = self.floor
        low = max(topic_log.first_seq, floor - self._span + 1)
        window = []  # (entry, header), in log order
        try:
            yield read_window(topic_log, low, floor, window, self._next_turn)
        except SeqNotRetained:
            # Garbage collection removed the bottom meanwhile: what is left was read.
            self.floor = topic_log.first_seq - 1
            return
        marks = self.marks
        for entry, head in reversed(window):
            if head.origin_region not in marks:  # (a later entry of that origin set it higher)
                marks[head.origin_region] = origin_last(entry.data, head)
        self.entries_scanned += len(window)
        self.floor = window[0][0].first_seq - 1 if window else low - 1
        self._span = min(self._span * 2, MAX_SPAN)
