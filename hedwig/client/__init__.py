"""Python clients of the hub.

`hedwig.client.Client` is the blocking client for scripts; `hedwig.client.twisted.Client`
returns Deferreds. Both multiplex every publish and subscription of a client over one
connection per hub, follow redirects, resubscribe after a dropped connection without a
gap, and raise the typed exceptions of hedwig.client.errors.
"""

from hedwig.client.blocking import AckOnlySubscription, Client, Subscription
from hedwig.protocol import Message, Status
from hedwig.protocol.errors import (
    ClientAlreadySubscribed,
    ClientClosed,
    ClientNotSubscribed,
    ConnectionLost,
    CouldNotConnect,
    HedwigError,
    HubError,
    InvalidSubscriberId,
    InvalidTopic,
    MalformedRequest,
    MessageTooLarge,
    NoDeliveries,
    NoSuchTopic,
    NotResponsibleForTopic,
    PublishQueueFull,
    RequestError,
    RequestTimeout,
    SeqOutOfRange,
    ServiceDown,
    StorageError,
    StorageFull,
    SubscriptionClosed,
    TooManyRedirects,
    TooManySubscriptions,
    TopicBusy,
    UnsupportedVersion,
)

__all__ = [
    "AckOnlySubscription",
    "Client",
    "ClientAlreadySubscribed",
    "ClientClosed",
    "ClientNotSubscribed",
    "ConnectionLost",
    "CouldNotConnect",
    "HedwigError",
    "HubError",
    "InvalidSubscriberId",
    "InvalidTopic",
    "MalformedRequest",
    "Message",
    "MessageTooLarge",
    "NoDeliveries",
    "NoSuchTopic",
    "NotResponsibleForTopic",
    "PublishQueueFull",
    "RequestError",
    "RequestTimeout",
    "SeqOutOfRange",
    "ServiceDown",
    "Status",
    "StorageError",
    "StorageFull",
    "Subscription",
    "SubscriptionClosed",
    "TooManyRedirects",
    "TooManySubscriptions",
    "TopicBusy",
    "UnsupportedVersion",
]
