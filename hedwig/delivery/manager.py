"""The delivery manager: every durable subscription of a hub, and a cursor for each live one.

Subscriptions are loaded per topic from the metadata store the first time the topic is
used here (`load_topic`, or any subscribe), so the least consumed seq-id is known over
every durable subscriber, attached or not: that minimum prunes the cache and bounds
ledger garbage collection. Attached subscribers get a Cursor (see cursor.py); pause and
resume come from the connection's transport through `pause_channel` / `resume_channel`.
A subscriber attached with deliver=False gets an AckOnlyAttachment instead (ack_only.py):
it holds the subscription like a cursor, receives nothing, and may consume up to the
topic's last seq-id; everything else about its consume pointer is as for any other.

The manager is built from parts it owns, each given what it works with through its
constructor, each holding the state it changes:

- SubscriptionTables (topic_table.py): topic -> TopicTable, loaded once per topic;
- Attachments (attachments.py): what is attached on each channel (cursors, ack-only
  attachments, members), paused channels, and ending an attachment with an event;
- WorkQueues (sharing.py): shared and pull subscriptions, their dispatchers and members,
  dead letters;
- MessageBounds (bounds.py): what a message bound skips, and the wait for the next publish;
- Relaying (relaying.py): the IRelayPolicy the hub's assembly gives (`use_relay_policy`):
  which entries a relay subscriber is not sent, and who is told of subscription changes.

The manager itself holds the exclusive path (subscribe, consume, close, unsubscribe) and
whatever spans its parts (releasing, deleting and stopping). A cursor's filter of
entries (a relay subscriber's, filtering.py) is asked for in one place, `_entry_filter`;
a subscription's message filter (its selector, kept in its preferences) in another,
`_message_filter`: compiled once per text (Filters), it gives an exclusive subscriber a
FilteredCursor (filtered_cursor.py) and a shared or pull subscription's dispatcher the
same runs to deliver. A SUBSCRIBE names the filter it wants (none: no filter); one that
differs from the subscription's is refused (RESUBSCRIBE_EXCEPTION) unless it says it
replaces it.
"""

from twisted.internet.defer import Deferred, DeferredList, fail, maybeDeferred, succeed
from twisted.internet.task import Cooperator
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.config.settings import DeliverySettings
from hedwig.delivery.ack_only import AckOnlyAttachment
from hedwig.delivery.administration import reset_subscription
from hedwig.delivery.attachments import Attachments
from hedwig.delivery.bounds import MessageBounds
from hedwig.delivery.compile_turns import CompileTurns
from hedwig.delivery.counters import WorkQueueCounters
from hedwig.delivery.cursor import Cursor
from hedwig.delivery.filtered_cursor import FilteredCursor
from hedwig.delivery.filtering import FILTER_PREFERENCE, NOTHING_PASSES, Filters, PassedOver, compiled_weight
from hedwig.delivery.interface import IDeliveryManager, SubscribeError
from hedwig.delivery.observation import delivery_stats, describe_table
from hedwig.delivery.ownership import check_owner
from hedwig.delivery.relaying import Relaying
from hedwig.delivery.sharing import WorkQueues, option_preferences
from hedwig.delivery.start import consumed_for_start, resolve_time
from hedwig.delivery.topic_table import SubscriptionTables
from hedwig.meta.interface import NEW, SubscriptionState
from hedwig.protocol.status import Status, SubscriptionEvent
from hedwig.protocol.work_requests import per_message

MODES = ("create", "attach", "create_or_attach")
_UNCHANGED = object()  # (a SUBSCRIBE that keeps the subscription's filter)
_logger = Logger()


@implementer(IDeliveryManager)
class DeliveryManager:
    """Cursors, windows and consume pointers of every subscription on this hub."""

    def __init__(self, metadata, clock, settings: DeliverySettings | None = None):
        self.metadata = metadata
        self.clock = clock
        self.settings = settings = settings or DeliverySettings()
        self.consumes = 0
        self.work = WorkQueueCounters()  # shared and pull subscriptions, message bounds
        self._relaying = Relaying()
        # Large entries are filtered a step at a time, the reactor given back between steps.
        self._filters = Filters(
            settings.filter_cache_bytes,
            cooperator=Cooperator(scheduler=lambda work: clock.callLater(0, work)),
        )
        self._compile_turns = CompileTurns(clock, settings.max_filter_compile_ms_per_user / 1000)
        self._attachments = Attachments()
        self._tables = SubscriptionTables(metadata, clock, settings, on_loaded=self._loaded)
        self._bounds = MessageBounds(self._tables, clock, self.work)
        self._queues = WorkQueues(self._tables, self._attachments, self._bounds, clock, settings, self.work)

    def use_relay_policy(self, policy) -> None:
        self._relaying.use(policy)

    def use_publisher(self, publish) -> None:
        self._queues.use_publisher(publish)

    # -- topics ------------------------------------------------------------------------

    def load_topic(self, topic_log) -> Deferred:
        """Deferred[None] once the topic's durable subscriptions are known here. The hub
        may call it when it acquires a topic, so pruning and min_consumed cover
        subscribers that have not reattached yet."""
        return self._tables.load(topic_log).addCallback(lambda _: None)

    def _loaded(self, table, records) -> None:
        """A topic's subscriptions were loaded: shared and pull ones get their dispatchers
        (with their acknowledgements as written), bounds are checked."""
        for sid, subscription in table.subscriptions.items():
            if per_message(subscription.kind, subscription.pull):
                dispatcher = self._queues.share(subscription, table, records[sid].value.acked)
                try:
                    dispatcher.message_filter = self._message_filter(subscription)
                except SubscribeError as e:  # (kept by a hub whose selectors differed)
                    dispatcher.message_filter = NOTHING_PASSES
                    _logger.error(
                        "{topic}/{subscriber}: its filter is refused ({error}): nothing is delivered"
                        " until a SUBSCRIBE replaces it",
                        topic=subscription.topic,
                        subscriber=sid,
                        error=e,
                    )
        self._bounds.check(table)

    def release_topic(self, topic: str, event=SubscriptionEvent.TOPIC_MOVED) -> Deferred:
        """The hub gives the topic up: end its live subscriptions with `event`, write every
        consume pointer, forget the topic here and in the cache (a topic with no
        subscriptions loaded here has nothing cached for a reader: the topic manager
        releasing its log drops what its publishes left)."""
        table = self._tables.pop(topic)
        if table is None:
            return succeed(None)
        flushes = []
        self._bounds.forget(table)
        for subscription in table.subscriptions.values():
            self._queues.end(subscription, event)
            if subscription.cursor is not None:
                self._attachments.end(subscription.cursor, event)
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
        try:
            self._check_filter_budget(channel, request, principal)
        except SubscribeError as e:
            return fail(e)
        if self._filters.compiled(request.filter):
            d = succeed(None)
        else:  # (compiled in the user's turn: refused before anything is loaded or made)

            def compile_filter():
                if not getattr(channel, "is_open", True):  # (it left while this waited: not run)
                    raise SubscribeError(Status.SERVICE_DOWN, "the connection closed")
                self._check_filter_budget(channel, request, principal)  # (again: it waited)
                self._filters.get(request.filter)

            d = self._compile_turns.run(self._compiler_of(channel, principal), compile_filter)
        d.addCallback(lambda _: resolve_time(topic_log, request.start))
        d.addCallback(
            lambda start: self._tables.load(topic_log).addCallback(
                self._subscribe, topic_log, channel, handle, request, window, principal, start
            )
        )
        return d

    @staticmethod
    def _compiler_of(channel, principal):
        """Whose share of compiling a SUBSCRIBE takes (CompileTurns): its user's, or with
        [auth] off its source host's (a connection is free to make)."""
        if principal is not None:
            return ("user", principal.name)
        return ("host", getattr(channel, "peer_host", None) or id(channel))

    def _check_filter_budget(self, channel, request, principal) -> None:
        """Refuse a filter new to its user (to its connection with [auth] off) that would
        take the distinct filters of that user's attached subscriptions past [delivery]
        max_filter_bytes_per_user, weighed as compiled (filtering.compiled_weight), before
        it is compiled: each costs the hub memory, and its compilation the reactor."""
        text = request.filter
        if text is None or not request.deliver:
            return
        if principal is None:
            held = [attachments for c, attachments in self._attachments.channels() if c is channel]
        else:
            name = principal.name
            held = [
                attachments
                for c, attachments in self._attachments.channels()
                if getattr(getattr(c, "principal", None), "name", None) == name
            ]
        texts = {a.subscription.preferences.get(FILTER_PREFERENCE) for group in held for a in group}
        texts.discard(None)
        if text in texts:
            return
        budget = self.settings.max_filter_bytes_per_user
        weight = sum(compiled_weight(t) for t in texts) + compiled_weight(text)
        if weight > budget:
            whose = "this connection's" if principal is None else f"user {principal.name}'s"
            raise SubscribeError(
                Status.TOO_MANY_SUBSCRIPTIONS,
                f"{whose} {len(texts)} filters in use and this one would hold about {weight} bytes"
                f" compiled, over [delivery] max_filter_bytes_per_user ({budget}):"
                " use fewer or shorter filters",
            )

    def _subscribe(self, table, topic_log, channel, handle, request, window, principal, start):
        subscriber_id, mode = request.subscriber_id, request.mode
        deliver = request.deliver
        if request.per_message:
            self._queues.check_request(topic_log.topic, request, channel)
        if subscriber_id in table.busy:
            # Being created (or deleted) for another request: two members of a shared
            # subscription joining at once. This one goes on once that is done.
            waiting = table.busy[subscriber_id].wait()
            again = (table, topic_log, channel, handle, request, window, principal, start)
            return waiting.addCallback(lambda _: self._subscribe(*again))
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
        new_filter = self._filter_change(subscription, request)
        if subscription.dispatcher is not None or request.per_message:
            if new_filter is not _UNCHANGED:
                self._replace_filter(subscription, new_filter)
            return self._queues.attach(table, subscription, channel, handle, request)
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
            self._attachments.force_out(current)
        if new_filter is not _UNCHANGED:
            self._replace_filter(subscription, new_filter)
        if window is not None and window != subscription.preferences.get("window"):
            subscription.preferences["window"] = window
        bound = request.message_bound
        if bound is not None and bound != subscription.preferences.get("message_bound"):
            subscription.preferences["message_bound"] = bound
            subscription.preferences_changed()
            self._bounds.check(table)
        if start is None:
            self._attach(subscription, topic_log, channel, handle, deliver)
            return subscription.reply()
        consumed = consumed_for_start(topic_log, start)
        old = subscription.consumed_seq
        subscription.reposition(consumed)
        table.moved(old, consumed)
        self._attach(subscription, topic_log, channel, handle, deliver)
        cursor = subscription.cursor

        def not_written(failure):
            self._attachments.detach(cursor)  # the new position is not durable: refuse the subscribe
            return failure

        return subscription.flush().addCallbacks(lambda _: subscription.reply(), not_written)

    def _create(self, table, topic_log, consumed, channel, handle, request, window, principal):
        subscriber_id = request.subscriber_id
        preferences = {} if window is None or request.per_message else {"window": window}
        preferences.update(option_preferences(request))
        if self._filters.get(request.filter) is not None:
            preferences[FILTER_PREFERENCE] = request.filter
        table.begin_busy(subscriber_id)
        d = self._write_new(topic_log, subscriber_id, consumed, preferences, principal)

        def created(version):
            subscription = self._tables.make(topic_log.topic, subscriber_id, consumed, preferences, version)
            table.add(subscription)
            if request.per_message:
                dispatcher = self._queues.share(subscription, table)
                dispatcher.message_filter = self._message_filter(subscription)
                result = self._queues.attach(table, subscription, channel, handle, request)
            else:
                self._attach(subscription, topic_log, channel, handle, request.deliver)
                result = subscription.reply()
            self._relaying.subscription_changed(topic_log.topic, subscriber_id, True)
            if request.message_bound is not None:
                self._bounds.check(table)
            return result

        def done(result):
            table.end_busy(subscriber_id)
            return result

        return d.addCallback(created).addBoth(done)

    def _write_new(self, topic_log, subscriber_id, consumed, preferences, principal) -> Deferred:
        """Deferred[version]: a new subscription written to the metadata store."""
        if principal is not None:  # ([auth] on) the subscription belongs to its creator
            preferences["owner"] = principal.name
        # When the subscription began, kept with it: a region relays what was published
        # since then even when its link comes up after a restart (hedwig/region/manager.py).
        preferences["created_us"] = int(self.clock.seconds() * 1_000_000)
        state = SubscriptionState(consumed, preferences)
        return maybeDeferred(self.metadata.put_subscription, topic_log.topic, subscriber_id, state, NEW)

    def _attach(self, subscription, topic_log, channel, handle, deliver=True) -> None:
        if deliver:
            cursor = self._cursor(subscription, topic_log, channel, handle)
        else:
            cursor = AckOnlyAttachment(subscription, channel, handle)
        subscription.cursor = cursor
        self._attachments.hold(cursor)

    def _cursor(self, subscription, topic_log, channel, handle) -> Cursor:
        window = subscription.preferences.get("window")
        if window is None:
            window = self.settings.default_window
        attachments = self._attachments
        parts = {
            "max_burst": self.settings.max_burst_entries,
            "on_channel_error": attachments.channel_failed,
            "on_unreadable": attachments.unreadable,
        }
        skip = self._entry_filter(subscription)
        message_filter = None if skip is not None else self._message_filter(subscription)
        if message_filter is None:
            cursor = Cursor(subscription, topic_log, channel, handle, window, self.clock, **parts)
        else:
            cursor = FilteredCursor(
                subscription,
                topic_log,
                channel,
                handle,
                window,
                self.clock,
                message_filter=message_filter,
                **parts,
            )
        if skip is not None or message_filter is not None:
            cursor.skip = skip
            cursor.on_skip = self._passed_over
            cursor.filtered_runs = PassedOver()
        cursor.on_expired = self._expired
        cursor.ttl_ms = topic_log.ttl_ms or self.settings.message_ttl_ms
        # A relay sends each message on at once, its time and TTL with it: the region it
        # reaches delays and expires it (the times are absolute, so they agree).
        cursor.timed = skip is None
        return cursor

    def _expired(self, cursor, from_seq: int, last_seq: int) -> None:
        """The cursor passed over seq-ids from_seq..last_seq, whose TTL passed before
        their delivery: counted, and consumed as a filter's passed-over ones are."""
        self.work.ttl_expired += last_seq - from_seq + 1
        if cursor.filtered_runs is None:
            cursor.filtered_runs = PassedOver()
        self._passed_over(cursor, from_seq, last_seq)

    def _entry_filter(self, subscription):
        """The predicate of the entries `subscription`'s cursor passes over instead of
        delivering, or None: a relay subscriber's, from the relay policy (filtering.py)."""
        return self._relaying.entry_filter(subscription.subscriber_id)

    def _message_filter(self, subscription):
        """The MessageFilter of `subscription`'s selector, or None when it has none."""
        return self._filters.get(subscription.preferences.get(FILTER_PREFERENCE))

    def _filter_change(self, subscription, request):
        """The filter text an existing subscription takes from `request` (None: none),
        _UNCHANGED when it keeps its own (an acknowledgement-only attachment always
        does, and so does a request naming no filter that does not replace it: resuming
        needs no copy of the filter); RESUBSCRIBE_EXCEPTION when the request names
        another without saying it replaces it."""
        if not request.deliver:  # (an acknowledgement-only attachment is sent nothing to filter)
            return _UNCHANGED
        if request.filter is None and not request.replace_filter:
            return _UNCHANGED
        wanted = self._filters.get(request.filter)
        wanted = None if wanted is None else wanted.text
        has = subscription.preferences.get(FILTER_PREFERENCE)
        if wanted == has:
            return _UNCHANGED
        if not request.replace_filter:
            raise SubscribeError(
                Status.RESUBSCRIBE_EXCEPTION,
                f"{subscription.subscriber_id} on {subscription.topic} has "
                + ("no filter" if has is None else f"filter {has!r}")
                + ", not "
                + ("none" if wanted is None else repr(wanted))
                + ": subscribe with that filter, or replace it (replace_filter)",
            )
        return wanted

    def _replace_filter(self, subscription, text) -> None:
        """A SUBSCRIBE replaced the subscription's filter with `text` (None: none): kept
        with it, and the dispatcher of a shared or pull one filters with it from now on
        (an exclusive one's cursor is made after this, with it)."""
        if text is None:
            subscription.preferences.pop(FILTER_PREFERENCE, None)
        else:
            subscription.preferences[FILTER_PREFERENCE] = text
        subscription.preferences_changed()
        if subscription.dispatcher is not None:
            subscription.dispatcher.message_filter = self._message_filter(subscription)

    def _passed_over(self, cursor, from_seq: int, last_seq: int) -> None:
        """The cursor passed over seq-ids from_seq..last_seq: consumed at once when
        everything before them is, else when a consume reaches them."""
        subscription = cursor.subscription
        if subscription.consumed_seq >= from_seq - 1:
            try:
                self.consume(subscription.topic, subscription.subscriber_id, last_seq)
            except SubscribeError:
                pass  # (deleted meanwhile: nothing to move)
            return
        cursor.filtered_runs.add(from_seq, last_seq)

    # -- consume, close, unsubscribe -----------------------------------------------------

    def consume(self, topic: str, subscriber_id: str, seq: int) -> None:
        """Everything up to `seq` is consumed (cumulative; older or repeated seq-ids are
        ignored; seq-ids not yet delivered are capped at the last delivered, or for a
        subscriber that takes no deliveries at the topic's last seq-id)."""
        table, subscription = self._tables.subscription(topic, subscriber_id)
        if subscription.dispatcher is not None:
            self._queues.consume(subscription, seq)
            return
        cursor = subscription.cursor
        limit = cursor.next_seq - 1 if cursor is not None and cursor.delivers else table.topic_log.last_seq
        if seq > limit:
            seq = limit
        if cursor is not None and cursor.filtered_runs is not None:
            seq = cursor.filtered_runs.reach(seq)
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

    def acknowledge(self, topic: str, subscriber_id: str, channel, ranges) -> int:
        dispatcher, _member = self._queues.member(topic, subscriber_id, channel, "ACK")
        return dispatcher.acknowledge(ranges)

    def reject(self, topic: str, subscriber_id: str, channel, ranges) -> int:
        dispatcher, member = self._queues.member(topic, subscriber_id, channel, "NACK")
        return dispatcher.nack(member, ranges)

    def fetch(self, topic: str, subscriber_id: str, channel, max_messages: int, timeout_s: float) -> None:
        dispatcher, member = self._queues.member(topic, subscriber_id, channel, "FETCH")
        dispatcher.fetch(member, max_messages, timeout_s)

    def close_subscription(self, topic: str, subscriber_id: str, channel=None) -> Deferred:
        """Stop the subscriber's cursor (a shared subscription's member on `channel`) and
        write its pointer; the subscription stays."""
        try:
            _table, subscription = self._tables.subscription(topic, subscriber_id)
        except SubscribeError:
            return fail()
        if subscription.dispatcher is not None:
            self._queues.close_member(subscription, channel)
        elif subscription.cursor is not None:
            self._attachments.detach(subscription.cursor)
        return subscription.flush()

    def unsubscribe(self, topic: str, subscriber_id: str, principal=None) -> Deferred:
        """Delete the durable subscription (its cursor stops first); with [auth] on, only
        as its owner or an admin (`principal`)."""
        try:
            table, subscription = self._tables.subscription(topic, subscriber_id)
            check_owner(subscription, principal)
        except SubscribeError:
            return fail()
        if subscriber_id in table.busy:
            return fail(
                SubscribeError(Status.TOPIC_BUSY, f"{subscriber_id} on {topic} is being (un)subscribed")
            )
        if subscription.dispatcher is not None:
            subscription.dispatcher.stop()  # (what members hold is not dead-lettered now)
            self._queues.detach_members(subscription)
        if subscription.cursor is not None:
            self._attachments.detach(subscription.cursor)
        table.begin_busy(subscriber_id)

        def delete(_):
            return maybeDeferred(
                self.metadata.delete_subscription, topic, subscriber_id, subscription.version
            )

        def deleted(_):
            subscription.deleted = True
            subscription.cancel()
            table.remove(subscriber_id)
            self._relaying.subscription_changed(topic, subscriber_id, False)
            low = table.min_consumed
            table.topic_log.prune(table.topic_log.last_seq if low is None else low)

        def done(result):
            table.end_busy(subscriber_id)
            if subscription.dispatcher is not None and not subscription.deleted:
                subscription.dispatcher.restart()  # (not deleted: it goes on)
            return result

        return subscription.settle().addCallback(delete).addCallback(deleted).addBoth(done)

    # -- administration -----------------------------------------------------------------

    def subscription_names(self, topic_log) -> Deferred:
        """Deferred[list of the topic's durable subscriber ids], loading them if need be."""
        return self._tables.load(topic_log).addCallback(lambda table: sorted(table.subscriptions))

    def reset(self, topic_log, subscriber_id: str, start) -> Deferred:
        """Move a detached subscription's consumed seq-id to where `start` (earliest,
        latest, ("seq", n), ("time", us), as SUBSCRIBE takes it) says, and write it.
        Deferred[{"consumed_seq", "previous_seq", "next_seq"}]; fails with SubscribeError
        (CLIENT_NOT_SUBSCRIBED, TOPIC_BUSY while attached, SEQ_OUT_OF_RANGE)."""
        return resolve_time(topic_log, start).addCallback(
            lambda start: self._tables.load(topic_log).addCallback(
                reset_subscription, topic_log, subscriber_id, start
            )
        )

    def place(self, topic_log, subscriber_id: str, seq: int, principal=None) -> Deferred:
        """Set the detached subscription `subscriber_id`'s consumed seq-id to `seq` (back
        or forth, bounded as a ("seq", seq + 1) start) and write it, creating it (owned by
        `principal`) when it does not exist: what a Kafka group's OffsetCommit does.
        Deferred[{"consumed_seq", "previous_seq", "next_seq"}]; fails with SubscribeError
        (TOPIC_BUSY while attached, SEQ_OUT_OF_RANGE, NOT_AUTHORIZED)."""
        return self._tables.load(topic_log).addCallback(self._place, topic_log, subscriber_id, seq, principal)

    def _place(self, table, topic_log, subscriber_id, seq, principal):
        if subscriber_id in table.busy:  # (being created or deleted: once that is done)
            again = (table, topic_log, subscriber_id, seq, principal)
            return table.busy[subscriber_id].wait().addCallback(lambda _: self._place(*again))
        start = ("seq", seq + 1)
        subscription = table.subscriptions.get(subscriber_id)
        if subscription is not None:
            check_owner(subscription, principal)
            return reset_subscription(table, topic_log, subscriber_id, start)
        consumed = consumed_for_start(topic_log, start)
        preferences = {}
        table.begin_busy(subscriber_id)
        written = self._write_new(topic_log, subscriber_id, consumed, preferences, principal)

        def created(version):
            table.add(self._tables.make(topic_log.topic, subscriber_id, consumed, preferences, version))
            self._relaying.subscription_changed(topic_log.topic, subscriber_id, True)
            return {"consumed_seq": consumed, "previous_seq": None, "next_seq": consumed + 1}

        def done(result):
            table.end_busy(subscriber_id)
            return result

        return written.addCallback(created).addBoth(done)

    def position(self, topic: str, subscriber_id: str):
        """The consumed seq-id of `subscriber_id` on `topic` as this hub holds it, None
        when it has no such subscription (or the topic's are not loaded here)."""
        table = self._tables.get(topic)
        subscription = None if table is None else table.subscriptions.get(subscriber_id)
        return None if subscription is None else subscription.consumed_seq

    def drop_subscriptions(self, topic_log) -> Deferred:
        """Delete every durable subscription of the topic (attached ones end with
        SUBSCRIPTION_FORCED_CLOSED) and forget the topic here: it is being deleted.
        Deferred[list of the subscriber ids deleted]."""
        return self._tables.load(topic_log).addCallback(self._drop)

    def _drop(self, table):
        self._tables.discard(table)
        names = sorted(table.subscriptions)
        self._bounds.forget(table)
        deleting = []
        for subscriber_id in names:
            subscription = table.subscriptions[subscriber_id]
            self._queues.end(subscription, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)
            if subscription.cursor is not None:
                self._attachments.force_out(subscription.cursor)
            deleting.append(subscription.settle().addCallback(self._delete_record, subscription))
        return _all(deleting).addCallback(lambda _: names)

    def _delete_record(self, _settled, subscription):
        subscription.cancel()
        topic, subscriber_id = subscription.topic, subscription.subscriber_id
        deleted = maybeDeferred(self.metadata.delete_subscription, topic, subscriber_id, subscription.version)

        def gone(_):
            subscription.deleted = True
            self._relaying.subscription_changed(topic, subscriber_id, False)

        return deleted.addCallback(gone)

    # -- backpressure and connections ---------------------------------------------------

    def pause_channel(self, channel) -> None:
        """The channel's transport is full: no deliver() until resume_channel."""
        self._attachments.pause(channel)

    def resume_channel(self, channel) -> None:
        self._attachments.resume(channel)

    def channel_lost(self, channel) -> Deferred:
        """The connection is gone: stop its cursors and write their pointers."""
        return _all([a.subscription.flush() for a in self._attachments.lose(channel)])

    # -- observation -----------------------------------------------------------------------

    def min_consumed(self, topic: str):
        """The least persisted consumed seq-id over every durable subscriber of the topic,
        for ledger garbage collection; None when it has none. 0 while the topic's
        subscriptions are not loaded here (load_topic), so nothing is collected blindly."""
        table = self._tables.get(topic)
        if table is None:
            return 0
        return table.min_persisted()

    def describe(self, topic: str) -> list:
        table = self._tables.get(topic)
        return [] if table is None else describe_table(table, self.settings)

    def attached(self, topic: str) -> int:
        """Subscriptions of `topic` attached to a connection here now."""
        table = self._tables.get(topic)
        if table is None:
            return 0
        return sum(subscription.cursor is not None for subscription in table.subscriptions.values())

    def stats(self) -> dict:
        stats = delivery_stats(self._tables, self._attachments, self.consumes, self.work)
        filters = self._filters.counters
        stats["filtering_entries"] = filters.evaluating
        stats["filtered_in_steps"] = filters.evaluated_in_steps
        stats["filter_compiles_waiting"] = self._compile_turns.waiting()
        return stats

    def stop(self) -> Deferred:
        """Shut down: stop every cursor and write every consume pointer."""
        tables = self._tables.tables()
        for table in tables:
            self._bounds.forget(table)
            for subscription in table.subscriptions.values():
                self._queues.end(subscription)
        self._attachments.detach_all()
        return _all([s.flush() for t in tables for s in t.subscriptions.values()])


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
