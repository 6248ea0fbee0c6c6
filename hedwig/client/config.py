"""Every client option, its default and its check, declared once for the three clients.

`ClientConfig` is what a client is made from: `Client(config=ClientConfig(...))`, or the
same options as keyword arguments (`Client("h:4080", timeout=5)`), which build one. A
bad value is refused here, in one line naming the option, before anything connects
(Hedwig's client defaults in brackets).
"""

import math
from dataclasses import dataclass, fields, replace

from hedwig import __version__
from hedwig.protocol.addresses import parse_addresses
from hedwig.protocol.compression import codec_named
from hedwig.protocol.position import DEFAULT_ACK_EVERY

__all__ = [
    "DEFAULT_ACK_DELAY",
    "DEFAULT_ACK_EVERY",
    "DEFAULT_HUB",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_READ_BYTES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WINDOW",
    "ClientConfig",
]

DEFAULT_HUB = "127.0.0.1:4080"
DEFAULT_TIMEOUT = 30.0  # seconds for a reply [server ack timeout 30 s]
DEFAULT_MAX_REDIRECTS = 2  # [max_server_redirects 2]
# Delivered but unacknowledged messages per subscription: bounds what a client holds
# for a slow reader [10 outstanding messages].
DEFAULT_WINDOW = 10_000
# How long an acknowledgement short of ack_every may wait for company before it goes
# out alone. (A CONSUME also goes every DEFAULT_ACK_EVERY acknowledged seq-ids
# [consumed messages sent every 5]: the protocol's subscription position keeps it.)
DEFAULT_ACK_DELAY = 0.1
DEFAULT_READ_BYTES = 4 << 20  # READ_RANGE reply size asked for (read_range's default)

# The options only the event-loop clients use: they batch publishes, the blocking one
# waits for each.
BATCHING_OPTIONS = ("max_in_flight", "max_queued", "max_batch_bytes")


@dataclass(frozen=True)
class ClientConfig:
    """How a client reaches its hubs and what it asks of them.

    hubs: "host:port", "a:1,b:2" or a list; the first that answers is asked first.
    timeout: seconds a reply may take. connect_timeout: seconds a connection (TCP, TLS,
    HELLO) may take. reconnect_timeout: how long a subscription of the blocking client
    tries to attach again before `receive` raises CouldNotConnect, and how long an
    idempotent publish is sent again before it fails. max_redirects: owners named in
    NOT_RESPONSIBLE_FOR_TOPIC followed per request.
    window: delivered-but-unacknowledged messages per subscription, which bounds what a
    client holds for a slow reader (0: unlimited; None: the hub's default window).
    ack_every, ack_delay: a CONSUME goes every `ack_every` acknowledged seq-ids, and an
    acknowledgement short of that waits at most `ack_delay` seconds.
    client_name: said in HELLO (the hub's logs and status page show it; name_for gives
    the default).
    tls: a hedwig.config.tls.ClientTls: every hub over TLS, its certificate verified
    (the addresses then name the hubs' [tls] ports). credentials: a
    hedwig.protocol.auth_request.Credentials, sent in AUTH after HELLO.
    idempotent: number every message set, so that one sent again after a lost
    connection is stored once. compression: "zstd", "lz4", "gzip" or None for the sets
    this client publishes (subscribers decompress whatever comes).
    The event-loop clients (Twisted, asyncio) batch publishes: at most `max_in_flight`
    messages sent and unanswered, `max_queued` more waiting (then PublishQueueFull),
    a batch closed at `max_batch_bytes`.
    """

    hubs: object = DEFAULT_HUB
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = 5.0
    reconnect_timeout: float = 60.0
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    window: int | None = DEFAULT_WINDOW
    ack_every: int = DEFAULT_ACK_EVERY
    ack_delay: float = DEFAULT_ACK_DELAY
    client_name: str = ""
    tls: object = None
    credentials: object = None
    idempotent: bool = False
    compression: str | None = None
    max_in_flight: int = 10_000
    max_queued: int = 100_000
    max_batch_bytes: int = 1 << 20

    def __post_init__(self):
        for name, least in _SECONDS:
            _check_seconds(name, getattr(self, name), least)
        for name, least in _COUNTS:
            value = getattr(self, name)
            if value is None and name == "window":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"client option {name}={value!r}: a whole number of at least {least}")
        if not isinstance(self.client_name, str):
            raise ValueError(f"client option client_name={self.client_name!r}: text")
        try:
            parse_addresses(self.hubs)
        except (TypeError, ValueError, IndexError) as e:
            raise ValueError(f"client option hubs={self.hubs!r}: {e}") from None
        codec_named(self.compression)  # (CompressionUnavailable or ValueError, naming it)

    @classmethod
    def of(cls, hubs=None, config=None, options=None, refused=()):
        """The config a client constructor was given: `config` (or the defaults) with
        `hubs` and the keyword `options` over it. `refused`: options this client has no
        use for, a TypeError when given as keywords (a shared config may carry them)."""
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown client options {unknown}: the options are {sorted(known - {'hubs'})}")
        unused = sorted(set(options) & set(refused))
        if unused:
            raise TypeError(f"client options {unused} are not used by this client")
        if hubs is not None:
            options["hubs"] = hubs
        if config is None:
            return cls(**options)
        return replace(config, **options) if options else config

    @property
    def addresses(self) -> list:
        """The hubs as (host, port), in the order given, each once."""
        return parse_addresses(self.hubs)

    def name_for(self, kind: str) -> str:
        """What the hub shows of a client of this config (its log, its status page's
        connections): `client_name`, or when the application named none
        "hedwig-python/VERSION (KIND)", KIND the client's ("blocking", "twisted", "aio")."""
        return self.client_name or f"hedwig-python/{__version__} ({kind})"

    @property
    def codec(self):
        """The compression codec of published sets (hedwig.protocol.compression.Codec)."""
        return codec_named(self.compression)


# (option, least value): seconds may be fractions; counts are whole numbers.
_SECONDS = (("timeout", 0.0), ("connect_timeout", 0.0), ("reconnect_timeout", 0.0), ("ack_delay", 0.0))
_COUNTS = (
    ("max_redirects", 0),
    ("window", 0),
    ("ack_every", 1),
    ("max_in_flight", 1),
    ("max_queued", 1),
    ("max_batch_bytes", 1),
)
_ZERO_ALLOWED = ("reconnect_timeout", "ack_delay")


def _check_seconds(name: str, value, least: float) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number or value < least or (value == least and name not in _ZERO_ALLOWED):
        above = "at least" if name in _ZERO_ALLOWED else "above"
        raise ValueError(f"client option {name}={value!r}: a number of seconds {above} {least:g}")
