"""The topic logs a hub has open, over one ledger store and one metadata store.

Opening a topic acquires it (hedwig.topiclog.acquire); concurrent opens of one topic share that
one acquisition, and an open topic's log is returned as it is. A log that closes (or fails
and closes itself) leaves the manager, so the next open acquires the topic afresh.
"""

from twisted.internet.defer import DeferredList, fail, inlineCallbacks, maybeDeferred, succeed

from hedwig.concurrency import OpQueue, SharedOperations
from hedwig.protocol.names import InvalidName, check_topic
from hedwig.settings import LogSettings
from hedwig.topiclog.acquire import acquire_topic
from hedwig.topiclog.errors import LogClosed, LogError
from hedwig.topiclog.locator import EntryLocator
from hedwig.topiclog.topic_log import TopicLog


class TopicLogManager:
    def __init__(self, ledgers, metadata, settings: LogSettings, region: str, clock):
        self.ledgers = ledgers
        self.metadata = metadata
        self.settings = settings
        self.region = region
        self.clock = clock
        self.locator = EntryLocator(ledgers, settings.index_cache_bytes)
        self._logs: dict[str, TopicLog] = {}
        self._opening = SharedOperations()  # topic -> its acquisition
        # One operation at a time per topic, for every topic log of this manager (Hedwig's
        # TopicOpQueuer): their metadata writes queue here.
        self.topic_ops = OpQueue()
        self._closed = False

    def open(self, topic: str):
        """Deferred[TopicLog]: the topic's log, acquiring the topic if it is not open here."""
        if self._closed:
            return fail(LogClosed("the topic log manager is closed"))
        try:
            topic = check_topic(topic)
        except InvalidName as e:
            return fail(e)
        existing = self._logs.get(topic)
        if existing is not None and existing.is_open:
            return succeed(existing)
        return self._opening.run(topic, self._acquire, topic, existing)

    @inlineCallbacks
    def _acquire(self, topic: str, previous: TopicLog | None):
        if previous is not None:  # failed or closing: let it finish, then recover its ledger
            yield previous.close()
        topic_log = yield acquire_topic(
            topic,
            ledgers=self.ledgers,
            metadata=self.metadata,
            settings=self.settings,
            region=self.region,
            clock=self.clock,
            locator=self.locator,
            on_close=self._log_closed,
            topic_ops=self.topic_ops,
        )
        if self._closed:  # the manager closed while the topic was being acquired
            yield topic_log.close()
            raise LogClosed("the topic log manager is closed")
        self._logs[topic] = topic_log
        return topic_log

    def _log_closed(self, topic_log: TopicLog) -> None:
        if self._logs.get(topic_log.topic) is topic_log:
            del self._logs[topic_log.topic]

    def get(self, topic: str) -> TopicLog | None:
        """The topic's log when it is open here (and still taking appends)."""
        topic_log = self._logs.get(topic)
        return topic_log if topic_log is not None and topic_log.is_open else None

    def logs(self) -> list[TopicLog]:
        """Every open log (for garbage collection rounds and stats)."""
        return list(self._logs.values())

    def list_topics(self):
        """Deferred[list[str]]: every topic with metadata, sorted."""
        return self.metadata.list_topics()

    @inlineCallbacks
    def delete_orphan_ledgers(self):
        """Delete the store's ledgers that no topic's ranges name: a process that dies
        between creating a ledger and writing the ranges naming it (in an acquire or a
        roll) leaves one behind. Deferred[list[int]]: the ledgers deleted.

        Only safe while nobody is between those two steps: call it at startup, before
        opening any topic, on a ledger store this hub alone writes (the embedded mmap
        store); never on a store shared with other hubs."""
        if self._logs or self._opening:
            raise LogError("orphan ledgers can only be swept before any topic is opened")
        named = set()
        for topic in (yield self.metadata.list_topics()):
            versioned = yield self.metadata.get_topic(topic)
            if versioned is not None:
                named.update(r[0] for r in versioned.value)
        orphans = [ledger_id for ledger_id in self.ledgers.list_ledgers() if ledger_id not in named]
        for ledger_id in orphans:
            yield maybeDeferred(self.ledgers.delete, ledger_id)
        return orphans

    @inlineCallbacks
    def close(self):
        """Close every open log (waiting for opens in progress); later opens fail."""
        self._closed = True
        yield DeferredList(self._opening.wait_all(), consumeErrors=True)
        yield DeferredList([topic_log.close() for topic_log in list(self._logs.values())], consumeErrors=True)
