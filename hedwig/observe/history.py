"""The last minutes of a hub's rates, for the status page's charts and its topic rates.

Every `interval_s` a sample reads the hub's counters (messages stored, from clients and
relayed in from other regions, and delivered; each open topic's last seq-id) and the
total backlog of the users' subscriptions, and keeps, in a ring of
`keep_s / interval_s` samples, the rates since the sample before. Memory is bounded by the
ring and by the open topics; the hub's hot paths are untouched (they only bump the
counters read here). Time comes in as an IReactorTime, so tests drive it with task.Clock.
"""

from collections import deque

from twisted.application.service import Service
from twisted.internet.task import LoopingCall
from twisted.logger import Logger


class History(Service):
    """Samples `view` (a HubView) on `clock` while the service runs."""

    log = Logger()

    def __init__(self, view, clock, interval_s: float, keep_s: float):
        self.view = view
        self.clock = clock
        self.interval_s = interval_s
        self.samples = deque(maxlen=max(2, int(keep_s / interval_s) + 1))
        self.topic_rates = {}  # topic -> messages/s over the last interval
        self._previous = None  # (time, published, delivered, {topic: last_seq})
        self._loop = LoopingCall(self.sample)
        self._loop.clock = clock

    def startService(self):
        super().startService()
        self._loop.start(self.interval_s, now=True).addErrback(
            lambda f: self.log.failure("sampling the hub for its status page failed", f)
        )

    def stopService(self):
        super().stopService()
        if self._loop.running:
            self._loop.stop()

    def sample(self) -> dict:
        """Take one sample now; returns it (appended to `samples` once a rate is known)."""
        now = self.clock.seconds()
        published, delivered = self.view.messages_stored(), self.view.hub.stats.messages_delivered
        last_seqs = {name: topic_log.last_seq for name, topic_log in self.view.open_topic_logs()}
        backlog = sum(row["backlog"] for row in self.view.subscriptions() if row["relay_to"] is None)
        sample = {"t": round(now, 3), "publish_rate": 0.0, "delivery_rate": 0.0, "backlog": backlog}
        previous = self._previous
        self._previous = (now, published, delivered, last_seqs)
        if previous is None:
            return sample
        then, published_then, delivered_then, seqs_then = previous
        elapsed = now - then
        if elapsed <= 0:
            return sample
        sample["publish_rate"] = round((published - published_then) / elapsed, 1)
        sample["delivery_rate"] = round((delivered - delivered_then) / elapsed, 1)
        self.topic_rates = {
            name: max(0, seq - seqs_then.get(name, seq)) / elapsed for name, seq in last_seqs.items()
        }
        self.samples.append(sample)
        return sample
