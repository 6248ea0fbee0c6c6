"""The topic manager: which topics this hub serves, opened once each.

Opening a topic acquires it (the log manager recovers and closes its previous ledger and
opens a new one); requests that arrive meanwhile wait on the same open and run, in
arrival order, once it is done, so the topic's single writer sees publishes in the order
the connections sent them. Ownership across hubs (NOT_RESPONSIBLE_FOR_TOPIC redirects)
plugs in here: an embedded hub owns every topic.
"""

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.concurrency.deferreds import SharedOperations
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
        self._opening = SharedOperations()  # topic -> its acquisition, shared by requests
        self._open: set[str] = set()
        # topic -> the decorated log its last acquisition made ready: get's answer while
        # that log is open (one lookup on every publish, instead of four calls).
        self._served = {}

    def get(self, topic: str):
        """The topic's TopicLog if it is open here and ready, else None (the publish fast
        path; while an acquisition is finishing, requests queue behind it in order)."""
        served = self._served.get(topic)
        if served is not None:
            if served.is_open:
                return served
            del self._served[topic]  # (its log closed: released, deleted, or it failed)
        if self._opening.running(topic):
            return None
        topic_log = self._logs.get(topic)
        return None if topic_log is None else self._cache.wrap(topic_log)

    def acquire(self, topic: str, place: bool = True) -> Deferred:
        """Deferred[TopicLog]: the topic opened here, created if it never existed (a hub
        alone owns every topic: `place` changes nothing)."""
        topic_log = self.get(topic)
        if topic_log is not None:
            return succeed(topic_log)
        return self._opening.run(topic, self._open_topic, topic)

    def acquire_existing(self, topic: str, missing: Exception) -> Deferred:
        """Deferred[TopicLog] of a topic that exists; fails with `missing` (creating
        nothing) when it never did. Requests acquiring the topic meanwhile join this
        opening, and fail with it: a user who may not create topics cannot create one
        by publishing or subscribing right behind (hedwig.auth.gate)."""
        topic_log = self.get(topic)
        if topic_log is not None:
            return succeed(topic_log)

        def open_if_exists(versioned):
            if versioned is None:
                raise missing
            return self._open_topic(topic)

        return self._opening.run(topic, lambda: self._metadata.get_topic(topic).addCallback(open_if_exists))

    def _open_topic(self, topic: str) -> Deferred:
        opened = self._logs.open(topic)
        opened.addCallback(self._cache.wrap)
        return opened.addCallback(self._prepare, topic)

    def _prepare(self, topic_log, topic: str):
        """Run on_open once per acquisition (a failure is logged: the topic still opens)."""
        if self.on_open is None:
            return self._ready(None, topic_log)
        prepared = maybeDeferred(self.on_open, topic_log)
        prepared.addErrback(lambda f: self.log.failure("preparing topic {topic} failed", f, topic=topic))
        return prepared.addCallback(self._ready, topic_log)

    def _ready(self, _prepared, topic_log):
        self._open.add(topic_log.topic)
        self._served[topic_log.topic] = topic_log
        return topic_log

    def exists(self, topic: str) -> Deferred:
        """Deferred[bool]: whether the topic has ever been created (here or in metadata)."""
        if topic in self._open or self._opening.running(topic):
            return succeed(True)
        return self._metadata.get_topic(topic).addCallback(lambda versioned: versioned is not None)

    def delete(self, topic: str) -> Deferred:
        """Deferred[list of ledger ids deleted | None]: the topic's log closes, its record
        goes with its ledgers (garbage first, then files) and its cached entries leave.
        Its subscriptions must be gone already (Hub.delete_topic)."""
        self._open.discard(topic)
        cached = self.get(topic)
        deleted = self._logs.delete_topic(topic)

        def forget(result):
            if cached is not None:
                cached.release()
            self._open.discard(topic)  # (an acquisition that raced the delete has closed)
            self._drop_served(topic)
            return result

        return deleted.addCallback(forget)

    def release(self, topic: str) -> Deferred:
        """Deferred[TopicLog | None]: close the topic's log here and leave its records and
        ledgers as they are (the topic goes to another hub of the region, which recovers
        its ledger); its cached entries leave. Requests for it meanwhile wait, then
        acquire it afresh (hedwig.hub.zk_topics decides where)."""
        opening = self._opening.wait(topic)
        if opening is not None:  # (its requests get the log first; their appends finish)
            return opening.addBoth(lambda _: self.release(topic))
        self._open.discard(topic)
        released = self._logs.release_topic(topic)

        def forget(topic_log):
            if topic_log is not None:
                self._cache.wrap(topic_log).release()
            self._open.discard(topic)
            self._drop_served(topic)
            return topic_log

        return released.addCallback(forget)

    def _drop_served(self, topic: str) -> None:
        """Forget the topic's decorated log once it is closed (nothing is kept of a topic
        that left; a log acquired again meanwhile stays)."""
        served = self._served.get(topic)
        if served is not None and not served.is_open:
            del self._served[topic]

    def open_topics(self) -> list:
        """Names of the topics open here, sorted (for garbage collection)."""
        return sorted(self._open)

    def list_topics(self) -> Deferred:
        return self._logs.list_topics()

    def close(self) -> Deferred:
        self._open.clear()
        return self._logs.close()
