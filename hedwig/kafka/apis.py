"""The Kafka APIs a hub serves, each over the Hub's core API (hedwig.hub.core).

Each API is declared once, in a module's table of what it serves (served.py: its name,
the versions served and the method serving it); API_VERSIONS gathers this module's, the
groups' and SASL's (what ApiVersions answers). KafkaApis has one method per API taking
kio's request entity and returning
the response as a dict (or a Deferred of one; None: no response, Produce with acks=0),
which hedwig.kafka.envelope encodes for the request's version.

The mapping (docs/kafka.md): a hedwig topic is a Kafka topic of one partition (0), or
partition 0 of a topic of N, partition K being the hedwig topic `<topic>.p-K`
(hedwig.protocol.partitions); a Kafka offset is seq-id - 1, so the log start offset is
first_seq - 1 and the high watermark last_seq; a record's key is the message key, its
headers the properties, its timestamp the publish time (log-append time); a null value
is an empty payload, read back as null (a tombstone) in a compacted topic.
"""

from functools import partial

from twisted.internet.defer import DeferredList, gatherResults, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.hub.errors import status_for
from hedwig.kafka.brokers import GROUPS_TOPIC, LEADER_NOT_AVAILABLE, NONE, brokers_of
from hedwig.kafka.group_apis import GROUP_API_VERSIONS, KafkaGroupApis
from hedwig.kafka.produced import ProducedBatches
from hedwig.kafka.records import BATCH_OVERHEAD, RecordsError, entry_batch, read_batches, records_as_stored
from hedwig.kafka.sasl import (
    SASL_API_VERSIONS,
    ConnectionSasl,
    authenticate_without_auth,
    handshake_without_auth,
)
from hedwig.kafka.sequences import KafkaSequences
from hedwig.kafka.served import Served, handlers, versions
from hedwig.kafka.waits import FetchWait
from hedwig.protocol.admin_requests import CreateTopic
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.names import InvalidName, check_topic, printable
from hedwig.protocol.partitions import MAX_PARTITIONS, parent_of, partition_topic
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status

# What this hub serves beside the groups' and SASL's APIs (served.py).
_SERVED = {
    0: Served("Produce", 3, 9, "produce"),
    1: Served("Fetch", 4, 12, "fetch"),
    2: Served("ListOffsets", 1, 7, "list_offsets"),
    3: Served("Metadata", 1, 12, "metadata"),
    18: Served("ApiVersions", 0, 4, "api_versions"),
    19: Served("CreateTopics", 2, 7, "create_topics"),
    20: Served("DeleteTopics", 1, 6, "delete_topics"),
    22: Served("InitProducerId", 0, 4, "init_producer_id"),
    32: Served("DescribeConfigs", 1, 4, "describe_configs"),
    37: Served("CreatePartitions", 0, 3, "create_partitions"),
}
# api key -> (name, lowest version, highest version): every API this hub serves.
API_VERSIONS = {
    **versions(_SERVED),
    **GROUP_API_VERSIONS,  # consumer groups (group_apis.py)
    **SASL_API_VERSIONS,  # SASL PLAIN with [auth] on (sasl.py)
}

# Kafka's error codes (org.apache.kafka.common.protocol.Errors) hedwig answers (and NONE,
# LEADER_NOT_AVAILABLE: brokers.py's).
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
POLICY_VIOLATION = 44
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
KAFKA_STORAGE_ERROR = 56
TRANSACTIONAL_ID_NOT_FOUND = 105
INVALID_RECORD = 87
UNKNOWN_SERVER_ERROR = -1

# A hedwig status -> the Kafka error a client acts on the same way.
_ERRORS = {
    Status.MALFORMED_REQUEST: INVALID_RECORD,
    Status.KEY_REQUIRED: INVALID_RECORD,
    Status.MESSAGE_TOO_LARGE: MESSAGE_TOO_LARGE,
    Status.INVALID_TOPIC: INVALID_TOPIC_EXCEPTION,
    Status.NO_SUCH_TOPIC: UNKNOWN_TOPIC_OR_PARTITION,
    Status.SEQ_OUT_OF_RANGE: OFFSET_OUT_OF_RANGE,
    Status.NOT_RESPONSIBLE_FOR_TOPIC: NOT_LEADER_OR_FOLLOWER,
    Status.SERVICE_DOWN: LEADER_NOT_AVAILABLE,
    Status.STORAGE_FULL: KAFKA_STORAGE_ERROR,
    Status.STORAGE_ERROR: KAFKA_STORAGE_ERROR,
    Status.TOO_MANY_TOPICS: POLICY_VIOLATION,
    Status.TOPIC_BUSY: POLICY_VIOLATION,
    Status.BAD_VERSION: KAFKA_STORAGE_ERROR,
    Status.PRODUCER_SEQUENCE_GAP: OUT_OF_ORDER_SEQUENCE_NUMBER,
    Status.DUPLICATE_SEQUENCE: DUPLICATE_SEQUENCE_NUMBER,
}

LATEST = -1
EARLIEST = -2
CLUSTER_ID = "hedwig"
# A fetch reads at most this many entries of a partition at once.
_MAX_FETCH_ENTRIES = 1000
# Configs DescribeConfigs names (the others are Kafka's business).
_CONFIG_RESOURCE_TOPIC = 2
_CONFIG_RESOURCE_BROKER = 4


def kafka_error(failure_or_error) -> tuple:
    """(Kafka error code, message, expected) of a failure of the hub's core API."""
    error = getattr(failure_or_error, "value", failure_or_error)
    if isinstance(error, RecordsError):
        return error.code, str(error), True
    if isinstance(error, InvalidName):
        return INVALID_TOPIC_EXCEPTION, str(error), True
    status, message, expected = status_for(error)
    return _ERRORS.get(status, UNKNOWN_SERVER_ERROR), message, expected


class KafkaApis:
    """Every served API over `hub` (hedwig.hub.core.Hub); `broker` is (host, port) as
    Metadata names this hub; `clock` times Fetch's long polls."""

    log = Logger()

    def __init__(self, hub, clock, broker):
        self.hub = hub
        self.clock = clock
        self.broker = broker
        self.brokers = brokers_of(hub, lambda: self.broker, kafka_error)
        self.sequences = KafkaSequences(clock)
        self.produced = ProducedBatches(hub.config.kafka.produced_cache_bytes)
        self.handlers = handlers(self, _SERVED)
        self.groups = KafkaGroupApis(hub, clock, self.brokers, kafka_error)
        self.handlers.update(self.groups.handlers)
        self.handlers.update({17: handshake_without_auth, 36: authenticate_without_auth})

    def sasl_for(self, connection):
        """A connection's SASL authentication and permissions with [auth] on, else None."""
        if self.hub.auth is None:
            return None
        return ConnectionSasl(
            self.hub.auth, connection, self.hub, self.clock, self.hub.config.auth.auth_timeout_s
        )

    # -- ApiVersions, Metadata ---------------------------------------------------------------

    def api_versions(self, _version, _request, _peer):
        return api_versions_answer(NONE)

    def metadata(self, version, request, _peer):
        """The brokers (this hub alone, or the region's hubs serving Kafka: brokers.py)
        and each topic's partitions with their leaders."""
        brokers = self.brokers
        answer = {
            "brokers": brokers.brokers(),
            "cluster_id": CLUSTER_ID,
            "controller_id": brokers.node_id,
            "throttle_time": 0,
        }
        every_topic = request.topics is None
        if every_topic:  # (every topic: partitions K > 0 are their topic's)
            names = self.hub.list_topics().addCallback(lambda all: [n for n in all if not parent_of(n)[1]])
        else:
            names = succeed([t.name for t in request.topics])
        create = version < 4 or request.allow_auto_topic_creation

        def described(names):
            rows = [self._topic_metadata(name, create, not every_topic) for name in names]
            return gatherResults(rows, consumeErrors=True)

        return names.addCallback(described).addCallback(lambda topics: {**answer, "topics": topics})

    def _topic_metadata(self, name, create: bool, claim: bool):
        """A topic's row: its partitions, each with its leader (a partition nobody owns
        is placed when `claim`: brokers.py)."""

        def row(error):
            return {"error_code": error, "name": name, "is_internal": name == GROUPS_TOPIC, "partitions": []}

        def partition(index, error, leader):
            return {
                "error_code": error,
                "partition_index": index,
                "leader_id": leader,
                "leader_epoch": 0,
                "replica_nodes": [leader] if leader >= 0 else [],
                "isr_nodes": [leader] if leader >= 0 else [],
                "offline_replicas": [],
            }

        def led(partitions):
            leaders = [self.brokers.leader(partition_topic(name, k), claim) for k in range(partitions)]
            return gatherResults(leaders, consumeErrors=True).addCallback(
                lambda found: {
                    **row(NONE),
                    "partitions": [partition(k, *leader) for k, leader in enumerate(found)],
                }
            )

        if name is None:
            return succeed(row(INVALID_TOPIC_EXCEPTION))
        try:
            check_topic(name)
        except (RequestRefused, MessageSetError, ValueError):
            return succeed(row(INVALID_TOPIC_EXCEPTION))
        topic_log = self.hub.topics.get(name)
        if topic_log is not None:
            return led(topic_log.partitions)

        def known(exists):
            if exists:
                return self.brokers.partitions(name).addCallback(led)
            if not create:
                return row(UNKNOWN_TOPIC_OR_PARTITION)
            return self.hub.create_topic(CreateTopic(name, False), False).addCallback(
                lambda answer: led(answer["partitions"])
            )

        return self.hub.topics.exists(name).addCallback(known).addErrback(lambda f: row(kafka_error(f)[0]))

    # -- Produce -------------------------------------------------------------------------------

    def produce(self, _version, request, peer):
        acks = int(request.acks)
        if acks not in (0, 1, -1):
            answer = self._produce_answer(request, lambda topic, index: {"error_code": INVALID_REQUIRED_ACKS})
            return answer
        results = []
        for topic in request.topic_data:
            for partition in topic.partition_data:
                results.append(self._produce_partition(topic.name, partition, peer))

        def answered(outcomes):
            if acks == 0:
                return None
            by_topic = {}
            for (name, _records), (_ok, row) in zip(_partitions(request), outcomes, strict=True):
                by_topic.setdefault(name, []).append(row)
            return {
                "responses": [{"name": name, "partition_responses": rows} for name, rows in by_topic.items()],
                "throttle_time": 0,
            }

        return DeferredList(results, consumeErrors=True).addCallback(answered)

    def _produce_answer(self, request, row):
        return {
            "responses": [
                {
                    "name": topic.name,
                    "partition_responses": [
                        {"index": p.index, "base_offset": -1, **row(topic.name, p.index)}
                        for p in topic.partition_data
                    ],
                }
                for topic in request.topic_data
            ],
            "throttle_time": 0,
        }

    def _produce_partition(self, topic, partition, peer):
        index = partition.index

        def refused(failure):
            code, message, expected = kafka_error(failure)
            if not expected:
                if not isinstance(failure, Failure):
                    failure = Failure(failure)
                self.log.failure("Kafka produce to {topic} failed", failure, topic=topic)
            else:
                self.hub.client_errors.warn(
                    self.log,
                    peer.host,
                    "Kafka client {peer}: produce to {topic} refused: {why}",
                    peer=f"{peer.host}:{peer.port}",
                    topic=printable(topic),
                    why=message,
                )
            return {"index": index, "error_code": code, "error_message": message, "base_offset": -1}

        hub = self.hub
        try:
            check_topic(topic)
            batches = read_batches(partition.records, hub.max_message_bytes, hub.max_frame_bytes)
            message_sets = [batch.message_set() for batch in batches]
        except Exception as e:
            return succeed(refused(e))
        if index != 0:  # (partition K of a topic of more: a topic of its own, which must exist)
            return self._partition_log(topic, index).addCallbacks(
                lambda log: self._store(log.topic, index, batches, message_sets, refused), refused
            )
        return self._store(topic, index, batches, message_sets, refused)

    def _partition_log(self, topic, index):
        """Deferred[topic log] of partition `index` (> 0) of `topic`: UNKNOWN_TOPIC_OR_PARTITION
        past its partitions, as Produce must not create a topic named as a partition."""
        topic_log = self.hub.topics.get(partition_topic(topic, index))
        if topic_log is not None:  # (open: it exists, within its topic's count)
            return succeed(topic_log)

        def within(partitions):
            if not 0 <= index < partitions:
                raise RecordsError(UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has {partitions} partitions")
            return self.hub._existing(partition_topic(topic, index))

        return self.brokers.partitions(topic).addCallback(within)

    def _store(self, topic, index, batches, message_sets, refused):
        """Store a partition's batches in hedwig topic `topic`."""
        hub = self.hub
        if any(batch.producer_id >= 0 for batch in batches):  # an idempotent producer's
            topic_log = hub.topics.get(topic)
            if topic_log is None:
                return hub.topics.acquire(topic).addCallbacks(
                    lambda log: self._store_idempotent(log, index, batches, message_sets, refused), refused
                )
            return self._store_idempotent(topic_log, index, batches, message_sets, refused)
        stored = [
            maybeDeferred(hub.publish, topic, message_set).addCallback(self._keep, topic, batch)
            for batch, message_set in zip(batches, message_sets, strict=True)
        ]
        return self._stored(stored, index, refused)

    def _keep(self, entry, topic, batch):
        """`batch` is stored as `entry`: its records kept to answer Fetches of it with
        (produced.py), unless they would not read back as they came or the topic is
        compacted. Returns `entry`."""
        if batch.records is not None and entry.last_seq - entry.first_seq + 1 == batch.count:
            topic_log = self.hub.topics.get(topic)
            if topic_log is not None and not topic_log.compaction:
                self.produced.keep(topic, entry, batch.records)
        return entry

    def _store_idempotent(self, topic_log, index, batches, message_sets, refused):
        """An idempotent producer's batches, each checked against the producer's sequence
        (sequences.py: a repeat answered, not stored) and stored with it in its entry's
        header, from which a reopened topic learns its producers again."""
        publish = self.hub.publish
        stored = []
        for batch, message_set in zip(batches, message_sets, strict=True):
            store = partial(_store_with, publish, topic_log.topic, message_set, self._keep, batch)
            if batch.producer_id >= 0:
                stored.append(self.sequences.publish(topic_log, batch, store))
            else:
                stored.append(store(None))
        return self._stored(stored, index, refused)

    def _stored(self, stored, index, refused):
        """The partition's row once every batch is stored (its first's offset)."""

        def done(entries):
            first = entries[0]
            return {
                "index": index,
                "error_code": NONE,
                "base_offset": first.first_seq - 1,
                "log_append_time": first.publish_time_us // 1000,
                "log_start_offset": -1,
            }

        if len(stored) == 1:
            return stored[0].addCallbacks(lambda entry: done([entry]), refused)
        return gatherResults(stored, consumeErrors=True).addCallbacks(
            done, lambda f: refused(f.value.subFailure)
        )

    def init_producer_id(self, _version, request, _peer):
        """A new idempotent producer: an id of the hub's own producers' (63 random bits),
        epoch 0. Transactions are not served."""
        if request.transactional_id is not None:
            return {
                "throttle_time": 0,
                "error_code": TRANSACTIONAL_ID_NOT_FOUND,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "producer_id": self.hub.producers.new_id(),
            "producer_epoch": 0,
        }

    # -- Fetch ---------------------------------------------------------------------------------

    def fetch(self, _version, request, _peer):
        """Each partition's record batches from its offset; with fewer than min_bytes
        found, the answer waits up to max_wait_ms for a publish to a partition asked for
        (FetchWait: woken by the publish itself), then reads again."""
        wanted = [(t.topic, p) for t in request.topics for p in t.partitions]
        max_wait_ms = int(request.max_wait.total_seconds() * 1000)
        max_bytes = max(int(request.max_bytes), 1)
        min_bytes = int(request.min_bytes)

        def read_all(wait_allowed):
            reads = [self._fetch_partition(topic, p) for topic, p in wanted]
            return gatherResults(reads, consumeErrors=True).addCallback(answer, wait_allowed)

        def answer(rows, wait_allowed):
            found = sum(row[1] for row in rows)
            if wait_allowed and found < max(min_bytes, 1) and max_wait_ms > 0:
                logs = [row[2] for row in rows if row[2] is not None and row[3]]
                if logs:
                    return FetchWait(self.hub.cache, self.clock, logs, max_wait_ms / 1000).done.addCallback(
                        lambda _: read_all(False)
                    )
            return respond(rows)

        def respond(rows):
            by_topic = {}
            budget = max_bytes
            for (topic, _p), (row, size, _log, _caught_up) in zip(wanted, rows, strict=True):
                if size and budget <= 0 and row.get("records"):
                    row = {**row, "records": b""}
                budget -= size
                by_topic.setdefault(topic, []).append(row)
            return {
                "throttle_time": 0,
                "error_code": NONE,
                "session_id": 0,
                "responses": [{"topic": topic, "partitions": rows} for topic, rows in by_topic.items()],
            }

        return read_all(True)

    def _fetch_partition(self, topic, p):
        """Deferred[(partition row, bytes of records, topic log, caught up)]."""
        index = p.partition
        seq = int(p.fetch_offset) + 1

        def row(error, log=None, records=b""):
            first = log.first_seq if log is not None else 0
            last = log.last_seq if log is not None else 0
            return {
                "partition_index": index,
                "error_code": error,
                "high_watermark": last if log is not None else -1,
                "last_stable_offset": last if log is not None else -1,
                "log_start_offset": first - 1 if log is not None else -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": records,
            }

        if index < 0:
            return succeed((row(UNKNOWN_TOPIC_OR_PARTITION), 0, None, False))

        def read(log):
            if seq < log.first_seq or seq > log.last_seq + 1:
                return (row(OFFSET_OUT_OF_RANGE, log), 0, None, False)
            if seq == log.last_seq + 1:
                return (row(NONE, log), 0, log, True)
            max_bytes = max(int(p.partition_max_bytes), 1)
            return log.read(seq, _MAX_FETCH_ENTRIES, max_bytes).addCallback(batches, log, max_bytes)

        def batches(entries, log, max_bytes):
            """One record batch per entry while they fit in max_bytes (the first always
            does, whole or not); the last one cut to the records that fit, so an answer
            is as full as the partition's limit lets it be, and nothing is made in vain."""
            compacted = bool(log.compaction)
            produced = self.produced
            parts = []
            room = max_bytes
            for entry in entries:
                if parts and room < BATCH_OVERHEAD + 8:
                    break
                records = None if compacted or seq > entry.first_seq else produced.records(log.topic, entry)
                if records is not None:  # (as a producer sent them: no work per record)
                    batch = records_as_stored(entry.first_seq, entry.publish_time_us, entry.count, records)
                    whole = True
                if records is None or (parts and len(batch) > room):
                    batch, whole = entry_batch(entry.data, seq, compacted, room if parts else max(room, 1))
                if parts and len(batch) > room:  # (one record more than the room: the next answer's)
                    break
                parts.append(batch)
                room -= len(batch)
                if not whole:
                    break
            answer = b"".join(parts)
            return (row(NONE, log, answer), len(answer), log, False)

        def failed(failure):
            code, _message, expected = kafka_error(failure)
            if not expected:
                self.log.failure("Kafka fetch from {topic} failed", failure, topic=topic)
            return (row(code), 0, None, False)

        return self.hub._existing(partition_topic(topic, index)).addCallback(read).addErrback(failed)

    # -- ListOffsets ---------------------------------------------------------------------------

    def list_offsets(self, _version, request, _peer):
        rows = []
        for topic in request.topics:
            for p in topic.partitions:
                rows.append(self._list_offset(topic.name, p.partition_index, int(p.timestamp)))

        def answer(found):
            by_topic = {}
            for topic, row in found:
                by_topic.setdefault(topic, []).append(row)
            return {"throttle_time": 0, "topics": [{"name": t, "partitions": r} for t, r in by_topic.items()]}

        return gatherResults(rows, consumeErrors=True).addCallback(answer)

    def _list_offset(self, topic, index, timestamp):
        def row(error, offset=-1, time_ms=-1):
            return topic, {
                "partition_index": index,
                "error_code": error,
                "timestamp": time_ms,
                "offset": offset,
                "old_style_offsets": [] if offset < 0 else [offset],
                "leader_epoch": 0,
            }

        if index < 0:
            return succeed(row(UNKNOWN_TOPIC_OR_PARTITION))

        def find(log):
            if timestamp == LATEST:
                return row(NONE, log.last_seq)
            if timestamp == EARLIEST:
                return row(NONE, log.first_seq - 1)
            if timestamp < 0:
                return row(UNKNOWN_SERVER_ERROR)
            return log.find_by_time(timestamp * 1000).addCallback(found, log)

        def found(seq, log):
            if seq > log.last_seq:
                return row(NONE, -1, -1)
            seq = max(seq, log.first_seq)
            return log.read(seq, 1, 1).addCallback(
                lambda entries: row(NONE, seq - 1, entries[0].publish_time_us // 1000 if entries else -1)
            )

        existing = self.hub._existing(partition_topic(topic, index))
        return existing.addCallback(find).addErrback(lambda f: row(kafka_error(f)[0]))

    # -- CreateTopics, DeleteTopics, DescribeConfigs ------------------------------------------

    def create_topics(self, _version, request, _peer):
        rows = [self._create_topic(t, request.validate_only) for t in request.topics]
        return gatherResults(rows, consumeErrors=True).addCallback(
            lambda topics: {"throttle_time": 0, "topics": topics}
        )

    def _create_topic(self, topic, validate_only):
        name = topic.name
        configs = {c.name: c.value for c in topic.configs}

        partitions = int(topic.num_partitions)
        if partitions == -1:  # (the broker's default)
            partitions = 1

        def row(error, message=None, compacted=False):
            return {
                "name": name,
                "error_code": error,
                "error_message": message,
                "num_partitions": partitions if error == NONE else -1,
                "replication_factor": 1 if error == NONE else -1,
                "configs": [] if error != NONE else _config_rows(self.hub, compacted, creatable=True),
            }

        try:
            check_topic(name)
        except (RequestRefused, ValueError) as e:
            return succeed(row(INVALID_TOPIC_EXCEPTION, getattr(e, "reason", str(e))))
        if not 1 <= partitions <= MAX_PARTITIONS or (partitions > 1 and parent_of(name)[1]):
            return succeed(
                row(INVALID_PARTITIONS, f"1 to {MAX_PARTITIONS} partitions, of a topic not named as one")
            )
        if int(topic.replication_factor) not in (-1, 1):
            return succeed(
                row(INVALID_REPLICATION_FACTOR, "replication is the ledger store's ([ledger] store)")
            )
        policy = configs.get("cleanup.policy", "delete") or "delete"
        if policy not in ("delete", "compact"):
            return succeed(row(INVALID_CONFIG, f"cleanup.policy={policy}: hedwig takes delete or compact"))
        compacted = policy == "compact"
        if validate_only:
            return succeed(row(NONE, compacted=compacted))

        def created(answer):
            if not answer["created"]:
                return row(TOPIC_ALREADY_EXISTS, f"topic {name} already exists")
            return row(NONE, compacted=answer["compaction"])

        return self.hub.create_topic(CreateTopic(name, compacted, partitions), False).addCallbacks(
            created, lambda f: row(*kafka_error(f)[:2])
        )

    def delete_topics(self, version, request, _peer):
        names = [t.name for t in request.topics] if version >= 6 else list(request.topic_names)

        def deleted(name):
            def row(error, message=None):
                return {"name": name, "error_code": error, "error_message": message}

            return self.hub.delete_topic(name, False).addCallbacks(
                lambda _: row(NONE), lambda f: row(*kafka_error(f)[:2])
            )

        return gatherResults([deleted(n) for n in names], consumeErrors=True).addCallback(
            lambda rows: {"throttle_time": 0, "responses": rows}
        )

    def create_partitions(self, _version, request, _peer):
        """Grow topics to `count` partitions (never fewer: INVALID_PARTITIONS); a topic that
        does not exist: UNKNOWN_TOPIC_OR_PARTITION. Replica assignments are the ledger
        store's business: asking for some is INVALID_REPLICA_ASSIGNMENT."""

        def result(topic):
            def row(error, message=None):
                return {"name": topic.name, "error_code": error, "error_message": message}

            count = int(topic.count)
            if topic.assignments:
                return succeed(row(INVALID_REPLICA_ASSIGNMENT, "hedwig places partitions itself"))
            if not 1 <= count <= MAX_PARTITIONS:
                return succeed(row(INVALID_PARTITIONS, f"a topic has 1 to {MAX_PARTITIONS} partitions"))

            def grow(log):
                if count <= log.partitions:
                    return row(
                        INVALID_PARTITIONS,
                        f"topic {topic.name} has {log.partitions} partitions: a topic grows, never shrinks",
                    )
                if parent_of(topic.name)[1]:
                    return row(INVALID_PARTITIONS, f"{topic.name} is a partition itself")
                if request.validate_only:
                    return row(NONE)
                return self.hub.add_partitions(topic.name, count).addCallback(lambda _: row(NONE))

            return (
                self.hub._existing(topic.name)
                .addCallback(grow)
                .addErrback(lambda f: row(*kafka_error(f)[:2]))
            )

        return gatherResults([result(t) for t in request.topics], consumeErrors=True).addCallback(
            lambda results: {"throttle_time": 0, "results": results}
        )

    def describe_configs(self, _version, request, _peer):
        def resource(r):
            kind = int(r.resource_type)
            wanted = set(r.configuration_keys) if r.configuration_keys else None  # (null or none: all)

            def rows(compacted):
                configs = [
                    c for c in _config_rows(self.hub, compacted) if wanted is None or c["name"] in wanted
                ]
                return {
                    "error_code": NONE,
                    "error_message": None,
                    "resource_type": kind,
                    "resource_name": r.resource_name,
                    "configs": configs,
                }

            if kind == _CONFIG_RESOURCE_BROKER:
                return succeed(rows(False))
            if kind != _CONFIG_RESOURCE_TOPIC:
                return succeed(
                    {
                        "error_code": INVALID_CONFIG,
                        "error_message": "hedwig describes topics and brokers",
                        "resource_type": kind,
                        "resource_name": r.resource_name,
                        "configs": [],
                    }
                )
            d = self.hub._existing(r.resource_name).addCallback(lambda log: rows(bool(log.compaction)))
            return d.addErrback(
                lambda f: {
                    "error_code": kafka_error(f)[0],
                    "error_message": kafka_error(f)[1],
                    "resource_type": kind,
                    "resource_name": r.resource_name,
                    "configs": [],
                }
            )

        return gatherResults([resource(r) for r in request.resources], consumeErrors=True).addCallback(
            lambda results: {"throttle_time": 0, "results": results}
        )


def _config_rows(hub, compacted: bool, creatable: bool = False) -> list:
    """cleanup.policy, retention.ms and retention.bytes of a topic as the hub keeps it
    ([log] retention_secs / retention_bytes: hub-wide, read-only)."""
    log = hub.config.log
    values = {
        "cleanup.policy": "compact" if compacted else "delete",
        "retention.ms": str(log.retention_secs * 1000 if log.retention_secs else -1),
        "retention.bytes": str(log.retention_bytes or -1),
    }
    return [
        {
            "name": name,
            "value": value,
            "read_only": name != "cleanup.policy" or not creatable,
            "is_default": name != "cleanup.policy" or not compacted,
            "config_source": 5,  # DEFAULT_CONFIG
            "is_sensitive": False,
            "synonyms": [],
            "config_type": 2 if name == "cleanup.policy" else 5,  # LIST / LONG
            "documentation": None,
        }
        for name, value in values.items()
    ]


def _store_with(publish, topic, message_set, keep, batch, producer):
    """Store a batch (its records kept only when stored by this call, never for a repeat
    answered with the first's entry)."""
    return maybeDeferred(publish, topic, message_set, None, None, None, producer).addCallback(
        keep, topic, batch
    )


def _partitions(request):
    for topic in request.topic_data:
        for partition in topic.partition_data:
            yield topic.name, partition.records


def api_versions_answer(error: int) -> dict:
    return {
        "error_code": error,
        "api_keys": [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (_name, low, high) in API_VERSIONS.items()
        ],
        "throttle_time": 0,
    }
