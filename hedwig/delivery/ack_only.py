"""An acknowledgement-only attachment: a subscription held by a channel that takes no deliveries.

Some subscribers read a topic another way (the Spark drain reads seq-id ranges) and
hold a durable subscription only so the hub keeps what they have not yet processed and
collects what they have. Attached with deliver=false (Hedwig's STOP_DELIVERY), the
subscription is held exactly as a cursor holds it (TOPIC_BUSY, force_attach, close and
channel loss all apply), but no entry is ever read or sent for it, and its CONSUME may
go up to the topic's last published seq-id rather than stop at what was delivered.

The delivery manager keeps it where it keeps a Cursor (Subscription.cursor, and
Attachments), so this class answers the few things the manager asks of a cursor; it
never touches the cache.
"""

from dataclasses import dataclass

ACK_ONLY = "ack_only"
STOPPED = "stopped"


@dataclass(slots=True, eq=False)
class AckOnlyAttachment:
    """Stands for an attached subscriber that acknowledges but receives nothing. Compared
    by identity (eq=False), as a Cursor is: the manager keeps it in its channel's set."""

    subscription: object  # the delivery Subscription it holds
    channel: object  # the IDeliveryChannel it is attached on
    handle: int
    active: bool = False
    paused: bool = False

    delivers = False  # the delivery manager caps its CONSUME at the topic's last seq-id
    window = 0  # nothing is ever in flight
    window_full = False
    filtered_runs = None
    # Delivery counters, read by the manager's stats and describe: always nothing.
    delivered_entries = 0
    delivered_messages = 0
    read_retries = 0
    skipped = 0
    pulls = 0
    push_waits = 0

    @property
    def delivered_seq(self) -> int:
        """Nothing is delivered: what the subscriber has acknowledged is as far as it got."""
        return self.subscription.consumed_seq

    @property
    def state(self) -> str:
        return ACK_ONLY if self.active else STOPPED

    def start(self) -> None:
        self.active = True

    def stop(self) -> None:
        self.active = False

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def window_opened(self) -> None:
        """(There is no window to open.)"""
