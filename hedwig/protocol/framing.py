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
# A piece at least this long holds a frame's header and any fixed head after it.
_LONGEST_HEAD = 64
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


# What a hub takes on a region link beyond its frame limit ([hub] max_frame_bytes): a
# RELAY_PUBLISH carries a stored entry (a PUBLISH's set behind the entry header: 31 bytes,
# two region names and a producer) and its range besides what a PUBLISH of the limit
# carries. (A client's session allows as much for a DELIVERY's.)
LINK_FRAME_MARGIN = 4096


class FrameDecoder:
    """Split a byte stream into (op, request_id, body) tuples: the one frame parser, of the
    hub's connections and of the clients' sessions alike.

    Raises FrameTooLarge as soon as a header announces more than `max_frame_bytes`,
    before the body is buffered, and FrameError for a length too short to be a frame;
    either carries the frames decoded before it in `frames`.

    Frames are cut straight out of what was read: a body is copied once. Only a frame
    split across reads is held: its pieces as they came, joined once when it is whole
    (a large one is gathered in a memory map instead, LARGE_FRAME_BYTES).

    `heads`: op -> the struct.Struct of a fixed head its body starts with (a client's:
    DELIVERY_HEAD, EVENT_HEAD, REDELIVERY_HEAD). A frame of such an op comes out as
    (op, request_id, (head values, rest of the body)), so the entry it carries is copied
    once too; one shorter than its head is a FrameError.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, heads=None):
        self.max_frame_bytes = max_frame_bytes
        self._heads = heads or {}
        # A frame larger than this is not taken by feed's shortcut for a read of one whole
        # frame (a decoder with heads cuts every frame in its loop).
        self._max_whole = -1 if heads else max_frame_bytes
        self._pieces = []  # the start of a frame that did not arrive whole, as it came
        self._held = 0  # their bytes
        self._needed = 0  # bytes of that frame once whole (4 while its length is not known)
        self._large = None  # the memory map gathering a large frame (LARGE_FRAME_BYTES)
        # Whether bytes of an incomplete frame are held (an attribute, read after every
        # read: frame_in_progress is 0 when it is False).
        self.partial = False

    def allow(self, max_frame_bytes: int) -> None:
        """Take frames of up to `max_frame_bytes` from now on (a hub's region link: its
        RELAY_PUBLISH carries an entry of the largest set and its header)."""
        self.max_frame_bytes = max_frame_bytes
        if self._max_whole >= 0:
            self._max_whole = max_frame_bytes

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole frame (a peer that stops mid-frame)."""
        if self._large is not None:
            return self._large.tell()
        return self._held

    @property
    def frame_in_progress(self) -> int:
        """What the frame being received will hold once whole: its length prefix and what
        the prefix announces (checked against the limit when it was read), or the bytes
        buffered while the prefix itself is incomplete; 0 between frames. A hub reserves
        this much of its intake budget before reading on (hedwig.hub.intake)."""
        if self._large is not None:
            return len(self._large)
        if self._held < 4:
            return self._held
        return self._needed

    def clear(self) -> None:
        """Drop the incomplete frame and give its memory back at once (a connection that
        closed or timed out), rather than when the decoder itself is collected."""
        self._pieces = []
        self._held = self._needed = 0
        self.partial = False
        if self._large is not None:
            self._large.close()
            self._large = None

    def feed(self, data) -> list:
        """The whole frames of what was read next, in a list (the hub's: a FrameError
        carries the frames before it in `frames`)."""
        if data.__class__ is bytes and len(data) >= FRAME_HEADER_SIZE and not self.partial:
            # The usual read: one whole frame and nothing held. Taken as it is.
            length, op, request_id = _FRAME_HEADER.unpack_from(data, 0)
            if length + 4 == len(data) and length <= self._max_whole:
                return [(op, request_id, data[FRAME_HEADER_SIZE:])]
        frames = []
        try:
            frames.extend(self.frames(data))
        except FrameError as e:
            e.frames = frames
            raise
        return frames

    def frames(self, data):
        """The whole frames of what was read next, one at a time: each body is cut when
        its frame is reached, so a reader that hands each on at once (a client's
        session) holds one body at a time, not every body of a large read. A FrameError
        comes where the bad header is, after the frames before it."""
        if self._large is not None:
            return self._feed_large(data)
        if self.partial:
            return self._feed_piece(data if data.__class__ is bytes else bytes(data))
        return self._split(data if data.__class__ is bytes else bytes(data))

    def _split(self, data: bytes, position: int = 0):
        """The whole frames of `data` from `position` (a frame boundary); what is left of
        it is held as the start of the next frame."""
        heads = self._heads
        available = len(data)
        while available - position >= 4:
            (length,) = _PREFIX.unpack_from(data, position)
            if length < 5 or length > self.max_frame_bytes:
                rest = data[position:]  # (kept as it is: no frame follows a bad header)
                self._pieces, self._held, self._needed, self.partial = [rest], len(rest), 4, True
                raise self._bad_length(length)
            end = position + 4 + length
            if end > available:
                break
            op, request_id = _OP_AND_ID.unpack_from(data, position + 4)
            head = heads.get(op) if heads else None
            if head is None:
                yield op, request_id, data[position + 9 : end]
            else:
                at = position + 9 + head.size
                if at > end:
                    raise self._short(op)
                yield op, request_id, (head.unpack_from(data, position + 9), data[at:end])
            position = end
        if position < available:
            self._hold(data[position:] if position else data)
        else:
            self.partial = False

    def _hold(self, rest: bytes) -> None:
        """`rest` starts a frame that has not arrived whole."""
        self._pieces = [rest]
        self._held = len(rest)
        self._needed = 4 + _PREFIX.unpack_from(rest, 0)[0] if len(rest) >= 4 else 4
        self.partial = True
        if self._needed >= LARGE_FRAME_BYTES:
            self._gather_large()

    def _feed_piece(self, data: bytes):
        """Another piece of a frame that did not arrive whole: held until it is, then
        its body joined once, and what follows it split."""
        pieces = self._pieces
        pieces.append(data)
        self._held += len(data)
        if self._needed == 4 and self._held >= 4:  # (its length is known now)
            joined = b"".join(pieces)
            (length,) = _PREFIX.unpack_from(joined, 0)
            if length < 5 or length > self.max_frame_bytes:
                self._pieces = [joined]
                raise self._bad_length(length)
            self._pieces = pieces = [joined]
            self._needed = 4 + length
            if self._held < self._needed and self._needed >= LARGE_FRAME_BYTES:
                self._gather_large()
                return
        if self._held < self._needed:
            return
        # Whole: its body is joined straight from the pieces (one copy, no copy of the
        # frame before it), and what came after it is split in place.
        needed = self._needed
        after = self._held - needed
        last = pieces[-1]
        if after:
            pieces[-1] = memoryview(last)[: len(last) - after]  # (views: joined, not copied first)
        if len(pieces[0]) < _LONGEST_HEAD:  # (the frame's header and head in one piece)
            pieces[:] = [b"".join(pieces)]
        first = pieces[0]
        op, request_id = _OP_AND_ID.unpack_from(first, 4)
        head = self._heads.get(op) if self._heads else None
        self._pieces = []
        self._held = self._needed = 0
        self.partial = False
        at = 9 if head is None else 9 + head.size
        if at > needed:
            raise self._short(op)
        values = None if head is None else head.unpack_from(first, 9)
        pieces[0] = memoryview(first)[at:]
        body = b"".join(pieces)
        del pieces, first  # (the views go: the pieces are freed before the next frame is cut)
        yield op, request_id, body if head is None else (values, body)
        if after:
            yield from self._split(last, len(last) - after)

    def _gather_large(self) -> None:
        """The frame in progress is large: from now on it is gathered in a memory map."""
        self._large = large = mmap.mmap(-1, self._needed)
        for piece in self._pieces:
            large.write(piece)
        self._pieces = []
        self._held = 0

    def _bad_length(self, length: int) -> FrameError:
        if length > self.max_frame_bytes:
            return FrameTooLarge(length, self.max_frame_bytes)
        return FrameError(f"frame length {length} is shorter than a frame header")

    @staticmethod
    def _short(op: int) -> FrameError:
        return FrameError(f"{_op_name(op)} shorter than its header")

    def deliveries_reader(self, subscribers, otherwise, response):
        """A function taking what a client read: when that is one whole DELIVERY frame and
        nothing is buffered (a subscriber keeping up with a stream gets one per message),
        its messages go straight to subscribers[handle].on_delivery(start, stop, entry),
        the entry copied once (to nobody when the handle has no subscriber, one released
        meanwhile); when it is one whole RESPONSE (a publisher waiting on each reply gets
        one per request), straight to `response(request_id, body)`; anything else goes
        to `otherwise(data)`, which feeds this decoder. `subscribers` is read at each
        call (a dict the caller keeps up to date)."""
        unpack = _DELIVERY_PREFIX.unpack_from
        entry_at = _DELIVERY_PREFIX.size
        max_length = self.max_frame_bytes
        get = subscribers.get
        decoder = self

        def read(data) -> None:
            size = len(data)
            if size >= entry_at and not decoder.partial:
                length, op, request_id, handle, start, stop = unpack(data)
                if length + 4 == size and length <= max_length:
                    if op == _DELIVERY:
                        subscriber = get(handle)
                        if subscriber is not None:
                            subscriber.on_delivery(start, stop, data[entry_at:])
                        return
                    if op == _RESPONSE:
                        response(request_id, data[FRAME_HEADER_SIZE:])
                        return
            otherwise(data)

        return read

    def _feed_large(self, data):
        """Go on gathering a large frame; once whole, decode it and what follows."""
        large = self._large
        room = len(large) - large.tell()
        if len(data) < room:
            large.write(data)
            return
        data = memoryview(data)
        large.write(data[:room])
        op, request_id = _OP_AND_ID.unpack_from(large, 4)
        head = self._heads.get(op)
        short = head is not None and len(large) - 9 < head.size
        if head is None:
            frame = (op, request_id, large[9:])
        elif not short:
            frame = (op, request_id, (head.unpack_from(large, 9), large[9 + head.size :]))
        large.close()
        self._large = None
        self.partial = False
        if short:
            raise self._short(op)
        yield frame
        if len(data) > room:
            yield from self._split(bytes(data[room:]))


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return f"op {op}"


_DELIVERY_PREFIX = struct.Struct("!IBI" + DELIVERY_HEAD.format[1:])  # frame header and head
_DELIVERY_LENGTH = _DELIVERY_PREFIX.size - 4  # a DELIVERY's length without its entry
_DELIVERY = int(Op.DELIVERY)
_RESPONSE = int(Op.RESPONSE)
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
