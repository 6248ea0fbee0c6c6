"""The schedule of a cached entry, read once: what every delivery path asks of an entry
before it sends it (protocol/schedule.py says what a schedule is).

An entry without delayed or expiring messages costs one search of its bytes the first
time it is delivered and an attribute test after that, per entry, never per message.
"""

from hedwig.protocol.schedule import EntrySchedule
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
