"""A region hub's /metrics and STATS say how its ZooKeeper side stands: the session's
state, the hubs it sees, the topics it owns and how topics came and went."""

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from hedwig.client import Client
from hedwig.testing.polling import wait_until


def scrape(hub) -> dict:
    with urllib.request.urlopen(hub.http_url + "metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_and_stats_of_a_region_hub(region):
    hubs = region(2, http=True)
    first, second = hubs.hubs
    with Client(first.address) as client:
        for i in range(4):
            client.publish_many(f"metrics-{i}", [b"m"])
        owned = sum(client.describe(f"metrics-{i}")["owner"] == first.address for i in range(4))
        stats = client.stats()["zookeeper"]
    assert stats["session"] == "CONNECTED" and stats["owned"] == owned == stats["claims"] == 2
    assert stats["hubs"] == 2 and stats["root"] == hubs.root
    samples = wait_until(lambda: (s := scrape(first)) and ("hedwig_zookeeper_hubs", ()) in s and s, "metrics")
    assert samples[("hedwig_zookeeper_session_state", (("state", "CONNECTED"),))] == 1
    assert samples[("hedwig_zookeeper_session_state", (("state", "SUSPENDED"),))] == 0
    assert samples[("hedwig_zookeeper_owned_topics", ())] == 2
    assert samples[("hedwig_zookeeper_hubs", ())] == 2
    assert samples[("hedwig_zookeeper_topic_moves_total", (("event", "claims"),))] == 2
    assert samples[("hedwig_zookeeper_topic_moves_total", (("event", "taken_over"),))] == 0
    # The first hub sent two of the new topics to the second one (and the describes after).
    assert samples[("hedwig_requests_redirected_total", ())] >= 2
    assert scrape(second)[("hedwig_zookeeper_owned_topics", ())] == 2
