"""Three hubs of one region: topics published through one hub spread over all three, and
every request for a topic reaches its owner through at most one redirect."""

import json
import threading
from collections import Counter

from hedwig.client import Client
from hedwig.protocol import Op
from hedwig.protocol.requests import encode_describe_topic
from hedwig.protocol.status import Status
from tests.cluster.peers import ask

TOPICS = [f"spread-{i}" for i in range(12)]
RACED = [f"raced-{i}" for i in range(6)]


def test_topics_spread_over_three_hubs_and_each_is_one_redirect_from_any_hub(region):
    hubs = region(3)
    addresses = {hub.address for hub in hubs.hubs}
    # One client of the first hub only; a request may follow one redirect, no more.
    with Client(hubs.hubs[0].address, max_redirects=1) as client:
        for i, topic in enumerate(TOPICS):
            assert client.publish_many(topic, [b"message %d" % i]) == [1]
        owners = {topic: client.describe(topic)["owner"] for topic in TOPICS}
    counts = Counter(owners.values())
    assert set(counts) == addresses, counts
    assert max(counts.values()) - min(counts.values()) <= 1, counts  # least loaded first
    for hub in hubs.hubs:
        for topic, owner in owners.items():
            status, message, payload = ask(hub.address, Op.DESCRIBE_TOPIC, encode_describe_topic(topic))
            if hub.address == owner:
                assert status is Status.SUCCESS
                described = json.loads(bytes(payload))
                assert described["owner"] == owner and described["last_seq"] == 1
            else:  # one redirect, naming the owner itself
                assert (status, message) == (Status.NOT_RESPONSIBLE_FOR_TOPIC, owner)


def test_hubs_racing_to_claim_a_topic_leave_it_one_owner(region):
    """First requests for the same new topics through the three hubs at once: each topic
    ends with one owner and dense seq-ids, every client reaching it in one redirect."""
    hubs = region(3)
    clients = [Client(hub.address, max_redirects=1).connect() for hub in hubs.hubs]
    start = threading.Barrier(len(clients))
    published = {}

    def publish(i, client):
        start.wait()
        for topic in RACED:
            published[(i, topic)] = client.publish_many(topic, [b"from %d" % i])

    threads = [threading.Thread(target=publish, args=pair) for pair in enumerate(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for topic in RACED:
            assert sorted(published[(i, topic)][0] for i in range(len(clients))) == [1, 2, 3]
            assert len({client.describe(topic)["owner"] for client in clients}) == 1
    finally:
        for client in clients:
            client.close()
