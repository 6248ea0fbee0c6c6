"""[log] max_topics caps the topics a hub holds: a request that would create one more is
refused TOO_MANY_TOPICS (the clients' TooManyTopics) and creates nothing, existing topics
go on, and the cap holds across a restart. Real hub processes."""

import pytest

from hedwig.client import Client
from hedwig.protocol.errors import TooManyTopics
from hedwig.protocol.status import Status
from hedwig.testing.hubprocess import HubProcess


def test_topics_past_the_cap_are_refused_and_nothing_is_created(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[log]\nmax_topics = 3\n")
    data_dir = tmp_path / "data"
    with HubProcess(data_dir, 0, "--conf", str(conf)) as process, Client(process.address) as client:
        for name in ("a", "b", "c"):
            assert client.publish(name, b"x") == 1
        with pytest.raises(TooManyTopics) as refused:
            client.publish("d", b"x")
        assert refused.value.status == Status.TOO_MANY_TOPICS
        assert "maximum of 3 topics" in refused.value.message
        with pytest.raises(TooManyTopics):
            client.subscribe("e", "reader", start="earliest")
        assert client.publish("a", b"y") == 2  # existing topics go on
        assert client.topics() == ["a", "b", "c"]
    with HubProcess(data_dir, 0, "--conf", str(conf)) as process, Client(process.address) as client:
        with pytest.raises(TooManyTopics):
            client.publish("d", b"x")
        assert [m.payload for m in client.read("a", 1)] == [b"x", b"y"]
        assert client.topics() == ["a", "b", "c"]
