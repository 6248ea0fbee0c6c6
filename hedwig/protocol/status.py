"""Status codes, numbered after Hedwig's so operators who know one know the other.

4xx: the request is at fault; 5xx: the hub could not serve it (yet); 6xx: a bug.
"""

from enum import IntEnum


class Status(IntEnum):
    SUCCESS = 0
    # Client errors, Hedwig's numbers.
    MALFORMED_REQUEST = 401
    NO_SUCH_TOPIC = 402
    CLIENT_ALREADY_SUBSCRIBED = 403
    CLIENT_NOT_SUBSCRIBED = 404
    COULD_NOT_CONNECT = 405
    TOPIC_BUSY = 406
    RESUBSCRIBE_EXCEPTION = 407
    # Client errors hedwig adds.
    INVALID_TOPIC = 410
    MESSAGE_TOO_LARGE = 411
    UNSUPPORTED_VERSION = 412
    UNKNOWN_OPERATION = 413
    FRAME_TOO_LARGE = 414
    TOO_MANY_SUBSCRIPTIONS = 415
    INVALID_SUBSCRIBER_ID = 416
    # Seq-ids the topic does not hold: READ_RANGE of ones garbage collection removed, or a
    # SUBSCRIBE starting past the last seq-id + 1 (the message names the last seq-id).
    SEQ_OUT_OF_RANGE = 417
    REGION_REFUSED = 418  # a region link refused: a cycle, a region named twice, a relay off a link
    # Idempotent publish (docs/protocol.md "IDEMPOTENT_PUBLISH"): a set numbered past the
    # producer's last + 1, or a producer the topic does not know (evicted, or its sets
    # collected) at a sequence other than 0; nothing was stored.
    PRODUCER_SEQUENCE_GAP = 419
    # A repeat older than the sets the hub remembers of its producer: it was stored, its
    # seq-ids are forgotten; nothing was stored again.
    DUPLICATE_SEQUENCE = 420
    # A compacted topic (CREATE_TOPIC's compaction flag) keeps the latest message of each
    # key: it refuses a message set holding a message without a key; nothing was stored.
    KEY_REQUIRED = 421
    # COMPACT of a topic created without the compaction flag.
    NOT_COMPACTED = 422
    # CREATE_TOPIC of a topic that exists as the other kind (compacted or not) than asked:
    # nothing changed (Kafka's TOPIC_ALREADY_EXISTS, for a topic that is not what was asked).
    TOPIC_EXISTS = 423
    # Authentication and authorization ([auth] enabled; docs/protocol.md "AUTH").
    AUTHENTICATION_FAILED = 430  # wrong credentials, or a request before AUTH: the hub closes
    NOT_AUTHORIZED = 431  # a permission the user lacks, or another user's subscription
    # Shared and pull subscriptions (docs/protocol.md "Shared and pull subscriptions").
    # A request that does not fit the subscription's kind: attaching as another kind or
    # delivery than it has, ACK / NACK / FETCH on an exclusive push one, CONSUME on a
    # shared one, FETCH on a push one.
    WRONG_SUBSCRIPTION_KIND = 440
    FETCH_IN_PROGRESS = 441  # a FETCH on a handle whose previous FETCH has not ended
    # Hub-side conditions, Hedwig's numbers.
    NOT_RESPONSIBLE_FOR_TOPIC = 501  # message: the owner's "host:port"
    SERVICE_DOWN = 502
    UNCERTAIN_STATE = 503
    INVALID_MESSAGE_FILTER = 504
    # Hub-side conditions hedwig adds.
    STORAGE_FULL = 510  # the ledger store could not allocate space; nothing was stored
    STORAGE_ERROR = 511
    TOO_MANY_TOPICS = 512  # the hub holds [log] max_topics topics: a new one is not created
    BAD_VERSION = 520  # metadata compare-and-set lost a race
    UNEXPECTED_CONDITION = 600

    @property
    def is_error(self) -> bool:
        return self is not Status.SUCCESS


class SubscriptionEvent(IntEnum):
    """Events the hub pushes about a live subscription (Hedwig's names)."""

    TOPIC_MOVED = 1
    SUBSCRIPTION_FORCED_CLOSED = 2
    # The subscription's next entry cannot be read (damaged, or its ledger lost): every
    # message before it was delivered; the subscription ended (its pointer stays).
    ENTRY_UNREADABLE = 3
    # Events 10-19 are about a live subscription and do not end it (ends_subscription).
    # A pull subscription's FETCH ended: every DELIVERY it brought came before this.
    FETCH_DONE = 10


def ends_subscription(event: int) -> bool:
    """Whether an EVENT ends its subscription (frees its handle): every event but 10-19,
    which tell a live subscription something (FETCH_DONE)."""
    return not 10 <= event <= 19


class StatusError(ValueError):
    """Input the hub refuses, with the `status` that goes back on the wire and the
    `reason` sent with it. One base for the refusals of a request's body and of a message
    set, which are raised and answered alike."""

    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason
