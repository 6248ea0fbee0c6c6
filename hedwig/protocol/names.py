"""Topic and subscriber names: what the hub accepts, checked in one place."""

import re

_NAME = re.compile(rb"[A-Za-z0-9._-]{1,255}")
RESERVED_SUBSCRIBER_PREFIX = "__"


class InvalidName(ValueError):
    pass


def check_topic(topic) -> str:
    """Return the topic as str, or raise InvalidName saying what is wrong with it."""
    raw = topic.encode("utf-8") if isinstance(topic, str) else bytes(topic)
    if not _NAME.fullmatch(raw):
        if not raw:
            raise InvalidName("topic names are 1-255 bytes; this one is empty")
        if len(raw) > 255:
            raise InvalidName(f"topic names are 1-255 bytes; this one has {len(raw)}")
        shown = raw[:60].decode("utf-8", "backslashreplace")  # text, as the user typed it
        raise InvalidName(f"topic name {shown!r} has characters outside [A-Za-z0-9._-]")
    return raw.decode("ascii")


def check_subscriber_id(subscriber_id, allow_reserved: bool = False) -> str:
    """Subscriber ids follow topic rules; those beginning `__` belong to hubs."""
    try:
        name = check_topic(subscriber_id)
    except InvalidName as e:
        raise InvalidName(str(e).replace("topic", "subscriber id")) from None
    if not allow_reserved and name.startswith(RESERVED_SUBSCRIBER_PREFIX):
        raise InvalidName(f"subscriber ids beginning {RESERVED_SUBSCRIBER_PREFIX!r} are reserved for hubs")
    return name
