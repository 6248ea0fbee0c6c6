"""Region hubs as real processes on 127.0.0.1, each with its own data directory and
hub.conf, and what the tests wait on: a condition polled against the hubs' own reports
(STATS, DESCRIBE_TOPIC) until a deadline, never a sleep that hopes things are done."""

import threading
from pathlib import Path

from hedwig.client.blocking import Client
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until

DEADLINE_S = 60.0


class RegionHub:
    """One region's hub: `start` writes its hub.conf and runs `python -m hedwig hub`."""

    def __init__(
        self,
        root_dir: Path,
        name: str,
        parent: "RegionHub | str | None" = None,
        delivery=None,
        tls=None,
        log=None,
        **region,
    ):
        """`tls`: the hub's [tls] settings (a TLS listener on a free port when enabled);
        with `parent_tls = "true"` in `region` the link goes to the parent's TLS port;
        `log`: its [log] settings."""
        self.name = name
        self.dir = Path(root_dir) / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = 0  # a free one at the first start (read from its log), kept for restarts
        self.parent = parent
        self.region = {"retry_backoff_ms": 50, "max_retry_backoff_ms": 500, **region}
        self.delivery = {"consume_flush_ms": 100, **(delivery or {})}
        self.tls = dict(tls or {})
        self.log_settings = dict(log or {})
        self.tls_port = None
        if self.tls.get("enabled") == "true":
            self.tls_port = int(self.tls.setdefault("port", 0))
        self.process = None
        self._clients = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def tls_address(self) -> str:
        return f"127.0.0.1:{self.tls_port}"

    def write_conf(self) -> Path:
        lines = ["[hub]", "host = 127.0.0.1", f"port = {self.port}", f"data_dir = {self.dir / 'data'}"]
        lines += ["[delivery]", *(f"{key} = {value}" for key, value in self.delivery.items())]
        lines += ["[region]", f"name = {self.name}"]
        parent = self.parent
        if parent is not None:
            if isinstance(parent, RegionHub):
                address = parent.tls_address if self.region.get("parent_tls") == "true" else parent.address
                lines += [f"parent = {parent.name}", f"parent_address = {address}"]
            else:
                name, address = parent.split("@")
                lines += [f"parent = {name}", f"parent_address = {address}"]
        lines += [f"{key} = {value}" for key, value in self.region.items()]
        if self.log_settings:
            lines += ["[log]", *(f"{key} = {value}" for key, value in self.log_settings.items())]
        if self.tls:
            lines += ["[tls]", *(f"{key} = {value}" for key, value in self.tls.items())]
        conf = self.dir / "hub.conf"
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def start(self) -> "RegionHub":
        conf = self.write_conf()
        process = HubProcess(self.dir / "data", self.port, "--conf", str(conf), tls=self.tls_port is not None)
        self.process = process.start()
        self.port = process.port
        if self.tls_port is not None:
            self.tls_port = process.tls_port
            self.tls["port"] = self.tls_port  # the next start's configuration keeps it
        return self

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        for client in self._clients:
            try:
                client.close()
            except Exception:
                pass
        self._clients.clear()
        if self.process is not None:
            self.process.stop()

    def client(self, **options) -> Client:
        client = Client(self.address, **options).connect()
        self._clients.append(client)
        return client

    def log(self) -> str:
        return self.process.output() if self.process else ""

    # -- what the hub reports --------------------------------------------------------------

    def regions(self) -> dict:
        with Client(self.address, timeout=5) as client:
            return client.stats()["regions"]

    def relays(self, topic: str) -> list:
        with Client(self.address, timeout=5) as client:
            return client.describe(topic).get("relays", [])

    def linked(self) -> bool:
        """Relaying with its parent and holding the parent's interest snapshot."""
        parent = self.regions()["parent"]
        return parent is not None and parent["state"] == "relaying" and parent.get("interest_synced")

    def last_seq(self, topic: str) -> int:
        with Client(self.address, timeout=5) as client:
            return client.describe(topic)["last_seq"]

    def relays_out_to(self, topic: str) -> set:
        """Neighbours holding a relay subscription of `topic` here."""
        return {row["peer"] for row in self.relays(topic) if row["direction"] == "out"}


def start_tree(root_dir, shape: dict, delivery=None, log=None, **region) -> dict:
    """Start hubs parent first: shape is {name: parent name or None}, in start order; wait
    until every non-root hub is linked. `delivery`: {region: [delivery] settings}; `log`:
    every hub's [log] settings. {name: RegionHub}."""
    hubs = {}
    delivery = delivery or {}
    try:
        for name, parent in shape.items():
            parent_hub = hubs[parent] if parent else None
            hubs[name] = RegionHub(root_dir, name, parent_hub, delivery.get(name), log=log, **region).start()
        for name, parent in shape.items():
            if parent:
                wait_until(hubs[name].linked, f"region {name} linked to {parent}")
    except BaseException:
        for hub in hubs.values():
            hub.stop()
        raise
    return hubs


def neighbours(shape: dict) -> dict:
    """{region: set of neighbouring regions} of a tree shape."""
    result = {name: set() for name in shape}
    for name, parent in shape.items():
        if parent:
            result[name].add(parent)
            result[parent].add(name)
    return result


def wait_for_interest(hubs: dict, shape: dict, topic: str) -> None:
    """Every region relays `topic` to every neighbour: each hub holds a relay subscription
    for each of its neighbours (subscribers in every region make every edge wanted)."""
    for name, wanted in neighbours(shape).items():
        wait_until(
            lambda n=name, w=wanted: hubs[n].relays_out_to(topic) >= w, f"{name} relaying {topic} to {wanted}"
        )


class Collector(threading.Thread):
    """A subscriber in one region, receiving in its own thread until it holds `expected`
    distinct messages (by local seq-id: a hub restart may deliver again what was not
    acknowledged) or is stopped. Reconnects through the blocking client's resume."""

    def __init__(self, hub: RegionHub, topic: str, subscriber_id: str, expected: int):
        super().__init__(daemon=True, name=f"collector-{hub.name}")
        self.hub = hub
        self.topic = topic
        self.subscriber_id = subscriber_id
        self.expected = expected
        self.messages = {}  # local seq -> (origin, origin_seq, payload)
        self.per_origin = {}  # origin -> messages held (read from other threads)
        self.order = []  # (origin, origin_seq) in delivery order, first delivery of each seq
        self.redelivered = 0
        self.error = None
        self._halt = threading.Event()
        self.client = Client(hub.address, timeout=10).connect()
        self.subscription = self.client.subscribe(topic, subscriber_id, window=20_000)

    def run(self):
        try:
            while not self._halt.is_set() and len(self.messages) < self.expected:
                try:
                    batch = self.subscription.receive_batch(timeout=0.2)
                except Exception:  # the hub is down: the client reconnects on next use
                    if self._halt.wait(0.1):
                        break
                    continue
                for message in batch:
                    if message.seq in self.messages:
                        self.redelivered += 1
                    else:
                        origin = message.origin_region
                        self.messages[message.seq] = (origin, message.origin_seq, message.payload)
                        self.per_origin[origin] = self.per_origin.get(origin, 0) + 1
                        self.order.append((message.origin_region, message.origin_seq))
                if batch:
                    self.subscription.ack(batch[-1])
        except Exception as e:  # reported by the test
            self.error = e

    def done(self) -> bool:
        return len(self.messages) >= self.expected

    def stop(self):
        self._halt.set()
        self.join(10)
        try:
            self.client.close()
        except Exception:
            pass


class Publisher(threading.Thread):
    """Publishes `count` messages (payload b"<region>:<i>") in batches, pausing at the
    gates: `gates` maps a message count to an Event to wait for before publishing on."""

    def __init__(self, hub: RegionHub, topic: str, count: int, batch: int = 100, gates=None):
        super().__init__(daemon=True, name=f"publisher-{hub.name}")
        self.hub = hub
        self.topic = topic
        self.count = count
        self.batch = batch
        self.gates = dict(gates or {})
        self.published = 0
        self.error = None

    def run(self):
        try:
            with Client(self.hub.address, timeout=30) as client:
                region = self.hub.name.encode()
                while self.published < self.count:
                    gate = self.gates.get(self.published)
                    if gate is not None:
                        gate.wait(DEADLINE_S)
                    n = min(self.batch, self.count - self.published)
                    payloads = [b"%s:%d" % (region, i) for i in range(self.published, self.published + n)]
                    client.publish_many(self.topic, payloads)
                    self.published += n
        except Exception as e:
            self.error = e


def check_exactly_once(messages, publishers: dict, context: str) -> None:
    """`messages`: (origin region, origin seq-id, payload) in the order a region stores or
    delivers them. Every published message is there once, each origin's in origin order
    and in publish order."""
    per_origin = {}
    seen = set()
    for origin, origin_seq, payload in messages:
        key = (origin, origin_seq)
        assert key not in seen, f"{context}: {origin}:{origin_seq} held twice"
        seen.add(key)
        per_origin.setdefault(origin, []).append((origin_seq, bytes(payload)))
    assert set(per_origin) == set(publishers), f"{context}: origins {sorted(per_origin)}"
    for origin, count in publishers.items():
        got = per_origin[origin]
        assert len(got) == count, f"{context}: {len(got)} of {count} messages from {origin}"
        seqs = [s for s, _ in got]
        assert seqs == sorted(seqs), f"{context}: messages from {origin} out of origin order"
        expected = [b"%s:%d" % (origin.encode(), i) for i in range(count)]
        assert [p for _, p in got] == expected, f"{context}: messages from {origin} out of publish order"


def stored_messages(hub: RegionHub, topic: str) -> list:
    """Every message of the topic's log at this hub: (origin, origin seq-id, payload)."""
    with Client(hub.address, timeout=30) as client:
        return [(m.origin_region, m.origin_seq, m.payload) for m in client.read(topic, 1)]
