"""The blocking subscriber's acknowledgements: one CONSUME per `ack_every` seq-ids for a
subscriber keeping up with a stream (not one per delivery, each a send on the client
and a read on the hub), and the rest once the subscription has waited `ack_delay`."""

import threading

from hedwig.client import Client


def consumes_sent(client, each=None) -> list:
    """The seq-ids of the CONSUMEs `client` sends from now on (`each` called after each)."""
    return consumes_through(client._connections.known(client._routes.default), each)


def consumes_through(connection, each=None) -> list:
    """The seq-ids of the CONSUMEs sent through `connection` (a blocking client's
    connection, or another client's protocol: anything with `consume(handle, seq)`)."""
    sent = []
    consume = connection.consume

    def counted(handle, seq):
        consume(handle, seq)
        sent.append(seq)
        if each is not None:
            each()

    connection.consume = counted
    return sent


def test_a_subscriber_keeping_up_with_a_stream_sends_one_consume_per_ack_every(hub):
    with Client(hub.address, ack_every=10, ack_delay=30) as subscriber, Client(hub.address) as publisher:
        sub = subscriber.subscribe("kept-up", "s")
        sent = consumes_sent(subscriber)
        for seq in range(1, 26):
            # The hub sends the delivery before it answers the publish: the subscriber
            # finds it in its socket when it would otherwise wait (and, before, send its ack).
            assert publisher.publish("kept-up", b"%d" % seq) == seq
            message = sub.receive(timeout=30)
            assert message.seq == seq
            sub.ack(message)
        assert sent == [10, 20]
        # Waiting with nothing to come: the rest goes out (here at the receive's deadline,
        # sooner than ack_delay), before receive gives up.
        assert sub.receive(timeout=0.2) is None
        assert sent == [10, 20, 25]
        [state] = [s for s in subscriber.describe("kept-up")["subscribers"] if s["subscriber_id"] == "s"]
    assert state["consumed_seq"] == 25


def test_an_idle_subscribers_ack_goes_out_while_it_waits(hub):
    acked = threading.Event()
    with Client(hub.address, ack_every=100, ack_delay=0.05) as subscriber, Client(hub.address) as publisher:
        sub = subscriber.subscribe("idle-ack", "s")
        sent = consumes_sent(subscriber, each=acked.set)
        publisher.publish("idle-ack", b"one")
        sub.ack(sub.receive(timeout=30))
        assert sent == []  # (short of ack_every, and not waiting yet)
        # The next message is published only once the ack has gone out: the receive below
        # returns it only if the waiting subscription sent its ack meanwhile.
        later = threading.Thread(target=lambda: acked.wait(30) and publisher.publish("idle-ack", b"two"))
        later.start()
        message = sub.receive(timeout=30)
        later.join()
    assert message.payload == b"two" and sent == [1]
