"""One publisher, three subscribers, over the real topic log and ledger store: one caught
up, one 100,000 messages behind, one paused by backpressure."""

from hedwig.config.settings import LogSettings
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import encode_message_set
from hedwig.topiclog import TopicLogManager
from tests.delivery.harness import Harness, TurnClock, fired

MESSAGES_PER_ENTRY = 100
CACHE_BYTES = 100_000  # about 68 entries: far less than the backlog


class CountingLedgerStore(MemoryLedgerStore):
    def __init__(self):
        super().__init__()
        self.reads = 0

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        self.reads += 1
        return super().read(ledger_id, first_entry, last_entry, max_bytes)


def test_caught_up_lagging_and_paused_subscribers(tmp_path):
    clock = TurnClock()
    metadata = SqliteMetadataStore(tmp_path / "meta.db")
    store = CountingLedgerStore()
    logs = TopicLogManager(store, metadata, LogSettings(), "standalone", clock)
    log = fired(logs.open("scenario"))
    message_set = encode_message_set([b"m" * 10] * MESSAGES_PER_ENTRY)
    for _ in range(1000):  # 100,000 messages in the ledger, never in the cache
        fired(log.append(message_set, MESSAGES_PER_ENTRY))
    h = Harness(tmp_path, log=log, metadata=metadata, clock=clock, cache_bytes=CACHE_BYTES)
    manager, cache = h.manager, h.cache

    caught_up = h.channel()
    paused = h.channel(high_water=250)
    h.subscribe("caught-up", caught_up)
    h.subscribe("paused", paused)
    clock.turn()

    def step(drain_paused):
        fired(h.topic_log.append(message_set, MESSAGES_PER_ENTRY))
        clock.turn()
        for sid, channel in (("caught-up", caught_up), ("paused", paused), ("lagging", lagging)):
            if channel is not None and channel.next_seq:
                manager.consume("scenario", sid, channel.last_seq(1))
        if drain_paused:
            paused.drain()
        assert cache.bytes <= CACHE_BYTES

    lagging = None
    for i in range(20):
        step(drain_paused=i % 5 == 4)
    assert store.reads == 0, "pushes alone: nothing read from the ledger"
    assert caught_up.last_seq(1) == log.last_seq

    lagging = h.channel()
    result = h.subscribe("lagging", lagging, start="earliest")
    assert result["next_seq"] == 1 and log.last_seq - result["consumed_seq"] >= 100_000
    for i in range(60):
        step(drain_paused=i % 4 == 3)
        assert caught_up.last_seq(1) == log.last_seq, "every publish reaches the caught-up one at once"

    rows = {row["subscriber_id"]: row for row in manager.describe("scenario")}
    assert rows["caught-up"]["pulls"] == 0, "the caught-up subscriber never waited on the ledger"
    assert rows["lagging"]["pulls"] > 0 and store.reads > 0
    assert lagging.last_seq(1) == log.last_seq, "the lagging subscriber caught up"
    assert rows["lagging"]["state"] == "waiting"
    assert paused.calls_while_paused == 0 and paused.pauses >= 15

    # Caught up, the lagging one is now pushed to: the next publish needs no ledger read.
    reads, pushes = store.reads, rows["lagging"]["push_waits"]
    paused.drain()
    clock.turn()
    step(drain_paused=True)
    rows = {row["subscriber_id"]: row for row in manager.describe("scenario")}
    assert lagging.last_seq(1) == log.last_seq
    assert rows["lagging"]["push_waits"] > pushes
    for _ in range(20):  # the socket keeps draining; the channel pauses every 250 messages
        paused.drain()
        clock.turn()
    assert paused.last_seq(1) == log.last_seq, "the paused one resumed with no gap (checked per delivery)"
    assert store.reads >= reads
    cache_stats = cache.stats()
    assert cache_stats["evicted_fifo"] > 0 and cache_stats["bytes"] <= CACHE_BYTES
    fired(manager.stop())
    fired(logs.close())
