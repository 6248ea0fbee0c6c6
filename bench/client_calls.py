"""Python calls the event-loop clients make per message, counted: the Twisted and asyncio
clients' side of what bench/receive_profile.py counts for the blocking client.

    .venv/bin/python bench/client_calls.py [--messages N] [--no-save]

A hub in a process of its own, with its defaults; the clients in this process, each
with up to 1000 publishes in flight. Counted with cProfile (every Python and C call,
the same on a busy machine as on an idle one), divided by the messages:

- twisted_publish: `publish(topic, payload)` of the Twisted client, each Deferred's
  callback issuing the next (bench/pubsub_bench.py's twisted_publish);
- aio_publish: `await publish(topic, payload)` of the asyncio client from 1000 tasks
  (pubsub_bench's aio_publish);
- aio_subscribe: `async for` over an asyncio subscription, each message acknowledged
  (pubsub_bench's aio_subscribe).

A figure that grows with a change is a call added per message (or per batch, divided
by the batch). Prints JSON and writes bench/results/client_calls.json.
"""

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "client_calls.json"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
PAYLOAD = b"x" * 100
IN_FLIGHT = 1000
WARMUP = 2000


def per_message(profile, messages: int) -> dict:
    return {"calls_per_message": round(pstats.Stats(profile).total_calls / messages, 2)}


async def aio_figures(address: str, messages: int) -> dict:
    from hedwig.client.aio import Client

    figures = {}
    async with Client(address, max_in_flight=2 * IN_FLIGHT) as client:

        async def publisher(share):
            for _ in range(share):
                await client.publish("calls-aio", PAYLOAD)

        await asyncio.gather(*(publisher(WARMUP // 100) for _ in range(100)))
        profile = cProfile.Profile()
        profile.enable()
        await asyncio.gather(*(publisher(messages // IN_FLIGHT) for _ in range(IN_FLIGHT)))
        profile.disable()
        figures["aio_publish"] = per_message(profile, messages // IN_FLIGHT * IN_FLIGHT)
        subscription = await client.subscribe("calls-aio", "calls", start="earliest")

        async def take(count: int) -> None:
            """`count` messages, each acknowledged (pubsub_bench's aio_subscribe loop)."""
            async for message in subscription:
                await subscription.ack(message)
                count -= 1
                if not count:
                    return

        await take(WARMUP)
        profile = cProfile.Profile()
        profile.enable()
        await take(messages // IN_FLIGHT * IN_FLIGHT)
        profile.disable()
        figures["aio_subscribe"] = per_message(profile, messages // IN_FLIGHT * IN_FLIGHT)
    return figures


def twisted_figures(address: str, messages: int) -> dict:
    from twisted.internet import reactor

    from hedwig.client.twisted import Client

    client = Client(reactor, address, max_in_flight=2 * IN_FLIGHT)
    profile = cProfile.Profile()
    state = {"issued": 0, "done": 0, "error": None}
    total = WARMUP + messages

    def issue():
        state["issued"] += 1
        client.publish("calls-twisted", PAYLOAD).addCallbacks(published, failed)

    def published(_seq):
        state["done"] += 1
        if state["done"] == WARMUP:
            profile.enable()
        if state["issued"] < total:
            issue()
        elif state["done"] == total:
            profile.disable()
            client.close().addBoth(lambda _: reactor.stop())

    def failed(failure):
        state["error"] = failure.getErrorMessage()
        reactor.stop()

    def run(_client):
        for _ in range(IN_FLIGHT):
            issue()

    client.connect().addCallbacks(run, failed)
    reactor.run()
    if state["error"] is not None:
        raise RuntimeError(state["error"])
    return {"twisted_publish": per_message(profile, messages)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000, help="messages counted per figure (50,000)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    report = report_start("client_calls", argv, payload_bytes=len(PAYLOAD), in_flight=IN_FLIGHT)
    with (
        tempfile.TemporaryDirectory(prefix="client-calls-") as directory,
        HubProcess(os.path.join(directory, "hub"), cwd=ROOT) as hub,
    ):
        report.update(asyncio.run(aio_figures(hub.address, args.messages)))
        report.update(twisted_figures(hub.address, args.messages))
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
