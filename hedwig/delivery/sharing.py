"""Shared and pull subscriptions (work queues) as the delivery manager holds them: their
dispatchers (shared.py), members (members.py), what the requests that act on them
(ACK, NACK, FETCH, CONSUME of an exclusive pull one) find, the dead letters they publish
and the hooks the dispatchers call.

A subscription is made shared, key_shared or pull when it is created, and stays so: its kind and
delivery are kept in its preferences, and a SUBSCRIBE that asks for another is refused
(WRONG_SUBSCRIPTION_KIND) rather than given what it did not ask for. Its members are
attachments as cursors are (attachments.py), so pausing, resuming and losing a
channel treat them alike; a pull subscription of the exclusive kind has one member at a
time, held as a cursor is (Subscription.cursor: TOPIC_BUSY, force_attach).
"""

from twisted.internet.defer import fail, maybeDeferred
from twisted.logger import Logger

from hedwig.delivery.dead_letters import dead_letter_set, entries_covering
from hedwig.delivery.interface import ISharedDeliveryChannel, SubscribeError
from hedwig.delivery.members import Member
from hedwig.delivery.ranges import RangeSet, decode_ranges
from hedwig.delivery.shared import SharedDispatcher
from hedwig.protocol.names import RESERVED_SUBSCRIBER_PREFIX, InvalidName, check_topic
from hedwig.protocol.status import Status

_logger = Logger()

# The SUBSCRIBE options kept in a subscription's preferences when given.
_OPTIONS = ("ack_timeout_ms", "max_deliveries", "message_bound", "dead_letter_topic")


def _kind_name(kind: str, pull: bool) -> str:
    return f"{kind} {'pull' if pull else 'push'}"


def option_preferences(request) -> dict:
    """The preferences a SUBSCRIBE's options set (only those it gives)."""
    preferences = {name: getattr(request, name) for name in _OPTIONS if getattr(request, name) is not None}
    if request.kind != "exclusive":
        preferences["kind"] = request.kind
    if request.pull:
        preferences["pull"] = True
    return preferences


class WorkQueues:
    """Shared and pull subscriptions: their dispatchers and members."""

    def __init__(self, tables, attachments, bounds, clock, settings, counters):
        self._tables = tables  # SubscriptionTables
        self._attachments = attachments  # Attachments: members are held there
        self._bounds = bounds  # MessageBounds: checked when a member sets a bound
        self._clock = clock
        self._settings = settings
        self._counters = counters  # the hub's WorkQueueCounters, for STATS and /metrics
        self._publish = None  # publish(topic, message_set, owner) -> Deferred, for dead letters

    def use_publisher(self, publish) -> None:
        self._publish = publish

    # -- making and attaching ----------------------------------------------------------------

    def check_request(self, topic: str, request, channel) -> None:
        """Refuse a shared or pull SUBSCRIBE that cannot work, before anything is made."""
        if request.subscriber_id.startswith(RESERVED_SUBSCRIBER_PREFIX):
            raise SubscribeError(
                Status.MALFORMED_REQUEST, "a hub's relay subscription is exclusive and pushed"
            )
        if not ISharedDeliveryChannel.providedBy(channel):
            raise SubscribeError(
                Status.MALFORMED_REQUEST, "this connection takes no shared or pull subscription"
            )
        if request.kind == "key_shared" and request.filter is not None:
            raise SubscribeError(Status.MALFORMED_REQUEST, "a key_shared subscription takes no filter")
        if request.max_deliveries is not None:
            dead_letters = request.dead_letter_topic or f"{topic}.dlq"
            if dead_letters == topic:
                raise SubscribeError(Status.MALFORMED_REQUEST, "a topic is not its own dead-letter topic")
            try:
                check_topic(dead_letters.encode("utf-8"))
            except InvalidName as e:
                raise SubscribeError(
                    Status.INVALID_TOPIC, f"dead-letter topic {dead_letters!r}: {e}"
                ) from None

    def share(self, subscription, table, acked: bytes = b"") -> SharedDispatcher:
        """Give a shared or pull subscription its dispatcher (its acks as last written)."""
        try:
            ranges = decode_ranges(acked, subscription.consumed_seq)
        except ValueError as e:
            _logger.error(
                "{topic}/{subscriber}: its acknowledgements above {seq} are unreadable ({error}):"
                " what they covered is delivered again",
                topic=subscription.topic,
                subscriber=subscription.subscriber_id,
                seq=subscription.consumed_seq,
                error=e,
            )
            ranges = RangeSet()
        dispatcher = SharedDispatcher(
            subscription, table, self._clock, self._settings, self._counters, self, ranges
        )
        subscription.dispatcher = dispatcher
        subscription.acked_source = dispatcher.acked_bytes
        return dispatcher

    def attach(self, table, subscription, channel, handle: int, request) -> dict:
        """Attach `channel` as a member of the shared or pull `subscription`; the
        SUBSCRIBE's reply."""
        self.check_request(subscription.topic, request, channel)
        kind, pull = subscription.kind, subscription.pull
        if (request.kind, request.pull) != (kind, pull):
            raise SubscribeError(
                Status.WRONG_SUBSCRIPTION_KIND,
                f"{subscription.subscriber_id} on {subscription.topic} is a {_kind_name(kind, pull)} "
                f"subscription, not {_kind_name(request.kind, request.pull)}",
            )
        dispatcher = subscription.dispatcher
        if dispatcher.member_of(channel) is not None:
            raise SubscribeError(
                Status.CLIENT_ALREADY_SUBSCRIBED,
                f"{subscription.subscriber_id} on {subscription.topic} is attached here already",
            )
        if kind == "exclusive" and subscription.cursor is not None:
            self._take_over(subscription, request)
        changed = {
            k: v for k, v in option_preferences(request).items() if subscription.preferences.get(k) != v
        }
        settings = self._settings
        if changed:
            subscription.preferences.update(changed)
            subscription.preferences_changed()
            dispatcher.configure(settings)
        window = min(request.window or settings.shared_window, settings.max_shared_window)
        member = Member(dispatcher, channel, handle, window, pull, request.subsets)
        dispatcher.add(member)
        if kind == "exclusive":
            subscription.cursor = member
        self._attachments.hold(member)
        if changed.get("message_bound"):
            self._bounds.check(table)
        return subscription.reply()

    def _take_over(self, subscription, request) -> None:
        """An exclusive pull subscription attached elsewhere: TOPIC_BUSY, or force_attach."""
        if not request.force_attach:
            raise SubscribeError(
                Status.TOPIC_BUSY,
                f"{subscription.subscriber_id} on {subscription.topic} is attached on another connection",
            )
        self._attachments.force_out(subscription.cursor)

    # -- what dispatchers call (their `hooks`) -----------------------------------------------

    def advance(self, dispatcher, seq: int) -> None:
        dispatcher.table.advance(dispatcher.subscription, seq)

    def channel_error(self, member) -> None:
        self._attachments.channel_failed(member)

    def unreadable(self, dispatcher, failure) -> None:
        """An entry the subscription needs cannot be read: every member's subscription
        ends with ENTRY_UNREADABLE, as an exclusive subscriber's does."""
        for member in list(dispatcher.members.values()):
            self._attachments.unreadable(member, failure)

    def dead_letter(self, dispatcher, first: int, last: int, count: int):
        """Deferred: first..last published to the subscription's dead-letter topic."""
        if self._publish is None:
            return fail(RuntimeError("this hub publishes no dead letters"))
        subscription = dispatcher.subscription
        owner = subscription.preferences.get("owner")  # (None: made with [auth] off)
        entries = entries_covering(dispatcher.table.topic_log, first, last)
        entries.addCallback(
            lambda found: dead_letter_set(
                subscription.topic, subscription.subscriber_id, found, first, last, count
            )
        )
        return entries.addCallback(
            lambda message_set: maybeDeferred(self._publish, dispatcher.dead_letter_topic, message_set, owner)
        )

    # -- ACK, NACK, FETCH, CONSUME -------------------------------------------------------------

    def member(self, topic: str, subscriber_id: str, channel, what: str):
        """(dispatcher, member) of the subscription's member on `channel`, for a `what`
        request (ACK, NACK, FETCH); SubscribeError when there is none."""
        _table, subscription = self._tables.subscription(topic, subscriber_id)
        dispatcher = subscription.dispatcher
        if dispatcher is None:
            raise SubscribeError(
                Status.WRONG_SUBSCRIPTION_KIND,
                f"{subscriber_id} on {topic} is an exclusive push subscription: it takes CONSUME, not {what}",
            )
        member = dispatcher.member_of(channel)
        if member is None:
            raise SubscribeError(
                Status.CLIENT_NOT_SUBSCRIBED, f"{subscriber_id} on {topic} is not attached here"
            )
        return dispatcher, member

    def consume(self, subscription, seq: int) -> None:
        """CONSUME of a shared or pull subscription: an exclusive pull one acknowledges
        every seq-id up to `seq` it was sent; a shared one refuses (its members' acks are
        their own, never each other's)."""
        if subscription.kind != "exclusive":
            raise SubscribeError(
                Status.WRONG_SUBSCRIPTION_KIND,
                f"{subscription.subscriber_id} on {subscription.topic} is shared: acknowledge with ACK",
            )
        floor = subscription.consumed_seq
        if seq > floor:
            subscription.dispatcher.acknowledge([(floor + 1, seq)])

    # -- ending --------------------------------------------------------------------------------

    def detach_members(self, subscription, event=None) -> None:
        """Detach every member (telling each channel `event`, when given)."""
        dispatcher = subscription.dispatcher
        if dispatcher is None:
            return
        attachments = self._attachments
        for member in list(dispatcher.members.values()):
            if event is None:
                attachments.detach(member)
            else:
                attachments.end(member, event)

    def end(self, subscription, event=None) -> None:
        """The subscription is going (released, deleted, the hub stopping): timers
        stopped, then members detached (telling them `event`, when given)."""
        if subscription.dispatcher is not None:
            subscription.dispatcher.stop()
            self.detach_members(subscription, event)

    def close_member(self, subscription, channel) -> None:
        """CLOSE_SUBSCRIPTION: detach the member on `channel` (every member: None)."""
        member = subscription.dispatcher.member_of(channel) if channel is not None else None
        if member is not None:
            self._attachments.detach(member)
        elif channel is None:
            self.detach_members(subscription)
