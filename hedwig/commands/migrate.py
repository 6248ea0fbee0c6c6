"""`hedwig migrate`: an embedded hub's ledgers into the RADOS pool its [rados] settings
name, under the same ids (hedwig.ledger.migration), so that it goes on replicated with
its history; then it runs with `--ledger-store rados` over the same data directory.

The hub must be stopped: the command holds the data directory's lock (as a hub does)
while it runs. It records where it is copying to in `migrating.json` in the data
directory, so a run cut short is resumed by running it again (and only into the same
pool). Once every ledger is copied and read back, the page files' directory is renamed
`ledgers.migrated` (kept until the operator deletes it), and a hub started on the page
files again is refused in one line rather than serving topics whose ledgers it lacks.
"""

import fcntl
import json
import os
import sys
from pathlib import Path

from hedwig.ledger.migration import MIGRATED_DIR, MIGRATED_TO

MARKER = "migrating.json"


def add_migrate(subparsers, client_options=None) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="copy a stopped embedded hub's ledgers into the RADOS pool its [rados] settings name,"
        " under the same ids, each read back and compared; then run it with --ledger-store rados",
    )
    parser.add_argument(
        "--conf", metavar="FILE", help="the hub's configuration file ([hub] data_dir, [rados])"
    )
    parser.add_argument("--data-dir", metavar="DIR", help="the hub's data directory (default ./data)")
    parser.add_argument(
        "--rados-conf", metavar="FILE", help="the cluster's ceph.conf (overrides [rados] conf_file)"
    )
    parser.add_argument("--rados-pool", metavar="POOL", help="the pool (overrides [rados] pool)")
    parser.set_defaults(run=migrate)


def migrate(args) -> int:
    """The exit status: 0 once every ledger is in the pool, 1 with one line saying why not
    (2 for a configuration that cannot work)."""
    from hedwig.config.settings import ConfigError
    from hedwig.hub.main import config_from_args

    args.ledger_store = "rados"  # (so the [rados] settings are checked as a hub on them checks them)
    try:
        config = config_from_args(args)
    except ConfigError as e:
        print(f"hedwig migrate: {e}", file=sys.stderr)
        return 2
    try:
        return _migrate(config)
    except _Refused as e:
        print(f"hedwig migrate: {e}", file=sys.stderr)
        return 1


class _Refused(Exception):
    pass


def _migrate(config) -> int:
    from twisted.internet.defer import ensureDeferred
    from twisted.internet.task import react

    from hedwig.config.zookeeper import on_zookeeper

    if on_zookeeper(config):
        raise _Refused(
            "a region's shared storage is not migrated by this command: it moves an embedded hub's"
            " ledgers (docs/operations.md, 'Moving to RADOS')"
        )
    data_dir = Path(config.hub.data_dir)
    ledgers_dir = data_dir / "ledgers"
    if not ledgers_dir.is_dir():
        if (data_dir / MIGRATED_DIR).is_dir():
            raise _Refused(
                f"{data_dir}'s ledgers were migrated already ({data_dir / MIGRATED_DIR} holds the page files)"
            )
        raise _Refused(f"{ledgers_dir}: no such directory (is {data_dir} a hub's data directory?)")
    metadata_path = data_dir / "metadata.sqlite3"
    if not metadata_path.is_file():
        raise _Refused(f"{metadata_path}: no such file: without it nothing says which ledgers hold what")
    lock = _lock(data_dir)
    failed = []  # the one line saying why the run failed, if it did
    try:
        react(lambda reactor: ensureDeferred(_steps(reactor, config, data_dir, failed)), [])
    except SystemExit:  # (react's way out, always)
        pass
    finally:
        lock.close()
    if failed:
        raise _Refused(failed[0])
    return 0


def _lock(data_dir: Path):
    """The data directory's lock, held exclusively as an embedded hub holds it."""
    lock_file = open(data_dir / "hub.lock", "a+")  # noqa: SIM115 - held while the command runs
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock_file.close()
        raise _Refused(
            f"a hub is serving {data_dir} (it holds {data_dir / 'hub.lock'}): stop it first"
        ) from None
    return lock_file


async def _steps(reactor, config, data_dir: Path, failed: list) -> None:
    """Copy, then rename the page files' directory; on failure, `failed` gets one line."""
    from hedwig.ledger.migration import MigrationError, migrate_ledgers
    from hedwig.ledger.mmap_store import MmapLedgerStore
    from hedwig.ledger.rados_store import RadosLedgerStore
    from hedwig.meta.sqlite_store import SqliteMetadataStore

    rados = config.rados
    where = {"pool": rados.pool, "namespace": rados.namespace}
    marker = data_dir / MARKER
    resume = marker.is_file()
    if resume:
        began = json.loads(marker.read_text(encoding="utf-8"))
        if began != where:
            failed.append(
                f"a migration of {data_dir} into pool {began.get('pool')} (namespace"
                f" {began.get('namespace')!r}) was begun: finish it there ({marker} says so)"
            )
            return
    metadata = SqliteMetadataStore(str(data_dir / "metadata.sqlite3"), expect_records=True)
    source = MmapLedgerStore.from_settings(str(data_dir / "ledgers"), config.ledger, reactor)
    target = RadosLedgerStore.from_settings(rados, reactor, writer="hedwig migrate")

    def progress(copied):
        what = "copied"
        if copied.kept:
            what = "found copied already"
        elif copied.replaced:
            what = "copied again (a partial copy was there)"
        print(
            f"ledger {copied.ledger_id} (topic {copied.topic}): {copied.entries} entries,"
            f" {copied.bytes} bytes {what}",
            file=sys.stderr,
        )

    try:
        await target.connect()
        done = await migrate_ledgers(
            metadata,
            source,
            target,
            resume=resume,
            starting=lambda: _write_marker(marker, where),
            progress=progress,
        )
    except MigrationError as e:
        failed.append(str(e))
    except Exception as e:  # (a store's error: one line, what was copied stands for the next run)
        failed.append(f"{type(e).__name__}: {e}")
    await _close(source, target, metadata)
    if failed:
        return
    pool = f"{rados.pool}/{rados.namespace}" if rados.namespace else rados.pool
    migrated = data_dir / MIGRATED_DIR
    os.rename(data_dir / "ledgers", migrated)
    (migrated / MIGRATED_TO).write_text(f"{pool}\n", encoding="utf-8")
    marker.unlink()
    print(
        f"{len(done.ledgers)} ledger(s), {done.entries} entries, {done.bytes} bytes in RADOS pool {pool};"
        f" the page files are in {migrated} until you delete them. Run the hub with --ledger-store rados"
        " (or [ledger] store = rados) and the same [rados] settings and data directory.",
        file=sys.stderr,
    )


def _write_marker(marker: Path, where: dict) -> None:
    """Where this data directory's ledgers are being copied to, durably, before the first."""
    text = json.dumps(where)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


async def _close(source, target, metadata) -> None:
    from twisted.internet.defer import maybeDeferred

    for closing in (source.close, target.close, metadata.close):
        try:
            await maybeDeferred(closing)
        except Exception as e:  # (what was copied stands; a close that fails is said)
            print(f"hedwig migrate: closing: {e}", file=sys.stderr)
