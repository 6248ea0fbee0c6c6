"""SubscriptionPosition: resuming after a reconnect without gap or duplicate; ack batching."""

from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.requests import Subscribe, Subscribed
from hedwig.protocol.work_requests import SubscribeOptions


def entry(first_seq, count):
    payloads = [str(first_seq + i).encode() for i in range(count)]
    return encode_entry_header(first_seq, count, 0, b"", first_seq) + encode_message_set(payloads)


def seqs(messages):
    return [m.seq for m in messages]


def position(**kwargs):
    args = dict(
        topic="t",
        subscriber_id="s",
        mode="create_or_attach",
        start="earliest",
        window=0,
        force_attach=False,
        ack_every=10,
    )
    args.update(kwargs)
    return SubscriptionPosition(**args)


def test_first_subscribe_is_sent_as_asked():
    p = position(
        mode="create",
        start=("seq", 5),
        window=7,
        force_attach=True,
        options=SubscribeOptions(message_bound=9),
    )
    assert p.subscribe_request() == Subscribe(
        topic="t",
        subscriber_id="s",
        mode="create",
        start=("seq", 5),
        window=7,
        force_attach=True,
        deliver=True,
        message_bound=9,
    )


def test_resubscribe_attaches_from_the_first_unacknowledged_seq():
    p = position(mode="create")
    p.on_subscribed(Subscribed(1, 0, 1))
    assert seqs(p.messages(0, 5, entry(1, 5))) == [1, 2, 3, 4, 5]
    p.ack(3)
    args = p.subscribe_request()._asdict()
    assert (args["mode"], args["start"]) == ("attach", ("seq", 4))


def test_redelivered_messages_already_held_are_dropped():
    p = position()
    p.on_subscribed(Subscribed(1, 0, 1))
    assert seqs(p.messages(0, 5, entry(1, 5))) == [1, 2, 3, 4, 5]
    p.ack(2)
    p.on_subscribed(Subscribed(9, 2, 3))  # the hub resends from 3: 3..5 are held already
    assert seqs(p.messages(0, 5, entry(1, 5))) == []
    assert seqs(p.messages(0, 4, entry(3, 4))) == [6]
    assert seqs(p.messages(0, 2, entry(7, 2))) == [7, 8]


def test_a_delivery_starting_inside_an_entry_keeps_its_start():
    p = position()
    p.on_subscribed(Subscribed(1, 4, 5))
    assert seqs(p.messages(4, 10, entry(1, 10))) == [5, 6, 7, 8, 9, 10]


def test_acks_go_out_every_ack_every_and_on_flush():
    p = position(ack_every=10)
    p.on_subscribed(Subscribed(1, 0, 1))
    assert [p.ack(s) for s in range(1, 10)] == [None] * 9
    assert p.ack(10) == 10
    assert p.ack(10) is None  # not again
    assert p.ack(5) is None  # cumulative: going back is nothing
    p.ack(13)
    assert p.unsent_ack() == 13
    assert p.unsent_ack() is None


def test_a_window_acks_before_it_closes():
    p = position(window=8, ack_every=100)
    assert p.ack_every == 4


def test_after_a_reconnect_a_lagging_hub_pointer_is_sent_again():
    p = position()
    p.on_subscribed(Subscribed(1, 0, 1))
    p.messages(0, 20, entry(1, 20))
    assert p.ack(20) == 20
    p.on_subscribed(Subscribed(2, 10, 11))  # the hub persisted only up to 10
    assert p.unsent_ack() == 20


def test_an_acknowledgement_only_position_sends_each_ack_and_reattaches_where_the_hub_is():
    p = position(mode="create", start="earliest", window=500, ack_every=100, deliver=False)
    first = p.subscribe_request()._asdict()
    assert (first["mode"], first["start"], first["window"], first["deliver"]) == (
        "create",
        "earliest",
        None,
        False,
    )
    p.on_subscribed(Subscribed(1, 0, 1))
    assert p.ack(40) == 40, "at once, not every ack_every"
    assert p.ack(40) is None and p.ack(12) is None
    # After a reconnect: attach (never create again, never from a start that would move
    # the pointer), and send the acknowledgement the hub has not persisted.
    again = p.subscribe_request()._asdict()
    assert (again["mode"], again["start"], again["force_attach"], again["deliver"]) == (
        "attach",
        None,
        False,
        False,
    )
    p.on_subscribed(Subscribed(2, 30, 31))
    assert p.unsent_ack() == 40
    assert p.unsent_ack() is None


def test_an_ack_that_could_not_be_sent_is_due_again():
    p = position(ack_every=1)
    p.on_subscribed(Subscribed(1, 0, 1))
    assert p.ack(7) == 7
    p.not_sent(7)
    assert p.unsent_ack() == 7


def test_a_plain_delivery_is_handed_over_once_as_any_other():
    """The plain-entry path of messages() (decode_plain_entry) keeps the rule of the
    general one: seq-ids at or below received_through are not handed over again."""
    from hedwig.protocol import encode_entry_header, encode_message_set

    subscription = position()
    subscription.received_through = 4

    def entry(seq, payloads):
        header = encode_entry_header(seq, len(payloads), 1_700_000_000_000_000, b"eu", seq)
        return header + encode_message_set(payloads)

    assert subscription.messages(0, 1, entry(4, [b"old"])) == []
    [fifth] = subscription.messages(0, 1, entry(5, [b"five"]))
    assert (fifth.seq, fifth.payload, fifth.origin_region) == (5, b"five", "eu")
    assert subscription.received_through == 5
    assert subscription.messages(0, 1, entry(5, [b"five"])) == []
    assert [m.seq for m in subscription.messages(0, 2, entry(5, [b"five", b"six"]))] == [6]
    assert subscription.received_through == 6
    assert [m.seq for m in subscription.messages(1, 3, entry(5, [b"5", b"6", b"7", b"8"]))] == [7]
    assert subscription.received_through == 7
    assert subscription.messages(0, 2, entry(6, [b"6", b"7", b"8"])) == []
    assert subscription.received_through == 7
