"""What a client publishes: payloads (bytes-like as they are, or text, sent as UTF-8).

Applications publish text as often as bytes; encoding it here, once for every client,
spares every caller the `.encode()` and gives anything else one clear TypeError before a
message set is built.
"""

from hedwig.protocol.compression import encode_published_set


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


def encode_payloads(payloads, properties, codec, keys=None) -> tuple:
    """(message set, message count, largest payload's size) of payloads as an application
    hands them to publish_many. Bytes-like payloads (the usual case) go straight to the
    encoder, which works per set at C speed; only a set it refuses (a str among them:
    b"".join names it) is converted first, so no Python runs per message on the way, and
    anything neither bytes nor str is payload_bytes's one clear TypeError. `keys`: None,
    or one key (bytes, str, or None for none) per payload."""
    try:
        message_set = encode_published_set(payloads, properties, codec, keys)
    except TypeError:
        payloads = payloads_bytes(payloads)
        message_set = encode_published_set(payloads, properties, codec, keys)
    return message_set, len(payloads), max(map(len, payloads))
