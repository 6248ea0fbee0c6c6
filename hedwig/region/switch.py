"""Relay subscriptions turned on and off as interest says, one operation per topic at a time.

Interest in a topic may come and go faster than a subscribe or unsubscribe completes (a
subscriber that subscribes and leaves at once). The switch remembers only what is wanted
and, when the operation in flight for a topic finishes, does whatever brings the topic to
that state, so no two operations on one topic ever race and the last word wins.
"""

from twisted.internet.defer import maybeDeferred
from twisted.python.failure import Failure


class TopicSwitch:
    def __init__(self, turn_on, turn_off, failed):
        """turn_on(topic) / turn_off(topic) -> Deferred; failed(topic, failure) is told when
        one fails (the topic then stays as it was until set again)."""
        self._turn_on = turn_on
        self._turn_off = turn_off
        self._failed = failed
        self._wanted: dict[str, bool] = {}
        self._busy: set[str] = set()
        self.on: set[str] = set()

    def set(self, topic: str, on: bool) -> None:
        self._wanted[topic] = on
        self._step(topic)

    def known_on(self, topic: str) -> None:
        """The topic's subscription exists already (found at start): off means deleting it."""
        self.on.add(topic)

    def is_busy(self, topic: str) -> bool:
        return topic in self._busy

    def wanted(self, topic: str) -> bool:
        return self._wanted.get(topic, topic in self.on)

    def _step(self, topic: str) -> None:
        if topic in self._busy:
            return
        want = self._wanted.get(topic)
        if want is None or want == (topic in self.on):
            self._wanted.pop(topic, None)
            return
        self._busy.add(topic)
        d = maybeDeferred(self._turn_on if want else self._turn_off, topic)
        d.addBoth(self._done, topic, want)

    def _done(self, result, topic: str, turned_on: bool) -> None:
        self._busy.discard(topic)
        if isinstance(result, Failure):
            self._wanted.pop(topic, None)
            self._failed(topic, result)
            return
        if turned_on:
            self.on.add(topic)
        else:
            self.on.discard(topic)
        self._step(topic)
