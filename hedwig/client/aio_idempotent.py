"""The asyncio client's idempotent publishing (Client(..., idempotent=True)): one
producer id from the hub, a PublishLane (idempotent_lane.py) per topic, and the resends
a lane asks for after a lost connection, a redirect or a hub that went away, with
backoff, until `retry_timeout` seconds pass without an answer. The same rules as the
Twisted client's (twisted_idempotent.py), driven by asyncio Futures.
"""

import asyncio

from hedwig.client.idempotent_lane import PublishLane
from hedwig.client.idempotent_resends import RETRYABLE, LanePublisher
from hedwig.protocol.errors import ConnectionLost, ProducerSequenceGap
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import encode_idempotent_publish
from hedwig.protocol.requests import Published


class AioIdempotentPublisher(LanePublisher):
    """Part of hedwig.client.aio.Client: sends its message sets numbered. `_asking` is
    the Future of the INIT_PRODUCER under way."""

    def send(self, topic: str, message_set: bytes, count: int) -> asyncio.Future:
        """Future[Published] of one message set of `topic` (numbered now)."""
        future = asyncio.get_running_loop().create_future()
        self._add(topic, message_set, count, future)
        return future

    def _call_later(self, delay: float, function, *args) -> None:
        asyncio.get_running_loop().call_later(delay, function, *args)

    def _pump(self, topic: str, lane: PublishLane) -> None:
        for item in lane.ready():
            task = asyncio.ensure_future(self._send_set(topic, lane, item))
            task.add_done_callback(lambda done, item=item: self._outcome(done, topic, lane, item))

    async def _send_set(self, topic, lane, item):
        if lane is not self._first_lanes.setdefault(topic, lane):  # a lane after a full one
            if lane.producer_id is None:
                asked = self.client._request(topic, lambda p: p.call(Op.INIT_PRODUCER, b""), retry=True)
                producer_id = await asked
                if lane.producer_id is None:  # (its first sets ask together: the first answer is kept)
                    lane.producer_id = producer_id
            producer_id = lane.producer_id
        else:
            producer_id = self.producer_id
            if producer_id is None:  # (known: no await, so sets leave in the order they were numbered)
                producer_id = await self._producer(topic)
        first_send = item.attempts == 1
        body = encode_idempotent_publish(topic, producer_id, item.sequence, item.message_set, first_send)
        return await self.client._request(topic, lambda p: p.call(Op.IDEMPOTENT_PUBLISH, body), retry=False)

    def _producer(self, topic) -> asyncio.Future:
        if self._asking is None:
            self._asking = asyncio.ensure_future(
                self.client._request(topic, lambda p: p.call(Op.INIT_PRODUCER, b""), retry=True)
            )
            self._asking.add_done_callback(self._got_producer)
        return asyncio.shield(self._asking)

    def _got_producer(self, asked) -> None:
        self._asking = None
        if not asked.cancelled() and asked.exception() is None:
            self.producer_id = asked.result()

    def _outcome(self, done, topic, lane, item) -> None:
        loop = asyncio.get_running_loop()
        error = done.exception() if not done.cancelled() else ConnectionLost(message="cancelled")
        if error is None:
            self._failing_since.pop(topic, None)
            self._backoff.pop(topic, None)
            if lane.answered(item) and not item.waiters.done():
                item.waiters.set_result(Published(*done.result()))
        else:
            now = loop.time()
            since = self._failing_since.setdefault(topic, now)
            retryable = isinstance(error, RETRYABLE) and now - since < self.retry_timeout
            retryable = retryable and not self.client._closed
            for given_up in lane.failed(item, retryable, isinstance(error, ProducerSequenceGap)):
                if not given_up.waiters.done():
                    given_up.waiters.set_exception(error)
        self._next(topic, lane)


class IdempotentPublishing:
    """Part of hedwig.client.aio.Client: where its message sets go."""

    _idempotent = None  # an AioIdempotentPublisher when made with idempotent=True

    async def _publish_set(self, topic, message_set, count):
        """Published of one message set: numbered and resent until answered by an
        idempotent client; otherwise sent once (a lost connection fails it)."""
        if self._idempotent is not None:
            return await self._idempotent.send(topic, message_set, count)
        return await self._request(topic, lambda p: p.publish(topic, message_set), retry=False)
