"""Every hub setting with its default: one dataclass a section of hub.conf.

Sections mirror the packages: [hub], [ledger], [log], [cache], [delivery], [region],
[tls] for the TLS listener and region links, [auth] for users and permissions, [http]
for the status page and metrics, [kafka] for the Kafka listener, [zookeeper] for a region
of several hubs, and [rados] for replicated ledgers in a Ceph cluster. This
module imports nothing of hedwig, so every layer can take its settings from here without
depending on the loader (hedwig.config.loading), which checks sections with the region, TLS, HTTP
and ZooKeeper code.
"""

from dataclasses import dataclass, field

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass
class HubSettings:
    host: str = "127.0.0.1"
    port: int = 4080
    data_dir: str = "./data"
    max_frame_bytes: int = 16 * MIB
    max_message_bytes: int = 1 * MIB
    max_subscriptions_per_connection: int = 1000
    shutdown_timeout_s: float = 10.0
    # Partial requests: one budget of bytes for every connection's frame in progress
    # (hedwig/hub/intake.py), how long a frame may stop arriving, and how long a new
    # connection may take to say HELLO.
    max_partial_request_bytes: int = 128 * MIB
    frame_timeout_s: float = 30.0
    hello_timeout_s: float = 10.0
    client_error_log_interval_s: float = 10.0  # client errors: one line per peer per interval
    # Idempotent producers remembered per topic and user (per topic with [auth] off): past
    # it the user's least recently used new producer is forgotten (hedwig/hub/producer_state.py).
    max_producers: int = 1024
    # The event loop: "default" (Twisted's own: epoll on Linux), "asyncio" (Twisted's
    # asyncioreactor on asyncio's loop) or "uvloop" (the same on uvloop's; hedwig/hub/reactors.py).
    reactor: str = "default"


@dataclass
class LedgerSettings:
    # Where ledgers live: "mmap", page files under [hub] data_dir (one machine's disk), or
    # "rados", a replicated Ceph RADOS pool ([rados]; hedwig/ledger/rados_store.py). The
    # settings below are the mmap store's.
    store: str = "mmap"
    page_bytes: int = 64 * MIB
    index_page_records: int = 1 << 20
    max_mapped_pages: int = 64
    max_open_ledgers: int = 256  # writable ledgers' headers kept mapped (a descriptor each)
    fsync: str = "never"  # never | interval | always
    fsync_interval_ms: int = 1000


@dataclass
class LogSettings:
    max_ledger_bytes: int = 1 * GIB
    max_ledger_entries: int = 0  # 0: no limit
    # The open ledger rolls once its first entry is older than this (0: never by age), at
    # the next append or the next GC pass, so GC and retention reach quiet topics.
    max_ledger_age_s: float = 3600.0
    retention_secs: int = 0  # 0: keep until consumed
    retention_bytes: int = 0  # 0: no size limit
    gc_interval_s: float = 60.0
    index_cache_bytes: int = 64 * MIB  # entry indexes of closed ledgers kept in memory, all topics
    max_topics: int = 0  # topics this hub's metadata may hold; creating one more is refused (0: no cap)
    # Compacted topics (CREATE_TOPIC's compaction flag): the hub rewrites their sealed
    # ledgers keeping the latest message of each key, every compaction_interval_s (0:
    # only on demand, COMPACT), taking only ledgers whose newest entry is older than
    # min_compaction_lag_s; a tombstone (a key with an empty payload) goes once older
    # than tombstone_retention_s. A compaction maps the latest seq-id of each key in at
    # most compaction_key_map_bytes (Kafka's dedupe buffer): a span of more keys than fit
    # is compacted in several passes.
    compaction_interval_s: float = 300.0
    min_compaction_lag_s: float = 60.0
    tombstone_retention_s: float = 86400.0
    compaction_key_map_bytes: int = 64 * MIB


@dataclass
class CacheSettings:
    readahead_count: int = 10
    readahead_bytes: int = 4 * MIB
    cache_bytes: int = 256 * MIB
    retry_backoff_ms: int = 1000


@dataclass
class DeliverySettings:
    default_window: int = 0  # 0: unlimited
    consume_interval: int = 50
    consume_flush_ms: int = 1000
    max_burst_entries: int = 100  # entries a cursor delivers before yielding the reactor
    consume_write_gap_ms: int = 100  # least time between two pointer writes of one subscriber (0: none)
    # Shared and pull subscriptions: a delivery not acknowledged this long goes out again
    # (a subscription's own ack_timeout, set at SUBSCRIBE, wins) ...
    ack_timeout_ms: int = 30_000
    # ... and a member that asks for no window (or 0) holds at most this many unacknowledged,
    # one that asks for more than max_shared_window that many (what the hub keeps per
    # unacknowledged message is bounded by the members' windows).
    shared_window: int = 1000
    max_shared_window: int = 100_000
    # Delayed messages (hedwig/delivery/delays.py): the runs of them one shared
    # subscription holds aside until their time, at most (~170 bytes each); at the cap it
    # takes no new message until the earliest is due.
    max_delayed_runs: int = 100_000
    # The TTL of a message published without one of its own: not delivered this long after
    # its publish (0: none; a message's own TTL, set at publish, wins).
    message_ttl_ms: int = 0
    # Selectors (hedwig/delivery/filtering.py), weighed as compiled (3 KiB + 32 bytes per
    # character of text, at most): the distinct filters of one user's attached
    # subscriptions (one connection's with [auth] off) at most this much, and the compiled
    # filters the hub keeps for later subscriptions at most filter_cache_bytes.
    max_filter_bytes_per_user: int = 8 * MIB
    filter_cache_bytes: int = 16 * MIB
    # Compiling a selector new to the hub runs on the reactor: one user (one source host
    # with [auth] off) compiles at most this many milliseconds a second, its SUBSCRIBEs
    # waiting their turn past it (hedwig/delivery/compile_turns.py).
    max_filter_compile_ms_per_user: int = 100


@dataclass
class RegionSettings:
    # (Not set in hub.conf: "standalone", or in a region of several hubs on ZooKeeper the
    # last part of [zookeeper] root: hedwig.region.settings.region_name_by_default.)
    name: str = "standalone"
    parent: str = ""  # the parent region's name; empty for the root
    parent_address: str = ""  # host:port[,host:port...]
    retry_backoff_ms: int = 500
    max_retry_backoff_ms: int = 10000
    relay_inflight_bytes: int = 8 * MIB  # relayed bytes a link holds unstored before it pauses
    link_timeout_s: float = 30.0  # a region link request unanswered this long drops the link
    # A relay subscription created after its interest began starts this long before it:
    # regions' clocks may differ by about as much.
    clock_margin_ms: int = 1000
    parent_tls: bool = False  # reach the parent over TLS (parent_address names its [tls] port)
    parent_tls_name: str = ""  # the name the parent's certificate must carry (empty: each address's host)
    # Take REGION_LINK only over TLS from a client certificate naming the child region.
    require_child_certificate: bool = False
    # With the parent's [auth] on: the user this region's link authenticates as (a users-file
    # entry with region = this region), and a file holding its password (one line).
    parent_user: str = ""
    parent_password_file: str = ""


@dataclass
class TlsSettings:
    enabled: bool = False  # a TLS listener on `port`, besides the plain one of [hub]
    port: int = 9876  # Hedwig's ssl_server_port
    cert_file: str = ""  # PEM: this hub's certificate, then its chain
    key_file: str = ""  # PEM: its private key (empty: it is in cert_file)
    ca_file: str = ""  # PEM: authorities for parents' and clients' certificates (empty: system store)
    require_client_cert: bool = False  # TLS clients must present a certificate signed by ca_file


@dataclass
class HttpSettings:
    # The status page, /metrics and /api on [hub] host; HTTPS with the [tls] certificate
    # when [tls] is enabled. "auto": the hub's port + 1 (4081 for 4080; a free one when
    # the hub's port is 0), so hubs that differ only in their port both start; a number:
    # that port; 0: no HTTP listener (hedwig.observe.settings.http_listen_port).
    port: int | str = "auto"
    max_topic_labels: int = 100  # topics named in /metrics' labels; the others are summed together
    sample_interval_s: float = 2.0  # the status page's charts: one sample of the rates this often ...
    history_s: float = 600.0  # ... kept this long


@dataclass
class KafkaSettings:
    # A listener speaking Kafka's wire protocol over the hub's topics (hedwig/kafka;
    # docs/kafka.md). 0: none (the default; `make run` serves it on 9092).
    port: int = 0
    host: str = ""  # the address it listens on (empty: [hub] host)
    # The host Kafka clients are told to reach this hub at in Metadata answers (empty: the
    # address it listens on, or [zookeeper] advertised_host in a region of several hubs).
    advertised_host: str = ""
    # A request larger than this is refused as it starts (the connection is closed);
    # 0: [hub] max_frame_bytes.
    max_request_bytes: int = 0
    # The Kafka port speaks TLS (Kafka's SSL listener) with [tls]'s certificate, key,
    # authorities and require_client_cert; needs [tls] enabled.
    tls: bool = False
    # Records Kafka producers sent, kept in memory (this many bytes, the oldest leaving
    # first) to answer Fetches of them as they came, with no work per record
    # (hedwig/kafka/produced.py); 0: every Fetch is answered from the ledger.
    produced_cache_bytes: int = 64 * MIB


@dataclass
class AuthSettings:
    enabled: bool = False  # off: every connection may do everything (the embedded default)
    users_file: str = ""  # JSON, written by `hedwig user` (hedwig/auth/users.py)
    allow_anonymous: bool = False  # connections that send no AUTH act as the user "anonymous"
    failure_delay_s: float = 1.0  # a wrong AUTH is answered this late, then the connection closed
    max_concurrent_checks: int = 2  # password checks (scrypt) running at once, hub-wide
    max_waiting_checks: int = 64  # checks waiting for a thread; more are refused at once (busy)
    # Guessing, counted hub-wide (hedwig/auth/throttle.py): a source (host) or a user name
    # with this many failed logins in the window is refused without a check until the
    # window ends; a user's known-good sources (it logged in from them) are not.
    failure_window_s: float = 60.0
    max_failures_per_source: int = 20
    max_failures_per_user: int = 10
    # Connections that have not authenticated: one that said HELLO and sent no AUTH this
    # long is closed, and past max_unauthenticated of them (HELLO not yet said included)
    # the oldest not being checked is closed to make room, so a crowd of idle connections
    # holds neither descriptors nor a real user's way in.
    auth_timeout_s: float = 10.0
    max_unauthenticated: int = 128
    # In a region of several hubs whose hubs have [auth] on: the user this hub authenticates
    # as when it publishes to another hub of the region (a dead letter for a topic that hub
    # owns), and a file holding its password (one line). Pulsar's brokerClient credentials.
    hub_user: str = ""
    hub_password_file: str = ""


@dataclass
class ZooKeeperSettings:
    # A region of several hubs coordinates through ZooKeeper (hedwig.hub.zk_topics;
    # docs/operations.md, "Regions of several hubs"). Empty: the embedded single hub.
    servers: str = ""  # host:port[,host:port...] of the ZooKeeper ensemble
    session_timeout_ms: int = 10000
    root: str = "/hedwig"  # the region's znodes live under it: one root per region
    connect_timeout_s: float = 5.0  # at start: no ZooKeeper server answers this long: exit
    # The host clients and other hubs reach this hub at, named in redirects (empty: [hub] host).
    advertised_host: str = ""
    # A topic with no publish and no attached subscriber this long is released (Hedwig's
    # retention_secs; 0: never), so it may go to the least loaded hub when next used.
    topic_release_s: float = 0.0
    # Rebalancing: every interval (and soon after a hub joins), a hub owning more than its
    # share of the region's topics by more than the tolerance releases topics, at most
    # max_shed per round (Hedwig's rebalance_interval_sec, rebalance_tolerance, _max_shed).
    rebalance_interval_s: float = 300.0
    rebalance_tolerance: float = 0.1
    rebalance_max_shed: int = 50


@dataclass
class RadosSettings:
    # Replicated ledgers ([ledger] store = rados): a Ceph cluster's pool, reached with
    # librados as client.<client_id> (its key found as conf_file says).
    conf_file: str = "/etc/ceph/ceph.conf"
    pool: str = "hedwig"
    namespace: str = ""  # the RADOS namespace of the ledgers in the pool: one per region
    client_id: str = "admin"
    # A ledger rolls over to a new segment object at this size (RADOS caps an object at
    # 128 MiB); it must hold the largest entry ([hub] max_frame_bytes).
    segment_bytes: int = 64 * MIB
    max_in_flight: int = 64  # writes in flight to the pool at once, all ledgers together
    # An operation the cluster does not acknowledge within this long fails (a publish gets
    # STORAGE_ERROR, not a hang): fewer than min_size replicas up, or the cluster unreachable.
    op_timeout_s: float = 10.0


@dataclass
class Config:
    hub: HubSettings = field(default_factory=HubSettings)
    ledger: LedgerSettings = field(default_factory=LedgerSettings)
    log: LogSettings = field(default_factory=LogSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    delivery: DeliverySettings = field(default_factory=DeliverySettings)
    region: RegionSettings = field(default_factory=RegionSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    zookeeper: ZooKeeperSettings = field(default_factory=ZooKeeperSettings)
    rados: RadosSettings = field(default_factory=RadosSettings)


class ConfigError(ValueError):
    pass


def check_bounds(section: str, settings, bounds) -> None:
    """Refuse the first setting of [section] out of its bounds, in one sentence naming it:
    `bounds` is [(key, within: value -> bool, what is expected)], so that each section
    lists its numeric settings' limits once rather than writing the check for each."""
    for key, within, expected in bounds:
        value = getattr(settings, key)
        if not within(value):
            raise ConfigError(f"[{section}] {key} = {shown(value)}: expected {expected}")


def shown(value) -> str:
    """A setting's value as a user would have written it (5 seconds as 5, not 5.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_password_file(setting: str, path: str) -> str:
    """The password in `path` (its first line, 1 to 1024 bytes): kept in a file so that it
    is neither on a command line nor in hub.conf, which many may read. ConfigError naming
    `setting` ("[section] name") when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            password = file.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{setting} = {path!r}: {e}") from None
    if not 1 <= len(password.encode("utf-8")) <= 1024:
        raise ConfigError(f"{setting} = {path!r}: 1 to 1024 bytes")
    return password
