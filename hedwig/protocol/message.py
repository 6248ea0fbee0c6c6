"""The message as applications see it."""

from datetime import UTC, datetime


class Message:
    """One delivered message. `publish_time` is a UTC datetime made on first use."""

    __slots__ = (
        "topic",
        "seq",
        "payload",
        "publish_time_us",
        "properties",
        "origin_region",
        "origin_seq",
    )

    def __init__(self, topic, seq, payload, publish_time_us, properties, origin_region, origin_seq):
        self.topic = topic
        self.seq = seq
        self.payload = payload
        self.publish_time_us = publish_time_us
        self.properties = properties
        self.origin_region = origin_region
        self.origin_seq = origin_seq

    @property
    def publish_time(self) -> datetime:
        return datetime.fromtimestamp(self.publish_time_us / 1e6, tz=UTC)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, seq={self.seq}, payload={self.payload[:40]!r}, "
            f"origin={self.origin_region}:{self.origin_seq})"
        )

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None
