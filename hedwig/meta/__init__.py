"""Metadata stores: topic ledger ranges and subscriptions, versioned with compare-and-set."""

from hedwig.meta.codec import BadRecord
from hedwig.meta.interface import (
    MAX_ACKED_BYTES,
    NEW,
    BadVersion,
    IMetadataStore,
    LedgerRange,
    MetadataError,
    MetadataMissing,
    SubscriptionState,
    Versioned,
)
from hedwig.meta.sqlite_store import SqliteMetadataStore

__all__ = [
    "MAX_ACKED_BYTES",
    "NEW",
    "BadRecord",
    "BadVersion",
    "IMetadataStore",
    "LedgerRange",
    "MetadataError",
    "MetadataMissing",
    "SqliteMetadataStore",
    "SubscriptionState",
    "Versioned",
]
