"""The clients' defaults, in one place for both (Hedwig's client defaults in brackets)."""

# A CONSUME every DEFAULT_ACK_EVERY acknowledged seq-ids, and whenever the client would
# wait [consumed messages sent every 5]: the protocol's subscription position keeps it.
from hedwig.protocol.position import DEFAULT_ACK_EVERY

__all__ = [
    "DEFAULT_ACK_DELAY",
    "DEFAULT_ACK_EVERY",
    "DEFAULT_HUB",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_READ_BYTES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WINDOW",
]

DEFAULT_HUB = "127.0.0.1:4080"
# How long an acknowledgement short of ack_every may wait for company before it goes
# out alone (the blocking client: while its subscription waits; the others: after it).
DEFAULT_ACK_DELAY = 0.1
# Delivered but unacknowledged messages per subscription: bounds what a client holds
# for a slow reader [10 outstanding messages].
DEFAULT_WINDOW = 10_000
DEFAULT_READ_BYTES = 4 << 20  # READ_RANGE reply size asked for
DEFAULT_TIMEOUT = 30.0  # seconds for a reply [server ack timeout 30 s]
DEFAULT_MAX_REDIRECTS = 2  # [max_server_redirects 2]
