"""The schedule of a cached entry, read once: what every delivery path asks of an entry
before it sends it (protocol/schedule.py says what a schedule is).

An entry without delayed or expiring messages costs one search of its bytes the first
time it is delivered and an attribute test after that, per entry, never per message.
"""

from hedwig.protocol.schedule import DUE, EXPIRED, EntrySchedule
from hedwig.topiclog.entry import NOT_READ


def entry_schedule(entry):
    """The EntrySchedule of a LogEntry, or None when none of its messages has a time."""
    schedule = entry.schedule
    if schedule is NOT_READ:
        schedule = entry.schedule = EntrySchedule.of(entry.data)
    return schedule


def now_ms(clock) -> int:
    """The clock's time in the schedules' unit."""
    return int(clock.seconds() * 1000)


def timing(entry, start: int, stop: int, now: int, ttl_ms: int) -> tuple:
    """EntrySchedule.run_at of [start, stop) of a LogEntry (offsets from its first seq-id),
    with `ttl_ms` after its publish the expiry of messages without one of their own
    (0: none): (what, end, deliver_at)."""
    default_expiry = entry.publish_time_us // 1000 + ttl_ms if ttl_ms else 0
    schedule = entry_schedule(entry)
    if schedule is None:
        if default_expiry and default_expiry <= now:
            return EXPIRED, stop, 0
        return DUE, stop, 0
    return schedule.run_at(start, stop, now, default_expiry)
