"""Background compaction of the compacted topics open on this hub.

Every `[log] compaction_interval_s` (0: never; COMPACT asks for one at any time) each
open topic created with the compaction flag compacts its closed ledgers whose newest
entry is older than `min_compaction_lag_s` (hedwig.topiclog.compaction). Topics are
taken one after another, and a run still going when the next is due delays it
(LoopingCall waits for the Deferred), so compaction never piles up; each compaction
gives the reactor back between steps, so publishing goes on meanwhile. A topic deleted or
released while it is compacted stops its compaction (nothing lost): logged at debug.
"""

from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from hedwig.hub.periodic import PeriodicPass
from hedwig.topiclog.errors import LogClosed


class BackgroundCompaction(PeriodicPass):
    log = Logger()

    def __init__(self, topics, clock, interval_s: float):
        super().__init__(clock, interval_s, self.compact)
        self.topics = topics
        self.runs = 0
        self.compactions = 0  # spans rewritten

    @inlineCallbacks
    def compact(self):
        """Compact every open compacted topic once; Deferred[int] spans rewritten."""
        done = 0
        for topic in self.topics.open_topics():
            topic_log = self.topics.get(topic)
            if topic_log is None or not topic_log.compaction:
                continue
            try:
                report = yield topic_log.compact()
            except LogClosed as e:  # (deleted or released meanwhile: its compaction stopped)
                self.log.debug("compaction of {topic} stopped: {error}", topic=topic, error=e)
                continue
            except Exception:
                self.log.failure("compaction of {topic} failed", topic=topic)
                continue
            if report["span"] is not None:
                done += 1
        self.runs += 1
        self.compactions += done
        return done
