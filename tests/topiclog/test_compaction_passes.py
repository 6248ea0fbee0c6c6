"""A key flood on a compacted topic (issue 41: a publish-only user sent 2.6M distinct
3-byte keys, in entries of up to 1.3M messages; the next compaction grew the hub by 595 MB
and stalled every other client for up to 2.2 s): the key map holds at most
`compaction_key_map_bytes` worth of keys, a span of more keys is compacted in several
passes that end where one big pass would, and a step of the compactor looks at a bounded
number of messages however large an entry is."""

import tracemalloc

from hedwig.config.settings import LogSettings
from hedwig.protocol.entry import decode_entry
from hedwig.protocol.messageset import encode_message_set
from hedwig.topiclog.compaction import _STEP_MESSAGES, KEY_COST_BYTES, LatestByKey


def test_a_key_costs_the_map_at_most_key_cost_bytes_and_the_map_takes_no_more_than_its_budget():
    """KEY_COST_BYTES is what the budget is divided by: measured here for the keys a map
    holds (3 bytes, 15 bytes as they are; longer ones by a 16-byte digest)."""
    count = 50_000
    for size in (3, 15, 40):
        policy = LatestByKey(span_last=10 * count, tombstone_cutoff_us=0, max_keys=count)
        keys = [i.to_bytes(8, "big").rjust(size, b"k") for i in range(count)]
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for seq, key in enumerate(keys, 1):
                assert policy.see(seq, key)
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert held <= count * KEY_COST_BYTES, f"{held / count:.0f} bytes a key of {size} bytes"
        # Full: a new key is refused (not mapped), a key it holds is still taken.
        assert not policy.see(count + 1, b"a new key") and policy.full
        assert policy.see(count + 2, keys[0])
        assert len(policy.latest) == count


def flood(stack, topic_log, keys: int, per_entry: int):
    """Distinct 3-byte keys, `per_entry` messages an entry (as a flooder batches them)."""
    for start in range(0, keys, per_entry):
        names = [i.to_bytes(3, "big") for i in range(start, min(keys, start + per_entry))]
        settle_long(stack, topic_log.append(encode_message_set([b"v"] * len(names), None, names), len(names)))


def settle_long(stack, d, limit: int = 100_000):
    out = []
    d.addBoth(out.append)
    for _ in range(limit):
        if out:
            break
        stack.clock.advance(0.01)
    assert out, f"{d!r} has not fired"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def test_a_key_flood_is_compacted_in_passes_with_a_bounded_map_and_bounded_steps(make_stack):
    budget_keys = 5_000
    stack = make_stack(
        LogSettings(
            max_ledger_entries=2,
            tombstone_retention_s=3600,
            compaction_key_map_bytes=budget_keys * KEY_COST_BYTES,
        )
    )
    manager = stack.manager()
    manager.new_topic_options["t"] = {"compaction": True}
    topic_log = settle_long(stack, manager.open("t"))
    flood(stack, topic_log, keys=60_000, per_entry=20_000)  # 3 entries of 20,000 messages
    # Then ordinary traffic: one key set again, one deleted (a tombstone), one new.
    again = encode_message_set(
        [b"again", b"", b"new"], None, [(7).to_bytes(3, "big"), (8).to_bytes(3, "big"), b"n"]
    )
    settle_long(stack, topic_log.append(again, 3))
    compactor = topic_log._compactor
    report = settle_long(stack, topic_log.compact(0, explicit=True))
    assert report["span"] == [1, 60_003]
    # Several passes, the map never above its budget, no step above its bound although an
    # entry holds 20,000 messages.
    assert report["passes"] == compactor.passes >= 60_003 // budget_keys
    assert 0 < compactor.largest_map <= budget_keys
    assert 0 < compactor.largest_step <= _STEP_MESSAGES
    # The same table as one big pass: every key's latest, key 7 at its new value, key 8 gone
    # but for its (young) tombstone.
    kept = {}
    for entry in settle_long(stack, topic_log.read(1, 100_000, 1 << 30)):
        for message in decode_entry("t", entry.data):
            kept[bytes(message.key)] = (message.seq, bytes(message.payload))
    assert len(kept) == 60_001
    assert kept[(7).to_bytes(3, "big")] == (60_001, b"again")
    assert kept[(8).to_bytes(3, "big")] == (60_002, b"")
    assert kept[b"n"] == (60_003, b"new")
    assert kept[(9).to_bytes(3, "big")] == (10, b"v")
    assert report["kept"] == 60_001 and report["messages"] == 60_003
    # Compacting again, nothing new: nothing to do, and the reply says why.
    again = settle_long(stack, topic_log.compact(0, explicit=True))
    assert again["span"] is None and "compacted already" in again["why"]
