"""The drain's durable subscriptions, and how it acknowledges what Spark committed.

The drain reads topics with range reads, not through its subscriptions: a subscription
is there so that the hub keeps every message the drain has not yet written out, and
collects what it has. So each topic's subscription is attached for acknowledgements only
(SUBSCRIBE with deliver=false, once per topic for the run): the hub delivers nothing on
it, and a CONSUME may move its pointer up to the topic's last seq-id, through the same
path as any subscriber's consume (pointer writes, cache pruning, the minimum that bounds
garbage collection). Acknowledging is cumulative, per topic, and only ever forward.

The pointer is written by the hub at its own pace (`consume_interval`, `consume_flush_ms`)
and when the subscription is closed, which the drain does at the end of its run. A hub
that goes away for a moment costs nothing but time: `acknowledge` raises, the drain says
so, and the next call attaches again and sends the acknowledgement. If the drain itself
dies before an acknowledgement reached the hub, the next run acknowledges what the
checkpoint says was committed before it reads anything.
"""

from hedwig.protocol.errors import ClientAlreadySubscribed, NoSuchTopic
from hedwig.protocol.partitions import partition_topics
from hedwig.spark.hubs import UnknownTopic


class DrainSubscriptions:
    """One acknowledgement-only subscription per topic, all with the same subscriber id."""

    def __init__(self, client, topics, subscriber_id: str, log=None):
        self.client = client
        self.asked = tuple(topics)
        self.topics = self.asked  # every hedwig topic of them, once open() found the partitions
        self.subscriber_id = subscriber_id
        self.consumed = {}  # topic -> the consumed seq-id acknowledged to the hub
        self._subscriptions = {}  # topic -> AckOnlySubscription, attached for the run
        self._log = log or (lambda message: None)

    def open(self) -> dict:
        """Attach to each topic's subscription for acknowledgements (each partition's of a
        partitioned topic: its partitions are read, and kept, as topics of their own),
        creating it from the earliest seq-id held where there is none; {topic: consumed
        seq-id}. Another drain
        attached with the same subscriber id is forced out (it would acknowledge for us)."""
        self.topics = tuple(
            name
            for asked in self.asked
            for name in partition_topics(asked, self._describe(asked).get("partitions") or 1)
        )
        for topic in self.topics:
            if topic not in self._subscriptions:
                subscription = self._attach(topic)
                self._subscriptions[topic] = subscription
                self.consumed[topic] = subscription.acked
        return dict(self.consumed)

    def _attach(self, topic: str):
        if self._find(self._describe(topic)) is None:
            try:
                created = self._subscribe(topic, mode="create", start="earliest")
                self._log(f"created subscription {self.subscriber_id} on {topic} from its first seq-id")
                return created
            except ClientAlreadySubscribed:
                pass  # created a moment ago by another drain with the same subscriber id
        return self._subscribe(topic, mode="attach", force_attach=True)

    def _subscribe(self, topic: str, **options):
        # (each hedwig topic by itself: a partitioned topic's partitions are topics here)
        return self.client.subscribe(topic, self.subscriber_id, deliver=False, partition=0, **options)

    def acknowledge(self, offsets: dict) -> dict:
        """Move each topic's consumed seq-id up to offsets[topic] (never back); returns
        {topic: seq-id} of the acknowledgements made. Raises HedwigError when the hub
        cannot be reached: what was not acknowledged is acknowledged by the next call."""
        made = {}
        for topic in self.topics:
            seq = offsets.get(topic)
            if seq is None or seq <= self.consumed.get(topic, 0):
                continue
            self._subscriptions[topic].ack(seq)
            self.consumed[topic] = seq
            made[topic] = seq
        return made

    def close(self) -> None:
        """Detach (the subscriptions stay, durable); the hub writes each pointer first."""
        subscriptions, self._subscriptions = self._subscriptions, {}
        for subscription in subscriptions.values():
            subscription.close()

    def _describe(self, topic: str) -> dict:
        try:
            return self.client.describe(topic)
        except NoSuchTopic:
            raise UnknownTopic(f"topic {topic!r} does not exist on the hedwig hub") from None

    def _find(self, described: dict):
        for subscriber in described.get("subscribers", ()):
            if subscriber.get("subscriber_id") == self.subscriber_id:
                return subscriber
        return None
