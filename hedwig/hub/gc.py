"""Periodic garbage collection of the topics open on this hub.

Every `gc_interval_s` each open topic first rolls its open ledger if that ledger's first
entry is older than `[log] max_ledger_age_s` (appends roll a busy topic themselves; this
pass is what closes the last ledger of a topic that has gone quiet), then deletes the
closed ledgers wholly consumed by every durable subscriber (Hedwig's messages-consumed
task) and applies its retention limits, so the ledger a roll just closed can go in the
same pass. A topic without subscribers collects with 0: only retention removes its
messages. Topics are collected one after another, and a run that is still going when the
next is due delays it (LoopingCall waits for the Deferred), so GC never piles up on a slow
disk.
"""

from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from hedwig.hub.periodic import PeriodicPass


class GarbageCollector(PeriodicPass):
    log = Logger()

    def __init__(self, topics, delivery, clock, interval_s: float):
        super().__init__(clock, interval_s, self.collect)
        self.topics = topics
        self.delivery = delivery
        self.runs = 0
        self.ledgers_deleted = 0
        self.ledgers_rolled = 0  # open ledgers closed by age from this pass

    @inlineCallbacks
    def collect(self):
        """Roll by age and collect every open topic once; Deferred[int] ledgers deleted."""
        deleted = 0
        for topic in self.topics.open_topics():
            topic_log = self.topics.get(topic)
            if topic_log is None:
                continue
            try:
                if (yield topic_log.roll_if_aged()):
                    self.ledgers_rolled += 1
                min_consumed = self.delivery.min_consumed(topic)
                deleted += yield topic_log.collect_garbage(min_consumed or 0)
            except Exception:
                self.log.failure("garbage collection of {topic} failed", topic=topic)
        self.runs += 1
        self.ledgers_deleted += deleted
        if deleted:
            self.log.info("garbage collection deleted {count} ledgers", count=deleted)
        return deleted
