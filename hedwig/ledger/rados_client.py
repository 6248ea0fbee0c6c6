"""librados for the reactor: one connection and I/O context, every operation a Deferred.

librados runs each operation on its own threads and calls back on one of them when the
operation completes; here every callback does one thing, `reactor.callFromThread`, so
the Deferred fires on the reactor thread and nothing there ever waits for a librados
call. Connecting and shutting down block in librados, so they run in the reactor's
thread pool. A completed operation's return code is its outcome: 0, or a negative errno,
raised as RadosOpError for the store to translate (ENOENT means a missing ledger for a
head, damage for a segment).

The client settings that bound waiting are set here, on this client only:
`rados_osd_op_timeout` and `rados_mon_op_timeout` (an operation not acknowledged within
op_timeout_s fails with ETIMEDOUT instead of waiting for the cluster to recover), and
the objecter's tick and laggy-op check (1 s and 2 s instead of 5 s and 10 s: an
operation stuck on an OSD that hung makes the client fetch the new map within seconds,
once the monitor marked the OSD down).
"""

import errno
import os

from twisted.internet.defer import Deferred

from hedwig.concurrency.deferreds import in_thread
from hedwig.ledger.interface import LedgerError, LedgerUnavailable

CLIENT_SETTINGS = {"objecter_tick_interval": "1", "objecter_timeout": "2"}


class RadosOpError(Exception):
    """A RADOS operation failed; `errno` is its (positive) error number."""

    def __init__(self, code: int, what: str):
        self.errno = code
        self.what = what
        name = errno.errorcode.get(code, str(code))
        super().__init__(f"{what}: {name} ({os.strerror(code)})")


def ledger_error(error: RadosOpError, what: str) -> LedgerError:
    """The ledger error a failed operation means where no errno has a meaning of its own:
    not answered within op_timeout_s is LedgerUnavailable (the cluster may recover), any
    other failure a LedgerError naming the operation."""
    if error.errno == errno.ETIMEDOUT:
        return LedgerUnavailable(f"{what}: RADOS did not answer within op_timeout_s ({error.what})")
    return LedgerError(f"{what}: {error}")


class RadosClient:
    """A connection to one pool (and namespace) of a cluster, for one store."""

    def __init__(
        self,
        reactor,
        *,
        conf_file: str,
        pool: str,
        namespace: str = "",
        client_id: str = "admin",
        op_timeout_s: float = 10.0,
    ):
        self._reactor = reactor
        self.conf_file = conf_file
        self.pool = pool
        self.namespace = namespace
        self.client_id = client_id
        self.op_timeout_s = op_timeout_s
        self._rados = None
        self._ioctx = None
        self._module = None

    # -- lifecycle ------------------------------------------------------------------------

    def connect(self) -> Deferred:
        """Deferred firing once connected to the cluster and the pool is open; fails with
        RadosOpError (the cluster, the pool or the key cannot be reached in time)."""
        from hedwig.ledger.rados_binding import import_rados

        self._module = import_rados()
        return in_thread(self._reactor, self._connect)

    def _connect(self):
        rados = self._module
        timeout = str(max(1, int(self.op_timeout_s + 0.999)))
        settings = {
            "rados_osd_op_timeout": timeout,
            "rados_mon_op_timeout": timeout,
            "client_mount_timeout": timeout,
            **CLIENT_SETTINGS,
        }
        what = f"connecting to the Ceph cluster of {self.conf_file} as client.{self.client_id}"
        try:
            handle = rados.Rados(conffile=self.conf_file, rados_id=self.client_id, conf=settings)
        except rados.Error as e:
            raise RadosOpError(getattr(e, "errno", None) or errno.EINVAL, f"{what}: {e}") from None
        try:
            handle.connect(timeout=int(timeout))
            if not handle.pool_exists(self.pool):
                raise RadosOpError(errno.ENOENT, f"{what}: the cluster has no pool {self.pool!r}")
            ioctx = handle.open_ioctx(self.pool)
            ioctx.set_namespace(self.namespace)
        except rados.Error as e:
            handle.shutdown()
            raise RadosOpError(getattr(e, "errno", None) or errno.EIO, what) from None
        except BaseException:
            handle.shutdown()
            raise
        self._rados, self._ioctx = handle, ioctx

    @property
    def connected(self) -> bool:
        return self._ioctx is not None

    def instance(self) -> str:
        """This client's name in the cluster (client.<id>.<instance>), for operators."""
        return f"client.{self.client_id}.{self._rados.get_instance_id()}" if self._rados else ""

    def close(self) -> Deferred:
        """Shut the connection down (in a thread: librados waits for what is in flight)."""
        handle, ioctx = self._rados, self._ioctx
        self._rados = self._ioctx = None

        def shutdown():
            if ioctx is not None:
                ioctx.close()
            if handle is not None:
                handle.shutdown()

        return in_thread(self._reactor, shutdown)

    def list_objects(self, what: str) -> Deferred:
        """Deferred[list[str]]: the names of every object in the namespace (a listing of
        the pool's placement groups, in a thread: it blocks until each answered)."""
        module, ioctx = self._module, self._ioctx

        def listing():
            try:
                return [o.key for o in ioctx.list_objects()]
            except module.Error as e:
                raise RadosOpError(getattr(e, "errno", None) or errno.EIO, f"{what}: {e}") from None

        return in_thread(self._reactor, listing)

    # -- operations -----------------------------------------------------------------------

    def _completed(self, d: Deferred, what: str, release=None):
        """The librados callback of one operation: its outcome to the reactor."""
        call_from_thread = self._reactor.callFromThread

        def done(completion, *result):
            rc = completion.get_return_value()
            call_from_thread(_settle, d, rc, what, result[0] if result else None, release)

        return done

    def write(self, name: str, build, what: str) -> Deferred:
        """Deferred firing once the cluster acknowledged one write op on object `name`
        (on every replica of its acting set); `build(op, ioctx)` fills the op."""
        d = Deferred()
        op = self._module.WriteOp().create()
        try:
            build(op, self._ioctx)
            self._ioctx.operate_aio_write_op(op, name, oncomplete=self._completed(d, what))
        finally:
            op.release()  # (librados took the operation over at submission)
        return d

    def read(self, name: str, length: int, offset: int, what: str) -> Deferred:
        """Deferred[bytes]: up to `length` bytes of `name` from `offset` (fewer past its end)."""
        d = Deferred()
        self._ioctx.aio_read(name, length, offset, oncomplete=self._completed(d, what))
        return d

    def omap_get(self, name: str, keys, what: str) -> Deferred:
        """Deferred[dict]: the values of those of `keys` that object `name` has."""
        op = self._module.ReadOp().create()
        values, _rc = self._ioctx.get_omap_vals_by_keys(op, tuple(keys))
        return self._omap_read(op, name, values, what)

    def omap_after(self, name: str, start_after: str, prefix: str, count: int, what: str) -> Deferred:
        """Deferred[dict]: up to `count` keys of `name` after `start_after` beginning
        with `prefix`, and their values (in key order)."""
        op = self._module.ReadOp().create()
        values, _rc = self._ioctx.get_omap_vals(op, start_after, prefix, count)
        return self._omap_read(op, name, values, what)

    def _omap_read(self, op, name: str, values, what: str) -> Deferred:
        d = Deferred()
        # The op is kept until it completes (its answers are written into `values`).
        d.addCallback(lambda _: dict(values))
        try:
            self._ioctx.operate_aio_read_op(op, name, oncomplete=self._completed(d, what, op.release))
        except BaseException:
            op.release()
            raise
        return d

    def remove(self, name: str, what: str) -> Deferred:
        d = Deferred()
        self._ioctx.aio_remove(name, oncomplete=self._completed(d, what))
        return d


def _settle(d: Deferred, rc: int, what: str, result, release) -> None:
    """On the reactor thread: fire `d` with the operation's outcome."""
    if release is not None:
        release()
    if rc < 0:
        d.errback(RadosOpError(-rc, what))
    else:
        if result is not None and len(result) > rc:
            # A read's bytes are its return code's count: the binding hands over its whole
            # buffer, uninitialised, when nothing was read (at or past the object's end).
            result = result[:rc]
        d.callback(result)
