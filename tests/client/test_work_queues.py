"""Work queues against real hub processes: members of one shared subscription split
100,000 messages with every one acknowledged exactly once; a member SIGKILLed mid-stream
has its messages delivered to the others; dead letters reach their topic; acks written
before a hub restart are never delivered again; a message bound keeps a stalled
subscriber to its bound while garbage collection goes on."""

from collections import Counter

import pytest

from hedwig.client import Client
from hedwig.delivery.dead_letters import DELIVERIES, ORIGINAL_SEQ, ORIGINAL_TOPIC, SUBSCRIPTION
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.client.members import Member, start_victim

TOTAL = 100_000
SET = 1000  # messages per publish (one entry each)


def publish(client, topic, count, first=0):
    for start in range(first, first + count, SET):
        client.publish_many(topic, [b"%d" % i for i in range(start, min(start + SET, first + count))])


def row(client, topic, subscriber_id):
    return next(r for r in client.describe(topic)["subscribers"] if r["subscriber_id"] == subscriber_id)


@pytest.mark.parametrize("members", [2, 10])
def test_members_split_100000_messages_each_acknowledged_exactly_once(hub, members):
    topic = f"work-split-{members}"
    with Client(hub.address) as publisher:
        publisher.create_topic(topic)
        taken = Counter()
        workers = [Member(hub.address, topic, taken, TOTAL, start="earliest") for _ in range(members)]
        for worker in workers:
            worker.start()
        publish(publisher, topic, TOTAL)
        for worker in workers:
            worker.finish()
        assert set(taken) == set(range(1, TOTAL + 1)), "none lost"
        assert set(taken.values()) == {1}, "each delivered and acknowledged exactly once"
        assert all(worker.seqs for worker in workers), "every member took part"
        assert all(worker.seqs == sorted(worker.seqs) for worker in workers), "in order per member"
        r = wait_until(
            lambda: (r := row(publisher, topic, "workers"))["consumed_seq"] == TOTAL and r, "all consumed"
        )
        assert (r["pending"], r["redeliveries"], r["members"]) == (0, 0, 0)


def test_a_member_killed_mid_stream_has_its_messages_delivered_to_the_others(hub):
    topic = "work-kill"
    total = 20_000
    with Client(hub.address) as publisher:
        publisher.create_topic(topic)
        victim = start_victim(hub.address, topic, "shared", 500)
        try:
            wait_until(lambda: row(publisher, topic, "workers")["members"] == 1, "the victim attached")
            taken = Counter()
            survivor = Member(hub.address, topic, taken, total, window=500)
            publish(publisher, topic, total)
            held = {int(victim.stdout.readline()) for _ in range(10)}  # it has messages in hand
            victim.kill()
            victim.wait()
            held |= {int(line) for line in victim.stdout.read().split()}
        finally:
            victim.kill()
            victim.stdout.close()
        survivor.start()
        survivor.finish()
    assert set(taken) == set(range(1, total + 1)), "none lost"
    assert set(taken.values()) == {1}
    redelivered = [seq for seq in survivor.seqs if seq in held]
    assert sorted(redelivered) == sorted(held), "what the victim held came to the survivor"
    assert survivor.counts[2] == len(held), "each with its delivery count"


def test_a_message_delivered_max_deliveries_times_goes_to_the_dead_letter_topic(hub):
    topic = "work-poison"
    with Client(hub.address) as client:
        member = client.subscribe(topic, "w", kind="shared", start="earliest", max_deliveries=3)
        client.publish(topic, b"poison", {"kind": b"test"})
        client.publish(topic, b"fine")
        poison_counts = []
        while len(poison_counts) < 3:
            message = member.receive(timeout=30)
            if message.payload == b"poison":
                poison_counts.append(message.delivery_count)
                member.nack(message)
            else:
                member.ack(message)
        assert poison_counts == [1, 2, 3]
        member.close()
        [dead] = wait_until(lambda: client.read(f"{topic}.dlq", 1), "the dead letter")
        assert dead.payload == b"poison"
        assert dead.properties == {
            "kind": b"test",
            ORIGINAL_TOPIC: topic.encode(),
            ORIGINAL_SEQ: b"1",
            SUBSCRIPTION: b"w",
            DELIVERIES: b"3",
        }
        r = wait_until(lambda: (r := row(client, topic, "w"))["consumed_seq"] == 2 and r, "acknowledged")
        assert r["dead_lettered"] == 1


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_acks_written_before_a_hub_restart_are_never_delivered_again(own_hub, how):
    """10,000 sparse acks outstanding (every odd seq-id of 20,000): after the restart the
    subscription delivers exactly the even ones, nothing acknowledged and nothing lost."""
    topic = "work-restart"
    total = 20_000
    own_hub.start()
    client = Client(own_hub.address, reconnect_timeout=60).connect()
    member = client.subscribe(topic, "w", kind="shared", start="earliest", window=total)
    publish(client, topic, total)
    received = 0
    while received < total:
        for message in member.receive_batch(timeout=5):
            received += 1
            if message.seq % 2:
                member.ack(message)
    assert member.receive(timeout=0.1) is None  # (waiting sends the last batch of acks)

    def acks_in(written):
        r = row(client, topic, "w")
        return r["acked_above"] == total // 2 - 1 and (not written or not r["unwritten"])

    if how == "sigkill":  # only what was written counts: wait until it is
        wait_until(lambda: acks_in(written=True), "the acks written")
        own_hub.kill()
    else:  # a graceful stop writes what it was told, written or not
        wait_until(lambda: acks_in(written=False), "the acks received")
        own_hub.stop()
    client.close()
    own_hub.restart()
    with Client(own_hub.address) as again:
        member = again.subscribe(topic, "w", kind="shared", window=total)
        seqs = []
        while len(seqs) < total // 2:
            batch = member.receive_batch(timeout=30)
            assert batch, f"only {len(seqs)} came back"
            for message in batch:
                seqs.append(message.seq)
                member.ack(message)
        assert sorted(seqs) == list(range(2, total + 1, 2)), "exactly the unacknowledged ones"
        assert member.receive(timeout=0.5) is None
        member.close()
        assert row(again, topic, "w")["consumed_seq"] == total


def test_a_stalled_subscriber_with_a_bound_never_holds_more_and_garbage_collection_goes_on(tmp_path, hubs):
    conf = tmp_path / "hub.conf"
    conf.write_text("[log]\nmax_ledger_entries = 5\ngc_interval_s = 0.2\n")
    hub = HubProcess(tmp_path / "data", 0, "--conf", str(conf)).start()
    hubs.append(hub)
    topic = "work-bound"
    with Client(hub.address) as client:
        stalled = client.subscribe(topic, "stalled", message_bound=1000)
        stalled.close()  # never reads again
        for batch in range(40):
            client.publish_many(topic, [b"x"] * 500)
            r = row(client, topic, "stalled")
            assert r["backlog"] <= 1000, f"after batch {batch}: {r}"
        assert (r["consumed_seq"], r["skipped_by_bound"]) == (19_000, 19_000)
        info = wait_until(
            lambda: (d := client.describe(topic))["first_seq"] > 15_000 and d, "garbage collection"
        )
        assert info["first_seq"] <= 19_001, "what the bound keeps is kept"  # (ledgers of 2,500)
        assert client.stats()["delivery"]["skipped_by_bound"] == 19_000
