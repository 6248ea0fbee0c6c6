"""The topic logs a hub has open, over one ledger store and one metadata store.

Opening a topic acquires it (hedwig.topiclog.acquire); concurrent opens of one topic share that
one acquisition, and an open topic's log is returned as it is. A log that closes (or fails
and closes itself) leaves the manager, so the next open acquires the topic afresh.
"""

from dataclasses import dataclass, field

from twisted.internet.defer import DeferredList, fail, inlineCallbacks, maybeDeferred, succeed
from twisted.logger import Logger

from hedwig.concurrency.deferreds import OpQueue, SharedOperations
from hedwig.config.settings import LogSettings
from hedwig.ledger.interface import LedgerError, NoSuchLedger
from hedwig.meta.interface import ledger_ids as ledger_ids_of
from hedwig.protocol.entry import decode_entry_header
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.names import InvalidName, check_topic
from hedwig.topiclog.ack_gate import AckGate
from hedwig.topiclog.acquire import acquire_topic
from hedwig.topiclog.errors import LogClosed, LogError
from hedwig.topiclog.locator import EntryLocator
from hedwig.topiclog.topic_log import TopicLog

_logger = Logger()


@dataclass
class Sweep:
    """What sweep_ledgers did: ledgers deleted (recorded as garbage), empty ledgers
    deleted (no topic names them), and ledgers kept because no topic names them and the
    metadata does not record them as garbage, with what each holds."""

    deleted: list = field(default_factory=list)
    empty: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    described: dict = field(default_factory=dict)


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
        # topic -> its deletion or release (the topic leaves this hub): opens wait for it
        self._leaving = SharedOperations()
        self._closed = False
        self.gate = AckGate()  # held while the hub cannot tell whether it owns its topics
        self.on_log_closed = None  # callable(topic_log) once a log closed (or failed and closed)
        # topic -> the options (a compacted topic) it gets if an acquisition creates it
        # (Hub.create_topic sets them before acquiring; an existing topic keeps its own).
        self.new_topic_options: dict[str, dict] = {}

    def open(self, topic: str):
        """Deferred[TopicLog]: the topic's log, acquiring the topic if it is not open here."""
        if self._closed:
            return fail(LogClosed("the topic log manager is closed"))
        try:
            topic = check_topic(topic)
        except InvalidName as e:
            return fail(e)
        deleting = self._leaving.wait(topic)
        if deleting is not None:  # a publish after a delete creates the topic afresh
            return deleting.addBoth(lambda _: self.open(topic))
        existing = self._logs.get(topic)
        if existing is not None and existing.is_open:
            return succeed(existing)
        return self._opening.run(topic, self._acquire, topic, existing)

    def delete_topic(self, topic: str):
        """Delete the topic: its log closes (the appends it accepted finish), then, as one
        operation of the topic's queue, its record goes with its ledgers recorded as
        garbage in the same transaction, then their files. Opens of the topic meanwhile
        wait and create it afresh. Deferred[list of the ledger ids deleted]; None when
        the topic does not exist. Its subscriptions are the delivery manager's to delete
        first."""
        if self._closed:
            return fail(LogClosed("the topic log manager is closed"))
        deleting = self._leaving.wait(topic)
        if deleting is not None:  # a second delete meanwhile: None once the first is done
            return deleting.addBoth(lambda _: None)
        return self._leaving.run(topic, self._delete, topic)

    def leaving(self, topic: str):
        """Deferred firing once the topic's deletion or release under way is done; None
        when there is none."""
        return self._leaving.wait(topic)

    def release_topic(self, topic: str):
        """Close the topic's log here and leave its records as they are: the topic goes
        to another hub (hedwig.hub.zk_topics), which recovers its ledger. Opens meanwhile
        wait, then acquire it afresh. Deferred[TopicLog | None]: the log closed, None when
        it was not open here."""
        leaving = self._leaving.wait(topic)
        if leaving is not None:  # deleted or released already: nothing left open
            return leaving.addBoth(lambda _: None)
        return self._leaving.run(topic, self._close_log, topic)

    @inlineCallbacks
    def _close_log(self, topic: str):
        opening = self._opening.wait(topic)
        if opening is not None:
            yield opening.addErrback(lambda _f: None)
        topic_log = self._logs.get(topic)
        if topic_log is not None:
            yield topic_log.close()
        return topic_log

    @inlineCallbacks
    def _delete(self, topic: str):
        yield self._close_log(topic)
        deleted = yield self.topic_ops.run(topic, self._delete_record, topic)
        return deleted

    @inlineCallbacks
    def _delete_record(self, topic: str):
        versioned = yield self.metadata.get_topic(topic)
        if versioned is None:
            return None
        ledger_ids = sorted(set(ledger_ids_of(versioned.value)))
        yield self.metadata.delete_topic(topic, versioned.version, ledger_ids)
        gone = []
        for ledger_id in ledger_ids:
            self.locator.forget(ledger_id)
            try:
                yield maybeDeferred(self.ledgers.delete, ledger_id)
            except LedgerError as e:  # still recorded as garbage: the next start's sweep tries again
                _logger.warn(
                    "topic {topic}: could not delete ledger {ledger_id}: {error}",
                    topic=topic,
                    ledger_id=ledger_id,
                    error=e,
                )
                continue
            gone.append(ledger_id)
        if gone:
            try:
                yield self.metadata.forget_garbage(gone)
            except Exception as e:  # the next sweep forgets records of ledgers already gone
                _logger.warn("topic {topic}: could not forget deleted ledgers: {error}", topic=topic, error=e)
        _logger.info("topic {topic} deleted with ledgers {ids}", topic=topic, ids=gone)
        return gone

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
            gate=self.gate,
            new_options=self.new_topic_options.get(topic),
        )
        if self._closed:  # the manager closed while the topic was being acquired
            yield topic_log.close()
            raise LogClosed("the topic log manager is closed")
        self._logs[topic] = topic_log
        return topic_log

    def _log_closed(self, topic_log: TopicLog) -> None:
        if self._logs.get(topic_log.topic) is topic_log:
            del self._logs[topic_log.topic]
        if self.on_log_closed is not None:
            self.on_log_closed(topic_log)

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
    def sweep_ledgers(self):
        """Delete the ledgers the metadata records as garbage (a topic dropped them, and
        the process died or failed before their files were gone); report the others no
        topic names. Deferred[Sweep].

        A ledger with entries is deleted only on the metadata's positive word: a ledger
        the metadata does not know may be a topic's data whose record was lost (a damaged
        or restored metadata file), so it is kept, and reported for an operator to look
        at. An empty one holds nothing to lose, and no topic uses it (no record names it,
        and none can be writing it: called before opening any topic, so that no ledger is
        between its creation and the ranges naming it): it is what a process that died
        between creating a ledger and recording it left (a roll, a compaction), deleted."""
        if self._logs or self._opening:
            raise LogError("ledgers can only be swept before any topic is opened")
        named = set()
        for topic in (yield self.metadata.list_topics()):
            versioned = yield self.metadata.get_topic(topic)
            if versioned is not None:
                named.update(r[0] for r in versioned.value)
        garbage = yield self.metadata.list_garbage()
        stored = set(self.ledgers.list_ledgers())
        sweep = Sweep()
        for ledger_id in sorted(stored - named):
            if ledger_id in garbage:
                try:
                    yield maybeDeferred(self.ledgers.delete, ledger_id)
                except LedgerError as e:  # its record stays: the next start tries again
                    _logger.warn(
                        "could not delete garbage ledger {ledger_id}: {error}", ledger_id=ledger_id, error=e
                    )
                    continue
                sweep.deleted.append(ledger_id)
            elif (yield self._describe(ledger_id)) == "empty":
                try:
                    yield maybeDeferred(self.ledgers.delete, ledger_id)
                except LedgerError as e:
                    _logger.warn(
                        "could not delete empty ledger {ledger_id}: {error}", ledger_id=ledger_id, error=e
                    )
                    continue
                sweep.empty.append(ledger_id)
            else:
                sweep.unknown.append(ledger_id)
        # Records of ledgers deleted now or before (a crash after the deletion); a record
        # of a ledger some topic names (never written so) is left alone.
        done = sorted(set(garbage) - named - set(self.ledgers.list_ledgers()))
        if done:
            yield self.metadata.forget_garbage(done)
        for ledger_id in sweep.unknown:
            sweep.described[ledger_id] = yield self._describe(ledger_id)
        return sweep

    @inlineCallbacks
    def sweep_garbage(self, owned_elsewhere=None):
        """On storage shared with other hubs (which create, write and drop ledgers while
        this one starts): delete the ledgers the metadata records as garbage and forget
        their records; report nothing else. Deferred[list of the ledger ids deleted].

        A ledger its topic's ranges name is kept, record and all, whatever the record
        says: a compaction's new ledger is recorded as garbage until its swap into the
        ranges is done and the record forgotten (hedwig.topiclog.compaction), and a hub
        that starts in between (or after its compactor died there) must not delete it.
        The ranges are read after the records, so a swap done by then is seen.

        Before the swap, the ranges do not name it yet: the records of a compacted topic
        that another hub owns are that owner's (`owned_elsewhere(topic)`: Deferred[bool],
        asked after the records were read, so an owner that recorded one is seen), which
        deletes them when it acquires the topic. Any other record is of a ledger no
        range will name again (one a change of ranges dropped): deleted at once."""
        garbage = yield self.metadata.list_garbage()
        named = {}  # topic -> the ledgers its ranges name
        left = set()  # records of compacted topics another hub owns
        for topic in sorted(set(garbage.values())):
            versioned = yield self.metadata.get_topic(topic) if topic else None
            named[topic] = {r[0] for r in versioned.value} if versioned is not None else set()
            compacted = versioned is not None and (versioned.options or {}).get("compaction")
            if compacted and owned_elsewhere is not None and (yield owned_elsewhere(topic)):
                ledger_ids = sorted(i for i, t in garbage.items() if t == topic)
                _logger.info(
                    "ledgers {ids} are recorded as garbage of compacted topic {topic}, which another"
                    " hub owns: left to it",
                    ids=ledger_ids,
                    topic=topic,
                )
                left.update(ledger_ids)
        gone = []
        for ledger_id in sorted(garbage):
            if ledger_id in left:
                continue
            if ledger_id in named[garbage[ledger_id]]:
                _logger.info(
                    "ledger {ledger_id} is recorded as garbage but topic {topic} names it: kept",
                    ledger_id=ledger_id,
                    topic=garbage[ledger_id],
                )
                continue
            try:
                yield maybeDeferred(self.ledgers.delete, ledger_id)
            except NoSuchLedger:
                pass  # deleted already (by its topic's owner, or another hub's sweep)
            except LedgerError as e:
                _logger.warn(
                    "could not delete garbage ledger {ledger_id}: {error}", ledger_id=ledger_id, error=e
                )
                continue
            gone.append(ledger_id)
        if gone:
            yield self.metadata.forget_garbage(gone)
        return gone

    @inlineCallbacks
    def _describe(self, ledger_id: int):
        """Deferred[str]: what an unknown ledger holds, for the operator: its seq-ids, or
        that it is empty."""
        try:
            yield maybeDeferred(self.ledgers.load, ledger_id)  # (a pool's ledger: known once loaded)
            last = self.ledgers.last_entry_id(ledger_id)
            if last < 0:
                return "empty"
            (first_data,) = yield self.ledgers.read(ledger_id, 0, 0, 1)
            (last_data,) = yield self.ledgers.read(ledger_id, last, last, 1)
            first, final = decode_entry_header(first_data), decode_entry_header(last_data)
        except (LedgerError, MessageSetError) as e:
            return f"unreadable ({e})"
        return f"seq-ids {first.first_seq}..{final.last_seq} in {last + 1} entries"

    @inlineCallbacks
    def close(self):
        """Close every open log (waiting for opens in progress); later opens fail."""
        self._closed = True
        yield DeferredList(self._opening.wait_all(), consumeErrors=True)
        yield DeferredList([topic_log.close() for topic_log in list(self._logs.values())], consumeErrors=True)
