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
subscriptions), as a client of it (hedwig.hub.peers, authenticated as [auth] hub_user):
it reads, places or deletes the subscription with GROUP_OFFSET, which names the Kafka
user who asked. The owner trusts that name from [auth] hub_user alone (the access gate
refuses GROUP_OFFSET NOT_AUTHORIZED from anyone else: Permission.HUB) and then acts as
that user, as a request made on it would (GroupOffsetHandler): the user must exist and
may subscribe to the Kafka topic, a subscription it makes is that user's, and one
another user owns is refused NOT_AUTHORIZED (the group's GROUP_AUTHORIZATION_FAILED).
GROUP_OFFSET acts on group subscriptions (`kafka.` ids) only, so hub_user's trust
reaches no other subscription, and hub_user needs no permission of its own for it.
"""

from twisted.internet.defer import DeferredList, gatherResults, maybeDeferred, succeed

from hedwig.auth.principal import SUBSCRIBE
from hedwig.hub.errors import NotOwner
from hedwig.protocol import partitions
from hedwig.protocol.addresses import format_address
from hedwig.protocol.admin_requests import GroupAction
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, HedwigError
from hedwig.protocol.names import InvalidName, check_subscriber_id
from hedwig.protocol.ops import Op
from hedwig.protocol.redirects import parse_owner
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.responses import response_frame
from hedwig.protocol.spec import OPS
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
        placed = place(self.hub, name, subscriber, offset, principal)
        placed.addErrback(
            self._at_owner,
            lambda client: client.group_offset(
                name, subscriber, _name_of(principal), GroupAction.PLACE, offset
            ),
        )
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

    def refusal(self, failure):
        """The Kafka error of a failed commit or delete."""
        if getattr(failure.value, "status", None) == Status.NOT_AUTHORIZED:  # (here, or the owner's)
            return GROUP_AUTHORIZATION_FAILED
        return self.error_of(failure)[0]

    def fetch(self, group_id: str, topic: str, partition: int, principal=None):
        """Deferred[(committed offset or -1, Kafka error code)] (asked by `principal`)."""
        subscriber = subscriber_id(group_id)
        name = partition_topic(topic, partition)
        if subscriber is None:
            return succeed((NO_OFFSET, INVALID_GROUP_ID))
        if name is None:
            return succeed((NO_OFFSET, NONE))

        def fetch_there(client):
            asked = client.group_offset(name, subscriber, _name_of(principal), GroupAction.FETCH)
            return asked.addCallback(lambda found: found["consumed_seq"])

        def answer(seq):
            return (NO_OFFSET if seq is None else seq, NONE)

        def failed(failure):
            error = failure.value
            if getattr(error, "status", None) == Status.NO_SUCH_TOPIC:
                return (NO_OFFSET, NONE)
            return (NO_OFFSET, self.error_of(failure)[0])

        found = position(self.hub, name, subscriber)
        found.addErrback(self._at_owner, fetch_there)
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
            return deleted.addErrback(self._at_owner, delete_there, topic)

        def delete_there(client, topic):
            return client.group_offset(topic, subscriber, _name_of(principal), GroupAction.DELETE)

        return gatherResults([unsubscribe(topic) for topic in topics], consumeErrors=True)


class _Requester:
    """Who deletes a group's subscriptions: a Kafka client, as `principal`, on no
    native connection (hub.unsubscribe tells the native ones)."""

    is_hub_peer = False

    def __init__(self, principal):
        self.principal = principal


def _name_of(principal) -> str | None:
    return None if principal is None else principal.name


def place(hub, topic: str, subscriber: str, seq: int, principal):
    """Deferred: the group's subscription on `topic` placed at consumed seq-id `seq` (made
    `principal`'s when missing), if this hub owns the topic (NotOwner else)."""
    return hub._existing(topic).addCallback(lambda log: hub.delivery.place(log, subscriber, seq, principal))


def position(hub, topic: str, subscriber: str):
    """Deferred[the group's consumed seq-id on `topic`, None: none], if this hub owns the
    topic (NotOwner else)."""
    delivery = hub.delivery

    def loaded(log):
        return delivery.load_topic(log).addCallback(lambda _: delivery.position(topic, subscriber))

    return hub._existing(topic).addCallback(loaded)


class GroupOffsetHandler:
    """GROUP_OFFSET on the topic's owner: another hub's coordinator reads, places or
    deletes a group's subscription here on behalf of the user who asked it, who is
    checked here as one asking here is (the module docstring). The access gate let
    through [auth] hub_user alone; with [auth] off nobody is checked, and the name is
    not used."""

    spec = OPS[Op.GROUP_OFFSET]

    def __init__(self, hub):
        self.hub = hub

    def handle(self, connection, request_id, body, started):
        request = self.spec.decode(body)
        topic, subscriber = request.topic, request.subscriber_id
        if group_of(subscriber) is None:
            raise RequestRefused(
                Status.INVALID_SUBSCRIBER_ID,
                f"GROUP_OFFSET acts on {SUBSCRIBER_PREFIX}<group> subscriptions only, not {subscriber}",
            )
        principal = None if connection.principal is None else self._on_behalf(request)
        if request.action is GroupAction.FETCH:
            done = position(self.hub, topic, subscriber).addCallback(lambda seq: {"consumed_seq": seq})
        elif request.action is GroupAction.PLACE:
            done = place(self.hub, topic, subscriber, request.seq, principal).addCallback(lambda _: {})
        else:
            done = self.hub.unsubscribe(_Requester(principal), topic, subscriber).addCallback(lambda _: {})
        spec = self.spec
        connection.answer(
            done,
            request_id,
            spec.op,
            started,
            lambda value: response_frame(request_id, spec.op, payload=spec.encode_reply(value)),
        )

    def _on_behalf(self, request):
        """The user the request acts for, once it may subscribe to the Kafka topic."""
        name = request.on_behalf_of
        principal = self.hub.auth.authenticator.users.principal(name) if name else None
        if principal is None:
            raise RequestRefused(Status.NOT_AUTHORIZED, f"GROUP_OFFSET on behalf of {name!r}: no such user")
        kafka_topic = partitions.parent_of(request.topic)[0]
        if not principal.may(SUBSCRIBE, kafka_topic):
            raise RequestRefused(
                Status.NOT_AUTHORIZED, f"user {name} may not subscribe on topic {kafka_topic}"
            )
        return principal
