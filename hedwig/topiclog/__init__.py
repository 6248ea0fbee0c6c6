"""Topic logs: dense seq-ids over a list of ledgers, with rolls, garbage collection and retention."""

from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.errors import (
    LogClosed,
    LogCorrupt,
    LogError,
    LogFailed,
    LogUnavailable,
    SeqNotRetained,
    TopicFenced,
)
from hedwig.topiclog.manager import TopicLogManager
from hedwig.topiclog.topic_log import TopicLog

__all__ = [
    "LogClosed",
    "LogCorrupt",
    "LogEntry",
    "LogError",
    "LogFailed",
    "LogUnavailable",
    "SeqNotRetained",
    "TopicFenced",
    "TopicLog",
    "TopicLogManager",
]
