"""The asyncio subscriber's acknowledgements, as the blocking one's
(tests/client/test_blocking_acks.py): one CONSUME per `ack_every` seq-ids for a
subscriber keeping up with a stream, not one per delivery; the rest `ack_delay` after
the last ack, or before a receive gives up."""

import asyncio

from hedwig.client import Client as BlockingClient
from hedwig.client.aio import Client
from tests.client.test_aio_client import run
from tests.client.test_blocking_acks import consumes_through


def consumes_sent(client, each=None) -> list:
    """The seq-ids of the CONSUMEs `client` sends from now on (`each` called after each)."""
    return consumes_through(client._connections.known(client._routes.default), each)


def _consumed(hub, topic: str) -> int:
    with BlockingClient(hub.address) as client:
        [state] = [s for s in client.describe(topic)["subscribers"] if s["subscriber_id"] == "s"]
    return state["consumed_seq"]


def test_a_subscriber_keeping_up_with_a_stream_sends_one_consume_per_ack_every(hub):
    async def scenario():
        async with (
            Client(hub.address, ack_every=10, ack_delay=30) as client,
            Client(hub.address) as publisher,
        ):
            subscription = await client.subscribe("aio-kept-up", "s")
            sent = consumes_sent(client)
            for seq in range(1, 26):
                # The subscription waits (from the task's first step) before it is published.
                receiving = asyncio.ensure_future(subscription.receive(timeout=30))
                assert await publisher.publish("aio-kept-up", b"%d" % seq) == seq
                message = await receiving
                assert message.seq == seq
                await subscription.ack(message)
            kept_up = list(sent)
            # Nothing more to come: the rest goes out before the receive gives up (here
            # sooner than ack_delay).
            assert await subscription.receive(timeout=0.2) is None
            return kept_up, list(sent)

    kept_up, after_waiting = run(scenario())
    assert kept_up == [10, 20]
    assert after_waiting == [10, 20, 25]
    assert _consumed(hub, "aio-kept-up") == 25


def test_an_idle_subscribers_ack_goes_out_while_it_waits(hub):
    async def scenario():
        async with Client(hub.address, ack_every=100, ack_delay=0.05) as client:
            subscription = await client.subscribe("aio-idle-ack", "s")
            acked = asyncio.Event()
            sent = consumes_sent(client, each=acked.set)
            await client.publish("aio-idle-ack", b"one")
            await subscription.ack(await subscription.receive(timeout=30))
            assert sent == []  # (short of ack_every, and not waiting yet)

            async def publish_once_acked():
                await acked.wait()
                await client.publish("aio-idle-ack", b"two")

            # The next message is published only once the ack has gone out: the receive
            # returns it only if the ack left while the subscription waited.
            later = asyncio.ensure_future(publish_once_acked())
            message = await subscription.receive(timeout=30)
            await later
            return message, sent

    message, sent = run(scenario())
    assert message.payload == b"two" and sent == [1]
