"""The delivery seam: what the delivery manager needs from a client connection.

The hub's connection implements IDeliveryChannel; the delivery manager calls it once per
entry per subscriber (never per message), and the connection writes the entry's stored
bytes behind a small header with writeSequence, so nothing is copied or re-encoded.
Backpressure runs the other way: the connection, registered as an IPushProducer on its
transport, calls DeliveryManager.pause_channel / resume_channel.
"""

from zope.interface import Interface

from hedwig.protocol.status import Status


class SubscribeError(Exception):
    """A subscription request the delivery manager refuses; `status` goes on the wire."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"SubscribeError({self.status.name}, {self.message!r})"


class IDeliveryChannel(Interface):
    """One client connection as the delivery manager sees it."""

    def deliver(handle, entry, start, stop):
        """Send messages [start, stop) (indexes within LogEntry `entry`) of subscription
        `handle`. The hub writes hedwig.protocol.delivery_header(handle, start, stop,
        len(entry.data)) and entry.data with transport.writeSequence: no copy, no
        re-encoding. Called only while the channel is not paused."""

    def subscription_ended(handle, event):
        """The hub ended this subscription (a hedwig.protocol.SubscriptionEvent:
        SUBSCRIPTION_FORCED_CLOSED, TOPIC_MOVED); the connection tells its client."""


class ISharedDeliveryChannel(IDeliveryChannel):
    """A channel that may hold members of shared and pull subscriptions (the hub's client
    connections): besides deliveries, it is sent redeliveries and a FETCH's end."""

    def redeliver(handle, entry, start, stop, count):
        """As deliver(), for messages delivered the `count`th time (count >= 2): the hub
        writes hedwig.protocol.work_requests.redelivery_header and the entry's bytes."""

    def deliver_subset(handle, entry, start, stop, selection, messages):
        """As deliver(), for the `messages` messages of [start, stop) that `selection`
        (hedwig.protocol.work_requests.selection_of) picks: a key_shared member's keys
        of an entry, first deliveries, sent only to a member whose SUBSCRIBE asked for
        them (`subsets`); the hub writes work_requests.subset_header and the entry's bytes."""

    def fetch_done(handle):
        """The pull subscription `handle`'s FETCH ended: every delivery it brought was
        sent before this (an EVENT FETCH_DONE, which does not end the subscription)."""


class IRelayPolicy(Interface):
    """What region relaying asks of delivery (hedwig.region implements it; a hub without
    regions has none). The delivery manager is given it once, by the hub's assembly,
    through IDeliveryManager.use_relay_policy: nothing outside sets its attributes."""

    def entry_filter(subscriber_id):
        """A predicate of the entries `subscriber_id` must not be sent (a relay subscriber
        is not sent what came from its own region), or None to send everything. Entries
        passed over count as consumed once everything before them is."""

    def subscription_changed(topic, subscriber_id, added):
        """A durable subscription of `topic` was created (added=True) or deleted here:
        interest in the topic, which relays follow. Called after the metadata store has
        the change; an exception is logged and does not undo it."""


class IDeliveryManager(Interface):
    """Every durable subscription of a hub, and a cursor for each attached one.

    Subscriptions are loaded per topic from the metadata store the first time the topic
    is used, so the least consumed seq-id over every durable subscriber (attached or not)
    is known: it prunes the cache and bounds garbage collection. Deliveries go to
    IDeliveryChannels, one call per entry per subscriber. Consumes move a subscriber's
    consumed seq-id (persisted at most every `consume_interval`, and on close); nothing
    here blocks: I/O is Deferreds, time is the clock given."""

    def use_relay_policy(policy):
        """Ask `policy` (IRelayPolicy or None) which entries relay subscribers skip, and
        tell it of subscription changes. Called once, before the hub serves anything."""

    def load_topic(topic_log):
        """Deferred[None] once the topic's durable subscriptions are known here."""

    def subscribe(topic_log, channel, handle, request):
        """Create and/or attach the subscription a SUBSCRIBE `request`
        (hedwig.protocol.requests.Subscribe: its mode, start, window, force_attach,
        deliver, and its kind, pull and work-queue options) names on `channel` under the
        channel-local `handle`. Deferred[dict] {"consumed_seq", "next_seq"}; fails with
        SubscribeError (its status goes on the wire).

        A shared subscription (kind "shared") takes any number of members, each a channel
        and handle (one per channel), providing ISharedDeliveryChannel; a pull one
        (pull=True) is sent only what FETCH asks for. Both are acknowledged message by
        message (acknowledge), delivered again after ack_timeout, a NACK or a member
        leaving, and dead-lettered after max_deliveries. Attaching as another kind or
        delivery than the subscription has fails WRONG_SUBSCRIPTION_KIND; a start
        applies only when such a subscription is created. A message_bound (any kind)
        skips the oldest unconsumed messages beyond it."""

    def consume(topic, subscriber_id, seq):
        """Everything up to `seq` is consumed (cumulative, idempotent); raises
        SubscribeError for an unknown subscription or a seq-id beyond what was sent
        (WRONG_SUBSCRIPTION_KIND for a shared one; a pull one takes it as acknowledging
        every seq-id up to `seq` it was sent)."""

    def acknowledge(topic, subscriber_id, channel, ranges):
        """A shared or pull subscription's member on `channel` acknowledges seq-id ranges
        [(first, last)] (those not delivered yet are ignored). The number newly
        acknowledged; SubscribeError (CLIENT_NOT_SUBSCRIBED, WRONG_SUBSCRIPTION_KIND)."""

    def reject(topic, subscriber_id, channel, ranges):
        """NACK: what the member on `channel` holds of these ranges goes out again now.
        The number taken back; SubscribeError as acknowledge."""

    def fetch(topic, subscriber_id, channel, max_messages, timeout_s):
        """A pull subscription's member on `channel` asks for up to `max_messages`: what
        is at hand now, else the first within `timeout_s`; the channel's fetch_done ends
        it. SubscribeError (WRONG_SUBSCRIPTION_KIND for push, FETCH_IN_PROGRESS)."""

    def use_publisher(publish):
        """Publish dead letters with publish(topic, message_set, owner) -> Deferred (the
        hub's one publish path, as the subscription's owner: hedwig/auth/dead_letters.py).
        Called once, by the hub's assembly."""

    def close_subscription(topic, subscriber_id, channel=None):
        """Deferred: detach the subscriber (of a shared subscription, the member on
        `channel`) and write its pointer; the subscription stays."""

    def unsubscribe(topic, subscriber_id):
        """Deferred: delete the durable subscription (its cursor stops first)."""

    def pause_channel(channel):
        """The channel's transport is full: no deliver() to it until resume_channel."""

    def resume_channel(channel):
        """The channel may be written again: its cursors deliver what they hold."""

    def channel_lost(channel):
        """Deferred: the connection is gone; its cursors stop and their pointers are written."""

    def min_consumed(topic):
        """The least persisted consumed seq-id over every durable subscriber of `topic`,
        None when it has none or its subscriptions are not loaded."""

    def release_topic(topic, event):
        """Deferred: the hub gives the topic up; live subscriptions end with `event`,
        pointers are written, the topic is forgotten here and in the cache."""

    def describe(topic):
        """Rows (dicts) of the topic's subscriptions, for DESCRIBE_TOPIC."""

    def subscription_names(topic_log):
        """Deferred[list of str]: the topic's durable subscriber ids (loaded if need be)."""

    def reset(topic_log, subscriber_id, start):
        """Deferred[dict] {"consumed_seq", "previous_seq", "next_seq"}: move a detached
        subscription's consumed seq-id to `start` (as SUBSCRIBE's) and write it; fails
        with SubscribeError (TOPIC_BUSY while it is attached)."""

    def place(topic_log, subscriber_id, seq, principal=None):
        """Deferred[dict] {"consumed_seq", "previous_seq", "next_seq"}: set a detached
        subscription's consumed seq-id to `seq` (back or forth) and write it, creating it
        (owned by `principal`) when missing; fails with SubscribeError (TOPIC_BUSY while
        attached, SEQ_OUT_OF_RANGE past the topic's end)."""

    def position(topic, subscriber_id):
        """The subscription's consumed seq-id as held here, or None."""

    def drop_subscriptions(topic_log):
        """Deferred[list of str]: delete every durable subscription of the topic (attached
        ones end with SUBSCRIPTION_FORCED_CLOSED) and forget it: the topic is being deleted."""

    def stats():
        """Counters (dict) for STATS."""

    def stop():
        """Deferred: stop every cursor and write every consume pointer."""
