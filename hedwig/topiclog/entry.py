"""A topic log entry as the layers above the log see it."""


class LogEntry:
    """One stored entry: seq-ids first_seq..last_seq, and `data`, the entry's bytes
    (protocol entry header + the publisher's message set), delivered as they are."""

    __slots__ = ("data", "first_seq", "last_seq", "publish_time_us")

    def __init__(self, first_seq: int, last_seq: int, data: bytes, publish_time_us: int):
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.data = data
        self.publish_time_us = publish_time_us

    @property
    def count(self) -> int:
        return self.last_seq - self.first_seq + 1

    @property
    def size(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"LogEntry({self.first_seq}..{self.last_seq}, {len(self.data)} bytes)"
