"""A hub connection's deliveries and flow control: it is the delivery manager's
IDeliveryChannel (entries written behind a small header, held back until their SUBSCRIBE
reply is out) and its transport's IPushProducer (a full socket pauses delivery and
reading; too many requests in flight stop reading until half are answered)
(HubConnection's part for backpressure)."""

from hedwig.protocol.framing import delivery_header, encode_event
from hedwig.protocol.status import SubscriptionEvent
from hedwig.protocol.work_requests import redelivery_header

# Deliveries held back until their SUBSCRIBE reply is out: past this, the channel pauses.
MAX_HELD_BYTES = 4 * 1024 * 1024


class DeliveryFlow:
    """Part of HubConnection (connection.py): deliveries out, and backpressure both ways."""

    def deliver(self, handle, entry, start, stop):
        data = entry.data
        header = delivery_header(handle, start, stop, len(data))
        hub = self.hub
        stats = hub.stats
        stats.entries_delivered += 1
        stats.messages_delivered += stop - start
        stats.delivery_latency.observe(hub.clock.seconds() - entry.publish_time_us * 1e-6)
        handles = self.handles
        held = handles.held.get(handle)
        if held is None:
            if handle in handles.keys:
                self.write_sequence((header, data))
            return
        held.append(header)
        held.append(data)
        handles.held_bytes += len(header) + len(data)
        if handles.held_bytes > MAX_HELD_BYTES:
            self._update_delivery_pause()

    def redeliver(self, handle, entry, start, stop, count):
        """A shared or pull subscription's messages [start, stop) of `entry`, delivered the
        `count`th time (ISharedDeliveryChannel)."""
        data = entry.data
        stats = self.hub.stats
        stats.entries_delivered += 1
        stats.messages_delivered += stop - start
        self._send_or_hold(handle, (redelivery_header(handle, start, stop, count, len(data)), data))

    def fetch_done(self, handle):
        """The pull subscription `handle`'s FETCH ended (an EVENT that does not end it)."""
        self._send_or_hold(handle, (encode_event(handle, SubscriptionEvent.FETCH_DONE),))

    def _send_or_hold(self, handle, chunks) -> None:
        """Write `chunks` for subscription `handle`, or hold them until its SUBSCRIBE's
        reply is out (as deliver does)."""
        handles = self.handles
        if handles.hold(handle, chunks):
            if handles.held_bytes > MAX_HELD_BYTES:
                self._update_delivery_pause()
        elif handle in handles.keys:
            self.write_sequence(chunks)

    def subscription_ended(self, handle, event):
        key = self.handles.end(handle)
        if key is None:
            return
        self.log.info(
            "{peer}: subscription {subscriber} of {topic} ended: {event}",
            peer=self.peer,
            subscriber=key[1],
            topic=key[0],
            event=getattr(event, "name", event),
        )
        frame = encode_event(handle, event)
        if not self.handles.hold(handle, (frame,)):
            self.write(frame)

    def subscription_removed(self, topic: str, subscriber_id: str, event) -> None:
        """The durable subscription was deleted elsewhere: end it here if attached."""
        handle = self.handles.handles.get((topic, subscriber_id))
        if handle is not None:
            self.subscription_ended(handle, event)

    def release_held(self, handle) -> None:
        """The SUBSCRIBE of `handle` was answered: what was held for it goes out now."""
        chunks = self.handles.answered(handle)
        if chunks:
            self.write_sequence(chunks)
            self._update_delivery_pause()

    def drop_held(self, handle, key) -> None:
        """The SUBSCRIBE of `handle` for `key` failed: the handle is free, nothing held
        for it is sent."""
        if self.handles.refused(handle, key):
            self._update_delivery_pause()

    def forget_subscription(self, key) -> None:
        """The subscription `key` was deleted: attached here, its handle is free."""
        if self.handles.forget(key):
            self._update_delivery_pause()

    def pauseProducing(self):
        self._transport_full = True
        self._update_reading()  # read no requests while the client reads nothing
        self._update_delivery_pause()

    def resumeProducing(self):
        self._transport_full = False
        self._update_reading()
        self._update_delivery_pause()

    def stopProducing(self):
        self._reading = False

    def _replies_released(self) -> None:
        """Replies went out: a connection that stopped reading for having too many
        requests in flight reads again once half of them are answered."""
        if (
            self._too_busy
            and len(self.replies) <= self.max_inflight_requests // 2
            and self.replies.weight <= self.max_inflight_bytes // 2
        ):
            self._too_busy = False
            self._update_reading()

    def _update_reading(self) -> None:
        """Read requests unless closing, the socket is full, too much is in flight, or the
        frame in progress waits for the hub's intake budget (partial_requests.py)."""
        pause = not self._reading or self._transport_full or self._too_busy or self._awaiting_intake
        if pause == self._read_paused or not self._connected or self.transport.disconnecting:
            return
        self._read_paused = pause
        if pause:
            self.transport.pauseProducing()
        else:
            self._reading_resumed()
            self.transport.resumeProducing()

    def _update_delivery_pause(self) -> None:
        paused = self._transport_full or self.handles.held_bytes > MAX_HELD_BYTES
        if paused == self._delivery_paused or not self._connected:
            return
        self._delivery_paused = paused
        if paused:
            self.hub.delivery.pause_channel(self)
        else:
            self.hub.delivery.resume_channel(self)
