"""Key_shared subscriptions against a real hub process: three members over 1,000 keys
take every key whole, in seq-id order, each message acknowledged once; a member
SIGKILLed mid-stream and another joining keep every key in order and lose nothing.
(The issue's 100,000 messages run in bench/keyshared_bench.py; these use fewer.)"""

import random
from collections import Counter, defaultdict
from itertools import pairwise

from hedwig.client import Client
from hedwig.testing.polling import wait_until
from tests.client.members import Member, start_victim

KEYS = 1000
SET = 100  # messages per publish (one entry each, of many keys)


def publish(client, topic, count, seed):
    rng = random.Random(seed)
    keys_of = {}
    for start in range(0, count, SET):
        keys = [f"key-{rng.randrange(KEYS)}" for _ in range(min(SET, count - start))]
        seqs = client.publish_many(topic, [b"%d" % i for i in range(len(keys))], keys=keys)
        keys_of.update(zip(seqs, (k.encode() for k in keys), strict=True))
    return keys_of


def row(client, topic):
    return next(r for r in client.describe(topic)["subscribers"] if r["subscriber_id"] == "workers")


def check_keys(members, keys_of, total):
    """Every key's messages in order at each member, the members' parts of a key one
    after another (never interleaved), none lost."""
    taken_by = defaultdict(list)  # key -> [(first, last) of each member's part]
    for member in members:
        for key, seqs in member.by_key().items():
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"{key!r} out of order"
            assert all(keys_of[seq] == key for seq in seqs)
            taken_by[key].append((seqs[0], seqs[-1]))
    for key, parts in taken_by.items():
        parts.sort()
        for (_, last), (first, _) in pairwise(parts):
            assert last < first, f"{key!r}: two members took its messages at once"
    got = {seq for member in members for _, seq, _ in member.got}
    assert got == set(range(1, total + 1)), "none lost"


def test_three_members_take_every_key_whole_and_in_order(hub):
    topic = "key-shared-three"
    total = 20_000
    with Client(hub.address) as publisher:
        publisher.create_topic(topic)
        taken = Counter()
        members = [Member(hub.address, topic, taken, total, "key_shared", window=500) for _ in range(3)]
        for member in members:
            member.start()
        keys_of = publish(publisher, topic, total, seed=39)
        for member in members:
            member.finish()
        check_keys(members, keys_of, total)
        assert set(taken.values()) == {1}, "each message acknowledged once"
        owners = defaultdict(set)
        for i, member in enumerate(members):
            for key in member.by_key():
                owners[key].add(i)
        assert all(len(held) == 1 for held in owners.values()), "every key on one member"
        assert all(member.got for member in members), "every member took keys"
        r = wait_until(lambda: (r := row(publisher, topic))["consumed_seq"] == total and r, "all consumed")
        assert (r["kind"], r["pending"], r["members"]) == ("key_shared", 0, 0)


def test_random_keys_reach_each_member_as_one_delivery_per_entry_not_one_per_run(hub):
    """Every message a different key than the one before: each member is sent its keys
    of an entry as one SUBSET_DELIVERY (a DELIVERY per run of its keys would be about
    two thirds of the entry's messages), decoded by the client, every key whole and in
    order on one member."""
    topic = "key-shared-random"
    total = 6_000
    with Client(hub.address) as publisher:
        publisher.create_topic(topic)
        before = publisher.stats()["delivered"]
        taken = Counter()
        members = [Member(hub.address, topic, taken, total, "key_shared", window=1000) for _ in range(3)]
        for member in members:
            member.start()
        rng = random.Random(7)
        keys_of = {}
        for _ in range(total // 500):  # (entries of 500 messages, no key twice in a row)
            keys = [f"key-{rng.randrange(KEYS)}" for _ in range(500)]
            seqs = publisher.publish_many(topic, [b"x"] * len(keys), keys=keys)
            keys_of.update(zip(seqs, (k.encode() for k in keys), strict=True))
        for member in members:
            member.finish()
        check_keys(members, keys_of, total)
        assert set(taken.values()) == {1}, "each message acknowledged once"
        after = publisher.stats()["delivered"]
        assert after["messages"] - before["messages"] == total
        frames = after["entries"] - before["entries"]
        assert frames < total // 20, f"{frames} deliveries for {total} messages in {total // 500} entries"


def test_a_member_killed_and_one_joining_mid_stream_keep_every_key_in_order(hub):
    topic = "key-shared-churn"
    total = 12_000
    with Client(hub.address) as publisher:
        publisher.create_topic(topic)
        taken = Counter()
        members = [Member(hub.address, topic, taken, total, "key_shared", window=300) for _ in range(2)]
        victim = start_victim(hub.address, topic, "key_shared", 300)
        try:
            wait_until(lambda: row(publisher, topic)["members"] == 3, "the victim attached")
            for member in members:
                member.start()
            keys_of = publish(publisher, topic, total // 2, seed=1)
            held = {int(victim.stdout.readline()) for _ in range(50)}  # it has messages in hand
            victim.kill()
            victim.wait()
            held |= {int(line) for line in victim.stdout.read().split()}
        finally:
            victim.kill()
            victim.stdout.close()
        joined = Member(hub.address, topic, taken, total, "key_shared", window=300)
        joined.start()
        members.append(joined)
        more = publish(publisher, topic, total // 2, seed=2)
        keys_of.update({seq: key for seq, key in more.items()})
        for member in members:
            member.finish()
        check_keys(members, keys_of, total)
        redelivered = {seq for m in members for _, seq, count in m.got if count > 1}
        assert held <= redelivered, "what the victim held went to the others again"
        assert joined.got, "the member that joined took keys"
