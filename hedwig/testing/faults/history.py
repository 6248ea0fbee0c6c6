"""What the clients of a run under faults saw, and the checker of it (as Jepsen's).

A History holds, per topic: each publish attempt (a unique payload) with its outcome:
`ok` (acknowledged, at a seq-id), or `info` (it raised: it may or may not have been
stored; an idempotent client only gives up after its own retries); what each
subscriber received, in order; and the topic's log read once the run is over.

`check` compares them. Violations: an acknowledged payload not in the log at its
seq-id (lost); a payload in the log more than once (duplicated: the idempotent producer
promises each set stored once, whatever was retried); the log's order against the
order of acknowledgements, or seq-ids not dense (reordered); a seq-id acknowledged for
two different payloads (two owners acknowledging appends to one topic across a
takeover: split brain); a payload in the log no producer sent (phantom); a subscriber
that skipped a seq-id below the last it received, received a payload the log does not
hold at that seq-id, or received a new message after a later one (subscriber gaps,
mismatches, reordered). Not violations, but reported: indeterminate attempts, and how
many of them were stored.
"""

import itertools
import threading
import time
from dataclasses import dataclass, field

OK = "ok"
INFO = "info"


@dataclass
class Publish:
    topic: str
    payload: bytes
    start: float
    end: float = 0.0
    outcome: str = ""
    seq: int | None = None
    error: str = ""


@dataclass
class Report:
    """What `check` found: counts, and the first few examples of each violation."""

    acked: int = 0
    indeterminate: int = 0
    indeterminate_stored: int = 0
    lost: list = field(default_factory=list)
    duplicated: list = field(default_factory=list)
    reordered: list = field(default_factory=list)
    split_brain: list = field(default_factory=list)
    phantom: list = field(default_factory=list)
    subscriber_gaps: list = field(default_factory=list)
    subscriber_mismatches: list = field(default_factory=list)
    subscriber_reordered: list = field(default_factory=list)
    unavailable_s: float = 0.0

    VIOLATIONS = (
        "lost",
        "duplicated",
        "reordered",
        "split_brain",
        "phantom",
        "subscriber_gaps",
        "subscriber_mismatches",
        "subscriber_reordered",
    )

    @property
    def valid(self) -> bool:
        return not any(getattr(self, name) for name in self.VIOLATIONS)

    def violations(self) -> dict:
        """Each violation found: its examples (at most 5 each)."""
        return {name: getattr(self, name)[:5] for name in self.VIOLATIONS if getattr(self, name)}

    def summary(self) -> dict:
        counts = {name: len(getattr(self, name)) for name in self.VIOLATIONS}
        return {
            "acked": self.acked,
            "indeterminate": self.indeterminate,
            "indeterminate_stored": self.indeterminate_stored,
            **counts,
            "unavailable_s": round(self.unavailable_s, 3),
        }


class History:
    """Thread-safe record of a run: producers and subscribers add to it as they go."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.publishes: list[Publish] = []
        self.received: dict[tuple, list] = {}  # (topic, subscriber) -> [(seq, payload)]
        self.logs: dict[str, list] = {}  # topic -> [(seq, payload)] read at the end
        self._lock = threading.Lock()

    def invoke(self, topic: str, payload: bytes) -> Publish:
        publish = Publish(topic, payload, self.clock())
        with self._lock:
            self.publishes.append(publish)
        return publish

    def acknowledged(self, publish: Publish, seq: int) -> None:
        publish.seq, publish.outcome, publish.end = seq, OK, self.clock()

    def indeterminate(self, publish: Publish, error: str) -> None:
        publish.outcome, publish.error, publish.end = INFO, error, self.clock()

    def receive(self, topic: str, subscriber: str, seq: int, payload: bytes) -> None:
        with self._lock:
            self.received.setdefault((topic, subscriber), []).append((seq, payload))

    def record_log(self, topic: str, log) -> None:
        self.logs[topic] = list(log)

    @property
    def topics(self) -> list:
        return sorted({publish.topic for publish in self.publishes} | set(self.logs))

    def acked(self, topic: str) -> list:
        """The topic's acknowledged publishes in the order they were acknowledged."""
        done = [p for p in self.publishes if p.topic == topic and p.outcome == OK]
        return sorted(done, key=lambda publish: publish.end)


def longest_stall(publishes, start: float, end: float) -> float:
    """The longest time within [start, end] without an acknowledgement on one topic
    (the stall a publisher saw); `publishes` of one topic."""
    marks = sorted(p.end for p in publishes if p.outcome == OK and start <= p.end <= end)
    edges = [start, *marks, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def check(history: History, *, window: tuple | None = None) -> Report:
    """The report of `history` (its logs read); `window` (start, end): the time over which
    availability is measured (the longest stall of any topic within it)."""
    report = Report()
    for topic in history.topics:
        _check_topic(history, topic, report)
    for (topic, subscriber), received in sorted(history.received.items()):
        _check_subscriber(history.logs.get(topic, []), topic, subscriber, received, report)
    if window is not None:
        stalls = [
            longest_stall([p for p in history.publishes if p.topic == topic], *window)
            for topic in history.topics
        ]
        report.unavailable_s = max(stalls, default=0.0)
    return report


def _check_topic(history: History, topic: str, report: Report) -> None:
    log = history.logs.get(topic, [])
    at = {}
    where = {}
    for seq, payload in log:
        at[seq] = payload
        if payload in where:
            report.duplicated.append((topic, payload, where[payload], seq))
        else:
            where[payload] = seq
    seqs = [seq for seq, _ in log]
    if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        report.reordered.append((topic, "seq-ids not dense", seqs[:20]))
    acked = history.acked(topic)
    report.acked += len(acked)
    by_seq = {}
    for publish in acked:
        other = by_seq.setdefault(publish.seq, publish.payload)
        if other != publish.payload:
            report.split_brain.append((topic, publish.seq, other, publish.payload))
        if at.get(publish.seq) != publish.payload:
            report.lost.append((topic, publish.seq, publish.payload, where.get(publish.payload)))
    stored = [where[p.payload] for p in acked if p.payload in where]
    for earlier, later in itertools.pairwise(stored):
        if later < earlier:
            report.reordered.append((topic, "acknowledged before an earlier-stored one", earlier, later))
    sent = {p.payload for p in history.publishes if p.topic == topic}
    report.phantom.extend((topic, seq, payload) for seq, payload in log if payload not in sent)
    unsure = [p for p in history.publishes if p.topic == topic and p.outcome == INFO]
    report.indeterminate += len(unsure)
    report.indeterminate_stored += sum(1 for p in unsure if p.payload in where)


def _check_subscriber(log, topic: str, subscriber: str, received, report: Report) -> None:
    at = dict(log)
    seen = set()
    highest = 0
    for seq, payload in received:
        if at.get(seq) != payload:
            report.subscriber_mismatches.append((topic, subscriber, seq, payload))
        if seq < highest and seq not in seen:
            report.subscriber_reordered.append((topic, subscriber, seq, highest))
        seen.add(seq)
        highest = max(highest, seq)
    first = log[0][0] if log else 1
    missing = [seq for seq in range(first, highest + 1) if seq not in seen and seq in at]
    if missing:
        report.subscriber_gaps.append((topic, subscriber, missing[:20], len(missing)))
