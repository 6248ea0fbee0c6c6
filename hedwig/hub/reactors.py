"""The event loop a hub runs on ([hub] reactor, `hedwig hub --reactor`).

- `default`: Twisted's own reactor for the platform (epoll on Linux);
- `asyncio`: Twisted's asyncioreactor on the standard library's asyncio loop;
- `uvloop`: Twisted's asyncioreactor on uvloop's loop (libuv; `pip install uvloop`).

Every one runs the same hub: Twisted's transports and protocols over another loop. Which
is faster depends on the path and the machine (bench/redis_ratio_bench.py measures them
side by side); the default stays Twisted's own. A reactor is chosen once per process,
before anything imports twisted.internet.reactor: `hedwig hub` installs it first thing
after reading its configuration. Under twistd, twistd chooses (`twistd --reactor
asyncio`), and a configuration asking for another is refused (hedwig.hub.plugin).
"""

import importlib.util
import sys

REACTORS = ("default", "asyncio", "uvloop")


class ReactorError(Exception):
    """The reactor asked for cannot be had in this process: one line saying why."""


def reactor_problem(name: str) -> str | None:
    """Why `name` cannot be a hub's reactor here, or None when it can."""
    if name not in REACTORS:
        return f"[hub] reactor = {name!r}: expected {', '.join(REACTORS)}"
    if name == "uvloop" and importlib.util.find_spec("uvloop") is None:
        return "[hub] reactor = uvloop: uvloop is not installed (pip install uvloop)"
    return None


def install_reactor(name: str) -> None:
    """Install reactor `name` for this process. With one installed already (by twistd,
    by a test, by an import), `default` takes it as it is, and another name raises
    ReactorError unless it is the one installed."""
    problem = reactor_problem(name)
    if problem is not None:
        raise ReactorError(problem)
    if "twisted.internet.reactor" in sys.modules:
        from twisted.internet import reactor

        if name != "default" and reactor_name(reactor) != name:
            raise ReactorError(
                f"[hub] reactor = {name}: this process already runs {reactor_name(reactor)} "
                "(a reactor is installed before twisted.internet.reactor is first imported)"
            )
        return
    if name == "default":
        return  # (Twisted installs its own on first import)
    from twisted.internet import asyncioreactor

    if name == "uvloop":
        import uvloop

        asyncioreactor.install(uvloop.new_event_loop())
    else:
        import asyncio

        asyncioreactor.install(asyncio.new_event_loop())


def reactor_name(reactor) -> str:
    """The name in REACTORS of an installed reactor (`default` for any of Twisted's own)."""
    from twisted.internet.asyncioreactor import AsyncioSelectorReactor

    if not isinstance(reactor, AsyncioSelectorReactor):
        return "default"
    return "uvloop" if type(reactor._asyncioEventloop).__module__.startswith("uvloop") else "asyncio"


def describe(reactor) -> str:
    """What a log line says of the running reactor."""
    name = reactor_name(reactor)
    kind = type(reactor).__name__
    if name == "default":
        return kind
    loop = type(reactor._asyncioEventloop)
    return f"{kind} on {loop.__module__}.{loop.__name__}"
