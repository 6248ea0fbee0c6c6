"""What a drain run is told: kept apart from the job itself, so the command line can be
built without importing Spark."""

from dataclasses import dataclass, field

from hedwig.spark.access import HubAccess
from hedwig.spark.options import DEFAULT_MAX_MESSAGES_PER_PARTITION

DEFAULT_SUBSCRIBER = "hedwig-drain"
DEFAULT_MAX_MESSAGES_PER_TRIGGER = 1_000_000


@dataclass(frozen=True)
class DrainSettings:
    hubs: tuple
    topics: tuple
    out: str
    checkpoint: str
    once: bool = False
    subscriber: str = DEFAULT_SUBSCRIBER
    max_messages_per_trigger: int | None = DEFAULT_MAX_MESSAGES_PER_TRIGGER
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    fail_on_data_loss: bool = True
    trigger_interval_s: float = 1.0
    progress_interval_s: float = 5.0
    access: HubAccess = field(default_factory=HubAccess)  # TLS and credentials, as the CLI's
    snapshot: bool = False  # write each topic's table (a live key a row) once, no checkpoint
