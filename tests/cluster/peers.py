"""One request to one hub of a region by hand (HELLO, then the request), to see its
answer as it is: served, or NOT_RESPONSIBLE_FOR_TOPIC naming the owner."""

from hedwig.protocol import Op
from hedwig.protocol.framing import encode_frame
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.status import Status
from tests.hub.rawpeer import RawPeer


def ask(address: str, op: Op, body: bytes):
    """(Status, message, payload) of `op` with `body`, sent to the hub at `address`."""
    peer = RawPeer(address)
    try:
        peer.send(encode_frame(Op.HELLO, 1, encode_hello("cluster-test")))
        peer.next_response()
        peer.send(encode_frame(op, 2, body))
        _request_id, status, message, payload = peer.next_response()
        return Status(status), message, payload
    finally:
        peer.close()
