"""What the hub answers for each failure: one mapping from exceptions to statuses.

Expected refusals (bad input, subscription conflicts, a full disk) carry their own
status and are logged as one warning line; anything else is a bug, answered
UNEXPECTED_CONDITION and logged with its traceback.
"""

from hedwig.delivery.interface import SubscribeError
from hedwig.ledger.interface import LedgerError, LedgerStoreFull, LedgerUnavailable
from hedwig.meta.interface import BadVersion, MetadataError, MetadataFull, MetadataUnavailable, OwnershipLost
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status
from hedwig.topiclog.errors import LogError, SeqNotRetained, TopicCapReached, TopicFenced


class HubStopping(Exception):
    """The hub is shutting down and takes no new work."""


class HubUnavailable(Exception):
    """The hub cannot serve the request now: its ZooKeeper connection is down, so it
    claims no topic (the request may be sent again, here or to another hub). Answered
    SERVICE_DOWN, which a client raises as hedwig.protocol.errors.ServiceDown."""


class NotOwner(Exception):
    """Another hub owns the topic; `owner` is its "host:port" ("" when unknown)."""

    def __init__(self, topic: str, owner: str = ""):
        super().__init__(owner)
        self.topic = topic
        self.owner = owner


def status_for(error: BaseException) -> tuple[Status, str, bool]:
    """(status, message, expected) for an exception raised while serving a request."""
    if isinstance(error, RequestRefused | MessageSetError):
        return error.status, error.reason, True
    if isinstance(error, SubscribeError):
        return error.status, error.message, True
    if isinstance(error, SeqNotRetained):
        return Status.SEQ_OUT_OF_RANGE, str(error), True
    if isinstance(error, NotOwner):
        return Status.NOT_RESPONSIBLE_FOR_TOPIC, error.owner, True
    if isinstance(error, TopicFenced | OwnershipLost):
        return Status.NOT_RESPONSIBLE_FOR_TOPIC, "", True
    if isinstance(error, HubStopping):
        return Status.SERVICE_DOWN, "the hub is shutting down", True
    if isinstance(error, HubUnavailable | MetadataUnavailable | LedgerUnavailable):
        return Status.SERVICE_DOWN, str(error), True
    if isinstance(error, LedgerStoreFull | MetadataFull):
        return Status.STORAGE_FULL, str(error) or "the ledger store is full", True
    if isinstance(error, TopicCapReached):
        return Status.TOO_MANY_TOPICS, str(error), True
    if isinstance(error, BadVersion):
        return Status.BAD_VERSION, str(error), True
    if isinstance(error, LedgerError | LogError | MetadataError | OSError):
        return Status.STORAGE_ERROR, f"{type(error).__name__}: {error}", True
    return Status.UNEXPECTED_CONDITION, f"{type(error).__name__}: {error}", False
