"""Python clients of the hub.

`hedwig.client.Client` is the blocking client for scripts; `hedwig.client.twisted.Client`
returns Deferreds. Both multiplex every publish and subscription of a client over one
connection per hub, follow redirects, resubscribe after a dropped connection without a
gap, and raise the typed exceptions of hedwig.client.errors.
"""

from hedwig.client.blocking import (
    AckOnlySubscription,
    Client,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.protocol import Message, Status
from hedwig.protocol.errors import *  # noqa: F403 (every typed error, as hedwig.client.<Error>)
from hedwig.protocol.errors import __all__ as _errors

__all__ = [
    "AckOnlySubscription",
    "Client",
    "Message",
    "PullSubscription",
    "SharedSubscription",
    "Status",
    "Subscription",
    *_errors,
]
