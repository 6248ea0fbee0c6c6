"""A topic log's moving parts: its states, an append in flight, the ledger it writes.

Shared by topic_log.py (the writer) and ledgers.py (rolls and garbage collection)."""

from enum import Enum

from hedwig.meta.interface import NO_LEDGER
from hedwig.topiclog.ledger_index import LedgerIndex


class LogState(Enum):
    """Where a topic log is in its life: OPEN takes appends; CLOSING lets those accepted
    finish and closes the ledger; CLOSED is done; FAILED stopped on an error it cannot
    get past (a failed sync, a lost compare-and-set) and closes too. A roll is not a
    state but a barrier inside OPEN (appends wait behind it in order)."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"
    FAILED = "failed"


MAX_COUNT = (1 << 32) - 1  # the entry header's u32 message count
SEQ_LIMIT = 1 << 64
NO_LIMIT = 1 << 62


def check_append(message_set, count, origin, origin_seq) -> None:
    """Refuse (ValueError, TypeError) an append's arguments that cannot be stored."""
    if type(count) is not int or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"an entry holds 1..{MAX_COUNT} messages, not {count!r}")
    if not isinstance(message_set, (bytes, bytearray, memoryview)):
        raise TypeError(f"a message set is bytes-like, not {type(message_set).__name__}")
    if not len(message_set):
        raise ValueError("an empty message set")
    if len(origin) > 255:
        raise ValueError("region names are at most 255 bytes")
    if origin_seq is not None and (type(origin_seq) is not int or not 1 <= origin_seq < SEQ_LIMIT):
        raise ValueError(f"origin seq-ids are positive 64-bit integers, not {origin_seq!r}")


class PendingAppend:
    """One append call, from the call until its outcome is out. `deferred` is made only
    for an append not answered within its call (TopicLog.append_now): one acknowledged
    at once, the usual case, costs no Deferred."""

    __slots__ = (
        "count",
        "deferred",
        "done",
        "entry",
        "failure",
        "message_set",
        "origin",
        "origin_seq",
        "out",
        "producer",
        "time_us",
        "via",
    )

    def __init__(self, message_set, count, origin, origin_seq, time_us, via=b"", producer=None):
        self.deferred = None
        self.out = False  # its outcome left the log (acknowledged or failed, in call order)
        self.message_set = message_set
        self.count = count
        self.origin = origin  # encoded region name
        self.origin_seq = origin_seq
        self.time_us = time_us
        self.via = via  # encoded neighbour region a relayed entry came from (b"" when published here)
        self.producer = producer  # (producer id, sequence) of an idempotent publish, or None
        self.entry = None
        self.failure = None
        self.done = False


class OpenLedger:
    """The ledger appends go to, with the index of every entry handed to the store."""

    __slots__ = ("bytes", "closed", "entries", "first_seq", "index", "ledger_id", "roll_after_us")

    def __init__(self, ledger_id: int, first_seq: int):
        self.ledger_id = ledger_id
        self.first_seq = first_seq
        self.index = LedgerIndex(first_seq)
        self.entries = 0  # len(index), kept as an int for the append path
        self.bytes = 0
        # (NO_LEDGER, a topic just acquired: closed, so the first append rolls to a real one)
        self.closed = ledger_id == NO_LEDGER
        # Publish time past which the ledger is too old to take more (its first entry's
        # time + max_ledger_age_s); set when that first entry is handed to the store.
        self.roll_after_us = NO_LIMIT
