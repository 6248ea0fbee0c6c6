"""Delayed messages across a takeover: nothing of a shared subscription's pending delays
is kept apart from the ledger (its consumed seq-id stays below a message not yet due),
so the hub that takes the topic over meets them again and delivers each, none early,
after its owner is SIGKILLed with every one of them still pending."""

import time

from hedwig.client import Client
from hedwig.testing.polling import wait_until

TOPIC = "delayed-moves"
COUNT = 200


def test_delayed_messages_pending_at_a_sigkill_of_the_owner_are_delivered_by_the_next_none_early(region):
    hubs = region(2, session_timeout_ms=2000)
    due = {}
    with Client(hubs.addresses) as client:
        client.create_topic(TOPIC)
        client.subscribe(TOPIC, "workers", kind="shared", start="earliest").close()
        for i in range(COUNT):
            delay = 3.0 + (i % 20) * 0.1  # due 3-5 s from now: after the takeover for most
            published_at = time.time()
            client.publish(TOPIC, b"%d" % i, deliver_after=delay)
            due[b"%d" % i] = published_at + delay
        owner = hubs.hub_at(client.describe(TOPIC)["owner"])
    (survivor,) = hubs.others(owner.address)
    owner.kill()
    received = {}
    with Client(survivor.address) as client:
        member = client.subscribe(TOPIC, "workers", kind="shared")

        def take_all():
            for message in member.receive_batch(timeout=0.5):
                received.setdefault(message.payload, time.time())
                member.ack(message)
            return len(received) == COUNT

        wait_until(take_all, f"all {COUNT} delayed messages delivered by {survivor.address}", 90)
    early = {payload: due[payload] - at for payload, at in received.items() if at < due[payload]}
    assert not early, f"delivered before their time (seconds early): {early}"
    assert set(received) == set(due)
