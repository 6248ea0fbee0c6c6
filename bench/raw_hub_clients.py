"""A hub between the floor's clients: where end-to-end latency goes, the hub's share and
the clients'.

- raw_publish_client: the echo client's loop with the hub at the other end: the same
  PUBLISH frame hedwig's blocking client sends, one at a time, `recv_into` until its
  reply is whole. The hub's round trip without hedwig's client.

bench/relay_peer.py measures a message's path with nothing of hedwig's on it. These two
clients put a real hub on that path and keep everything else as the floor has it: raw
sockets, the least Python a client of hedwig's protocol can run, the clock read as soon
as the socket read returns. So, in one run and one placement:

- the relay's latency is the floor (three processes, two sockets);
- these clients through a hub, minus the floor, is what the hub adds;
- hedwig's own clients through the hub, minus these, is what the clients add.

- raw_publisher: a HELLO, then a PUBLISH frame per message due, its prefix packed once
  (a fixed request id: the hub only echoes it), paced by `publish_paced` like every
  publisher here (the few due at once after a late wake-up in one PUBLISH, as
  publish_many sends them), and `recv_into` until its reply is whole;
- raw_subscriber: a HELLO and a SUBSCRIBE, then `recv_into` a kept buffer; each DELIVERY
  frame is timed with the clock read right after the read that completed it, from the
  stamps of its messages (decoded after the clock is read); a CONSUME every
  ACK_EVERY seq-ids, as hedwig's subscriber sends.
"""

import struct
import time
from array import array

from bench.client_processes import PAYLOAD_BYTES, START_WAIT_S, publish_paced
from bench.echo_peer import connect, timed_requests
from bench.figures import latency_summary
from hedwig.protocol.entry import decode_entry
from hedwig.protocol.framing import encode_frame
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import encode_consume, encode_hello, encode_subscribe
from hedwig.protocol.responses import decode_response, published_response
from hedwig.protocol.session import HubSession
from hedwig.protocol.status import Status

ACK_EVERY = 100  # as hedwig's subscribers send one CONSUME per this many seq-ids
_LENGTH = struct.Struct("!I")
_DELIVERY = struct.Struct("!III")  # handle, and the entry's messages [start, stop) delivered
_DELIVERY_AT = 9  # behind the frame's length, op and request id
_ENTRY_AT = _DELIVERY_AT + _DELIVERY.size


def _read_frame(sock) -> bytes:
    """One whole frame (its length prefix included), read a byte count at a time."""
    head = _read_exactly(sock, 4)
    return head + _read_exactly(sock, _LENGTH.unpack(head)[0])


def _read_exactly(sock, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = sock.recv(size - len(data))
        if not more:
            raise ConnectionError("the hub closed the connection")
        data += more
    return data


def _call(sock, op: Op, request_id: int, body: bytes):
    """Send a request and decode its reply (the first frame back: nothing else is due)."""
    sock.sendall(encode_frame(op, request_id, body))
    response = decode_response(_read_frame(sock)[9:])
    if response.status is not Status.SUCCESS:
        raise RuntimeError(f"{op.name} refused: {response.status.name} {response.message}")
    return response.value


def raw_publisher(address, topic, rate, seconds, start, out):
    """Once `start` (an Event) is set, publishes `rate` messages a second for `seconds`,
    one PUBLISH frame per message, each waiting for its reply."""
    if not start.wait(START_WAIT_S):
        raise RuntimeError(f"not told to start within {START_WAIT_S} s")
    sock = connect(address)
    _call(sock, Op.HELLO, 1, encode_hello("raw-publisher"))
    session = HubSession(None)
    prefix = session.publish_one(topic, b"p" * PAYLOAD_BYTES)[1][:-PAYLOAD_BYTES]
    reply_bytes = len(published_response(0, 0, 0))
    buffer = bytearray(reply_bytes)
    view = memoryview(buffer)

    def send(frame) -> None:
        sock.sendall(frame)
        got = 0
        while got < reply_bytes:
            more = sock.recv_into(view[got:])
            if not more:
                raise ConnectionError("the hub closed the connection")
            got += more

    def send_many(payloads) -> None:  # (one PUBLISH of them all, as publish_many sends)
        send(b"".join(session.publish(topic, encode_message_set(payloads))[1]))

    try:
        sent = publish_paced(rate, seconds, lambda p: send(prefix + p), send_many)
    finally:
        sock.close()
    out.put({"sent": sent})


def raw_publish_client(address, request: bytes, count: int, out):
    """`count` round trips of one PUBLISH frame (`request`, as hedwig's blocking client
    sends it) to the hub at `address` from a raw socket, as the echo client sends its
    request: the hub's round trip without hedwig's client."""
    sock = connect(address)
    _call(sock, Op.HELLO, 1, encode_hello("raw-publisher"))
    try:
        timed = timed_requests(sock, request, len(published_response(0, 0, 0)), count)
    finally:
        sock.close()
    out.put({"peer": "raw_publish", **timed})


def raw_subscriber(address, topic, count, warmup, ready, out):
    """Subscribes (from the latest message), sets `ready`, then times `count` messages
    from their stamps; the first `warmup` are not timed. Puts p50_us, p99_us, p999_us
    and max_us."""
    sock = connect(address)
    _call(sock, Op.HELLO, 1, encode_hello("raw-subscriber"))
    subscribed = _call(sock, Op.SUBSCRIBE, 2, encode_subscribe(topic, "latency-raw", start="latest"))
    handle = subscribed.handle
    time_ns = time.perf_counter_ns
    latencies = array("q")
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    held = 0  # bytes of frames not yet whole at the buffer's start
    received = 0
    acked = 0
    ready.set()
    try:
        while received < count:
            got = sock.recv_into(view[held:])
            now = time_ns()
            if not got:
                raise ConnectionError("the hub closed the connection")
            held += got
            at = 0
            while held - at >= 4:
                end = at + 4 + _LENGTH.unpack_from(buffer, at)[0]
                if end > held:
                    break
                if buffer[at + 4] == Op.DELIVERY:
                    _, start, stop = _DELIVERY.unpack_from(buffer, at + _DELIVERY_AT)
                    entry = bytes(buffer[at + _ENTRY_AT : end])
                    for message in decode_entry(topic, entry, start, stop):
                        if received >= warmup:
                            latencies.append(now - int.from_bytes(message.payload[:8], "big"))
                        received += 1
                    if message.seq - acked >= ACK_EVERY:
                        acked = message.seq
                        sock.sendall(encode_frame(Op.CONSUME, 0, encode_consume(handle, acked)))
                at = end
            buffer[: held - at] = buffer[at:held]
            held -= at
    finally:
        sock.close()
    out.put({"messages": len(latencies), **latency_summary(latencies)})
