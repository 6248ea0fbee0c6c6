"""Reading a run of messages over as many READ_RANGE replies as it takes, for both clients.

A reply holds whole stored entries up to a byte budget, so `read(topic, from, to)` asks
again from where the last reply ended. The rule of when to stop lives here once: at
`to_seq` (or, when none was given, the last seq-id the first reply reported), at a reply
with nothing in range, and at a reply that moved nothing forward (the range ends where
the topic's retained messages do). The blocking client loops over `next_range` / `add`;
the Twisted client chains the same calls on Deferreds.
"""

from hedwig.protocol import decode_entry


class ReadCollector:
    """The messages of one `read` call, gathered reply by reply."""

    __slots__ = ("_done", "limit", "messages", "next_seq", "topic")

    def __init__(self, topic: str, from_seq: int, to_seq: int | None = None):
        self.topic = topic
        self.next_seq = from_seq
        self.limit = to_seq  # None until the first reply says where the topic ends
        self.messages = []
        self._done = False

    def next_range(self):
        """(from_seq, to_seq) of the next READ_RANGE (to_seq 0: to the last), or None
        when every message asked for is here."""
        if self._done or (self.limit is not None and self.next_seq > self.limit):
            return None
        return self.next_seq, self.limit or 0

    def add(self, reply) -> None:
        """Take a ReadRangeReply's messages that are in range and not already here."""
        if self.limit is None:
            self.limit = reply.last_seq
        before = self.next_seq
        limit = self.limit
        messages = self.messages
        for start, stop, entry in reply.entries:
            for message in decode_entry(self.topic, entry, start, stop):
                if self.next_seq <= message.seq <= limit:
                    messages.append(message)
                    self.next_seq = message.seq + 1
        if self.next_seq == before:
            self._done = True
