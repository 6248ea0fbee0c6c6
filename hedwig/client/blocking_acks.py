"""The blocking subscription's acknowledgements: batched, and sent before it waits only
when no message comes first.

Acknowledgements go to the hub in one CONSUME per `ack_every` seq-ids, and when the
subscription would wait: then, unless the oldest unsent one is already `ack_delay`
old, it waits up to `ack_delay` for a message first (one read with that constant
timeout: BlockingConnection.read_briefly) and sends them only if none came. A subscriber
keeping up with a stream so sends one CONSUME per `ack_every` messages, not one per
delivery (each of which would cost it a send, and the hub a wake-up and a read, beside
the publishes the stream is made of), and an idle one's pointer is current `ack_delay`
after its last ack. The window never waits on this: `ack_every` is at most half of it
(hedwig.protocol.position).
"""

import time

from hedwig.protocol.errors import HedwigError
from hedwig.protocol.position import seq_of


class DelayedAcks:
    """Mixed into the blocking Subscription (its `_position`, `_connection`, `_handle`,
    `_client` and `_ack_since`: when the oldest unsent acknowledgement was made)."""

    __slots__ = ()

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (cumulative): sent with the
        `ack_every`-th, or when the subscription waits (see the module's docstring)."""
        position = self._position
        to_send = position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._ack_since = None
            if self._connection is not None:
                self._send_consume(self._connection, to_send)
        elif self._ack_since is None and position.acked > position.sent_ack:
            self._ack_since = time.monotonic()

    def _ack_waits(self, connection, ready, deadline) -> bool:
        """Before waiting with an acknowledgement unsent: wait up to the client's
        ack_delay for a message instead of sending it, unless it is that old already.
        True when something came (the acknowledgement stays due)."""
        delay = self._client.ack_delay
        now = time.monotonic()
        if now - self._ack_since >= delay:
            return False
        if deadline is not None and deadline - now < delay:
            delay = max(deadline - now, 0.0)
        return connection.read_briefly(ready, delay)

    def _flush_ack(self, connection) -> None:
        self._ack_since = None
        to_send = self._position.unsent_ack()
        if to_send is not None:
            self._send_consume(connection, to_send)

    def _send_consume(self, connection, seq) -> None:
        handle = self._handle
        if handle is None:
            return
        try:
            connection.consume(handle, seq)
        except HedwigError:
            # Resubscribing sends the pointer again (sent_ack drops to the hub's value).
            self._position.not_sent(seq)
            self._ack_since = time.monotonic()
