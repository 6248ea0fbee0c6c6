"""Ledger stores: append-only, dense entry ids, closed once; memory-mapped by default."""

from hedwig.ledger.interface import (
    ILedgerStore,
    LedgerClosed,
    LedgerError,
    LedgerStoreFull,
    NoSuchLedger,
)

__all__ = ["ILedgerStore", "LedgerClosed", "LedgerError", "LedgerStoreFull", "NoSuchLedger"]
