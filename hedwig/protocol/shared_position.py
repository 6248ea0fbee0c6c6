"""A shared or pull subscription's position on the client side: what it asks for, and the
acknowledgements it has not sent yet.

A shared subscription has no cursor of the client's own: the hub hands each member what
it chooses, a redelivery may come at any time, and every message is acknowledged by
itself. So this position keeps no received-through mark (a message delivered again is
handed to the application again, with its delivery count) and resumes nowhere in
particular: after a lost connection it attaches again as it is, and the hub delivers
what nobody acknowledged. Acknowledgements are batched as ranges (a worker taking
messages in order sends one range per batch): an ACK goes out once `ack_every`
messages are acknowledged and whenever the client would otherwise wait, as the
exclusive position's CONSUME does. Pure bookkeeping, no I/O; the three clients keep
one per shared or pull subscription.
"""

from hedwig.protocol.entry import ENTRY_FLAG_SPARSE, decode_entry, decode_entry_header
from hedwig.protocol.message import RedeliveredMessage
from hedwig.protocol.position import DEFAULT_ACK_EVERY, request_as_asked
from hedwig.protocol.requests import Subscribe, Subscribed
from hedwig.protocol.session import ProtocolViolation
from hedwig.protocol.status import StatusError
from hedwig.protocol.work_requests import SubscribeOptions, check_options, selected_indexes


class SharedPosition:
    """One shared or pull subscription as its client asked for it, and its unsent acks."""

    __slots__ = (
        "_pending",
        "_pending_count",
        "ack_every",
        "acked_count",
        "force_attach",
        "mode",
        "options",
        "received_through",
        "start",
        "subscribed",
        "subscriber_id",
        "topic",
        "window",
    )

    deliver = True  # (an acknowledgement-only attachment is exclusive)

    def __init__(
        self,
        topic,
        subscriber_id,
        mode,
        start,
        window,
        force_attach,
        options: SubscribeOptions,
        ack_every=DEFAULT_ACK_EVERY,
    ):
        check_options(options, True)
        self.topic = topic
        self.subscriber_id = subscriber_id
        self.mode = mode
        self.start = start  # the wire form; where a new subscription begins
        self.window = window
        self.force_attach = force_attach
        self.options = options
        if window:
            ack_every = max(1, min(ack_every, window // 2))
        self.ack_every = max(1, ack_every)
        self.acked_count = 0  # messages acknowledged through this subscription
        self.received_through = 0  # the highest seq-id handed to the application
        self.subscribed = False
        self._pending = []  # [first, last] ranges acknowledged and not sent yet
        self._pending_count = 0

    @property
    def pull(self) -> bool:
        return self.options.pull

    def subscribe_request(self) -> Subscribe:
        """The SUBSCRIBE to send: as asked the first time; later, to attach again as it
        is (a shared subscription's starting point applies when it is created)."""
        request = request_as_asked(self)
        if not self.subscribed:
            return request
        return request._replace(
            mode="attach" if self.mode == "create" else self.mode, start=None, replace_filter=False
        )

    def on_subscribed(self, reply: Subscribed) -> None:
        self.subscribed = True

    def messages(self, start: int, stop: int, entry, count: int = 1) -> list:
        """The Messages of a delivery (or of a redelivery, delivered for the `count`th time)."""
        messages = decode_entry(self.topic, entry, start, stop)
        if entry[1] & ENTRY_FLAG_SPARSE:
            self._acknowledge_gap(entry, start, stop, messages)
        if count != 1:
            again = RedeliveredMessage.again
            messages = [again(message, count) for message in messages]
        if messages and messages[-1].seq > self.received_through:
            self.received_through = messages[-1].seq
        return messages

    def subset_messages(self, start: int, stop: int, selection, entry) -> list:
        """The Messages of a SUBSET_DELIVERY: those of [start, stop) its selection picks
        (work_requests.selected_indexes), decoded alone."""
        try:
            indexes = selected_indexes(start, stop, selection)
            messages = decode_entry(self.topic, entry, start, stop, indexes=indexes)
        except StatusError as e:
            raise ProtocolViolation(f"bad SUBSET_DELIVERY from the hub: {e}") from None
        if messages and messages[-1].seq > self.received_through:
            self.received_through = messages[-1].seq
        return messages

    def _acknowledge_gap(self, entry, start: int, stop: int, messages) -> None:
        """A compacted entry's seq-ids before its messages were removed: nobody will
        acknowledge them, so they are acknowledged here, with the next ACK (or the hub
        would lease them out again and again)."""
        first = decode_entry_header(entry).first_seq + start
        last = (messages[0].seq if messages else decode_entry_header(entry).first_seq + stop) - 1
        if first > last:
            return
        self._pending.append([first, last])
        self._pending_count += 1

    def acknowledge(self, seq: int) -> None:
        """Record an acknowledgement, to be sent with the next unsent_ack()."""
        pending = self._pending
        if pending and pending[-1][1] == seq - 1:
            pending[-1][1] = seq
        else:
            pending.append([seq, seq])
        self._pending_count += 1
        self.acked_count += 1

    def ack(self, seq: int):
        """Record an acknowledgement; the ranges to send in an ACK now, if a batch is due."""
        self.acknowledge(seq)
        if self._pending_count >= self.ack_every:
            return self.unsent_ack()
        return None

    @property
    def ack_due(self) -> bool:
        """Whether acknowledgements wait to be sent."""
        return bool(self._pending)

    def unsent_ack(self):
        """The ranges to send before waiting, if any; marks them sent."""
        if not self._pending:
            return None
        ranges, self._pending, self._pending_count = self._pending, [], 0
        return ranges

    def not_sent(self, ranges) -> None:
        """An ACK of `ranges` could not be sent: they are due again."""
        self._pending[:0] = ranges
        self._pending_count += sum(last - first + 1 for first, last in ranges)
