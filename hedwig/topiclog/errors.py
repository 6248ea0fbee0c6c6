"""What can go wrong in a topic log, as exceptions the hub maps to statuses.

The errors that make a log unusable for appends (closed, fenced, failed) also derive
from `hedwig.ledger.LedgerError`, so a caller handling an append's documented failures
(LedgerStoreFull / LedgerError) handles them too.
"""

from hedwig.ledger.interface import LedgerError


class LogError(Exception):
    """A topic log operation failed; the message names the topic and the reason."""


class SeqNotRetained(LogError):
    """A read asked for seq-ids that garbage collection or retention already removed (the
    hub answers it SEQ_OUT_OF_RANGE, which a client raises as its SeqOutOfRange)."""

    def __init__(self, topic: str, seq: int, first_seq: int):
        super().__init__(f"topic {topic}: seq-id {seq} is no longer retained (first retained: {first_seq})")
        self.topic = topic
        self.seq = seq
        self.first_seq = first_seq


class LogCorrupt(LogError):
    """Metadata and ledger contents disagree (a missing ledger, an entry that does not hold
    the seq-ids its range says): the topic cannot be served until an operator looks."""


class EntriesUnreadable(LogCorrupt):
    """Seq-ids from `first_seq` (to `last_seq`, None when unknown) cannot be read: their
    entry is damaged or their ledger is missing. The message is the client's: the topic
    and the seq-ids, never a server path; `detail` is the operator's (ledger, entry,
    page and offset), logged where the damage is found."""

    def __init__(self, topic: str, first_seq: int, last_seq: int | None, why: str, detail: str = ""):
        seqs = f"seq-ids {first_seq}..{last_seq}" if last_seq is not None else f"seq-id {first_seq}"
        super().__init__(f"topic {topic}: {seqs} cannot be read ({why})")
        self.topic = topic
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.detail = detail


class TopicCapReached(LogError):
    """Creating the topic would pass the hub's cap on topics ([log] max_topics); nothing
    was created (answered TOO_MANY_TOPICS, a client's TooManyTopics)."""

    def __init__(self, topic: str, max_topics: int):
        super().__init__(f"topic {topic} not created: this hub holds its maximum of {max_topics} topics")
        self.topic = topic
        self.max_topics = max_topics


class LogUnavailable(LogError, LedgerError):
    """The log takes no more appends; open the topic again to continue."""


class LogClosed(LogUnavailable):
    """The log was closed (the hub released the topic or is shutting down)."""


class TopicFenced(LogUnavailable):
    """A compare-and-set on the topic's ledger ranges lost: another hub acquired the topic,
    so this hub must stop writing it."""


class LogFailed(LogUnavailable):
    """An append failed after the store had accepted it (a failed sync): the ledger's
    tail is uncertain, so the log stops; reopening recovers the ledger as it is on disk."""
