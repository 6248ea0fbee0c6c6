"""The charts' samples on a task.Clock: rates between samples, a bounded ring, topic rates."""

from hedwig.observe.history import History
from hedwig.observe.view import HubView
from tests.hub.harness import HubHarness


def history_of(harness, interval_s=2.0, keep_s=10.0):
    view = HubView(harness.hub, harness.ledgers, harness.parts.gc)
    return History(view, harness.clock, interval_s, keep_s)


def test_samples_carry_rates_since_the_sample_before(tmp_path):
    harness = HubHarness(tmp_path)
    history = history_of(harness)
    peer = harness.connect()
    peer.publish("orders", [b"m"])  # (a topic has a rate from the second sample it is in)
    harness.clock.advance(0)
    history.startService()  # the first sample now: no rate yet
    peer.publish("orders", [b"m"] * 100)
    harness.clock.advance(2.0)
    [sample] = history.samples
    assert sample["publish_rate"] == 50.0
    assert history.topic_rates == {"orders": 50.0}
    harness.clock.advance(2.0)
    assert history.samples[-1]["publish_rate"] == 0.0
    history.stopService()


def test_the_ring_keeps_only_the_last_minutes(tmp_path):
    harness = HubHarness(tmp_path)
    history = history_of(harness, interval_s=1.0, keep_s=5.0)
    history.startService()
    harness.clock.pump([1.0] * 50)
    assert len(history.samples) == 6
    assert history.samples[-1]["t"] - history.samples[0]["t"] == 5.0
    history.stopService()
    harness.clock.advance(10)
    assert len(history.samples) == 6 and not harness.clock.getDelayedCalls()


def test_backlog_is_summed_over_subscriptions(tmp_path):
    from hedwig.protocol import Op
    from hedwig.protocol.requests import encode_subscribe

    harness = HubHarness(tmp_path)
    history = history_of(harness)
    subscriber = harness.connect()
    subscriber.send(Op.SUBSCRIBE, encode_subscribe("news", "a", window=1))
    subscriber.send(Op.SUBSCRIBE, encode_subscribe("news", "b", window=1))
    harness.clock.advance(0)
    harness.connect().publish("news", [b"x"] * 7)
    harness.clock.advance(0)
    history.startService()
    harness.clock.advance(2.0)
    assert history.samples[-1]["backlog"] == 14
    history.stopService()
