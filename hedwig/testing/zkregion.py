"""Hub processes of one region of several hubs on a real ZooKeeper (tests and bench/).

Every hub of the region is started as a user starts one: `hedwig hub --conf FILE
--zookeeper HOST:PORT --data-dir ROOT`, the same configuration file (a root of the
region's own in ZooKeeper, a short session timeout) and the same storage root.
"""

import itertools
import os
from pathlib import Path

from hedwig.testing.hubprocess import HubProcess

_roots = itertools.count()


class RegionHubs:
    """The hubs of one region, started one by one (`add`), stopped together."""

    def __init__(
        self,
        zookeeper,
        directory,
        *,
        session_timeout_ms: int = 2000,
        conf: str = "",
        root: str | None = None,
        region: str = "",
        region_settings: dict | None = None,
        http: bool = False,
        tls: bool = False,
        kafka: bool = False,
    ):
        """`region`: [region] name; `region_settings`: more [region] settings (parent,
        parent_address, ...); `conf`: more sections, as hub.conf text; `kafka`: every hub
        serves Kafka clients on a port of its own (HubProcess.kafka_port)."""
        self.zookeeper = zookeeper
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.root = root or f"/region-{os.getpid()}-{next(_roots)}"
        self.data_dir = self.directory / "storage"
        self.session_timeout_ms = session_timeout_ms
        self.http = http
        self.kafka = kafka
        self.tls = tls  # `conf` enables [tls] (port 0): each hub's TLS port is read from its log
        self.conf = self.directory / "hub.conf"
        settings = {"name": region} if region else {}
        settings.update(region_settings or {})
        lines = "".join(f"{key} = {value}\n" for key, value in settings.items())
        region_section = f"[region]\n{lines}" if settings else ""
        self.conf.write_text(
            f"[zookeeper]\nroot = {self.root}\nsession_timeout_ms = {session_timeout_ms}\n"
            f"connect_timeout_s = 10\n{region_section}{conf}\n"
        )
        self.hubs: list[HubProcess] = []

    @property
    def addresses(self) -> str:
        """Every started hub's address, "a:1,b:2" (clients try them in turn)."""
        return ",".join(hub.address for hub in self.hubs)

    def add(self, *extra_args: str, launcher=None, host: str = "127.0.0.1") -> HubProcess:
        """One more hub started; `launcher` and `host` as HubProcess takes them (a hub run
        in a network namespace of its own, on its address: hedwig.testing.faults)."""
        hub = HubProcess(
            self.data_dir,
            0,
            "--conf",
            str(self.conf),
            "--zookeeper",
            self.zookeeper.address,
            *extra_args,
            http=self.http,
            tls=self.tls,
            kafka=self.kafka,
            launcher=launcher,
            host=host,
        )
        self.hubs.append(hub)
        return hub.start()

    def start(self, count: int) -> "RegionHubs":
        for _ in range(count):
            self.add()
        return self

    def hub_at(self, address: str) -> HubProcess:
        return next(hub for hub in self.hubs if hub.address == address)

    def others(self, address: str) -> list:
        return [hub for hub in self.hubs if hub.address != address and hub.running]

    def stop(self) -> None:
        for hub in self.hubs:
            hub.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()
