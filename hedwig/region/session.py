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

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from hedwig.protocol.ops import Op
from hedwig.protocol.requests import (
    RequestError,
    decode_json,
    decode_subscribed,
    encode_consume,
    encode_describe_topic,
    encode_subscribe,
    encode_unsubscribe,
)
from hedwig.protocol.status import Status, SubscriptionEvent
from hedwig.region.inbox import RelaySource
from hedwig.region.settings import late_start, relay_subscriber_id
from hedwig.region.switch import TopicSwitch
from hedwig.region.upchannel import UpChannel
from hedwig.region.wire import InterestKind, decode_interest

_logger = Logger()
_FIRST_SEQ = struct.Struct("!Q")  # an entry's first seq-id, at byte 2 of its header


class RelayFailed(Exception):
    pass


class _Down:
    """This region's relay subscription of one topic at the parent."""

    __slots__ = ("consumed_seq", "delivered_seq", "handle", "next_seq", "topic")

    def __init__(self, topic: str, handle: int, consumed_seq: int, next_seq: int):
        self.topic = topic
        self.handle = handle
        self.consumed_seq = consumed_seq  # the parent's seq-id, stored here and consumed there
        self.delivered_seq = consumed_seq
        self.next_seq = next_seq


class LinkSession:
    def __init__(self, manager, link):
        self.manager = manager
        self.link = link
        self.parent = link.parent
        self.hub = manager.hub
        self.relay_id = relay_subscriber_id(manager.name)  # ours, at the parent
        self.source = RelaySource(self.parent)
        self.closed = False
        self._limit = manager.settings.relay_inflight_bytes
        self._clock_margin_ms = manager.settings.clock_margin_ms
        self._reactor = manager.reactor
        # down
        self._down: dict[str, _Down] = {}
        self._by_handle: dict[int, _Down] = {}
        self._consumes: dict[int, int] = {}  # handle -> seq-id to consume at the parent
        self._consume_call = None
        self._reading_paused = False
        self.down = TopicSwitch(self._subscribe_down, self._unsubscribe_down, self._switch_failed)
        self.received_entries = 0
        # up
        self.up_channel = UpChannel(
            self, self.hub, relay_subscriber_id(self.parent), manager.settings.relay_inflight_bytes
        )
        self.up = TopicSwitch(self._attach_up, self.up_channel.delete, self._switch_failed)
        self.parent_wants: dict[str, int] = {}  # topic -> since when (us, the parent's clock)
        self._snapshot_want: dict[str, int] = {}
        self._snapshot_held: set[str] = set()
        self.synced = False  # the parent's interest snapshot arrived

    def start(self) -> None:
        for topic, _since in self.manager.interest.wanted_from(self.parent):
            self.down.set(topic, True)

    def close(self) -> Deferred:
        self.closed = True
        if self._consume_call is not None and self._consume_call.active():
            self._consume_call.cancel()
        self._consume_call = None
        self._down.clear()
        self._by_handle.clear()
        return self.up_channel.close()

    def _switch_failed(self, topic: str, failure) -> None:
        if self.closed:
            return
        self.link.drop(f"relay subscription of {topic}: {failure.getErrorMessage()}")

    # -- down: subscriptions at the parent ---------------------------------------------------

    def want_down(self, topic: str, wanted: bool) -> None:
        """Interest in `topic` from the parent began or ended here."""
        if not self.closed:
            self.down.set(topic, wanted)

    def _subscribe_down(self, topic: str) -> Deferred:
        """Attach this region's relay subscription at the parent; create it if it is not
        there, starting when this region's interest began (see interest.py)."""
        body = encode_subscribe(topic, self.relay_id, "attach", None, 0, True)
        return self.link.request(Op.SUBSCRIBE, body).addCallback(self._subscribed, topic)

    def _create_down(self, topic: str) -> Deferred:
        start = late_start(self.manager.interest.since(topic, self.parent), self._clock_margin_ms)
        body = encode_subscribe(topic, self.relay_id, "create", start, 0, False)
        return self.link.request(Op.SUBSCRIBE, body).addCallback(self._subscribed, topic, False)

    def _subscribed(self, reply, topic: str, may_create: bool = True):
        status, message, payload = reply
        if status is Status.CLIENT_NOT_SUBSCRIBED and may_create:
            return self._create_down(topic)
        if status is not Status.SUCCESS:
            raise RelayFailed(f"the parent refused SUBSCRIBE: {status.name}: {message}")
        subscribed = decode_subscribed(payload)
        down = _Down(topic, subscribed.handle, subscribed.consumed_seq, subscribed.next_seq)
        self._down[topic] = down
        self._by_handle[subscribed.handle] = down

    def _unsubscribe_down(self, topic: str) -> Deferred:
        down = self._down.pop(topic, None)
        if down is not None:
            self._by_handle.pop(down.handle, None)
            self._consumes.pop(down.handle, None)
        body = encode_unsubscribe(topic, self.relay_id)
        return self.link.request(Op.UNSUBSCRIBE, body).addCallback(self._unsubscribed)

    @staticmethod
    def _unsubscribed(reply) -> None:
        status, message, _payload = reply
        if status not in (Status.SUCCESS, Status.CLIENT_NOT_SUBSCRIBED, Status.NO_SUCH_TOPIC):
            raise RelayFailed(f"the parent refused UNSUBSCRIBE: {status.name}: {message}")

    # -- down: entries -------------------------------------------------------------------------

    def delivered(self, handle: int, start: int, stop: int, entry) -> None:
        down = self._by_handle.get(handle)
        if down is None or self.closed:
            return
        if len(entry) < 10:
            raise RequestError(Status.MALFORMED_REQUEST, "a delivered entry shorter than its header")
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

    def _stored(self, _outcome, down: _Down, last: int) -> None:
        if self.closed or self._by_handle.get(down.handle) is not down:
            return
        down.consumed_seq = last
        self._consumes[down.handle] = last
        if self._consume_call is None:
            self._consume_call = self._reactor.callLater(0, self._send_consumes)

    def _store_failed(self, failure, down: _Down) -> None:
        if not self.closed:
            self.link.drop(f"storing a relayed entry of {down.topic} failed: {failure.getErrorMessage()}")

    def _send_consumes(self) -> None:
        """One CONSUME per topic per reactor turn, however many entries were stored."""
        self._consume_call = None
        consumes, self._consumes = self._consumes, {}
        for handle, seq in consumes.items():
            self.link.send(Op.CONSUME, encode_consume(handle, seq))

    def event(self, handle: int, event: int) -> None:
        down = self._by_handle.pop(handle, None)
        if down is None or self.closed:
            return
        self._down.pop(down.topic, None)
        self._consumes.pop(handle, None)
        self.down.on.discard(down.topic)
        if event == SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED:
            _logger.error(
                "region {region}'s relay of {topic} at {parent} was attached elsewhere (another hub "
                "calling itself region {region}?); relaying it again",
                region=self.manager.name,
                topic=down.topic,
                parent=self.parent,
            )
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
        return self.up_channel.attach(topic, late_start(self.parent_wants.get(topic), self._clock_margin_ms))

    def _reconcile(self) -> None:
        """The snapshot is complete: relay up what the parent wants, delete the relay
        subscriptions it no longer wants, and end those the parent holds for us on topics
        this region no longer wants."""
        wanted, self._snapshot_want = self._snapshot_want, {}
        held, self._snapshot_held = self._snapshot_held, set()
        self.parent_wants = wanted
        self.synced = True
        interest = self.manager.interest
        for topic in interest.relayed_by(self.parent):
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
