"""Up: a child region's relay subscriptions `__region__<parent>`, sent over the link.

They are durable subscriptions of this hub, created for the topics the parent says it
wants (REGION_INTEREST) and attached to this channel while the link is up. The delivery
manager hands it entries as to any connection (entries that came from the parent are
passed over by the relay filter); each goes to the parent as one RELAY_PUBLISH, and
once the parent says it is stored (or held already) the subscription consumes it here.
So a link that breaks resumes from the consumed seq-id and the parent drops what it got
twice. At most `relay_inflight_bytes` are sent and unanswered: beyond, the channel is
paused like a full socket.
"""

from twisted.logger import Logger
from zope.interface import implementer

from hedwig.delivery.interface import IDeliveryChannel, SubscribeError
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import Subscribe, decode_published
from hedwig.protocol.status import Status
from hedwig.region.link import LinkDropped
from hedwig.region.wire import relay_publish_parts

_logger = Logger()


@implementer(IDeliveryChannel)
class UpChannel:
    is_hub_peer = True  # it holds the reserved `__region__` ids

    def __init__(self, session, hub, subscriber_id: str, max_inflight_bytes: int):
        self._session = session
        self._hub = hub
        self.subscriber_id = subscriber_id
        self._max_inflight = max_inflight_bytes
        self._topics = {}  # handle -> topic
        self._handles = {}  # topic -> handle
        self._next_handle = 1
        self.inflight_bytes = 0
        self.paused = False
        self.closed = False
        self.sent_entries = 0
        self.sent_messages = 0
        self.stored_entries = 0  # answered: stored by the parent (or held there already)

    # -- attaching ---------------------------------------------------------------------------

    def attach(self, topic: str, start=None):
        """Attach this region's relay subscription of `topic`; create it if there is none,
        from `start` (when the parent's interest began: see interest.py)."""
        handle = self._next_handle
        self._next_handle += 1
        self._topics[handle] = topic
        self._handles[topic] = handle
        hub = self._hub
        d = hub.subscribe(self, handle, Subscribe(topic, self.subscriber_id, "attach", None, 0, True))

        def create(failure):
            failure.trap(SubscribeError)
            if failure.value.status is not Status.CLIENT_NOT_SUBSCRIBED:
                return failure
            created = Subscribe(topic, self.subscriber_id, "create", start, 0, False)
            return hub.subscribe(self, handle, created)

        def failed(failure):
            self._forget(handle)
            return failure

        return d.addErrback(create).addErrback(failed)

    def delete(self, topic: str):
        """The parent no longer wants the topic: delete the relay subscription here."""
        handle = self._handles.get(topic)
        if handle is not None:
            self._forget(handle)
        hub = self._hub

        def gone(failure):
            failure.trap(SubscribeError)
            if failure.value.status is not Status.CLIENT_NOT_SUBSCRIBED:
                return failure
            return None

        d = hub.topics.acquire(topic)  # (its subscriptions are loaded once it is open)
        d.addCallback(lambda _log: hub.unsubscribe(self, topic, self.subscriber_id))
        return d.addErrback(gone)

    def attached(self, topic: str) -> bool:
        return topic in self._handles

    def _forget(self, handle: int) -> None:
        topic = self._topics.pop(handle, None)
        if topic is not None and self._handles.get(topic) == handle:
            del self._handles[topic]

    def close(self):
        """The link is down: detach every relay subscription (their pointers are written)."""
        self.closed = True
        self._topics.clear()
        self._handles.clear()
        return self._hub.delivery.channel_lost(self)

    # -- IDeliveryChannel ----------------------------------------------------------------------

    def deliver(self, handle, entry, start, stop):
        topic = self._topics.get(handle)
        if topic is None or self.closed:
            return
        data = entry.data
        size = len(data)
        consumed_to = entry.first_seq + stop - 1
        d = self._session.link.request_parts(
            Op.RELAY_PUBLISH, lambda request_id: relay_publish_parts(request_id, topic, start, stop, data)
        )
        self.inflight_bytes += size
        self.sent_entries += 1
        self.sent_messages += stop - start
        d.addCallbacks(self._answered, self._lost, (topic, consumed_to, size), None, (size,))
        if not self.paused and self.inflight_bytes > self._max_inflight:
            self.paused = True
            self._hub.delivery.pause_channel(self)

    def subscription_ended(self, handle, event):
        self._forget(handle)

    # -- answers -----------------------------------------------------------------------------

    def _answered(self, reply, topic: str, consumed_to: int, size: int) -> None:
        self._settle(size)
        if self.closed:
            return
        status, message, payload = reply
        if status is Status.NOT_RESPONSIBLE_FOR_TOPIC:  # another hub of the parent region owns it
            self._redirected(topic, message)
            return
        if status is not Status.SUCCESS:
            self._session.link.drop(f"the parent refused an entry of {topic}: {status.name}: {message}")
            return
        decode_published(payload)  # (checks the reply's shape)
        self.stored_entries += 1
        try:
            self._hub.delivery.consume(topic, self.subscriber_id, consumed_to)
        except SubscribeError:
            pass  # deleted meanwhile (the parent's interest went)

    def _redirected(self, topic: str, owner: str) -> None:
        """Relay `topic` up over the owner's link from now on: let go of it here (the other
        link attaches it from its consumed seq-id; what this one sent unanswered goes again,
        and the parent drops what it holds already)."""
        handle = self._handles.get(topic)
        if handle is None:
            return  # (moved already, by an earlier answer)
        self._forget(handle)
        closing = self._hub.delivery.close_subscription(topic, self.subscriber_id)
        closing.addErrback(lambda _f: None)
        self._session.redirected_up(topic, owner)

    def _lost(self, failure, size: int) -> None:
        self._settle(size)
        failure.trap(LinkDropped)

    def _settle(self, size: int) -> None:
        self.inflight_bytes -= size
        if self.paused and self.inflight_bytes <= self._max_inflight // 2:
            self.paused = False
            if not self.closed:
                self._hub.delivery.resume_channel(self)

    def describe(self) -> dict:
        return {
            "attached_topics": len(self._handles),
            "inflight_bytes": self.inflight_bytes,
            "paused": self.paused,
            "sent_entries": self.sent_entries,
            "sent_messages": self.sent_messages,
            "stored_entries": self.stored_entries,
        }
