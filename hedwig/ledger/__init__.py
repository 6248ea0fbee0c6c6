"""Ledger stores: append-only, dense entry ids, closed once; memory-mapped by default."""

from hedwig.ledger.interface import (
    ILedgerStore,
    LedgerClosed,
    LedgerError,
    NoSuchLedger,
    StorageFull,
)

__all__ = ["ILedgerStore", "LedgerClosed", "LedgerError", "NoSuchLedger", "StorageFull"]
