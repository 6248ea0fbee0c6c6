"""Entries an attached subscriber is not sent, and what passing over them does to its
consumed seq-id.

A cursor may carry a filter: a predicate of the entries it passes over instead of
delivering (today region relays', IRelayPolicy.entry_filter: a relay subscriber is not
sent what came from the region it relays to; a subscription's own filter would be asked
for in the same place, DeliveryManager._entry_filter). Seq-ids passed over are never
acknowledged by the subscriber, so they count as consumed once everything before them
is: at once when the subscriber's consumed seq-id already reaches them, else when a
consume does. PassedOver keeps those runs, in seq-ids (not entries), so a filter that
passes over part of an entry fits the same rule.
"""

from collections import deque


class PassedOver:
    """The runs of seq-ids a subscriber's filter passed over that no consume reached yet."""

    __slots__ = ("_runs",)

    def __init__(self):
        self._runs = deque()  # [the consumed seq-id that reaches the run, its last seq-id]

    def add(self, from_seq: int, last_seq: int) -> None:
        """Seq-ids from_seq..last_seq were passed over (after every earlier run)."""
        runs = self._runs
        if runs and runs[-1][1] == from_seq - 1:
            runs[-1][1] = last_seq
        else:
            runs.append([from_seq - 1, last_seq])

    def reach(self, seq: int) -> int:
        """The consumed seq-id a consume of `seq` comes to: past every run it reaches
        (those runs are then done)."""
        runs = self._runs
        while runs and runs[0][0] <= seq:
            seq = max(seq, runs.popleft()[1])
        return seq

    def __len__(self) -> int:
        return len(self._runs)
