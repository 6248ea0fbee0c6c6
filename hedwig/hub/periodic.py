"""A pass over the hub's topics every so often, as a service: garbage collection
(gc.py) and compaction (compactions.py) run so. The pass is a LoopingCall on the hub's
clock, not run at start; a pass still going when the next is due delays it (LoopingCall
waits for its Deferred), so passes never pile up; an interval of 0 runs none."""

from twisted.application.service import Service
from twisted.internet.task import LoopingCall


class PeriodicPass(Service):
    def __init__(self, clock, interval_s: float, run_pass):
        self.interval_s = interval_s
        self._loop = LoopingCall(run_pass)
        self._loop.clock = clock
        self._done = None

    def startService(self):
        super().startService()
        if self.interval_s > 0:
            self._done = self._loop.start(self.interval_s, now=False)

    def stopService(self):
        super().stopService()
        if self._loop.running:
            self._loop.stop()
        return self._done
