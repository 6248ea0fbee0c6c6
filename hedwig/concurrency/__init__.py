"""Waiting, written once: a group of waiters fired together, one outcome for many callers,
one operation at a time per topic (deferreds.py)."""
