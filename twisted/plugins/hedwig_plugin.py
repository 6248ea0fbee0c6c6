"""twistd plugin: `twistd -n hedwig [--conf FILE] [--host H] [--port P] [--data-dir DIR]
[--http-port P] [--zookeeper HOST:PORT[,...]] [--ledger-store mmap|rados] [--rados-conf FILE]
[--rados-pool POOL]`: the options of `hedwig hub`, with the same meaning.

twistd runs the HubService under its own logging, daemonisation and signal handling;
SIGTERM and SIGINT stop the service gracefully (see hedwig.hub.service). For the hub's
own log format (hedwig.hub.logs): `twistd -n --logger hedwig.hub.logs.observer hedwig`.

A configuration that cannot work ends twistd at once with one line naming the setting
(exit status 2, as `hedwig hub`); a hub that cannot start (its port taken, its data
directory held) ends it with the cause as the last line and exit status 1
(hedwig.hub.startup). This file is installed with the package (setup.cfg): twistd finds
it in twisted/plugins on the path.
"""

from twisted.application.service import IServiceMaker
from twisted.plugin import IPlugin
from twisted.python import usage
from zope.interface import implementer


def _http_port(text: str):
    """`auto` or a port number (its range is checked with the configuration)."""
    return "auto" if text.strip().lower() == "auto" else int(text)


class Options(usage.Options):
    optParameters = [  # noqa: N815 - twisted.python.usage's name
        ["conf", "c", None, "configuration file (`hedwig hub --example-conf`); its paths are relative to it"],
        ["host", None, None, "address to listen on (default 127.0.0.1)"],
        ["port", "p", None, "port to listen on (default 4080)", int],
        ["data-dir", "d", None, "where ledgers and metadata live (default ./data)"],
        ["http-port", None, None, "status page port (default auto: --port + 1; 0: off)", _http_port],
        ["zookeeper", None, None, "ZooKeeper servers of a region of hubs ([zookeeper] servers)"],
        ["ledger-store", None, None, "where ledgers live: mmap (default) or rados ([ledger] store)"],
        ["rados-conf", None, None, "with --ledger-store rados: the cluster's ceph.conf ([rados] conf_file)"],
        ["rados-pool", None, None, "with --ledger-store rados: the pool of the ledgers ([rados] pool)"],
    ]


@implementer(IServiceMaker, IPlugin)
class HedwigServiceMaker:
    tapname = "hedwig"
    description = "A hedwig publish/subscribe hub."
    options = Options

    def makeService(self, options):
        import sys
        from types import SimpleNamespace

        from hedwig.config.loading import ConfigError
        from hedwig.hub.main import config_from_args, tune_allocator
        from hedwig.hub.reactors import ReactorError, install_reactor
        from hedwig.hub.service import HubService
        from hedwig.hub.startup import WatchedHubService

        args = SimpleNamespace(
            conf=options["conf"],
            host=options["host"],
            port=options["port"],
            data_dir=options["data-dir"],
            http_port=options["http-port"],
            zookeeper=options["zookeeper"],
            ledger_store=options["ledger-store"],
            rados_conf=options["rados-conf"],
            rados_pool=options["rados-pool"],
        )
        try:
            config = config_from_args(args)
        except ConfigError as e:
            print(f"twistd hedwig: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        try:  # ([hub] reactor: twistd's --reactor, if given, has installed one already)
            install_reactor(config.hub.reactor)
        except ReactorError as e:
            print(f"twistd hedwig: {e}; twistd's --reactor chooses it under twistd", file=sys.stderr)
            raise SystemExit(2) from None
        tune_allocator()  # as `hedwig hub` does: see its docstring
        return WatchedHubService(HubService(config))


service_maker = HedwigServiceMaker()
