"""A member of a shared (or pull) subscription: one attachment, on one channel and handle.

The dispatcher (shared.py) hands members slices of entries while they have room: their
window (messages delivered and not acknowledged) less what they hold and, for a pull
member, no more than its FETCH still asks for. The delivery manager keeps members where
it keeps cursors (Attachments, attachments.py), so pause, resume, detach and the counters read
by stats and describe treat them alike; this class answers those few questions.
"""

FETCHING = "fetching"
IDLE = "idle"
PAUSED = "paused"
WINDOW_FULL = "window_full"
STOPPED = "stopped"


class Member:
    __slots__ = (
        "active",
        "channel",
        "credit",
        "delivered_entries",
        "delivered_messages",
        "dispatcher",
        "fetch_timer",
        "fetched",
        "fetching",
        "handle",
        "held",
        "paused",
        "pull",
        "redelivered_messages",
        "subscription",
        "subsets",
        "window",
    )

    delivers = True
    filtered_runs = None  # (relay filtering is for exclusive relay subscriptions only)
    # Counters the manager reads of every cursor; a member's reads are the dispatcher's.
    read_retries = 0
    skipped = 0
    pulls = 0
    push_waits = 0

    def __init__(self, dispatcher, channel, handle: int, window: int, pull: bool, subsets: bool = False):
        """`subsets`: its SUBSCRIBE asked for SUBSET_DELIVERY frames (a key_shared member
        is then sent its keys of an entry in one)."""
        self.dispatcher = dispatcher
        self.subsets = subsets
        self.subscription = dispatcher.subscription
        self.channel = channel
        self.handle = handle
        self.window = window  # messages it may hold unacknowledged (at least 1)
        self.pull = pull
        self.held = 0  # messages delivered to it, not acknowledged, not taken back
        self.credit = 0  # pull: messages the FETCH in progress still asks for
        self.fetched = 0  # pull: messages delivered for the FETCH in progress
        self.fetching = False
        self.fetch_timer = None
        self.paused = False
        self.active = False
        self.delivered_entries = 0
        self.delivered_messages = 0
        self.redelivered_messages = 0

    @property
    def room(self) -> int:
        """Messages it may be given now."""
        if not self.active or self.paused:
            return 0
        room = self.window - self.held
        if self.pull and self.credit < room:
            return self.credit
        return room

    @property
    def window_full(self) -> bool:
        return self.held >= self.window

    @property
    def delivered_seq(self) -> int:
        return self.dispatcher.next_seq - 1

    @property
    def state(self) -> str:
        if not self.active:
            return STOPPED
        if self.paused:
            return PAUSED
        if self.window_full:
            return WINDOW_FULL
        return FETCHING if self.fetching else IDLE

    def took(self, messages: int) -> None:
        """It was sent `messages` in one delivery: it holds them (a pull member's FETCH
        asks for that many fewer)."""
        self.held += messages
        self.delivered_entries += 1
        self.delivered_messages += messages
        if self.pull:
            self.credit -= messages
            self.fetched += messages

    def start(self) -> None:
        """Take deliveries from the next reactor turn (after the SUBSCRIBE's reply)."""
        self.active = True
        self.dispatcher.pump_soon()

    def stop(self) -> None:
        """Detached: what it holds goes to the other members."""
        if self.active:
            self.active = False
            self.dispatcher.remove(self)

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self.dispatcher.pump()

    def window_opened(self) -> None:
        """(Acknowledgements open a member's window through the dispatcher.)"""
