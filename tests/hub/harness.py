"""A hub made of real parts (in-memory ledgers, SQLite metadata, the real topic logs,
cache and delivery manager) on a deterministic Clock, and peers speaking to it through
StringTransports: the connection protocol tested byte for byte, without sockets."""

import itertools

from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import LogLevel, globalLogPublisher

from hedwig.config.settings import Config
from hedwig.hub.assembly import assemble_hub
from hedwig.hub.connection import HubFactory
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import FrameDecoder, Op, encode_frame, encode_message_set, parse_delivery, parse_event
from hedwig.protocol.requests import encode_hello, encode_publish
from hedwig.protocol.responses import decode_response
from tests.hub.declared import declared

_ports = itertools.count(40000)


class HubHarness:
    def __init__(
        self,
        tmp_path,
        config: Config | None = None,
        *,
        region: str | None = None,
        ledgers=None,
        metadata=None,
        relays: bool = False,
        relay_reactor=None,
        data_dir=None,
        rng=None,
    ):
        """`ledgers` / `metadata`: the stores of a hub this one restarts (by default new
        ones: in-memory ledgers, SQLite metadata in tmp_path). `relays`: with region
        relays, linking through `relay_reactor` (default: the harness's clock)."""
        self.config = config or Config()
        self.clock = Clock()
        self.clock.advance(1_700_000_000)  # a plausible wall clock for publish times
        self.ledgers = MemoryLedgerStore() if ledgers is None else ledgers
        if metadata is None:
            metadata = SqliteMetadataStore(str(tmp_path / "metadata.sqlite3"))
        self.metadata = metadata
        if region is not None:
            self.config.region.name = region
        self.parts = assemble_hub(
            self.config,
            self.clock,
            ledgers=self.ledgers,
            metadata=self.metadata,
            name="127.0.0.1:4080",
            relays=relays,
            relay_reactor=relay_reactor,
            data_dir=data_dir,
            rng=rng,
        )
        self.logs, self.cache = self.parts.topic_logs, self.parts.cache
        self.topics, self.delivery, self.hub = self.parts.topics, self.parts.delivery, self.parts.hub
        self.regions = self.parts.relays
        self.factory = HubFactory(self.hub)

    def connect(self, greet: bool = True) -> "Peer":
        """A new client connection (from a port of its own), greeted unless `greet` is False."""
        address = IPv4Address("TCP", "127.0.0.1", next(_ports))
        connection = self.factory.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        connection.makeConnection(transport)
        peer = Peer(connection, transport)
        if greet:
            peer.send(Op.HELLO, encode_hello("test"))
            [(_request_id, response)] = peer.responses()
            assert response.status == 0, response
        return peer

    def stored_entries(self) -> int:
        """Entries appended to any ledger so far."""
        return self.ledgers.appends


class Peer:
    """One client connection: sends frames, decodes everything the hub wrote."""

    def __init__(self, connection, transport):
        self.connection = connection
        self.transport = transport
        self._request_ids = itertools.count(1)
        self._decoder = FrameDecoder(1 << 30)

    def send(self, op: int, body: bytes = b"", request_id: int | None = None) -> int:
        request_id = next(self._request_ids) if request_id is None else request_id
        self.connection.dataReceived(encode_frame(op, request_id, body))
        return request_id

    def send_raw(self, data: bytes) -> None:
        self.connection.dataReceived(data)

    def publish(self, topic: str, payloads, properties=None) -> int:
        return self.send(Op.PUBLISH, encode_publish(topic, encode_message_set(payloads, properties)))

    def frames(self) -> list:
        """Every frame written since the last call: (op, request id, body)."""
        written = self.transport.value()
        self.transport.clear()
        return self._decoder.feed(written)

    def responses(self) -> list:
        """[(request id, Response)]; fails if anything but responses arrived."""
        out = []
        for op, request_id, body in self.frames():
            assert op == Op.RESPONSE, f"expected a RESPONSE, got op {op}"
            out.append((request_id, declared(decode_response(body))))
        return out

    def split(self) -> tuple[list, list, list]:
        """(responses, deliveries (handle, start, stop, entry bytes), events (handle, event))
        written since the last call."""
        responses, deliveries, events = [], [], []
        for op, request_id, body in self.frames():
            if op == Op.RESPONSE:
                responses.append((request_id, declared(decode_response(body))))
            elif op == Op.DELIVERY:
                handle, start, stop, entry = parse_delivery(body)
                deliveries.append((handle, start, stop, bytes(entry)))
            elif op == Op.EVENT:
                events.append(parse_event(body))
            else:
                raise AssertionError(f"unexpected op {op} from the hub")
        return responses, deliveries, events

    def disconnect(self) -> None:
        self.connection.connectionLost(None)

    @property
    def closing(self) -> bool:
        """The hub asked the transport to close."""
        return self.transport.disconnecting


class LogCapture:
    """Warnings and worse the hub logs, through twisted.logger."""

    def __init__(self):
        self.events = []

    def __call__(self, event):
        if event.get("log_level") is not None and event["log_level"] >= LogLevel.warn:
            self.events.append(event)

    def __enter__(self):
        globalLogPublisher.addObserver(self)
        return self

    def __exit__(self, *exc):
        globalLogPublisher.removeObserver(self)

    def about(self, peer: "Peer") -> list:
        return [e for e in self.events if e.get("peer") == peer.connection.peer]
