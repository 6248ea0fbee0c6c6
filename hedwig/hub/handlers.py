"""A hub connection's request handlers: one method per op, decoding the body, calling the
Hub (core.py) and answering through the connection's ordered replies;  is the
table the connection dispatches with (HubConnection's part for requests)."""

from twisted.internet.defer import Deferred, maybeDeferred

from hedwig.hub.producer_handlers import on_idempotent_publish, on_init_producer
from hedwig.hub.work_handlers import on_ack, on_fetch, on_nack
from hedwig.protocol.admin_requests import (
    decode_create_topic,
    decode_delete_topic,
    decode_list_subscriptions,
    decode_reset_subscription,
)
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.requests import (
    RequestRefused,
    decode_close_subscription,
    decode_consume,
    decode_describe_topic,
    decode_empty,
    decode_hello,
    decode_publish,
    decode_read_range,
    decode_subscribe,
    decode_unsubscribe,
    encode_hello_reply,
    encode_json,
    encode_subscribed,
)
from hedwig.protocol.responses import published_response, response_frame, response_frame_parts
from hedwig.protocol.status import Status
from hedwig.topiclog.entry import LogEntry

_MAX_HANDLE = 0xFFFFFFFF  # subscription handles are u32, never 0


class RequestHandlers:
    """Part of HubConnection (connection.py): one handler per request op."""

    def _hello(self, op: int, request_id: int, body) -> None:
        if op != Op.HELLO:
            self._protocol_error(request_id, op, Status.MALFORMED_REQUEST, "the first request must be HELLO")
            return
        try:
            hello = decode_hello(body)
        except RequestRefused as e:
            self._protocol_error(request_id, op, e.status, e.reason)
            return
        if hello.version != PROTOCOL_VERSION:
            self._protocol_error(
                request_id,
                op,
                Status.UNSUPPORTED_VERSION,
                f"this hub speaks protocol version {PROTOCOL_VERSION}, not {hello.version}",
            )
            return
        self._greeted = True
        self.client_name = hello.client_name
        hub = self.hub
        self.log.info("{peer}: hello from {client}", peer=self.peer, client=hello.client_name or "a client")
        hub.stats.record("hello", True, 0.0)
        reply = encode_hello_reply(hub.region, hub.name, hub.max_frame_bytes, hub.max_message_bytes)
        self._replies.send(response_frame(request_id, Op.HELLO, payload=reply))

    def _on_hello_again(self, request_id, body, started):
        raise RequestRefused(Status.MALFORMED_REQUEST, "HELLO was already exchanged on this connection")

    def _on_publish(self, request_id, body, started):
        topic, message_set = decode_publish(body)
        hub = self.hub
        stored = hub.publish_now(topic, message_set)
        if stored.__class__ is LogEntry:  # acknowledged at once: answered now, no Deferred
            hub.stats.publish_stored(topic, stored, hub.clock.seconds() - started)
            self._replies.send(published_response(request_id, stored.first_seq, stored.last_seq))
            return
        slot = self._replies.reserve()
        size = len(body)
        self._inflight_bytes += size
        stored.addCallbacks(
            self._published,
            self._publish_failed,
            (slot, request_id, started, size, topic),
            None,
            (slot, request_id, started, size, topic),
        )

    def _publish_failed(self, failure, slot, request_id, started, size, topic):
        self._inflight_bytes -= size
        self._failed(failure, slot, request_id, Op.PUBLISH, started, topic)

    def _published(self, entry, slot, request_id, started, size, topic):
        self._inflight_bytes -= size
        self.hub.stats.publish_stored(topic, entry, self.hub.clock.seconds() - started)
        self._replies.fill(slot, published_response(request_id, entry.first_seq, entry.last_seq))

    def _on_subscribe(self, request_id, body, started):
        request = decode_subscribe(body)
        limit = self.hub.max_subscriptions
        if len(self._subscriptions) >= limit and not self.is_hub_peer:  # (a region link relays many)
            raise RequestRefused(
                Status.TOO_MANY_SUBSCRIPTIONS, f"a connection holds at most {limit} subscriptions"
            )
        key = (request.topic, request.subscriber_id)
        attached = self._handles.get(key)
        if attached is not None:
            raise RequestRefused(
                Status.CLIENT_ALREADY_SUBSCRIBED,
                f"{request.subscriber_id} is already attached to {request.topic} on this connection "
                f"(handle {attached})",
            )
        handle = self._new_handle()
        self._subscriptions[handle] = key
        self._handles[key] = handle
        self._held[handle] = []
        subscribed = maybeDeferred(self.hub.subscribe, self, handle, request)
        slot = self._replies.reserve()
        subscribed.addCallbacks(
            self._subscribed,
            self._subscribe_failed,
            (slot, request_id, handle, key, started),
            None,
            (slot, request_id, handle, key, started),
        )

    def _new_handle(self) -> int:
        handle = self._next_handle
        while handle in self._subscriptions or handle in self._held:
            handle = handle + 1 if handle < _MAX_HANDLE else 1
        self._next_handle = handle + 1 if handle < _MAX_HANDLE else 1
        return handle

    def _subscribed(self, result, slot, request_id, handle, key, started):
        self.hub.stats.ops["subscribe"].record(True, self.hub.clock.seconds() - started)
        if not self._connected:
            # The client left while the topic was being acquired: the attachment made
            # since has no connection to serve, so detach it (its pointer is flushed).
            closing = self.hub.delivery.close_subscription(*key, self)
            closing.addErrback(lambda f: self.log.failure("detaching {key} failed", f, key=key))
            return
        payload = encode_subscribed(handle, result["consumed_seq"], result["next_seq"])
        self._replies.fill(
            slot,
            response_frame(request_id, Op.SUBSCRIBE, payload=payload),
            lambda: self._release_held(handle),
        )

    def _subscribe_failed(self, failure, slot, request_id, handle, key, started):
        if self._subscriptions.get(handle) == key:
            del self._subscriptions[handle]
            self._handles.pop(key, None)
        self._drop_held(handle)
        self._failed(failure, slot, request_id, Op.SUBSCRIBE, started)

    def _attached_key(self, handle: int):
        """(topic, subscriber id) of the subscription `handle` names on this connection,
        once its SUBSCRIBE is answered; CLIENT_NOT_SUBSCRIBED otherwise."""
        key = self._subscriptions.get(handle)
        if key is None or handle in self._held:
            raise RequestRefused(
                Status.CLIENT_NOT_SUBSCRIBED, f"no subscription with handle {handle} on this connection"
            )
        return key

    def _on_consume(self, request_id, body, started):
        handle, seq = decode_consume(body)
        key = self._attached_key(handle)
        self.hub.delivery.consume(key[0], key[1], seq)
        self.hub.stats.ops["consume"].record(True, self.hub.clock.seconds() - started)

    def _on_close_subscription(self, request_id, body, started):
        handle = decode_close_subscription(body)
        key = self._attached_key(handle)
        del self._subscriptions[handle]
        del self._handles[key]
        closed = self.hub.delivery.close_subscription(key[0], key[1], self)
        self._answer_empty(closed, request_id, Op.CLOSE_SUBSCRIPTION, started)

    def _on_unsubscribe(self, request_id, body, started):
        request = decode_unsubscribe(body)
        key = (request.topic, request.subscriber_id)
        unsubscribed = self.hub.unsubscribe(self, request.topic, request.subscriber_id)

        def forget(result):
            handle = self._handles.pop(key, None)
            if handle is not None:
                self._subscriptions.pop(handle, None)
                self._drop_held(handle)
            return result

        unsubscribed.addCallback(forget)
        self._answer_empty(unsubscribed, request_id, Op.UNSUBSCRIBE, started)

    def _on_read_range(self, request_id, body, started):
        request = decode_read_range(body)
        self.answer(
            self.hub.read_range(request),
            request_id,
            Op.READ_RANGE,
            started,
            lambda parts: response_frame_parts(request_id, Op.READ_RANGE, parts),
        )

    def _on_list_topics(self, request_id, body, started):
        decode_empty(body, "LIST_TOPICS")
        self._answer_json(self.hub.list_topics(), request_id, Op.LIST_TOPICS, started)

    def _on_describe_topic(self, request_id, body, started):
        topic = decode_describe_topic(body)
        self._answer_json(self.hub.describe_topic(topic), request_id, Op.DESCRIBE_TOPIC, started)

    def _on_list_hubs(self, request_id, body, started):
        decode_empty(body, "LIST_HUBS")
        self._answer_json(self.hub.list_hubs(), request_id, Op.LIST_HUBS, started)

    def _on_list_owners(self, request_id, body, started):
        decode_empty(body, "LIST_OWNERS")
        self._answer_json(self.hub.topic_owners(), request_id, Op.LIST_OWNERS, started)

    def _on_stats(self, request_id, body, started):
        decode_empty(body, "STATS")
        stats = Deferred()
        self._answer_json(stats, request_id, Op.STATS, started)
        stats.callback(self.hub.hub_stats())

    # -- administration (hedwig.protocol.admin_requests): JSON replies ----------------------

    def _on_create_topic(self, request_id, body, started):
        topic = decode_create_topic(body)
        self._answer_json(self.hub.create_topic(topic), request_id, Op.CREATE_TOPIC, started)

    def _on_delete_topic(self, request_id, body, started):
        request = decode_delete_topic(body)
        deleted = self.hub.delete_topic(request.topic, request.force)
        self._answer_json(deleted, request_id, Op.DELETE_TOPIC, started)

    def _on_list_subscriptions(self, request_id, body, started):
        topic = decode_list_subscriptions(body)
        rows = self.hub.list_subscriptions(topic)
        self._answer_json(rows, request_id, Op.LIST_SUBSCRIPTIONS, started)

    def _on_reset_subscription(self, request_id, body, started):
        request = decode_reset_subscription(body)
        moved = self.hub.reset_subscription(request.topic, request.subscriber_id, request.start)
        self._answer_json(moved, request_id, Op.RESET_SUBSCRIPTION, started)

    def _answer_empty(self, deferred, request_id, op, started) -> None:
        """Answer with an empty SUCCESS once `deferred` fires (its failure as a status)."""
        self.answer(deferred, request_id, op, started, lambda _: response_frame(request_id, op))

    def _answer_json(self, deferred, request_id, op, started) -> None:
        """Answer with the JSON of what `deferred` fires with (its failure as a status)."""
        self.answer(
            deferred,
            request_id,
            op,
            started,
            lambda value: response_frame(request_id, op, payload=encode_json(value)),
        )

# op -> handler(connection, request_id, body, started) of the core protocol
HANDLERS = {
    Op.HELLO: RequestHandlers._on_hello_again,
    Op.PUBLISH: RequestHandlers._on_publish,
    Op.INIT_PRODUCER: on_init_producer,
    Op.IDEMPOTENT_PUBLISH: on_idempotent_publish,
    Op.SUBSCRIBE: RequestHandlers._on_subscribe,
    Op.CONSUME: RequestHandlers._on_consume,
    Op.CLOSE_SUBSCRIPTION: RequestHandlers._on_close_subscription,
    Op.UNSUBSCRIBE: RequestHandlers._on_unsubscribe,
    Op.READ_RANGE: RequestHandlers._on_read_range,
    Op.LIST_TOPICS: RequestHandlers._on_list_topics,
    Op.DESCRIBE_TOPIC: RequestHandlers._on_describe_topic,
    Op.STATS: RequestHandlers._on_stats,
    Op.LIST_HUBS: RequestHandlers._on_list_hubs,
    Op.LIST_OWNERS: RequestHandlers._on_list_owners,
    Op.CREATE_TOPIC: RequestHandlers._on_create_topic,
    Op.DELETE_TOPIC: RequestHandlers._on_delete_topic,
    Op.LIST_SUBSCRIPTIONS: RequestHandlers._on_list_subscriptions,
    Op.RESET_SUBSCRIPTION: RequestHandlers._on_reset_subscription,
    Op.ACK: on_ack,
    Op.NACK: on_nack,
    Op.FETCH: on_fetch,
}
