"""Where a SUBSCRIBE may start, against a real hub process: at most the topic's last
seq-id + 1 (past it, any u64 included, is refused with SEQ_OUT_OF_RANGE naming the last
seq-id, and creates or moves nothing); before the first retained seq-id, at the first
retained one. The CLI's `hedwig subscribe --from N` goes the same way."""

import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.client import Client, SeqOutOfRange
from hedwig.protocol import Op, Status, encode_frame
from hedwig.protocol.requests import encode_hello, encode_subscribe
from hedwig.testing.hubprocess import HubProcess, hub_environment
from hedwig.testing.polling import wait_until
from tests.hub.rawpeer import RawPeer
from tests.receiving import receive_all

ROOT = Path(__file__).resolve().parents[2]


class Peer(RawPeer):
    """A connection speaking frames by hand: the client library cannot send a u64 start."""

    def __init__(self, address):
        super().__init__(address)
        self.request_id = 0
        assert self.request(Op.HELLO, encode_hello("bounds")).status is Status.SUCCESS

    def request(self, op, body):
        self.request_id += 1
        self.send(encode_frame(op, self.request_id, body))
        request_id, response = self.response()
        assert request_id == self.request_id
        return response

    def subscribe(self, topic, subscriber_id, start, mode="create_or_attach"):
        return self.request(Op.SUBSCRIBE, encode_subscribe(topic, subscriber_id, mode, start))


def test_a_start_past_the_end_is_refused_with_the_last_seq_id(hub):
    with Client(hub.address) as client:
        assert client.publish_many("bounded", [b"a", b"b", b"c"]) == [1, 2, 3]
        peer = Peer(hub.address)
        try:
            for start in (5, 100, 2**63 - 1, 2**63, 2**64 - 1):
                response = peer.subscribe("bounded", f"far-{start}", ("seq", start))
                assert response.status is Status.SEQ_OUT_OF_RANGE, (start, response)
                assert "last seq-id is 3" in response.message and str(start) in response.message
                # nothing was created: attaching finds no subscription
                attach = peer.subscribe("bounded", f"far-{start}", None, mode="attach")
                assert attach.status is Status.CLIENT_NOT_SUBSCRIBED
            # last + 1 is the next publish: allowed, and delivered
            at_end = peer.subscribe("bounded", "next", ("seq", 4))
            assert at_end.status is Status.SUCCESS and at_end.value.next_seq == 4
        finally:
            peer.close()
        with pytest.raises(SeqOutOfRange, match=r"SEQ_OUT_OF_RANGE: .*last seq-id is 3"):
            client.subscribe("bounded", "typed", start=50)
        subscription = client.subscribe("bounded", "typed", start=4)
        assert client.publish("bounded", b"d") == 4
        assert [m.seq for m in receive_all(subscription, 1, ack=False)] == [4]
        subscription.close()
    assert "Traceback" not in hub.output() and "UNEXPECTED_CONDITION" not in hub.output()


def test_moving_an_existing_subscription_past_the_end_is_refused_and_keeps_its_place(hub):
    with Client(hub.address) as client:
        client.publish_many("moved", [b"a", b"b"])
        subscription = client.subscribe("moved", "mover", start="earliest")
        assert [m.seq for m in receive_all(subscription, 2)] == [1, 2]
        subscription.close()
        peer = Peer(hub.address)
        try:
            response = peer.subscribe("moved", "mover", ("seq", 2**64 - 1))
            assert response.status is Status.SEQ_OUT_OF_RANGE and "last seq-id is 2" in response.message
        finally:
            peer.close()
        again = client.subscribe("moved", "mover")
        client.publish("moved", b"c")
        assert [m.seq for m in receive_all(again, 1, ack=False)] == [3]
        again.close()


def test_the_cli_prints_the_refusal_in_one_line(hub):
    with Client(hub.address) as client:
        client.publish_many("cli-bounds", [b"a", b"b"])
    result = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hub.address, "subscribe", "cli-bounds", "s", "--from", "9"],
        capture_output=True,
        timeout=60,
        env=hub_environment(),
        cwd=ROOT,
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert len(err.strip().splitlines()) == 1, err
    assert "SEQ_OUT_OF_RANGE" in err and "last seq-id is 2" in err, err


def test_a_start_before_the_first_retained_begins_at_it(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[log]\nmax_ledger_entries = 1\ngc_interval_s = 0.05\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf)) as process, Client(process.address) as client:
        reader = client.subscribe("collected", "reader", start="earliest")
        assert client.publish_many("collected", [b"1"]) == [1]
        for payload in (b"2", b"3", b"4"):
            client.publish("collected", payload)
        assert [m.seq for m in receive_all(reader, 4)] == [1, 2, 3, 4]
        reader.close()  # its consume pointer (4) is flushed: GC may delete ledgers 1..3
        wait_until(lambda: client.describe("collected")["first_seq"] > 1, "garbage collection")
        first = client.describe("collected")["first_seq"]
        late = client.subscribe("collected", "late", start=1)
        assert [m.seq for m in receive_all(late, 4 - first + 1, ack=False)] == list(range(first, 5))
        late.close()
