"""Shared and pull subscriptions as the delivery manager holds them (DeliveryManager's
part for work queues): their dispatchers (shared.py), members (members.py), the
requests that act on them (ACK, NACK, FETCH) and the hooks the dispatchers call.

A subscription is made shared or pull when it is created, and stays so: its kind and
delivery are kept in its preferences, and a SUBSCRIBE that asks for another is refused
(WRONG_SUBSCRIPTION_KIND) rather than given what it did not ask for. Its members are
kept where cursors are (the manager's channel sets), so pausing, resuming and losing a
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
from hedwig.protocol.status import Status, SubscriptionEvent

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


class SharingSubscriptions:
    """Part of DeliveryManager (manager.py): shared and pull subscriptions."""

    def use_publisher(self, publish) -> None:
        self._publish = publish

    # -- making and attaching ----------------------------------------------------------------

    def _check_per_message(self, topic: str, request, channel) -> None:
        """Refuse a shared or pull SUBSCRIBE that cannot work, before anything is made."""
        if request.subscriber_id.startswith(RESERVED_SUBSCRIBER_PREFIX):
            raise SubscribeError(
                Status.MALFORMED_REQUEST, "a hub's relay subscription is exclusive and pushed"
            )
        if not ISharedDeliveryChannel.providedBy(channel):
            raise SubscribeError(
                Status.MALFORMED_REQUEST, "this connection takes no shared or pull subscription"
            )
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

    def _share(self, subscription, table, acked: bytes = b"") -> SharedDispatcher:
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
        dispatcher = SharedDispatcher(subscription, table, self.clock, self.settings, self.work, self, ranges)
        subscription.dispatcher = dispatcher
        subscription.acked_source = dispatcher.acked_bytes
        return dispatcher

    def _attach_member(self, table, subscription, channel, handle: int, request) -> dict:
        """Attach `channel` as a member of the shared or pull `subscription`."""
        self._check_per_message(subscription.topic, request, channel)
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
        if changed:
            subscription.preferences.update(changed)
            subscription.preferences_changed()
            dispatcher.configure(self.settings)
        window = min(request.window or self.settings.shared_window, self.settings.max_shared_window)
        member = Member(dispatcher, channel, handle, window, pull)
        dispatcher.add(member)
        if kind == "exclusive":
            subscription.cursor = member
        self._hold(member)
        if changed.get("message_bound"):
            self._check_bounds(table)
        return self._result(subscription)

    # -- what dispatchers call (their `hooks`) -----------------------------------------------

    def advance(self, dispatcher, seq: int) -> None:
        dispatcher.table.advance(dispatcher.subscription, seq)

    def channel_error(self, member) -> None:
        self._channel_error(member)

    def unreadable(self, dispatcher, failure) -> None:
        """An entry the subscription needs cannot be read: every member's subscription
        ends with ENTRY_UNREADABLE, as an exclusive subscriber's does."""
        for member in list(dispatcher.members.values()):
            self._unreadable(member, failure)

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
            lambda message_set: maybeDeferred(
                self._publish, dispatcher.dead_letter_topic, message_set, owner
            )
        )

    # -- ACK, NACK, FETCH ----------------------------------------------------------------------

    def _member(self, topic: str, subscriber_id: str, channel, what: str):
        _table, subscription = self._subscription(topic, subscriber_id)
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

    def acknowledge(self, topic: str, subscriber_id: str, channel, ranges) -> int:
        dispatcher, _member = self._member(topic, subscriber_id, channel, "ACK")
        return dispatcher.acknowledge(ranges)

    def reject(self, topic: str, subscriber_id: str, channel, ranges) -> int:
        dispatcher, member = self._member(topic, subscriber_id, channel, "NACK")
        return dispatcher.nack(member, ranges)

    def fetch(self, topic: str, subscriber_id: str, channel, max_messages: int, timeout_s: float) -> None:
        dispatcher, member = self._member(topic, subscriber_id, channel, "FETCH")
        dispatcher.fetch(member, max_messages, timeout_s)

    def _consume_per_message(self, subscription, seq: int) -> None:
        """CONSUME of a shared or pull subscription: an exclusive pull one acknowledges
        every seq-id up to `seq` it was sent; a shared one refuses (its members' acks are
        their own, never each other's)."""
        if subscription.kind == "shared":
            raise SubscribeError(
                Status.WRONG_SUBSCRIPTION_KIND,
                f"{subscription.subscriber_id} on {subscription.topic} is shared: acknowledge with ACK",
            )
        floor = subscription.consumed_seq
        if seq > floor:
            subscription.dispatcher.acknowledge([(floor + 1, seq)])

    # -- ending --------------------------------------------------------------------------------

    def _detach_members(self, subscription, event=None) -> None:
        """Detach every member (telling each channel `event`, when given)."""
        dispatcher = subscription.dispatcher
        if dispatcher is None:
            return
        for member in list(dispatcher.members.values()):
            self._detach(member)
            if event is not None:
                self._notify_ended(member, event)

    def _end_shared(self, subscription, event=None) -> None:
        """The subscription is going (released, deleted, the hub stopping): timers
        stopped, then members detached (telling them `event`, when given)."""
        if subscription.dispatcher is not None:
            subscription.dispatcher.stop()
            self._detach_members(subscription, event)

    def _close_member(self, subscription, channel) -> None:
        member = subscription.dispatcher.member_of(channel) if channel is not None else None
        if member is not None:
            self._detach(member)
        elif channel is None:
            self._detach_members(subscription)

    def _take_over(self, subscription, request) -> None:
        """An exclusive pull subscription attached elsewhere: TOPIC_BUSY, or force_attach."""
        if not request.force_attach:
            raise SubscribeError(
                Status.TOPIC_BUSY,
                f"{subscription.subscriber_id} on {subscription.topic} is attached on another connection",
            )
        current = subscription.cursor
        self._detach(current)
        self.forced_closes += 1
        self._notify_ended(current, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)
