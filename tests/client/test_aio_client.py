"""The asyncio client (hedwig.client.aio) against real hub processes on 127.0.0.1: the
fourth driver of the protocol session, with the other clients' positions, redirects and
typed errors. Each test runs its own event loop (asyncio.run)."""

import asyncio
import socket

import pytest

from hedwig.client import Client as BlockingClient
from hedwig.client.aio import Client
from hedwig.client.errors import (
    CouldNotConnect,
    InvalidTopic,
    MessageTooLarge,
    NoDeliveries,
    PublishQueueFull,
    SubscriptionClosed,
    TooManyRedirects,
)
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import refusing_port
from tests.client.redirector import Redirector
from tests.client.test_tls_clients import TlsHub

WAIT_S = 20.0  # a hub restart may stand between two messages


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def take(subscription, count):
    """`count` messages, each within WAIT_S (None from receive fails the test), each
    acknowledged as an application would once it processed it."""
    messages = []
    for _ in range(count):
        message = await subscription.receive(timeout=WAIT_S)
        assert message is not None, f"only {len(messages)} of {count} messages arrived"
        messages.append(message)
        await subscription.ack(message)
    return messages


def test_concurrent_publishes_share_message_sets_and_get_dense_seq_ids_in_call_order(hub):
    async def scenario():
        async with Client(hub.address, max_in_flight=1000) as client:
            subscription = await client.subscribe("aio-inflight", "s")
            seqs = await asyncio.gather(*[client.publish("aio-inflight", b"%d" % i) for i in range(5000)])
            assert seqs == list(range(1, 5001))
            got = await take(subscription, 5000)
            assert [m.seq for m in got] == seqs
            assert [m.payload for m in got[:3]] == [b"0", b"1", b"2"]
            # Batched: far fewer entries than messages.
            described = await client.describe("aio-inflight")
            return described

    described = run(scenario())
    assert described["last_seq"] == 5000


def test_publish_many_properties_text_payloads_reads_and_async_iteration(hub):
    async def scenario():
        async with Client(hub.address) as client:
            subscription = await client.subscribe("aio-many", "s", start="earliest")
            assert await client.publish_many("aio-many", [b"a", b"b"], [{"k": b"v"}, None]) == [1, 2]
            assert await client.publish("aio-many", "text", {"source": b"cli"}) == 3
            got = []
            async for message in subscription:
                got.append(message)
                await subscription.ack(message)
                if message.seq == 3:
                    await subscription.close()
            read = await client.read("aio-many", 2)
            return got, read

    got, read = run(scenario())
    assert [(m.seq, m.payload, m.properties) for m in got] == [
        (1, b"a", {"k": b"v"}),
        (2, b"b", {}),
        (3, b"text", {"source": b"cli"}),
    ]
    assert [m.payload for m in read] == [b"b", b"text"]


def test_a_subscription_resumes_after_a_hub_crash_without_gap_or_duplicate(own_hub):
    own_hub.start()

    async def scenario():
        async with Client(own_hub.address, window=10) as client:
            subscription = await client.subscribe("aio-crash", "s", start="earliest")
            await client.publish_many("aio-crash", [b"%d" % i for i in range(1, 101)])
            before = await take(subscription, 40)
            await asyncio.to_thread(own_hub.kill)
            await asyncio.to_thread(own_hub.restart)
            with BlockingClient(own_hub.address) as publisher:
                assert publisher.publish_many("aio-crash", [b"%d" % i for i in range(101, 201)])[0] == 101
            after = await take(subscription, 160)
            # Nothing came twice: the next message is one published after them all.
            assert await client.publish("aio-crash", b"marker") == 201
            marker = await subscription.receive(timeout=WAIT_S)
            return before + after, marker

    messages, marker = run(scenario())
    assert [m.seq for m in messages] == list(range(1, 201))
    assert [m.payload for m in messages] == [b"%d" % i for i in range(1, 201)]
    assert marker.payload == b"marker"


def test_redirects_are_followed_and_loops_refused(hub):
    owner = hub.address
    with Redirector(owner) as redirector, Redirector("") as nowhere:

        async def scenario():
            async with Client(redirector.address) as client:
                seq = await client.publish("aio-redirected", b"x")
                # Remembered: the next request goes straight to the owner.
                asked = len(redirector.requests)
                await client.publish("aio-redirected", b"y")
                again = len(redirector.requests)
            async with Client(nowhere.address) as client:
                with pytest.raises(TooManyRedirects):
                    await client.publish("aio-nowhere", b"x")
            return seq, asked, again

        seq, asked, again = run(scenario())
    assert seq >= 1 and asked == again == 1


def test_errors_are_the_typed_errors_of_the_other_clients(hub):
    async def scenario():
        async with Client(hub.address) as client:
            with pytest.raises(InvalidTopic):
                await client.publish("bad topic!", b"x")
            with pytest.raises(MessageTooLarge):
                hello = client._connections.known(client._routes.default).hello
                await client.publish("aio-big", b"x" * (hello.max_message_bytes + 1))
            first = await client.subscribe("aio-forced", "s")
            async with Client(hub.address) as other:
                await other.subscribe("aio-forced", "s", force_attach=True)
                with pytest.raises(SubscriptionClosed, match="forced closed"):
                    await first.receive(timeout=WAIT_S)
            ack_only = await client.subscribe("aio-ackonly", "s", start="earliest", deliver=False)
            with pytest.raises(NoDeliveries):
                await ack_only.receive()
            await client.publish_many("aio-ackonly", [b"1", b"2", b"3"])
            await ack_only.ack(2)
            described = await client.describe("aio-ackonly")
            [row] = [r for r in described["subscribers"] if r["subscriber_id"] == "s"]
            return row

    row = run(scenario())
    assert row["consumed_seq"] == 2


def test_no_hub_reachable_is_could_not_connect():
    with refusing_port() as port:

        async def scenario():
            with pytest.raises(CouldNotConnect, match="no hub reachable"):
                await Client(f"127.0.0.1:{port}", connect_timeout=2).connect()

        run(scenario())


def test_a_hub_that_never_answers_hello_is_could_not_connect():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]

        async def scenario():
            with pytest.raises(CouldNotConnect, match="HELLO unanswered"):
                await Client(f"127.0.0.1:{port}", connect_timeout=0.5).connect()

        run(scenario())


def test_publish_and_subscribe_over_tls(tmp_path):
    hub = TlsHub(tmp_path / "hub", Authority(tmp_path / "pki")).start()
    try:

        async def scenario():
            async with Client(hub.tls_address, tls=hub.trust()) as client:
                subscription = await client.subscribe("aio-tls", "s", start="earliest")
                assert await client.publish_many("aio-tls", [b"secret", b"too"]) == [1, 2]
                return [m.payload for m in await take(subscription, 2)]

        assert run(scenario()) == [b"secret", b"too"]
    finally:
        hub.stop()


def test_publish_many_takes_str_payloads_as_utf8(hub):
    from hedwig.client import Client as Blocking
    from hedwig.client.aio import Client

    async def publish():
        async with Client(hub.address) as client:
            return await client.publish_many("aio-text", ["héllo", b"raw"])

    assert asyncio.run(publish()) == [1, 2]
    with Blocking(hub.address) as blocking:
        assert [bytes(m.payload) for m in blocking.read("aio-text")] == ["héllo".encode(), b"raw"]


def test_publishes_past_max_queued_are_refused_at_once_and_the_rest_are_stored(hub):
    """The Twisted client's backpressure, the asyncio client's too (batching.py)."""

    async def main():
        async with Client(hub.address, max_in_flight=1, max_queued=2) as client:
            outcomes = await asyncio.gather(
                *(client.publish("aio-queue-full", b"m%d" % i) for i in range(3)), return_exceptions=True
            )
            assert outcomes[:2] == [1, 2]
            assert isinstance(outcomes[2], PublishQueueFull)
            assert (client.in_flight, client.queued) == (0, 0)
            return [m.payload for m in await client.read("aio-queue-full")]

    assert run(main()) == [b"m0", b"m1"]
