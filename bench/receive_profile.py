"""What a blocking client runs per message: the client's side of the profile that
bench/publish_profile.py takes of the hub's.

    .venv/bin/python bench/receive_profile.py [--messages N] [--no-save]

A hub in a process of its own, with its defaults; a blocking publisher and a blocking
subscriber in this process. Counted per message, exactly (sys.settrace with opcode
events: the same on a busy machine as on an idle one), in all and by function:

- publish: `client.publish(topic, payload)`, one 100-byte message, to its seq-id;
- publish_three: `client.publish_many(topic, [payload] * 3)`, one set of three, to
  their seq-ids (per call: a request, as the latency bench's late publishes make);
- receive_one: `receive()` and `ack()` of a message published alone (an entry of one);
- receive_of_three: the same for each message of a `publish_many` of three (an entry of
  three, as the latency bench's publisher sends when three fall due at once).

Only the step measured is traced: what the publisher does for the subscriber's steps
is not. A receive that finds nothing read yet waits in the socket's read (C, counted
as nothing) and then runs the same Python as one that finds its delivery waiting.
Prints JSON and writes bench/results/receive_profile.json.
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bytecodes import Counts
from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "receive_profile.json"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
PAYLOAD = b"x" * 100
WARMUP = 2000
TOP = 20  # functions named per figure


def receive_and_ack(subscription) -> None:
    message = subscription.receive(timeout=60)
    if message is None:
        raise RuntimeError("no message in 60 s")
    subscription.ack(message)


def profile(address: str, messages: int) -> dict:
    figures = {}
    with Client(address) as publisher, Client(address) as subscriber:
        publish = Counts()
        for _ in range(WARMUP):
            publisher.publish("profile-publish", PAYLOAD)
        for _ in range(messages):
            with publish:
                publisher.publish("profile-publish", PAYLOAD)
        figures["publish"] = publish.report(messages, TOP)
        publish_three = Counts()
        for _ in range(WARMUP // 3):
            publisher.publish_many("profile-publish", [PAYLOAD] * 3)
        for _ in range(messages // 3):
            with publish_three:
                publisher.publish_many("profile-publish", [PAYLOAD] * 3)
        figures["publish_three"] = publish_three.report(messages // 3, TOP)
        for name, batch in (("receive_one", 1), ("receive_of_three", 3)):
            topic = f"profile-{name}"
            subscription = subscriber.subscribe(topic, "profile")
            counts = Counts()
            for i in range(WARMUP // batch + messages // batch):
                publisher.publish_many(topic, [PAYLOAD] * batch)
                for _ in range(batch):
                    if i < WARMUP // batch:
                        receive_and_ack(subscription)
                    else:
                        with counts:
                            receive_and_ack(subscription)
            figures[name] = counts.report(messages // batch * batch, TOP)
            subscription.close()
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3000, help="messages traced per figure (3,000)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    report = report_start("receive_profile", argv, payload_bytes=len(PAYLOAD))
    directory = tempfile.mkdtemp(prefix="receive-profile-")
    hub = HubProcess(os.path.join(directory, "hub"), cwd=ROOT)
    try:
        hub.start()
        report.update(profile(hub.address, args.messages))
    finally:
        hub.stop()
        shutil.rmtree(directory, ignore_errors=True)
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
