"""The [ledger] store choice and the [rados] settings, checked when the configuration is
read: replicated ledgers that cannot work (no ceph.conf where it says, a segment that
cannot hold the largest publish, a limit out of range) are refused in one sentence
naming the setting. Whether the cluster answers is found at start (one line, exit 1)."""

import os

from hedwig.config.settings import MIB, Config, ConfigError, check_bounds
from hedwig.ledger.rados_layout import MAX_OBJECT_BYTES

LEDGER_STORES = ("mmap", "rados")
SEGMENT_HEADROOM = 1 * MIB  # an entry's header and frame beyond its message set, with room


def on_rados(config: Config) -> bool:
    """Whether the hub keeps its ledgers in a RADOS pool."""
    return config.ledger.store == "rados"


def check_rados_settings(config: Config) -> None:
    if config.ledger.store not in LEDGER_STORES:
        raise ConfigError(f"[ledger] store = {config.ledger.store}: expected mmap or rados")
    rados = config.rados
    check_bounds(
        "rados",
        rados,
        [
            (
                "segment_bytes",
                lambda n: 4096 <= n <= MAX_OBJECT_BYTES,
                f"4096 to {MAX_OBJECT_BYTES} (RADOS caps an object)",
            ),
            ("max_in_flight", lambda n: 1 <= n <= 1024, "1 to 1024 writes"),
            ("op_timeout_s", lambda s: 0 < s <= 3600, "a positive number of seconds, at most 3600"),
        ],
    )
    for key in ("pool", "client_id"):
        if not getattr(rados, key).strip():
            raise ConfigError(
                f"[rados] {key} is empty: name the {'pool' if key == 'pool' else 'client'} to use"
            )
    if not on_rados(config):
        return
    if rados.segment_bytes < config.hub.max_frame_bytes + SEGMENT_HEADROOM:
        raise ConfigError(
            f"[rados] segment_bytes = {rados.segment_bytes}: must hold the largest publish, [hub]"
            f" max_frame_bytes ({config.hub.max_frame_bytes}) plus {SEGMENT_HEADROOM} bytes"
        )
    if not os.path.isfile(rados.conf_file):
        raise ConfigError(
            f"[rados] conf_file = {rados.conf_file}: no such file (the Ceph cluster's ceph.conf, naming its"
            " monitors and where the client's key is)"
        )
