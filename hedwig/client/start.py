"""Where a new subscription starts, from the forms users write to the wire form.

`start` is None (Hedwig's default: after the topic's last seq-id for a new subscription,
consumed+1 for an existing one), "earliest", "latest", a seq-id (int >= 1) or a datetime
(the first message published at or after it; a naive datetime is local time, as
`datetime.timestamp` takes it). The CLI also accepts the text forms: "earliest", "latest",
digits, or an ISO-8601 time.
"""

from datetime import datetime

from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.shared_position import SharedPosition
from hedwig.protocol.work_requests import SubscribeOptions, check_options, per_message


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


# What a subscribe() of any client takes beyond its named arguments (docs: the clients'
# subscribe docstrings): the work-queue options, the message bound, and the filter (a
# message selector, hedwig.selector) with whether it replaces the one the subscription has.
SUBSCRIBE_OPTIONS = (
    "ack_timeout",
    "max_deliveries",
    "dead_letter_topic",
    "message_bound",
    "filter",
    "replace_filter",
)
DELIVERIES = (True, False, "push", "pull")


def position_as_asked(
    config,
    topic,
    subscriber_id,
    mode="create_or_attach",
    start=None,
    window=None,
    force_attach=False,
    deliver=True,
    kind="exclusive",
    **options,
):
    """The position of a subscription as an application asks any client for it (`config`:
    the client's ClientConfig): `start` in any form wire_start takes, `window` None for
    the client's own; `deliver` True (or "push"), "pull", or False (acknowledgement only);
    `kind` "exclusive", "shared" or "key_shared"; `options`: ack_timeout (seconds), max_deliveries,
    dead_letter_topic, message_bound, filter (a message selector's text; None or blank:
    every message) and replace_filter (True: an existing subscription takes this filter
    in place of its own; without it a different filter is refused, ResubscribeRequired).
    A SharedPosition for a shared or pull subscription, else a SubscriptionPosition;
    ValueError (TypeError for an unknown option) for what cannot work."""
    unknown = set(options) - set(SUBSCRIBE_OPTIONS)
    if unknown:
        raise TypeError(
            f"subscribe() got unknown options {sorted(unknown)}: it takes {list(SUBSCRIBE_OPTIONS)}"
        )
    if not any(deliver is value or deliver == value for value in DELIVERIES):
        raise ValueError(
            f"deliver is True (push), 'push', 'pull' or False (acknowledgement only), not {deliver!r}"
        )
    ack_timeout = options.get("ack_timeout")
    if ack_timeout is not None and not 0 < ack_timeout < float("inf"):
        raise ValueError(f"ack_timeout is a number of seconds above 0, not {ack_timeout!r}")
    wanted = SubscribeOptions(
        kind,
        deliver == "pull",
        None if ack_timeout is None else max(1, round(ack_timeout * 1000)),
        options.get("max_deliveries"),
        options.get("message_bound"),
        options.get("dead_letter_topic"),
        _filter_text(options.get("filter")),
        options.get("replace_filter", False),
    )
    check_options(wanted, deliver is not False)
    window = config.window if window is None else window
    if per_message(kind, wanted.pull):
        return SharedPosition(
            topic, subscriber_id, mode, wire_start(start), window, force_attach, wanted, config.ack_every
        )
    return SubscriptionPosition(
        topic,
        subscriber_id,
        mode,
        wire_start(start),
        window,
        force_attach,
        config.ack_every,
        deliver is not False,
        SubscribeOptions(
            message_bound=wanted.message_bound, filter=wanted.filter, replace_filter=wanted.replace_filter
        ),
    )


def _filter_text(text):
    """A filter as SUBSCRIBE carries it: None for none (None, or blank text: every message)."""
    if isinstance(text, str) and not text.strip(" \t\f\n\r"):
        return None
    return text


def subscription_kind(position) -> str:
    """Which class of subscription a client makes for `position`: "ack_only", "pull",
    "shared" or "exclusive" (each client maps these to its own classes)."""
    if not position.deliver:
        return "ack_only"
    if isinstance(position, SharedPosition):
        return "pull" if position.pull else "shared"
    return "exclusive"


_CLASS_NAMES = {
    "exclusive": "Subscription",
    "ack_only": "AckOnlySubscription",
    "shared": "SharedSubscription",
    "pull": "PullSubscription",
}


def subscription_class(module, position):
    """The class of `module` (a client's subscriptions module, which names its classes
    alike) a client makes for `position`."""
    return getattr(module, _CLASS_NAMES[subscription_kind(position)])
