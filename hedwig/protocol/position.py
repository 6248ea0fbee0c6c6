"""A subscription's position, kept so that a lost connection costs nothing.

The client remembers, per subscription, the highest seq-id it handed to the application
(`received_through`), the highest it acknowledged (`acked`) and the highest it told the
hub (`sent_ack`). After a reconnect it subscribes again from acked+1 and drops whatever
it already holds (seq-ids up to received_through), so the application sees no gap and no
duplicate; only messages that were never acknowledged are sent by the hub twice.

Acknowledgements are cumulative and batched as Hedwig's client batches them: a CONSUME
goes out once `ack_every` seq-ids are acknowledged beyond the last one sent, and when
the client would otherwise wait (so an idle subscriber's pointer is current; the blocking
client first waits up to its `ack_delay` for the next message, which a subscriber keeping
up with a stream usually gets, so that it sends one CONSUME per `ack_every` messages and
not one per delivery). A window never waits on a late acknowledgement: `ack_every` is at
most half of it. Pure bookkeeping: no I/O. The protocol session (session.py) subscribes with a
position and moves it when the hub answers; both clients and the region link keep one
per subscription.

A subscription made with deliver=False (acknowledgement only) receives nothing, so it
has nothing to resume from: after a reconnect it attaches again where the hub's pointer
is and sends its last acknowledgement as a CONSUME, and each ack goes out at once.
"""

from hedwig.protocol.entry import decode_entry, decode_entry_header, decode_plain_entry
from hedwig.protocol.message import Message
from hedwig.protocol.requests import Subscribe, Subscribed
from hedwig.protocol.work_requests import SubscribeOptions

# A CONSUME every this many acknowledged seq-ids, and when the client would wait
# [Hedwig's client: consumed messages sent every 5].
DEFAULT_ACK_EVERY = 100


def request_as_asked(position) -> Subscribe:
    """The SUBSCRIBE a position (this module's, or a SharedPosition) asked for first."""
    return Subscribe(
        position.topic,
        position.subscriber_id,
        position.mode,
        position.start,
        position.window,
        position.force_attach,
        position.deliver,
        *position.options,
        # (only a key_shared member is sent subsets: an older hub refuses the flag, so a
        # subscription of another kind does not ask)
        subsets=position.options.kind == "key_shared",
    )


def seq_of(message_or_seq) -> int:
    """The seq-id an application acknowledges: a Message's, or the number it gave."""
    return message_or_seq.seq if isinstance(message_or_seq, Message) else int(message_or_seq)


class SubscriptionPosition:
    """One subscription's window on the client side: what it asked for, what it has
    handed over, acknowledged and told the hub."""

    __slots__ = (
        "topic",
        "subscriber_id",
        "mode",
        "start",
        "window",
        "force_attach",
        "received_through",
        "acked",
        "sent_ack",
        "ack_every",
        "deliver",
        "options",
        "subscribed",
    )

    def __init__(
        self,
        topic,
        subscriber_id,
        mode,
        start,
        window,
        force_attach,
        ack_every=DEFAULT_ACK_EVERY,
        deliver=True,
        options=None,
    ):
        self.topic = topic
        self.subscriber_id = subscriber_id
        self.mode = mode
        self.start = start  # the wire form (hedwig.client.start.wire_start)
        self.deliver = deliver
        if not deliver:
            window = None  # (a window bounds deliveries; the hub keeps the one it has)
            ack_every = 1  # nothing to batch: the application acks when it has a reason to
        self.window = window
        self.force_attach = force_attach
        if window:
            # Acknowledge before the window closes, or the hub would wait on us.
            ack_every = max(1, min(ack_every, window // 2))
        self.ack_every = max(1, ack_every)
        self.options = options or SubscribeOptions()  # (an exclusive one's: its message bound)
        self.received_through = 0
        self.acked = 0
        self.sent_ack = 0
        self.subscribed = False

    def subscribe_request(self) -> Subscribe:
        """The SUBSCRIBE to send: the first time as asked, later to resume."""
        request = request_as_asked(self)
        if not self.subscribed:
            return request
        if not self.deliver:
            # The subscription exists and must not be made again from a starting point
            # (a new one would count everything up to it as acknowledged): attach where
            # the hub's pointer is; the last acknowledgement follows as a CONSUME.
            return request._replace(mode="attach", start=None, replace_filter=False)
        # The subscription exists: attach to it (create it again only if it was created
        # by create_or_attach), from the first seq-id not acknowledged.
        # (A filter it replaced is its own now: attaching again does not replace one
        # another SUBSCRIBE set meanwhile.)
        return request._replace(
            mode="attach" if self.mode == "create" else self.mode,
            start=("seq", self.acked + 1),
            replace_filter=False,
        )

    def on_subscribed(self, reply: Subscribed) -> None:
        if not self.subscribed:
            self.subscribed = True
            floor = max(reply.next_seq - 1, 0)
            self.received_through = floor
            self.acked = floor
            self.sent_ack = reply.consumed_seq if reply.consumed_seq <= floor else floor
        else:
            # After a reconnect the hub's pointer may lag what we sent (it persists
            # every consume_interval): tell it again at the next flush.
            self.sent_ack = min(self.sent_ack, reply.consumed_seq)

    def messages(self, start: int, stop: int, entry) -> list:
        """The Messages of a delivery not yet handed over (seq-ids past received_through)."""
        messages = decode_plain_entry(self.topic, entry, start, stop)  # (None: not plain)
        if messages is not None:
            if messages and messages[0].seq <= self.received_through:
                received_through = self.received_through
                messages = [message for message in messages if message.seq > received_through]
            if messages:
                self.received_through = messages[-1].seq
            return messages
        header = decode_entry_header(entry)
        first_seq = header.first_seq
        skip = self.received_through - first_seq + 1
        if skip > start:
            start = skip
        if start >= stop:
            return []
        messages = decode_entry(self.topic, entry, start, stop, header)
        if header.sparse:  # (compacted: the seq-ids up to stop are had, messages or gaps)
            self.received_through = first_seq + min(stop, header.count) - 1
        else:
            self.received_through = first_seq + start + len(messages) - 1
        return messages

    def acknowledge(self, seq: int) -> None:
        """Record an acknowledgement, to be sent with the next unsent_ack()."""
        if seq > self.acked:
            self.acked = seq

    def ack(self, seq: int) -> int | None:
        """Record an acknowledgement; the seq-id to send in a CONSUME now, if any."""
        if seq > self.acked:
            self.acked = seq
            if seq - self.sent_ack >= self.ack_every:
                self.sent_ack = seq
                return seq
        return None

    @property
    def ack_due(self) -> bool:
        """Whether an acknowledgement waits to be sent (SharedPosition's alike)."""
        return self.acked > self.sent_ack

    def unsent_ack(self) -> int | None:
        """The acknowledgement to send before waiting, if one is due; marks it sent."""
        if self.acked > self.sent_ack:
            self.sent_ack = self.acked
            return self.acked
        return None

    def not_sent(self, seq: int) -> None:
        """A CONSUME of `seq` could not be sent: it is due again."""
        if self.sent_ack >= seq:
            self.sent_ack = seq - 1
