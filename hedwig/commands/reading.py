"""Reading a topic from a starting point without a subscription (READ_RANGE), for
`hedwig read`: where earliest, latest, a seq-id or a time begins, and the next run of
messages from there, reply by reply."""

import sys
import time
from datetime import datetime

from hedwig.client.config import DEFAULT_READ_BYTES
from hedwig.client.errors import SeqOutOfRange
from hedwig.commands.common import CommandError
from hedwig.protocol import decode_entry
from hedwig.protocol.partitions import partition_topic, partition_topics


def topic_reader(client, topic: str, start):
    """The reader of `topic`: a TopicReader, or a PartitionedReader of one per partition
    of a partitioned topic (hedwig.protocol.partitions)."""
    info = client.describe(topic)  # NO_SUCH_TOPIC for one that does not exist: reads create nothing
    partitions = info.get("partitions", 1)
    if partitions == 1:
        return TopicReader(client, topic, start, info)
    if isinstance(start, int):
        raise CommandError(
            f"{topic} has {partitions} partitions: a seq-id is a place in one of them"
            f" (read {topic} for partition 0, {partition_topic(topic, 1)} for partition 1, ...)"
        )
    return PartitionedReader(
        [TopicReader(client, name, start) for name in partition_topics(topic, partitions)]
    )


class PartitionedReader:
    """The messages of every partition of a topic: each partition's next run in turn."""

    def __init__(self, readers):
        self.readers = readers

    def next_messages(self) -> list:
        messages = []
        for reader in self.readers:
            messages += reader.next_messages()
        return messages

    def wait(self, seconds: float) -> None:
        self.readers[0].wait(seconds)


class TopicReader:
    """The messages of `topic` from `start` on; `next_messages()` gives the next run, an
    empty list once it has caught up with the topic."""

    def __init__(self, client, topic: str, start, info=None):
        self.client = client
        self.topic = topic
        if info is None:
            info = client.describe(topic)  # NO_SUCH_TOPIC for one that does not exist: reads create nothing
        first, last = info["first_seq"], info["last_seq"]
        if start == "earliest":
            self.next_seq = first
        elif start == "latest":
            self.next_seq = last + 1
        elif isinstance(start, int):
            if start > last + 1:
                raise CommandError(
                    f"--from {start} is past the end of {topic}: its last seq-id is {last}"
                    f" (--from {last + 1} or latest waits for the next message with --follow)"
                )
            self.next_seq = max(start, first)
        elif isinstance(start, datetime):
            self.next_seq = self._find_time(round(start.timestamp() * 1_000_000), first, last)
        else:
            raise CommandError(f"cannot read from {start!r}")

    def _first_at(self, seq: int):
        """The message with seq-id `seq` (reading its one entry)."""
        reply = self.client.read_range(self.topic, seq, seq, 1)
        for start, stop, entry in reply.entries:
            for message in decode_entry(self.topic, entry, start, stop):
                if message.seq >= seq:
                    return message
        return None

    def _find_time(self, time_us: int, first: int, last: int) -> int:
        """The first seq-id published at or after `time_us` (last + 1 if none): a binary
        search over publish times, which a topic's single writer keeps in order."""
        low, high = first, last + 1
        while low < high:
            middle = (low + high) // 2
            message = self._first_at(middle)
            if message is None or message.publish_time_us >= time_us:
                high = middle
            else:
                low = middle + 1
        return low

    def next_messages(self) -> list:
        try:
            reply = self.client.read_range(self.topic, self.next_seq, 0, DEFAULT_READ_BYTES)
        except SeqOutOfRange:  # collected since: go on from the first retained
            first = self.client.describe(self.topic)["first_seq"]
            print(f"hedwig read: seq-ids {self.next_seq}..{first - 1} were collected", file=sys.stderr)
            self.next_seq = first
            return []
        messages = []
        for start, stop, entry in reply.entries:
            for message in decode_entry(self.topic, entry, start, stop):
                if message.seq >= self.next_seq:
                    messages.append(message)
                    self.next_seq = message.seq + 1
        return messages

    def wait(self, seconds: float) -> None:
        """Let `seconds` pass before looking for new messages again (--follow)."""
        time.sleep(seconds)
