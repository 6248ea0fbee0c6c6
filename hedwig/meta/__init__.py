"""Metadata stores: topic ledger ranges and subscriptions, versioned with compare-and-set."""

from hedwig.meta.interface import (
    NEW,
    BadVersion,
    IMetadataStore,
    LedgerRange,
    MetadataError,
    SubscriptionState,
    Versioned,
)

__all__ = [
    "NEW",
    "BadVersion",
    "IMetadataStore",
    "LedgerRange",
    "MetadataError",
    "SubscriptionState",
    "Versioned",
]
