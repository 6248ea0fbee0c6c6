"""A filter's cost is not every connection's wait: a real hub process evaluates a large
entry for a subscription's selector a step of messages at a time, answering everyone
else between the steps.

One compressed PUBLISH of a few kilobytes may hold tens of thousands of messages (up to
a million), and a selector within the parser's limits may cost tens of microseconds a
message: evaluated in one call, the hub answered nothing else (not a PUBLISH, not a
STATS, not a delivery) for seconds to a minute per entry and filter."""

import pytest

from hedwig.client import Client
from hedwig.protocol import encode_message_set
from hedwig.protocol.compression import compress_message_set
from hedwig.testing.polling import wait_until

COUNT = 50_000
# Two hundred LIKE tests of `a` that never hold (each a search through its text), then
# the one that does for the last message alone: every message costs every test.
CLAUSES = [f"a LIKE '%{i % 10}_%_{i % 7}%'" for i in range(200)]
SELECTOR = "(" + " OR ".join(CLAUSES) + ") OR final = TRUE"


@pytest.mark.parametrize("kind", ["exclusive", "shared"])
def test_a_large_entry_is_filtered_in_steps_while_the_hub_answers_others(hub, kind):
    topic = f"filter-steps-{kind}"
    properties = [{"a": "x" * 40}] * (COUNT - 1) + [{"a": "x" * 40, "final": True}]
    message_set = compress_message_set(encode_message_set([b""] * COUNT, properties), "gzip")
    with Client(hub.address) as client, Client(hub.address) as other:
        subscription = client.subscribe(topic, "selective", start="earliest", filter=SELECTOR, kind=kind)
        assert other.publish_set(topic, message_set)[-1] == COUNT

        # A STATS answered while the entry is being filtered: the hub serves between steps.
        wait_until(lambda: other.stats()["delivery"]["filtering_entries"] == 1, "the entry is being filtered")
        assert other.publish(f"{topic}-other", b"served meanwhile") == 1

        message = subscription.receive()
        assert (message.seq, message.properties["final"]) == (COUNT, True)
        delivery = other.stats()["delivery"]
        assert (delivery["filtering_entries"], delivery["filtered_in_steps"] >= 1) == (0, True)
