"""Metadata records as JSON text, checked on the way in and on the way out.

Every backend stores the same encodings (SQLite in a TEXT column, ZooKeeper as node data),
so a record written by one can be read by another, and a malformed record is refused with
a clear error before it is stored rather than found later by a reader.
"""

import base64
import json

from hedwig.meta.interface import MAX_ACKED_BYTES, LedgerRange, MetadataError, SubscriptionState


class BadRecord(MetadataError, ValueError):
    """A record that is not what the schema says (refused on write, reported on read)."""


# The largest integer a record may hold: SQLite's INTEGER (and ZooKeeper's JSON readers)
# stop at a signed 64-bit value; a bigger one must be refused here, as a bad record, and
# not fail deep inside the driver (sqlite3 raises OverflowError, no MetadataError).
MAX_INT = 2**63 - 1


def _is_int(value) -> bool:
    return type(value) is int and value <= MAX_INT


def check_ranges(ranges) -> list[LedgerRange]:
    """Ledger ranges as LedgerRanges: ascending, contiguous, non-empty, only the last open."""
    if not isinstance(ranges, (list, tuple)):
        raise BadRecord(f"ledger ranges are a list, not {type(ranges).__name__}")
    out = []
    for i, item in enumerate(ranges):
        if not isinstance(item, (list, tuple)) or len(item) != 3:
            raise BadRecord(f"ledger range {i}: expected (ledger_id, first_seq, last_seq), got {item!r}")
        ledger_id, first_seq, last_seq = item
        if not _is_int(ledger_id) or ledger_id < 0 or not _is_int(first_seq) or first_seq < 1:
            raise BadRecord(
                f"ledger range {i}: ledger id >= 0 and first seq-id >= 1 are integers <= {MAX_INT}: {item!r}"
            )
        if last_seq is None:
            if i != len(ranges) - 1:
                raise BadRecord(f"ledger range {i}: only the last range may be open")
        elif not _is_int(last_seq) or last_seq < first_seq:
            raise BadRecord(f"ledger range {i}: last seq-id must be an integer >= first seq-id: {item!r}")
        if out and first_seq != out[-1].last_seq + 1:
            raise BadRecord(
                f"ledger range {i} starts at {first_seq}; the previous one ends at {out[-1].last_seq}"
            )
        out.append(LedgerRange(ledger_id, first_seq, last_seq))
    return out


def check_garbage(ledger_ids, ranges) -> list[int]:
    """Ledger ids recorded as garbage: integers >= 0, none of them named by `ranges` (a
    ledger a topic still names is never garbage)."""
    if not isinstance(ledger_ids, (list, tuple, set, frozenset)):
        raise BadRecord(f"garbage ledgers are a list of ids, not {type(ledger_ids).__name__}")
    ids = sorted(set(ledger_ids)) if all(_is_int(i) for i in ledger_ids) else None
    if ids is None or (ids and ids[0] < 0):
        raise BadRecord(f"garbage ledger ids are integers >= 0: {sorted(ledger_ids, key=repr)!r}")
    named = {r.ledger_id for r in ranges}.intersection(ids)
    if named:
        raise BadRecord(f"ledgers {sorted(named)} are named by the ranges: they are not garbage")
    return ids


def encode_ranges(ranges) -> str:
    return json.dumps([list(r) for r in check_ranges(ranges)], separators=(",", ":"))


def decode_ranges(text) -> list[LedgerRange]:
    return decode_topic(text)[0]


# option -> its type: what a topic record may hold ("partitions": a partitioned topic's
# count, in its partition 0's record: hedwig.protocol.partitions; "ttl_ms": the expiry of
# its messages published without a ttl of their own)
_TOPIC_OPTIONS = {"compaction": bool, "partitions": int, "ttl_ms": int}


def check_options(options) -> dict:
    """A topic's options: known names, each of its type."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise BadRecord(f"topic options are a dict, not {type(options).__name__}")
    for name, value in options.items():
        kind = _TOPIC_OPTIONS.get(name)
        if kind is None or type(value) is not kind:
            raise BadRecord(f"unknown topic option {name}={value!r}")
    return dict(options)


def encode_topic(ranges, options=None) -> str:
    """A topic's record: its ranges alone (a JSON list) when it has no options, as
    before options existed; else {"ranges": [...], "options": {...}}."""
    options = {k: v for k, v in check_options(options).items() if v}
    ranges = [list(r) for r in check_ranges(ranges)]
    record = {"ranges": ranges, "options": options} if options else ranges
    return json.dumps(record, separators=(",", ":"), sort_keys=True)


def decode_topic(text) -> tuple[list[LedgerRange], dict]:
    """(ranges, options) of a topic's record, either form."""
    try:
        record = json.loads(text)
        if isinstance(record, dict):
            return check_ranges(record.get("ranges")), check_options(record.get("options"))
        return check_ranges(record), {}
    except (ValueError, TypeError) as e:
        raise BadRecord(f"stored ledger ranges are unreadable: {e}") from None


def check_subscription(state) -> SubscriptionState:
    if not isinstance(state, (list, tuple)) or len(state) not in (2, 3):
        raise BadRecord(f"a subscription state is (consumed_seq, preferences[, acked]), not {state!r}")
    consumed_seq, preferences, *rest = state
    if not _is_int(consumed_seq) or consumed_seq < 0:
        raise BadRecord(f"consumed seq-id must be an integer in 0..{MAX_INT}, not {consumed_seq!r}")
    if not isinstance(preferences, dict) or not all(isinstance(k, str) for k in preferences):
        raise BadRecord("subscription preferences are a dict with str keys")
    acked = rest[0] if rest else b""
    if acked.__class__ is not bytes:  # (the usual b"" and bytes cost no call: every pointer write)
        if not isinstance(acked, bytearray | memoryview):
            raise BadRecord(f"a subscription's acked field is bytes, not {type(acked).__name__}")
        acked = bytes(acked)
    if acked and len(acked) > MAX_ACKED_BYTES:
        raise BadRecord(
            f"a subscription's acked field holds at most {MAX_ACKED_BYTES} bytes, not {len(acked)}"
        )
    return SubscriptionState(consumed_seq, preferences, acked)


def encode_preferences(preferences: dict) -> str:
    try:
        return json.dumps(preferences, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise BadRecord(f"subscription preferences must be JSON-able: {e}") from None


def decode_preferences(text) -> dict:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise BadRecord(f"stored subscription preferences are unreadable: {e}") from None
    if not isinstance(value, dict):
        raise BadRecord("stored subscription preferences are not an object")
    return value


def check_name(kind: str, name) -> str:
    """A topic or subscriber name as a store takes it: a non-empty str."""
    if not isinstance(name, str) or not name:
        raise MetadataError(f"a {kind} is a non-empty str, not {name!r}")
    return name


def encode_subscription(state) -> str:
    """A subscription state as one JSON object (a ZooKeeper node's data). The acked bytes
    go in base64 under "acked", left out when empty: a record without acknowledgements
    above its pointer is the same text as before the field existed."""
    consumed_seq, preferences, acked = check_subscription(state)
    text = f'{{"consumed_seq":{consumed_seq},"preferences":{encode_preferences(preferences)}'
    if acked:
        return f'{text},"acked":"{base64.b64encode(acked).decode("ascii")}"}}'
    return text + "}"


def decode_subscription(text) -> SubscriptionState:
    """encode_subscription's text back; a record written before the acked field has b""."""
    try:
        value = json.loads(text)
        acked = value.get("acked", "")
        if not isinstance(acked, str):
            raise TypeError(f"acked is base64 text, not {type(acked).__name__}")
        acked = base64.b64decode(acked, validate=True) if acked else b""
        return check_subscription((value["consumed_seq"], value["preferences"], acked))
    except (ValueError, TypeError, KeyError, AttributeError) as e:  # (binascii.Error: a ValueError)
        raise BadRecord(f"a stored subscription is unreadable: {e}") from None


def check_version(version) -> int:
    if not _is_int(version) or version < -1:
        raise BadRecord(f"a record version is an integer >= -1 (NEW), not {version!r}")
    return version
