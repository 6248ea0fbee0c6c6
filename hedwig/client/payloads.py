"""What a client publishes: payloads (bytes-like as they are, or text, sent as UTF-8),
and the Twisted and asyncio clients' batches of them waiting to go out.

Applications publish text as often as bytes; encoding it here, once for both clients,
spares every caller the `.encode()` and gives anything else one clear TypeError before a
message set is built.
"""


def payload_bytes(payload):
    """`payload` as the bytes to send: str as UTF-8, bytes-like objects unchanged."""
    if isinstance(payload, str):
        return payload.encode("utf-8")
    if isinstance(payload, bytes | bytearray | memoryview):
        return payload
    raise TypeError(f"a payload is bytes or str, not {type(payload).__name__}")


def payloads_bytes(payloads) -> list:
    """Each payload as payload_bytes gives it."""
    return [payload_bytes(p) for p in payloads]


class PublishBatch:
    """Messages of one topic waiting to go out as one message set (the Twisted and asyncio
    clients); `waiters` are the Deferreds or Futures of its publishes, in order."""

    __slots__ = ("payloads", "properties", "size", "waiters")

    def __init__(self):
        self.payloads = []
        self.properties = None  # a list parallel to payloads once any message has some
        self.waiters = []
        self.size = 0
