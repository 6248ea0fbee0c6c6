"""Spark partitions: seq-id ranges of a topic, split so big backlogs read in parallel."""

from pyspark.sql.datasource import InputPartition


class SeqRange(InputPartition):
    """Seq-ids from_seq..to_seq (inclusive) of one topic: one Spark task reads them.
    `owner`: the hub that owned the topic when the range was planned, which the task asks
    first (a hint: the other hubs, and redirects, still lead to it if it moved)."""

    def __init__(self, topic: str, from_seq: int, to_seq: int, owner: str | None = None):
        super().__init__((topic, from_seq, to_seq))
        self.topic = topic
        self.from_seq = from_seq
        self.to_seq = to_seq
        self.owner = owner

    @property
    def count(self) -> int:
        return self.to_seq - self.from_seq + 1

    def __eq__(self, other):
        return isinstance(other, SeqRange) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self) -> str:
        return f"SeqRange({self.topic!r}, {self.from_seq}, {self.to_seq})"


def split_range(topic: str, from_seq: int, to_seq: int, max_messages: int, owner: str | None = None) -> list:
    """from_seq..to_seq in as few consecutive pieces of at most `max_messages` as will do,
    even in size (10 messages, at most 4 each: 4, 3, 3 rather than 4, 4, 2), so no task
    is left alone with a small remainder at the end of a stage."""
    if to_seq < from_seq:
        return []
    total = to_seq - from_seq + 1
    pieces = -(-total // max_messages)
    base, extra = divmod(total, pieces)
    ranges = []
    first = from_seq
    for i in range(pieces):
        size = base + (1 if i < extra else 0)
        ranges.append(SeqRange(topic, first, first + size - 1, owner))
        first += size
    return ranges


def plan_partitions(start: dict, end: dict, max_messages: int, owners: dict | None = None) -> list:
    """Partitions reading seq-ids start[t]+1..end[t] of every topic t (from its owner,
    where `owners` names one)."""
    partitions = []
    for topic, last in end.items():
        owner = (owners or {}).get(topic)
        partitions.extend(split_range(topic, start.get(topic, 0) + 1, last, max_messages, owner))
    return partitions
