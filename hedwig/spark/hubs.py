"""The Spark source's view of a hub: a topic's bounds and range reads, with errors that
say what a Spark user needs to know (which hub, which topic) rather than a status code."""

from hedwig.client.blocking import Client
from hedwig.protocol.errors import CouldNotConnect, NoSuchTopic
from hedwig.protocol.partitions import parent_of, partition_topics
from hedwig.spark.access import HubAccess
from hedwig.spark.offsets import TopicBounds


class HubUnreachable(ConnectionError):
    """None of the hub addresses given to the source accepted a connection."""


class UnknownTopic(LookupError):
    """A topic the query names does not exist on the hub."""


class HubReader:
    """A blocking connection for one process (a planner, or one Spark task).

    In a region of several hubs any hub answers the planner (the client follows each
    topic's redirect to its owner); `owners` keeps the owner each topic's description
    named, which the planner hands to the topic's partitions so that each task asks the
    owner first (hedwig.spark.planning.SeqRange.owner)."""

    def __init__(self, hubs, timeout: float = 30.0, access: HubAccess | None = None):
        """`access`: TLS and credentials (hedwig.spark.access)."""
        self.hubs = tuple(hubs)
        self.owners = {}  # topic -> the "host:port" that described it (its owner)
        self.partitions = {}  # topic -> its partition count (hedwig.protocol.partitions)
        options = (access or HubAccess()).client_options()
        try:
            self._client = Client(
                list(self.hubs), timeout=timeout, client_name="hedwig-spark", **options
            ).connect()
        except CouldNotConnect as e:
            raise HubUnreachable(
                f"could not connect to the hedwig hub at {', '.join(self.hubs)} (option 'hub'): {e.message}"
            ) from None

    def bounds(self, topic: str) -> TopicBounds:
        """The seq-ids the hub holds of `topic` now."""
        try:
            described = self._client.describe(topic)
        except NoSuchTopic:
            raise UnknownTopic(
                f"topic {topic!r} does not exist on the hedwig hub at {', '.join(self.hubs)} "
                "(option 'topics'; a topic exists once something was published or subscribed to it)"
            ) from None
        self.owners[topic] = described.get("owner") or None
        self.partitions[topic] = described.get("partitions") or 1
        return TopicBounds(int(described["first_seq"]), int(described["last_seq"]))

    def all_bounds(self, topics) -> dict:
        """Every partition's bounds of each of `topics`, by its hedwig topic's name (a
        partitioned topic's partition K is the topic `<topic>.p-K`: each is read as a
        topic of its own, in parallel)."""
        found = {}
        for topic in topics:
            found[topic] = self.bounds(topic)
            for name in partition_topics(topic, self.partitions[topic])[1:]:
                found[name] = self.bounds(name)
        return found

    def read_range(self, topic: str, from_seq: int, to_seq: int, max_bytes: int):
        try:
            return self._client.read_range(topic, from_seq, to_seq, max_bytes)
        except NoSuchTopic:
            raise UnknownTopic(
                f"topic {topic!r} does not exist on the hedwig hub at {', '.join(self.hubs)}"
            ) from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def asked_for(asked: dict, name: str):
    """What an option keyed by topic (startingSeq, endingSeq) says of `name`: its own
    entry, or its partitioned topic's."""
    return asked[name] if name in asked else asked[parent_of(name)[0]]
