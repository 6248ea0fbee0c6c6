"""A region's hub made of real parts (in-memory ledgers, SQLite metadata, the real topic
logs, cache, delivery manager and region manager) on a deterministic Clock, and peers
speaking to it through StringTransports: no sockets, no sleeps."""

from twisted.internet.testing import MemoryReactorClock

from hedwig.config.settings import Config
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.testing.deferreds import failure_of as failure_of
from hedwig.testing.deferreds import fired
from tests.hub.harness import HubHarness


def entry(first_seq, payloads, origin="far", origin_seq=None, via=b"", properties=None):
    """A stored entry's bytes, as a neighbour would relay them."""
    origin_seq = first_seq if origin_seq is None else origin_seq
    header = encode_entry_header(
        first_seq, len(payloads), 1_700_000_000_000_000, origin.encode(), origin_seq, via
    )
    return header + encode_message_set(payloads, properties)


class RegionHarness(HubHarness):
    """The hub harness with a region manager: a region's hub named `name`, child of
    `parent` (a name; "" for a root)."""

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
        if metadata is None:  # one file per region: the harnesses of a test share tmp_path
            metadata = SqliteMetadataStore(str(tmp_path / f"{name}-metadata.sqlite3"))
        if reactor is None and parent:  # a child's link connects: a reactor that records it
            reactor = MemoryReactorClock()
        super().__init__(
            tmp_path,
            config,
            ledgers=ledgers,
            metadata=metadata,
            relays=True,
            relay_reactor=reactor,
            data_dir=data_dir,
            rng=rng,
        )
        self.reactor = reactor or self.clock

    def start(self):
        fired(self.regions.start())
        return self

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
