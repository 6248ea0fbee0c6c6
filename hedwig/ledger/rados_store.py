"""Replicated ledgers in a Ceph RADOS pool: every acknowledged entry is on every replica
of its object's acting set (a pool of size 3: three OSDs), so losing a disk or a machine
loses no acknowledged message, and the hubs of a region share a pool instead of a
filesystem.

The layout (a head object and segment objects per ledger) is rados_layout.py's; the
writes, grouped and pipelined, rados_writer.py's; reads, rados_reader.py's; fencing and
recovery, rados_fencing.py's; librados on the reactor, rados_client.py's. The store
holds what it knows of each ledger it created, loaded or fenced (RadosLedger), and
answers what needs the pool with Deferreds (ILedgerStore).

Ledger ids are unique across every store of the pool's namespace: each store reserves a
block of ids at a time from the `ledger-ids` object by compare-and-swap, and a ledger's
head is created exclusively (a clash takes the next id).
"""

import errno

from twisted.internet.defer import DeferredList, fail, succeed
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.concurrency.deferreds import SharedOperations, SharedResult, run_now
from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import (
    ILedgerStore,
    LedgerClosed,
    LedgerError,
    LedgerFenced,
    NoSuchLedger,
)
from hedwig.ledger.rados_client import RadosClient, RadosOpError, ledger_error
from hedwig.ledger.rados_fencing import fence_ledger, load_ledger
from hedwig.ledger.rados_ledger import RadosLedger
from hedwig.ledger.rados_reader import LedgerReader, check_range
from hedwig.ledger.rados_writer import GroupWriter, translate

_EQ = 1  # LIBRADOS_CMPXATTR_OP_EQ
_EXCLUSIVE = 1  # LIBRADOS_CREATE_EXCLUSIVE
ID_BLOCK = 64  # ledger ids reserved per compare-and-swap of the id object
MIN_SEGMENT_BYTES = 4096
MAX_BATCH_BYTES = 4 << 20  # one write op's frames, at most (a larger entry goes alone)
MAX_IN_FLIGHT_BYTES = 64 << 20  # below librados's own throttle (100 MiB), which would block
MAX_TIME_US = (1 << 64) - 1


@implementer(ILedgerStore)
class RadosLedgerStore:
    """Ledgers in `pool` (and `namespace`) of the cluster `conf_file` describes, reached as
    client.`client_id`. `writer`: this hub's name, recorded in the ledgers it creates or
    fences. Call connect() (a Deferred) before anything else."""

    log = Logger()

    def __init__(
        self,
        *,
        reactor,
        conf_file: str,
        pool: str,
        namespace: str = "",
        client_id: str = "admin",
        segment_bytes: int = 64 << 20,
        max_in_flight: int = 64,
        op_timeout_s: float = 10.0,
        writer: str = "",
    ):
        if not MIN_SEGMENT_BYTES <= segment_bytes <= layout.MAX_OBJECT_BYTES:
            raise ValueError(f"segment_bytes must be within {MIN_SEGMENT_BYTES}..{layout.MAX_OBJECT_BYTES}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        if not 0 < op_timeout_s < float("inf"):
            raise ValueError(f"op_timeout_s must be a positive number of seconds, not {op_timeout_s}")
        self._reactor = reactor
        self.writer = writer
        self.segment_bytes = segment_bytes
        self._client = RadosClient(
            reactor,
            conf_file=conf_file,
            pool=pool,
            namespace=namespace,
            client_id=client_id,
            op_timeout_s=op_timeout_s,
        )
        self._writes = GroupWriter(
            reactor,
            self._client,
            segment_bytes=segment_bytes,
            max_in_flight=max_in_flight,
            max_batch_bytes=min(MAX_BATCH_BYTES, segment_bytes),
            max_in_flight_bytes=MAX_IN_FLIGHT_BYTES,
            op_timeout_s=op_timeout_s,
        )
        self._reads = LedgerReader(self._client)
        self._ledgers: dict[int, RadosLedger] = {}
        self._loading = SharedOperations()  # ledger id -> its load from the pool
        self._scanned: set[int] = set()  # ledger ids found in the namespace by scan()
        self._next_id = self._reserved_until = 0
        self._reserving = None  # the SharedResult of an id reservation under way
        self._closed = False
        self._closing = None

    @classmethod
    def from_settings(cls, settings, reactor, writer: str = "") -> "RadosLedgerStore":
        """A store configured by a `hedwig.config.settings.RadosSettings`."""
        return cls(
            reactor=reactor,
            conf_file=settings.conf_file,
            pool=settings.pool,
            namespace=settings.namespace,
            client_id=settings.client_id,
            segment_bytes=settings.segment_bytes,
            max_in_flight=settings.max_in_flight,
            op_timeout_s=settings.op_timeout_s,
            writer=writer,
        )

    def connect(self):
        """Deferred firing once the pool is reachable; fails with RadosOpError (or
        RadosMissing, without librados's Python module) saying why."""
        return self._client.connect()

    # -- observation ------------------------------------------------------------------------

    @property
    def pool(self) -> str:
        return self._client.pool

    @property
    def namespace(self) -> str:
        return self._client.namespace

    @property
    def write_stats(self):
        """hedwig.ledger.rados_writer.WriteStats: writes, entries, bytes, latencies."""
        return self._writes.stats

    @property
    def writes_in_flight(self) -> int:
        return self._writes.in_flight

    @property
    def writes_in_flight_high_water(self) -> int:
        return self._writes.high_water

    @property
    def reads(self) -> int:
        return self._reads.reads

    def location(self, ledger_id) -> str:
        ledger = self._known_now(ledger_id)
        where = f"{self.pool}/{self.namespace}" if self.namespace else self.pool
        return (
            f"RADOS pool {where}: {layout.head_name(ledger.id)} (head) and {len(ledger.segments)} segment(s)"
        )

    def holds_ledgers(self):
        """Deferred[bool]: whether ledgers were ever created in the pool's namespace (its
        id object exists): a hub starting with empty metadata must not serve over them."""

        def found(values):
            return bool(values)

        def missing(failure):
            failure.trap(RadosOpError)
            if failure.value.errno == errno.ENOENT:
                return False
            raise self._error(failure.value, "reading the ledger ids")

        what = "reading the ledger ids"
        return self._client.omap_get(layout.IDS_OBJECT, (layout.IDS_KEY,), what).addCallbacks(found, missing)

    def forget(self, ledger_id) -> None:
        """Drop a ledger this hub no longer uses from memory (its topic went to another
        hub, which may fence and close it): a later use loads it afresh. A ledger being
        written here is not forgotten."""
        ledger = self._ledgers.get(ledger_id)
        if ledger is None or ledger.writable or not ledger.idle or ledger.closing is not None:
            return
        del self._ledgers[ledger_id]
        self._reads.forget(ledger_id)

    # -- ILedgerStore: what the store knows ----------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger store is closed")

    def _known_now(self, ledger_id) -> RadosLedger:
        self._check_open()
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            raise NoSuchLedger(f"ledger {ledger_id} is not known here (load it first) or does not exist")
        return ledger

    def last_entry_id(self, ledger_id) -> int:
        return self._known_now(ledger_id).count - 1

    def ledger_bytes(self, ledger_id) -> int:
        return self._known_now(ledger_id).bytes

    def is_closed(self, ledger_id) -> bool:
        return self._known_now(ledger_id).closed

    def list_ledgers(self) -> list:
        """The ledgers created, loaded or fenced here, and those scan() found."""
        self._check_open()
        return sorted(self._scanned.union(self._ledgers))

    def scan(self):
        """Deferred firing once list_ledgers() names every ledger in the namespace too (its
        heads, listed): for a hub that alone uses its namespace, whose start-up sweep
        then deletes the garbage and reports the ledgers no topic names, as over page
        files. A listing of the pool: once, at start."""
        return self.list_pool_ledgers().addCallback(self._scanned.update)

    def list_pool_ledgers(self):
        """Deferred[set]: the ids of every ledger whose head is in the namespace now (a
        listing of the pool), this store's knowledge left as it is."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))

        def found(names):
            return {i for i in map(layout.parse_head_name, names) if i is not None}

        def failed(failure):
            failure.trap(RadosOpError)
            raise self._error(failure.value, "listing the ledgers")

        return self._client.list_objects("listing the ledgers").addCallbacks(found, failed)

    def peek(self, ledger_id):
        """Deferred[(writer, entries)]: the hub that created the ledger (its head says)
        and the entries it holds, as the pool has them now, without this store knowing
        the ledger afterwards (NoSuchLedger when it is gone)."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        return load_ledger(self._client, ledger_id).addCallback(lambda ledger: (ledger.writer, ledger.count))

    def load(self, ledger_id):
        return self._known(ledger_id).addCallback(lambda _: None)

    def _known(self, ledger_id):
        """Deferred[RadosLedger]: known already, or loaded from the pool (one load at a time
        per ledger)."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        ledger = self._ledgers.get(ledger_id)
        if ledger is not None:
            return succeed(ledger)
        return self._loading.run(ledger_id, self._load, ledger_id)

    def _load(self, ledger_id):
        def loaded(ledger):
            return self._ledgers.setdefault(ledger_id, ledger)  # (one created or fenced meanwhile wins)

        return load_ledger(self._client, ledger_id).addCallback(loaded)

    # -- ILedgerStore: create ---------------------------------------------------------------

    def create(self):
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        return run_now(self._create())

    def _create(self):
        while True:
            ledger_id = yield self._take_id()
            try:
                yield from self._create_head(ledger_id)
            except RadosOpError as e:
                if e.errno == errno.EEXIST:
                    self.log.warn(
                        "ledger {ledger_id} exists already in the pool: taking the next id",
                        ledger_id=ledger_id,
                    )
                    continue
                raise self._error(e, f"creating ledger {ledger_id}") from None
            return ledger_id

    def create_as(self, ledger_id: int):
        """Deferred[None]: a new ledger under an id the caller chose (`hedwig migrate`: a
        data directory's ledgers keep their ids in the pool, so the metadata naming them
        stays as it is). Fails with LedgerError when the pool has a ledger of that id.
        reserve_ids_from() first: the ids this store hands out then never meet it."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        if ledger_id.__class__ is not int or ledger_id < 1:
            return fail(LedgerError(f"a ledger id is a positive integer, not {ledger_id!r}"))

        def steps():
            try:
                yield from self._create_head(ledger_id)
            except RadosOpError as e:
                if e.errno == errno.EEXIST:
                    raise LedgerError(f"ledger {ledger_id} exists already in the pool") from None
                raise self._error(e, f"creating ledger {ledger_id}") from None

        return run_now(steps())

    def _create_head(self, ledger_id: int):
        """Create the ledger's head, exclusively (RadosOpError EEXIST when it exists), and
        know the ledger as one this store writes."""
        name = layout.head_name(ledger_id)
        values = (
            layout.number(1).encode("ascii"),
            layout.OPEN.encode("ascii"),
            layout.encode_segments([(0, 0)]),
            self.writer.encode("utf-8"),
        )

        def build(op, ioctx, values=values):
            op.new(_EXCLUSIVE)
            ioctx.set_omap(op, (layout.EPOCH, layout.STATE, layout.SEGMENTS, layout.WRITER), values)

        yield self._client.write(name, build, f"creating {name}")
        self._ledgers[ledger_id] = RadosLedger(
            ledger_id, 1, False, [(0, 0)], self.writer, writable=True, segment_exists=False
        )

    def _take_id(self):
        """Deferred[int]: the next ledger id of this store's reserved block."""
        if self._next_id < self._reserved_until:
            ledger_id = self._next_id
            self._next_id += 1
            return succeed(ledger_id)
        if self._reserving is None:
            self._reserving = SharedResult(run_now(self._reserve()))
        return self._reserving.wait().addCallback(lambda _: self._take_id())

    def reserve_ids_from(self, first_free: int):
        """Deferred[None]: no store of the pool's namespace hands out an id below
        `first_free` from now on (the id object's counter raised to it, if lower)."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        return run_now(self._reserve(at_least=first_free))

    def _reserve(self, at_least: int = 0):
        """Reserve the next block of ids: compare-and-swap of the id object's counter
        (`at_least`: only raise the counter to it, reserving nothing here)."""
        try:
            for _attempt in range(64):
                try:
                    values = yield self._client.omap_get(
                        layout.IDS_OBJECT, (layout.IDS_KEY,), "reading ledger ids"
                    )
                except RadosOpError as e:
                    if e.errno != errno.ENOENT:
                        raise
                    values = {}
                current = values.get(layout.IDS_KEY)
                start = int(current) if current is not None else 1
                if at_least and start >= at_least:
                    return
                until = layout.number(at_least or start + ID_BLOCK).encode("ascii")

                def build(op, ioctx, current=current, until=until):
                    if current is None:
                        op.new(_EXCLUSIVE)
                    else:
                        op.omap_cmp(layout.IDS_KEY, current.decode("ascii"), _EQ)
                    ioctx.set_omap(op, (layout.IDS_KEY,), (until,))

                try:
                    yield self._client.write(layout.IDS_OBJECT, build, "reserving ledger ids")
                except RadosOpError as e:
                    if e.errno in (errno.ECANCELED, errno.EEXIST):
                        continue  # another store reserved first: read again
                    raise
                if not at_least:
                    self._next_id, self._reserved_until = start, start + ID_BLOCK
                return
            raise LedgerError("creating a ledger: other hubs kept reserving ledger ids; try again")
        except RadosOpError as e:
            raise self._error(e, "creating a ledger: reserving ids") from None
        finally:
            if not at_least:  # (a raise of the counter is not the reservation _take_id waits on)
                self._reserving = None

    _error = staticmethod(ledger_error)

    # -- ILedgerStore: append ---------------------------------------------------------------

    def append(self, ledger_id, data, publish_time_us):
        ledger = self._ledgers.get(ledger_id)
        if ledger is None or not ledger.writable or self._closed:
            return fail(self._not_writable(ledger_id, ledger))
        if data.__class__ is not bytes:
            try:
                if isinstance(data, str) or (
                    isinstance(data, (list, tuple)) and any(isinstance(chunk, str) for chunk in data)
                ):
                    raise TypeError("entries are bytes, not text")
                data = b"".join(data) if isinstance(data, (list, tuple)) else bytes(data)
            except (TypeError, ValueError) as e:
                return fail(LedgerError(f"ledger {ledger_id}: bad entry or publish time: {e}"))
        if publish_time_us.__class__ is not int or not 0 <= publish_time_us <= MAX_TIME_US:
            return fail(LedgerError(f"ledger {ledger_id}: bad entry or publish time: {publish_time_us!r}"))
        if layout.FRAME_BYTES + len(data) > self.segment_bytes:
            size = len(data)
            return fail(LedgerError(f"ledger {ledger_id}: an entry of {size} bytes exceeds segment_bytes"))
        return self._writes.append(ledger, data, publish_time_us)

    def _not_writable(self, ledger_id, ledger) -> LedgerError:
        if self._closed:
            return LedgerError("the ledger store is closed")
        if ledger is None:
            return NoSuchLedger(f"ledger {ledger_id} does not exist here")
        if ledger.broken is not None:
            if isinstance(ledger.broken, LedgerFenced):
                return LedgerClosed(f"ledger {ledger_id} was fenced: it takes no more appends here")
            return LedgerError(f"ledger {ledger_id} takes no more appends: {ledger.broken}")
        return LedgerClosed(
            f"ledger {ledger_id} is closed" if ledger.closed else f"ledger {ledger_id} is not written here"
        )

    # -- ILedgerStore: reads ----------------------------------------------------------------

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        return run_now(self._read(ledger_id, first_entry, last_entry, max_bytes))

    def _read(self, ledger_id, first_entry, last_entry, max_bytes):
        ledger = yield self._known(ledger_id)
        check_range(ledger, first_entry, last_entry)
        return (yield self._reads.read(ledger, first_entry, last_entry, max_bytes))

    def entry_time(self, ledger_id, entry_id):
        return run_now(self._entry_time(ledger_id, entry_id))

    def _entry_time(self, ledger_id, entry_id):
        ledger = yield self._known(ledger_id)
        if not 0 <= entry_id < ledger.count:
            raise LedgerError(f"ledger {ledger_id} has no entry {entry_id}")
        return (yield self._reads.entry_time(ledger, entry_id))

    def find_by_time(self, ledger_id, time_us):
        return self._known(ledger_id).addCallback(self._reads.find_by_time, time_us)

    # -- ILedgerStore: close a ledger, fence, delete ------------------------------------------

    def close_ledger(self, ledger_id):
        """Refuse appends at once; fire once every entry appended before is acknowledged
        and the head records the ledger closed at its last one."""
        try:
            ledger = self._known_now(ledger_id)
        except LedgerError as e:
            return fail(e)
        if ledger.closing is not None:
            return ledger.closing.wait()
        if ledger.closed:
            return succeed(None)
        ledger.closed = True
        writing, ledger.writable = ledger.writable, False
        if not writing:  # (another hub's ledger, loaded here: nothing of it is ours to close)
            return succeed(None)
        ledger.closing = SharedResult(run_now(self._close_ledger(ledger)))
        return ledger.closing.wait()

    def _close_ledger(self, ledger: RadosLedger):
        yield self._writes.idle(ledger)
        if ledger.broken is not None:
            # Where it ends is the pool's to say (a write not acknowledged here may have
            # landed): forgotten, so that its next use loads it, and fences it if open.
            if self._ledgers.get(ledger.id) is ledger:
                del self._ledgers[ledger.id]
                self._reads.forget(ledger.id)
            if isinstance(ledger.broken, LedgerFenced):
                return None  # the fencer closes it, where its writes ended
            raise LedgerError(f"ledger {ledger.id} was not closed: {ledger.broken}")
        if ledger.deleted:
            return None
        head = layout.head_name(ledger.id)
        record = layout.encode_closed(ledger.count - 1, ledger.bytes, ledger.last_time_us, self.writer)
        epoch = layout.number(ledger.epoch)

        def build(op, ioctx):
            op.omap_cmp(layout.EPOCH, epoch, _EQ)
            op.omap_cmp(layout.STATE, layout.OPEN, _EQ)
            ioctx.set_omap(op, (layout.STATE, layout.CLOSED), (layout.CLOSED_STATE.encode("ascii"), record))

        try:
            yield self._client.write(head, build, f"closing {head}")
        except RadosOpError as e:
            if e.errno == errno.ECANCELED:  # fenced meanwhile: the fencer's recovery stands
                self.log.warn("ledger {ledger_id} was fenced while it closed", ledger_id=ledger.id)
                return None
            raise translate(e, ledger, self._client.op_timeout_s, self.pool) from None
        ledger.closed_by = self.writer
        return None

    def fence(self, ledger_id):
        """A ledger this store writes is closed; another's is fenced in the pool, recovered
        to its last whole entry and closed there (rados_fencing.py)."""
        if self._closed:
            return fail(LedgerError("the ledger store is closed"))
        ledger = self._ledgers.get(ledger_id)
        if ledger is not None and (ledger.writable or ledger.closing is not None):
            return self.close_ledger(ledger_id)

        def fenced(recovered):
            self._ledgers[ledger_id] = recovered
            self._reads.forget(ledger_id)
            return None

        return fence_ledger(self._client, ledger_id, self.writer).addCallback(fenced)

    def delete(self, ledger_id):
        """Remove the ledger's segments, then its head (a deletion cut short leaves a head,
        which a later delete finishes)."""
        return run_now(self._delete(ledger_id))

    def _delete(self, ledger_id):
        ledger = yield self._known(ledger_id)
        ledger.deleted = True
        if ledger.writable or not ledger.idle:
            ledger.writable = False
            self._writes.refuse_waiting(ledger, LedgerClosed(f"ledger {ledger_id} was deleted"))
            yield self._writes.idle(ledger)
        self._ledgers.pop(ledger_id, None)
        self._scanned.discard(ledger_id)
        self._reads.forget(ledger_id)
        names = [layout.segment_name(ledger_id, i) for i in range(len(ledger.segments))]
        removals = [self._client.remove(name, f"removing {name}") for name in names]
        for ok, outcome in (yield DeferredList(removals, consumeErrors=True)):
            if not ok and not (outcome.check(RadosOpError) and outcome.value.errno == errno.ENOENT):
                raise LedgerError(f"ledger {ledger_id}: cannot delete it: {outcome.value}")
        head = layout.head_name(ledger_id)
        try:
            yield self._client.remove(head, f"removing {head}")
        except RadosOpError as e:
            if e.errno != errno.ENOENT:
                raise LedgerError(f"ledger {ledger_id}: cannot delete it: {e}") from None
        return None

    # -- close ----------------------------------------------------------------------------

    def close(self):
        """Let the writes under way finish (each within op_timeout_s), then disconnect."""
        if self._closing is None:
            self._closed = True
            self._closing = SharedResult(run_now(self._close()))
        return self._closing.wait()

    def _close(self):
        self._writes.flush_now()
        busy = [self._writes.idle(ledger) for ledger in self._ledgers.values() if not ledger.idle]
        if busy:
            yield DeferredList(busy, consumeErrors=True)
        if self._client.connected:
            yield self._client.close()
        return None
