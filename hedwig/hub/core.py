"""The hub's operations on topics, independent of any connection or listener.

A `Hub` holds what one hub process serves with: the topic manager, the read-ahead cache
(one byte budget for every topic), the delivery manager and the counters. Connections
(connection.py) decode requests and order replies; they call in here for the work.
Everything is single-threaded on the reactor: a topic's publishes reach its log in the
order the reactor delivered them, which is what makes each topic's writer single.
"""

from twisted.internet.defer import Deferred, DeferredList, fail, gatherResults, succeed
from twisted.logger import Logger

from hedwig.concurrency.deferreds import as_deferred
from hedwig.config.settings import Config
from hedwig.hub.errors import HubStopping, NotOwner
from hedwig.hub.handlers import request_handlers
from hedwig.hub.intake import RequestIntake
from hedwig.hub.peerlog import PeerLog
from hedwig.hub.producers import Producers
from hedwig.hub.relays import IRelays
from hedwig.hub.sending import HubWrites
from hedwig.hub.stats import HubStats, op_name
from hedwig.protocol.addresses import format_address
from hedwig.protocol.admin_requests import CreateTopic
from hedwig.protocol.compression import check_keyed, validate_published_set
from hedwig.protocol.errors import NoSuchTopic
from hedwig.protocol.names import RESERVED_SUBSCRIBER_PREFIX
from hedwig.protocol.ops import Op
from hedwig.protocol.partitions import (
    MAX_PARTITIONS,
    PARTITION_INFIX,
    parent_of,
    partition_topic,
    partition_topics,
)
from hedwig.protocol.redirects import parse_owner
from hedwig.protocol.requests import ReadRange, RequestRefused, Subscribe, read_range_reply_parts
from hedwig.protocol.spec import OPS, Direction
from hedwig.protocol.status import Status, SubscriptionEvent
from hedwig.region.settings import relay_peer
from hedwig.topiclog.errors import LogClosed

# Room kept in a READ_RANGE reply for the frame, response and range headers.
_READ_RANGE_OVERHEAD = 64
# A READ_RANGE never returns more entries than this, whatever max_bytes allows.
MAX_READ_RANGE_ENTRIES = 100_000
# What LIST_SUBSCRIPTIONS shows of each subscription's DESCRIBE_TOPIC row besides the
# above: its kind and delivery, members attached, messages delivered and not acknowledged,
# redeliveries, and what its message bound skipped.
_WORK_QUEUE_COLUMNS = ("kind", "delivery", "filter", "members", "pending", "redeliveries", "skipped_by_bound")
# The ops every hub serves (hub/handlers.py, and AUTH: hedwig/auth/gate.py); a region's
# are registered beside them.
CORE_OPS = tuple(op for op, spec in OPS.items() if spec.direction is Direction.CLIENT_TO_HUB)


class Hub:
    log = Logger()

    def __init__(self, *, topics, cache, delivery, config: Config, clock, name: str = ""):
        self.topics = topics
        topics.on_open = delivery.load_topic
        self.cache = cache
        self.delivery = delivery
        self.config = config
        self.clock = clock
        self.name = name  # "host:port" once listening
        self.http_url = None  # the HTTP listener's "http://host:port/" once it listens (hedwig.observe)
        self.ledger_place = (
            None  # where its ledgers are ("RADOS pool P/NS", "page files in DIR"): said by the service
        )
        self.region = config.region.name
        self.max_frame_bytes = config.hub.max_frame_bytes
        self.max_message_bytes = config.hub.max_message_bytes
        self.max_subscriptions = config.hub.max_subscriptions_per_connection
        self.stats = HubStats(
            (op_name(op) for op in Op if Op.HELLO <= op <= Op.STATS), config.http.max_topic_labels
        )
        self.connections = set()
        # What a read makes the hub write leaves at its end, straight to the sockets (sending.py).
        self.writes = HubWrites()
        # Every connection's frame in progress shares one budget (hub/intake.py); lines
        # about clients' mistakes are written once per peer per interval (hub/peerlog.py).
        self.intake = RequestIntake(config.hub.max_partial_request_bytes)
        self.client_errors = PeerLog(clock, config.hub.client_error_log_interval_s)
        self.regions = None  # IRelays (hedwig.hub.relays), once attach_relays was called
        self.topic_logs = None  # the TopicLogManager (assembly.py): options of topics it creates
        self.compaction = None  # the BackgroundCompaction (assembly.py), for STATS
        self.peers = None  # PeerClients (hub/peers.py): the region's other hubs, in a region of several
        self.auth = None  # IAuthorizer (hedwig.auth) with [auth] enabled, set by the assembly
        self.stopping = False
        self.started_at = clock.seconds()
        self.producers = Producers(
            self, max_producers=config.hub.max_producers
        )  # idempotent publishes (hub/producers.py)
        # op -> handle(connection, request_id, body, started): every op's handler
        # (hub/handlers.py), and those of ops served beyond the core protocol (register_op).
        self.handlers = request_handlers(self)

    def register_op(self, op: int, handler) -> None:
        """Serve `op` on every connection: `handler(connection, request_id, body, started)`
        decodes the body, raises RequestRefused (or any error status_for knows) for a bad
        request, and replies with connection.answer(deferred, request_id, op, started,
        encode). Its stats are counted under the op's name."""
        if op in self.handlers or op in CORE_OPS:
            raise ValueError(f"op {op} is already served")
        self.handlers[op] = handler

    def attach_relays(self, relays) -> None:
        """Relay between regions through `relays` (IRelays): serve its ops, give it to the
        delivery manager as its relay policy, ask it for relay rows and counters. Called
        once, by the hub's assembly, before the hub serves anything."""
        if not IRelays.providedBy(relays):
            raise TypeError(f"{relays!r} does not provide IRelays")
        if self.regions is not None:
            raise ValueError("relays are already attached")
        for op, handler in relays.request_handlers().items():
            self.register_op(op, handler)
        self.delivery.use_relay_policy(relays)
        self.regions = relays

    # -- publish ----------------------------------------------------------------------------

    def publish(
        self, topic: str, message_set: bytes, origin_region=None, origin_seq=None, via=None, producer=None
    ) -> Deferred:
        """Deferred[LogEntry] once durable: the one publish path, for clients and relayed
        message sets alike. Raises MessageSetError at once for a message set that cannot
        be stored: nothing is appended then. `origin_region` / `origin_seq`: where a
        relayed message set was first published; `via`: the region it came from;
        `producer`: (id, sequence) written in the entry's header (a Kafka idempotent
        producer's batch: hedwig.kafka.sequences)."""
        return as_deferred(self.publish_now(topic, message_set, origin_region, origin_seq, via, producer))

    def publish_now(
        self, topic: str, message_set: bytes, origin_region=None, origin_seq=None, via=None, producer=None
    ):
        """publish, answered within the call when the topic is open here and its log
        acknowledges at once (ITopicLog.append_now): the LogEntry, already cached; else
        publish's Deferred. A PUBLISH so gets its reply in the turn that stored it."""
        if self.stopping:
            return fail(HubStopping())
        count = validate_published_set(message_set, 0, self.max_message_bytes, self.max_frame_bytes)
        topic_log = self.topics.get(topic)
        if topic_log is not None:
            if topic_log.compaction and origin_region is None:
                check_keyed(message_set)
            return topic_log.append_now(message_set, count, origin_region, origin_seq, via, producer)
        return self.topics.acquire(topic).addCallback(
            _append, message_set, count, origin_region, origin_seq, via, producer
        )

    def locate_moved(self, topic: str, failure) -> Deferred:
        """A request failed because another hub took `topic` over (TopicFenced): a
        Deferred failing with the redirect to that hub when the topic manager can tell
        (a region's, hedwig.hub.zk_topics), else with `failure`."""
        locate = getattr(self.topics, "locate", None)
        return fail(failure) if locate is None else locate(topic, failure)

    # -- subscriptions ----------------------------------------------------------------------

    def subscribe(self, channel, handle: int, request: Subscribe) -> Deferred:
        """Deferred[dict] {"consumed_seq", "next_seq"} from the delivery manager. A request
        with deliver=False holds the subscription for acknowledgements only."""
        if self.stopping:
            return fail(HubStopping())
        if request.subscriber_id.startswith(RESERVED_SUBSCRIBER_PREFIX) and not channel.is_hub_peer:
            return fail(
                RequestRefused(
                    Status.INVALID_SUBSCRIBER_ID,
                    f"subscriber ids beginning {RESERVED_SUBSCRIBER_PREFIX!r} are reserved for hubs",
                )
            )

        d = self.topics.acquire(request.topic)
        # With [auth] on the subscription is the channel's user's (checked and recorded there).
        principal = getattr(channel, "principal", None)
        return d.addCallback(self.delivery.subscribe, channel, handle, request, principal)

    def unsubscribe(self, channel, topic: str, subscriber_id: str) -> Deferred:
        """Delete the durable subscription; a connection it is attached on (this one or
        another) is told it ended."""
        if subscriber_id.startswith(RESERVED_SUBSCRIBER_PREFIX) and not channel.is_hub_peer:
            return fail(
                RequestRefused(
                    Status.INVALID_SUBSCRIBER_ID,
                    f"subscriber ids beginning {RESERVED_SUBSCRIBER_PREFIX!r} are reserved for hubs",
                )
            )

        def ended(result):
            for connection in list(self.connections):
                if connection is not channel:
                    connection.subscription_removed(
                        topic, subscriber_id, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED
                    )
            return result

        def open_existing(exists):
            # Subscriptions are loaded when a topic opens: open it, unless it never existed.
            return self.topics.acquire(topic) if exists else None

        d = self.topics.exists(topic).addCallback(open_existing)
        principal = getattr(channel, "principal", None)
        d.addCallback(lambda _log: self.delivery.unsubscribe(topic, subscriber_id, principal))
        return d.addCallback(ended)

    # -- reads ------------------------------------------------------------------------------

    def _existing(self, topic: str) -> Deferred:
        """Deferred[TopicLog] of a topic that exists; NO_SUCH_TOPIC otherwise (reads never
        create topics)."""
        topic_log = self.topics.get(topic)
        if topic_log is not None:
            return succeed(topic_log)

        def opened(exists):
            if not exists:
                raise RequestRefused(Status.NO_SUCH_TOPIC, f"topic {topic} does not exist")
            return self.topics.acquire(topic)

        return self.topics.exists(topic).addCallback(opened)

    def read_range(self, request: ReadRange) -> Deferred:
        """Deferred[list of chunks]: the READ_RANGE payload, stored entries passed through."""
        limit = self.max_frame_bytes - _READ_RANGE_OVERHEAD
        max_bytes = min(request.max_bytes or limit, limit)
        to_seq = request.to_seq

        def read(topic_log):
            last_seq = topic_log.last_seq
            end = min(to_seq, last_seq) if to_seq else last_seq
            if request.from_seq > end:
                return read_range_reply_parts(topic_log.first_seq, last_seq, [])
            max_entries = min(end - request.from_seq + 1, MAX_READ_RANGE_ENTRIES)
            return topic_log.read(request.from_seq, max_entries, max_bytes).addCallback(
                slice_entries, topic_log, end
            )

        def slice_entries(entries, topic_log, end):
            selected = []
            total = 0
            from_seq = request.from_seq
            for entry in entries:
                if entry.first_seq > end:
                    break
                size = len(entry.data) + 12
                if selected and total + size > limit:
                    break
                total += size
                start = from_seq - entry.first_seq if from_seq > entry.first_seq else 0
                stop = min(entry.last_seq, end) - entry.first_seq + 1
                selected.append((start, stop, entry.data))
            return read_range_reply_parts(topic_log.first_seq, topic_log.last_seq, selected)

        return self._existing(request.topic).addCallback(read)

    def list_topics(self) -> Deferred:
        return self.topics.list_topics()

    def list_hubs(self) -> Deferred:
        """Deferred[list of dict]: the region's live hubs with their load ("hub",
        "tls_port", "region", "topics", "messages_per_s", "started_us"); an embedded
        hub is alone."""
        hubs = getattr(self.topics, "hubs", None)
        if hubs is not None:
            return succeed(hubs())
        tls = self.config.tls
        return succeed(
            [
                {
                    "hub": self.name,
                    "tls_port": tls.port if tls.enabled else None,
                    "region": self.region,
                    "topics": len(self.topics.open_topics()),
                    "messages_per_s": None,
                    "started_us": int(self.started_at * 1_000_000),
                }
            ]
        )

    def topic_owners(self) -> Deferred:
        """Deferred[dict]: every topic -> the "host:port" of the hub that owns it (None:
        none does now); an embedded hub owns them all."""
        owners = getattr(self.topics, "owners", None)
        if owners is not None:
            return owners()
        return self.topics.list_topics().addCallback(lambda names: dict.fromkeys(names, self.name))

    def describe_topic(self, topic: str) -> Deferred:
        def describe(topic_log):
            description = {"topic": topic, "owner": self.name}
            description.update(topic_log.describe())
            description["subscribers"] = self.delivery.describe(topic)
            if self.regions is not None:
                relays = self.regions.describe_relays(topic, description["subscribers"])
                return relays.addCallback(lambda rows: {**description, "relays": rows})
            return description

        return self._existing(topic).addCallback(describe)

    # -- administration ---------------------------------------------------------------------

    def create_topic(self, request: CreateTopic, place: bool = True) -> Deferred:
        """Deferred[{"topic", "created", "compaction", "partitions", "ttl_ms"}]: the topic
        exists (created now or before) as asked; TOPIC_EXISTS when it exists as the other
        kind (compacted or not), or with another partition count or default TTL than one
        asked for, which it keeps: a caller asking for a table must not get a plain topic.
        A topic of N partitions is N topics (hedwig.protocol.partitions), partition 0's
        record holding the count, written once every other partition exists. `place` False: in a
        region, claimed here if nobody owns it (partition 0's owner creating the others,
        which rebalancing spreads later: placed, they went to other hubs, which refused
        the create as not theirs, and the client bounced between the two)."""
        if self.stopping:
            return fail(HubStopping())
        topic = request.topic
        new_options = self.topic_logs.new_topic_options if self.topic_logs is not None else {}
        partitions = request.partitions

        def create(existed):
            options = {"compaction": request.compaction, "ttl_ms": request.ttl_ms}
            options = {name: value for name, value in options.items() if value}
            if options and not existed:
                new_options[topic] = options
            d = self.topics.acquire(topic, place)

            def done(result):
                new_options.pop(topic, None)
                return result

            d.addBoth(done)
            return d.addCallback(check, existed)

        def check(topic_log, existed):
            if topic_log.compaction != request.compaction:
                kind = "a compacted topic" if topic_log.compaction else "a topic without compaction"
                raise RequestRefused(
                    Status.TOPIC_EXISTS,
                    f"topic {topic} exists already as {kind}: it stays so (delete it first to create"
                    f" it {'without' if topic_log.compaction else 'with'} compaction)",
                )
            if request.ttl_ms and topic_log.ttl_ms != request.ttl_ms:
                kept = f"a ttl of {topic_log.ttl_ms} ms" if topic_log.ttl_ms else "no ttl of its own"
                raise RequestRefused(
                    Status.TOPIC_EXISTS, f"topic {topic} exists already with {kept}: it keeps it"
                )
            answer = {
                "topic": topic,
                "created": not existed,
                "compaction": topic_log.compaction,
                "ttl_ms": topic_log.ttl_ms,
            }
            if existed and partitions and topic_log.partitions != partitions:
                raise RequestRefused(
                    Status.TOPIC_EXISTS,
                    f"topic {topic} exists already with {topic_log.partitions} partitions",
                )
            if existed or partitions <= 1:
                return {**answer, "partitions": topic_log.partitions}
            return self._add_partitions(topic_log, partitions).addCallback(
                lambda _: {**answer, "partitions": partitions}
            )

        return self.topics.exists(topic).addCallback(create)

    def add_partitions(self, topic: str, count: int) -> Deferred:
        """Deferred[int]: grow an existing topic to `count` partitions (Kafka's
        CreatePartitions: never fewer); the count it had. INVALID_PARTITIONS for a count
        not above it, or a name that is itself a partition's (MALFORMED_REQUEST)."""

        def grow(topic_log):
            if count <= topic_log.partitions:
                raise RequestRefused(
                    Status.MALFORMED_REQUEST,
                    f"topic {topic} has {topic_log.partitions} partitions: a topic grows, never shrinks",
                )
            return self._add_partitions(topic_log, count)

        return self._existing(topic).addCallback(grow)

    def _add_partitions(self, topic_log, count: int) -> Deferred:
        """Create partitions topic_log.partitions..count-1 (as partition 0's kind), then
        write the count: a reader told of N partitions finds each one."""
        if not 1 < count <= MAX_PARTITIONS or parent_of(topic_log.topic)[1]:
            raise RequestRefused(
                Status.MALFORMED_REQUEST,
                f"topic {topic_log.topic}: a topic of 2 to {MAX_PARTITIONS} partitions, not named"
                f" as a partition (*{PARTITION_INFIX}K) itself",
            )
        made = [
            self._create_partition(
                CreateTopic(partition_topic(topic_log.topic, k), topic_log.compaction, 0, topic_log.ttl_ms)
            )
            for k in range(topic_log.partitions, count)
        ]
        return gatherResults(made, consumeErrors=True).addCallbacks(
            lambda _: topic_log.set_partitions(count), lambda f: f.value.subFailure
        )

    def _create_partition(self, request: CreateTopic) -> Deferred:
        """create_topic of one partition: claimed here if nobody owns it (create_topic's
        `place` False), else on its owner (_on_owner)."""
        return self._on_owner(
            self.create_topic(request, False),
            lambda peer: peer.create_topic(
                request.topic, request.compaction, ttl=request.ttl_ms / 1000 if request.ttl_ms else None
            ),
        )

    def _on_owner(self, here: Deferred, there) -> Deferred:
        """A partition's request: `here` (this hub's answer), or, when another hub of the
        region owns the partition (a partition is a topic, which any hub may own),
        there(client) asked of that hub through PeerClients."""

        def elsewhere(failure):
            failure.trap(NotOwner)
            if not failure.value.owner or self.peers is None or self.peers.closed:
                return failure
            owner = format_address(parse_owner(failure.value.owner)[0])
            return there(self.peers.client(owner, "partitions"))

        return here.addErrback(elsewhere)

    def compact(self, topic: str, retry: bool = True) -> Deferred:
        """Deferred[dict]: compact the topic now, everything published before (its open
        ledger rolled first), the latest message of each key kept; NOT_COMPACTED for a
        topic created without compaction. A compaction its log stopped (the topic
        deleted or released meanwhile) is answered as the topic is then: NO_SUCH_TOPIC
        once deleted, else asked once more (of its new owner: a redirect)."""
        if self.stopping:
            return fail(HubStopping())

        def compact(topic_log):
            if not topic_log.compaction:
                raise RequestRefused(Status.NOT_COMPACTED, f"topic {topic} was not created with compaction")
            return topic_log.compact(lag_s=0, explicit=True)

        def stopped(failure):
            failure.trap(LogClosed)
            if not retry:
                return failure
            leaving = self.topic_logs.leaving(topic) if self.topic_logs is not None else None
            waited = leaving.addErrback(lambda _f: None) if leaving is not None else succeed(None)
            return waited.addCallback(lambda _: self.compact(topic, retry=False))

        return self._existing(topic).addCallback(compact).addErrback(stopped)

    def delete_topic(self, topic: str, force: bool) -> Deferred:
        """Deferred[{"topic", "subscriptions", "ledgers"}]: the topic gone with its
        subscriptions (refused with TOPIC_BUSY while it has any, unless `force`) and its
        ledgers (recorded as garbage before their files go). A publish later creates it
        afresh, from seq-id 1. A partitioned topic's other partitions go first (each as
        the topic would: TOPIC_BUSY for the first with subscriptions, unless `force`),
        then partition 0 and its count; "partitions" lists those deleted."""
        if self.stopping:
            return fail(HubStopping())

        def partitions_first(topic_log):
            others = partition_topics(topic, topic_log.partitions)[1:]
            if not others:
                return self._delete_topic(topic, force)
            deleted = []

            def next_partition(_=None):
                if not others:
                    return self._delete_topic(topic, force).addCallback(
                        lambda answer: {**answer, "partitions": deleted}
                    )
                name = others.pop(0)
                d = self._on_owner(
                    self._delete_topic(name, force),
                    lambda peer: peer.delete_topic(name, force).addErrback(_gone_there),
                )
                d.addCallback(lambda _: deleted.append(name))
                return d.addErrback(_none).addCallback(next_partition)

            if not force:  # (refused before anything goes: none or all)
                checks = [
                    self._on_owner(
                        self._existing(name).addCallback(self.delivery.subscription_names),
                        lambda peer, name=name: peer.subscriptions(name).addCallbacks(_names, _gone_there),
                    ).addErrback(_none)
                    for name in others
                ]
                return (
                    gatherResults(checks, consumeErrors=True)
                    .addCallbacks(refuse_busy, lambda f: f.value.subFailure, callbackArgs=(list(others),))
                    .addCallback(lambda _: next_partition())
                )

            return next_partition()

        def refuse_busy(found, names):
            for name, held in zip(names, found, strict=True):
                if held:
                    raise RequestRefused(
                        Status.TOPIC_BUSY,
                        f"topic {topic}: its partition {name} has {len(held)} subscription(s)"
                        f" ({', '.join(held)}): unsubscribe them, or force the delete",
                    )

        return self._existing(topic).addCallback(partitions_first)

    def _delete_topic(self, topic: str, force: bool) -> Deferred:
        """delete_topic of one hedwig topic."""

        def check(names, topic_log):
            if names and not force:
                raise RequestRefused(
                    Status.TOPIC_BUSY,
                    f"topic {topic} has {len(names)} subscription(s) ({', '.join(names)}): "
                    "unsubscribe them, or force the delete",
                )
            return self.delivery.drop_subscriptions(topic_log)

        def drop(topic_log):
            names = self.delivery.subscription_names(topic_log)
            return names.addCallback(check, topic_log).addCallback(delete)

        def delete(names):
            for connection in list(self.connections):
                for subscriber_id in names:
                    connection.subscription_removed(
                        topic, subscriber_id, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED
                    )
            deleted = self.topics.delete(topic)
            return deleted.addCallback(
                lambda ledgers: {"topic": topic, "subscriptions": names, "ledgers": ledgers or []}
            )

        return self._existing(topic).addCallback(drop)

    def list_subscriptions(self, topic) -> Deferred:
        """Deferred[list of rows]: every subscription of `topic` (None: of every topic of
        the region), with its consumed seq-id, lag behind the topic's last seq-id, state
        and `owner`, the hub that owns the topic. In a region of several hubs the rows of a
        topic another hub owns are that hub's (asked of it), and those of a topic nobody
        owns now come from the metadata, without claiming it (lag unknown unless its
        ledgers are closed)."""
        if topic is not None:
            return self._existing(topic).addCallback(self._subscription_rows)
        return self.topic_owners().addCallback(self._region_subscription_rows)

    def _region_subscription_rows(self, owners: dict) -> Deferred:
        asked = []
        for name in sorted(owners):
            owner = owners[name]
            if owner == self.name or self.peers is None:
                rows = self._existing(name).addCallback(self._subscription_rows)
            elif owner is None:
                rows = self.topics.unowned_subscription_rows(name)
            else:
                rows = self._owners_rows(name, owner)
            asked.append(rows)

        def gathered(results):
            return [row for ok, rows in results if ok for row in rows]

        return DeferredList(asked, consumeErrors=True).addCallback(gathered)

    def _owners_rows(self, topic: str, owner: str) -> Deferred:
        """The subscription rows of `topic` as its owner, another hub, gives them; its
        records' when that hub does not answer (state says why)."""
        client = self.peers.client(owner, "region listings")

        def unanswered(failure):
            rows = self.topics.unowned_subscription_rows(topic)
            why = f"{owner} did not answer: {failure.getErrorMessage()}"
            return rows.addCallback(
                lambda rows: [{**row, "owner": owner, "state": "unknown", "error": why} for row in rows]
            )

        return client.subscriptions(topic).addErrback(unanswered)

    def _subscription_rows(self, topic_log):
        def rows(_loaded):
            last_seq = topic_log.last_seq
            return [
                {
                    "topic": topic_log.topic,
                    "subscriber_id": row["subscriber_id"],
                    "user": row["user"],
                    "consumed_seq": row["consumed_seq"],
                    "last_seq": last_seq,
                    "lag": row["backlog"],
                    "state": row["state"],
                    **{key: row[key] for key in _WORK_QUEUE_COLUMNS},
                    "owner": self.name,
                    "relay_to": relay_peer(row["subscriber_id"]),
                }
                for row in self.delivery.describe(topic_log.topic)
            ]

        return self.delivery.load_topic(topic_log).addCallback(rows)

    def reset_subscription(self, topic: str, subscriber_id: str, start) -> Deferred:
        """Deferred[{"topic", "subscriber_id", "consumed_seq", "previous_seq", "next_seq"}]."""
        if subscriber_id.startswith(RESERVED_SUBSCRIBER_PREFIX):
            return fail(
                RequestRefused(
                    Status.INVALID_SUBSCRIBER_ID,
                    f"subscriber ids beginning {RESERVED_SUBSCRIBER_PREFIX!r} are the hubs' to move",
                )
            )

        def reset(topic_log):
            moved = self.delivery.reset(topic_log, subscriber_id, start)
            return moved.addCallback(lambda r: {"topic": topic, "subscriber_id": subscriber_id, **r})

        return self._existing(topic).addCallback(reset)

    def hub_stats(self) -> dict:
        snapshot = self.stats.snapshot()
        snapshot["hub"] = {
            "name": self.name,
            "region": self.region,
            "uptime_s": round(self.clock.seconds() - self.started_at, 3),
            "topics_open": len(self.topics.open_topics()),
            "stopping": self.stopping,
            "http": self.http_url,
            "ledgers": self.ledger_place,
        }
        snapshot["intake"] = self.intake.stats()
        snapshot["intake"]["client_error_lines_left_out"] = self.client_errors.lines_left_out
        if self.auth is not None:
            snapshot["logins"] = self.auth.describe()
        snapshot["cache"] = self.cache.stats()
        snapshot["delivery"] = self.delivery.stats()
        if self.compaction is not None:
            compaction = self.compaction
            snapshot["compaction"] = {"runs": compaction.runs, "compactions": compaction.compactions}
        if self.regions is not None:
            snapshot["regions"] = self.regions.stats()
        zookeeper = getattr(self.topics, "zookeeper_stats", None)
        if zookeeper is not None:
            snapshot["zookeeper"] = zookeeper()
        return snapshot

    # -- connections ------------------------------------------------------------------------

    def connection_made(self, connection) -> None:
        self.connections.add(connection)
        self.stats.connections_opened += 1
        if self.auth is not None:
            self.auth.room.arrived(connection)

    def connection_lost(self, connection) -> Deferred:
        """The delivery manager stops the connection's cursors and flushes their pointers."""
        self.connections.discard(connection)
        self.stats.connections_closed += 1
        if self.auth is not None:
            self.auth.room.gone(connection)
        return self.delivery.channel_lost(connection)


def _names(rows) -> list:
    """The subscriber ids of subscription rows (another hub's answer)."""
    return [row["subscriber_id"] for row in rows]


def _gone_there(failure):
    """Another hub's NoSuchTopic for a partition: gone already, as _none takes it here."""
    failure.trap(NoSuchTopic)
    raise RequestRefused(Status.NO_SUCH_TOPIC, failure.value.message)


def _none(failure):
    """A partition that is gone already: nothing of it (no subscriptions, nothing to
    delete)."""
    failure.trap(RequestRefused)
    if failure.value.status != Status.NO_SUCH_TOPIC:
        return failure
    return []


def _append(topic_log, message_set, count, origin_region, origin_seq, via, producer=None):
    # A relayed set was taken at its origin: one without keys (published there before
    # the topic was compacted) is stored (compaction keeps it) rather than refused, which
    # would stop the link's relaying for good (hedwig.region.options).
    if topic_log.compaction and origin_region is None:
        check_keyed(message_set)
    return topic_log.append(message_set, count, origin_region, origin_seq, via, producer)
