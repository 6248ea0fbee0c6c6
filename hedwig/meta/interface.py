"""The metadata seam: topics' ledger ranges and subscriptions, versioned.

Every record carries a version; writes name the version they replace (compare-and-set),
as Hedwig's metadata managers do, so two hubs racing for a topic cannot both win. The
embedded backend is SQLite (`hedwig.meta.sqlite_store`); a ZooKeeper backend can sit
behind the same interface. Every method returns a Deferred.
"""

from typing import NamedTuple

from zope.interface import Interface


class MetadataError(Exception):
    pass


class MetadataFull(MetadataError):
    """The metadata could not be written: its disk is full. Nothing was changed; the
    same write succeeds once space returns."""


class MetadataMissing(MetadataError):
    """The metadata is missing or records nothing while the caller holds data it must
    describe: serving from it would start every topic afresh (reusing seq-ids) and take
    the existing ledgers for garbage."""


class BadVersion(MetadataError):
    """A compare-and-set named a version that is no longer current (or the record exists
    when creating, or is missing when updating)."""


class OwnershipLost(BadVersion):
    """A write of a topic's records by a hub that no longer owns the topic: another hub
    claimed it since (in a region on ZooKeeper, its ownership epoch moved), or this hub
    let it go. Nothing was changed; the hub must stop serving the topic."""

    def __init__(self, topic: str, why: str):
        super().__init__(f"topic {topic}: {why}")
        self.topic = topic


class MetadataUnavailable(MetadataError):
    """The metadata service cannot be reached now (the ZooKeeper connection is down). A
    write that fails so may or may not have been applied: its record's version says so
    on the next read, and a compare-and-set never applies twice."""


class LedgerRange(NamedTuple):
    """Seq-ids first_seq..last_seq of a topic live in ledger `ledger_id` (entry ids from 0).
    last_seq is None for the topic's open ledger, whose end is the ledger's end."""

    ledger_id: int
    first_seq: int
    last_seq: int | None


# The ledger id of an open range that names no ledger yet: a topic acquired for reading
# records where its next seq-id begins, and its first append creates the ledger (a read
# never creates one). Ledger ids start at 1, so this names none.
NO_LEDGER = 0


def ledger_ids(ranges) -> list[int]:
    """The ids of the ledgers `ranges` name (an open range of NO_LEDGER names none)."""
    return [r[0] for r in ranges if r[0] != NO_LEDGER]


# The most bytes a subscription's `acked` field may hold: a store refuses more (BadRecord).
# (A ZooKeeper znode holds 1 MiB with its JSON; the delivery layer stays far below.)
MAX_ACKED_BYTES = 256 * 1024


class SubscriptionState(NamedTuple):
    consumed_seq: int  # everything up to here is consumed; delivery resumes at +1
    preferences: dict  # JSON-able: window, start, ...
    # Seq-ids above consumed_seq acknowledged one by one (shared and pull subscriptions),
    # in the delivery layer's compact encoding (hedwig.delivery.ranges): opaque bytes to a
    # store, kept and returned exactly as given; b"" for none.
    acked: bytes = b""


class Versioned(NamedTuple):
    value: object
    version: int
    # A topic's options, kept in its record beside the ranges ({"compaction": True}:
    # a compacted topic); None when it has none, and for a subscription's record.
    options: dict | None = None


NEW = -1  # the version to name when creating a record that must not exist yet


class IMetadataStore(Interface):
    def get_topic(topic):
        """Deferred[Versioned[list[LedgerRange]] | None]; its `options` are the topic's
        (a dict; None when none were written)."""

    def put_topic(topic, ranges, version, garbage=(), options=None):
        """Write the ledger ranges if the stored version is `version` (NEW: absent).
        Deferred[int new version]; fails with BadVersion. `options`: the topic's options
        (a JSON-able dict, written with the ranges in one record); None writes none, so
        a writer of a topic's ranges passes the options it read.

        `garbage`: ids of ledgers this write drops from the topic, recorded as garbage in
        the same transaction, so a crash between the write and their deletion leaves them
        positively known as garbage (nothing else ever lets a sweep delete a ledger)."""

    def delete_topic(topic, version, garbage=()):
        """Delete the topic's record if its version is `version`. Deferred[None]; fails
        with BadVersion. `garbage`: the ledgers it named, recorded as garbage in the same
        transaction (as put_topic does), so a crash before their files go leaves them
        positively known as garbage. Its subscriptions are records of their own."""

    def list_topics():
        """Deferred[list[str]], sorted."""

    def get_subscription(topic, subscriber_id):
        """Deferred[Versioned[SubscriptionState] | None].

        A subscription record is (consumed_seq, preferences, acked): an integer in
        0..2^63-1, a JSON-able dict with str keys, and opaque bytes of at most
        MAX_ACKED_BYTES (b"" when the writer gave none, and for every record written
        before the field existed). A store keeps all three, written together by one
        put_subscription, and returns `acked` as bytes, byte for byte as given."""

    def put_subscription(topic, subscriber_id, state, version):
        """Compare-and-set as put_topic. Deferred[int new version]. `state` is a
        SubscriptionState (or a (consumed_seq, preferences[, acked]) tuple); anything
        else, or an `acked` over MAX_ACKED_BYTES, fails with BadRecord and changes nothing."""

    def delete_subscription(topic, subscriber_id, version):
        """Deferred[None]; fails with BadVersion."""

    def list_subscriptions(topic):
        """Deferred[dict[str, Versioned[SubscriptionState]]]."""

    def list_garbage():
        """Deferred[dict[int, str]]: ledger id -> the topic that dropped it, for every
        ledger recorded as garbage and not yet forgotten."""

    def forget_garbage(ledger_ids):
        """Deferred[None]: drop the garbage records of these ledgers (their files are
        gone); unknown ids are ignored."""

    def close():
        """Deferred[None]."""
