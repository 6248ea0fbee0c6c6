"""A region's hub made of real parts (in-memory ledgers, SQLite metadata, the real topic
logs, cache, delivery manager and region manager) on a deterministic Clock, and peers
speaking to it through StringTransports: no sockets, no sleeps."""

import itertools

from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport

from hedwig.cache.readahead import ReadAheadCache
from hedwig.config import Config
from hedwig.delivery.manager import DeliveryManager
from hedwig.hub.connection import HubFactory
from hedwig.hub.core import Hub
from hedwig.hub.topics import TopicManager
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.log.manager import TopicLogManager
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import Op, encode_entry_header, encode_message_set
from hedwig.protocol.requests import encode_hello
from hedwig.region.manager import RegionManager
from tests.hub.harness import Peer

_ports = itertools.count(41000)


def fired(d):
    """The result of a Deferred that must have fired (a Failure is raised)."""
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def failure_of(d):
    out = []
    d.addBoth(out.append)
    assert out and hasattr(out[0], "check"), f"expected a failure, got {out}"
    return out[0]


def entry(first_seq, payloads, origin="far", origin_seq=None, via=b"", properties=None):
    """A stored entry's bytes, as a neighbour would relay them."""
    origin_seq = first_seq if origin_seq is None else origin_seq
    header = encode_entry_header(
        first_seq, len(payloads), 1_700_000_000_000_000, origin.encode(), origin_seq, via
    )
    return header + encode_message_set(payloads, properties)


class RegionHarness:
    def __init__(
        self,
        tmp_path,
        name="mid",
        parent="",
        reactor=None,
        data_dir=None,
        ledgers=None,
        metadata=None,
        rng=None,
        **region,
    ):
        """`ledgers` / `metadata`: the stores of a hub this one restarts."""
        config = Config()
        config.region.name = name
        config.region.parent = parent
        if parent:
            config.region.parent_address = region.pop("parent_address", "127.0.0.1:4999")
        for key, value in region.items():
            setattr(config.region, key, value)
        self.config = config
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        self.ledgers = ledgers or MemoryLedgerStore()
        self.metadata = metadata or SqliteMetadataStore(str(tmp_path / f"{name}-metadata.sqlite3"))
        self.logs = TopicLogManager(self.ledgers, self.metadata, config.log, name, self.clock)
        self.topics = TopicManager(self.logs, self.metadata)
        self.cache = ReadAheadCache(self.clock, config.cache)
        self.delivery = DeliveryManager(self.cache, self.metadata, self.clock, config.delivery)
        self.hub = Hub(
            topics=self.topics,
            cache=self.cache,
            delivery=self.delivery,
            config=config,
            clock=self.clock,
            name="127.0.0.1:4080",
        )
        if reactor is None:  # a child's link connects: a reactor that records it
            reactor = MemoryReactorClock() if parent else self.clock
        self.reactor = reactor
        self.regions = RegionManager(self.hub, config, reactor, data_dir=data_dir, rng=rng)
        self.factory = HubFactory(self.hub)

    def start(self):
        fired(self.regions.start())
        return self

    def connect(self, greet: bool = True) -> Peer:
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

    def log(self, topic):
        return fired(self.topics.acquire(topic))

    def stored(self, topic):
        """(origin, origin_seq, payload, via) of every message of the topic's log."""
        from hedwig.protocol import decode_entry, decode_entry_header

        log = self.log(topic)
        out = []
        if log.last_seq < 1:
            return out
        for e in fired(log.read(1, 1_000_000, 1 << 30)):
            via = decode_entry_header(e.data).via
            out += [
                (m.origin_region, m.origin_seq, bytes(m.payload), via) for m in decode_entry(topic, e.data)
            ]
        return out
