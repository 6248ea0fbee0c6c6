"""Partial requests cannot pin a hub's memory (issue 14, finding 3), against real hub
processes over sockets, watching the hub's resident memory in /proc:

- frames sent half-way share one hub-wide budget (`[hub] max_partial_request_bytes`):
  40 connections each sending the first half of a 16 MiB frame grow the hub by no more
  than the budget and a margin, and each is closed once its frame stops arriving;
- a connection that closes mid-frame gives the memory back at once, with no later
  traffic to the hub;
- a connection that never says HELLO is closed after `[hub] hello_timeout_s`.
"""

import socket
import threading

from hedwig.client import Client
from hedwig.protocol import FrameDecoder, Op, Status, encode_frame
from hedwig.protocol.framing import frame_header
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.responses import decode_response
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.hub.declared import declared

MIB = 1024 * 1024
FRAME = 16 * MIB  # the default max_frame_bytes: the largest frame a client may announce
BUDGET = 4 * (FRAME + 4)  # four such frames in progress at once


def resident_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def start_hub(tmp_path, **hub_settings) -> HubProcess:
    conf = tmp_path / "hub.conf"
    lines = [f"{key} = {value}" for key, value in hub_settings.items()]
    conf.write_text("[hub]\n" + "\n".join(lines) + "\n")
    return HubProcess(tmp_path / "data", 0, "--conf", str(conf)).start()


def greeted_socket(hub: HubProcess) -> socket.socket:
    sock = socket.create_connection((hub.host, hub.port), timeout=60)
    sock.sendall(encode_frame(Op.HELLO, 1, encode_hello("half-sender")))
    decoder, frames = FrameDecoder(MIB), []
    while not frames:
        data = sock.recv(4096)
        assert data, "the hub closed the connection before answering HELLO"
        frames = decoder.feed(data)
    assert decoder_status(frames[0]) is Status.SUCCESS
    return sock


def decoder_status(frame) -> Status:
    op, _request_id, body = frame
    assert op == Op.RESPONSE
    return declared(decode_response(body)).status


def half_of_a_large_frame() -> memoryview:
    """The header of a PUBLISH announcing FRAME bytes, and half of them."""
    return memoryview(frame_header(Op.PUBLISH, 2, FRAME - 5) + bytes(FRAME // 2))


def stats(hub: HubProcess) -> dict:
    with Client(hub.address) as client:
        return client.stats()


def test_half_sent_frames_share_one_budget_and_are_closed_when_they_stop(tmp_path, hubs):
    hub = start_hub(
        tmp_path, max_partial_request_bytes=BUDGET, frame_timeout_s=1.0, client_error_log_interval_s=600
    )
    hubs.append(hub)
    pid = hub.process.pid
    idle = greeted_socket(hub)  # greeted, with no frame in progress: never timed out
    senders = [greeted_socket(hub) for _ in range(40)]
    baseline = resident_bytes(pid)
    half = half_of_a_large_frame()
    outcomes = []

    def send_half_then_wait(sock):
        try:
            sock.sendall(half)
            outcomes.append("closed by the hub" if sock.recv(1) == b"" else "answered")
        except OSError as e:  # the hub aborted the connection (reset)
            outcomes.append("closed by the hub" if isinstance(e, ConnectionError) else repr(e))

    threads = [threading.Thread(target=send_half_then_wait, args=(s,), daemon=True) for s in senders]
    for thread in threads:
        thread.start()
    peak = [baseline]

    def all_closed_sampling_memory():
        peak[0] = max(peak[0], resident_bytes(pid))
        return len(outcomes) == len(senders)

    # Four at a time take their half (the rest wait in the kernel), stop, are closed a
    # second later, and the next four are read: ten rounds.
    wait_until(all_closed_sampling_memory, "every half-sending connection to be closed", timeout=120)
    growth = peak[0] - baseline
    assert growth < BUDGET + 32 * MIB, f"the hub grew by {growth / MIB:.0f} MiB"
    assert outcomes == ["closed by the hub"] * len(senders)
    counters = stats(hub)
    assert counters["connections"]["frame_timeouts"] == len(senders)
    assert counters["intake"]["reserved_bytes"] == 0 and counters["intake"]["waiting"] == 0
    assert counters["intake"]["waits"] > 0  # some had to wait for the budget
    lines = [line for line in hub.log if "a frame stopped arriving" in line]
    assert len(lines) == 1 and f"{FRAME // 2 + 9} of its {FRAME + 4} bytes received" in lines[0]
    idle.sendall(encode_frame(Op.STATS, 3))  # still served: it held no frame in progress
    decoder, frames = FrameDecoder(MIB), []
    while not frames:
        frames = decoder.feed(idle.recv(65536))
    assert decoder_status(frames[0]) is Status.SUCCESS
    for sock in [idle, *senders]:
        sock.close()


def test_a_connection_closed_mid_frame_gives_its_memory_back_at_once(tmp_path, hubs):
    hub = start_hub(tmp_path, max_partial_request_bytes=BUDGET)
    hubs.append(hub)
    pid = hub.process.pid
    senders = [greeted_socket(hub) for _ in range(4)]
    baseline = resident_bytes(pid)
    half = half_of_a_large_frame()
    for sock in senders:
        sock.sendall(half)
    held = 4 * (FRAME // 2)
    wait_until(lambda: resident_bytes(pid) - baseline > held * 0.9, "the hub to hold the half frames")
    for sock in senders:
        sock.close()
    # Nothing more is sent to the hub: its memory comes back with the connections.
    wait_until(
        lambda: resident_bytes(pid) - baseline < 8 * MIB,
        "the hub's memory to come back after the connections closed",
        timeout=20,
    )
    assert stats(hub)["intake"]["reserved_bytes"] == 0


def test_a_connection_that_never_says_hello_is_closed(tmp_path, hubs):
    hub = start_hub(tmp_path, hello_timeout_s=1.0)
    hubs.append(hub)
    silent = socket.create_connection((hub.host, hub.port), timeout=30)
    partial = socket.create_connection((hub.host, hub.port), timeout=30)
    partial.sendall(encode_frame(Op.HELLO, 1, encode_hello("slow"))[:6])
    greeted = greeted_socket(hub)
    for sock in (silent, partial):
        try:
            assert sock.recv(1) == b""
        except ConnectionError:
            pass  # (aborted: a reset)
    assert hub.wait_for_log("no HELLO within 1s of connecting")
    greeted.sendall(encode_frame(Op.STATS, 2))  # greeted in time: served after their timeout
    decoder, frames = FrameDecoder(MIB), []
    while not frames:
        frames = decoder.feed(greeted.recv(65536))
    assert decoder_status(frames[0]) is Status.SUCCESS
    assert stats(hub)["connections"]["hello_timeouts"] == 2
    for sock in (silent, partial, greeted):
        sock.close()
