"""Delays between attempts to reach a parent region: doubling from a first delay to a cap.

A jitter of up to `jitter` (a fraction) shortens each delay at random, so the children of
a parent that comes back do not all reconnect in the same instant.
"""

import random


class Backoff:
    def __init__(self, first_s: float, max_s: float, jitter: float = 0.2, rng=None):
        if first_s <= 0 or max_s < first_s:
            raise ValueError(f"backoff {first_s}..{max_s} s: expected 0 < first <= max")
        self.first_s = first_s
        self.max_s = max_s
        self.jitter = jitter
        self._rng = rng if rng is not None else random.Random()
        self._next = first_s
        self.failures = 0  # attempts failed in a row

    def next_delay(self) -> float:
        """The delay before the next attempt (the one after it will be twice as long)."""
        delay = self._next
        self._next = min(self._next * 2, self.max_s)
        self.failures += 1
        if self.jitter:
            delay *= 1 - self.jitter * self._rng.random()
        return delay

    def longest(self) -> float:
        """The cap, for attempts that wait on someone fixing a configuration."""
        self.failures += 1
        self._next = self.max_s
        return self.max_s

    def reset(self) -> None:
        self._next = self.first_s
        self.failures = 0
