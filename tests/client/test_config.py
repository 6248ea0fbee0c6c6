"""ClientConfig: every client option declared once, with its default and its check, for
the three clients; and a client that does no I/O until it is asked to connect."""

import asyncio
import socket

import pytest
from twisted.internet.testing import MemoryReactorClock

from hedwig.client import Client as BlockingClient
from hedwig.client.aio import Client as AioClient
from hedwig.client.config import DEFAULT_HUB, ClientConfig
from hedwig.client.errors import CouldNotConnect
from hedwig.client.twisted import Client as TwistedClient


def _make(kind, *args, **kwargs):
    if kind is TwistedClient:
        return TwistedClient(MemoryReactorClock(), *args, **kwargs)
    return kind(*args, **kwargs)


CLIENTS = (BlockingClient, TwistedClient, AioClient)


@pytest.mark.parametrize(
    "option, value",
    [
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", float("nan")),
        ("connect_timeout", "5"),
        ("reconnect_timeout", -1),
        ("ack_delay", float("inf")),
        ("max_redirects", -1),
        ("window", -5),
        ("window", 2.5),
        ("ack_every", 0),
        ("max_in_flight", 0),
        ("max_queued", True),
        ("max_batch_bytes", 0),
        ("client_name", 7),
        ("hubs", "host:port-is-no-number"),
        ("hubs", []),
        ("compression", "snappy"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(option, value):
    with pytest.raises(ValueError) as refused:
        ClientConfig(**{option: value})
    message = str(refused.value)
    assert "\n" not in message
    assert option in message


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.__module__)
def test_every_client_takes_a_config_and_keywords_over_it(kind):
    shared = ClientConfig(hubs="127.0.0.1:4999", timeout=7.0, window=None)
    client = _make(kind, config=shared, client_name="over")
    assert client.config == ClientConfig(hubs="127.0.0.1:4999", timeout=7.0, window=None, client_name="over")
    assert _make(kind, "127.0.0.1:5000", config=shared).config.hubs == "127.0.0.1:5000"
    assert _make(kind).config == ClientConfig(hubs=DEFAULT_HUB)
    with pytest.raises(TypeError, match="unknown client options \\['time_out'\\]"):
        _make(kind, time_out=3)
    with pytest.raises(ValueError, match="client option timeout=0"):
        _make(kind, timeout=0)


def test_the_blocking_client_refuses_the_batching_options_it_has_no_use_for():
    with pytest.raises(TypeError, match="max_in_flight"):
        BlockingClient(max_in_flight=5)
    # (a config shared with an event-loop client may carry them)
    assert BlockingClient(config=ClientConfig(max_in_flight=5)).config.max_in_flight == 5


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_blocking_client_connects_on_connect_not_when_made():
    address = f"127.0.0.1:{_closed_port()}"
    client = BlockingClient(address, connect_timeout=1.0)  # (nothing listens: made all the same)
    with pytest.raises(CouldNotConnect, match="no hub reachable"):
        client.connect()
    with (
        pytest.raises(CouldNotConnect, match="no hub reachable"),
        BlockingClient(address, connect_timeout=1.0),
    ):
        pass


def test_the_event_loop_clients_connect_on_connect_not_when_made():
    address = f"127.0.0.1:{_closed_port()}"
    reactor = MemoryReactorClock()
    TwistedClient(reactor, address)
    assert reactor.tcpClients == []  # (made, and nothing asked of the reactor)

    async def connect():
        client = AioClient(address, connect_timeout=1.0)
        with pytest.raises(CouldNotConnect, match="no hub reachable"):
            await client.connect()

    asyncio.run(connect())
