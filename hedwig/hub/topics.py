"""The topic manager: which topics this hub serves, opened once each.

Opening a topic acquires it (the log manager recovers and closes its previous ledger and
opens a new one); requests that arrive meanwhile wait on the same open and run, in
arrival order, once it is done, so the topic's single writer sees publishes in the order
the connections sent them. Ownership across hubs (NOT_RESPONSIBLE_FOR_TOPIC redirects)
plugs in here: an embedded hub owns every topic.
"""

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.hub.interface import ITopicManager


@implementer(ITopicManager)
class TopicManager:
    """The embedded hub's ITopicManager: it owns every topic."""

    log = Logger()

    def __init__(self, logs, metadata, cache):
        self._logs = logs  # hedwig.topiclog.manager.TopicLogManager
        self._cache = cache  # hands out each TopicLog decorated with the read-ahead cache
        self._metadata = metadata
        # Runs once per acquisition before any request uses the log (the delivery manager
        # loads the topic's durable subscriptions, so GC and pruning see them all).
        self.on_open = None
        self._opening: dict[str, list[Deferred]] = {}
        self._open: set[str] = set()

    def get(self, topic: str):
        """The topic's TopicLog if it is open here and ready, else None (the publish fast
        path; while an acquisition is finishing, requests queue behind it in order)."""
        if topic in self._opening:
            return None
        topic_log = self._logs.get(topic)
        return None if topic_log is None else self._cache.wrap(topic_log)

    def acquire(self, topic: str) -> Deferred:
        """Deferred[TopicLog]: the topic opened here, created if it never existed."""
        log = self.get(topic)
        if log is not None:
            return succeed(log)
        waiter = Deferred()
        waiters = self._opening.get(topic)
        if waiters is None:
            self._opening[topic] = [waiter]
            opened = self._logs.open(topic)
            opened.addCallback(self._cache.wrap)
            opened.addBoth(self._opened, topic)
        else:
            waiters.append(waiter)
        return waiter

    def _opened(self, result, topic: str) -> None:
        if isinstance(result, Failure) or self.on_open is None:
            self._ready(result, topic)
            return
        prepared = maybeDeferred(self.on_open, result)
        prepared.addErrback(lambda f: self.log.failure("preparing topic {topic} failed", f, topic=topic))
        prepared.addCallback(lambda _: self._ready(result, topic))

    def _ready(self, result, topic: str) -> None:
        waiters = self._opening.pop(topic)
        if isinstance(result, Failure):
            for waiter in waiters:
                waiter.errback(result)
            return
        self._open.add(topic)
        for waiter in waiters:
            waiter.callback(result)

    def exists(self, topic: str) -> Deferred:
        """Deferred[bool]: whether the topic has ever been created (here or in metadata)."""
        if topic in self._open or topic in self._opening:
            return succeed(True)
        return self._metadata.get_topic(topic).addCallback(lambda versioned: versioned is not None)

    def open_topics(self) -> list:
        """Names of the topics open here, sorted (for garbage collection)."""
        return sorted(self._open)

    def list_topics(self) -> Deferred:
        return self._logs.list_topics()

    def close(self) -> Deferred:
        self._open.clear()
        return self._logs.close()
