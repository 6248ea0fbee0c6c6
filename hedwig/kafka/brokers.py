"""The brokers a Kafka client sees, and which of them leads each partition.

A hub alone (no ZooKeeper) is one broker, node 0, the leader of every partition: what
`LoneBroker` answers. In a region of several hubs on ZooKeeper (hedwig.hub.zk_topics)
every live hub serving Kafka is a broker (`RegionBrokers`): each publishes its Kafka
listener (advertised host, port, node id) in its hub znode (hedwig.hub.zk_hubs), where
the others read it from their view of the region, and a partition's leader is the owner
of its hedwig topic. A hub's node id is derived from its name ("host:port", stable
across its restarts): 31 bits of a hash, the same on every hub (`node_id_of`).

A partition nobody owns is placed as a first request places a topic: Metadata naming
the topic makes the hub asked claim it, or assign it to the least loaded hub, which
claims it when the client's first request comes (ZkTopicManager._claim_or_redirect),
and names that hub as leader. A Metadata request for every topic claims nothing: a
partition nobody owns is answered LEADER_NOT_AVAILABLE there (leader -1), as Kafka
answers a partition whose leader is being elected.

A consumer group's coordinator is chosen as Kafka chooses it: the leader of partition
`abs(javaHashCode(group)) % GROUP_PARTITIONS` of the topic `__consumer_offsets`
(made, with its partitions, by the first FindCoordinator of the region), so it is a
topic owner like any other: claimed on demand, taken over when its hub dies, moved by
rebalancing. The topic holds no records (offsets are subscriptions: offsets.py); it is
only whose hub coordinates which groups. A hub alone coordinates every group.
"""

import hashlib

from twisted.internet.defer import succeed

from hedwig.hub.errors import NotOwner
from hedwig.kafka.groups import COORDINATOR_NOT_AVAILABLE, NONE
from hedwig.protocol.admin_requests import CreateTopic
from hedwig.protocol.partitions import partition_topic
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status

LEADER_NOT_AVAILABLE = 5
LONE_NODE_ID = 0  # a hub alone is broker 0
GROUPS_TOPIC = "__consumer_offsets"  # whose partitions' owners coordinate the groups (Kafka's name)
GROUP_PARTITIONS = 8  # Kafka's offsets.topic.num.partitions is 50: a region has a few hubs


def group_partition(group_id: str) -> int:
    """The partition of __consumer_offsets whose leader coordinates `group_id`: Kafka's
    Utils.abs(groupId.hashCode()) % partitions, the hash Java's String.hashCode (over
    UTF-16 code units, int32 arithmetic)."""
    value = 0
    for unit in range(0, len(encoded := group_id.encode("utf-16-be")), 2):
        value = (31 * value + int.from_bytes(encoded[unit : unit + 2], "big")) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x100000000
    magnitude = 0 if value == -0x80000000 else abs(value)
    return magnitude % GROUP_PARTITIONS


def node_id_of(hub_name: str) -> int:
    """The Kafka node id of the hub named `hub_name`: 31 bits of its BLAKE2b hash (Kafka
    node ids are non-negative int32); two hubs of a region colliding is a 1-in-10^9 chance
    for a region of two, checked nowhere (docs/kafka.md)."""
    digest = hashlib.blake2b(hub_name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def _broker(node_id: int, host: str, port: int) -> dict:
    return {"node_id": node_id, "host": host, "port": port, "rack": None}


class LoneBroker:
    """A hub alone: broker 0 at `address()` ((host, port) Metadata names), the leader of
    every partition of every topic."""

    def __init__(self, hub, address):
        self.hub = hub
        self.address = address

    @property
    def node_id(self) -> int:
        return LONE_NODE_ID

    def brokers(self) -> list:
        return [_broker(LONE_NODE_ID, *self.address())]

    def partitions(self, topic: str):
        """Deferred[int]: the topic's partition count (NO_SUCH_TOPIC when it does not exist)."""
        return self.hub._existing(topic).addCallback(lambda log: log.partitions)

    def leader(self, _topic: str, _claim: bool):
        """Deferred[(error code, leader's node id)] of one partition's hedwig topic."""
        return succeed((NONE, LONE_NODE_ID))

    def coordinator(self, _group_id: str):
        """Deferred[(error code, broker row)] of the group's coordinator: this hub."""
        return succeed((NONE, self.brokers()[0]))

    def coordinates(self, _group_id: str) -> bool:
        """Whether this hub coordinates the group (a hub alone: every group)."""
        return True


class RegionBrokers:
    """The region's live hubs serving Kafka as brokers, as `registry` (HubRegistry) sees
    them; partitions led by their topics' owners (`hub.topics`: a ZkTopicManager), their
    counts read from the metadata `store` for a topic this hub has not opened."""

    def __init__(self, hub, registry, store, address, error_of):
        self.hub = hub
        self.registry = registry
        self.store = store
        self.address = address  # () -> (host, port) of this hub's Kafka listener, as advertised
        self.error_of = error_of  # failure -> (Kafka error code, message, expected)

    @property
    def node_id(self) -> int:
        return node_id_of(self.hub.name)

    def listener(self) -> dict:
        """What this hub publishes in its hub znode: {"host", "port", "node_id"}."""
        host, port = self.address()
        return {"host": host, "port": port, "node_id": self.node_id}

    def brokers(self) -> list:
        """This hub and every other live hub of the region that serves Kafka."""
        rows = {self.node_id: _broker(self.node_id, *self.address())}
        for name, info in sorted(self.registry.hubs.items()):
            kafka = info.get("kafka")
            if name == self.hub.name or not isinstance(kafka, dict):
                continue
            try:
                row = _broker(int(kafka["node_id"]), str(kafka["host"]), int(kafka["port"]))
            except (KeyError, TypeError, ValueError):
                continue  # (not ours to read)
            rows.setdefault(row["node_id"], row)
        return list(rows.values())

    def partitions(self, topic: str):
        """Deferred[int]: the topic's partition count, from its log when open here, else
        from its record (partition 0's options), opening nothing; NO_SUCH_TOPIC when it
        does not exist."""
        topic_log = self.hub.topics.get(topic)
        if topic_log is not None:
            return succeed(topic_log.partitions)

        def counted(versioned):
            if versioned is None:
                raise RequestRefused(Status.NO_SUCH_TOPIC, f"topic {topic} does not exist")
            return int((versioned.options or {}).get("partitions") or 1)

        return self.store.get_topic(topic).addCallback(counted)

    def leader(self, topic: str, claim: bool):
        """Deferred[(error code, leader's node id)] of one partition's hedwig topic: this
        hub when it owns it; the owner's node when another hub does; a topic nobody owns
        is placed (claimed here, or assigned to the hub named) when `claim`, otherwise
        LEADER_NOT_AVAILABLE."""
        topics = self.hub.topics
        if topics.owns(topic):
            return succeed((NONE, self.node_id))
        if claim:
            found = self.hub._existing(topic).addCallback(lambda _log: (NONE, self.node_id))
        else:
            found = topics.znodes.read_owner(topic).addCallback(self._owned_by)
        return found.addErrback(self._elsewhere)

    def coordinator(self, group_id: str):
        """Deferred[(error code, broker row)] of the hub coordinating the group: the leader
        of its partition of __consumer_offsets (made by the first hub asked, its partitions
        claimed there: rebalancing spreads them); COORDINATOR_NOT_AVAILABLE while none is."""
        topic = partition_topic(GROUPS_TOPIC, group_partition(group_id))

        def made(exists):
            if exists or self.hub.topics.owns(topic):
                return None
            return self.hub.create_topic(CreateTopic(GROUPS_TOPIC, False, GROUP_PARTITIONS), False)

        def led(found):
            error, node_id = found
            for row in self.brokers():
                if error == NONE and row["node_id"] == node_id:
                    return (NONE, row)
            return (COORDINATOR_NOT_AVAILABLE, None)

        found = self.hub.topics.exists(GROUPS_TOPIC).addCallback(made)
        found.addCallback(lambda _: self.leader(topic, True))
        return found.addCallbacks(led, lambda _f: (COORDINATOR_NOT_AVAILABLE, None))

    def coordinates(self, group_id: str) -> bool:
        """Whether this hub coordinates the group: it owns the group's partition of
        __consumer_offsets (a hub that lost it answers NOT_COORDINATOR, and the members
        find the new one)."""
        return self.hub.topics.owns(partition_topic(GROUPS_TOPIC, group_partition(group_id)))

    def _owned_by(self, result):
        owner, _version = result
        if owner is None:
            return (LEADER_NOT_AVAILABLE, -1)
        if owner.name == self.hub.name:
            return (NONE, self.node_id)
        return self._node_of(owner.name)

    def _elsewhere(self, failure):
        if failure.check(NotOwner):
            owner = failure.value.owner
            for name, info in self.registry.hubs.items():
                if owner in (name, info.redirect):
                    return self._node_of(name)
            return (LEADER_NOT_AVAILABLE, -1)  # (a hub the view has not met yet)
        return (self.error_of(failure)[0], -1)

    def _node_of(self, name: str):
        """(NONE, node id) of the live hub `name` serving Kafka; LEADER_NOT_AVAILABLE for a
        hub gone from the view or serving no Kafka clients."""
        kafka = self.registry.hubs.get(name, {}).get("kafka")
        if not isinstance(kafka, dict) or "node_id" not in kafka:
            return (LEADER_NOT_AVAILABLE, -1)
        return (NONE, int(kafka["node_id"]))


def brokers_of(hub, address, error_of):
    """The brokers of `hub`: RegionBrokers in a region of several hubs (its topic
    manager has a registry of the region's hubs), else LoneBroker."""
    registry = getattr(hub.topics, "registry", None)
    if registry is None:
        return LoneBroker(hub, address)
    return RegionBrokers(hub, registry, hub.topics.store, address, error_of)
