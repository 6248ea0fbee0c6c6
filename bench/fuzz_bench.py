"""Fuzzing a real hub with mutated and random frames, authentication on (issue 14).

    .venv/bin/python bench/fuzz_bench.py                          # the full run: 1,000,000 frames
    .venv/bin/python bench/fuzz_bench.py --frames 20000 --no-save  # a quick check

One hub process with `[auth] enabled` and a users file of two users: "fuzzer" may
publish and subscribe on f.* and create only f.? (so fuzzed topic names cannot fill
the disk with topics), "admin" may do everything. --workers client processes each open
connections over and over. Most connections say HELLO and AUTH (as either user, or with
a mutated AUTH, answered AUTHENTICATION_FAILED after failure_delay_s); a few fuzz the
handshake itself (random or mutated frames before HELLO). A greeted connection gets a
batch of frames, each one of: a valid request (publish, subscribe, consume, close,
unsubscribe, read range, describe, list, stats, AUTH and HELLO again), a
mutation of one (bit flips, bytes inserted, deleted or overwritten, body truncated or
extended, another op, the op of a request the hub sends), or random bytes with any op;
each with a consistent length prefix so the hub reads the rest. A valid PUBLISH follows
the batch: its reply proves every frame before it was read and answered. Some batches
end with a bad length prefix (too short, or over the frame limit), which the hub answers
and closes the connection on.

Counted: frames sent, frames the hub confirmed reading (the batch's closing publish was
answered, or the framing error was), connections, and the hub's exit (it must not
exit). The hub's log lines are counted by level over the last 10,000 lines the harness
keeps, and each critical line (a fault of the hub's own) is reported with its
traceback. Afterwards a valid blocking client (with credentials) publishes and
subscribes, and STATS is read: the hub must still serve. Prints JSON and writes
bench/results/fuzz_bench.json with the hub's log line counts by level (client errors
are written once per peer per interval).
"""

import argparse
import json
import multiprocessing
import os
import random
import selectors
import shutil
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load
from hedwig.auth import hash_password
from hedwig.protocol import Op, encode_frame, encode_message_set
from hedwig.protocol.auth_request import encode_auth
from hedwig.protocol.framing import FrameDecoder
from hedwig.protocol.requests import (
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_hello,
    encode_publish,
    encode_read_range,
    encode_subscribe,
    encode_unsubscribe,
)
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "fuzz_bench.json"
USERS = {
    "fuzzer": ("fuzz-pw", {"publish": ["f.*"], "subscribe": ["f.*"], "create": ["f.?"]}),
    "admin": ("admin-pw", {"admin": True}),
}
TOPICS = ["f.0", "f.1", "f.2", "f.3"]
BATCH = 200  # frames per greeted connection
REPLY_TIMEOUT_S = 30.0


def valid_requests(rng: random.Random) -> list:
    """(op, body) of well-formed requests, as a client sends them."""
    topic = rng.choice(TOPICS)
    subscriber = f"s{rng.randrange(8)}"
    handle = rng.randrange(1, 6)
    payloads = [rng.randbytes(rng.randrange(0, 64)) for _ in range(rng.randrange(1, 5))]
    properties = [{"k": b"v"} if rng.random() < 0.3 else None for _ in payloads]
    return [
        (Op.PUBLISH, encode_publish(topic, encode_message_set(payloads, properties))),
        (Op.SUBSCRIBE, encode_subscribe(topic, subscriber)),
        (Op.CONSUME, encode_consume(handle, rng.randrange(0, 1000))),
        (Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle)),
        (Op.UNSUBSCRIBE, encode_unsubscribe(topic, subscriber)),
        (Op.READ_RANGE, encode_read_range(topic, rng.randrange(0, 100), rng.randrange(0, 200), 65536)),
        (Op.DESCRIBE_TOPIC, encode_describe_topic(topic)),
        (Op.LIST_TOPICS, b""),
        (Op.STATS, b""),
        (Op.AUTH, encode_auth("fuzzer", "fuzz-pw")),
        (Op.HELLO, encode_hello("again")),
    ]


def mutate(rng: random.Random, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:  # flip a bit
            at = min(at, len(data) - 1)
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:  # insert bytes
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif kind == 2 and data:  # delete bytes
            del data[at : at + rng.randrange(1, 9)]
        elif kind == 3 and data:  # overwrite with an extreme value
            at = min(at, len(data) - 1)
            data[at : at + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff"])
        elif kind == 4:  # truncate
            del data[at:]
        else:  # extend
            data += rng.randbytes(rng.randrange(1, 64))
    return bytes(data)


def fuzzed_frame(rng: random.Random, request_id: int) -> bytes:
    """One frame with a consistent length prefix: valid, mutated, or random."""
    roll = rng.random()
    op, body = rng.choice(valid_requests(rng))
    if roll < 0.2:
        return encode_frame(op, request_id, body)
    if roll < 0.8:
        if rng.random() < 0.1:
            op = rng.choice([rng.randrange(256), Op.RESPONSE, Op.DELIVERY, Op.EVENT, Op.RELAY_PUBLISH])
        return encode_frame(op, rng.choice([request_id, 0, 0xFFFFFFFF]), mutate(rng, body))
    return encode_frame(rng.randrange(256), request_id, rng.randbytes(rng.randrange(0, 300)))


def killer_frame(rng: random.Random) -> bytes:
    """A length prefix the hub refuses (and closes the connection on)."""
    return struct.pack("!I", rng.choice([0, 1, 4, 0xFFFFFFFF, 64 * 1024 * 1024])) + rng.randbytes(8)


class Conversation:
    """A socket sending while it reads, until a reply with `until_id` or the hub closes."""

    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setblocking(False)
        self.decoder = FrameDecoder(1 << 26)

    def exchange(self, data: bytes, until_id: int | None) -> str:
        """ "answered" (the reply to until_id came), "closed" or "timeout"."""
        selector = selectors.DefaultSelector()
        view = memoryview(data)
        selector.register(self.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if view else 0))
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                for _key, events in selector.select(1.0):
                    if events & selectors.EVENT_WRITE and view:
                        try:
                            view = view[self.sock.send(view) :]
                        except (BlockingIOError, InterruptedError):
                            pass
                        except OSError:
                            return "closed"
                        if not view:
                            selector.modify(self.sock, selectors.EVENT_READ)
                    if events & selectors.EVENT_READ:
                        try:
                            chunk = self.sock.recv(1 << 16)
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:
                            return "closed"
                        if not chunk:
                            return "closed"
                        for op, request_id, _body in self.decoder.feed(chunk):
                            if op == Op.RESPONSE and request_id == until_id and not view:
                                return "answered"
            return "timeout"
        finally:
            selector.close()

    def close(self):
        self.sock.close()


def fuzz_worker(address, frames: int, seed: int, out):
    rng = random.Random(seed)
    counts = {"sent": 0, "confirmed": 0, "connections": 0, "timeouts": 0, "refused_connections": 0}
    while counts["sent"] < frames:
        try:
            conversation = Conversation(address)
        except OSError:
            counts["refused_connections"] += 1  # the hub must stay up: counted, and fatal below
            if counts["refused_connections"] > 20:
                break
            time.sleep(0.1)
            continue
        counts["connections"] += 1
        try:
            roll = rng.random()
            if roll < 0.05:  # fuzz the handshake itself
                batch = [fuzzed_frame(rng, i) for i in range(1, rng.randrange(2, 10))]
                outcome = conversation.exchange(b"".join(batch), None)
                counts["sent"] += len(batch)
                continue
            hello = encode_frame(Op.HELLO, 1, encode_hello("fuzzer"))
            if roll < 0.08:  # a mutated AUTH: refused and closed after failure_delay_s
                auth = encode_frame(Op.AUTH, 2, mutate(rng, encode_auth("fuzzer", "fuzz-pw")))
                outcome = conversation.exchange(hello + auth, 2)
                counts["sent"] += 2
                counts["confirmed"] += 2 if outcome == "answered" else 0
                continue
            user = "admin" if roll < 0.3 else "fuzzer"
            auth = encode_frame(Op.AUTH, 2, encode_auth(user, USERS[user][0]))
            if conversation.exchange(hello + auth, 2) != "answered":
                counts["timeouts"] += 1
                continue
            counts["sent"] += 2
            counts["confirmed"] += 2
            batch = [fuzzed_frame(rng, 3 + i) for i in range(BATCH)]
            closing_id = 3 + BATCH
            end = encode_publish("f.0", encode_message_set([b"end"]))
            closing = encode_frame(Op.PUBLISH, closing_id, end)
            outcome = conversation.exchange(b"".join(batch) + closing, closing_id)
            counts["sent"] += BATCH + 1
            if outcome == "answered":
                counts["confirmed"] += BATCH + 1
            elif outcome == "timeout":
                counts["timeouts"] += 1
            if outcome == "answered" and rng.random() < 0.3:
                outcome = conversation.exchange(killer_frame(rng), 0)
                counts["sent"] += 1
                counts["confirmed"] += 1 if outcome in ("answered", "closed") else 0
        finally:
            conversation.close()
    out.put(counts)


def write_users(path) -> None:
    users = {
        name: {"password": hash_password(pw, log2_n=10), **grants} for name, (pw, grants) in USERS.items()
    }
    path.write_text(json.dumps({"users": users}))


def check_hub_serves(address) -> dict:
    """A valid client, authenticated, publishes, subscribes and reads STATS."""
    from hedwig.client import Client
    from hedwig.protocol.auth_request import Credentials

    with Client(address, credentials=Credentials("admin", "admin-pw")) as client:
        seqs = client.publish_many("f.1", [b"after", b"the fuzz"])
        subscription = client.subscribe("f.1", "after-fuzz", start=seqs[0])
        received = [subscription.receive(timeout=30) for _ in seqs]
        stats = client.stats()
    return {
        "published_seqs": seqs,
        "received": [m.payload.decode() if m is not None else None for m in received],
        "stats_connections": stats["connections"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames in all (default 1,000,000)")
    parser.add_argument("--workers", type=int, default=2, help="client processes (default 2)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/fuzz_bench.json")
    args = parser.parse_args(argv)
    root = tempfile.mkdtemp(prefix="hedwig-fuzz-")
    try:
        users = os.path.join(root, "users.json")
        write_users(Path(users))
        conf = os.path.join(root, "hub.conf")
        with open(conf, "w") as f:
            # Every fuzzing process connects from 127.0.0.1, and mutated AUTHs are failed
            # logins: guessing limits as high as the run is long, so that the valid logins
            # go on being checked (the limits have their own tests, tests/auth/test_guessing.py).
            f.write(
                f"[auth]\nenabled = true\nusers_file = {users}\nfailure_delay_s = 0.05\n"
                "max_failures_per_source = 1000000\nmax_failures_per_user = 1000000\n"
                "max_waiting_checks = 100000\n"
            )
        hub = HubProcess(os.path.join(root, "data"), 0, "--conf", conf).start()
        started, load_before = time.monotonic(), load()
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        per_worker = -(-args.frames // args.workers)
        workers = [
            ctx.Process(target=fuzz_worker, args=(hub.address, per_worker, args.seed + i, out))
            for i in range(args.workers)
        ]
        for worker in workers:
            worker.start()
        results = [out.get(timeout=7200) for _ in workers]
        for worker in workers:
            worker.join(30)
        seconds = time.monotonic() - started
        hub_up = hub.running
        after = check_hub_serves(hub.address) if hub_up else None
        hub.stop()
        log = hub.output().splitlines()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    totals = {key: sum(r[key] for r in results) for key in results[0]}
    levels = {}
    faults = []  # the hub's own faults: each critical line with the traceback after it
    for number, line in enumerate(log):
        if " critical " in line and len(faults) < 10:
            end = number + 1
            while end < len(log) and not log[end][:2].isdigit():
                end += 1
            faults.append(log[number:end])
    for line in log:
        parts = line.split(" ", 3)
        if len(parts) > 2 and parts[1] in ("debug", "info", "warn", "error", "critical"):
            levels[parts[1]] = levels.get(parts[1], 0) + 1
    report = {
        "benchmark": "fuzz_bench",
        "command": "python bench/fuzz_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "authentication": "on: [auth] enabled, a users file of scrypt hashes, AUTH on greeted connections",
        "seconds": round(seconds, 1),
        "frames_sent": totals["sent"],
        "frames_confirmed_read": totals["confirmed"],
        "frames_per_s": round(totals["sent"] / seconds),
        "connections": totals["connections"],
        "exchanges_timed_out": totals["timeouts"],
        "connections_refused": totals["refused_connections"],
        "hub_stayed_up": hub_up,
        "valid_client_after": after,
        "hub_log_lines_by_level": levels,
        "hub_tracebacks": sum(1 for line in log if line.startswith("Traceback")),
        "hub_faults": faults,
        "hub_log_lines_kept": len(log),
        "load_before": load_before,
        "load_after": load(),
    }
    report["meets_bar"] = bool(
        hub_up
        and after is not None
        and after["received"] == ["after", "the fuzz"]
        and totals["sent"] >= args.frames
        and totals["refused_connections"] == 0
    )
    emit(report, RESULTS, save=not args.no_save)
    return 0 if report["meets_bar"] else 1


if __name__ == "__main__":
    sys.exit(main())
