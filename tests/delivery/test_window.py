"""Windows: at most W delivered-but-unconsumed messages; consumes reopen the window."""

from tests.delivery.harness import Harness


def delivered(channel):
    return [(first, last) for _, first, last, _ in channel.deliveries]


def test_exactly_w_messages_before_a_consume_then_the_rest_as_consumes_come(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    h.subscribe("s", channel, window=5)
    h.turn()
    for _ in range(4):
        h.publish(count=3)  # 1..3, 4..6, 7..9, 10..12
    assert channel.messages() == 5
    assert delivered(channel) == [(1, 3), (4, 5)], "the window cuts an entry, it does not skip it"
    h.manager.consume("t", "s", 2)
    assert channel.messages() == 7
    assert delivered(channel)[-2:] == [(6, 6), (7, 7)]
    h.manager.consume("t", "s", 2)  # repeated: nothing moves
    assert channel.messages() == 7
    h.manager.consume("t", "s", 7)
    assert channel.messages() == 12
    assert delivered(channel)[-2:] == [(8, 9), (10, 12)]
    h.manager.consume("t", "s", 12)
    h.publish(count=10)
    assert channel.messages() == 17
    assert h.manager.describe("t")[0]["state"] == "window_full"


def test_the_hub_default_window_applies_when_the_subscriber_names_none(tmp_path):
    h = Harness(tmp_path, default_window=4)
    channel = h.channel()
    h.subscribe("s", channel)
    h.turn()
    h.publish(count=10)
    assert channel.messages() == 4


def test_window_zero_is_unlimited(tmp_path):
    h = Harness(tmp_path, default_window=4)
    channel = h.channel()
    h.subscribe("s", channel, window=0)
    h.turn()
    for _ in range(5):
        h.publish(count=10)
    assert channel.messages() == 50


def test_the_window_preference_is_kept_with_the_subscription(tmp_path):
    h = Harness(tmp_path)
    h.clock.advance(12.5)
    h.subscribe("s", h.channel(), window=3)
    h.manager.close_subscription("t", "s")
    # With when it began, which regions relay from (hedwig/region/manager.py).
    assert h.record("s").preferences == {"window": 3, "created_us": 12_500_000}
    channel = h.channel()
    h.subscribe("s", channel, mode="attach")
    h.turn()
    h.publish(count=10)
    assert channel.messages() == 3


def test_a_window_over_a_ledger_backlog(tmp_path):
    h = Harness(tmp_path)
    h.log.backlog(100, count=7)
    channel = h.channel()
    h.subscribe("s", channel, start="earliest", window=50)
    h.turn()
    consumed = 0
    while consumed < 700:
        assert channel.messages() - consumed == min(50, 700 - consumed)
        consumed = channel.last_seq(1)
        h.manager.consume("t", "s", consumed)
    assert channel.messages() == 700


def test_a_channel_that_consumes_inside_deliver_gets_no_duplicate(tmp_path):
    h = Harness(tmp_path)
    channel = h.channel()
    record = channel.deliver

    def deliver_and_consume(handle, entry, start, stop):
        record(handle, entry, start, stop)  # asserts no gap and no duplicate
        h.manager.consume("t", "s", entry.first_seq + stop - 1)

    channel.deliver = deliver_and_consume
    h.subscribe("s", channel, window=4)
    h.turn()
    for _ in range(5):
        h.publish(count=3)
    assert channel.messages() == 15
