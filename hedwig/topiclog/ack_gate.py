"""Acknowledgements held hub-wide: while a hub in a region of several hubs cannot tell
whether it still owns its topics (its ZooKeeper connection is SUSPENDED), publishes are
stored but neither acknowledged nor delivered; the gate opens when the connection comes
back (or the session is LOST and the topics are released: an entry stored before any
other hub fenced its ledger is in that hub's recovery, so acknowledging it is safe, see
hedwig.ledger.fencing).

Every topic log of a TopicLogManager holds the manager's gate. A log whose next
acknowledgement finds the gate held parks itself here, and acknowledges in order once it
opens; failures are never held. An embedded hub's gate is never held: its cost on the
publish path is one attribute read per entry acknowledged.
"""


class AckGate:
    __slots__ = ("_parked", "held")

    def __init__(self):
        self.held = False
        self._parked = set()

    def park(self, topic_log) -> None:
        """A log with acknowledgements waiting for the gate."""
        self._parked.add(topic_log)

    @property
    def parked(self) -> int:
        return len(self._parked)

    def hold(self) -> None:
        self.held = True

    def release(self) -> None:
        """Open the gate: every parked log acknowledges what it holds, in order."""
        self.held = False
        parked, self._parked = self._parked, set()
        for topic_log in parked:
            topic_log.acknowledge_held()
