"""A hub's side of the wire, scripted: parse what a client sent, build what a hub answers.

Built from the same codecs the hub uses (hedwig.protocol), so a client tested against
these bytes is tested against the documented protocol, not against a hand-made guess.
"""

from hedwig.protocol import (
    FrameDecoder,
    Op,
    Status,
    delivery_header,
    encode_entry_header,
    encode_event,
    encode_message_set,
)
from hedwig.protocol.requests import (
    RequestRefused,
    decode_consume,
    decode_hello,
    decode_publish,
    decode_subscribe,
    encode_hello_reply,
    encode_json,
    encode_published,
    encode_subscribed,
)
from hedwig.protocol.responses import response_frame

DECODERS = {
    Op.HELLO: decode_hello,
    Op.PUBLISH: decode_publish,
    Op.SUBSCRIBE: decode_subscribe,
    Op.CONSUME: decode_consume,
}


class HubScript:
    def __init__(self, name="127.0.0.1:4080", max_message_bytes=1 << 20):
        self._decoder = FrameDecoder()
        self.name = name
        self.max_message_bytes = max_message_bytes

    def requests(self, data):
        """[(op, request id, decoded body or raw body)] from bytes a client sent."""
        out = []
        for op, request_id, body in self._decoder.feed(data):
            decoder = DECODERS.get(op)
            try:
                request = decoder(body) if decoder else body
            except RequestRefused as e:
                request = e  # what the hub would refuse, e.g. an invalid topic
            out.append((Op(op), request_id, request))
        return out

    def hello(self, request_id):
        payload = encode_hello_reply("standalone", self.name, 16 << 20, self.max_message_bytes)
        return response_frame(request_id, Op.HELLO, payload=payload)

    @staticmethod
    def published(request_id, first, last):
        return response_frame(request_id, Op.PUBLISH, payload=encode_published(first, last))

    @staticmethod
    def subscribed(request_id, handle, consumed, next_seq):
        return response_frame(request_id, Op.SUBSCRIBE, payload=encode_subscribed(handle, consumed, next_seq))

    @staticmethod
    def described(request_id, partitions=1):
        """DESCRIBE_TOPIC's reply, as much of it as a client's subscribe reads."""
        return response_frame(request_id, Op.DESCRIBE_TOPIC, payload=encode_json({"partitions": partitions}))

    @staticmethod
    def ok(request_id, op, payload=b""):
        return response_frame(request_id, op, payload=payload)

    @staticmethod
    def error(request_id, op, status: Status, message=""):
        return response_frame(request_id, op, status, message)

    @staticmethod
    def delivery(handle, first_seq, payloads, start=0, stop=None, time_us=1_700_000_000_000_000):
        entry = encode_entry_header(first_seq, len(payloads), time_us, b"", first_seq) + encode_message_set(
            payloads
        )
        stop = len(payloads) if stop is None else stop
        return delivery_header(handle, start, stop, len(entry)) + entry

    @staticmethod
    def event(handle, event):
        return encode_event(handle, event)
