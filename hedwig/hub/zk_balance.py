"""Topics leaving a hub of a region on their own: released when idle, shed when the hub
owns more than its share (ZkTopicManager.release does the moving; subscribers follow).

- Idle release (`topic_release_s`, Hedwig's retention_secs; 0: off): a topic that took no
  publish and had no attached subscriber for that long is released, so that it goes to
  the least loaded hub when next used. Checked from what the hub holds in memory (its
  last seq-id, its attached subscriptions), a few times per period.
- Rebalancing (`rebalance_interval_s`, and JOIN_SETTLE_S after a hub joins): the region's
  topics divided by its live hubs is each hub's share; a hub owning more than its share
  by more than `rebalance_tolerance` and by two topics at least releases the difference,
  at most `rebalance_max_shed` a round, those without attached subscribers first, none
  claimed in the last MIN_OWNED_S (so that a burst of new topics, placed least loaded
  first already, is not shuffled while the region's count is still small). Each topic
  shed is handed to the least loaded other hub (ZkTopicManager.hand_over), which claims
  it at once: a hub that joins, or comes back after a restart, owns its share within a
  round, whether or not the topics are in use; their subscribers, which TOPIC_MOVED sends
  to resubscribe, and publishers are redirected there. The share counts every topic of
  the region (owned or not), so a hub that shed topics nobody claimed yet does not shed
  again.
"""

import hashlib
import math

from twisted.application.service import Service
from twisted.internet.defer import DeferredList, inlineCallbacks
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from hedwig.meta.interface import MetadataError
from hedwig.meta.zk_session import CONNECTED

JOIN_SETTLE_S = 1.0  # a joined hub's first load is in ZooKeeper by then
MIN_OWNED_S = 5.0  # a topic claimed this recently is not shed


class Balancer(Service):
    log = Logger()

    def __init__(self, topics, registry, delivery, settings, clock):
        self.topics = topics  # ZkTopicManager
        self.registry = registry
        self.delivery = delivery
        self.settings = settings  # ZooKeeperSettings
        self.clock = clock
        self._loops = []
        self._seen = {}  # topic -> (last seq-id, when it was first seen there, idle)
        self._soon = None
        self._balancing = False
        self.released_idle = 0
        self.shed = 0

    def startService(self):
        super().startService()
        settings = self.settings
        if settings.topic_release_s > 0:
            self._loop(self.release_idle, min(settings.topic_release_s / 4, 5.0))
        self._loop(self.rebalance, settings.rebalance_interval_s)
        self.registry.listeners.append(self._hubs_changed)

    def _loop(self, work, interval: float) -> None:
        loop = LoopingCall(work)
        loop.clock = self.clock
        loop.start(interval, now=False).addErrback(lambda f: self.log.failure("{work} failed", f, work=work))
        self._loops.append(loop)

    def stopService(self):
        super().stopService()
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if self._soon is not None and self._soon.active():
            self._soon.cancel()
        if self._hubs_changed in self.registry.listeners:
            self.registry.listeners.remove(self._hubs_changed)

    # -- idle topics ------------------------------------------------------------------------

    def release_idle(self) -> None:
        now = self.clock.seconds()
        owned = self.topics.owned_topics()
        for topic in owned:
            topic_log = self.topics.get(topic)
            if topic_log is None:
                continue
            last_seq = topic_log.last_seq
            seen = self._seen.get(topic)
            if seen is None or seen[0] != last_seq or self.delivery.attached(topic):
                self._seen[topic] = (last_seq, now)
            elif now - seen[1] >= self.settings.topic_release_s:
                del self._seen[topic]
                self.released_idle += 1
                self.log.info(
                    "topic {topic} idle for {seconds:.0f} s: released", topic=topic, seconds=now - seen[1]
                )
                self.topics.release(topic)
        for topic in set(self._seen) - set(owned):
            del self._seen[topic]

    # -- rebalancing ------------------------------------------------------------------------

    def _hubs_changed(self, joined, left) -> None:
        if joined - {self.registry.name}:
            self._again(JOIN_SETTLE_S)

    def _again(self, delay: float) -> None:
        """A rebalancing round `delay` from now (unless one is due sooner)."""
        if self._soon is not None and self._soon.active():
            if self._soon.getTime() <= self.clock.seconds() + delay:
                return
            self._soon.cancel()
        self._soon = self.clock.callLater(delay, self.rebalance)

    @inlineCallbacks
    def rebalance(self):
        """One round: shed what this hub owns beyond its share (see the module docstring).
        It never fails: ZooKeeper lost meanwhile (a routine of a region) skips the round
        with a line saying so, and the next round comes as planned."""
        if self._balancing or not self.running:
            return
        if self.topics.session.state != CONNECTED or not self.registry.registered:
            return
        self._balancing = True
        try:
            yield self._rebalance()
        except Exception as e:
            from kazoo.exceptions import KazooException

            if isinstance(e, MetadataError | KazooException):
                self.log.warn("rebalancing skipped this round: {error!r}", error=e)
            else:
                self.log.failure("rebalancing failed this round")
        finally:
            self._balancing = False

    @inlineCallbacks
    def _rebalance(self):
        hubs = len(set(self.registry.hubs) | {self.registry.name})
        if hubs < 2:
            return
        region_topics = len((yield self.topics.list_topics()))
        share = math.ceil(region_topics / hubs)
        mine = self.topics.owned_topics()
        if len(mine) <= max(share + 1, share * (1 + self.settings.rebalance_tolerance)):
            return
        settled = self.clock.seconds() - MIN_OWNED_S
        movable = [topic for topic in mine if self.topics.claimed_at(topic) <= settled]
        if len(movable) < len(mine) - share:  # some are too new yet: look again then
            self._again(MIN_OWNED_S)
        count = min(len(mine) - share, len(movable), self.settings.rebalance_max_shed)
        if count <= 0:
            return
        chosen = sorted(movable, key=lambda t: (self.delivery.attached(t), _order(t, self.registry.name)))
        chosen = chosen[:count]
        targets = {}
        for topic in chosen:  # (each counted at its hub as it is chosen: spread over them)
            targets[topic] = self.registry.place_elsewhere(topic)
            self.registry.sent(targets[topic])
        self.log.info(
            "rebalancing: {mine} topics owned, the share of {hubs} hubs is {share} of {total}:"
            " releasing {count}",
            mine=len(mine),
            hubs=hubs,
            share=share,
            total=region_topics,
            count=count,
        )
        self.shed += count
        why = f"rebalancing: {len(mine)} of the region's {region_topics} topics were there, {hubs} hubs"
        handing = [self.topics.hand_over(topic, targets[topic], why) for topic in chosen]
        yield DeferredList(handing, consumeErrors=True)


def _order(topic: str, hub: str) -> bytes:
    """Which topics a hub sheds first among equals: spread, and the same every round."""
    return hashlib.blake2b(f"{hub}\0{topic}".encode(), digest_size=8).digest()
