"""`hedwig migrate`: an embedded hub's ledgers (or a region's, on its shared storage
root) into the RADOS pool its [rados] settings name, under the same ids
(hedwig.ledger.migration), so that it goes on replicated with its history; then it runs
with `--ledger-store rados`.

The hub must be stopped: the command holds the data directory's lock (as a hub does)
while it runs; for a region (`--zookeeper`), no hub may be registered in ZooKeeper. It
records where it is copying to in `migrating.json` in the data directory, so a run cut
short is resumed by running it again (and only into the same pool). Once every ledger is
copied and read back, the page files' directory is renamed `ledgers.migrated` (kept
until the operator deletes it), and a hub started on the page files again is refused in
one line rather than serving topics whose ledgers it lacks.
"""

import fcntl
import json
import os
import sys
from pathlib import Path

from hedwig.ledger.migration import MIGRATED_DIR, MIGRATED_TO
from hedwig.ledger.migration import MIGRATING_MARKER as MARKER


def add_migrate(subparsers, client_options=None) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="copy a stopped hub's ledgers (or a stopped region's) into the RADOS pool its [rados]"
        " settings name, under the same ids, each read back and compared; then run it with"
        " --ledger-store rados",
    )
    parser.add_argument(
        "--conf", metavar="FILE", help="the hub's configuration file ([hub] data_dir, [rados])"
    )
    parser.add_argument("--data-dir", metavar="DIR", help="the hub's data directory (default ./data)")
    parser.add_argument(
        "--rados-conf", metavar="FILE", help="the cluster's ceph.conf (overrides [rados] conf_file)"
    )
    parser.add_argument("--rados-pool", metavar="POOL", help="the pool (overrides [rados] pool)")
    parser.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[,...]",
        help="a region of several hubs: its ZooKeeper servers (overrides [zookeeper] servers); --data-dir"
        " is then its shared storage root, and every hub of the region must be stopped",
    )
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

    data_dir = Path(config.hub.data_dir)
    ledgers_dir = data_dir / "ledgers"
    if not ledgers_dir.is_dir():
        if (data_dir / MIGRATED_DIR).is_dir():
            raise _Refused(
                f"{data_dir}'s ledgers were migrated already ({data_dir / MIGRATED_DIR} holds the page files)"
            )
        raise _Refused(f"{ledgers_dir}: no such directory (is {data_dir} a hub's data directory?)")
    metadata_path = data_dir / "metadata.sqlite3"
    if not on_zookeeper(config) and not metadata_path.is_file():
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
    from hedwig.config.zookeeper import on_zookeeper
    from hedwig.ledger.migration import MigrationError, migrate_ledgers
    from hedwig.ledger.rados_store import RadosLedgerStore

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
    region = on_zookeeper(config)
    opened = await (_region_stores if region else _embedded_stores)(reactor, config, data_dir, failed)
    if opened is None:
        return
    metadata, source, closers = opened
    target = RadosLedgerStore.from_settings(rados, reactor, writer="hedwig migrate")
    closers.insert(1, target.close)

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
    await _close(closers)
    if failed:
        return
    pool = f"{rados.pool}/{rados.namespace}" if rados.namespace else rados.pool
    migrated = data_dir / MIGRATED_DIR
    os.rename(data_dir / "ledgers", migrated)
    (migrated / MIGRATED_TO).write_text(f"{pool}\n", encoding="utf-8")
    marker.unlink()
    hubs = "the region's hubs" if region else "the hub"
    print(
        f"{len(done.ledgers)} ledger(s), {done.entries} entries, {done.bytes} bytes in RADOS pool {pool};"
        f" the page files are in {migrated} until you delete them. Run {hubs} with --ledger-store rados"
        " (or [ledger] store = rados) and the same [rados] settings.",
        file=sys.stderr,
    )


async def _embedded_stores(reactor, config, data_dir: Path, failed: list):
    """(metadata, source, closers) of an embedded hub: its SQLite file, its page files."""
    from hedwig.ledger.mmap_store import MmapLedgerStore
    from hedwig.meta.sqlite_store import SqliteMetadataStore

    metadata = SqliteMetadataStore(str(data_dir / "metadata.sqlite3"), expect_records=True)
    source = MmapLedgerStore.from_settings(str(data_dir / "ledgers"), config.ledger, reactor)
    return metadata, source, [source.close, metadata.close]


async def _region_stores(reactor, config, data_dir: Path, failed: list):
    """(metadata, source, closers) of a region on a shared storage root: its ZooKeeper
    metadata, the root's page files; None (with `failed` saying why) while any hub of the
    region is registered, since its topics' ledgers are being written."""
    from hedwig.hub.zk_region import ZkRegion
    from hedwig.ledger.shared_store import SharedLedgerStore

    region = ZkRegion(config, reactor)
    try:
        await region.connect()
        live = await region.session.call("get_children", region.store.layout.branch("hubs"))
    except Exception as e:
        failed.append(f"ZooKeeper {region.servers}: {e}")
        live = None
    if live:
        failed.append(
            f"{len(live)} hub(s) of the region are running ({', '.join(sorted(live))}): stop them all first"
        )
    if failed:
        await region.session.stop()
        return None
    source = SharedLedgerStore.from_settings(str(data_dir / "ledgers"), config.ledger, reactor)
    return region.store, source, [source.close, region.store.close, region.session.stop]


def _write_marker(marker: Path, where: dict) -> None:
    """Where this data directory's ledgers are being copied to, durably, before the first."""
    text = json.dumps(where)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


async def _close(closers) -> None:
    from twisted.internet.defer import maybeDeferred

    for closing in closers:
        try:
            await maybeDeferred(closing)
        except Exception as e:  # (what was copied stands; a close that fails is said)
            print(f"hedwig migrate: closing: {e}", file=sys.stderr)
