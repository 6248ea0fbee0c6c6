"""Chaos: SIGKILL a hub again and again under publish and subscribe load, and count the
acknowledged messages its subscriber lost or received twice (issue 14). 0 lost is the bar.

    .venv/bin/python bench/chaos_bench.py                      # the full run: 100 kills (~4 min)
    .venv/bin/python bench/chaos_bench.py --kills 5 --no-save  # a quick check

One hub process (`python -m hedwig hub`, its defaults: fsync "never", so an acknowledged
publish is in the page cache and must survive the process) serves one topic. A publisher
process (blocking client) publishes message sets of 1-20 messages, each payload naming
its publisher and number; it keeps what the hub acknowledged (seq-id -> payload) and,
when a publish fails with the hub gone, reconnects and goes on with new messages (a
publish that failed is unacknowledged: it may or may not have been stored). A subscriber
process (blocking client, durable subscription from the earliest, every message
acknowledged) keeps every (seq-id, payload) it is given, across the hub's deaths (the
client resubscribes from its last acknowledgement).

The main process kills the hub with SIGKILL once the publisher has been acknowledged
--min-acks more messages by this incarnation, after a random further 0-0.5 s, and
restarts it on the same data directory and port, --kills times. Then the publisher
stops, and once the subscriber has been given the last acknowledged seq-id, it stops.

Counted: acknowledged messages the subscriber never got (lost: the bar is 0), messages it
got more than once (duplicated), seq-ids handed out twice to different payloads (a
seq-id reused after a restart), seq-ids out of order, and unacknowledged messages that
were stored all the same (a kill between the append and the reply: expected). Prints
JSON and writes bench/results/chaos_bench.json.
"""

import argparse
import itertools
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until

RESULTS = RESULTS_DIR / "chaos_bench.json"
TOPIC = "chaos"
SUBSCRIBER = "chaos-subscriber"
RETRY_PAUSE_S = 0.05  # a client's pause before trying a hub that is not back yet


def publisher(address, acked_count, stop, seed, out):
    """Publish until `stop`; put {seq: payload} of every acknowledged message on `out`."""
    from hedwig.client import Client

    rng = random.Random(seed)
    acked = {}
    failures = {}
    number = 0
    client = None
    while not stop.is_set():
        try:
            if client is None:
                client = Client(address, timeout=10.0, connect_timeout=2.0).connect()
            size = rng.randint(1, 20)
            payloads = [f"p{seed}:{number + i}".encode() for i in range(size)]
            number += size
            seqs = client.publish_many(TOPIC, payloads)
        except Exception as e:  # the hub is gone, or not back yet: a new connection
            failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
            if client is not None:
                client.close()
                client = None
            time.sleep(RETRY_PAUSE_S)
            continue
        acked.update(zip(seqs, payloads, strict=True))
        with acked_count.get_lock():
            acked_count.value += size
    if client is not None:
        client.close()
    out.put({"acked": acked, "failures": failures, "attempted": number})


def subscriber(address, last_seq, stop, out):
    """Receive and acknowledge every message until `stop`; put [(seq, payload)] on `out`."""
    from hedwig.client import Client

    received = []
    failures = {}
    client = subscription = None
    while not stop.is_set():
        try:
            if subscription is None:
                client = Client(address, timeout=10.0, connect_timeout=2.0, reconnect_timeout=600.0).connect()
                subscription = client.subscribe(TOPIC, SUBSCRIBER, start="earliest")
            message = subscription.receive(timeout=0.5)
        except Exception as e:  # the client gave up on this hub: attach again, from the last ack
            failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
            if client is not None:
                client.close()
            client = subscription = None
            time.sleep(RETRY_PAUSE_S)
            continue
        if message is None:
            continue
        received.append((message.seq, message.payload))
        subscription.ack(message)
        if message.seq > last_seq.value:
            last_seq.value = message.seq
    if client is not None:
        client.close()
    out.put({"received": received, "failures": failures})


def count(acked: dict, received: list) -> dict:
    """What the subscriber's record says about the acknowledged messages."""
    seen_payloads = {}
    by_seq = {}
    for seq, payload in received:
        seen_payloads[payload] = seen_payloads.get(payload, 0) + 1
        by_seq.setdefault(seq, set()).add(payload)
    lost = [seq for seq, payload in acked.items() if payload not in seen_payloads]
    acked_payloads = set(acked.values())
    return {
        "acknowledged": len(acked),
        "received": len(received),
        "lost": len(lost),
        "lost_seqs_first": sorted(lost)[:20],
        "duplicated": sum(n - 1 for n in seen_payloads.values() if n > 1),
        "seqs_with_two_payloads": sum(1 for payloads in by_seq.values() if len(payloads) > 1),
        "acknowledged_seq_delivered_other_payload": sum(
            1 for seq, payload in acked.items() if seq in by_seq and payload not in by_seq[seq]
        ),
        "out_of_order": sum(1 for a, b in itertools.pairwise(received) if b[0] < a[0]),
        "unacknowledged_but_stored": sum(1 for payload in seen_payloads if payload not in acked_payloads),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="SIGKILLs of the hub (default 100)")
    parser.add_argument("--min-acks", type=int, default=200, help="acks per incarnation before a kill")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--dir", help="the hub's data directory (default: a temporary one)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/chaos_bench.json")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = args.dir or tempfile.mkdtemp(prefix="hedwig-chaos-")
    hub = HubProcess(os.path.join(root, "data"), 0).start()
    ctx = multiprocessing.get_context("spawn")
    acked_count, last_seq = ctx.Value("q", 0), ctx.Value("q", 0)
    stop_publishing, stop_subscribing = ctx.Event(), ctx.Event()
    published, subscribed = ctx.Queue(), ctx.Queue()
    workers = [
        ctx.Process(target=publisher, args=(hub.address, acked_count, stop_publishing, args.seed, published)),
        ctx.Process(target=subscriber, args=(hub.address, last_seq, stop_subscribing, subscribed)),
    ]
    load_before = load()
    started = time.monotonic()
    restart_s = []
    for worker in workers:
        worker.start()
    try:
        for _ in range(args.kills):
            target = acked_count.value + args.min_acks
            wait_until(lambda target=target: acked_count.value >= target, "the publisher's acks", 120)
            time.sleep(rng.uniform(0, 0.5))  # (a random moment of the load to kill it at)
            hub.kill()
            began = time.monotonic()
            hub.restart()
            restart_s.append(time.monotonic() - began)
        target = acked_count.value + args.min_acks
        wait_until(lambda: acked_count.value >= target, "the publisher's acks after the last restart", 120)
        stop_publishing.set()
        publisher_result = published.get(timeout=120)
        acked = publisher_result["acked"]
        last_acked = max(acked, default=0)
        wait_until(lambda: last_seq.value >= last_acked, "the subscriber to reach the last ack", 300)
        stop_subscribing.set()
        subscriber_result = subscribed.get(timeout=120)
    finally:
        stop_publishing.set()
        stop_subscribing.set()
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
        hub.stop()
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    counts = count(acked, subscriber_result["received"])
    report = {
        "benchmark": "chaos_bench",
        "command": "python bench/chaos_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "kills": args.kills,
        "seconds": round(time.monotonic() - started, 1),
        "restart_s": {"mean": round(sum(restart_s) / len(restart_s), 2), "max": round(max(restart_s), 2)}
        if restart_s
        else {},
        **counts,
        "publisher_attempted": publisher_result["attempted"],
        "publisher_failures": publisher_result["failures"],
        "subscriber_failures": subscriber_result["failures"],
        "load_before": load_before,
        "load_after": load(),
        "meets_bar": counts["lost"] == 0 and counts["acknowledged_seq_delivered_other_payload"] == 0,
    }
    emit(report, RESULTS, save=not args.no_save)
    return 0 if report["meets_bar"] else 1


if __name__ == "__main__":
    sys.exit(main())
