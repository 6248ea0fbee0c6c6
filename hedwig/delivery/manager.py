"""The delivery manager: every durable subscription of a hub, and a cursor for each live one.

Subscriptions are loaded per topic from the metadata store the first time the topic is
used here (`load_topic`, or any subscribe), so the least consumed seq-id is known over
every durable subscriber, attached or not: that minimum prunes the cache and bounds
ledger garbage collection. Attached subscribers get a Cursor (see cursor.py); pause and
resume come from the connection's transport through `pause_channel` / `resume_channel`.
A subscriber attached with deliver=False gets an AckOnlyAttachment instead (ack_only.py):
it holds the subscription like a cursor, receives nothing, and may consume up to the
topic's last seq-id; everything else about its consume pointer is as for any other.
Shared and pull subscriptions (work queues) have a dispatcher and members instead of a
cursor (sharing.py); message bounds skip what a subscription holds beyond them (bounds.py).

Region relays (hedwig.region) take part through one declared seam, an IRelayPolicy given
by the hub's assembly (`use_relay_policy`, relaying.py): it says which entries a relay
subscriber is not sent (they count as consumed once everything before them is), and it
is told when a durable subscription is created or deleted here (interest in a topic).
"""


from twisted.internet.defer import Deferred, DeferredList, fail, maybeDeferred, succeed
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.concurrency.deferreds import SharedOperations
from hedwig.config.settings import DeliverySettings
from hedwig.delivery.ack_only import AckOnlyAttachment
from hedwig.delivery.administration import AdministeringSubscriptions
from hedwig.delivery.bounds import BoundingSubscriptions
from hedwig.delivery.counters import WorkQueueCounters
from hedwig.delivery.cursor import Cursor
from hedwig.delivery.interface import IDeliveryManager, SubscribeError
from hedwig.delivery.observation import DescribingSubscriptions
from hedwig.delivery.ownership import check_owner
from hedwig.delivery.relaying import RelayingSubscriptions
from hedwig.delivery.sharing import SharingSubscriptions, option_preferences
from hedwig.delivery.start import consumed_for_start
from hedwig.delivery.subscription import Subscription
from hedwig.delivery.topic_table import TopicTable
from hedwig.meta.interface import NEW, SubscriptionState
from hedwig.protocol.status import Status, SubscriptionEvent

_logger = Logger()

MODES = ("create", "attach", "create_or_attach")


@implementer(IDeliveryManager)
class DeliveryManager(
    DescribingSubscriptions,
    AdministeringSubscriptions,
    RelayingSubscriptions,
    SharingSubscriptions,
    BoundingSubscriptions,
):
    """Cursors, windows and consume pointers of every subscription on this hub."""

    def __init__(self, metadata, clock, settings: DeliverySettings | None = None):
        self.metadata = metadata
        self.clock = clock
        self.settings = settings or DeliverySettings()
        self._tables = {}  # topic -> TopicTable
        self._loading = SharedOperations()  # topic -> the load of its subscriptions
        self._channels = {}  # channel -> {Cursor}
        self._paused = set()  # channels whose transport asked us to stop
        self.subscribes = 0
        self.consumes = 0
        self.forced_closes = 0
        self.channel_errors = 0
        self._relay_policy = None  # IRelayPolicy, when this hub relays between regions
        self._publish = None  # publish(topic, message_set) -> Deferred, for dead letters
        self.work = WorkQueueCounters()  # shared and pull subscriptions, message bounds

    # -- topics ------------------------------------------------------------------------

    def load_topic(self, topic_log) -> Deferred:
        """Deferred[None] once the topic's durable subscriptions are known here. The hub
        may call it when it acquires a topic, so pruning and min_consumed cover
        subscribers that have not reattached yet."""
        return self._table(topic_log).addCallback(lambda _: None)

    def _table(self, topic_log) -> Deferred:
        table = self._tables.get(topic_log.topic)
        if table is not None:
            table.topic_log = topic_log
            return succeed(table)
        return self._loading.run(topic_log.topic, self._load, topic_log)

    def _load(self, topic_log) -> Deferred:
        loaded = maybeDeferred(self.metadata.list_subscriptions, topic_log.topic)
        return loaded.addCallback(self._loaded, topic_log)

    def _loaded(self, records, topic_log) -> TopicTable:
        settings = self.settings
        subscriptions = {
            sid: Subscription(
                topic_log.topic,
                sid,
                record.value.consumed_seq,
                record.value.preferences,
                record.version,
                self.metadata,
                self.clock,
                settings,
            )
            for sid, record in records.items()
        }
        table = self._tables[topic_log.topic] = TopicTable(topic_log, subscriptions)
        for sid, subscription in subscriptions.items():
            if subscription.kind == "shared" or subscription.pull:
                self._share(subscription, table, records[sid].value.acked)
        self._check_bounds(table)
        return table

    def release_topic(self, topic: str, event=SubscriptionEvent.TOPIC_MOVED) -> Deferred:
        """The hub gives the topic up: end its live subscriptions with `event`, write every
        consume pointer, forget the topic here and in the cache (a topic with no
        subscriptions loaded here has nothing cached for a reader: the topic manager
        releasing its log drops what its publishes left)."""
        table = self._tables.pop(topic, None)
        if table is None:
            return succeed(None)
        flushes = []
        self._unwatch_bounds(table)
        for subscription in table.subscriptions.values():
            self._end_shared(subscription, event)
            cursor = subscription.cursor
            if cursor is not None:
                self._detach(cursor)
                self._notify_ended(cursor, event)
            flushes.append(subscription.flush())
        table.topic_log.release()
        return _all(flushes)

    # -- subscribe ---------------------------------------------------------------------

    def subscribe(self, topic_log, channel, handle: int, request, principal=None) -> Deferred:
        """Attach `channel` (an IDeliveryChannel) under `handle` to the subscription that
        `request`, a SUBSCRIBE (hedwig.protocol.requests.Subscribe), names on `topic_log`.
        Deferred[{"consumed_seq", "next_seq"}], or fails with SubscribeError. Delivery
        begins on the next reactor turn, after the hub has answered. The request is taken
        whole so that its fields and their defaults are declared once, by the protocol.

        `deliver=False` attaches for acknowledgements only: nothing is delivered, a
        CONSUME may reach the topic's last seq-id, and `window` is not recorded (it is a
        bound on deliveries)."""
        mode, window = request.mode, request.window
        if mode not in MODES:
            return fail(SubscribeError(Status.MALFORMED_REQUEST, f"unknown subscribe mode {mode!r}"))
        if window is not None and (not isinstance(window, int) or window < 0):
            return fail(SubscribeError(Status.MALFORMED_REQUEST, f"window {window!r} is not a count >= 0"))
        if not request.deliver:
            window = None
        d = self._table(topic_log)
        d.addCallback(self._subscribe, topic_log, channel, handle, request, window, principal)
        return d

    def _subscribe(self, table, topic_log, channel, handle, request, window, principal=None):
        subscriber_id, mode, start = request.subscriber_id, request.mode, request.start
        deliver = request.deliver
        if request.per_message:
            self._check_per_message(topic_log.topic, request, channel)
        if subscriber_id in table.busy:
            # Being created (or deleted) for another request: two members of a shared
            # subscription joining at once. This one goes on once that is done.
            waiting = table.busy[subscriber_id].wait()
            return waiting.addCallback(
                lambda _: self._subscribe(table, topic_log, channel, handle, request, window, principal)
            )
        subscription = table.subscriptions.get(subscriber_id)
        if subscription is None:
            if mode == "attach":
                raise SubscribeError(
                    Status.CLIENT_NOT_SUBSCRIBED, f"{subscriber_id} is not subscribed to {topic_log.topic}"
                )
            consumed = topic_log.last_seq if start is None else consumed_for_start(topic_log, start)
            return self._create(table, topic_log, consumed, channel, handle, request, window, principal)
        check_owner(subscription, principal)
        if mode == "create":
            raise SubscribeError(
                Status.CLIENT_ALREADY_SUBSCRIBED,
                f"{subscriber_id} is already subscribed to {topic_log.topic}",
            )
        if subscription.dispatcher is not None or request.per_message:
            return self._attach_member(table, subscription, channel, handle, request)
        current = subscription.cursor
        if current is not None:
            if current.channel is channel:
                raise SubscribeError(
                    Status.CLIENT_ALREADY_SUBSCRIBED,
                    f"{subscriber_id} on {topic_log.topic} is already attached on this connection",
                )
            if not request.force_attach:
                raise SubscribeError(
                    Status.TOPIC_BUSY,
                    f"{subscriber_id} on {topic_log.topic} is attached on another connection",
                )
            self._detach(current)
            self.forced_closes += 1
            self._notify_ended(current, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)
        if window is not None and window != subscription.preferences.get("window"):
            subscription.preferences["window"] = window
        bound = request.message_bound
        if bound is not None and bound != subscription.preferences.get("message_bound"):
            subscription.preferences["message_bound"] = bound
            subscription.preferences_changed()
            self._check_bounds(table)
        if start is None:
            self._attach(table, subscription, topic_log, channel, handle, deliver)
            return self._result(subscription)
        consumed = consumed_for_start(topic_log, start)
        old = subscription.consumed_seq
        subscription.reposition(consumed)
        table.moved(old, consumed)
        self._attach(table, subscription, topic_log, channel, handle, deliver)
        cursor = subscription.cursor

        def not_written(failure):
            self._detach(cursor)  # the new position is not durable: refuse the subscribe
            return failure

        return subscription.flush().addCallbacks(lambda _: self._result(subscription), not_written)

    def _create(self, table, topic_log, consumed, channel, handle, request, window, principal):
        subscriber_id = request.subscriber_id
        preferences = {} if window is None or request.per_message else {"window": window}
        preferences.update(option_preferences(request))
        if principal is not None:  # ([auth] on) the subscription belongs to its creator
            preferences["owner"] = principal.name
        # When the subscription began, kept with it: a region relays what was published
        # since then even when its link comes up after a restart (hedwig/region/manager.py).
        preferences["created_us"] = int(self.clock.seconds() * 1_000_000)
        table.begin_busy(subscriber_id)
        d = maybeDeferred(
            self.metadata.put_subscription,
            topic_log.topic,
            subscriber_id,
            SubscriptionState(consumed, preferences),
            NEW,
        )

        def created(version):
            subscription = Subscription(
                topic_log.topic,
                subscriber_id,
                consumed,
                preferences,
                version,
                self.metadata,
                self.clock,
                self.settings,
            )
            table.add(subscription)
            if request.per_message:
                self._share(subscription, table)
                result = self._attach_member(table, subscription, channel, handle, request)
            else:
                self._attach(table, subscription, topic_log, channel, handle, request.deliver)
                result = self._result(subscription)
            self._changed(topic_log.topic, subscriber_id, True)
            if request.message_bound is not None:
                self._check_bounds(table)
            return result

        def done(result):
            table.end_busy(subscriber_id)
            return result

        return d.addCallback(created).addBoth(done)

    def _attach(self, table, subscription, topic_log, channel, handle, deliver=True) -> None:
        if deliver:
            cursor = self._cursor(subscription, topic_log, channel, handle)
        else:
            cursor = AckOnlyAttachment(subscription, channel, handle)
        subscription.cursor = cursor
        self._hold(cursor)

    def _hold(self, cursor) -> None:
        """Keep an attached cursor (or member) with its channel, and start it."""
        self._channels.setdefault(cursor.channel, set()).add(cursor)
        if cursor.channel in self._paused:
            cursor.paused = True
        self.subscribes += 1
        cursor.start()

    def _cursor(self, subscription, topic_log, channel, handle) -> Cursor:
        window = subscription.preferences.get("window")
        if window is None:
            window = self.settings.default_window
        cursor = Cursor(
            subscription,
            topic_log,
            channel,
            handle,
            window,
            self.clock,
            max_burst=self.settings.max_burst_entries,
            on_channel_error=self._channel_error,
            on_unreadable=self._unreadable,
        )
        if self._relay_policy is not None:
            skip = self._relay_policy.entry_filter(subscription.subscriber_id)
            if skip is not None:
                cursor.skip = skip
                cursor.on_skip = self._passed_over
        return cursor

    def _result(self, subscription) -> dict:
        return {"consumed_seq": subscription.consumed_seq, "next_seq": subscription.consumed_seq + 1}

    def _detach(self, cursor) -> None:
        cursor.stop()
        if cursor.subscription.cursor is cursor:
            cursor.subscription.cursor = None
        cursors = self._channels.get(cursor.channel)
        if cursors is not None:
            cursors.discard(cursor)
            if not cursors:
                del self._channels[cursor.channel]
                self._paused.discard(cursor.channel)

    def _notify_ended(self, cursor, event) -> None:
        try:
            cursor.channel.subscription_ended(cursor.handle, event)
        except Exception:
            _logger.failure("telling {handle} its subscription ended failed", handle=cursor.handle)

    def _channel_error(self, cursor) -> None:
        """The channel raised on deliver: stop that subscriber (its pointer stays)."""
        self.channel_errors += 1
        self._detach(cursor)
        cursor.subscription.flush().addErrback(lambda f: None)

    def _unreadable(self, cursor, failure) -> None:
        """The cursor's next entry cannot be read (damaged, or its ledger lost): the
        subscriber has everything before it; end the subscription with ENTRY_UNREADABLE
        rather than retry in silence. Its pointer stays where the subscriber consumed."""
        _logger.error(
            "{topic}/{subscriber}: ending its subscription: {error}",
            topic=cursor.subscription.topic,
            subscriber=cursor.subscription.subscriber_id,
            error=failure.value,
        )
        self._detach(cursor)
        cursor.subscription.flush().addErrback(lambda f: None)
        self._notify_ended(cursor, SubscriptionEvent.ENTRY_UNREADABLE)

    # -- consume, close, unsubscribe -----------------------------------------------------

    def _subscription(self, topic: str, subscriber_id: str):
        table = self._tables.get(topic)
        subscription = table.subscriptions.get(subscriber_id) if table is not None else None
        if subscription is None:
            raise SubscribeError(
                Status.CLIENT_NOT_SUBSCRIBED, f"{subscriber_id} is not subscribed to {topic}"
            )
        return table, subscription

    def consume(self, topic: str, subscriber_id: str, seq: int) -> None:
        """Everything up to `seq` is consumed (cumulative; older or repeated seq-ids are
        ignored; seq-ids not yet delivered are capped at the last delivered, or for a
        subscriber that takes no deliveries at the topic's last seq-id)."""
        table, subscription = self._subscription(topic, subscriber_id)
        if subscription.dispatcher is not None:
            self._consume_per_message(subscription, seq)
            return
        cursor = subscription.cursor
        limit = cursor.next_seq - 1 if cursor is not None and cursor.delivers else table.topic_log.last_seq
        if seq > limit:
            seq = limit
        runs = cursor.filtered_runs if cursor is not None else None
        while runs and runs[0][0] <= seq:
            seq = max(seq, runs.popleft()[1])
        old = subscription.consumed_seq
        if seq <= old:
            return
        self.consumes += 1
        subscription.consumed(seq)  # (TopicTable.advance, inline: a CONSUME's path)
        low = table.min_consumed
        table.moved(old, seq)
        if table.min_consumed != low:
            table.topic_log.prune(table.min_consumed)
        if cursor is not None and cursor.window_full:
            cursor.window_opened()

    def close_subscription(self, topic: str, subscriber_id: str, channel=None) -> Deferred:
        """Stop the subscriber's cursor (a shared subscription's member on `channel`) and
        write its pointer; the subscription stays."""
        try:
            _table, subscription = self._subscription(topic, subscriber_id)
        except SubscribeError:
            return fail()
        if subscription.dispatcher is not None:
            self._close_member(subscription, channel)
        elif subscription.cursor is not None:
            self._detach(subscription.cursor)
        return subscription.flush()

    def unsubscribe(self, topic: str, subscriber_id: str, principal=None) -> Deferred:
        """Delete the durable subscription (its cursor stops first); with [auth] on, only
        as its owner or an admin (`principal`)."""
        try:
            table, subscription = self._subscription(topic, subscriber_id)
            check_owner(subscription, principal)
        except SubscribeError:
            return fail()
        if subscriber_id in table.busy:
            return fail(
                SubscribeError(Status.TOPIC_BUSY, f"{subscriber_id} on {topic} is being (un)subscribed")
            )
        if subscription.dispatcher is not None:
            subscription.dispatcher.stop()  # (what members hold is not dead-lettered now)
            self._detach_members(subscription)
        if subscription.cursor is not None:
            self._detach(subscription.cursor)
        table.begin_busy(subscriber_id)

        def delete(_):
            return maybeDeferred(
                self.metadata.delete_subscription, topic, subscriber_id, subscription.version
            )

        def deleted(_):
            subscription.deleted = True
            subscription.cancel()
            table.remove(subscriber_id)
            self._changed(topic, subscriber_id, False)
            low = table.min_consumed
            table.topic_log.prune(table.topic_log.last_seq if low is None else low)

        def done(result):
            table.end_busy(subscriber_id)
            if subscription.dispatcher is not None and not subscription.deleted:
                subscription.dispatcher.restart()  # (not deleted: it goes on)
            return result

        return subscription.settle().addCallback(delete).addCallback(deleted).addBoth(done)

    # -- backpressure and connections ---------------------------------------------------

    def pause_channel(self, channel) -> None:
        """The channel's transport is full: no deliver() until resume_channel."""
        self._paused.add(channel)
        for cursor in self._channels.get(channel, ()):
            cursor.pause()

    def resume_channel(self, channel) -> None:
        self._paused.discard(channel)
        for cursor in list(self._channels.get(channel, ())):
            cursor.resume()

    def channel_lost(self, channel) -> Deferred:
        """The connection is gone: stop its cursors and write their pointers."""
        cursors = list(self._channels.get(channel, ()))
        for cursor in cursors:
            self._detach(cursor)
        self._paused.discard(channel)
        return _all([c.subscription.flush() for c in cursors])

    # -- observation -----------------------------------------------------------------------

    def min_consumed(self, topic: str):
        """The least persisted consumed seq-id over every durable subscriber of the topic,
        for ledger garbage collection; None when it has none. 0 while the topic's
        subscriptions are not loaded here (load_topic), so nothing is collected blindly."""
        table = self._tables.get(topic)
        if table is None:
            return 0
        return table.min_persisted()

    def stop(self) -> Deferred:
        """Shut down: stop every cursor and write every consume pointer."""
        for table in self._tables.values():
            self._unwatch_bounds(table)
            for subscription in table.subscriptions.values():
                self._end_shared(subscription)
        for cursors in list(self._channels.values()):
            for cursor in list(cursors):
                self._detach(cursor)
        self._paused.clear()
        flushes = [s.flush() for t in self._tables.values() for s in t.subscriptions.values()]
        return _all(flushes)


def _all(deferreds) -> Deferred:
    """Fire when every Deferred has; fail with the first failure, after all are done."""
    if not deferreds:
        return succeed(None)

    def check(results):
        for ok, value in results:
            if not ok:
                return value
        return None

    return DeferredList(deferreds, consumeErrors=True).addCallback(check)
