"""The drain's durable subscriptions, and how it acknowledges what Spark committed.

The drain reads topics with range reads, not through its subscriptions: a subscription
is there so that the hub keeps every message the drain has not yet written out, and
collects what it has. Acknowledging is cumulative, per topic, and only ever forward.

A CONSUME can only move a pointer over messages the hub has delivered on the attached
subscription, and the drain never has them delivered (it would be the whole topic a
second time). So the drain acknowledges seq-id S by attaching with start seq S+1: the
hub sets the consumed seq-id to S and writes it to the metadata store before it answers,
which is a cumulative acknowledgement that survives a hub restart. The subscription is
then closed again (it stays, durable), so nothing is delivered to the drain between
acknowledgements; a window of 1 bounds what the hub sends in the moment it is attached.
"""

from hedwig.client.errors import ClientAlreadySubscribed, NoSuchTopic, SeqOutOfRange
from hedwig.spark.hubs import UnknownTopic


class DrainSubscriptions:
    """One durable subscription per topic, all with the same subscriber id."""

    def __init__(self, client, topics, subscriber_id: str, log=None):
        self.client = client
        self.topics = tuple(topics)
        self.subscriber_id = subscriber_id
        self.consumed = {}  # topic -> the consumed seq-id the hub holds for us
        self._log = log or (lambda message: None)

    def _attach(self, topic: str, **options) -> None:
        subscription = self.client.subscribe(
            topic, self.subscriber_id, window=1, force_attach=True, **options
        )
        subscription.close()

    def ensure(self) -> dict:
        """Attach to (or create, from the earliest seq-id held) each topic's subscription;
        {topic: consumed seq-id}."""
        for topic in self.topics:
            described = self._describe(topic)
            if self._find(described) is None:
                try:
                    self._attach(topic, mode="create", start="earliest")
                    self._log(f"created subscription {self.subscriber_id} on {topic} from its first seq-id")
                except ClientAlreadySubscribed:
                    pass  # created a moment ago by another drain with the same subscriber id
                described = self._describe(topic)
            self.consumed[topic] = int(self._find(described)["consumed_seq"])
        return dict(self.consumed)

    def acknowledge(self, offsets: dict) -> dict:
        """Move each topic's consumed seq-id up to offsets[topic] (never back); returns
        {topic: seq-id} of the acknowledgements made."""
        made = {}
        for topic in self.topics:
            seq = offsets.get(topic)
            if seq is None or seq <= self.consumed.get(topic, 0):
                continue
            try:
                self._attach(topic, mode="attach", start=seq + 1)
            except SeqOutOfRange:
                # Retention removed messages past seq already: there is nothing left to
                # protect below it, and the hub's pointer follows its own first seq-id.
                self._log(f"{topic}: seq {seq + 1} is no longer held; acknowledgement skipped")
                continue
            self.consumed[topic] = seq
            made[topic] = seq
        return made

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
