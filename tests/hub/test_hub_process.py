"""Real hubs in their own processes on 127.0.0.1, driven by the real client and by raw
sockets: order and content from every start point, many subscriptions on one connection,
bad input over TCP, graceful restarts and SIGKILL while publishers run."""

import datetime
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hedwig.client import Client
from hedwig.client.errors import HedwigError, InvalidTopic
from hedwig.protocol import (
    Op,
    Status,
    decode_entry,
    encode_frame,
    encode_message_set,
    parse_delivery,
)
from hedwig.protocol.requests import encode_hello, encode_publish, encode_subscribe
from hedwig.testing.hubprocess import HubProcess
from tests.hub.rawpeer import RawPeer
from tests.hubprocess import make_run_command
from tests.receiving import receive_all

ROOT = Path(__file__).resolve().parents[2]


# -- publish then subscribe -----------------------------------------------------------------


def test_publish_then_subscribe_from_each_start_point(hub):
    with Client(hub.address) as client:
        first = client.publish_many("starts", [b"a", b"b", b"c"])
        client.publish("starts", b"d", {"k": b"v"})
        boundary = datetime.datetime.now(datetime.UTC)
        later = client.publish_many("starts", [b"e", b"f"])
        assert first == [1, 2, 3] and later == [5, 6]
        cases = {
            "earliest": (1, b"abcdef"),
            2: (2, b"bcdef"),
            boundary: (5, b"ef"),
        }
        for n, (start, (first_seq, payloads)) in enumerate(cases.items()):
            subscription = client.subscribe("starts", f"reader-{n}", start=start)
            messages = receive_all(subscription, len(payloads), ack=False)
            assert [m.seq for m in messages] == list(range(first_seq, 7))
            assert b"".join(m.payload for m in messages) == payloads
            assert all(m.topic == "starts" and m.origin_region == "standalone" for m in messages)
            subscription.close()
        assert client.read("starts", 4, 4)[0].properties == {"k": b"v"}
        for n, start in enumerate(["latest", None]):  # only what is published afterwards
            subscription = client.subscribe("starts", f"tail-{n}", start=start)
            seq = client.publish("starts", b"new-%d" % n)
            [message] = receive_all(subscription, 1, ack=False)
            assert (message.seq, message.payload) == (seq, b"new-%d" % n)
            subscription.close()


def test_a_hundred_subscriptions_over_one_connection(hub):
    with Client(hub.address) as client, Client(hub.address) as publisher:
        subscriptions = [client.subscribe(f"many-{i % 10}", f"sub-{i}") for i in range(100)]
        assert len(client._connections.addresses()) == 1
        for t in range(10):
            publisher.publish_many(f"many-{t}", [b"%d-%d" % (t, i) for i in range(50)])
        for i, subscription in enumerate(subscriptions):
            messages = receive_all(subscription, 50, ack=False)
            assert [m.payload for m in messages] == [b"%d-%d" % (i % 10, k) for k in range(50)]
        assert client.stats()["connections"]["open"] >= 2


# -- bad input over real sockets ----------------------------------------------------------------


def test_framing_errors_close_only_that_connection(hub):
    with Client(hub.address) as client:
        client.publish("raw", b"before")
        for garbage, status in [
            (b"\x00\x00\x00\x01x", Status.MALFORMED_REQUEST),
            (b"\xff\xff\xff\xff", Status.FRAME_TOO_LARGE),
            (encode_frame(Op.PUBLISH, 1, encode_publish("raw", encode_message_set([b"no hello"]))), None),
            (encode_frame(Op.HELLO, 1, encode_hello("future", version=99)), Status.UNSUPPORTED_VERSION),
        ]:
            peer = RawPeer(hub.address)
            peer.send(garbage)
            _request_id, response = peer.response()
            assert response.status is (status or Status.MALFORMED_REQUEST)
            assert peer.closed_by_hub()
            peer.close()
            assert client.publish("raw", b"still serving") > 1  # the other connection goes on
        assert [m.payload for m in client.read("raw")] == [b"before"] + [b"still serving"] * 4


def test_per_request_errors_keep_the_connection(hub):
    peer = RawPeer(hub.address)
    peer.send(encode_frame(Op.HELLO, 1, encode_hello("raw")))
    assert peer.response()[1].status is Status.SUCCESS
    peer.send(encode_frame(77, 2, b""))
    peer.send(encode_frame(Op.PUBLISH, 3, encode_publish("bad topic", encode_message_set([b"x"]))))
    peer.send(
        encode_frame(Op.PUBLISH, 4, encode_publish("perreq", encode_message_set([b"x" * ((1 << 20) + 1)])))
    )
    peer.send(encode_frame(Op.CONSUME, 5, b"\x00\x00\x00\x09" + bytes(8)))
    peer.send(encode_frame(Op.PUBLISH, 6, encode_publish("perreq", encode_message_set([b"ok"]))))
    answers = [peer.response() for _ in range(5)]
    assert [(request_id, r.status) for request_id, r in answers] == [
        (2, Status.UNKNOWN_OPERATION),
        (3, Status.INVALID_TOPIC),
        (4, Status.MESSAGE_TOO_LARGE),
        (5, Status.CLIENT_NOT_SUBSCRIBED),
        (6, Status.SUCCESS),
    ]
    assert answers[-1][1].value.first_seq == 1  # nothing refused used a seq-id
    peer.close()


def test_a_client_that_disconnects_mid_frame(hub):
    peer = RawPeer(hub.address)
    peer.send(encode_frame(Op.HELLO, 1, encode_hello("raw")))
    peer.response()
    frame = encode_frame(Op.PUBLISH, 2, encode_publish("midframe", encode_message_set([b"half" * 100])))
    peer.send(frame[: len(frame) // 2])
    peer.close()
    with Client(hub.address) as client:
        assert client.publish("midframe", b"whole") == 1
        assert [m.payload for m in client.read("midframe")] == [b"whole"]
        with pytest.raises(InvalidTopic):
            client.publish("no/slashes", b"x")


# -- restarts and crashes ----------------------------------------------------------------------


def test_graceful_restart_keeps_messages_and_consume_pointers(tmp_path):
    # Consume pointers are persisted only on close, disconnect or shutdown here, so the
    # pointer that survives is the one the graceful shutdown flushed.
    conf = tmp_path / "hub.conf"
    conf.write_text("[delivery]\nconsume_interval = 1000000\nconsume_flush_ms = 3600000\n")
    own_hub = HubProcess(tmp_path / "data", 0, "--conf", str(conf)).start()
    try:
        with Client(own_hub.address, ack_every=1) as client:
            client.publish_many("durable", [b"m%d" % i for i in range(1, 11)])
            subscription = client.subscribe("durable", "s", start="earliest")
            messages = receive_all(subscription, 6, ack=False)
            subscription.ack(messages[-1])  # CONSUME 6, still attached
            # a reply on the same connection: the hub has taken the CONSUME before it
            assert client.describe("durable")["subscribers"][0]["consumed_seq"] == 6
            assert own_hub.stop() == 0
        assert any("stopped" in line for line in own_hub.log)
        own_hub.restart()
        with Client(own_hub.address) as client:
            assert [m.seq for m in client.read("durable")] == list(range(1, 11))
            assert client.describe("durable")["subscribers"][0]["consumed_seq"] == 6
            subscription = client.subscribe("durable", "s", mode="attach")
            messages = receive_all(subscription, 4, ack=False)
            assert [m.payload for m in messages] == [b"m%d" % i for i in range(7, 11)]
            assert client.publish("durable", b"after") == 11
    finally:
        own_hub.stop()


def test_sigkill_while_publishing_loses_no_acknowledged_publish(own_hub):
    own_hub.start()
    acknowledged = {}  # seq -> payload, as the hub acknowledged them
    lock = threading.Lock()
    enough = threading.Event()

    def publisher(name):
        with Client(own_hub.address, reconnect_timeout=1) as client:
            n = 0
            while True:
                payloads = [b"%s-%d" % (name, n + i) for i in range(5)]
                try:
                    seqs = client.publish_many("crash", payloads)
                except HedwigError:
                    return  # the hub is gone: unacknowledged publishes may or may not be there
                with lock:
                    acknowledged.update(zip(seqs, payloads, strict=True))
                    if len(acknowledged) >= 3000:
                        enough.set()
                n += 5

    threads = [threading.Thread(target=publisher, args=(b"p%d" % i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    assert enough.wait(60)
    own_hub.kill()
    for thread in threads:
        thread.join(30)
    own_hub.restart()
    with Client(own_hub.address) as client:
        stored = client.read("crash")
        seqs = [m.seq for m in stored]
        assert seqs == list(range(1, len(stored) + 1))  # in order, no gaps
        by_seq = {m.seq: m.payload for m in stored}
        missing = [seq for seq, payload in acknowledged.items() if by_seq.get(seq) != payload]
        assert missing == []
        # each publisher's messages are stored in the order it sent them
        for name in (b"p0", b"p1", b"p2"):
            mine = [int(p.split(b"-")[1]) for p in by_seq.values() if p.startswith(name + b"-")]
            assert mine == sorted(mine)
        assert client.publish("crash", b"after the crash") == len(stored) + 1


def test_a_graceful_restart_recovers_nothing_and_a_crash_says_what_it_recovered(tmp_path):
    """After SIGTERM the open ledgers are closed: reopening them is not a recovery, and
    the log does not call it one; after SIGKILL it is, and says so."""
    process = HubProcess(tmp_path / "d")
    with process:
        with Client(process.address) as client:
            client.publish_many("restarted", [b"a", b"b"])
        assert process.stop(signal.SIGTERM) == 0
        process.restart()
        with Client(process.address) as client:
            assert client.publish("restarted", b"c") == 3  # (the topic opened again)
        assert process.stop(signal.SIGTERM) == 0  # (its whole log read: what it said of the topic)
        assert "topic restarted" not in process.output() and "recovered" not in process.output()
        process.restart()
        with Client(process.address) as client:
            client.publish("restarted", b"c2")
        process.kill()
        process.restart()
        with Client(process.address) as client:
            assert client.publish("restarted", b"d") == 5
        assert process.wait_for_log("topic restarted: recovered ledger")


# -- the README's command -------------------------------------------------------------------------


def test_make_run_starts_a_hub_that_serves_and_stops_on_ctrl_c(tmp_path):
    command = make_run_command()
    assert command[:2] == [".venv/bin/hedwig", "hub"], command
    # The command make runs, on a free port and a scratch directory (later options win).
    with HubProcess(tmp_path / "data", launcher=command, host=None, cwd=ROOT, kafka=True) as process:
        cli = [sys.executable, "-m", "hedwig", "--hub", process.address]
        published = subprocess.run(
            [*cli, "publish", "readme", "hello"], capture_output=True, text=True, timeout=30
        )
        assert published.returncode == 0, published.stderr
        read = subprocess.run(
            [*cli, "subscribe", "readme", "me", "--from", "earliest", "--count", "1"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert read.stdout.strip() == "hello", read.stderr
        # It serves Kafka clients too (on 9092; here on a free port, given after make's).
        assert "--kafka-port" in command
        kcat = subprocess.run(
            ["kcat", "-b", f"127.0.0.1:{process.kafka_port}", "-t", "readme", "-C", "-o", "beginning", "-e"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert kcat.stdout.strip() == "hello", kcat.stderr
        assert process.stop(signal.SIGINT) == 0
        assert "stopped" in process.output()


def test_twistd_plugin_runs_and_stops_a_hub(tmp_path):
    twistd = [str(Path(sys.executable).parent / "twistd"), "-n", "hedwig"]
    with HubProcess(tmp_path / "d", launcher=twistd, cwd=tmp_path, log_on_stdout=True) as process:
        with Client(process.address) as client:
            assert client.publish("twistd", b"x") == 1
        # twistd ends by re-raising the signal that stopped it, after the graceful shutdown
        assert process.stop() in (0, -signal.SIGTERM)
        assert "stopped" in process.output()


def test_the_readme_python_examples_run(hub, capsys):
    readme = (ROOT / "README.md").read_text()
    [example, keys_and_filters, work_queue] = re.findall(r"```python\n(.*?)```", readme, re.S)
    exec(compile(example.replace("127.0.0.1:4080", hub.address), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["1", "b'one'"], ["2", "b'two'"], ["3", "b'three'"]]
    exec(compile(keys_and_filters.replace("127.0.0.1:4080", hub.address), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["4 b'user-7' {'color': 'red', 'n': 150, 'price': 9.5}"]
    exec(compile(work_queue.replace("127.0.0.1:4080", hub.address), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["1 b'resize a.jpg' 1", "2 b'resize b.jpg' 1"]


def test_a_subscriber_that_stops_reading_is_paused_then_catches_up(hub):
    peer = RawPeer(hub.address)
    peer.send(encode_frame(Op.HELLO, 1, encode_hello("slow reader")))
    assert peer.response()[1].status is Status.SUCCESS
    peer.send(encode_frame(Op.SUBSCRIBE, 2, encode_subscribe("flood", "slow", window=0)))
    handle = peer.response()[1].value.handle
    chunk = [bytes([i]) * 100_000 for i in range(10)]
    with Client(hub.address) as publisher:
        for _ in range(30):  # 30 MB: far more than the socket buffers hold
            publisher.publish_many("flood", chunk)
        deadline = time.monotonic() + 30
        while publisher.stats()["delivery"]["paused_channels"] != 1:
            assert time.monotonic() < deadline, "the hub never paused the full connection"
    received = 0
    while received < 300:
        if not peer.frames:
            data = peer.sock.recv(1 << 20)
            assert data
            peer.frames += peer.decoder.feed(data)
            continue
        op, _request_id, body = peer.frames.pop(0)
        assert op == Op.DELIVERY
        got_handle, start, stop, entry = parse_delivery(body)
        messages = decode_entry("flood", bytes(entry), start, stop)
        assert got_handle == handle
        assert [m.seq for m in messages] == list(range(received + 1, received + 1 + len(messages)))
        received += len(messages)
    peer.close()


def test_a_second_hub_on_the_same_data_or_port_refuses_to_start(own_hub, tmp_path):
    own_hub.start()
    hub_command = [sys.executable, "-m", "hedwig", "hub", "--host", "127.0.0.1"]
    for where, why in (
        (["--port", "0", "--data-dir", own_hub.data_dir], "another hub is serving"),
        (["--port", str(own_hub.port), "--data-dir", str(tmp_path / "other")], "address already in use"),
    ):
        second = subprocess.run([*hub_command, *where], capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, second.stderr
        reason = second.stderr.splitlines()[-1]  # the cause is the last line (hedwig.hub.startup)
        assert reason.startswith("hedwig hub: could not start: ") and why in reason.lower(), reason
    with Client(own_hub.address) as client:  # the first one never noticed
        assert client.publish("still-mine", b"x") == 1


def test_an_empty_ledger_no_topic_names_is_deleted_at_start(tmp_path):
    """A hub killed between creating a ledger and recording it leaves an empty one behind:
    no topic names it, the metadata does not record it, it holds nothing, so the start-up
    sweep deletes it and says so (it was kept and warned about at every start, for an
    operator to delete by hand: issue 42). A ledger no topic names that holds messages is
    kept and reported (tests/hub/test_metadata_safety.py)."""
    from hedwig.ledger.mmap_store import MmapLedgerStore
    from hedwig.testing.deferreds import fired
    from hedwig.testing.reactors import InlineThreadsReactor

    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as process, Client(process.address) as client:
        client.publish("kept", b"payload")
    store = MmapLedgerStore(str(data_dir / "ledgers"), reactor=InlineThreadsReactor())
    named = store.list_ledgers()
    orphan = fired(store.create())
    store.close()
    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert [m.payload for m in client.read("kept", 1, 1)] == [b"payload"]
        assert process.wait_for_log(
            "empty ledger(s) no topic names (a hub stopped between creating a ledger and"
            f" recording it): [{orphan}]"
        )
        assert " warn " not in process.output()
    store = MmapLedgerStore(str(data_dir / "ledgers"), reactor=InlineThreadsReactor())
    try:
        left = store.list_ledgers()
    finally:
        store.close()
    assert orphan not in left
    assert set(named) <= set(left)
