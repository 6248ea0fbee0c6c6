"""Where a new subscription starts, from the forms users write to the wire form.

`start` is None (Hedwig's default: after the topic's last seq-id for a new subscription,
consumed+1 for an existing one), "earliest", "latest", a seq-id (int >= 1) or a datetime
(the first message published at or after it; a naive datetime is local time, as
`datetime.timestamp` takes it). The CLI also accepts the text forms: "earliest", "latest",
digits, or an ISO-8601 time.
"""

from datetime import datetime

from hedwig.protocol.position import SubscriptionPosition


def wire_start(start):
    """The protocol's start value (see hedwig.protocol.requests.encode_subscribe)."""
    if start is None or start in ("earliest", "latest"):
        return start
    if isinstance(start, datetime):
        return ("time", round(start.timestamp() * 1_000_000))
    if isinstance(start, int) and not isinstance(start, bool):
        if start < 1:
            raise ValueError(f"seq-ids start at 1; start={start} names none")
        return ("seq", start)
    raise ValueError(f"start must be 'earliest', 'latest', a seq-id or a datetime, not {start!r}")


def parse_start(text: str):
    """A start from the command line: earliest | latest | SEQ | ISO-8601 time."""
    text = text.strip()
    if text in ("earliest", "latest"):
        return text
    if text.isdigit():
        return int(text)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(
            f"--from {text!r}: expected earliest, latest, a seq-id or an ISO-8601 time"
        ) from None


def position_as_asked(client, topic, subscriber_id, mode, start, window, force_attach, deliver):
    """The SubscriptionPosition of a subscription as an application asks either client
    for it: `start` in any form wire_start takes, `window` None for the client's own."""
    return SubscriptionPosition(
        topic,
        subscriber_id,
        mode,
        wire_start(start),
        client.window if window is None else window,
        force_attach,
        client.ack_every,
        deliver,
    )
