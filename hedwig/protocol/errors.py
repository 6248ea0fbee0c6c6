"""Typed exceptions for what a hub answers, so callers catch the condition, not a number.

They belong to the protocol: a status means the same to every speaker of it (both
clients, the region link, the Spark source); applications import them as
hedwig.client.errors.

Every exception carries the hub's `Status` and its message. `error_for(status, message)`
picks the most specific class for a status; statuses without a class of their own fall
back to the family they belong to (client error, hub condition).
"""

from hedwig.protocol.status import Status

__all__ = [
    "AuthenticationFailed",
    "ClientAlreadySubscribed",
    "ClientClosed",
    "ClientNotSubscribed",
    "ConnectionLost",
    "CouldNotConnect",
    "DuplicateSequence",
    "EntryUnreadable",
    "FetchInProgress",
    "HedwigError",
    "HubError",
    "InvalidKey",
    "InvalidMessageFilter",
    "InvalidSubscriberId",
    "InvalidTopic",
    "KeyRequired",
    "MalformedRequest",
    "MessageTooLarge",
    "NoDeliveries",
    "NoSuchTopic",
    "NotAuthorized",
    "NotCompacted",
    "NotResponsibleForTopic",
    "ProducerSequenceGap",
    "PublishQueueFull",
    "PullOnly",
    "RequestError",
    "RequestTimeout",
    "ResubscribeRequired",
    "SeqOutOfRange",
    "ServiceDown",
    "StorageError",
    "StorageFull",
    "SubscriptionClosed",
    "TooManyRedirects",
    "TooManySubscriptions",
    "TooManyTopics",
    "TopicBusy",
    "TopicExists",
    "UnsupportedVersion",
    "WrongSubscriptionKind",
    "error_for",
]


class HedwigError(Exception):
    """A request the hub (or the way to it) could not serve; `status` says why."""

    status = Status.UNEXPECTED_CONDITION

    def __init__(self, status: Status | int | None = None, message: str = ""):
        if status is not None:
            try:
                status = Status(status)
            except ValueError:
                pass  # a status newer than this client: keep the number
            self.status = status
        self.message = message
        label = getattr(self.status, "name", str(self.status))
        super().__init__(f"{label}: {message}" if message else label)


class RequestError(HedwigError):
    """The request itself is at fault (4xx): retrying it unchanged will fail again."""

    status = Status.MALFORMED_REQUEST


class MalformedRequest(RequestError):
    status = Status.MALFORMED_REQUEST


class UnsupportedVersion(RequestError):
    status = Status.UNSUPPORTED_VERSION


class NoSuchTopic(RequestError):
    status = Status.NO_SUCH_TOPIC


class InvalidTopic(RequestError):
    status = Status.INVALID_TOPIC


class InvalidSubscriberId(RequestError):
    status = Status.INVALID_SUBSCRIBER_ID


class MessageTooLarge(RequestError):
    status = Status.MESSAGE_TOO_LARGE


class ClientAlreadySubscribed(RequestError):
    status = Status.CLIENT_ALREADY_SUBSCRIBED


class ClientNotSubscribed(RequestError):
    status = Status.CLIENT_NOT_SUBSCRIBED


class TopicBusy(RequestError):
    """The subscription is attached on another connection (use force_attach to take it)."""

    status = Status.TOPIC_BUSY


class TooManySubscriptions(RequestError):
    status = Status.TOO_MANY_SUBSCRIPTIONS


class SeqOutOfRange(RequestError):
    """The seq-ids asked for were garbage collected (or are not published yet)."""

    status = Status.SEQ_OUT_OF_RANGE


class ProducerSequenceGap(RequestError):
    """An idempotent publish numbered past its producer's last set + 1, or from a
    producer the topic no longer knows: nothing was stored. A client that resends in
    order never sees it unless sets were lost to it (a bug, or the hub forgot the producer)."""

    status = Status.PRODUCER_SEQUENCE_GAP


class DuplicateSequence(RequestError):
    """An idempotent publish that repeats a set stored long ago: not stored again, but
    the hub no longer remembers its seq-ids."""

    status = Status.DUPLICATE_SEQUENCE


class KeyRequired(RequestError):
    """A publish to a compacted topic holding a message without a key: nothing was
    stored (a compacted topic keeps the latest message of each key)."""

    status = Status.KEY_REQUIRED


class NotCompacted(RequestError):
    """COMPACT of a topic created without compaction."""

    status = Status.NOT_COMPACTED


class TopicExists(RequestError):
    """CREATE_TOPIC of a topic that exists as the other kind (compacted or not) than
    asked: nothing was changed."""

    status = Status.TOPIC_EXISTS


class InvalidKey(RequestError, ValueError):
    """A message key the client cannot send: a key is bytes (or str, sent as UTF-8) of at
    least one byte, or None for a message without one. Raised before anything is sent."""

    status = Status.MALFORMED_REQUEST


class WrongSubscriptionKind(RequestError):
    """The request does not fit the subscription's kind: attaching to a shared
    subscription as an exclusive one (or the other way round), or with push delivery to
    a pull one; per-message acknowledgements or FETCH where the kind has none."""

    status = Status.WRONG_SUBSCRIPTION_KIND


class InvalidMessageFilter(RequestError):
    """A SUBSCRIBE's filter is not a message selector the hub can run; the message says
    at which column and why. (Hedwig's number, 504, though the request is at fault.)"""

    status = Status.INVALID_MESSAGE_FILTER


class ResubscribeRequired(RequestError):
    """A SUBSCRIBE named another filter than the subscription has: changing it takes a
    SUBSCRIBE that says so (replace_filter=True); the message names the filter it has."""

    status = Status.RESUBSCRIBE_EXCEPTION


class FetchInProgress(RequestError):
    """A FETCH on a pull subscription whose previous FETCH has not ended."""

    status = Status.FETCH_IN_PROGRESS


class HubError(HedwigError):
    """The hub could not serve the request (5xx); it may succeed later or elsewhere."""

    status = Status.SERVICE_DOWN


class ServiceDown(HubError):
    status = Status.SERVICE_DOWN


class NotResponsibleForTopic(HubError):
    """Another hub owns the topic; `owner` is its "host:port" (None when unknown)."""

    status = Status.NOT_RESPONSIBLE_FOR_TOPIC

    def __init__(self, status=None, message: str = ""):
        super().__init__(status, message)
        self.owner = message.strip() or None


class TooManyRedirects(HubError):
    """Redirects went on past the limit, or came back to a hub already asked."""

    status = Status.NOT_RESPONSIBLE_FOR_TOPIC


class StorageError(HubError):
    status = Status.STORAGE_ERROR


class StorageFull(StorageError):
    status = Status.STORAGE_FULL


class AuthenticationFailed(RequestError):
    """Wrong user name or password, an unmapped certificate, or a request before AUTH on
    a hub that requires it; the hub closes the connection."""

    status = Status.AUTHENTICATION_FAILED


class NotAuthorized(RequestError):
    """The user may not do this: a permission it lacks on the topic, an admin request, a
    subscription another user owns, or a region link or relay it may not make."""

    status = Status.NOT_AUTHORIZED


class TooManyTopics(HubError):
    """The hub holds its configured maximum of topics ([log] max_topics): publishing or
    subscribing to a topic that does not exist yet creates nothing."""

    status = Status.TOO_MANY_TOPICS


class CouldNotConnect(HubError):
    """No hub of the address list accepted a connection."""

    status = Status.COULD_NOT_CONNECT


class ConnectionLost(HubError):
    """The connection dropped with this request in flight: it may or may not have been
    carried out (a publish may be stored), so the client does not retry it by itself."""

    status = Status.UNCERTAIN_STATE


class RequestTimeout(HubError):
    """No reply within the client's timeout; like ConnectionLost, the outcome is unknown."""

    status = Status.UNCERTAIN_STATE


class SubscriptionClosed(HedwigError):
    """The subscription ended: closed here, forced closed by another attach, or lost."""

    status = Status.CLIENT_NOT_SUBSCRIBED


class EntryUnreadable(SubscriptionClosed):
    """The hub cannot read the subscription's next entry (damaged, or its ledger lost):
    every message before it was delivered, then the subscription ended. `seq` is the
    first seq-id not delivered; subscribing again past it skips the damage."""

    status = Status.STORAGE_ERROR

    def __init__(self, topic: str, subscriber_id: str, seq: int):
        super().__init__(
            message=f"{topic}/{subscriber_id}: the hub cannot read seq-id {seq} (a damaged entry or a lost "
            "ledger); everything before it was delivered"
        )
        self.topic = topic
        self.subscriber_id = subscriber_id
        self.seq = seq


class PublishQueueFull(HedwigError):
    """The client already holds its limit of unsent messages: slow down (wait for
    earlier publishes, or let the client pause a registered producer)."""

    status = Status.SERVICE_DOWN


class ClientClosed(HedwigError):
    """The client was closed; make a new one."""

    status = Status.SERVICE_DOWN


class NoDeliveries(TypeError):
    """receive, iteration or the queue of a subscription made with deliver=False: the hub
    delivers nothing on it (it exists to acknowledge); read the topic another way."""

    def __init__(self, topic: str, subscriber_id: str):
        super().__init__(
            f"{topic}/{subscriber_id} was subscribed with deliver=False: the hub delivers "
            "nothing on it; read the topic with read_range, and ack(seq) here"
        )


class PullOnly(TypeError):
    """receive or iteration of a pull subscription (deliver="pull"): the hub sends it
    only what fetch() asks for; or fetch() of one that is not a pull subscription."""

    def __init__(self, topic: str, subscriber_id: str, pull: bool):
        if pull:
            message = f"{topic}/{subscriber_id} is a pull subscription: take its messages with fetch()"
        else:
            message = (
                f"{topic}/{subscriber_id} is pushed to: fetch() needs a subscription made with deliver='pull'"
            )
        super().__init__(message)


_BY_STATUS = {
    cls.status: cls
    for cls in (
        MalformedRequest,
        UnsupportedVersion,
        NoSuchTopic,
        InvalidTopic,
        InvalidSubscriberId,
        MessageTooLarge,
        ClientAlreadySubscribed,
        ClientNotSubscribed,
        TopicBusy,
        TooManySubscriptions,
        SeqOutOfRange,
        ProducerSequenceGap,
        DuplicateSequence,
        KeyRequired,
        NotCompacted,
        TopicExists,
        ServiceDown,
        NotResponsibleForTopic,
        StorageError,
        StorageFull,
        TooManyTopics,
        CouldNotConnect,
        AuthenticationFailed,
        NotAuthorized,
        WrongSubscriptionKind,
        FetchInProgress,
        InvalidMessageFilter,
        ResubscribeRequired,
    )
}
_BY_STATUS[Status.UNKNOWN_OPERATION] = MalformedRequest
_BY_STATUS[Status.FRAME_TOO_LARGE] = MalformedRequest


def error_for(status: int, message: str = "") -> HedwigError:
    """The exception for a hub's error status (an unknown status still gets one)."""
    try:
        status = Status(status)
    except ValueError:
        pass
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = RequestError if 400 <= int(status) < 500 else HubError
    return cls(status, message)
