"""A Kafka group's committed offsets are hedwig durable subscriptions.

Group G's committed offset of partition 0 of topic T is the consumed seq-id of the
subscription `kafka.G` on T: a Kafka offset is seq-id - 1 and a committed offset names
the next record to read, so the committed offset IS the consumed seq-id. The first
commit creates the subscription (owned by the committing user with [auth] on), so
`hedwig subscriptions T` lists the group with its lag, pruning and ledger collection wait
for it as for any subscriber, `hedwig reset T kafka.G` moves it, and it outlives hub
restarts and takeovers as every subscription does. DeleteGroups unsubscribes it.

In a region of several hubs the group's coordinator commits and fetches the offsets of
a partition another hub owns through that hub (the owner alone holds the topic's
subscriptions): as a client of it (hedwig.hub.peers, as [auth] hub_user), moving the
subscription with RESET_SUBSCRIPTION (made first with SUBSCRIBE, acknowledgement only,
when it does not exist yet), reading it with LIST_SUBSCRIPTIONS and deleting it with
UNSUBSCRIBE. With [auth] on, only reads go so: a subscription moved or made there would
be [auth] hub_user's to the owner, which cannot check the committing user's ownership of
it (the group's user owns its subscription), so a commit or delete of a topic another hub
owns is refused NOT_LEADER_OR_FOLLOWER, as the coordinator does not own it.
"""

from twisted.internet.defer import DeferredList, gatherResults, maybeDeferred, succeed

from hedwig.delivery.interface import SubscribeError
from hedwig.hub.errors import NotOwner
from hedwig.protocol import partitions
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, HedwigError
from hedwig.protocol.names import InvalidName, check_subscriber_id
from hedwig.protocol.redirects import parse_owner
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status

SUBSCRIBER_PREFIX = "kafka."

# Kafka's error codes answered here.
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_COORDINATOR = 16
INVALID_GROUP_ID = 24
GROUP_AUTHORIZATION_FAILED = 30
INVALID_COMMIT_OFFSET_SIZE = 28
NO_OFFSET = -1


def subscriber_id(group_id) -> str | None:
    """The subscriber id holding group `group_id`'s offsets; None for a group id that
    makes no subscriber id (Kafka's INVALID_GROUP_ID)."""
    if not group_id:
        return None
    try:
        return check_subscriber_id(SUBSCRIBER_PREFIX + group_id)
    except InvalidName:
        return None


def group_of(subscriber: str) -> str | None:
    """The Kafka group a subscriber id holds the offsets of, None for any other."""
    return subscriber[len(SUBSCRIBER_PREFIX) :] if subscriber.startswith(SUBSCRIBER_PREFIX) else None


def partition_topic(topic: str, partition: int) -> str | None:
    """The hedwig topic holding partition `partition` of Kafka topic `topic`
    (hedwig.protocol.partitions), None for a negative one; a partition past the topic's
    count names a topic that does not exist, refused as the hub refuses it."""
    return None if partition < 0 else partitions.partition_topic(topic, partition)


class GroupOffsets:
    """Commits and fetches groups' offsets through the hub's delivery manager."""

    def __init__(self, hub, error_of):
        """`error_of(failure) -> (Kafka error, message, expected)` maps the hub's failures."""
        self.hub = hub
        self.error_of = error_of

    def commit(self, group_id: str, topic: str, partition: int, offset: int, principal=None):
        """Deferred[Kafka error code] once `offset` is written as the group's position."""
        subscriber = subscriber_id(group_id)
        name = partition_topic(topic, partition)
        if subscriber is None:
            return succeed(INVALID_GROUP_ID)
        if name is None:
            return succeed(UNKNOWN_TOPIC_OR_PARTITION)
        if offset < 0:
            return succeed(OFFSET_OUT_OF_RANGE)
        placed = self.hub._existing(name).addCallback(
            lambda log: self.hub.delivery.place(log, subscriber, offset, principal)
        )
        if principal is None:  # ([auth] on: see the module docstring)
            placed.addErrback(self._at_owner, self._commit_there, name, subscriber, offset)
        return placed.addCallbacks(lambda _: NONE, self.refusal)

    def _at_owner(self, failure, work, *args):
        """After NotOwner: work(client of the owner, *args), its failures as the hub's."""
        failure.trap(NotOwner)
        peers = self.hub.peers
        if peers is None or peers.closed or not failure.value.owner:
            return failure
        address = format_address(parse_owner(failure.value.owner)[0])
        client = peers.client(address, "Kafka group offsets")

        def failed(failure):
            if failure.check(ConnectionLost, CouldNotConnect):
                peers.lost(address, client)
            if failure.check(HedwigError):  # (the owner's refusal, as this hub's would be)
                raise RequestRefused(failure.value.status, f"{address}: {failure.value.message}")
            return failure

        return work(client, *args).addErrback(failed)

    def _commit_there(self, client, name, subscriber, offset):
        """Place the group's subscription on the owner of topic `name`: RESET_SUBSCRIPTION
        to the next seq-id (offset + 1), or SUBSCRIBE there first when it has none."""
        moved = client.reset_subscription(name, subscriber, offset + 1)

        def absent(failure):
            failure.trap(HedwigError)
            if failure.value.status != Status.CLIENT_NOT_SUBSCRIBED:
                return failure
            made = client.subscribe(name, subscriber, None, deliver=False, start=offset + 1)
            return made.addCallback(lambda subscription: subscription.close())

        return moved.addErrback(absent)

    def _fetch_there(self, client, name, subscriber):
        """The group's consumed seq-id on the owner of topic `name` (None: no subscription)."""

        def found(rows):
            return next((row["consumed_seq"] for row in rows if row["subscriber_id"] == subscriber), None)

        return client.subscriptions(name).addCallback(found)

    def refusal(self, failure):
        """The Kafka error of a failed commit or delete."""
        error = failure.value
        if isinstance(error, SubscribeError) and error.status == Status.NOT_AUTHORIZED:
            return GROUP_AUTHORIZATION_FAILED
        return self.error_of(failure)[0]

    def fetch(self, group_id: str, topic: str, partition: int):
        """Deferred[(committed offset or -1, Kafka error code)]."""
        subscriber = subscriber_id(group_id)
        name = partition_topic(topic, partition)
        if subscriber is None:
            return succeed((NO_OFFSET, INVALID_GROUP_ID))
        if name is None:
            return succeed((NO_OFFSET, NONE))
        delivery = self.hub.delivery

        def position(log):
            return delivery.load_topic(log).addCallback(lambda _: delivery.position(name, subscriber))

        def answer(seq):
            return (NO_OFFSET if seq is None else seq, NONE)

        def failed(failure):
            error = failure.value
            if getattr(error, "status", None) == Status.NO_SUCH_TOPIC:
                return (NO_OFFSET, NONE)
            return (NO_OFFSET, self.error_of(failure)[0])

        found = self.hub._existing(name).addCallback(position)
        found.addErrback(self._at_owner, self._fetch_there, name, subscriber)
        return found.addCallbacks(answer, failed)

    def committed_topics(self, group_id: str):
        """Deferred[sorted topics the group has committed offsets of] (OffsetFetch of all
        topics, DeleteGroups)."""
        subscriber = subscriber_id(group_id)
        if subscriber is None:
            return succeed([])
        return self.groups().addCallback(lambda found: sorted(found.get(group_id, ())))

    def groups(self):
        """Deferred[{group id: [topics]}] of every group with committed offsets: each
        topic's subscriptions as the metadata store has them, no topic opened (a region's
        topics another hub owns included)."""
        metadata = self.hub.delivery.metadata

        def read(names):
            reads = [
                maybeDeferred(metadata.list_subscriptions, name).addCallback(
                    lambda found, name=name: (name, found)
                )
                for name in names
            ]
            return DeferredList(reads, consumeErrors=True)

        def gather(results):
            found = {}
            for ok, result in results:
                if not ok:
                    continue
                name, subscriptions = result
                for subscriber in subscriptions:
                    group = group_of(subscriber)
                    if group is not None:
                        found.setdefault(group, []).append(name)
            return found

        return self.hub.list_topics().addCallback(read).addCallback(gather)

    def delete(self, group_id: str, topics, principal=None):
        """Deferred: the group's subscriptions on `topics` deleted (as `principal`)."""
        subscriber = subscriber_id(group_id)
        requester = _Requester(principal)

        def unsubscribe(topic):
            deleted = self.hub.unsubscribe(requester, topic, subscriber)
            if principal is not None:  # ([auth] on: see the module docstring)
                return deleted
            return deleted.addErrback(self._at_owner, lambda client: client.unsubscribe(topic, subscriber))

        return gatherResults([unsubscribe(topic) for topic in topics], consumeErrors=True)


class _Requester:
    """Who deletes a group's subscriptions: a Kafka client, as `principal`, on no
    native connection (hub.unsubscribe tells the native ones)."""

    is_hub_peer = False

    def __init__(self, principal):
        self.principal = principal
