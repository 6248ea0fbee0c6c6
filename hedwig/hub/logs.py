"""The hub's log lines: one format, one line per event, written by twisted.logger.

    2026-11-24T19:55:00.123456Z info hedwig.hub.service: hedwig hub 127.0.0.1:4080 ... serving

UTC time with microseconds, the level (debug, info, warn, error, critical), the logger's
namespace (the module that logged), then the text, on one line whatever it holds: its
control characters are escaped (a newline a peer put in its name is `\\n`). A failure's
traceback follows on the lines after its event, indented by the traceback itself.
`hedwig hub` logs this way to standard error; under twistd, `--logger
hedwig.hub.logs.observer` does the same.
docs/operations.md ("Logs") lists what each level means.
"""

import sys
import time

from twisted.logger import (
    FileLogObserver,
    FilteringLogObserver,
    LogLevel,
    LogLevelFilterPredicate,
    eventAsText,
)

from hedwig.protocol.names import printable

LINE_LIMIT = 64 * 1024  # characters of an event's text (a peer's strings are bounded before it)

LEVELS = {
    "debug": LogLevel.debug,
    "info": LogLevel.info,
    "warn": LogLevel.warn,
    "error": LogLevel.error,
    "critical": LogLevel.critical,
}


def format_event(event: dict) -> str:
    """One event as a line of the hub's format (with a traceback after it, if any)."""
    when = event.get("log_time")
    if when is None:
        when = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1e6):06d}Z"
    level = event.get("log_level")
    namespace = event.get("log_namespace") or "-"
    if namespace == "log_legacy":  # Twisted's own old-style messages (ports, factories)
        system = event.get("system")
        namespace = system if system not in (None, "-") else "twisted"
    text = eventAsText(event, includeTraceback=False, includeTimestamp=False, includeSystem=False)
    # The event's text holds what peers sent (client names, user names, topics, status
    # messages): its control characters are escaped, so no peer can write a line of its
    # own. Only a traceback, which comes after it, spans lines.
    line = printable(text, limit=LINE_LIMIT)
    if "log_failure" in event:
        whole = eventAsText(event, includeTraceback=True, includeTimestamp=False, includeSystem=False)
        line += whole[len(text) :]
    return f"{stamp} {level.name if level is not None else '-'} {namespace}: {line}\n"


def observer(stream=None, level: str = "info") -> FilteringLogObserver:
    """A log observer writing the hub's format to `stream` (standard error), from `level`
    up. Also the factory twistd's --logger option takes: hedwig.hub.logs.observer."""
    writer = FileLogObserver(stream if stream is not None else sys.stderr, format_event)
    return FilteringLogObserver(writer, [LogLevelFilterPredicate(defaultLogLevel=LEVELS[level])])
