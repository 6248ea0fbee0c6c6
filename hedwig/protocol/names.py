"""Topic, subscriber and user names: what the hub accepts, checked in one place; and how
a string a peer chose is shown in a log line."""

import re

_NAME = re.compile(rb"[A-Za-z0-9._-]{1,255}")
_USER_NAME = re.compile(r"[A-Za-z0-9._@-]{1,64}")  # users (and regions) of the users file
RESERVED_SUBSCRIBER_PREFIX = "__"
PRINTABLE_LIMIT = 200  # characters of a peer's string a log line shows


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


def is_user_name(name) -> bool:
    """1-64 of [A-Za-z0-9._@-]: the users file's rule, which AUTH applies as it decodes."""
    return isinstance(name, str) and _USER_NAME.fullmatch(name) is not None


def printable(text, limit: int = PRINTABLE_LIMIT) -> str:
    """`text` (str or bytes, as a peer sent it) as one line that says what it was: control
    characters, quotes' look-alikes aside, and anything unprintable escaped as Python
    writes them (a newline is `\\n`), cut at `limit` characters with `...` after. A log line
    that embeds it cannot be made to look like two lines, or like the hub's own words."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "backslashreplace")
    elif not isinstance(text, str):
        text = str(text)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text + "..." if cut else text
