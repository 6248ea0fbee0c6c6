"""Who may use a durable subscription when the hub authenticates its users ([auth]).

The delivery manager records the creating user in the subscription's preferences
("owner", stored with it in the metadata: databases written before keep working, their
subscriptions simply have no owner). Attaching (force_attach included, and
acknowledgement-only attachments), and so acknowledging, or unsubscribing as another
user is refused; an admin may, and a subscription without an owner (made with
authentication off) is every permitted user's. The principal is hedwig.auth's; this
module needs only its `name` and `owns`, so the delivery layer imports nothing above it.
"""

from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.status import Status


def check_owner(subscription, principal) -> None:
    """Raise SubscribeError(NOT_AUTHORIZED) unless `principal` (None: [auth] off) may use
    `subscription`."""
    if principal is None or principal.owns(subscription.preferences.get("owner")):
        return
    raise SubscribeError(
        Status.NOT_AUTHORIZED,
        f"subscription {subscription.subscriber_id} of topic {subscription.topic} belongs to another user",
    )
