"""twistd plugin: `twistd -n hedwig [--conf FILE] [--host H] [--port P] [--data-dir DIR]
[--http-port P]`.

twistd runs the HubService under its own logging, daemonisation and signal handling;
SIGTERM and SIGINT stop the service gracefully (see hedwig.hub.service). For the hub's
own log format (hedwig.hub.logs): `twistd -n --logger hedwig.hub.logs.observer hedwig`.
"""

from twisted.application.service import IServiceMaker
from twisted.plugin import IPlugin
from twisted.python import usage
from zope.interface import implementer


class Options(usage.Options):
    optParameters = [  # noqa: N815 - twisted.python.usage's name
        ["conf", "c", None, "configuration file (see conf/hub.conf)"],
        ["host", None, None, "address to listen on (default 127.0.0.1)"],
        ["port", "p", None, "port to listen on (default 4080)", int],
        ["data-dir", "d", None, "where ledgers and metadata live (default ./data)"],
        ["http-port", None, None, "port of the status page and /metrics (default 4081; 0: off)", int],
    ]


@implementer(IServiceMaker, IPlugin)
class HedwigServiceMaker:
    tapname = "hedwig"
    description = "A hedwig publish/subscribe hub."
    options = Options

    def makeService(self, options):
        from types import SimpleNamespace

        from hedwig.hub.main import config_from_args, tune_allocator
        from hedwig.hub.service import HubService

        tune_allocator()  # as `hedwig hub` does: see its docstring
        args = SimpleNamespace(
            conf=options["conf"],
            host=options["host"],
            port=options["port"],
            data_dir=options["data-dir"],
            http_port=options["http-port"],
        )
        return HubService(config_from_args(args))


service_maker = HedwigServiceMaker()
