"""Frames: a 4-byte big-endian length, then op (u8), request id (u32) and the body.

The length counts everything after itself (5 + body). Pure code, no I/O: the hub and
the clients feed it whatever the transport delivered.
"""

import mmap
import struct

from hedwig.protocol.ops import Op

_FRAME_HEADER = struct.Struct("!IBI")
FRAME_HEADER_SIZE = _FRAME_HEADER.size
_PREFIX = struct.Struct("!I")
_OP_AND_ID = struct.Struct("!BI")
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
# A frame this large or larger is gathered in an anonymous memory map of its announced
# size instead of the growing buffer: no copy per read as it grows, pages taken only as
# bytes arrive, and all of them handed back to the kernel the moment the frame completes
# or is dropped (the C heap would keep a freed buffer for its next allocations).
LARGE_FRAME_BYTES = 1024 * 1024


class FrameError(ValueError):
    """A stream that is not frames. `frames` holds the whole frames that came before the
    bad header in the same feed, so they are still answered before the connection ends."""

    frames: list = []


class FrameTooLarge(FrameError):
    def __init__(self, length: int, limit: int):
        super().__init__(f"frame of {length} bytes exceeds the limit of {limit}")
        self.length = length
        self.limit = limit


def frame_header(op: Op, request_id: int, body_length: int) -> bytes:
    """The header for a body sent separately (writeSequence avoids copying the body)."""
    return _FRAME_HEADER.pack(5 + body_length, op, request_id)


def encode_frame(op: Op, request_id: int, body: bytes = b"") -> bytes:
    return _FRAME_HEADER.pack(5 + len(body), op, request_id) + body


# The fixed heads of the frames a hub pushes (request id 0), after the frame header: a
# decoder told of them cuts them off, so the entry that follows is copied once.
DELIVERY_HEAD = struct.Struct("!III")  # handle, start, stop; then the stored entry
EVENT_HEAD = struct.Struct("!IB")  # handle, event


class FrameDecoder:
    """Split a byte stream into (op, request_id, body) tuples: the one frame parser, of the
    hub's connections and of the clients' sessions alike.

    Raises FrameTooLarge as soon as a header announces more than `max_frame_bytes`,
    before the body is buffered, and FrameError for a length too short to be a frame;
    either carries the frames decoded before it in `frames`.

    `heads`: op -> the struct.Struct of a fixed head its body starts with (a client's:
    DELIVERY_HEAD, EVENT_HEAD, REDELIVERY_HEAD). A frame of such an op comes out as
    (op, request_id, (head values, rest of the body)), and one shorter than its head is
    a FrameError. Bodies are copied out of what was read once, whatever the reads.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, heads=None):
        self.max_frame_bytes = max_frame_bytes
        self._heads = heads or {}
        # A frame larger than this is not taken by feed's shortcut for a read of one whole
        # frame (a decoder with heads cuts every frame in its loop).
        self._max_whole = -1 if heads else max_frame_bytes
        self._buffer = bytearray()
        self._large = None  # the memory map gathering a large frame (LARGE_FRAME_BYTES)
        # Whether bytes of an incomplete frame are held (an attribute, read after every
        # read: frame_in_progress is 0 when it is False).
        self.partial = False

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole frame (a peer that stops mid-frame)."""
        if self._large is not None:
            return self._large.tell()
        return len(self._buffer)

    @property
    def frame_in_progress(self) -> int:
        """What the frame being received will hold once whole: its length prefix and what
        the prefix announces (checked against the limit when it was read), or the bytes
        buffered while the prefix itself is incomplete; 0 between frames. A hub reserves
        this much of its intake budget before reading on (hedwig.hub.intake)."""
        if self._large is not None:
            return len(self._large)
        buffer = self._buffer
        if len(buffer) < 4:
            return len(buffer)
        return 4 + _PREFIX.unpack_from(buffer, 0)[0]

    def clear(self) -> None:
        """Drop the incomplete frame and give its memory back at once (a connection that
        closed or timed out), rather than when the decoder itself is collected."""
        self._buffer = bytearray()
        self.partial = False
        if self._large is not None:
            self._large.close()
            self._large = None

    def feed(self, data) -> list:
        if self._large is not None:
            return self._feed_large(data)
        buffer = self._buffer
        if not buffer and data.__class__ is bytes and len(data) >= FRAME_HEADER_SIZE:
            # The usual read: one whole frame and nothing held. Taken as it is, unbuffered.
            length, op, request_id = _FRAME_HEADER.unpack_from(data, 0)
            if length + 4 == len(data) and length <= self._max_whole:
                return [(op, request_id, data[FRAME_HEADER_SIZE:])]
        if buffer:
            buffer += data
            source = memoryview(buffer)  # (bytes(source[a:b]): one copy)
        elif data.__class__ is bytes:
            source = data  # (frames are cut straight out of the read: source[a:b] is bytes)
        else:
            source = memoryview(data)
        copy = source.__class__ is not bytes
        heads = self._heads
        frames = []
        position = 0
        available = len(source)
        try:
            while available - position >= 4:
                (length,) = _PREFIX.unpack_from(source, position)
                if length < 5 or length > self.max_frame_bytes:
                    error = (
                        FrameTooLarge(length, self.max_frame_bytes)
                        if length > self.max_frame_bytes
                        else FrameError(f"frame length {length} is shorter than a frame header")
                    )
                    error.frames = frames
                    self._keep(source, position, bool(buffer))
                    raise error
                end = position + 4 + length
                if end > available:
                    if 4 + length >= LARGE_FRAME_BYTES:
                        self._large = large = mmap.mmap(-1, 4 + length)
                        large.write(source[position:])
                        position = available
                    break
                op, request_id = _OP_AND_ID.unpack_from(source, position + 4)
                head = heads.get(op) if heads else None
                if head is None:
                    if copy:
                        frames.append((op, request_id, bytes(source[position + 9 : end])))
                    else:
                        frames.append((op, request_id, source[position + 9 : end]))
                else:
                    frames.append((op, request_id, _cut(head, op, source, position + 9, end, copy, frames)))
                position = end
            self._keep(source, position, bool(buffer))
        finally:
            if copy:
                source.release()
        self.partial = self._large is not None or len(self._buffer) > 0
        return frames

    def deliveries_reader(self, subscribers, otherwise):
        """A function taking what a client read: when that is one whole DELIVERY frame and
        nothing is buffered (a subscriber keeping up with a stream gets one per message),
        its messages go straight to subscribers[handle].on_delivery(start, stop, entry),
        the entry copied once (to nobody when the handle has no subscriber, one released
        meanwhile); anything else goes to `otherwise(data)`, which feeds this decoder.
        `subscribers` is read at each call (a dict the caller keeps up to date)."""
        unpack = _DELIVERY_PREFIX.unpack_from
        entry_at = _DELIVERY_PREFIX.size
        max_length = self.max_frame_bytes
        get = subscribers.get
        decoder = self

        def read(data) -> None:
            size = len(data)
            if size >= entry_at and not decoder.partial:
                length, op, _, handle, start, stop = unpack(data)
                if op == _DELIVERY and length + 4 == size and length <= max_length:
                    subscriber = get(handle)
                    if subscriber is not None:
                        subscriber.on_delivery(start, stop, data[entry_at:])
                    return
            otherwise(data)

        return read

    def _keep(self, source, position: int, buffered: bool) -> None:
        """What is left of `source` after `position` stays buffered for the next read."""
        if buffered:
            source.release()
            del self._buffer[:position]
        elif position < len(source):
            self._buffer += source[position:]

    def _feed_large(self, data) -> list:
        """Go on gathering a large frame; once whole, decode it and what follows."""
        large = self._large
        room = len(large) - large.tell()
        if len(data) < room:
            large.write(data)
            return []
        data = memoryview(data)
        large.write(data[:room])
        op, request_id = _OP_AND_ID.unpack_from(large, 4)
        head = self._heads.get(op)
        if head is None:
            frames = [(op, request_id, large[9:])]
        else:
            frames = [(op, request_id, _cut(head, op, large, 9, len(large), False, []))]
        large.close()
        self._large = None
        self.partial = False
        if len(data) > room:
            try:
                frames += self.feed(data[room:])
            except FrameError as e:
                e.frames = frames + e.frames
                raise
        return frames


def _cut(head: struct.Struct, op: int, source, start: int, end: int, copy: bool, frames: list):
    """(head values, the rest) of a body source[start:end] that begins with `head`."""
    if end - start < head.size:
        error = FrameError(f"{_op_name(op)} shorter than its header")
        error.frames = frames
        raise error
    if copy:
        return head.unpack_from(source, start), bytes(source[start + head.size : end])
    return head.unpack_from(source, start), source[start + head.size : end]


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return f"op {op}"


_DELIVERY_PREFIX = struct.Struct("!IBI" + DELIVERY_HEAD.format[1:])  # frame header and head
_DELIVERY_LENGTH = _DELIVERY_PREFIX.size - 4  # a DELIVERY's length without its entry
_DELIVERY = int(Op.DELIVERY)
_EVENT = struct.Struct("!IBI" + EVENT_HEAD.format[1:])


def delivery_header(handle: int, start: int, stop: int, entry_length: int) -> bytes:
    """Frame header and prefix for a DELIVERY of messages [start, stop) of one entry.

    The entry's stored bytes follow unchanged (write both with writeSequence), so the
    hub never re-encodes or copies a message set to deliver part of it.
    """
    return _DELIVERY_PREFIX.pack(_DELIVERY_LENGTH + entry_length, _DELIVERY, 0, handle, start, stop)


def parse_delivery(body):
    """(handle, start, stop, entry bytes) from a DELIVERY frame's body."""
    handle, start, stop = DELIVERY_HEAD.unpack_from(body, 0)
    return handle, start, stop, body[DELIVERY_HEAD.size :]


def encode_event(handle: int, event: int) -> bytes:
    """An EVENT frame: a SubscriptionEvent for the subscription `handle`."""
    return _EVENT.pack(_EVENT.size - 4, Op.EVENT, 0, handle, event)


def parse_event(body):
    """(handle, event) from an EVENT frame's body."""
    return EVENT_HEAD.unpack_from(body, 0)
