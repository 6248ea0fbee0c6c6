"""A subscription of a partitioned topic: one durable subscription of the name on every
partition's topic (hedwig.protocol.partitions), merged into one, for the three clients.

`subscribe(T, name)` of a topic of N partitions attaches N subscriptions of the client's
own kind, (T, name), (T.p-1, name) .. (T.p-(N-1), name), each on its partition's owner
(a region may spread them over several hubs), and hands back one PartitionedSubscription
over them: their deliveries go to one inbox (the first's; every message's `topic` names
its partition's topic), an acknowledgement or a nack goes to the subscription of the
message's partition, and closing closes every one. Order is kept per partition, as a Kafka
consumer's is: a partition's messages come in seq-id order, and partitions interleave as
their deliveries arrive. Each partition keeps its own consumed seq-id, so a subscriber
resumes every partition from where it acknowledged it.

An exclusive subscription's cumulative `ack(message)` covers that partition's messages up
to it; an acknowledgement names a Message, not a bare seq-id (which names no partition).
Pull subscriptions (deliver="pull") of a partitioned topic are refused: `fetch` is asked of
one partition (`partition=K`). Each client's module derives its face from this class (how
its application waits) as it does from BaseSubscription.
"""

from hedwig.protocol.message import Message
from hedwig.protocol.partitions import MAX_PARTITIONS


class PartitionedSubscription:
    """The subscriptions of one name on each partition of a topic, as one (see the
    module's docstring). `partitions`: the attached subscriptions, partition 0 first."""

    def __init__(self, client, topic: str, partitions: list):
        self._client = client
        self.topic = topic
        self.partitions = partitions
        self._by_topic = {subscription.topic: subscription for subscription in partitions}
        self._inbox = partitions[0]._inbox
        for subscription in partitions[1:]:
            subscription._inbox = self._inbox  # (one inbox: the application reads one place)

    subscriber_id = property(lambda self: self.partitions[0].subscriber_id)
    kind = property(lambda self: self.partitions[0].kind)
    filter = property(lambda self: self.partitions[0].filter)
    pull = False

    @property
    def warning(self) -> str:
        return self.partitions[0].warning

    @property
    def attached(self) -> bool:
        """Whether every partition's subscription is attached."""
        return all(subscription.attached for subscription in self.partitions)

    @property
    def acked(self) -> dict:
        """Each partition topic's `acked` (its subscription's: see BaseSubscription)."""
        return {subscription.topic: subscription.acked for subscription in self.partitions}

    @property
    def _closed(self):
        """What ended it: a partition's end the hub caused first, else one closed here."""
        here = None
        for subscription in self.partitions:
            if subscription._closed is not None:
                if not subscription._closed_here:
                    return subscription._closed
                here = here or subscription._closed
        return here

    @property
    def _closed_here(self) -> bool:
        return any(subscription._closed_here for subscription in self.partitions)

    def partition_of(self, message_or_seq):
        """The subscription of the message's partition (ValueError for a bare seq-id, or
        a message of another topic)."""
        if not isinstance(message_or_seq, Message):
            raise ValueError(
                f"{self.topic} has {len(self.partitions)} partitions: acknowledge the Message "
                "(its topic names its partition), not a seq-id"
            )
        subscription = self._by_topic.get(message_or_seq.topic)
        if subscription is None:
            raise ValueError(f"a message of {message_or_seq.topic} is not one of {self.topic}'s partitions")
        return subscription

    def ack(self, message_or_seq):
        """Acknowledge the message on its partition's subscription (cumulatively within
        that partition for an exclusive subscription)."""
        return self.partition_of(message_or_seq).ack(message_or_seq)

    def nack(self, message_or_seq):
        """Give a shared subscription's message back to its partition's subscription."""
        subscription = self.partition_of(message_or_seq)
        if not hasattr(subscription, "nack"):
            raise TypeError(f"an {subscription.kind} subscription takes no nack")
        return subscription.nack(message_or_seq)

    def _flush_ack(self) -> None:
        for subscription in self.partitions:
            subscription._flush_ack()

    def _close_steps(self):
        """Steps: close every partition's subscription (each stays, durable)."""
        for subscription in self.partitions:
            yield from subscription._close_steps()

    def close(self):
        """Flush acknowledgements and detach every partition's subscription."""
        return self._client._waiting.run(self._close_steps())

    def __repr__(self) -> str:
        count = len(self.partitions)
        return f"<{type(self).__name__} {self.topic}/{self.subscriber_id} of {count} partitions>"


def check_partition(partition) -> None:
    """`subscribe(..., partition=K)`: K names one partition (None: every one)."""
    if partition is not None and (
        isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < MAX_PARTITIONS
    ):
        raise ValueError(f"partition is None (every one) or 0..{MAX_PARTITIONS - 1}, not {partition!r}")
