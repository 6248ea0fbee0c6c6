"""A topic log entry as the layers above the log see it."""

from dataclasses import dataclass

# LogEntry.schedule before anyone asked: delivery reads it once per entry, when it first
# delivers the entry (hedwig/delivery/schedules.py), and keeps it there.
NOT_READ = object()


@dataclass(slots=True, eq=False)
class LogEntry:
    """One stored entry: seq-ids first_seq..last_seq, and `data`, the entry's bytes
    (protocol entry header + the publisher's message set), delivered as they are.

    Compared by identity (eq=False): the cache and cursors hold entries as objects, and
    comparing two entries' bytes would be a cost nobody asks for."""

    first_seq: int
    last_seq: int
    data: bytes
    publish_time_us: int
    schedule: object = NOT_READ  # its EntrySchedule (protocol/schedule.py), None, or NOT_READ

    @property
    def count(self) -> int:
        return self.last_seq - self.first_seq + 1

    @property
    def size(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"LogEntry({self.first_seq}..{self.last_seq}, {len(self.data)} bytes)"
