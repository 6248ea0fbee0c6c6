"""The message as applications see it."""

from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(slots=True)
class Message:
    """One delivered message. `publish_time` is a UTC datetime made on first use.
    `delivery_count`: how many times the hub has delivered it to this subscription (a
    shared or pull subscription's redeliveries count up from 2; always 1 otherwise).

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
    delivery_count: int = 1

    @property
    def publish_time(self) -> datetime:
        return datetime.fromtimestamp(self.publish_time_us / 1e6, tz=UTC)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, seq={self.seq}, payload={self.payload[:40]!r}, "
            f"origin={self.origin_region}:{self.origin_seq})"
        )
