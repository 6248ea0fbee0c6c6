"""The message as applications see it."""

from dataclasses import dataclass
from datetime import UTC, datetime


class _NoProperties(dict):
    """The properties of a message published without any: one empty dict shared by all
    of them (a subscriber makes one object fewer per message), read-only so that no
    message's properties change another's."""

    __slots__ = ()

    def _read_only(self, *args, **kwargs):
        raise TypeError("a delivered message's properties are read-only")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __repr__(self) -> str:
        return "{}"


NO_PROPERTIES = _NoProperties()


@dataclass(slots=True)
class Message:
    """One delivered message. `publish_time` is a UTC datetime made on first use.

    A slotted dataclass: one is made per message on the client, and its generated
    __init__ is the plain assignments a hand-written one would be. Equal when every
    field is; unhashable, as the properties dict is."""

    topic: str
    seq: int
    payload: bytes
    publish_time_us: int
    properties: dict
    origin_region: str
    origin_seq: int
    # How many times the hub delivered it to this subscription: 1, except for a shared or
    # pull subscription's redeliveries (RedeliveredMessage). A class attribute, not a
    # field: a message costs nothing more to make for it.
    delivery_count = 1
    # Its key (bytes), None when it has none: a class attribute too, so a message
    # without a key costs what it did before keys; one with a key is a KeyedMessage.
    key = None

    @property
    def publish_time(self) -> datetime:
        return datetime.fromtimestamp(self.publish_time_us / 1e6, tz=UTC)

    def __repr__(self) -> str:
        key = "" if self.key is None else f", key={self.key[:40]!r}"
        return (
            f"{type(self).__name__}(topic={self.topic!r}, seq={self.seq}, payload={self.payload[:40]!r}, "
            f"origin={self.origin_region}:{self.origin_seq}{key})"
        )


@dataclass(slots=True, repr=False)
class KeyedMessage(Message):
    """A message with a key (bytes, at least one byte): `key` is a field here."""

    key: bytes


@dataclass(slots=True, repr=False)
class RedeliveredMessage(Message):
    """A message of a shared or pull subscription delivered again: its `delivery_count`
    (2 or more) says how many times; its key, if it has one, is kept."""

    delivery_count: int = 2
    key: bytes | None = None

    @classmethod
    def again(cls, message: Message, count: int) -> "RedeliveredMessage":
        return cls(
            message.topic,
            message.seq,
            message.payload,
            message.publish_time_us,
            message.properties,
            message.origin_region,
            message.origin_seq,
            count,
            message.key,
        )
