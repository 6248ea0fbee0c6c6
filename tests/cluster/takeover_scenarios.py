"""The takeover scenarios of a region of two hubs, run over each ledger store a region
can share (test_takeover.py: the storage root; test_rados_region.py: a RADOS pool):
the owner of topics SIGKILLed under load, and an owner SIGSTOPped past its session
timeout then woken (SIGCONT). Each checks that nothing acknowledged is lost or
duplicated and that the woken owner acknowledges nothing more, and returns what the
caller checks of its store."""

import threading

from hedwig.client import Client
from hedwig.client.errors import HedwigError
from hedwig.protocol import Op
from hedwig.protocol.requests import encode_describe_topic
from hedwig.protocol.status import Status
from hedwig.testing.polling import wait_until
from tests.cluster.load import Load
from tests.cluster.peers import ask


def owners_of(addresses: str, topics) -> dict:
    with Client(addresses) as client:
        return {topic: client.describe(topic)["owner"] for topic in topics}


def sigkill_an_owner_under_load(hubs, topics) -> dict:
    """The owner of topics[0] killed under publish and subscribe load: every
    acknowledged set is in the log once, in order. The moved topics' descriptions after."""
    load = Load(hubs.addresses, topics).start()
    load.wait_for_more(50, "publishing to every topic")
    owners = owners_of(hubs.addresses, topics)
    victim = hubs.hub_at(owners[topics[0]])
    (survivor,) = hubs.others(victim.address)
    moved = [topic for topic, owner in owners.items() if owner == victim.address]
    victim.kill()
    load.wait_for_more(100, "publishing through the surviving hub after the takeover")
    load.stop()
    with Client(survivor.address) as client:
        load.check(client)
        after = {topic: client.describe(topic) for topic in moved}
    for described in after.values():
        assert described["owner"] == survivor.address
        first, *_, last = described["ledgers"]  # the killed owner's ledger, recovered and closed
        assert first["last_seq"] < last["first_seq"]
    assert any(load.failures[topic] for topic in moved)  # (the kill did hit them under load)
    return after


def pause_an_owner_past_its_session(hubs, topic: str = "paused") -> dict:
    """The owner of `topic` (one message published) SIGSTOPped, a publish sent to it
    meanwhile, the topic taken over by the other hub, the owner woken: it acknowledged
    nothing, and the log holds each message once. The topic's description before."""
    with Client(hubs.addresses) as client:
        client.publish_many(topic, [b"before"])
        before = client.describe(topic)
    owner = hubs.hub_at(before["owner"])
    (other,) = hubs.others(owner.address)
    with Client(owner.address) as at_owner:
        acknowledged_by_owner = at_owner.stats()["ops"]["publish"]["ok"]
    stalled = Client(owner.address, timeout=60)  # a client of the owner alone, caught by the pause
    outcome = []

    def publish_into_the_pause():
        try:
            outcome.append(("acked", stalled.publish_many(topic, [b"sent during the pause"])))
        except HedwigError as e:
            outcome.append(("failed", e))

    owner.pause()
    try:
        sender = threading.Thread(target=publish_into_the_pause)
        sender.start()
        # Through the other hub only (no redirect followed to the paused one): refused
        # while the paused hub's session lives, taken over once it expired.
        with Client(other.address, max_redirects=0, timeout=5) as at_other:

            def publish_there():
                try:
                    return at_other.publish_many(topic, [b"after the takeover"])
                except HedwigError:
                    return None

            taken_over = wait_until(publish_there, "the other hub taking the topic over", 30)
            more = [at_other.publish_many(topic, [b"after %d" % i])[0] for i in range(5)]
    finally:
        owner.resume()
    sender.join(60)
    stalled.close()
    assert taken_over == [2] and more == [3, 4, 5, 6, 7]
    with Client(owner.address) as at_owner:  # the woken hub acknowledged no publish at all
        assert at_owner.stats()["ops"]["publish"]["ok"] == acknowledged_by_owner
    status, message, _ = ask(owner.address, Op.DESCRIBE_TOPIC, encode_describe_topic(topic))
    assert (status, message) == (Status.NOT_RESPONSIBLE_FOR_TOPIC, other.address)
    with Client(other.address) as client:
        payloads = [m.payload for m in client.read(topic)]
    expected = [b"before", b"after the takeover", *(b"after %d" % i for i in range(5))]
    (result,) = outcome
    if result[0] == "acked":  # redirected by the woken hub to the new owner, stored there once
        assert payloads == [*expected, b"sent during the pause"] and result[1] == [8]
    else:
        assert payloads == expected
    return before
