"""A socket speaking frames by hand to a real hub process, for what a well-behaved client
never sends; a reply that does not come fails the test at the socket's timeout."""

import socket

from hedwig.protocol import FrameDecoder, Op
from hedwig.protocol.responses import decode_response, split_response
from tests.hub.declared import declared


class RawPeer:
    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.decoder = FrameDecoder(1 << 30)
        self.frames = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def next_frame(self):
        while not self.frames:
            data = self.sock.recv(1 << 16)
            assert data, "the hub closed the connection without answering"
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def response(self):
        op, request_id, body = self.next_frame()
        assert op == Op.RESPONSE
        return request_id, declared(decode_response(body))

    def next_response(self):
        """(request id, status, message, payload) of the next RESPONSE, skipping the other
        frames (a parent hub's REGION_INTEREST to a region link)."""
        while True:
            op, request_id, body = self.next_frame()
            if op == Op.RESPONSE:
                _op, status, message, payload = declared(split_response(body))
                return request_id, status, message, payload

    def closed_by_hub(self) -> bool:
        """True once the hub closed its side (recv sees the end of the stream)."""
        return self.sock.recv(1 << 16) == b""

    def close(self):
        self.sock.close()
