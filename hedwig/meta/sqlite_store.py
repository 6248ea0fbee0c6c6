"""The embedded metadata store: one SQLite database (stdlib sqlite3) in the data directory.

Each record is a row with a version; a write names the version it replaces and succeeds
only if the row still has it (one UPDATE ... WHERE version = ?, or an INSERT that must not
collide), which is compare-and-set without a read-modify-write race. The database runs in
WAL mode, and every write is its own transaction, committed before its Deferred fires, so
it survives a crash of the process. Surviving a power cut costs an fsync per commit, paid
where it matters:

- topic ranges (written at acquire, at each roll, at GC) guard acknowledged messages: they
  commit with `synchronous` (FULL by default: fsynced);
- consume pointers are written far more often, and losing the latest one only means
  redelivering a few messages: they commit with `subscription_synchronous` (NORMAL by
  default: in WAL mode, durable at the next fsync of the log, by the next FULL commit or
  checkpoint).

A commit with an fsync takes milliseconds, and on the reactor thread it would stall every
connection of the hub: given a reactor, the store runs every statement, reads included, on
one worker thread of its own, in call order (so a read sees every write made before it,
and compare-and-set keeps its meaning), and fires each Deferred on the reactor thread.
Without a reactor (tools, unit tests under task.Clock) statements run at once on the
calling thread and the Deferreds come back fired.

Garbage: a write that drops ledgers from a topic's ranges records them in the `garbage`
table in the same transaction; they are forgotten once their files are gone. The hub's
start-up sweep deletes only ledgers recorded there (hedwig.topiclog.manager), so a
ledger the metadata does not know is never taken for garbage. Schema 2 added that table;
a schema-1 database gets it (empty) when it is opened, and keeps working. Schema 3 added
the subscriptions' `acked` column (shared and pull subscriptions' acknowledgements
above their consumed seq-id): an older database gets it, empty for every record.

`expect_records`: the hub opens its database saying whether its ledgers hold entries.
If they do, a missing, zero-byte or recordless database is refused (MetadataMissing)
rather than created afresh: that would be a damaged metadata file, and serving from it
would start every topic again at seq-id 1.
"""

import os
import sqlite3

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool
from zope.interface import implementer

from hedwig.meta.codec import (
    check_garbage,
    check_name,
    check_ranges,
    check_subscription,
    check_version,
    decode_preferences,
    decode_topic,
    encode_preferences,
    encode_topic,
)
from hedwig.meta.interface import (
    NEW,
    BadVersion,
    IMetadataStore,
    MetadataError,
    MetadataFull,
    MetadataMissing,
    SubscriptionState,
    Versioned,
)
from hedwig.meta.sqlite_schema import bring_up_to_date

_logger = Logger()

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def _disk_full(path: str) -> bool:
    """Whether the file system holding `path` has no block left for an unprivileged write
    (SQLite's "disk I/O error" on a full disk says no more)."""
    try:
        return os.statvfs(os.path.dirname(os.path.abspath(path))).f_bavail == 0
    except OSError:
        return False


@implementer(IMetadataStore)
class SqliteMetadataStore:
    """IMetadataStore over the SQLite database at `path` (created with its directory)."""

    def __init__(
        self,
        path,
        *,
        synchronous: str = "FULL",
        subscription_synchronous: str = "NORMAL",
        busy_timeout_ms: int = 2000,
        reactor=None,
        expect_records: bool = False,
    ):
        """`reactor` (IReactorFromThreads): run the database on a worker thread and answer
        through the reactor; None: run it on the calling thread. `expect_records`: the
        caller holds data this database must describe; refuse (MetadataMissing) a database
        that is missing, empty or records nothing, and leave it as it is."""
        for name, value in (
            ("synchronous", synchronous),
            ("subscription_synchronous", subscription_synchronous),
        ):
            if not isinstance(value, str) or value.upper() not in _SYNCHRONOUS:
                raise ValueError(f"{name} is one of {', '.join(_SYNCHRONOUS)}, not {value!r}")
        self._topic_sync = synchronous.upper()
        self._subscription_sync = subscription_synchronous.upper()
        self.path = os.fspath(path)
        if expect_records:
            self._check_present()
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            # isolation_level=None: autocommit, so each statement below is one transaction.
            # One thread at a time uses the connection: the caller's until set up, then the
            # worker's (check_same_thread would refuse that hand-over).
            self._db = sqlite3.connect(
                self.path, isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as e:
            raise MetadataError(f"cannot open the metadata database {self.path}: {e}") from None
        try:
            try:
                self._set_up(expect_records)
            except sqlite3.OperationalError as e:
                if not _disk_full(self.path):
                    raise
                # A full disk: the shared-memory index of WAL mode cannot be made, so
                # reopen in exclusive locking mode (the index on the heap; the hub holds
                # its data directory alone): reads are served, writes fail MetadataFull
                # until space returns.
                _logger.warn(
                    "metadata database {path}: the disk is full ({error}); opened in exclusive "
                    "locking mode: reads are served, writes wait for space",
                    path=self.path,
                    error=e,
                )
                self._db.close()
                self._db = sqlite3.connect(
                    self.path, isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False
                )
                self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
                self._set_up(expect_records)
        except sqlite3.Error as e:
            self._db.close()
            raise MetadataError(f"cannot set up the metadata database {self.path}: {e}") from None
        except MetadataError:
            self._db.close()
            raise
        self._closed = False
        self._reactor = reactor
        self._worker = None
        if reactor is not None:
            self._worker = ThreadPool(minthreads=1, maxthreads=1, name=f"metadata {self.path}")
            self._worker.start()

    def _set_up(self, expect_records: bool) -> None:
        # Read only, before anything below writes the file: a refused database stays as it was.
        if expect_records and not self._holds_records():
            raise MetadataMissing(f"the metadata database {self.path} records nothing")
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise MetadataError(f"{self.path}: SQLite refused WAL mode (journal mode {mode})")
        self._sync = None
        self._use_sync(self._topic_sync)
        bring_up_to_date(self._db, self.path)

    def _check_present(self) -> None:
        """Refuse a missing or zero-byte database before SQLite would create one over it
        (a zero-byte file with a write-ahead log beside it is left to SQLite to read)."""

        def size(path):
            try:
                return os.stat(path).st_size
            except FileNotFoundError:
                return None

        main = size(self.path)
        if main is None:
            raise MetadataMissing(f"the metadata database {self.path} is missing")
        if main == 0 and not size(self.path + "-wal"):
            raise MetadataMissing(f"the metadata database {self.path} is empty (0 bytes)")

    def _holds_records(self) -> bool:
        """Whether any table of ours holds a row (a table that is not there holds none)."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in ("topics", "subscriptions", "garbage"):
            if table in tables and self._db.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0]:
                return True
        return False

    def _use_sync(self, mode: str) -> None:
        """Set the durability of the next commits (a connection setting: cheap to switch)."""
        if self._sync != mode:
            self._db.execute(f"PRAGMA synchronous={mode}")
            self._sync = mode

    @property
    def journal_mode(self) -> str:
        return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def _run(self, operation, *args):
        """operation(*args) on the worker thread (in call order), or now without a
        reactor; Deferred of its result or error, fired on the reactor thread."""
        if self._closed:
            return fail(MetadataError(f"the metadata store {self.path} is closed"))
        if self._worker is None:
            return self._answer(self._attempt(operation, args))
        answered = Deferred()
        reactor = self._reactor

        def work():
            outcome = self._attempt(operation, args)
            reactor.callFromThread(answered.callback, outcome)

        self._worker.callInThread(work)
        # addBoth: a Failure handed to callback() runs the errbacks, and _answer must see it.
        return answered.addBoth(self._answer)

    @staticmethod
    def _attempt(operation, args):
        try:
            return operation(*args)
        except (MetadataError, sqlite3.Error):
            return Failure()

    def _answer(self, outcome):
        """On the reactor thread: the result, or its error (a database error logged once,
        and turned into MetadataError)."""
        if not isinstance(outcome, Failure):
            return succeed(outcome)
        if outcome.check(sqlite3.Error):
            _logger.error("metadata store {path}: {error}", path=self.path, error=outcome.value)
            code = getattr(outcome.value, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL or _disk_full(self.path):
                return fail(MetadataFull(f"the metadata store's disk is full: {outcome.value}"))
            return fail(MetadataError(f"the metadata store failed: {outcome.value}"))
        return fail(outcome)

    # -- topics ----------------------------------------------------------------------------

    def get_topic(self, topic):
        return self._run(self._get_topic, topic)

    def _get_topic(self, topic):
        row = self._db.execute(
            "SELECT ranges, version FROM topics WHERE topic = ?", (check_name("topic", topic),)
        ).fetchone()
        if row is None:
            return None
        ranges, options = decode_topic(row[0])
        return Versioned(ranges, row[1], options or None)

    def put_topic(self, topic, ranges, version, garbage=(), options=None):
        return self._run(self._put_topic, topic, ranges, version, garbage, options)

    def _put_topic(self, topic, ranges, version, garbage=(), options=None):
        topic = check_name("topic", topic)
        ranges = check_ranges(ranges)
        text = encode_topic(ranges, options)
        garbage = check_garbage(garbage, ranges)
        check_version(version)
        self._use_sync(self._topic_sync)
        if not garbage:
            return self._write_ranges(topic, text, version)
        # One transaction: the ranges that drop the ledgers and the record that they are
        # garbage commit together or not at all.
        return self._with_garbage(topic, garbage, lambda: self._write_ranges(topic, text, version))

    def _with_garbage(self, topic, garbage, write):
        """Run `write()` and record the ledgers `garbage` as the topic's garbage in one
        transaction, so that a crash never keeps one without the other; what `write`
        returns."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            result = write()
            self._db.executemany(
                "INSERT OR REPLACE INTO garbage (ledger_id, topic) VALUES (?, ?)",
                [(ledger_id, topic) for ledger_id in garbage],
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        return result

    def _write_ranges(self, topic, text, version):
        if version == NEW:
            try:
                self._db.execute(
                    "INSERT INTO topics (topic, ranges, version) VALUES (?, ?, 0)", (topic, text)
                )
            except sqlite3.IntegrityError:
                raise BadVersion(f"topic {topic} already exists") from None
            return 0
        cursor = self._db.execute(
            "UPDATE topics SET ranges = ?, version = version + 1 WHERE topic = ? AND version = ?",
            (text, topic, version),
        )
        if cursor.rowcount != 1:
            raise BadVersion(self._why("topic", topic, version))
        return version + 1

    def delete_topic(self, topic, version, garbage=()):
        return self._run(self._delete_topic, topic, version, garbage)

    def _delete_topic(self, topic, version, garbage=()):
        topic = check_name("topic", topic)
        check_version(version)
        garbage = check_garbage(garbage, [])
        self._use_sync(self._topic_sync)
        # One transaction: the record goes and its ledgers are known as garbage together.
        self._with_garbage(topic, garbage, lambda: self._delete_record(topic, version))

    def _delete_record(self, topic, version):
        cursor = self._db.execute("DELETE FROM topics WHERE topic = ? AND version = ?", (topic, version))
        if cursor.rowcount != 1:
            raise BadVersion(self._why("topic", topic, version))

    def list_topics(self):
        return self._run(
            lambda: [row[0] for row in self._db.execute("SELECT topic FROM topics ORDER BY topic")]
        )

    # -- subscriptions ---------------------------------------------------------------------

    def get_subscription(self, topic, subscriber_id):
        return self._run(self._get_subscription, topic, subscriber_id)

    def _get_subscription(self, topic, subscriber_id):
        row = self._db.execute(
            "SELECT consumed_seq, preferences, acked, version FROM subscriptions"
            " WHERE topic = ? AND subscriber_id = ?",
            (check_name("topic", topic), check_name("subscriber id", subscriber_id)),
        ).fetchone()
        if row is None:
            return None
        return Versioned(SubscriptionState(row[0], decode_preferences(row[1]), bytes(row[2])), row[3])

    def put_subscription(self, topic, subscriber_id, state, version):
        return self._run(self._put_subscription, topic, subscriber_id, state, version)

    def _put_subscription(self, topic, subscriber_id, state, version):
        key = (check_name("topic", topic), check_name("subscriber id", subscriber_id))
        consumed_seq, preferences, acked = check_subscription(state)
        text = encode_preferences(preferences)
        self._use_sync(self._subscription_sync)
        if check_version(version) == NEW:
            try:
                self._db.execute(
                    "INSERT INTO subscriptions"
                    " (topic, subscriber_id, consumed_seq, preferences, acked, version)"
                    " VALUES (?, ?, ?, ?, ?, 0)",
                    (*key, consumed_seq, text, acked),
                )
            except sqlite3.IntegrityError:
                raise BadVersion(f"subscription {key[1]} of topic {key[0]} already exists") from None
            return 0
        cursor = self._db.execute(
            "UPDATE subscriptions SET consumed_seq = ?, preferences = ?, acked = ?, version = version + 1"
            " WHERE topic = ? AND subscriber_id = ? AND version = ?",
            (consumed_seq, text, acked, *key, version),
        )
        if cursor.rowcount != 1:
            raise BadVersion(self._why("subscription", key, version))
        return version + 1

    def delete_subscription(self, topic, subscriber_id, version):
        return self._run(self._delete_subscription, topic, subscriber_id, version)

    def _delete_subscription(self, topic, subscriber_id, version):
        key = (check_name("topic", topic), check_name("subscriber id", subscriber_id))
        self._use_sync(self._topic_sync)  # an unsubscribe must not come back after a power cut
        cursor = self._db.execute(
            "DELETE FROM subscriptions WHERE topic = ? AND subscriber_id = ? AND version = ?",
            (*key, check_version(version)),
        )
        if cursor.rowcount != 1:
            raise BadVersion(self._why("subscription", key, version))

    def list_subscriptions(self, topic):
        return self._run(self._list_subscriptions, topic)

    def _list_subscriptions(self, topic):
        rows = self._db.execute(
            "SELECT subscriber_id, consumed_seq, preferences, acked, version FROM subscriptions"
            " WHERE topic = ? ORDER BY subscriber_id",
            (check_name("topic", topic),),
        )
        return {
            subscriber_id: Versioned(
                SubscriptionState(consumed_seq, decode_preferences(preferences), bytes(acked)), version
            )
            for subscriber_id, consumed_seq, preferences, acked, version in rows
        }

    # -- garbage ---------------------------------------------------------------------------

    def list_garbage(self):
        return self._run(
            lambda: dict(self._db.execute("SELECT ledger_id, topic FROM garbage ORDER BY ledger_id"))
        )

    def forget_garbage(self, ledger_ids):
        return self._run(self._forget_garbage, ledger_ids)

    def _forget_garbage(self, ledger_ids):
        ids = check_garbage(list(ledger_ids), [])
        # Cheap durability is enough: a forget lost in a power cut only brings the record
        # back, and the next sweep forgets it again (its ledger is gone by then).
        self._use_sync(self._subscription_sync)
        self._db.executemany("DELETE FROM garbage WHERE ledger_id = ?", [(i,) for i in ids])

    # -- lifecycle -------------------------------------------------------------------------

    def _why(self, kind: str, key, version) -> str:
        """Why a compare-and-set lost: the record is missing, or has another version."""
        if kind == "topic":
            row = self._db.execute("SELECT version FROM topics WHERE topic = ?", (key,)).fetchone()
            name = f"topic {key}"
        else:
            row = self._db.execute(
                "SELECT version FROM subscriptions WHERE topic = ? AND subscriber_id = ?", key
            ).fetchone()
            name = f"subscription {key[1]} of topic {key[0]}"
        if row is None:
            return f"{name} does not exist (expected version {version})"
        return f"{name} is at version {row[0]}, not {version}"

    def close(self):
        """Deferred, once every statement called before has run and the database is closed
        (its write-ahead log checkpointed into the main file)."""
        if self._closed:
            return succeed(None)
        self._closed = True
        if self._worker is None:
            self._closed_database(self._close_database(), None)
            return succeed(None)
        closed = Deferred()
        reactor, worker = self._reactor, self._worker

        def work():
            warning = self._close_database()
            reactor.callFromThread(closed.callback, warning)

        worker.callInThread(work)  # after every statement queued before it
        closed.addCallback(self._closed_database, worker)
        return closed

    def _close_database(self):
        """Checkpoint and close; the checkpoint's error, if any (logged by the caller)."""
        warning = None
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as e:
            warning = e
        self._db.close()
        return warning

    def _closed_database(self, warning, worker) -> None:
        if worker is not None:
            worker.stop()  # (idle now: the join is immediate)
        if warning is not None:
            self._warn_checkpoint(warning)

    def _warn_checkpoint(self, error) -> None:
        _logger.warn(
            "metadata store {path}: checkpoint at close failed: {error}", path=self.path, error=error
        )
