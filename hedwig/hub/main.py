"""`hedwig hub`: run one hub in the foreground until SIGTERM or SIGINT.

hedwig/commands/main.py wires `add_hub_arguments` and `run_hub` into its `hub` subcommand;
`python -m hedwig.hub.main` runs the same thing. Command-line options override the
configuration file, which overrides the defaults of hedwig/config/loading.py.
"""

import argparse
import ctypes
import os
import platform
import sys

from twisted.logger import Logger, globalLogBeginner

from hedwig.config.files import check_port
from hedwig.config.loading import Config, ConfigError, load_config
from hedwig.hub import logs
from hedwig.hub.reactors import REACTORS, ReactorError, describe, install_reactor
from hedwig.hub.startup import StartWatch

log = Logger()

_LEVELS = ("debug", "info", "warn", "error")

# glibc's mallopt parameters (malloc.h) and the values a hub runs with: see tune_allocator.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
HEAP_MMAP_THRESHOLD = 32 * 1024 * 1024  # the most glibc accepts on 64-bit; above max_frame_bytes
HEAP_TRIM_THRESHOLD = 64 * 1024 * 1024  # free heap top kept for the next entries


def tune_allocator() -> bool:
    """Keep the C heap's freed top for reuse instead of returning it to the OS at once.

    Every published entry is a fresh bytes object of about its message set's size (often
    ~100 KB, above pymalloc's range, so glibc's heap), and the cache frees entries in
    batches as subscribers consume. With glibc's default thresholds the trim threshold
    starts at 128 KB and only grows after some earlier large mmap'd block happens to be
    freed, so whether each prune hands the heap's top back to the OS (and the next
    entries' copies fault in fresh zeroed pages: 10x slower per copy) depended on what the
    process did before. Fixing both thresholds makes it a property of the hub, not of
    allocation history: blocks up to 32 MiB (every frame the hub accepts) come from the
    heap, and up to 64 MiB of free heap top is kept. The cost is that much resident
    memory kept after a burst (next to cache_bytes). Process-wide, so called once at
    start; MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ in the environment win.
    Returns whether the thresholds were set (False off glibc, or when the environment
    sets them)."""
    if platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # The mmap threshold first: setting either fixes both (no more dynamic growth), so the
    # trim threshold alone would leave blocks over 128 KB mapped and unmapped every time.
    if not mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD))


def add_hub_arguments(parser: argparse.ArgumentParser) -> None:
    from hedwig.config.installed import docs_dir, example_conf

    where = []
    docs = docs_dir()
    if docs is not None:
        where.append(f"Operating a hub: {docs / 'operations.md'}")
    try:
        where.append(f"Example configurations: {example_conf().parent} (and regions/ there)")
    except FileNotFoundError:
        pass
    if where:
        parser.epilog = "\n".join(where)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter  # paths to copy, unwrapped
    parser.add_argument(
        "--conf",
        metavar="FILE",
        help="configuration file (--example-conf prints one with every setting); paths in it are "
        "relative to it",
    )
    parser.add_argument(
        "--example-conf",
        action="store_true",
        help="print the example configuration (every setting at its default) and exit",
    )
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 4080; 0 picks a free one)")
    parser.add_argument("--data-dir", metavar="DIR", help="where ledgers and metadata live (default ./data)")
    parser.add_argument(
        "--http-port",
        type=http_port_option,
        metavar="PORT",
        help="port of the status page, /metrics and /api: a number, 0 (no HTTP listener) or auto, the"
        " default: the hub's port + 1 (4081 for 4080; a free one for --port 0), so hubs that differ only"
        " in --port each get their own",
    )
    parser.add_argument(
        "--kafka-port",
        type=int,
        metavar="PORT",
        help="serve Kafka clients (librdkafka, kcat, the Java client, kafka-python) on this port"
        " (overrides [kafka] port; default 0: none; docs/kafka.md)",
    )
    parser.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[,...]",
        help="run in a region of several hubs coordinated by these ZooKeeper servers (overrides"
        " [zookeeper] servers; the region's hubs share --data-dir)",
    )
    parser.add_argument(
        "--ledger-store",
        choices=("mmap", "rados"),
        help="where ledgers live: mmap (page files under --data-dir, the default) or rados (a"
        " replicated Ceph pool: every acknowledged message on every replica; [rados] settings)",
    )
    parser.add_argument(
        "--rados-conf",
        metavar="FILE",
        help="with --ledger-store rados: the cluster's ceph.conf (overrides [rados] conf_file;"
        " default /etc/ceph/ceph.conf)",
    )
    parser.add_argument(
        "--rados-pool",
        metavar="POOL",
        help="with --ledger-store rados: the pool of the ledgers (overrides [rados] pool; default hedwig)",
    )
    parser.add_argument(
        "--reactor",
        choices=REACTORS,
        help="the event loop: default (Twisted's own, epoll on Linux), asyncio (Twisted's asyncioreactor"
        " on asyncio's loop) or uvloop (the same on uvloop's, pip install uvloop); overrides [hub] reactor",
    )
    parser.add_argument(
        "--log-level",
        choices=sorted(_LEVELS),
        default="info",
        help="least severe level logged (default info)",
    )


def http_port_option(text: str):
    """--http-port's value: `auto`, or a number (its range is checked with the others)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto or a port number, not {text!r}") from None


def config_from_args(args) -> Config:
    """The configuration file (if any) with the command line's options over it."""
    overrides = {}
    for option, setting in (
        ("host", "hub.host"),
        ("port", "hub.port"),
        ("data_dir", "hub.data_dir"),
        ("http_port", "http.port"),
        ("kafka_port", "kafka.port"),
        ("zookeeper", "zookeeper.servers"),
        ("ledger_store", "ledger.store"),
        ("rados_conf", "rados.conf_file"),
        ("rados_pool", "rados.pool"),
        ("reactor", "hub.reactor"),
    ):
        value = getattr(args, option, None)
        if value is not None:
            if option.endswith("port") and isinstance(value, int):  # named as typed, before the file is read
                check_port(value, f"--{option.replace('_', '-')} {value}")
            overrides[setting] = value
    return load_config(getattr(args, "conf", None), overrides)


def start_logging(level: str = "info", stream=None) -> None:
    """Log in the hub's format (hedwig.hub.logs) to `stream` (standard error)."""
    globalLogBeginner.beginLoggingTo([logs.observer(stream, level)], redirectStandardIO=False)


def run_hub(args, reactor=None) -> int:
    """Run a hub until it is told to stop; the process's exit status. A hub that cannot
    start exits 1 with the cause as the last line on standard error (hedwig.hub.startup);
    a configuration that cannot work exits 2 with one line naming the setting."""
    if getattr(args, "example_conf", False):
        from hedwig.config.installed import example_conf

        sys.stdout.write(example_conf().read_text(encoding="utf-8"))
        return 0
    try:
        config = config_from_args(args)
    except ConfigError as e:
        print(f"hedwig hub: {e}", file=sys.stderr)
        return 2
    if reactor is None:
        try:
            install_reactor(config.hub.reactor)  # (before anything imports the global reactor)
        except ReactorError as e:
            print(f"hedwig hub: {e}", file=sys.stderr)
            return 2
        from twisted.internet import reactor
    from hedwig.hub.service import HubService

    start_logging(getattr(args, "log_level", "info"))
    log.info("Event loop: {loop}", loop=describe(reactor))
    if not tune_allocator():
        log.info("C allocator thresholds left as they are (not glibc, or set by the environment)")
    service = HubService(config, reactor)
    watch = StartWatch(reactor)
    # reactor.run() turns SIGTERM and SIGINT into reactor.stop(); the shutdown waits for this.
    reactor.addSystemEventTrigger("before", "shutdown", service.stopService)
    reactor.callWhenRunning(watch.start, service)
    reactor.run()
    if watch.cause is not None:
        print(f"hedwig hub: could not start: {watch.cause}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hedwig hub", description="run a hedwig hub")
    add_hub_arguments(parser)
    return run_hub(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
