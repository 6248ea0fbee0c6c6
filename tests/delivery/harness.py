"""A delivery manager over a real SQLite metadata store and a Clock, for the tests here."""

from twisted.internet.task import Clock

from hedwig.cache import ReadAheadCache
from hedwig.config.settings import CacheSettings, DeliverySettings
from hedwig.delivery import DeliveryManager
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol.requests import Subscribe
from hedwig.testing.deferreds import failure_of as failure_of
from hedwig.testing.deferreds import fired
from tests.cache.controllable_log import ControllableLog
from tests.delivery.channels import RecordingChannel


def subscribe_request(
    topic,
    subscriber_id,
    *,
    mode="create_or_attach",
    start=None,
    window=None,
    force_attach=False,
    deliver=True,
    **options,
):
    """A SUBSCRIBE as the hub decodes it, with a client's defaults for what a test leaves
    out (`options`: kind, pull, ack_timeout_ms, max_deliveries, message_bound, ...)."""
    return Subscribe(topic, subscriber_id, mode, start, window, force_attach, deliver, **options)


class TurnClock(Clock):
    """A Clock whose turn() runs only the calls due when it starts, as one reactor
    iteration does (Clock.advance(0) would also run those scheduled meanwhile)."""

    def turn(self):
        due = [call for call in self.calls if call.getTime() <= self.seconds()]
        for call in due:
            self.calls.remove(call)
            call.called = 1
            call.func(*call.args, **call.kw)


class Harness:
    def __init__(self, tmp_path, *, log=None, metadata=None, clock=None, cache=None, **settings):
        cache_settings = {k: settings.pop(k) for k in list(settings) if hasattr(CacheSettings, k)}
        self.clock = clock or Clock()
        self.metadata = metadata or SqliteMetadataStore(tmp_path / "meta.db")
        self.cache = cache or ReadAheadCache(self.clock, CacheSettings(**cache_settings))
        self.manager = DeliveryManager(self.metadata, self.clock, DeliverySettings(**settings))
        self.log = log if log is not None else ControllableLog(auto_complete=True)
        self.topic_log = self.cache.wrap(self.log)  # what the hub hands delivery

    def channel(self, high_water=None):
        return RecordingChannel(self.manager, high_water)

    def request(self, sid, **kw):
        """A SUBSCRIBE of `sid` to the harness's topic."""
        return subscribe_request(self.log.topic, sid, **kw)

    def subscribe(self, sid, channel, handle=1, **kw):
        return fired(self.manager.subscribe(self.topic_log, channel, handle, self.request(sid, **kw)))

    def publish(self, count=1, size=100):
        return fired(self.topic_log.append(bytes(size), count))

    def turn(self):
        self.clock.advance(0)

    def record(self, sid):
        versioned = fired(self.metadata.get_subscription(self.log.topic, sid))
        return versioned.value if versioned is not None else None
