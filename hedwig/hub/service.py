"""The hub as a Twisted service: stores, logs, cache, delivery and the listener.

HubService owns the lifecycle. Starting opens the embedded stores under the data
directory (memory-mapped ledgers, SQLite metadata; or takes stores given by the caller;
with `[ledger] store = rados` it connects to the RADOS pool first, and a cluster it cannot
reach in [rados] op_timeout_s ends the start), has the hub assembled over them
(assembly.py: the one place that wires its parts), then
listens: on `[hub] port`, and with `[tls] enabled` on `[tls] port` too (the same
requests over TLS; region links from children that authenticate come in there), and
with `[http] port` set on that port for the status page, /metrics and /api
(hedwig.observe; HTTPS with [tls] enabled).
Stopping is the graceful shutdown SIGTERM and SIGINT lead to, one step after the other:
stop accepting, stop reading requests and let pending replies out, close the connections
(which flushes their consume pointers), stop GC, flush every consume pointer, close the
topic logs, the ledger store and the metadata store. Each step is
bounded by `[hub] shutdown_timeout_s`; a step that fails is logged and the rest go on.
"""

import fcntl
import json
import os
import shutil
from pathlib import Path

from twisted.application.service import MultiService, Service
from twisted.internet.defer import DeferredList, gatherResults, inlineCallbacks, maybeDeferred, succeed
from twisted.internet.endpoints import SSL4ServerEndpoint, TCP4ServerEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.config.rados import on_rados
from hedwig.config.settings import Config
from hedwig.config.zookeeper import advertised_host, on_zookeeper
from hedwig.hub.assembly import assemble_hub, ledger_store
from hedwig.hub.connection import HubFactory
from hedwig.observe.settings import describe_http_port, http_listen_port


class DataDirLocked(RuntimeError):
    """Another hub process serves this data directory."""


class MetadataLost(RuntimeError):
    """The ledgers hold messages but the metadata describing them is missing or empty:
    serving would begin every topic again at seq-id 1, so the hub does not start."""


class LedgersMoved(RuntimeError):
    """`hedwig migrate` moved this data directory's ledgers into a RADOS pool: a hub on
    its page files would serve topics without their ledgers."""


class MigrationUnfinished(RuntimeError):
    """`hedwig migrate` was cut short over this data directory: its ledgers are partly in
    the page files, partly in a pool, and a hub on either store would serve (and write)
    half of them."""


class ListenerService(Service):
    """Listens on an endpoint; `listening` fires with the IListeningPort (or the error)."""

    log = Logger()

    def __init__(self, endpoint, factory):
        self.endpoint = endpoint
        self.factory = factory
        self.port = None
        self.listening = None

    def startService(self):
        super().startService()
        self.listening = self.endpoint.listen(self.factory)
        self.listening.addCallback(self._listened)

    def _listened(self, port):
        self.port = port
        return port

    def stopService(self):
        super().stopService()
        if self.port is not None:
            port, self.port = self.port, None
            return maybeDeferred(port.stopListening)
        return None


class HubService(MultiService):
    log = Logger()

    def __init__(self, config: Config, reactor=None, *, ledgers=None, metadata=None, http_guard=None):
        """`ledgers` / `metadata`: stores to serve from instead of the embedded ones under
        `[hub] data_dir` (the caller keeps ownership of the data they hold). `http_guard`:
        an IRequestGuard (hedwig.observe.interface) asked before every HTTP request; by
        default none, or with [auth] enabled hedwig.observe.admin_guard (admins only)."""
        super().__init__()
        if reactor is None:
            from twisted.internet import reactor
        self.config = config
        self.reactor = reactor
        self.ledgers = ledgers
        self.metadata = metadata
        self.hub = None
        self.listener = None
        self.tls_listener = None  # with [tls] enabled
        self.http_listener = None  # with [http] port set
        self.kafka_listener = None  # with [kafka] port set (hedwig.kafka)
        self.observer = None  # hedwig.observe.listener.HttpObserver, with [http] port set
        self.http_guard = http_guard
        self.listening = None  # see startService
        self.gc = None
        self.compaction = None
        self.regions = None  # hedwig.region.manager.RegionManager
        self._logs = None
        self._lock_file = None
        self._embedded_ledgers = ledgers is None
        self.zk = None  # hedwig.hub.zk_region.ZkRegion, in a region of several hubs
        self.balancer = None  # hedwig.hub.zk_balance.Balancer, in a region of several hubs
        self.orphans = None  # hedwig.hub.zk_orphans.OrphanLedgers, in a region on RADOS
        self.forwarding = None  # hedwig.hub.forwarding.OwnerPublishing, likewise
        self._rados_holds_ledgers = False  # the RADOS namespace held ledgers when the hub started
        # The data directory this start made (None: it was there), removed again by a
        # shutdown before the hub ever listened: a start that failed leaves nothing behind.
        self._new_data_dir = None

    # -- start ------------------------------------------------------------------------------

    def startService(self):
        if self._embedded_ledgers:
            self._refuse_unfinished_migration(Path(self.config.hub.data_dir))
        if self.ledgers is None and on_rados(self.config):
            # The pool first (or give up: one line, exit 1): the hub is built over it.
            self.ledgers = ledger_store(self.config, self.reactor, "")
            connecting = self.ledgers.connect().addCallback(self._rados_connected)
            self.listening = connecting.addCallback(lambda _: self._start_built())
            return
        refused = self._build_or_give_up()
        if refused is not None:  # (fails once what _build took is released)
            self.listening = refused
            return
        Service.startService(self)  # the children (listeners, GC) start once the sweep is done
        # Fires once every listener listens, or fails with the first error (`hedwig hub` exits).
        self.listening = self._start_built()

    def _rados_connected(self, _):
        """Connected to the pool: whether its namespace held ledgers (the metadata must
        then describe them), then the hub's parts."""

        def known(holds):
            self._rados_holds_ledgers = holds
            refused = self._build_or_give_up()
            if refused is not None:
                return refused
            Service.startService(self)

        return self.ledgers.holds_ledgers().addCallback(known)

    def _start_built(self):
        if self.zk is not None:  # connect to ZooKeeper (or give up: one line, exit 1) first
            sweeping = self.zk.connect().addCallback(lambda _: self._sweep_garbage())
        elif self._embedded_ledgers and on_rados(self.config):
            # (one hub per namespace: the pool's ledgers listed, then swept as page files are)
            sweeping = self.ledgers.scan().addCallbacks(
                lambda _: self._sweep_ledgers(),
                lambda f: self.log.failure("listing the pool's ledgers failed: not swept", f),
            )
        else:
            sweeping = self._sweep_ledgers() if self._embedded_ledgers else succeed(None)
        return sweeping.addCallback(self._serve)

    def _serve(self, _):
        """Start listening (and GC) after the start-up sweep: no topic opens while it
        looks at the ledgers, so it never mistakes a ledger being created for unknown."""
        if not self.running:  # stopped during the sweep
            return None
        for service in self:
            service.startService()
        self.listener.listening.addCallback(self._listening)
        if self.tls_listener is not None:
            self.tls_listener.listening.addCallback(self._listening_tls)
        if self.http_listener is not None:
            self.http_listener.listening.addCallbacks(self._listening_http, self._http_not_listening)
        if self.kafka_listener is not None:
            self.kafka_listener.listening.addCallback(self._listening_kafka)
        listening = gatherResults([s.listening for s in self.listeners], consumeErrors=True)
        listening.addErrback(lambda f: f.value.subFailure)
        if self.zk is not None:  # registered once it listens, before it relays
            listening.addCallback(self._join_region)
        return listening.addCallback(self._start_regions)

    def _join_region(self, ports):
        if self.kafka_listener is not None:  # (the region's other hubs name it in Metadata)
            self.zk.registry.kafka = self.kafka_listener.factory.apis.brokers.listener()
        joined = self.zk.joined(self.hub, self.hub.name, self.tls_port)
        joined.addCallback(lambda _: self._serving(f", ZooKeeper {self.zk.servers}{self.zk.root}"))
        return joined.addCallback(lambda _: ports)

    @property
    def listeners(self) -> list:
        return [
            s
            for s in (self.listener, self.tls_listener, self.http_listener, self.kafka_listener)
            if s is not None
        ]

    def _start_regions(self, port):
        started = self.regions.start()
        started.addErrback(lambda f: self.log.failure("starting region relays failed", f))
        return port

    def _build_or_give_up(self) -> None:
        """_build; None when built, or when a part refuses to be built, a Deferred failing
        with why once what _build took is released (the metadata store's thread would
        otherwise keep the process alive after `could not start`)."""
        metadata = self.metadata
        try:
            self._build()
        except Exception:
            refusal = Failure()
            closed = succeed(None)
            if metadata is None and self.metadata is not None:  # (ours: opened by _build)
                closed = self.metadata.close()
            self._give_up()
            return closed.addBoth(lambda _: refusal)
        return None

    def _build(self) -> None:
        config, reactor = self.config, self.reactor
        own_data_dir = None
        if on_zookeeper(config):
            from hedwig.hub.zk_region import ZkRegion

            self.zk = ZkRegion(config, reactor)
        if self.zk is not None:
            # [hub] data_dir is the region's shared storage root: its hubs share it (and
            # its lock, so an embedded hub is kept out); the metadata is in ZooKeeper.
            data_dir = Path(config.hub.data_dir)
            data_dir.mkdir(parents=True, exist_ok=True)
            self._lock(data_dir, shared=True)
            own_data_dir = str(data_dir)
            if self.ledgers is None:
                if not on_rados(config):
                    self._refuse_moved_ledgers(data_dir)
                self.ledgers = self.zk.ledger_store(str(data_dir / "ledgers"))
            else:
                self.zk.ledgers = self.ledgers
            if self.metadata is None:
                self.metadata = self.zk.store
        elif self.ledgers is None or self.metadata is None:
            data_dir = Path(config.hub.data_dir)
            self._new_data_dir = None if data_dir.exists() else data_dir
            data_dir.mkdir(parents=True, exist_ok=True)
            self._lock(data_dir)
            own_data_dir = str(data_dir)
            if self.ledgers is None:
                if not on_rados(config):
                    self._refuse_moved_ledgers(data_dir)
                self.ledgers = ledger_store(config, reactor, str(data_dir / "ledgers"))
            if self.metadata is None:
                self.metadata = self._open_metadata(data_dir)
        parts = assemble_hub(
            config,
            reactor,
            ledgers=self.ledgers,
            metadata=self.metadata,
            data_dir=own_data_dir,
            zk_region=self.zk,
        )
        self.hub, self._logs, self.regions = parts.hub, parts.topic_logs, parts.relays
        self.hub.ledger_place = self._ledger_place(own_data_dir)
        self.forwarding = parts.forwarding
        factory = HubFactory(self.hub)
        endpoint = TCP4ServerEndpoint(reactor, config.hub.port, interface=config.hub.host)
        self.listener = ListenerService(endpoint, factory)
        self.listener.setServiceParent(self)
        if config.tls.enabled:
            from hedwig.config.tls import server_options

            tls_endpoint = SSL4ServerEndpoint(
                reactor, config.tls.port, server_options(config.tls), interface=config.hub.host
            )
            self.tls_listener = ListenerService(tls_endpoint, factory)
            self.tls_listener.setServiceParent(self)
        if config.kafka.port:
            from hedwig.kafka.listener import kafka_listener

            self.kafka_listener = ListenerService(*kafka_listener(self.hub, config, reactor))
            self.kafka_listener.setServiceParent(self)
        self.gc = parts.gc
        self.gc.setServiceParent(self)
        self.compaction = parts.compaction
        self.compaction.setServiceParent(self)
        if self.zk is not None:  # idle topics released, the region's topics rebalanced
            from hedwig.hub.zk_balance import Balancer

            self.balancer = Balancer(
                parts.topics, self.zk.registry, parts.delivery, config.zookeeper, reactor
            )
            self.balancer.setServiceParent(self)
            if on_rados(config):  # (the region's shared namespace: its orphans, deleted when safe)
                self._look_for_orphans(config)
        if http_listen_port(config) is not None:
            from hedwig.observe.listener import HttpObserver

            guard = self.http_guard
            if guard is None and self.hub.auth is not None:  # [auth] on: admins only
                from hedwig.observe.admin_guard import AdminGuard

                guard = AdminGuard(self.hub.auth.authenticator, reactor, config.auth.failure_delay_s)
            self.observer = HttpObserver(self.hub, self.ledgers, self.gc, config, reactor, guard=guard)
            self.observer.history.setServiceParent(self)
            self.http_listener = ListenerService(self.observer.endpoint(), self.observer.site)
            self.http_listener.setServiceParent(self)

    def _look_for_orphans(self, config) -> None:
        from hedwig.hub.zk_orphans import OrphanLedgers
        from hedwig.meta.zk_layout import decode_name

        zk = self.zk

        def live_hubs():
            listed = zk.session.call("get_children", zk.store.layout.branch("hubs"))
            return listed.addCallback(lambda names: {decode_name(name) for name in names})

        # Several session and ledger operation timeouts: an acquire under way when its
        # hub's session ended has failed by then (hedwig.hub.zk_orphans).
        grace_s = 3 * (config.zookeeper.session_timeout_ms / 1000 + config.rados.op_timeout_s)
        self.orphans = OrphanLedgers(self.ledgers, zk.store, live_hubs, self.reactor, grace_s)
        self.orphans.setServiceParent(self)

    def _open_metadata(self, data_dir: Path):
        """The embedded metadata store, refused when it cannot describe the ledgers: with
        messages in the ledgers, a missing, zero-byte or recordless database is damage
        (opening it would start every topic afresh, reuse seq-ids and leave the ledgers
        unknown), so the hub stops with one line saying what is wrong and what to do."""
        from hedwig.meta.interface import MetadataMissing
        from hedwig.meta.sqlite_store import SqliteMetadataStore

        ledgers = self.ledgers
        if on_rados(self.config) and self._embedded_ledgers:
            where = f"the RADOS pool {ledgers.pool} (namespace {ledgers.namespace!r})"
            holding = "ledgers" if self._rados_holds_ledgers else ""
            aside = "use a namespace of its own ([rados] namespace)"
        else:
            count = len([i for i in ledgers.list_ledgers() if ledgers.last_entry_id(i) >= 0])
            where = data_dir / "ledgers" if self._embedded_ledgers else "the ledger store"
            holding = f"{count} ledger(s) with messages" if count else ""
            aside = f"move {where} aside"
        path = data_dir / "metadata.sqlite3"
        try:
            return SqliteMetadataStore(str(path), reactor=self.reactor, expect_records=bool(holding))
        except MetadataMissing as e:
            self._give_up()
            raise MetadataLost(
                f"{e}, yet {where} holds {holding}: serving would start every topic again at seq-id 1."
                f" Restore {path.name} from a backup, or {aside} to start an empty hub"
                " (docs/operations.md, 'Damaged or lost metadata')"
            ) from None

    def _ledger_place(self, data_dir) -> str | None:
        """Where the hub's ledgers are, as its start line and STATS say it: the pool (and
        namespace) on RADOS, the page files' directory otherwise."""
        ledgers = self.ledgers
        if on_rados(self.config):
            namespace = getattr(ledgers, "namespace", "")
            return f"RADOS pool {getattr(ledgers, 'pool', self.config.rados.pool)}" + (
                f"/{namespace}" if namespace else ""
            )
        if data_dir is not None and self._embedded_ledgers:
            return f"page files in {Path(data_dir) / 'ledgers'}"
        return None

    def _refuse_unfinished_migration(self, data_dir: Path) -> None:
        """A data directory `hedwig migrate` is copying (or was, cut short) is served by no
        hub, whatever its store: over the pool, its topics would open ledgers not copied
        yet; over the page files, its publishes would miss the copy. The run, again,
        finishes it (hedwig.commands.migrate)."""
        from hedwig.ledger.migration import MIGRATING_MARKER

        marker = data_dir / MIGRATING_MARKER
        if not marker.is_file():
            return
        try:
            where = json.loads(marker.read_text(encoding="utf-8"))
            pool = f"pool {where['pool']}" + (f"/{where['namespace']}" if where.get("namespace") else "")
        except (OSError, ValueError, KeyError, TypeError):
            pool = "a RADOS pool"
        raise MigrationUnfinished(
            f"a migration of {data_dir}'s ledgers into {pool} was begun and not finished ({marker} says so):"
            " run hedwig migrate again with the same settings to finish it, then start the hub with"
            " --ledger-store rados (docs/operations.md, 'Moving to RADOS')"
        )

    def _refuse_moved_ledgers(self, data_dir: Path) -> None:
        """A data directory whose ledgers `hedwig migrate` moved into a pool is served
        from there only (hedwig.commands.migrate)."""
        from hedwig.ledger.migration import MIGRATED_DIR, MIGRATED_TO

        moved = data_dir / MIGRATED_DIR
        if moved.is_dir() and not (data_dir / "ledgers").exists():
            self._give_up()
            try:
                pool = (moved / MIGRATED_TO).read_text(encoding="utf-8").strip()
            except OSError:
                pool = "a RADOS pool"
            raise LedgersMoved(
                f"{data_dir}'s ledgers were moved into {pool} by hedwig migrate ({moved} keeps the old"
                " page files): run with --ledger-store rados and that pool's [rados] settings"
            )

    def _give_up(self) -> None:
        """Release what _build took before a start it refuses (the ledger store it opened
        and the data directory's lock); nothing was written meanwhile."""
        if self._embedded_ledgers and self.ledgers is not None:
            self.ledgers.close().addErrback(lambda f: self.log.failure("closing the ledger store failed", f))
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _sweep_ledgers(self):
        """Finish deleting the ledgers the metadata records as garbage (a hub stopped or
        killed between dropping them from a topic and deleting them), and the empty ones
        no topic names (killed between creating a ledger and recording it). Any other
        ledger the metadata does not know is kept and reported: it may hold a topic's
        messages whose record was lost, and only an operator can tell
        (docs/operations.md). Deferred firing when done (a failed sweep is logged, and
        the hub serves all the same)."""

        def swept(sweep):
            if sweep.deleted:
                self.log.info(
                    "deleted {count} ledger(s) the metadata records as garbage: {ids}",
                    count=len(sweep.deleted),
                    ids=sweep.deleted,
                )
            if sweep.empty:
                self.log.info(
                    "deleted {count} empty ledger(s) no topic names (a hub stopped between creating"
                    " a ledger and recording it): {ids}",
                    count=len(sweep.empty),
                    ids=sweep.empty,
                )
            if sweep.unknown:
                self.log.warn(
                    "kept {count} ledger(s) that no topic names and the metadata does not record"
                    " as garbage: {ledgers}; see docs/operations.md, 'Unknown ledgers'",
                    count=len(sweep.unknown),
                    ledgers=", ".join(f"{i} ({what})" for i, what in sweep.described.items()),
                )

        sweeping = self._logs.sweep_ledgers()
        return sweeping.addCallbacks(swept, lambda f: self.log.failure("sweeping ledgers failed", f))

    def _lock(self, data_dir: Path, shared: bool = False) -> None:
        """One embedded hub per data directory: a second would corrupt the first one's
        ledgers. The hubs of a region share their storage root (`shared`: a shared lock,
        which keeps an embedded hub out, and is kept out by one)."""
        lock_file = open(data_dir / "hub.lock", "a+")  # noqa: SIM115 - held for the hub's life
        try:
            fcntl.flock(lock_file, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            if shared:
                raise DataDirLocked(
                    f"an embedded hub (no [zookeeper] servers) is serving {data_dir}: a region's"
                    f" hubs cannot share it (it holds {data_dir / 'hub.lock'})"
                ) from None
            raise DataDirLocked(
                f"another hub is serving {data_dir} (it holds {data_dir / 'hub.lock'})"
            ) from None
        if not shared:
            lock_file.truncate(0)
            lock_file.write(f"{os.getpid()}\n")
            lock_file.flush()
        self._lock_file = lock_file

    def _sweep_garbage(self):
        """On the region's shared storage: finish deleting the ledgers recorded as garbage
        (other hubs' ledgers come and go meanwhile, so nothing else is looked at; a
        compacted topic's records are left to its owner, whose compaction may be writing
        the ledger one names)."""
        owned_elsewhere = None
        if self.zk is not None:  # (this hub owns nothing yet: any owner is another hub)
            owners = self.zk.topics.znodes

            def owned_elsewhere(topic):
                return owners.read_owner(topic).addCallback(lambda found: found[0] is not None)

        sweeping = self._logs.sweep_garbage(owned_elsewhere)

        def swept(deleted):
            if deleted:
                self.log.info(
                    "deleted {count} ledger(s) the metadata records as garbage: {ids}",
                    count=len(deleted),
                    ids=deleted,
                )

        return sweeping.addCallbacks(swept, lambda f: self.log.failure("sweeping ledgers failed", f))

    def _listening(self, port):
        address = port.getHost()
        host = advertised_host(self.config) if self.zk is not None else address.host
        self.hub.name = f"{host}:{address.port}"
        if hasattr(self.ledgers, "writer"):  # (named in the ledgers it creates and fences)
            self.ledgers.writer = self.hub.name
        if self.zk is None:  # (a region's hub says so once it is registered: _join_region)
            self._serving()
        return port

    def _serving(self, where: str = "") -> None:
        place = self.hub.ledger_place
        self.log.info(
            "hedwig hub {name} (region {region}{where}{ledgers}) serving {data_dir}",
            name=self.hub.name,
            region=self.hub.region,
            where=where,
            ledgers=f", ledgers in {place}" if place else "",
            data_dir=self.config.hub.data_dir,
        )

    def _listening_tls(self, port):
        address = port.getHost()
        client_certificates = "required" if self.config.tls.require_client_cert else "verified when presented"
        if not self.config.tls.ca_file:
            client_certificates = "not asked for"
        self.log.info(
            "hedwig hub {name}: TLS on {host}:{port} (client certificates {client_certificates})",
            name=self.hub.name,
            host=address.host,
            port=address.port,
            client_certificates=client_certificates,
        )
        return port

    def _listening_kafka(self, port):
        address = port.getHost()
        apis = self.kafka_listener.factory.apis
        host = self.config.kafka.advertised_host.strip()
        if not host:
            host = advertised_host(self.config) if self.zk is not None else address.host
        apis.broker = (host, address.port)
        self.log.info(
            "hedwig hub {name}: Kafka on {host}:{port}{tls} (advertised as {advertised})",
            name=self.hub.name,
            host=address.host,
            port=address.port,
            tls=" over TLS" if self.config.kafka.tls else "",
            advertised=f"{host}:{address.port}",
        )
        return port

    def _http_not_listening(self, failure):
        """The HTTP listener's port is taken: say which setting chose it and how to give
        another (two hubs on one host, one's port the other's + 1)."""
        from twisted.internet.error import CannotListenError

        failure.trap(CannotListenError)
        error = failure.value
        raise CannotListenError(
            error.interface,
            error.port,
            f"{error.socketError} (the HTTP listener: {describe_http_port(self.config)}; give --http-port"
            " another port, or 0 for none)",
        )

    def _listening_http(self, port):
        address = port.getHost()
        self.hub.http_url = f"{self.observer.scheme}://{address.host}:{address.port}/"
        self.log.info(
            "hedwig hub {name}: HTTP on {scheme}://{host}:{port}/ (status page, /metrics, /api)",
            name=self.hub.name,
            scheme=self.observer.scheme,
            host=address.host,
            port=address.port,
        )
        return port

    @property
    def tls_port(self) -> int | None:
        """The TLS port listened on; None without [tls] enabled or before it listens."""
        if self.tls_listener is None or self.tls_listener.port is None:
            return None
        return self.tls_listener.port.getHost().port

    @property
    def port(self) -> int:
        """The port listened on (useful with port 0); only once `listening` fired."""
        return self.listener.port.getHost().port

    # -- stop -------------------------------------------------------------------------------

    @inlineCallbacks
    def stopService(self):
        if not self.running:
            return
        Service.stopService(self)
        hub = self.hub
        hub.stopping = True
        timeout = self.config.hub.shutdown_timeout_s
        # (a hub is named by the address it listens on: one that never listened has none)
        name = hub.name or f"for {self.config.hub.host}:{self.config.hub.port} (it never listened)"
        self.log.info("hedwig hub {name} shutting down", name=name)
        yield self._step(
            "stop accepting connections",
            DeferredList([maybeDeferred(s.stopService) for s in self.listeners], consumeErrors=True),
        )
        if self.observer is not None:
            self.observer.history.stopService()
        if self.balancer is not None:
            self.balancer.stopService()
        yield self._step("close the region link", self.regions.stop(), timeout)
        connections = list(hub.connections)
        yield self._step(
            "let pending replies out",
            DeferredList([c.stop_reading() for c in connections], consumeErrors=True),
            timeout,
        )
        for connection in connections:
            connection.close_when_sent()
        closed = yield self._step(
            "close connections", DeferredList([c.closed for c in connections], consumeErrors=True), timeout
        )
        if closed is None:
            for connection in connections:
                if connection.is_open:
                    connection.transport.abortConnection()
        hub.client_errors.stop()  # the client errors counted and not yet written, written now
        yield self._step("stop garbage collection", self.gc.stopService(), timeout)
        yield self._step("stop compaction", self.compaction.stopService(), timeout)
        yield self._step("flush consume pointers", hub.delivery.stop(), timeout)
        if hub.peers is not None:
            yield self._step("close connections to other hubs", hub.peers.close(), timeout)
        # (through the topic manager: a region's lets held acknowledgements go first)
        yield self._step("close topic logs", hub.topics.close(), timeout)
        yield self._step("close the ledger store", self.ledgers.close(), timeout)
        yield self._step("close the metadata store", self.metadata.close(), timeout)
        if self.zk is not None:
            yield self._step("leave the region (ZooKeeper)", self.zk.leave(), timeout)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
        if not hub.name and self._new_data_dir is not None:  # no client ever reached it
            shutil.rmtree(self._new_data_dir, ignore_errors=True)
            self.log.info("removed {dir}, made by this start", dir=str(self._new_data_dir))
        self.log.info("hedwig hub {name} stopped", name=name)

    @inlineCallbacks
    def _step(self, what: str, deferred, timeout: float | None = None):
        """Wait for one shutdown step; log and go on if it fails or takes too long.
        Returns the step's result, or None when it failed."""
        try:
            deferred = maybeDeferred(lambda: deferred)
            if timeout:
                deferred.addTimeout(timeout, self.reactor)
            result = yield deferred
        except Exception:
            self.log.failure("shutdown: could not {what}", what=what)
            return None
        return result if result is not None else True
