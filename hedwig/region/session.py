"""One incarnation of a child's link to its parent, relaying both ways until it breaks.

Down: for every topic this region wants from the parent (interest.py) the link holds the
durable subscription `__region__<this region>` at the parent. Each delivered entry goes
to the topic's inbox (inbox.py) and, once stored here (or found held already), is
consumed at the parent, in order; a link that breaks resumes from the parent's consumed
seq-id and the inbox drops what arrives twice. Reading pauses while the inboxes hold
more than `relay_inflight_bytes`, so the parent's socket fills and its delivery pauses.

Up: the parent tells which topics it wants (REGION_INTEREST: a snapshot when the link
comes up, then changes); this region keeps a relay subscription `__region__<parent>`
for each (upchannel.py) and deletes those the parent no longer wants.
"""

import struct
from operator import attrgetter

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.hub.errors import NotOwner
from hedwig.protocol.ops import Op
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.requests import (
    RequestRefused,
    decode_json,
    encode_close_subscription,
    encode_describe_topic,
    encode_unsubscribe,
)
from hedwig.protocol.session import ISubscriber
from hedwig.protocol.status import Status, SubscriptionEvent
from hedwig.region.inbox import RelaySource
from hedwig.region.settings import late_start, relay_subscriber_id
from hedwig.region.switch import TopicSwitch
from hedwig.region.upchannel import UpChannel
from hedwig.region.wire import InterestKind, decode_interest

_logger = Logger()
_FIRST_SEQ = struct.Struct("!Q")  # an entry's first seq-id, at byte 2 of its header
# What the operator is told when the parent ends a relay subscription, by event (the
# events not named here end it quietly).
_RELAY_ENDED = {
    SubscriptionEvent.ENTRY_UNREADABLE: (
        "region {region}'s relay of {topic} at {parent} stopped: the parent cannot read "
        "seq-id {seq} (a damaged entry or a lost ledger); it resumes when the link reconnects"
    ),
    SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED: (
        "region {region}'s relay of {topic} at {parent} was attached elsewhere (another hub "
        "calling itself region {region}?); relaying it again"
    ),
}


class RelayFailed(Exception):
    pass


class Redirected(Exception):
    """A parent hub answered NOT_RESPONSIBLE_FOR_TOPIC: another of its region's hubs owns
    the topic (`owner`); `wanted`: whether the relay was being turned on there."""

    def __init__(self, owner: str, wanted: bool):
        super().__init__(f"owned by {owner or 'another hub'}")
        self.owner = owner
        self.wanted = wanted


class NotHere(Exception):
    """Another hub of this region owns the topic: its relays run there."""


@implementer(ISubscriber)
class RelaySubscription:
    """This region's relay subscription of one topic at the parent, as the link's protocol
    session sees it: its position says what to ask for and what is acknowledged there
    (the parent's seq-ids stored here), and the session hands it its frames."""

    __slots__ = ("delivered_seq", "handle", "link_session", "position")

    def __init__(self, link_session, position: SubscriptionPosition):
        self.link_session = link_session
        self.position = position
        self.handle = None
        self.delivered_seq = 0

    topic = property(attrgetter("position.topic"))
    consumed_seq = property(
        attrgetter("position.acked"),
        doc="The parent's seq-id up to which everything is stored here (consumed there).",
    )

    def on_attached(self, _driver, subscribed) -> None:
        self.handle = subscribed.handle
        self.delivered_seq = self.position.acked
        self.link_session._attached(self)

    def on_delivery(self, start, stop, entry) -> None:
        self.link_session.delivered(self, start, stop, entry)

    def on_event(self, event) -> None:
        self.link_session.event(self, event)

    def on_detached(self) -> None:
        pass  # the link session ends with its connection (ParentLink._lost closes it)


class LinkSession:
    def __init__(self, manager, link, parents=None):
        self.manager = manager
        self.link = link
        self.parents = parents  # ParentLinks (parents.py): routes topics between parent hubs
        self.parent = link.parent
        self.hub = manager.hub
        self.relay_id = relay_subscriber_id(manager.name)  # ours, at the parent
        self.source = RelaySource(self.parent)
        self.closed = False
        self._limit = manager.settings.relay_inflight_bytes
        self._clock_margin_ms = manager.settings.clock_margin_ms
        self._reactor = manager.reactor
        # down
        self._down: dict[str, RelaySubscription] = {}  # attached at the parent
        self._consumes: set[RelaySubscription] = set()  # with stored entries to consume at the parent
        self._consume_call = None
        self._reading_paused = False
        self.down = TopicSwitch(self._subscribe_down, self._unsubscribe_down, self._down_failed)
        self.received_entries = 0
        # up
        self.up_channel = UpChannel(
            self, self.hub, relay_subscriber_id(self.parent), manager.settings.relay_inflight_bytes
        )
        self.up = TopicSwitch(self._attach_up, self.up_channel.delete, self._up_failed)
        self.parent_wants: dict[str, int] = {}  # topic -> since when (us, the parent's clock)
        self._snapshot_want: dict[str, int] = {}
        self._snapshot_held: set[str] = set()
        self.synced = False  # the parent's interest snapshot arrived
        # Topics' options go to the parent (options.py) until it answers that it does not
        # know TOPIC_OPTIONS (an older hub).
        self.takes_options = True

    def start(self) -> None:
        if self.parents is not None:
            topics = self.parents.down_topics(self.link)
        else:
            topics = [topic for topic, _since in self.manager.interest.wanted_from(self.parent)]
        for topic in topics:
            self.down.set(topic, True)

    def close(self) -> Deferred:
        self.closed = True
        if self._consume_call is not None and self._consume_call.active():
            self._consume_call.cancel()
        self._consume_call = None
        self._down.clear()
        self._consumes.clear()
        return self.up_channel.close()

    def _switch_failed(self, topic: str, failure) -> None:
        if self.closed:
            return
        self.link.drop(f"relay subscription of {topic}: {failure.getErrorMessage()}")

    def _down_failed(self, topic: str, failure) -> None:
        """A relay subscription at the parent failed; one owned by another parent hub
        goes there (parents.py)."""
        if failure.check(Redirected) and self.parents is not None and not self.closed:
            self.parents.redirected_down(topic, failure.value.owner, failure.value.wanted)
            return
        self._switch_failed(topic, failure)

    def _up_failed(self, topic: str, failure) -> None:
        """Attaching a relay up failed; for a topic another hub of this region owns, that
        hub relays it (this one takes over if it is left unowned: manager.keep)."""
        if failure.check(NotHere):
            if not self.closed:
                self.manager.keep(topic)
            return
        self._switch_failed(topic, failure)

    def leave_down(self, topic: str) -> None:
        """The topic left this hub (a region of several hubs): its relay from the parent
        stops here without ending it there (its new owner here attaches it)."""
        down = self._down.pop(topic, None)
        self.down.on.discard(topic)
        if down is None:
            return
        self._consumes.discard(down)
        self.link.release(down.handle)
        self.link.request(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(down.handle)).addErrback(
            lambda _f: None
        )

    def redirected_up(self, topic: str, owner: str) -> None:
        """The parent hub answered a RELAY_PUBLISH of `topic` NOT_RESPONSIBLE_FOR_TOPIC."""
        self.up.on.discard(topic)
        if self.parents is not None:
            self.parents.redirected_up(topic, owner)

    # -- down: subscriptions at the parent ---------------------------------------------------

    def want_down(self, topic: str, wanted: bool) -> None:
        """Interest in `topic` from the parent began or ended here."""
        if not self.closed:
            self.down.set(topic, wanted)

    def _subscribe_down(self, topic: str) -> Deferred:
        """Attach this region's relay subscription at the parent; create it if it is not
        there, starting when this region's interest began (see interest.py)."""
        return self._request_down(topic, "attach", None, True, may_create=True)

    def _create_down(self, topic: str) -> Deferred:
        start = late_start(self.manager.interest.since(topic, self.parent), self._clock_margin_ms)
        return self._request_down(topic, "create", start, False, may_create=False)

    def _request_down(self, topic: str, mode: str, start, force_attach: bool, may_create: bool):
        # Window 0 (the inboxes bound what is in flight); every stored entry is acknowledged.
        position = SubscriptionPosition(topic, self.relay_id, mode, start, 0, force_attach, ack_every=1)
        d = self.link.subscribe(position, RelaySubscription(self, position))
        return d.addCallback(self._subscribed, topic, may_create)

    def _subscribed(self, reply, topic: str, may_create: bool):
        status, message, _payload = reply
        if status is Status.CLIENT_NOT_SUBSCRIBED and may_create:
            return self._create_down(topic)
        if status is Status.NOT_RESPONSIBLE_FOR_TOPIC:
            raise Redirected(message, True)
        if status is not Status.SUCCESS:
            raise RelayFailed(f"the parent refused SUBSCRIBE: {status.name}: {message}")
        # (The protocol session attached it before this reply came: _attached.)
        self.manager.options.exchange(self, topic)

    def _attached(self, down: RelaySubscription) -> None:
        if not self.closed:
            self._down[down.topic] = down

    def _unsubscribe_down(self, topic: str) -> Deferred:
        down = self._down.pop(topic, None)
        if down is not None:
            self.link.release(down.handle)
            self._consumes.discard(down)
        body = encode_unsubscribe(topic, self.relay_id)
        return self.link.request(Op.UNSUBSCRIBE, body).addCallback(self._unsubscribed)

    @staticmethod
    def _unsubscribed(reply) -> None:
        status, message, _payload = reply
        if status is Status.NOT_RESPONSIBLE_FOR_TOPIC:
            raise Redirected(message, False)
        if status not in (Status.SUCCESS, Status.CLIENT_NOT_SUBSCRIBED, Status.NO_SUCH_TOPIC):
            raise RelayFailed(f"the parent refused UNSUBSCRIBE: {status.name}: {message}")

    # -- down: entries -------------------------------------------------------------------------

    def delivered(self, down: RelaySubscription, start: int, stop: int, entry) -> None:
        if self.closed or self._down.get(down.topic) is not down:
            return
        if len(entry) < 10:
            raise RequestRefused(Status.MALFORMED_REQUEST, "a delivered entry shorter than its header")
        (first_seq,) = _FIRST_SEQ.unpack_from(entry, 2)
        last = first_seq + stop - 1
        down.delivered_seq = last
        self.received_entries += 1
        inboxes = self.manager.inboxes
        d = inboxes.receive(down.topic, entry, start, stop, self.source)
        d.addCallbacks(self._stored, self._store_failed, (down, last), None, (down,))
        if not self._reading_paused and inboxes.pending_bytes > self._limit:
            self._reading_paused = True
            self.link.pause_reading()
            inboxes.when_below(self._limit // 2).addCallback(self._drained)

    def _drained(self, _) -> None:
        self._reading_paused = False
        if not self.closed:
            self.link.resume_reading()

    def _stored(self, _outcome, down: RelaySubscription, last: int) -> None:
        if self.closed or self._down.get(down.topic) is not down:
            return
        position = down.position
        position.acknowledge(last)
        # Consumed there even when told before: a parent that delivers an entry again
        # (re-reading after a reconnect) may hold an older pointer than we sent.
        position.not_sent(last)
        self._consumes.add(down)
        if self._consume_call is None:
            self._consume_call = self._reactor.callLater(0, self._send_consumes)

    def _store_failed(self, failure, down: RelaySubscription) -> None:
        if self.closed:
            return
        if failure.check(NotOwner):  # the topic left this hub meanwhile: its new owner relays it
            self.leave_down(down.topic)
            return
        self.link.drop(f"storing a relayed entry of {down.topic} failed: {failure.getErrorMessage()}")

    def _send_consumes(self) -> None:
        """One CONSUME per topic per reactor turn, however many entries were stored."""
        self._consume_call = None
        consumes, self._consumes = self._consumes, set()
        for down in consumes:
            seq = down.position.unsent_ack()
            if seq is not None:
                self.link.consume(down.handle, seq)

    def event(self, down: RelaySubscription, event: int) -> None:
        if self.closed or self._down.get(down.topic) is not down:
            return
        del self._down[down.topic]
        self._consumes.discard(down)
        self.down.on.discard(down.topic)
        if not self.manager.ownership.owns(down.topic):
            return  # (attached by the hub of this region that owns the topic now)
        why = _RELAY_ENDED.get(event)
        if why is not None:
            _logger.error(
                why,
                region=self.manager.name,
                topic=down.topic,
                parent=self.parent,
                seq=down.delivered_seq + 1,
            )
        if event == SubscriptionEvent.ENTRY_UNREADABLE:
            # Subscribing again would meet the same entry at once: relaying the topic
            # waits for the operator (and the link's next connection).
            return
        if self.manager.interest.wants(down.topic, self.parent):
            self.down.set(down.topic, True)

    # -- up: what the parent wants -----------------------------------------------------------

    def interest(self, body) -> None:
        kind, items = decode_interest(body)
        if kind == InterestKind.WANT:
            self._snapshot_want.update(items)
        elif kind == InterestKind.HELD:
            self._snapshot_held.update(topic for topic, _ in items)
        elif kind == InterestKind.END:
            self._reconcile()
        elif kind == InterestKind.ADD:
            self.parent_wants.update(items)
            for topic, _since in items:
                self.up.set(topic, True)
        elif kind == InterestKind.DROP:
            for topic, _ in items:
                self.parent_wants.pop(topic, None)
                self.up.set(topic, False)

    def _attach_up(self, topic: str) -> Deferred:
        start = late_start(self.parent_wants.get(topic), self._clock_margin_ms)
        ownership = self.manager.ownership
        if not ownership.shared:
            return self.up_channel.attach(topic, start).addCallback(self._relaying_up, topic)

        def not_here(failure):
            failure.trap(NotOwner)
            raise NotHere(str(failure.value))

        # In a region of several hubs the topic's owner relays it (claimed here if nobody does).
        owned = ownership.acquire_for_relay(topic).addErrback(not_here)
        attached = owned.addCallback(lambda _log: self.up_channel.attach(topic, start))
        return attached.addCallback(self._relaying_up, topic)

    def _relaying_up(self, result, topic: str):
        """The relay of `topic` up is attached: the topic's options go with it."""
        self.manager.options.exchange(self, topic)
        return result

    def options_pushed(self, body) -> None:
        """TOPIC_OPTIONS from the parent: its options of a topic changed (options.py)."""
        if not self.closed:
            self.manager.options.pushed(self, body)

    def _reconcile(self) -> None:
        """The snapshot is complete: relay up what the parent wants, delete the relay
        subscriptions it no longer wants, and end those the parent holds for us on topics
        this region no longer wants."""
        wanted, self._snapshot_want = self._snapshot_want, {}
        held, self._snapshot_held = self._snapshot_held, set()
        self.parent_wants = wanted
        self.synced = True
        interest = self.manager.interest
        several = self.link.several_hubs
        for topic in [] if several else interest.relayed_by(self.parent):
            # (a parent region of several hubs: each names the topics it owns; one that is
            # not named may be another's, and ends with that one's DROP)
            if topic not in wanted:
                self.up.known_on(topic)
                self.up.set(topic, False)
        for topic in sorted(wanted):
            self.up.set(topic, True)
        for topic in sorted(held):
            if not interest.wants(topic, self.parent) and not self.down.wanted(topic):
                self.down.known_on(topic)
                self.down.set(topic, False)

    # -- observation ---------------------------------------------------------------------------

    def down_state(self, topic: str) -> dict | None:
        down = self._down.get(topic)
        if down is None:
            return None
        return {"consumed_seq": down.consumed_seq, "delivered_seq": down.delivered_seq}

    def parent_description(self, topic: str, timeout: float = 2.0) -> Deferred:
        """Deferred[dict | None]: the parent's DESCRIBE_TOPIC of `topic` (None if it cannot
        answer in time)."""
        if self.closed:
            d = Deferred()
            d.callback(None)
            return d
        d = self.link.request(Op.DESCRIBE_TOPIC, encode_describe_topic(topic))

        def decoded(reply):
            status, _message, payload = reply
            return decode_json(payload) if status is Status.SUCCESS else None

        d.addCallback(decoded)
        d.addTimeout(timeout, self._reactor)
        return d.addErrback(lambda _failure: None)
