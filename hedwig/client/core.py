"""The client core: what the blocking, Twisted and asyncio clients do, written once.

A client is a ClientCore given three parts through its constructor, as kazoo's client
is given its handler:

- its ClientConfig (config.py);
- how it waits (waiting.py's IWaiting): the core's work is written as steps, generators
  that yield what they wait for, and the adapter's IWaiting runs them (blocking, on
  Deferreds, or as a coroutine), so each public method returns that adapter's form of
  the answer: a value, a Deferred, an awaitable;
- its connections (IConnections): one per hub, made on demand by the adapter's driver
  of the protocol session (a BlockingConnection, a Twisted HubProtocol, an asyncio
  AioHubProtocol), each answering `call`, `publish`, `subscribe`, `consume`, `ack`,
  `nack` and `release` alike.

The core routes each request to its topic's hub, follows redirects (the protocol's
redirect rule, hedwig.protocol.redirects), sends a request again once after a lost
connection when it may be (reads, subscribes; not a publish, which may have been
stored), subscribes and attaches subscriptions again, reads ranges, publishes sets
(numbered by the IdempotentPublisher when idempotent), and closes. The event-loop
clients also batch publishes (batching.py). The three adapters (blocking.py,
twisted.py, aio.py) keep what is theirs: how they connect, their subscriptions' faces,
and the blocking client's one-message publish, which goes straight to its connection.
"""

import time

from zope.interface import Attribute, Interface, implementer

from hedwig.client.idempotent import RETRYABLE, IdempotentPublisher
from hedwig.client.operations import ClientOperations
from hedwig.client.partitioned import check_partition
from hedwig.client.payloads import encode_payloads
from hedwig.client.reads import ReadCollector
from hedwig.client.start import position_as_asked, subscription_class, subscription_kind
from hedwig.protocol import Op, Status
from hedwig.protocol.errors import (
    AuthenticationFailed,
    ClientClosed,
    ClientNotSubscribed,
    ConnectionLost,
    CouldNotConnect,
    HedwigError,
    MessageTooLarge,
    NoSuchTopic,
    NotAuthorized,
    SubscriptionClosed,
    TopicBusy,
)
from hedwig.protocol.messageset import key_bytes, message_set_count
from hedwig.protocol.partitions import partition_for_key, partition_topic, partition_topics
from hedwig.protocol.redirects import Routes
from hedwig.protocol.schedule import scheduled_properties

# What attaching a subscription again may get past by trying later: what a resend of a
# publish may (the hub is away or restarting, the topic is moving), and a hub that has
# not yet seen the subscription's old connection go.
REATTACH_RETRYABLE = (*RETRYABLE, TopicBusy)
REATTACH_BACKOFF_FIRST = 0.05
REATTACH_BACKOFF_MAX = 2.0
# A request redirected to an owner that cannot be reached is asked again after these.
TAKEOVER_BACKOFF_FIRST = 0.1
TAKEOVER_BACKOFF_MAX = 1.0


class IConnections(Interface):
    """A client's connections, one per hub address (HELLO answered, AUTH done)."""

    closed = Attribute("True once close_all() was called: get() then raises ClientClosed.")

    def get(address):
        """The connection to `address`, made if there is none (or it was lost): the
        connection itself, or something a step waits on for it. CouldNotConnect (or the
        hub's refusal, AuthenticationFailed) when it cannot be made."""

    def known(address):
        """The open connection to `address`, or None: nothing is made."""

    def addresses():
        """The addresses with an open connection."""

    def close_all():
        """Close every connection (what a step waits on, or None)."""


class ClientCore(ClientOperations):
    """What every client does (see the module's docstring). The adapters derive from it
    and hand it their config, waiting and connections."""

    def __init__(self, config, waiting, connections, kinds, batcher=None):
        """`kinds`: the adapter's subscriptions module, whose classes Subscription,
        AckOnlySubscription, SharedSubscription and PullSubscription (hedwig.client.start)
        take (client, position); `batcher`: what makes a batching.Batcher of this core
        (the event-loop clients)."""
        self.config = config
        self._waiting = waiting
        self._connections = connections
        self._kinds = kinds
        self._codec = config.codec  # (CompressionUnavailable when made, not at publish)
        self._addresses = config.addresses
        self._routes = Routes(self._addresses[0], tls=config.tls is not None)
        self._subscriptions = set()  # those attached through this client and not closed
        self._idempotent = IdempotentPublisher(self) if config.idempotent else None
        self._batcher = batcher(self) if batcher is not None else None
        self._closing = None  # what waits for close() to finish, once it was called
        self._reattaching = {}  # subscription -> its reattaching in the background (event loops)
        self._closed = False  # close() finished
        self._partitions = {}  # topic -> its partition count, learned at a keyed publish
        self._partition_gates = {}  # topic -> the results of publishes waiting for its count

    # -- connections -----------------------------------------------------------------------

    def connect(self):
        """Connect to the first hub of the list that answers (CouldNotConnect saying why
        none did); the client. `with` / `async with` connect on entry too, and a request
        made before connect() connects on demand."""
        return self._waiting.run(self._connect_steps())

    def _connect_steps(self):
        yield from self._connect_any()
        return self

    def _connect_any(self, skip=None):
        """Steps: the connection to the first hub of the list (but `skip`) that answers,
        which becomes the one asked first."""
        reasons = []
        for address in self._addresses:
            if address == skip:
                continue
            try:
                connection = yield self._connections.get(address)
            except (AuthenticationFailed, ClientClosed):
                raise  # (another hub of the list would say the same)
            except HedwigError as e:
                reasons.append(e.message)
                continue
            self._routes.default = address
            return connection
        raise CouldNotConnect(message="no hub reachable: " + "; ".join(reasons))

    def _ask_elsewhere(self, topic, address) -> None:
        """The hub at `address` said SERVICE_DOWN for `topic` (cut off from ZooKeeper, it
        claims nothing), or an idempotent publish to it timed out: the next attempt goes
        to the next hub of the list, which may own the topic or claim it (a client of one
        hub asks that one again)."""
        addresses = self._addresses
        if address in addresses and len(addresses) > 1:
            self._routes.send(topic, addresses[(addresses.index(address) + 1) % len(addresses)])

    def _connection_for(self, topic):
        """Steps: the connection to the hub of `topic` (its owner when known, else the
        default hub, else any of the list that answers)."""
        routes = self._routes
        address = routes.address(topic)
        try:
            return (yield self._connections.get(address))
        except CouldNotConnect:
            if address == routes.default and len(self._addresses) == 1:
                raise
        if address != routes.default:
            routes.forget(topic)  # the owner we were sent to is gone: ask the default hub again
            return (yield from self._connection_for(topic))
        return (yield from self._connect_any(skip=address))

    @property
    def in_flight(self) -> int:
        """Messages sent and not answered (a batching client's: the blocking client waits
        for each of its own)."""
        return 0 if self._batcher is None else self._batcher.in_flight

    @property
    def queued(self) -> int:
        """Messages a batching client holds, not sent yet."""
        return 0 if self._batcher is None else self._batcher.queued

    def _message_limit(self, topic):
        """The largest message the topic's hub takes, when connected to it (else None)."""
        connection = self._connections.known(self._routes.address(topic))
        return None if connection is None or connection.hello is None else connection.hello.max_message_bytes

    def _check_size(self, topic, largest: int) -> None:
        """Refuse a message over the hub's limit here, before it costs a round trip."""
        limit = self._message_limit(topic)
        if limit is not None and largest > limit:
            raise MessageTooLarge(message=f"a message of {largest} bytes exceeds the hub's limit of {limit}")

    # -- requests --------------------------------------------------------------------------

    def _request(self, topic, send, retry: bool):
        """send(connection) on the topic's hub, following redirects: the adapter's form
        of the reply's value (operations.py's requests are made through it)."""
        return self._waiting.run(self._request_steps(topic, send, retry))

    def _request_steps(self, topic, send, retry: bool, connection=None, response=None):
        """Steps: `send(connection)` (a connection's request: a Response, or what waits
        for one) on the topic's hub, following redirects; the reply's value.

        `retry`: the request may be sent again after its connection dropped with it in
        flight (reads, subscribes); a publish may not: it may have been stored.
        `connection`, `response`: where it was sent already, and what that answered.
        """
        if connection is None:
            connection = yield from self._connection_for(topic)
        asked = []
        retried = False
        takeover = None  # (deadline, pause) once an owner we were sent to could not be reached
        while True:
            if response is None:
                try:
                    response = yield send(connection)
                except ConnectionLost:
                    if not retry or retried:
                        raise
                    retried = True
                    connection = yield from self._connection_for(topic)
                    continue
            if response.status is Status.SUCCESS:
                return response.value
            asked.append(connection.address)
            if response.status is Status.SERVICE_DOWN and topic is not None:
                self._ask_elsewhere(topic, connection.address)
            owner = self._routes.follow(topic, response, asked, self.config.max_redirects)
            response = None
            try:
                connection = yield self._connections.get(owner)
                continue
            except CouldNotConnect:
                # The owner named is gone and its region has not taken the topic over yet
                # (its ZooKeeper session has still to expire): nothing was sent to it, so
                # the request is asked again of the hubs we know, after a pause, until
                # the client's timeout has passed (as a Kafka producer rides out a
                # leader's election).
                waiting = self._waiting
                now = waiting.now()
                deadline, pause = takeover or (now + self.config.timeout, TAKEOVER_BACKOFF_FIRST)
                if now + pause > deadline:
                    raise
                takeover = (deadline, min(pause * 2, TAKEOVER_BACKOFF_MAX))
            self._routes.forget(topic)
            yield self._waiting.sleep(pause)
            connection = yield from self._connection_for(topic)
            asked = []

    # -- publishing ------------------------------------------------------------------------

    def publish(self, topic: str, payload, properties=None, key=None, **schedule):
        """Publish one message (bytes, or str sent as UTF-8); its seq-id once stored.

        `properties`: None, or a mapping of its properties, str -> bytes, str, int, float
        or bool (each comes back to a subscriber as the type it was). `key`: None, or
        its key (bytes, or str sent as UTF-8; Message.key gives it back as bytes). The
        event-loop clients batch it with the topic's other publishes of this turn
        (batching.py); the blocking client sends it at once. A keyed message of a
        partitioned topic goes to its key's partition (hedwig.protocol.partitions): the
        first keyed publish of a topic asks the hub its partition count.

        `schedule`: `deliver_after` (seconds) or `deliver_at` (seconds since the epoch):
        stored now, delivered to subscriptions no earlier than that; `ttl` (seconds): not
        delivered after that (protocol/schedule.py)."""
        if schedule:
            properties = scheduled_properties(properties, time.time(), **schedule)
        if key is not None or self._partition_gates:  # (an unkeyed publish: one test)
            if topic in self._partition_gates or (key is not None and topic not in self._partitions):
                return self._waiting.run(self._gated_publish_steps(topic, payload, properties, key))
            if key is not None and (partitions := self._partitions[topic]) > 1:
                topic = partition_topic(topic, partition_for_key(key_bytes(key), partitions))
        return self._batcher.publish(topic, payload, properties, key)

    def _gated_publish_steps(self, topic, payload, properties, key):
        """Steps: a publish of a topic whose partition count is being asked: after the
        answer, in the order published (an unkeyed publish too, so that none overtakes)."""
        yield from self._partition_gate_steps(topic)
        partitions = self._partitions.get(topic, 1)
        if key is not None and partitions > 1:
            topic = partition_topic(topic, partition_for_key(key_bytes(key), partitions))
        return (yield self._batcher.publish(topic, payload, properties, key))

    def _partition_gate_steps(self, topic):
        """Steps: wait for the topic's partition count to be known, in turn: the first
        caller asks the hub, the others queue behind it and go on in their order."""
        gate = self._partition_gates.get(topic)
        if gate is not None:
            turn = self._waiting.new_result()
            gate.append(turn)
            yield turn
            return
        if topic in self._partitions:
            return
        gate = self._partition_gates[topic] = []
        try:
            yield from self._partition_count_steps(topic)
        except Exception as error:
            del self._partition_gates[topic]
            self._waiting.fail_all(gate, error)
            raise
        # Opened a turn later: this caller publishes first, then those queued, in order
        # (one published meanwhile queues behind them).
        self._waiting.call_later(0, self._open_gate, topic, gate)

    def _open_gate(self, topic, gate) -> None:
        del self._partition_gates[topic]
        self._waiting.settle_seqs(gate, 0)

    def publish_many(self, topic: str, payloads, properties=None, keys=None):
        """Publish messages as one message set, stored as one entry; their seq-ids.

        `payloads`: bytes, or str sent as UTF-8. `properties`: None, or one mapping (or
        None) per payload. `keys`: None, or one key (bytes, str, or None) per payload.
        """
        return self._waiting.run(self._publish_many_steps(topic, payloads, properties, keys))

    def _publish_many_steps(self, topic, payloads, properties, keys=None):
        if not payloads:
            return []
        if self._closing is not None:
            raise ClientClosed(message="the client is closed")
        if topic in self._partition_gates or (keys is not None and topic not in self._partitions):
            yield from self._partition_gate_steps(topic)
        if keys is not None and (partitions := self._partitions.get(topic, 1)) > 1:
            seqs = [0] * len(payloads)
            for target, indexes in by_partition(topic, partitions, keys).items():
                some, their_properties, their_keys = picked(indexes, payloads, properties, keys)
                message_set, count, largest = encode_payloads(some, their_properties, self._codec, their_keys)
                self._check_size(target, largest)
                published = yield from self._publish_set_steps(target, message_set, count)
                for index, seq in zip(
                    indexes, range(published.first_seq, published.last_seq + 1), strict=True
                ):
                    seqs[index] = seq
            return seqs
        message_set, count, largest = encode_payloads(payloads, properties, self._codec, keys)
        self._check_size(topic, largest)
        published = yield from self._publish_set_steps(topic, message_set, count)
        return list(range(published.first_seq, published.last_seq + 1))

    def publish_set(self, topic: str, message_set: bytes):
        """Publish a message set already encoded (hedwig.protocol.messageset, plain or
        compressed: as a hub stores it) as it is; its seq-ids. The hub checks it
        (MessageSetError statuses). A hub handing a set on to the topic's owner uses it."""
        return self._waiting.run(self._publish_encoded_steps(topic, message_set))

    def _publish_encoded_steps(self, topic, message_set):
        if self._closing is not None:
            raise ClientClosed(message="the client is closed")
        published = yield from self._publish_set_steps(topic, message_set, message_set_count(message_set))
        return list(range(published.first_seq, published.last_seq + 1))

    def _publish_set_steps(self, topic, message_set, count):
        """Steps: Published of one set, counted in flight (so that close() waits for it)
        by a batching client."""
        batcher = self._batcher
        if batcher is None:
            return (yield from self._send_set_steps(topic, message_set, count))
        batcher.sending(count)
        try:
            return (yield from self._send_set_steps(topic, message_set, count))
        finally:
            batcher.answered(count)

    def _send_set_steps(self, topic, message_set, count):
        """Steps: Published of one set: numbered and sent until answered by an idempotent
        client; otherwise sent once (a connection lost with it raises ConnectionLost)."""
        if self._idempotent is not None:
            return (yield from self._idempotent.publish_steps(topic, message_set, count))
        send = lambda c: c.publish(topic, message_set)  # noqa: E731
        return (yield from self._request_steps(topic, send, retry=False))

    # -- subscribing -----------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        subscriber_id: str,
        mode: str = "create_or_attach",
        start=None,
        window: int | None = None,
        force_attach: bool = False,
        deliver=True,
        *,
        kind: str = "exclusive",
        partition: int | None = None,
        **options,
    ):
        """Attach to (or create) the durable subscription (topic, subscriber_id); the
        subscription (of the adapter's subscriptions module).

        A partitioned topic's (hedwig.protocol.partitions) is one subscription of the
        name on every partition's topic, as one: the adapter's PartitionedSubscription
        (hedwig.client.partitioned: order kept per partition, each message acknowledged
        on its partition's). `partition=K` subscribes to partition K's topic alone.

        `start`: None (after the topic's last seq-id for a new subscription, consumed+1
        for an existing one), "earliest", "latest", a seq-id or a datetime.
        `window`: delivered-but-unacknowledged messages at most (None: the client's).
        `deliver=False`: acknowledgement only; an AckOnlySubscription.

        `kind="shared"`: a work queue; any number of members (on any connections) share
        the subscription, each message going to one of them: a SharedSubscription, whose
        messages are acknowledged one by one. `deliver="pull"`: nothing is pushed; take
        messages with `fetch` (a PullSubscription; exclusive or shared). Options:
        `ack_timeout` (seconds before an unacknowledged message goes out again; the
        hub's default is 30), `max_deliveries` (then to the dead-letter topic, default
        "<topic>.dlq", and acknowledged; `dead_letter_topic` names another) and
        `message_bound` (any kind: at most that many unconsumed messages are kept for it,
        the oldest skipped). A shared subscription's `start` applies when it is created.

        `filter`: a message selector (docs/selectors.md) over the messages' properties
        and key, run by the hub: only the messages it is TRUE of are delivered, and the
        consumed position moves past the rest. It is kept with the subscription;
        attaching with another filter (None included) raises ResubscribeRequired unless
        `replace_filter=True`, which makes it the subscription's. An invalid one raises
        InvalidMessageFilter, naming the column at fault.
        """
        arguments = (mode, start, window, force_attach, deliver)
        options = {"kind": kind, "partition": partition, **options}
        return self._subscribe(self._made, topic, subscriber_id, arguments, options)

    def _made(self, position):
        """A new subscription of the adapter's kinds, for `position`."""
        return subscription_class(self._kinds, position)(self, position)

    def _subscribe(self, make, topic, subscriber_id, arguments, options):
        """The subscription `make(position)` gives for a position as an application asks
        for it (hedwig.client.start.position_as_asked's `arguments` and `options`), attached."""
        return self._waiting.run(
            self._subscribe_steps_as_asked(make, topic, subscriber_id, arguments, options)
        )

    def _subscribe_steps_as_asked(self, make, topic, subscriber_id, arguments, options):
        if self._closing is not None:
            raise ClientClosed(message="the client is closed")
        options = dict(options)
        partition = options.pop("partition", None)
        check_partition(partition)
        position = position_as_asked(self.config, topic, subscriber_id, *arguments, **options)
        if partition is None:
            names = partition_topics(topic, (yield from self._partition_count_steps(topic)))
        else:
            names = [partition_topic(topic, partition)]
        if len(names) > 1 and subscription_kind(position) == "pull":
            raise ValueError(
                f"{topic} has {len(names)} partitions: a pull subscription fetches from one (partition=K)"
            )
        subscriptions = []
        for name in names:
            if name != topic:
                position = position_as_asked(self.config, name, subscriber_id, *arguments, **options)
            subscriptions.append(make(position))
        # (made before any attaches: a partition's first delivery goes to the one inbox)
        made = (
            subscriptions[0]
            if len(names) == 1
            else self._kinds.PartitionedSubscription(self, topic, subscriptions)
        )
        attached = []
        try:
            for subscription in subscriptions:
                yield from self._subscribe_steps(subscription)
                self._subscriptions.add(subscription)
                attached.append(subscription)
        except Exception:
            for subscription in attached:  # (all or none)
                try:
                    yield from subscription._close_steps()
                except HedwigError:
                    pass
            raise
        return made

    def _subscribe_steps(self, subscription):
        """Steps: SUBSCRIBE as the subscription's position says (first as asked, later to
        resume); a reply that attaches it reaches the subscription before the caller."""
        send = lambda c: c.subscribe(subscription)  # noqa: E731
        return (yield from self._request_steps(subscription.topic, send, retry=True))

    def _attach_again(self, subscription):
        """Steps: one attempt to attach a detached subscription again; raises what
        stopped it, and SubscriptionClosed (ending it) when the hub no longer has it."""
        try:
            yield from self._subscribe_steps(subscription)
        except ClientNotSubscribed as e:
            subscription._ended(SubscriptionClosed(message=f"the hub no longer has it: {e.message}"))
            raise subscription._closed from None

    def _detached(self, subscription, topic_moved: bool) -> None:
        """A subscription's connection went, or its topic moved (then the route goes):
        an event-loop client attaches it again in the background; the blocking client,
        which has no background, when a thread next waits on it."""
        if topic_moved:
            self._routes.forget(subscription.topic)
        reattaching = self._reattaching
        if not self._waiting.background or self._closing is not None or subscription._closed is not None:
            return
        if subscription not in reattaching:
            reattaching[subscription] = None  # (the steps may be done before spawn returns)
            running = self._waiting.spawn(self._reattach_in_background(subscription))
            if subscription in reattaching:
                reattaching[subscription] = running

    def _reattach_in_background(self, subscription):
        try:
            yield from self._reattach_steps(subscription)
        finally:
            self._reattaching.pop(subscription, None)

    def _reattach_steps(self, subscription, deadline=None):
        """Steps: attach a detached subscription again, from its last acknowledgement,
        trying again with backoff while it fails in a way a later try may get past.

        In the background (event-loop clients) it goes on until attached, ended or the
        client closed; an error no retry gets past ends the subscription with it. In
        the blocking client's waiting thread it returns at `deadline` (None: none),
        raises CouldNotConnect after `reconnect_timeout` of failures, and raises what
        ended the subscription.
        """
        waiting = self._waiting
        background = waiting.background
        give_up = None
        if not background:
            give_up = (subscription._detached_at or waiting.now()) + self.config.reconnect_timeout
        backoff = REATTACH_BACKOFF_FIRST
        while subscription._connection is None and subscription._closed is None and self._closing is None:
            try:
                yield from self._attach_again(subscription)
                return
            except REATTACH_RETRYABLE as e:
                last_error = e
            except ClientClosed:
                return
            except HedwigError as e:
                if not background:
                    raise
                if subscription._closed is None:
                    subscription._ended(e)
                return
            now = waiting.now()
            if give_up is not None and now >= give_up:
                raise CouldNotConnect(
                    message=f"could not resubscribe {subscription.topic}/{subscription.subscriber_id} "
                    f"in {self.config.reconnect_timeout} s: {last_error}"
                )
            if deadline is not None and now >= deadline:
                return
            pause = backoff
            if give_up is not None:
                pause = min(pause, give_up - now)
            if deadline is not None:
                pause = min(pause, deadline - now)
            yield waiting.sleep(max(pause, 0.0))
            backoff = min(backoff * 2, REATTACH_BACKOFF_MAX)

    # -- reading without a subscription (read_range, and the admin reads: operations.py) --

    def read(self, topic: str, from_seq: int = 1, to_seq: int | None = None):
        """Messages from_seq..to_seq (None: up to the last published when asked) as Messages.
        A partitioned topic's (hedwig.protocol.partitions) are every partition's, partition
        by partition, from_seq..to_seq of each (Message.topic names its partition's topic)."""
        return self._waiting.run(self._read_steps(topic, from_seq, to_seq))

    def _read_steps(self, topic, from_seq, to_seq):
        partitions = (yield self.describe(topic)).get("partitions", 1)
        messages = []
        for name in partition_topics(topic, partitions):
            collector = ReadCollector(name, from_seq, to_seq)
            while (asked := collector.next_range()) is not None:
                collector.add((yield self.read_range(name, *asked)))
            messages += collector.messages
        return messages

    def _partition_count_steps(self, topic):
        """Steps: how many partitions `topic` has (hedwig.protocol.partitions), asked of
        the hub once per topic and client, for its keyed publishes."""
        partitions = self._partitions.get(topic)
        if partitions is None:
            try:
                partitions = (yield self.describe(topic)).get("partitions", 1)
            except NoSuchTopic:  # (publishing creates a plain topic: asked again next time)
                return 1
            except NotAuthorized:  # (a user who may publish, not read: the topic as named)
                partitions = 1
            self._partitions[topic] = partitions
        return partitions

    def _unsubscribe_steps(self, topic, subscriber_id):
        """Steps: close the subscription (topic, subscriber_id) attached through this
        client, if any, then UNSUBSCRIBE it; a partitioned topic's on every partition
        that has it (ClientNotSubscribed when none has); partition 0's reply."""
        names = partition_topics(topic, (yield from self._partition_count_steps(topic)))
        replies, missing = [], None
        for name in names:
            for subscription in list(self._subscriptions):
                if subscription.topic == name and subscription.subscriber_id == subscriber_id:
                    yield from subscription._close_steps()
            try:
                replies.append((yield self._call(Op.UNSUBSCRIBE, name, name, subscriber_id)))
            except ClientNotSubscribed as e:
                if len(names) == 1:
                    raise
                missing = missing or e
        if not replies:
            raise missing
        return replies[0]

    # -- closing ---------------------------------------------------------------------------

    def close(self):
        """Send every publish made so far and wait for its answer (a batching client's),
        then close subscriptions (flushing acknowledgements; they stay durable) and
        connections. Publishes and subscribes after close() fail with ClientClosed; a
        second close() waits for the first."""
        return self._waiting.run(self._close_steps())

    def _close_steps(self):
        waiting = self._waiting
        if self._closed:
            return None
        if self._closing is not None:
            done = waiting.new_result()
            self._closing.append(done)
            yield done
            return None
        self._closing = []
        if self._batcher is not None:
            yield from self._batcher.drain_steps()
        for subscription in list(self._subscriptions):
            try:
                yield from subscription._close_steps()
            except HedwigError:
                pass  # (the connection went: the subscription detached with it)
        for running in list(self._reattaching.values()):
            if running is not None:
                running.cancel()  # (a subscription closed above, between two attempts)
        try:
            yield self._connections.close_all()
        finally:
            self._closed = True
            closing, self._closing = self._closing, []
            for done in closing:
                waiting.settle(done, None)
        return None


@implementer(IConnections)
class LoopConnections:
    """The event-loop clients' connections: one per hub, made on demand by the adapter's
    `open(address)` (what a step waits on for a connection whose HELLO was answered);
    callers asking while one is being made share that attempt."""

    def __init__(self, waiting, open):
        self._waiting = waiting
        self._opener = open
        self.by_address = {}  # address -> the connection to it (HELLO answered); read, not changed, by others
        self._attempts = {}  # address -> the results waiting for the connection being made
        self.closed = False

    def get(self, address):
        if self.closed:
            raise ClientClosed(message="the client is closed")
        connection = self.by_address.get(address)
        if connection is not None and connection.lost is None:
            return connection
        result = self._waiting.new_result()
        waiting_for_it = self._attempts.get(address)
        if waiting_for_it is not None:
            waiting_for_it.append(result)
            return result
        self._attempts[address] = [result]
        self._waiting.spawn(self._attempt(address))
        return result

    def _attempt(self, address):
        waiting = self._waiting
        try:
            connection = yield self._opener(address)
        except Exception as e:
            waiting.fail_all(self._attempts.pop(address), e)
            return
        waiters = self._attempts.pop(address)
        if self.closed:  # (made while the client closed)
            yield connection.disconnect()
            waiting.fail_all(waiters, ClientClosed(message="the client is closed"))
            return
        connection.on_lost = self._lost
        self.by_address[address] = connection
        for result in waiters:
            waiting.settle(result, connection)

    def _lost(self, connection) -> None:
        for address, known in list(self.by_address.items()):
            if known is connection:
                del self.by_address[address]

    def known(self, address):
        connection = self.by_address.get(address)
        return connection if connection is not None and connection.lost is None else None

    def addresses(self) -> list:
        return [address for address, connection in self.by_address.items() if connection.lost is None]

    def close_all(self):
        return self._waiting.run(self._close_all())

    def _close_all(self):
        self.closed = True
        connections = list(self.by_address.values())
        self.by_address.clear()
        for connection in connections:
            connection.on_lost = None
        for connection in connections:
            yield connection.disconnect()


def by_partition(topic: str, partitions: int, keys) -> dict:
    """Indexes of a partitioned topic's messages by the topic of their partition: a keyed
    one's by Kafka's default partitioner, an unkeyed one's partition 0 (the topic)."""
    targets = {}
    for index, key in enumerate(keys):
        target = (
            topic if key is None else partition_topic(topic, partition_for_key(key_bytes(key), partitions))
        )
        targets.setdefault(target, []).append(index)
    return targets


def picked(indexes, payloads, properties, keys) -> tuple:
    """(payloads, properties, keys) of the messages at `indexes`."""
    return (
        [payloads[i] for i in indexes],
        None if properties is None else [properties[i] for i in indexes],
        [keys[i] for i in indexes],
    )
