"""A flood of client errors costs a bounded number of log lines (issue 14, finding 8):
against a real hub process, thousands of bad requests, refused handshakes and bad
frames from one peer are written once per peer per interval, and the rest are counted
in a line at the interval's end, without tracebacks; every error is accounted for."""

import math
import re
import socket
import time

from hedwig.protocol import FrameDecoder, Op, Status, encode_frame
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.responses import decode_response
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.hub.declared import declared

INTERVAL_S = 1.0
BAD_REQUESTS = 5000
REFUSED_HELLOS = 200
BAD_FRAMES = 100

WRITTEN = re.compile(r" warn hedwig\.hub\.connection\.HubConnection: 127\.0\.0\.1:\d+: ")
COUNTED = re.compile(r" warn hedwig\.hub\.peerlog\.PeerLog: 127\.0\.0\.1: (\d+) more client error")


def responses(sock: socket.socket, count: int) -> list:
    decoder, frames = FrameDecoder(1 << 24), []
    while len(frames) < count:
        data = sock.recv(1 << 16)
        assert data, f"the hub closed the connection after {len(frames)} of {count} replies"
        frames += decoder.feed(data)
    return [declared(decode_response(body)).status for _op, _request_id, body in frames]


def connect(hub: HubProcess) -> socket.socket:
    return socket.create_connection((hub.host, hub.port), timeout=30)


def test_a_flood_of_client_errors_is_logged_once_per_peer_per_interval_with_a_count(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[hub]\nclient_error_log_interval_s = {INTERVAL_S}\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf)) as hub:
        started = time.monotonic()
        with connect(hub) as sock:  # bad requests on a connection that goes on
            sock.sendall(encode_frame(Op.HELLO, 1, encode_hello("flood")))
            assert responses(sock, 1) == [Status.SUCCESS]
            sock.sendall(b"".join(encode_frame(99, i, b"junk") for i in range(2, BAD_REQUESTS + 2)))
            assert responses(sock, BAD_REQUESTS) == [Status.UNKNOWN_OPERATION] * BAD_REQUESTS
        for _ in range(REFUSED_HELLOS):  # refused handshakes, from new ports each time
            with connect(hub) as sock:
                sock.sendall(encode_frame(Op.HELLO, 1, encode_hello("old", version=99)))
                assert responses(sock, 1) == [Status.UNSUPPORTED_VERSION]
        for _ in range(BAD_FRAMES):  # frames too short to be frames
            with connect(hub) as sock:
                sock.sendall(b"\x00\x00\x00\x01")
                assert responses(sock, 1) == [Status.MALFORMED_REQUEST]
        flooded = time.monotonic() - started
        total = BAD_REQUESTS + REFUSED_HELLOS + BAD_FRAMES

        def accounted():
            written = [line for line in hub.log if WRITTEN.search(line)]
            counted = [int(m.group(1)) for m in map(COUNTED.search, hub.log) if m]
            return (written, counted) if len(written) + sum(counted) == total else None

        written, counted = wait_until(accounted, "every client error to be written or counted")
        elapsed = time.monotonic() - started
        intervals = math.ceil(elapsed / INTERVAL_S) + 1
        assert len(written) <= intervals, (flooded, written)
        assert len(counted) <= intervals and max(counted) > 100
        assert not [line for line in hub.log if "Traceback" in line or " critical " in line]
