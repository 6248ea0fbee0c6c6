"""Another user's publish round trip while one user attacks a hub with [auth] on
(issue 41): the figures its tests bound by behaviour rather than by time.

    .venv/bin/python bench/attack_bench.py [--entries N] [--no-save]

One hub process with [auth] on; carol publishes one message every 5 ms to a topic of
her own with the blocking client, and each round trip is timed. Cases, each a few
seconds, carol's p50/p99/max (ms) measured while the attack runs:

- quiet: nothing else;
- selector (point 2): alice's subscription with a selector of over a hundred LIKE
  patterns with `_` (within every parser limit), bob publishing messages whose string
  property is 900 KB to her topic;
- unknown_producer (point 5): a topic of `--entries` entries, then one IDEMPOTENT_PUBLISH
  of an unknown producer at set 5 (the hub reads the whole topic down for it), and
  alice's known producer publishing to that topic meanwhile (her p50/p99 too);
- filters (point 3): alice subscribing with distinct 4 KB selectors back to back on one
  connection (each compiled on the reactor), until the hub refuses (her budget) or 300;
- churn (point 3): alice's subscribe churn with new 4 KB selectors: `--churn-rounds`
  times, a new connection sends 30 SUBSCRIBEs with new selectors at once (within her
  filter budget), reads the replies and closes (her subscriptions detach, her budget is
  free again); each selector is compiled on the reactor, in her turn
  ([delivery] max_filter_compile_ms_per_user) where the hub has one.

`--only CASE...` runs those cases alone (and quiet).

Prints JSON; writes bench/results/attack_bench.json. Run through bench/before_after.py
for the change's before and after.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, latency_summary, report_start
from hedwig.auth import hash_password
from hedwig.client import Client
from hedwig.protocol import FrameDecoder, Op, Status, encode_frame, encode_message_set
from hedwig.protocol.auth_request import Credentials, encode_auth
from hedwig.protocol.producer_requests import encode_idempotent_publish
from hedwig.protocol.requests import encode_hello, encode_publish, encode_subscribe
from hedwig.protocol.responses import split_response
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "attack_bench.json"
USERS = {name: f"{name}-pw" for name in ("alice", "bob", "carol")}
PIECE = "a_a_a_a_a_a_X"  # with 3 digits after it, 16 characters: the longest piece allowed


def hostile_selector() -> str:
    text = " AND ".join(f"s NOT LIKE '%{PIECE}{n:03d}%'" for n in range(200))
    return text[: text.rfind(" AND ", 0, 4096)]


def distinct_selector(n: int) -> str:
    text = " OR ".join(f"s LIKE '%a_a_a_a_a_{n:03d}{i:03d}%'" for i in range(200))
    return text[: text.rfind(" OR ", 0, 4096)]


def credentials(user: str) -> Credentials:
    return Credentials(user, USERS[user])


class RawPeer:
    """A socket that said HELLO and AUTH: frames sent without waiting, replies counted."""

    def __init__(self, address: str, user: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=120)
        self.decoder = FrameDecoder(1 << 26)
        self.frames = []
        self.next_id = 1
        assert self.request(Op.HELLO, encode_hello("attacker"))[0] is Status.SUCCESS
        assert self.request(Op.AUTH, encode_auth(user, USERS[user]))[0] is Status.SUCCESS

    def send(self, op, body) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.sock.sendall(encode_frame(op, request_id, body))
        return request_id

    def reply(self):
        while not self.frames:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed")
            self.frames += self.decoder.feed(data)
        _op, _request_id, body = self.frames.pop(0)
        _op, status, message, _payload = split_response(body)
        return status, message

    def request(self, op, body):
        self.send(op, body)
        return self.reply()

    def close(self):
        self.sock.close()


class Victim:
    """Carol (or alice) publishing one message every `gap_s` in a thread, each timed."""

    def __init__(self, address: str, user: str, topic: str, gap_s: float = 0.005, idempotent=False):
        self.client = Client(address, credentials=credentials(user), idempotent=idempotent).connect()
        self.topic = topic
        self.gap_s = gap_s
        self.samples = []  # (start, round trip ns)
        self._stop = threading.Event()
        self.client.publish(topic, b"warm")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            start = time.perf_counter_ns()
            self.client.publish(self.topic, b"v")
            self.samples.append((start, time.perf_counter_ns() - start))
            time.sleep(self.gap_s)

    def between(self, start_ns: int, end_ns: int) -> dict:
        taken = [rtt for at, rtt in self.samples if start_ns <= at <= end_ns]
        summary = {k: (None if v is None else round(v / 1000, 2)) for k, v in latency_summary(taken).items()}
        return {"publishes": len(taken), **{k.replace("_us", "_ms"): v for k, v in summary.items()}}

    def stop(self):
        self._stop.set()
        self._thread.join(60)
        self.client.close()


def write_conf(directory: Path) -> str:
    users = {
        name: {
            "password": hash_password(pw, log2_n=10),
            "publish": ["*"],
            "subscribe": ["*"],
            "create": ["*"],
        }
        for name, pw in USERS.items()
    }
    (directory / "users.json").write_text(json.dumps({"users": users}))
    conf = directory / "hub.conf"
    conf.write_text(f"[auth]\nenabled = true\nusers_file = {directory / 'users.json'}\n")
    return str(conf)


def quiet(address, carol, seconds):
    start = time.perf_counter_ns()
    time.sleep(seconds)
    return {"carol": carol.between(start, time.perf_counter_ns())}


def selector_attack(address, carol, messages: int):
    alice = Client(address, credentials=credentials("alice")).connect()
    bob = Client(address, credentials=credentials("bob")).connect()
    subscription = alice.subscribe("attack.selector", "picky", filter=hostile_selector())
    start = time.perf_counter_ns()
    for _ in range(messages):
        bob.publish("attack.selector", b"huge", properties={"s": "a" * 900_000})
    bob.publish("attack.selector", b"after", properties={"s": "short"})
    # The hub has evaluated each huge message once it delivers the short one after them.
    while subscription.receive(timeout=300).payload != b"after":
        pass
    end = time.perf_counter_ns()
    alice.close()
    bob.close()
    return {"carol": carol.between(start, end), "attack_s": round((end - start) / 1e9, 2)}


def unknown_producer_attack(address, carol, entries: int):
    filler = RawPeer(address, "bob")
    body = encode_publish("attack.scan", encode_message_set([b"x"]))
    sent = 0
    while sent < entries:
        batch = min(2000, entries - sent)
        for _ in range(batch):
            filler.send(Op.PUBLISH, body)
        for _ in range(batch):
            assert filler.reply()[0] is Status.SUCCESS
        sent += batch
    alice = Victim(address, "alice", "attack.scan", idempotent=True)  # her producer: known
    time.sleep(0.3)
    attacker = RawPeer(address, "bob")
    start = time.perf_counter_ns()
    attacker.request(
        Op.IDEMPOTENT_PUBLISH, encode_idempotent_publish("attack.scan", 0x5EED, 5, encode_message_set([b"u"]))
    )
    end = time.perf_counter_ns()
    figures = {
        "carol": carol.between(start, end),
        "alice_same_topic": alice.between(start, end),
        "scan_s": round((end - start) / 1e9, 2),
    }
    alice.stop()
    attacker.close()
    filler.close()
    return figures


def filters_attack(address, carol, count: int):
    alice = Client(address, credentials=credentials("alice")).connect()
    start = time.perf_counter_ns()
    made = 0
    refused = None
    for n in range(count):
        try:
            alice.subscribe("attack.filters", f"f{n}", filter=distinct_selector(n))
        except Exception as e:  # (the budget: TOO_MANY_SUBSCRIPTIONS)
            refused = str(e)[:160]
            break
        made += 1
    end = time.perf_counter_ns()
    alice.close()
    return {"carol": carol.between(start, end), "subscribed": made, "refused": refused}


def churn_attack(address, carol, rounds: int, batch: int = 30):
    start = time.perf_counter_ns()
    statuses = {}
    for round_ in range(rounds):
        alice = RawPeer(address, "alice")
        for n in range(batch):
            selector = distinct_selector(500 + round_ * batch + n)
            alice.send(Op.SUBSCRIBE, encode_subscribe("attack.churn", f"c{round_}-{n}", filter=selector))
        for _ in range(batch):
            status = alice.reply()[0].name
            statuses[status] = statuses.get(status, 0) + 1
        alice.close()
    end = time.perf_counter_ns()
    attack_s = round((end - start) / 1e9, 2)
    return {"carol": carol.between(start, end), "subscribes": statuses, "attack_s": attack_s}


CASES = ("selector", "unknown_producer", "filters", "churn")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--churn-rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    report = report_start("attack_bench", argv, entries=args.entries)
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        with HubProcess(directory / "data", 0, "--conf", write_conf(directory)) as hub:
            carol = Victim(hub.address, "carol", "attack.carol")
            try:
                report["quiet"] = quiet(hub.address, carol, 2.0)
                if "selector" in args.only:
                    report["selector"] = selector_attack(hub.address, carol, 3)
                if "unknown_producer" in args.only:
                    report["unknown_producer"] = unknown_producer_attack(hub.address, carol, args.entries)
                if "filters" in args.only:
                    report["filters"] = filters_attack(hub.address, carol, 300)
                if "churn" in args.only:
                    report["churn"] = churn_attack(hub.address, carol, args.churn_rounds)
            finally:
                carol.stop()
    report["figures"] = {}
    for case in ("quiet", *args.only):
        report["figures"][f"{case}_p99_ms"] = report[case]["carol"]["p99_ms"]
        report["figures"][f"{case}_max_ms"] = report[case]["carol"]["max_ms"]
    emit(report, RESULTS, save=not args.no_save)


if __name__ == "__main__":
    main()
