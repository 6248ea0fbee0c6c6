"""Python calls made on the hot paths, counted: a measure of their cost that the load of a
shared machine does not move (unlike messages per second), to compare two trees exactly.

    .venv/bin/python bench/path_calls.py

Prints JSON: the cProfile call counts of bench/delivery_bench.py's push (K = 1, 10, 100
subscribers, consuming every 10 entries) and catch-up (1,000,000 messages), and of a
blocking-client subscription taking 200 DELIVERY frames of 1000 messages through its
protocol session (receive_batch, every message acknowledged). Run it in each tree
(`cd TREE && PYTHONPATH=TREE python bench/path_calls.py`): a change that adds calls per
entry or per message shows as a difference proportional to entries or messages.
Nothing is saved.
"""

import cProfile
import json
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import delivery_bench
from hedwig.client.blocking import Subscription
from hedwig.hub.main import tune_allocator
from hedwig.protocol import Op, delivery_header, encode_entry_header, encode_message_set
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.requests import encode_subscribed
from hedwig.protocol.responses import response_frame
from hedwig.protocol.session import HubSession


def calls(run) -> int:
    profile = cProfile.Profile()
    run(profile)
    return pstats.Stats(profile).total_calls


class _Driver:
    """What a blocking subscription asks of its connection, without a socket."""

    def response_received(self, *args):
        pass

    def consume(self, handle, seq):
        pass

    def wait_for(self, ready, deadline):
        return ready()


def client_receive(profile, entries=200, per_entry=1000) -> None:
    session = HubSession(_Driver())
    position = SubscriptionPosition("t", "s", "create_or_attach", None, 0, False)
    subscription = Subscription(None, position)
    request_id, _frame = session.subscribe(position, subscription)
    session.data_received(response_frame(request_id, Op.SUBSCRIBE, payload=encode_subscribed(1, 0, 1)))
    payloads = [b"x" * 100] * per_entry
    frames = []
    for i in range(entries):
        first = 1 + per_entry * i
        entry = encode_entry_header(first, per_entry, 0, b"", first) + encode_message_set(payloads)
        frames.append(delivery_header(1, 0, per_entry, len(entry)) + entry)
    profile.enable()
    for frame in frames:
        session.data_received(frame)
        while batch := subscription.receive_batch(timeout=0):
            for message in batch:
                subscription.ack(message)
    profile.disable()


def main() -> int:
    tune_allocator()
    report = {
        f"delivery_push_{k}": calls(lambda p, k=k, n=entries: delivery_bench.bench_push("mmap", k, n, 10, p))
        for k, entries in ((1, 2000), (10, 2000), (100, 500))
    }
    report["delivery_catch_up"] = calls(lambda p: delivery_bench.bench_catch_up("mmap", 1_000_000, p))
    report["client_receive_200000"] = calls(client_receive)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
