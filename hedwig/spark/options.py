"""The options of the `hedwig` data source, parsed and checked once, on the driver.

Spark hands a data source its options as strings. Every option is checked here, so a
typo or a bad value fails the query at once with a message that names the option,
instead of a worker failing later (or a default silently staying in force):

    hub                      host:port[,host:port...]   required (port 4080 if left out)
    topics                   a,b,c                      required
    startingSeq              earliest | latest | {"a": 17, "b": "earliest"}
                             the first seq-id read (default: earliest for a batch read,
                             latest for a stream: a stream then sees only new messages)
    endingSeq                latest | {"a": 99, "b": "latest"}     batch reads only
                             the last seq-id read, inclusive (default: latest)
    maxMessagesPerPartition  split a topic's range into Spark partitions of at most this
                             many messages, read in parallel (default 250000)
    maxMessagesPerTrigger    streaming: at most this many messages per micro-batch, over
                             all topics (default: everything available)
    failOnDataLoss           true | false: whether a range that the hub has already
                             garbage collected fails the query (default true)
    maxBytesPerRequest       how many entry bytes one range read asks the hub for
                             (default 4 MiB; bounds a reader's memory)
    rowsPerBatch             Arrow record batch size handed to Spark (default 65536)
    timeout                  seconds to wait for a hub's reply (default 30)
    compacted                true | false: batch reads only: read each topic as a table,
                             one row per live key (its latest message; a key whose latest
                             message is a tombstone, an empty payload, and messages
                             without a key give no row); one partition per topic
    tls, tlsCa, tlsCert, tlsKey, tlsName, user, password
                             TLS and credentials, as the CLI's (hedwig/spark/access.py)

Option names are case-insensitive, as everywhere in Spark.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from hedwig.protocol.addresses import format_address, parse_address
from hedwig.protocol.names import InvalidName, check_topic
from hedwig.protocol.partitions import parent_of
from hedwig.spark.access import OPTION_NAMES, HubAccess, parse_access

EARLIEST = "earliest"
LATEST = "latest"

DEFAULT_MAX_MESSAGES_PER_PARTITION = 250_000
DEFAULT_MAX_BYTES_PER_REQUEST = 4 << 20
DEFAULT_ROWS_PER_BATCH = 65_536
DEFAULT_TIMEOUT_S = 30.0

_KNOWN = {
    name.lower(): name
    for name in (
        "hub",
        "topics",
        "startingSeq",
        "endingSeq",
        "maxMessagesPerPartition",
        "maxMessagesPerTrigger",
        "failOnDataLoss",
        "maxBytesPerRequest",
        "rowsPerBatch",
        "timeout",
        "compacted",
        *OPTION_NAMES,
    )
}


class OptionError(ValueError):
    """An option of the hedwig data source that is missing or has a bad value."""


@dataclass(frozen=True)
class SourceOptions:
    hubs: tuple  # ("host:port", ...)
    topics: tuple  # topic names, in the order given, without repeats
    starting: dict  # topic -> EARLIEST | LATEST | first seq-id to read
    ending: dict  # topic -> LATEST | last seq-id to read (batch reads)
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    max_messages_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    max_bytes_per_request: int = DEFAULT_MAX_BYTES_PER_REQUEST
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH
    timeout_s: float = DEFAULT_TIMEOUT_S
    access: HubAccess = field(default_factory=HubAccess)  # TLS and credentials
    compacted: bool = False  # one row per live key (batch reads)


def _parse_list(option: str, text: str, check, error, wanted: str) -> tuple:
    """The items of a comma-separated option, each through `check` (which raises `error`
    for a bad one), in the order given and without repeats; blank items are passed over,
    but an option naming none fails, saying what it `wanted`."""
    items = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            item = check(part)
        except error as e:
            raise OptionError(f"option {option!r}: {e}") from None
        if item not in items:
            items.append(item)
    if not items:
        raise OptionError(f"option {option!r} names no {wanted}")
    return tuple(items)


def parse_hubs(text: str) -> tuple:
    """ "host:port[,host:port...]" -> ("host:port", ...), each checked."""
    return _parse_list(
        "hub",
        text,
        lambda part: format_address(parse_address(part)),
        ValueError,
        "address: give host:port[,host:port...]",
    )


def parse_topics(text: str) -> tuple:
    return _parse_list("topics", text, check_topic, InvalidName, "topic: give a,b,c")


def _positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        raise OptionError(f"option {name!r} = {raw!r}: expected a positive whole number") from None
    if value < 1:
        raise OptionError(f"option {name!r} = {raw!r}: expected a positive whole number")
    return value


def _boolean(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name!r} = {raw!r}: expected true or false")


def parse_positions(name: str, raw: str, topics: tuple, words: tuple) -> dict:
    """A position option: one of `words` for every topic, or a JSON object giving each
    topic a seq-id (>= 1) or one of `words`; a partitioned topic's partitions (`T.p-K`)
    may have positions of their own (else they take their topic's: hubs.asked_for)."""
    text = raw.strip()
    if text.lower() in words:
        return dict.fromkeys(topics, text.lower())
    allowed = " or ".join(words)
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise OptionError(
            f"option {name!r} = {raw!r}: expected {allowed}, or a JSON object "
            f'{{"topic": seq-id or {allowed}}}'
        )
    unknown = sorted(t for t in value if t not in topics and parent_of(t)[0] not in topics)
    if unknown:
        raise OptionError(f"option {name!r} names topics that are not in 'topics': {', '.join(unknown)}")
    missing = [t for t in topics if t not in value]
    if missing:
        raise OptionError(f"option {name!r} gives no position for topics {', '.join(missing)}")
    positions = {}
    for topic in [*topics, *(t for t in value if t not in topics)]:
        position = value[topic]
        if isinstance(position, str) and position.lower() in words:
            positions[topic] = position.lower()
        elif isinstance(position, int) and not isinstance(position, bool) and position >= 1:
            positions[topic] = position
        else:
            raise OptionError(
                f"option {name!r}: topic {topic!r} has position {position!r}; "
                f"expected a seq-id (1 or more) or {allowed}"
            )
    return positions


def parse_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Check the data source's options; raise OptionError naming the first bad one."""
    given = {}
    for key, value in options.items():
        lowered = key.lower()
        if lowered not in _KNOWN:
            raise OptionError(
                f"unknown option {key!r} for the hedwig data source; known: {', '.join(_KNOWN.values())}"
            )
        given[lowered] = "" if value is None else str(value)
    for required in ("hub", "topics"):
        if required not in given:
            raise OptionError(f"option {required!r} is required by the hedwig data source")
    hubs = parse_hubs(given["hub"])
    topics = parse_topics(given["topics"])
    default_start = LATEST if streaming else EARLIEST
    starting = parse_positions(
        "startingSeq", given.get("startingseq", default_start), topics, (EARLIEST, LATEST)
    )
    if streaming and "endingseq" in given:
        raise OptionError("option 'endingSeq' is for batch reads; a stream reads on as messages arrive")
    if streaming and "compacted" in given:
        raise OptionError("option 'compacted' is for batch reads: a table as it is when read")
    if not streaming and "maxmessagespertrigger" in given:
        raise OptionError("option 'maxMessagesPerTrigger' is for streaming reads")
    ending = parse_positions("endingSeq", given.get("endingseq", LATEST), topics, (LATEST,))
    for topic in topics:
        start, end = starting[topic], ending[topic]
        if isinstance(start, int) and isinstance(end, int) and end < start - 1:
            raise OptionError(f"topic {topic!r}: endingSeq {end} is before startingSeq {start}")
    per_trigger = given.get("maxmessagespertrigger")
    timeout = given.get("timeout")
    if timeout is not None:
        try:
            timeout_s = float(timeout)
        except ValueError:
            timeout_s = -1.0
        if not timeout_s > 0:
            raise OptionError(f"option 'timeout' = {timeout!r}: expected a positive number of seconds")
    else:
        timeout_s = DEFAULT_TIMEOUT_S
    return SourceOptions(
        hubs=hubs,
        topics=topics,
        starting=starting,
        ending=ending,
        max_messages_per_partition=_positive_int(
            "maxMessagesPerPartition",
            given.get("maxmessagesperpartition", str(DEFAULT_MAX_MESSAGES_PER_PARTITION)),
        ),
        max_messages_per_trigger=(
            None if per_trigger is None else _positive_int("maxMessagesPerTrigger", per_trigger)
        ),
        fail_on_data_loss=_boolean("failOnDataLoss", given.get("failondataloss", "true")),
        max_bytes_per_request=_positive_int(
            "maxBytesPerRequest", given.get("maxbytesperrequest", str(DEFAULT_MAX_BYTES_PER_REQUEST))
        ),
        rows_per_batch=_positive_int("rowsPerBatch", given.get("rowsperbatch", str(DEFAULT_ROWS_PER_BATCH))),
        timeout_s=timeout_s,
        access=parse_access(given, OptionError),
        compacted=_boolean("compacted", given.get("compacted", "false")),
    )
