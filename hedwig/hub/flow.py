"""A hub connection's deliveries and their backpressure: what the delivery manager sends
through the connection (its IDeliveryChannel: entries written behind a small header,
held back until their SUBSCRIBE reply is out), and when it must stop (the socket's buffer
is full, or too much waits for a SUBSCRIBE reply: the delivery manager pauses the
channel until there is room again).

The delivery manager calls the connection's deliver, redeliver, fetch_done and
subscription_ended, which are this flow's (the connection hands them over as they are:
no call in between on the delivery path).
"""

from hedwig.protocol.framing import delivery_header, encode_event
from hedwig.protocol.status import SubscriptionEvent
from hedwig.protocol.work_requests import redelivery_header, subset_header

# Deliveries held back until their SUBSCRIBE reply is out: past this, the channel pauses.
MAX_HELD_BYTES = 4 * 1024 * 1024


class DeliveryFlow:
    __slots__ = (
        "_channel",
        "_delivery",
        "_handles",
        "_held",
        "_keys",
        "_seconds",
        "_stats",
        "_write",
        "_write_sequence",
        "paused",
        "transport_full",
    )

    def __init__(self, channel, handles, hub, write, write_sequence):
        """`channel`: the connection the delivery manager knows (paused and resumed as
        itself); `handles`: its HandleTable; `write` / `write_sequence`: its write path."""
        self._channel = channel
        self._handles = handles
        self._held = handles.held  # (read on every delivery: one lookup)
        self._keys = handles.keys
        self._stats = hub.stats
        self._seconds = hub.clock.seconds
        self._delivery = hub.delivery
        self._write = write
        self._write_sequence = write_sequence
        self.transport_full = False  # the transport paused its producer
        self.paused = False  # the delivery manager was told to pause the channel

    def deliver(self, handle, entry, start, stop):
        data = entry.data
        header = delivery_header(handle, start, stop, len(data))
        stats = self._stats
        stats.entries_delivered += 1
        stats.messages_delivered += stop - start
        stats.delivery_latency.observe(self._seconds() - entry.publish_time_us * 1e-6)
        held = self._held.get(handle)
        if held is None:
            if handle in self._keys:
                self._write_sequence((header, data))
            return
        held.append(header)
        held.append(data)
        handles = self._handles
        handles.held_bytes += len(header) + len(data)
        if handles.held_bytes > MAX_HELD_BYTES:
            self.update()

    def redeliver(self, handle, entry, start, stop, count):
        """A shared or pull subscription's messages [start, stop) of `entry`, delivered the
        `count`th time (ISharedDeliveryChannel)."""
        data = entry.data
        stats = self._stats
        stats.entries_delivered += 1
        stats.messages_delivered += stop - start
        self._send_or_hold(handle, (redelivery_header(handle, start, stop, count, len(data)), data))

    def deliver_subset(self, handle, entry, start, stop, selection, messages):
        """A key_shared member's `messages` of [start, stop) of `entry`, those
        `selection` picks (ISharedDeliveryChannel): one SUBSET_DELIVERY."""
        data = entry.data
        stats = self._stats
        stats.entries_delivered += 1
        stats.messages_delivered += messages
        stats.delivery_latency.observe(self._seconds() - entry.publish_time_us * 1e-6)
        self._send_or_hold(handle, (subset_header(handle, start, stop, selection, len(data)), data))

    def fetch_done(self, handle):
        """The pull subscription `handle`'s FETCH ended (an EVENT that does not end it)."""
        self._send_or_hold(handle, (encode_event(handle, SubscriptionEvent.FETCH_DONE),))

    def _send_or_hold(self, handle, chunks) -> None:
        """Write `chunks` for subscription `handle`, or hold them until its SUBSCRIBE's
        reply is out (as deliver does)."""
        handles = self._handles
        if handles.hold(handle, chunks):
            if handles.held_bytes > MAX_HELD_BYTES:
                self.update()
        elif handle in self._keys:
            self._write_sequence(chunks)

    def subscription_ended(self, handle, event):
        key = self._handles.end(handle)
        if key is None:
            return
        channel = self._channel
        channel.log.info(
            "{peer}: subscription {subscriber} of {topic} ended: {event}",
            peer=channel.peer,
            subscriber=key[1],
            topic=key[0],
            event=getattr(event, "name", event),
        )
        frame = encode_event(handle, event)
        if not self._handles.hold(handle, (frame,)):
            self._write(frame)

    def subscription_removed(self, topic: str, subscriber_id: str, event) -> None:
        """The durable subscription was deleted elsewhere: end it here if attached."""
        handle = self._handles.handles.get((topic, subscriber_id))
        if handle is not None:
            self.subscription_ended(handle, event)

    # -- the held frames of a SUBSCRIBE not answered yet ----------------------------------------

    def release_held(self, handle) -> None:
        """The SUBSCRIBE of `handle` was answered: what was held for it goes out now."""
        chunks = self._handles.answered(handle)
        if chunks:
            self._write_sequence(chunks)
            self.update()

    def drop_held(self, handle, key) -> None:
        """The SUBSCRIBE of `handle` for `key` failed: the handle is free, nothing held
        for it is sent."""
        if self._handles.refused(handle, key):
            self.update()

    def forget_subscription(self, key) -> None:
        """The subscription `key` was deleted: attached here, its handle is free."""
        if self._handles.forget(key):
            self.update()

    # -- backpressure ---------------------------------------------------------------------------

    def update(self) -> None:
        """Pause the channel's deliveries while the socket is full or too much is held;
        resume them once neither is so."""
        paused = self.transport_full or self._handles.held_bytes > MAX_HELD_BYTES
        if paused == self.paused or not self._channel.is_open:
            return
        self.paused = paused
        if paused:
            self._delivery.pause_channel(self._channel)
        else:
            self._delivery.resume_channel(self._channel)
