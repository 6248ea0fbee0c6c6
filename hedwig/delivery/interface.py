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
        (hedwig.protocol.requests.Subscribe: its mode, start, window, force_attach and
        deliver) names on `channel` under the channel-local `handle`. Deferred[dict]
        {"consumed_seq", "next_seq"}; fails with SubscribeError (its status goes on the wire)."""

    def consume(topic, subscriber_id, seq):
        """Everything up to `seq` is consumed (cumulative, idempotent); raises
        SubscribeError for an unknown subscription or a seq-id beyond what was sent."""

    def close_subscription(topic, subscriber_id):
        """Deferred: detach the subscriber and write its pointer; the subscription stays."""

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

    def drop_subscriptions(topic_log):
        """Deferred[list of str]: delete every durable subscription of the topic (attached
        ones end with SUBSCRIPTION_FORCED_CLOSED) and forget it: the topic is being deleted."""

    def stats():
        """Counters (dict) for STATS."""

    def stop():
        """Deferred: stop every cursor and write every consume pointer."""
