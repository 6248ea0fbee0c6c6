"""Topic logs: dense seq-ids over a list of ledgers, with rolls, garbage collection and retention."""

from hedwig.log.entry import LogEntry
from hedwig.log.errors import (
    LogClosed,
    LogCorrupt,
    LogError,
    LogFailed,
    LogUnavailable,
    SeqOutOfRange,
    TopicFenced,
)
from hedwig.log.manager import TopicLogManager
from hedwig.log.topic_log import TopicLog

__all__ = [
    "LogClosed",
    "LogCorrupt",
    "LogEntry",
    "LogError",
    "LogFailed",
    "LogUnavailable",
    "SeqOutOfRange",
    "TopicFenced",
    "TopicLog",
    "TopicLogManager",
]
