"""Every subscriber attached to this hub, by the channel it is attached on.

An attachment is what holds a subscription on a channel: an exclusive subscriber's Cursor
(cursor.py), an AckOnlyAttachment (ack_only.py), or a Member of a shared or pull
subscription (members.py). They answer the same few questions (start, stop, pause,
resume, their channel, handle and subscription), so pausing, resuming and losing a
channel treat them alike. Ending one tells its channel why, with the event the client
sees; a channel that fails, or an entry that cannot be read, detaches it and writes its
subscription's pointer. What this counts (attaches, forced closes, channel errors) is
for the delivery manager's STATS.
"""

from twisted.logger import Logger

from hedwig.protocol.status import SubscriptionEvent

_logger = Logger()


class Attachments:
    """The attached subscribers of every channel, and which channels are paused."""

    def __init__(self):
        self._by_channel = {}  # channel -> {attachment}
        self._paused = set()  # channels whose transport asked us to stop
        self.subscribes = 0
        self.forced_closes = 0
        self.channel_errors = 0

    def hold(self, attachment) -> None:
        """Keep an attached cursor (or member) with its channel, and start it."""
        self._by_channel.setdefault(attachment.channel, set()).add(attachment)
        if attachment.channel in self._paused:
            attachment.paused = True
        self.subscribes += 1
        attachment.start()

    def detach(self, attachment) -> None:
        """Stop it and let its channel go of it; its subscription stays."""
        attachment.stop()
        if attachment.subscription.cursor is attachment:
            attachment.subscription.cursor = None
        attachments = self._by_channel.get(attachment.channel)
        if attachments is not None:
            attachments.discard(attachment)
            if not attachments:
                del self._by_channel[attachment.channel]
                self._paused.discard(attachment.channel)

    def end(self, attachment, event) -> None:
        """Detach it and tell its channel the subscription ended with `event`."""
        self.detach(attachment)
        self._tell_ended(attachment, event)

    def force_out(self, attachment) -> None:
        """Another attachment takes its subscription (force_attach), or the subscription
        is deleted with its topic: ended with SUBSCRIPTION_FORCED_CLOSED."""
        self.forced_closes += 1
        self.end(attachment, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)

    def channel_failed(self, attachment) -> None:
        """Its channel raised on deliver: stop that subscriber (its pointer stays)."""
        self.channel_errors += 1
        self.detach(attachment)
        attachment.subscription.flush().addErrback(lambda f: None)

    def unreadable(self, attachment, failure) -> None:
        """The entry it needs next cannot be read (damaged, or its ledger lost): the
        subscriber has everything before it; end the subscription with ENTRY_UNREADABLE
        rather than retry in silence. Its pointer stays where the subscriber consumed."""
        subscription = attachment.subscription
        _logger.error(
            "{topic}/{subscriber}: ending its subscription: {error}",
            topic=subscription.topic,
            subscriber=subscription.subscriber_id,
            error=failure.value,
        )
        self.detach(attachment)
        subscription.flush().addErrback(lambda f: None)
        self._tell_ended(attachment, SubscriptionEvent.ENTRY_UNREADABLE)

    @staticmethod
    def _tell_ended(attachment, event) -> None:
        try:
            attachment.channel.subscription_ended(attachment.handle, event)
        except Exception:
            _logger.failure("telling {handle} its subscription ended failed", handle=attachment.handle)

    # -- channels ------------------------------------------------------------------------

    def pause(self, channel) -> None:
        """The channel's transport is full: its attachments deliver nothing until resume."""
        self._paused.add(channel)
        for attachment in self._by_channel.get(channel, ()):
            attachment.pause()

    def resume(self, channel) -> None:
        self._paused.discard(channel)
        for attachment in list(self._by_channel.get(channel, ())):
            attachment.resume()

    def lose(self, channel) -> list:
        """The channel is gone: detach everything attached on it; what was detached."""
        attachments = list(self._by_channel.get(channel, ()))
        for attachment in attachments:
            self.detach(attachment)
        self._paused.discard(channel)
        return attachments

    def detach_all(self) -> None:
        """The hub stops: detach every attachment of every channel."""
        for attachments in list(self._by_channel.values()):
            for attachment in list(attachments):
                self.detach(attachment)
        self._paused.clear()

    # -- observation -----------------------------------------------------------------------

    def channels(self):
        """(channel, its attachments) of every channel holding one."""
        return self._by_channel.items()

    def all(self) -> list:
        """Every attachment held now."""
        return [a for attachments in self._by_channel.values() for a in attachments]

    @property
    def paused_channels(self) -> int:
        return len(self._paused)
