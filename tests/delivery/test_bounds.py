"""Message bounds (Hedwig's messageBound): a subscription with message_bound=N never
holds more than N unconsumed messages; the oldest are skipped for it (counted), and its
consumed seq-id moves with them, so pruning and garbage collection go on."""

from tests.delivery.harness import Harness
from tests.delivery.shared_harness import SharedHarness


def row(h, sid):
    return next(r for r in h.manager.describe("t") if r["subscriber_id"] == sid)


def test_a_stalled_exclusive_subscriber_never_holds_more_than_its_bound(tmp_path):
    h = Harness(tmp_path, consume_interval=1, consume_write_gap_ms=0)
    stalled = h.channel(high_water=1)  # its transport fills at once: it reads nothing more
    h.subscribe("slow", stalled, message_bound=1000)
    h.subscribe("fast", h.channel(), handle=2)
    h.turn()
    for _ in range(50):
        h.publish(count=100)
        h.manager.consume("t", "fast", h.log.last_seq)
        r = row(h, "slow")
        assert r["backlog"] <= 1000
    r = row(h, "slow")
    assert (r["backlog"], r["consumed_seq"], r["skipped_by_bound"]) == (1000, 4000, 4000)
    assert h.manager.min_consumed("t") == 4000, "garbage collection may go past the skipped"
    assert h.cache.stats()["entries"] <= 11, "the cache let the skipped entries go"
    assert h.record("slow").consumed_seq == 4000
    assert h.manager.stats()["skipped_by_bound"] == 4000


def test_a_bounded_cursor_jumps_past_what_was_skipped(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel(high_water=100)
    h.subscribe("s", channel, message_bound=250)
    h.turn()
    for _ in range(10):
        h.publish(count=100)
    h.turn()
    assert channel.last_seq(1) == 100, "paused after its first entry"
    channel.deliveries.clear()
    channel.next_seq.clear()
    channel.drain()
    h.turn()
    firsts = [first for _, first, _, _ in channel.deliveries]
    assert firsts[0] == 751, "resumes at the oldest message the bound keeps"


def test_a_bound_set_on_an_existing_subscription_applies_at_once(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(30, count=10)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest")
    h.manager.close_subscription("t", "s")
    h.subscribe("s", channel, message_bound=50)
    assert row(h, "s")["consumed_seq"] == 250


def test_a_shared_subscription_skips_what_is_held_and_owed_below_the_bound(tmp_path):
    h = SharedHarness(tmp_path)
    a = h.member_channel()
    h.join("w", a, window=20, message_bound=100)
    h.turn()
    for _ in range(30):
        h.publish(10)
    r = row(h, "w")
    assert (r["backlog"], r["consumed_seq"], r["skipped_by_bound"]) == (100, 200, 200)
    held = a.seqs()[-20:]
    assert r["pending"] == 20 and min(held) > 200, "what it held below the bound was dropped for newer"
    assert h.manager.acknowledge("t", "w", a, [(1, 200)]) == 0, "acks of skipped messages count for nothing"
    assert h.manager.acknowledge("t", "w", a, [(held[0], held[-1])]) == 20
