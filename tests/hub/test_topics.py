"""TopicManager.get, the publish path's lookup: the decorated log of the topic's last
acquisition while that log is open, and None once it is not (released, deleted, closed)."""

from hedwig.testing.deferreds import fired
from tests.hub.harness import HubHarness


def test_get_answers_the_open_log_and_nothing_once_it_closed(tmp_path):
    harness = HubHarness(tmp_path)
    topics = harness.topics
    assert topics.get("t") is None  # never acquired
    first = fired(topics.acquire("t"))
    assert topics.get("t") is first and first.is_open
    fired(topics.release("t"))
    assert "t" not in topics._served and topics.get("t") is None  # (nothing kept of it)
    second = fired(topics.acquire("t"))
    assert second is not first and topics.get("t") is second
    fired(second.inner.close())  # (closed under the manager: a failed or fenced log)
    assert topics.get("t") is None
    third = fired(topics.acquire("t"))
    assert third.is_open and topics.get("t") is third
    fired(topics.delete("t"))
    assert "t" not in topics._served and topics.get("t") is None
