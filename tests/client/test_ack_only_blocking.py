"""The blocking client's acknowledgement-only subscriptions (deliver=False) against a real
hub process: read with read_range, acknowledge through the subscription, and the hub's
pointer follows, across a forced close and a hub that is killed and started again."""

import pytest

from hedwig.client import (
    AckOnlySubscription,
    Client,
    ConnectionLost,
    CouldNotConnect,
    NoDeliveries,
    SubscriptionClosed,
    TopicBusy,
)


def consumed(client, topic, subscriber_id):
    rows = client.describe(topic)["subscribers"]
    return next(r for r in rows if r["subscriber_id"] == subscriber_id)


def test_it_receives_nothing_and_acknowledges_what_was_read_another_way(hub):
    with Client(hub.address) as client:
        for first in range(1, 101, 10):
            client.publish_many("ack-only", [b"%d" % n for n in range(first, first + 10)])
        sub = client.subscribe("ack-only", "lake", mode="create", start="earliest", deliver=False)
        assert isinstance(sub, AckOnlySubscription)
        with pytest.raises(NoDeliveries, match="ack-only/lake was subscribed with deliver=False"):
            sub.receive(timeout=0.2)
        with pytest.raises(NoDeliveries):
            sub.receive_batch(timeout=0.2)
        with pytest.raises(NoDeliveries):
            iter(sub)
        read = client.read("ack-only", 1, 60)
        sub.ack(read[-1])  # never delivered on the subscription, and acknowledged all the same
        row = consumed(client, "ack-only", "lake")
        assert (row["consumed_seq"], row["backlog"], row["state"]) == (60, 40, "ack_only")
        sub.ack(10_000)
        assert consumed(client, "ack-only", "lake")["consumed_seq"] == 100, "up to the last seq-id"
        with Client(hub.address) as other, pytest.raises(TopicBusy):
            other.subscribe("ack-only", "lake", mode="attach", deliver=False)
        sub.close()
        # Attached to deliver, the same subscription starts after what was acknowledged.
        reader = client.subscribe("ack-only", "lake", mode="attach")
        client.publish("ack-only", b"101")
        message = reader.receive(timeout=10)
        assert (message.seq, message.payload) == (101, b"101")


def test_a_forced_close_is_seen_at_the_next_ack(hub):
    with Client(hub.address) as first, Client(hub.address) as second:
        first.publish_many("ack-forced", [b"x"] * 10)
        old = first.subscribe("ack-forced", "lake", start="earliest", deliver=False)
        old.ack(3)
        new = second.subscribe("ack-forced", "lake", mode="attach", force_attach=True, deliver=False)
        # (A round trip on the first connection: the hub's event to it is there before
        # its reply. The ack reads what is waiting on the connection before it sends.)
        first.stats()
        with pytest.raises(SubscriptionClosed, match="forced"):
            old.ack(5)
        new.ack(7)
        assert consumed(second, "ack-forced", "lake")["consumed_seq"] == 7


def test_acknowledgements_wait_out_a_hub_that_is_away_and_go_out_when_it_is_back(own_hub):
    own_hub.start()
    with Client(own_hub.address, reconnect_timeout=1.0) as client:
        client.publish_many("ack-restart", [b"x"] * 100)
        sub = client.subscribe("ack-restart", "lake", mode="create", start="earliest", deliver=False)
        sub.ack(30)
        assert consumed(client, "ack-restart", "lake")["consumed_seq"] == 30  # (all read: a FIN, no RST)
        own_hub.kill()  # SIGKILL: the hub may lose a pointer it had not written yet
        with pytest.raises((CouldNotConnect, ConnectionLost)):
            sub.ack(50)  # noticed at once: the connection is gone and no hub answers
        own_hub.restart()
        sub.ack(45)  # (older than what is kept: the 50 kept goes out)
        row = consumed(client, "ack-restart", "lake")
        assert (row["consumed_seq"], row["state"]) == (50, "ack_only")
        sub.close()
    own_hub.stop()
    own_hub.start()  # close wrote the pointer: it survives a restart
    with Client(own_hub.address) as client:
        assert consumed(client, "ack-restart", "lake")["consumed_seq"] == 50
