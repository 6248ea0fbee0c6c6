"""The hub's request handlers: one object per op, given what it works with when it is
made, as Apache Hedwig's handlers were (PublishHandler, SubscribeHandler, ...,
registered by operation in its PubSubServer).

A handler's `handle(connection, request_id, body, started)` decodes the body by its op's
spec (hedwig/protocol/spec.py), does the work through the hub's parts, and answers
through the connection: at once (`connection.replies.send`), in a reply slot kept in
request order (`connection.replies.reserve` / `fill`), or with `connection.answer` once
a Deferred fires. A refusal is raised (RequestRefused, or any error hub/errors.py maps to
a status) and answered by the connection's dispatcher. `connection` is the request's
HubConnection: its reply queue, its subscription handles (protocol/handles.py), and the
delivery channel a SUBSCRIBE attaches.

`request_handlers(hub)` makes every handler of a hub and registers it by op: a new op is
a class here (or in producer_handlers.py, work_handlers.py) and a line there.
"""

from twisted.internet.defer import maybeDeferred, succeed
from twisted.logger import Logger

from hedwig.auth.visibility import narrow_description, narrow_subscription_rows
from hedwig.hub.producer_handlers import IdempotentPublishHandler, InitProducerHandler
from hedwig.hub.work_handlers import AckHandler, FetchHandler, NackHandler
from hedwig.kafka.offsets import GroupOffsetHandler
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import decode_publish
from hedwig.protocol.responses import published_response, response_frame, response_frame_parts
from hedwig.protocol.spec import OPS
from hedwig.protocol.status import Status
from hedwig.topiclog.entry import LogEntry


class RepeatedHello:
    """HELLO once the connection is greeted: refused, the connection goes on."""

    def handle(self, connection, request_id, body, started):
        raise RequestRefused(Status.MALFORMED_REQUEST, "HELLO was already exchanged on this connection")


class PublishHandler:
    """PUBLISH, through the one publish path (Hub.publish_now): answered in the call that
    stored it when the topic's log acknowledges at once, else in its reply slot once the
    entry is durable, its body counted in flight meanwhile."""

    __slots__ = ("_publish_now", "_stats", "_seconds")

    def __init__(self, publish_now, stats, clock):
        self._publish_now = publish_now  # Hub.publish_now
        self._stats = stats  # HubStats
        self._seconds = clock.seconds

    def handle(self, connection, request_id, body, started):
        topic, message_set = decode_publish(body)  # (OPS[Op.PUBLISH].decode)
        stored = self._publish_now(topic, message_set)
        if stored.__class__ is LogEntry:  # acknowledged at once: answered now, no Deferred
            self._stats.publish_stored(topic, stored, self._seconds() - started)
            connection.replies.send(published_response(request_id, stored.first_seq, stored.last_seq))
            return
        slot = connection.replies.reserve(len(body))
        context = (connection, slot, request_id, started, topic)
        stored.addCallbacks(self._published, self._failed, context, None, context)

    def _published(self, entry, connection, slot, request_id, started, topic):
        self._stats.publish_stored(topic, entry, self._seconds() - started)
        connection.replies.fill(slot, published_response(request_id, entry.first_seq, entry.last_seq))

    def _failed(self, failure, connection, slot, request_id, started, topic):
        connection.fail(failure, slot, request_id, Op.PUBLISH, started, topic)


class SubscribeHandler:
    """SUBSCRIBE: a handle opened on the connection at once (deliveries for it are held
    until the reply is out), the subscription attached by the delivery manager."""

    log = Logger()
    spec = OPS[Op.SUBSCRIBE]

    def __init__(self, subscribe, close_subscription, stats, clock, max_subscriptions: int):
        self._subscribe = subscribe  # Hub.subscribe
        self._close_subscription = close_subscription  # IDeliveryManager.close_subscription
        self._stats = stats.ops["subscribe"]
        self._seconds = clock.seconds
        self._max_subscriptions = max_subscriptions

    def handle(self, connection, request_id, body, started):
        request = self.spec.decode(body)
        handles = connection.handles
        limit = self._max_subscriptions
        if len(handles) >= limit and not connection.is_hub_peer:  # (a region link relays many)
            raise RequestRefused(
                Status.TOO_MANY_SUBSCRIPTIONS, f"a connection holds at most {limit} subscriptions"
            )
        key = (request.topic, request.subscriber_id)
        handle = handles.open(key)
        subscribed = maybeDeferred(self._subscribe, connection, handle, request)
        slot = connection.replies.reserve()
        context = (connection, slot, request_id, handle, key, started)
        warning = filter_warning(getattr(request, "filter", None))
        subscribed.addCallbacks(self._subscribed, self._failed, (*context, warning), None, context)

    def _subscribed(self, result, connection, slot, request_id, handle, key, started, warning=""):
        self._stats.record(True, self._seconds() - started)
        if not connection.is_open:
            # The client left while the topic was being acquired: the attachment made
            # since has no connection to serve, so detach it (its pointer is flushed).
            closing = self._close_subscription(*key, connection)
            closing.addErrback(lambda f: self.log.failure("detaching {key} failed", f, key=key))
            return
        payload = self.spec.encode_reply(handle, result["consumed_seq"], result["next_seq"], warning)
        connection.replies.fill(
            slot,
            response_frame(request_id, Op.SUBSCRIBE, payload=payload),
            lambda: connection.release_held(handle),
        )

    def _failed(self, failure, connection, slot, request_id, handle, key, started):
        connection.drop_held(handle, key)
        connection.fail(failure, slot, request_id, Op.SUBSCRIBE, started)


class ConsumeHandler:
    """CONSUME: the consumed seq-id of an attached handle moves; answered only when it
    fails."""

    spec = OPS[Op.CONSUME]

    def __init__(self, delivery, stats, clock):
        self._consume = delivery.consume
        self._stats = stats.ops["consume"]
        self._seconds = clock.seconds

    def handle(self, connection, request_id, body, started):
        handle, seq = self.spec.decode(body)
        topic, subscriber_id = connection.handles.attached(handle)
        self._consume(topic, subscriber_id, seq)
        self._stats.record(True, self._seconds() - started)


class CloseSubscriptionHandler:
    """CLOSE_SUBSCRIPTION: detach the handle's subscription (its pointer is flushed); it
    stays, and may be attached again."""

    spec = OPS[Op.CLOSE_SUBSCRIPTION]

    def __init__(self, delivery):
        self._close_subscription = delivery.close_subscription

    def handle(self, connection, request_id, body, started):
        topic, subscriber_id = connection.handles.close(self.spec.decode(body))
        closed = self._close_subscription(topic, subscriber_id, connection)
        connection.answer(
            closed, request_id, Op.CLOSE_SUBSCRIPTION, started, _empty_reply(request_id, self.spec)
        )


class UnsubscribeHandler:
    """UNSUBSCRIBE: delete the durable subscription; attached here, its handle is freed."""

    spec = OPS[Op.UNSUBSCRIBE]

    def __init__(self, unsubscribe):
        self._unsubscribe = unsubscribe  # Hub.unsubscribe

    def handle(self, connection, request_id, body, started):
        request = self.spec.decode(body)
        key = (request.topic, request.subscriber_id)
        unsubscribed = self._unsubscribe(connection, request.topic, request.subscriber_id)

        def forget(result):
            connection.forget_subscription(key)
            return result

        unsubscribed.addCallback(forget)
        connection.answer(
            unsubscribed, request_id, Op.UNSUBSCRIBE, started, _empty_reply(request_id, self.spec)
        )


class ReadRangeHandler:
    """READ_RANGE: stored entries passed through to the reply, never copied."""

    spec = OPS[Op.READ_RANGE]

    def __init__(self, read_range):
        self._read_range = read_range  # Hub.read_range: Deferred[the payload's chunks]

    def handle(self, connection, request_id, body, started):
        parts = self._read_range(self.spec.decode(body))
        connection.answer(
            parts,
            request_id,
            Op.READ_RANGE,
            started,
            lambda p: response_frame_parts(request_id, Op.READ_RANGE, p),
        )


class Answering:
    """A request whose work is one call of the hub: `work(request)` gives a Deferred of
    the value the op's spec encodes as its reply (the admin reads and administration,
    with JSON payloads)."""

    def __init__(self, op: Op, work, narrow=None):
        """`narrow(value, principal)`: the reply as the connection's user may see it
        (with [auth] on; hedwig/auth/visibility.py)."""
        self.spec = OPS[op]
        self._work = work
        self._narrow = narrow

    def handle(self, connection, request_id, body, started):
        spec = self.spec
        value = self._work(spec.decode(body))
        if self._narrow is not None and connection.principal is not None:
            value.addCallback(self._narrow, connection.principal)
        connection.answer(
            value,
            request_id,
            spec.op,
            started,
            lambda v: response_frame(request_id, spec.op, payload=spec.encode_reply(v)),
        )


def _empty_reply(request_id: int, spec):
    """The frame of a SUCCESS that says nothing more, whatever the work gave."""
    return lambda _: response_frame(request_id, spec.op, payload=spec.encode_reply())


def request_handlers(hub) -> dict:
    """op -> handle(connection, request_id, body, started) of every op a hub serves
    (a region's are registered beside them: Hub.register_op)."""
    stats, clock, delivery = hub.stats, hub.clock, hub.delivery
    handlers = (
        (Op.HELLO, RepeatedHello()),
        (Op.PUBLISH, PublishHandler(hub.publish_now, stats, clock)),
        (Op.INIT_PRODUCER, InitProducerHandler(hub.producers)),
        (Op.IDEMPOTENT_PUBLISH, IdempotentPublishHandler(hub.producers, stats, clock)),
        (
            Op.SUBSCRIBE,
            SubscribeHandler(hub.subscribe, delivery.close_subscription, stats, clock, hub.max_subscriptions),
        ),
        (Op.CONSUME, ConsumeHandler(delivery, stats, clock)),
        (Op.CLOSE_SUBSCRIPTION, CloseSubscriptionHandler(delivery)),
        (Op.UNSUBSCRIBE, UnsubscribeHandler(hub.unsubscribe)),
        (Op.READ_RANGE, ReadRangeHandler(hub.read_range)),
        (Op.LIST_TOPICS, Answering(Op.LIST_TOPICS, lambda _: hub.list_topics())),
        (Op.DESCRIBE_TOPIC, Answering(Op.DESCRIBE_TOPIC, hub.describe_topic, narrow_description)),
        (Op.STATS, Answering(Op.STATS, lambda _: succeed(hub.hub_stats()))),
        (Op.LIST_HUBS, Answering(Op.LIST_HUBS, lambda _: hub.list_hubs())),
        (Op.LIST_OWNERS, Answering(Op.LIST_OWNERS, lambda _: hub.topic_owners())),
        (Op.CREATE_TOPIC, Answering(Op.CREATE_TOPIC, hub.create_topic)),
        (Op.COMPACT, Answering(Op.COMPACT, hub.compact)),
        (Op.DELETE_TOPIC, Answering(Op.DELETE_TOPIC, lambda r: hub.delete_topic(r.topic, r.force))),
        (
            Op.LIST_SUBSCRIPTIONS,
            Answering(Op.LIST_SUBSCRIPTIONS, hub.list_subscriptions, narrow_subscription_rows),
        ),
        (
            Op.RESET_SUBSCRIPTION,
            Answering(
                Op.RESET_SUBSCRIPTION, lambda r: hub.reset_subscription(r.topic, r.subscriber_id, r.start)
            ),
        ),
        (Op.GROUP_OFFSET, GroupOffsetHandler(hub)),
        (Op.ACK, AckHandler(delivery, stats, clock)),
        (Op.NACK, NackHandler(delivery, stats, clock)),
        (Op.FETCH, FetchHandler(delivery)),
    )
    return {op: handler.handle for op, handler in handlers}


def filter_warning(text) -> str:
    """What a SUBSCRIBE's filter most likely did not mean, for its reply ("" when nothing,
    or when the filter is refused: the refusal says why)."""
    if not text or not text.strip(" \t\f\n\r"):
        return ""
    from hedwig.selector import SelectorError, parse
    from hedwig.selector.warnings import selector_warnings

    try:
        tree = parse(text)  # (parsed only: the delivery manager compiles it, once per text)
    except SelectorError:
        return ""
    return "; ".join(selector_warnings(text, tree))
