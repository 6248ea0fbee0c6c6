"""The cache in a real topic log (a memory ledger store, SQLite metadata): it hears of every
entry the log acknowledges (ITopicLog.acknowledge_to), at once or later, before the
append is answered, and of none once the topic left it."""

import pytest

from hedwig.cache import ReadAheadCache
from hedwig.topiclog.entry import LogEntry
from tests.topiclog.harness import LogStack, message_set, settle


@pytest.fixture
def stack(tmp_path):
    stack = LogStack("memory", tmp_path)
    yield stack
    stack.close()


def cached_log(stack):
    cache = ReadAheadCache(stack.clock)
    return cache, cache.wrap(settle(stack, stack.manager().open("t")))


def test_an_append_acknowledged_at_once_is_cached_before_it_is_answered(stack):
    cache, topic_log = cached_log(stack)
    entry = topic_log.append_now(message_set(3), 3)
    assert type(entry) is LogEntry
    assert topic_log.get(2) is entry
    assert cache.stats()["published"] == 1


def test_an_append_acknowledged_later_is_cached_before_its_deferred_fires(stack):
    cache, topic_log = cached_log(stack)
    stack.ledgers.hold_acks()
    waiting = topic_log.append(message_set(2), 2)
    assert not waiting.called and cache.stats()["published"] == 0
    seen_when_answered = []
    waiting.addCallback(lambda entry: seen_when_answered.append(topic_log.get(entry.first_seq) is entry))
    stack.ledgers.release_acks()
    assert seen_when_answered == [True]


def test_an_entry_appended_to_the_decorated_log_itself_enters_the_cache(stack):
    """Whoever appends to the topic's log, the cache learns of the entry (its readers
    waiting at the tail are handed it)."""
    _cache, topic_log = cached_log(stack)
    waiting = topic_log.get(1)  # a reader at the tail
    entry = settle(stack, topic_log.inner.append(message_set(1), 1))
    assert waiting.called and waiting.result is entry
    assert topic_log.get(1) is entry


def test_a_topic_that_left_the_cache_is_listened_to_no_more(stack):
    cache, topic_log = cached_log(stack)
    topic_log.append_now(message_set(1), 1)
    topic_log.release()
    topic_log.append_now(message_set(1), 1)  # (a holder of the released topic's log)
    assert cache.stats()["topics"] == 0 and cache.bytes == 0


def test_the_acknowledgements_of_a_cached_log_are_its_caches():
    """A decorated log takes no other listener: the cache's would be lost."""
    from twisted.internet.task import Clock

    from tests.cache.controllable_log import ControllableLog

    topic_log = ReadAheadCache(Clock()).wrap(ControllableLog())
    with pytest.raises(TypeError):
        topic_log.acknowledge_to(print)
