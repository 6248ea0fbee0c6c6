"""Hub-wide totals of what shared and pull subscriptions, and message bounds, did.

Counted where it happens (per range acknowledged, per lease, per skip: never per message)
and only ever added to, so /metrics can serve them as Prometheus counters whatever
subscriptions come and go.
"""

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class WorkQueueCounters:
    acked: int = 0  # messages acknowledged one by one (ACK), newly
    nacked: int = 0  # messages taken back by a NACK
    expired: int = 0  # messages taken back when their ack_timeout passed
    redelivered: int = 0  # messages delivered again (REDELIVERY)
    dead_lettered: int = 0  # messages published to a dead-letter topic and acknowledged
    skipped_by_bound: int = 0  # messages a message bound skipped before they were consumed
    fetches: int = 0  # FETCH requests taken
    ttl_expired: int = 0  # messages whose TTL passed before their delivery: not delivered

    def snapshot(self) -> dict:
        return asdict(self)
