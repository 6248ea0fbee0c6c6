"""Metadata stores: topic ledger ranges and subscriptions, versioned with compare-and-set."""
