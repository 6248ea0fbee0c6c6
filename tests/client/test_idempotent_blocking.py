"""The blocking client's idempotent publishing against a real hub process killed with
SIGKILL and started again on the same data directory and port while a thread publishes:
each publish returns once its set is stored, exactly once, in publish order."""

import threading

from hedwig.client import Client

KILLS = 5
SETS_PER_KILL = 4
MESSAGES_PER_SET = 50


def test_publishes_through_sigkills_are_stored_once_in_order(own_hub):
    own_hub.start()
    total_sets = KILLS * SETS_PER_KILL + SETS_PER_KILL
    published = [[b"s%d-m%d" % (s, m) for m in range(MESSAGES_PER_SET)] for s in range(total_sets)]
    answered = []  # seq-ids of each set, in order
    progress = threading.Condition()
    errors = []

    def publish_all(client):
        try:
            for payloads in published:
                seqs = client.publish_many("blocking-kills", payloads)
                with progress:
                    answered.append(seqs)
                    progress.notify_all()
        except Exception as e:  # (the test fails below, saying what)
            errors.append(e)
            with progress:
                progress.notify_all()

    with Client(own_hub.address, idempotent=True, reconnect_timeout=30) as client:
        publisher = threading.Thread(target=publish_all, args=(client,))
        publisher.start()
        for kill in range(1, KILLS + 1):
            with progress:
                assert progress.wait_for(lambda k=kill: len(answered) >= k * SETS_PER_KILL or errors, 60)
            assert not errors, errors
            own_hub.kill()
            own_hub.restart()
        publisher.join(120)
        assert not publisher.is_alive() and not errors, errors
        stored = client.read("blocking-kills")
    assert [seq for seqs in answered for seq in seqs] == list(range(1, total_sets * MESSAGES_PER_SET + 1))
    assert [m.payload for m in stored] == [p for payloads in published for p in payloads]
