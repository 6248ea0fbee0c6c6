"""The delivery manager: one cursor per subscriber, fed by the read-ahead cache."""

from hedwig.config import DeliverySettings


class DeliveryManager:
    """Every live subscription of a hub: cursors, windows and consume pointers."""

    def __init__(self, cache, metadata, clock, settings: DeliverySettings | None = None):
        self.cache = cache
        self.metadata = metadata
        self.clock = clock
        self.settings = settings or DeliverySettings()

    def subscribe(
        self,
        log,
        subscriber_id: str,
        channel,
        handle: int,
        *,
        mode: str = "create_or_attach",
        start=None,
        window: int | None = None,
        force_attach: bool = False,
    ):
        """Deferred[dict]: {"consumed_seq": .., "next_seq": ..}; fails with SubscribeError."""
        raise NotImplementedError

    def consume(self, topic: str, subscriber_id: str, seq: int) -> None:
        raise NotImplementedError

    def close_subscription(self, topic: str, subscriber_id: str):
        raise NotImplementedError

    def unsubscribe(self, topic: str, subscriber_id: str):
        raise NotImplementedError

    def pause_channel(self, channel) -> None:
        raise NotImplementedError

    def resume_channel(self, channel) -> None:
        raise NotImplementedError

    def channel_lost(self, channel):
        raise NotImplementedError

    def min_consumed(self, topic: str) -> int | None:
        raise NotImplementedError

    def describe(self, topic: str) -> list:
        raise NotImplementedError

    def stats(self) -> dict:
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError
