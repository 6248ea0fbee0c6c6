"""Python clients of the hub.

`hedwig.client.Client` is the blocking client for scripts; `hedwig.client.twisted.Client`
returns Deferreds and `hedwig.client.aio.Client` is for asyncio. All three are one client
core (hedwig/client/core.py) run three ways (hedwig/client/waiting.py), made from one
ClientConfig (hedwig/client/config.py): they multiplex every publish and subscription
over one connection per hub, follow redirects, resubscribe after a dropped connection
without a gap, and raise the typed exceptions of hedwig.client.errors. Making a client
connects nothing: `with` / `async with` or `connect()` do, or the first request.
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
