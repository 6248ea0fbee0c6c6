"""Compacted topics against a real hub process: the flag at creation (kept across
restarts, shown by describe), keyless messages refused, COMPACT keeping the latest
message of each key with its seq-id, readers and subscribers from any start, tombstones,
and a hub killed (SIGKILL) at each step of a compaction reading old or new ledgers after
its restart, never a mix that loses a key's latest value."""

import os
import subprocess
import sys
import threading

import pytest

from hedwig.client import Client
from hedwig.client.errors import (
    ConnectionLost,
    CouldNotConnect,
    KeyRequired,
    NoSuchTopic,
    NotCompacted,
    TopicExists,
)
from hedwig.protocol import Op
from hedwig.protocol.compression import compress_message_set
from hedwig.protocol.messageset import encode_message_set
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from hedwig.topiclog.compaction import KEY_COST_BYTES

KILL_AT = "HEDWIG_TEST_COMPACTION_KILL_AT"


def write_conf(
    directory,
    tombstone_retention_s: float = 86400.0,
    interval_s: float = 0,
    lag_s: float = 60,
    key_map_keys: int = 0,
):
    """A ledger every 3 entries (compaction has sealed ledgers to work on); no background
    compaction unless `interval_s` (the tests compact on demand); a key map of
    `key_map_keys` keys (0: the default's)."""
    path = directory / "hub.conf"
    key_map = f"compaction_key_map_bytes = {key_map_keys * KEY_COST_BYTES}\n" if key_map_keys else ""
    path.write_text(
        "[log]\n"
        "max_ledger_entries = 3\n"
        f"compaction_interval_s = {interval_s}\n"
        f"min_compaction_lag_s = {lag_s}\n"
        f"tombstone_retention_s = {tombstone_retention_s}\n" + key_map
    )
    return str(path)


def hub_process(tmp_path, **conf):
    return HubProcess(tmp_path / "data", 0, "--conf", write_conf(tmp_path, **conf))


def publish_keyed(client, topic: str, pairs, codec=None):
    """Publish (key, payload) pairs as one message set; (first, last) seq-ids."""
    keys = [key for key, _ in pairs]
    message_set = encode_message_set([payload for _, payload in pairs], None, keys)
    if codec is not None:
        message_set = compress_message_set(message_set, codec)
    return client._call(Op.PUBLISH, topic, topic, message_set)


def publish_rounds(client, topic: str, rounds: int, keys: int):
    """Each round one set of every key, "k<i>" -> "r<round>-k<i>": the last round is
    what a compacted topic keeps. {key: (seq, payload)} of the latest."""
    latest = {}
    for r in range(rounds):
        pairs = [(f"k{i}".encode(), f"r{r}-k{i}".encode()) for i in range(keys)]
        first, _last = publish_keyed(client, topic, pairs)
        for offset, (key, payload) in enumerate(pairs):
            latest[key] = (first + offset, payload)
    return latest


def table(messages):
    """{key: (seq, payload)} of messages in seq-id order, the later winning."""
    out = {}
    for message in messages:
        out[bytes(message.key)] = (message.seq, bytes(message.payload))
    return out


def test_the_compaction_flag_is_kept_across_restarts_and_described(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        assert client.create_topic("table", compaction=True) == {
            "topic": "table",
            "created": True,
            "compaction": True,
            "partitions": 1,
            "ttl_ms": 0,
        }
        assert client.create_topic("plain")["compaction"] is False
        assert client.describe("table")["compaction"] is True
        assert client.describe("plain")["compaction"] is False
        publish_keyed(client, "table", [(b"a", b"1")])
    with process, Client(process.address) as client:
        assert client.describe("table")["compaction"] is True
        # Asked again as it is: it exists; as the other kind: refused, and it stays what it
        # was created as (issue 42: a caller asking for a table got a plain topic, silently).
        assert client.create_topic("table", compaction=True) == {
            "topic": "table",
            "created": False,
            "compaction": True,
            "partitions": 1,
            "ttl_ms": 0,
        }
        assert client.create_topic("plain") == {
            "topic": "plain",
            "created": False,
            "compaction": False,
            "partitions": 1,
            "ttl_ms": 0,
        }
        with pytest.raises(TopicExists, match="plain exists already as a topic without compaction"):
            client.create_topic("plain", compaction=True)
        with pytest.raises(TopicExists, match="table exists already as a compacted topic"):
            client.create_topic("table")
        assert client.describe("plain")["compaction"] is False
        assert client.describe("table")["compaction"] is True
        with pytest.raises(KeyRequired):
            client.publish("table", b"no key")


def test_a_compacted_topic_refuses_a_keyless_message_and_stores_nothing(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        client.create_topic("keyed", compaction=True)
        publish_keyed(client, "keyed", [(b"a", b"1")])
        with pytest.raises(KeyRequired):
            client.publish("keyed", b"plain")
        with pytest.raises(KeyRequired):
            publish_keyed(client, "keyed", [(b"a", b"2"), (None, b"keyless"), (b"b", b"3")])
        with pytest.raises(KeyRequired):
            publish_keyed(client, "keyed", [(None, b"keyless")] * 50, codec="gzip")
        with Client(process.address, idempotent=True) as producer, pytest.raises(KeyRequired):
            producer.publish("keyed", b"plain, idempotently")
        assert client.describe("keyed")["last_seq"] == 1
        assert publish_keyed(client, "keyed", [(b"b", b"4")], codec="gzip") == (2, 2)
        # A plain topic takes both.
        client.publish("loose", b"plain")
        publish_keyed(client, "loose", [(None, b"x"), (b"k", b"y")])
        with pytest.raises(NotCompacted):
            client.compact("loose")


def test_compact_keeps_the_latest_message_of_each_key_at_its_seq_id(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        client.create_topic("prices", compaction=True)
        latest = publish_rounds(client, "prices", rounds=12, keys=5)
        before = client.describe("prices")
        report = client.compact("prices")
        assert report["span"][0] == 1
        assert report["messages"] == report["span"][1]
        after = client.describe("prices")
        assert len(after["ledgers"]) < len(before["ledgers"])
        messages = client.read("prices")
        # Every key's latest survives with its seq-id; nothing else of a sealed ledger.
        assert table(messages) == latest
        # The span compacted holds exactly the latest of each key within it (a later
        # message in the open ledger does not count yet, as in Kafka's cleaner).
        span_last = report["span"][1]
        compacted = [m.seq for m in messages if m.seq <= span_last]
        keys = len(latest)
        assert compacted == list(range(span_last - keys + 1, span_last + 1))
        assert [m.seq for m in messages] == sorted(m.seq for m in messages)
        # A read from inside a gap starts at the next retained message.
        kept = [m.seq for m in messages]
        gap = next(seq for seq in range(1, kept[-1]) if seq not in kept)
        following = next(seq for seq in kept if seq > gap)
        assert client.read("prices", gap)[0].seq == following
        # Compacting again (nothing new sealed) changes nothing the readers see.
        client.compact("prices")
        assert table(client.read("prices")) == latest
        # Publishing goes on after a compaction, and a later one takes the new data in.
        latest.update(publish_rounds(client, "prices", rounds=6, keys=3))
        client.compact("prices")
        assert table(client.read("prices")) == latest
    with process, Client(process.address) as client:  # restarted: the compacted ledgers read
        assert table(client.read("prices")) == latest


def test_a_subscriber_behind_gets_the_latest_of_every_key_then_follows_the_tail(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        client.create_topic("state", compaction=True)
        published = publish_rounds(client, "state", rounds=10, keys=4)
        client.compact("state")
        assert table(client.read("state")) == published
        for start, window in (("earliest", 0), ("earliest", 1), (2, 2)):
            compacted = client.read("state")  # (with the tails published so far)
            latest = table(compacted)
            sub = f"s-{start}-{window}"
            subscription = client.subscribe("state", sub, start=start, window=window)
            try:
                got = []
                while not got or got[-1].seq < compacted[-1].seq:
                    message = subscription.receive(timeout=10)
                    assert message is not None, f"{sub}: nothing after {got[-1:]} (window {window})"
                    subscription.ack(message)
                    got.append(message)
                want = [m for m in compacted if m.seq >= (start if isinstance(start, int) else 1)]
                assert [(m.seq, bytes(m.payload)) for m in got] == [(m.seq, bytes(m.payload)) for m in want]
                assert table(got) == {k: v for k, v in latest.items() if v[0] >= want[0].seq}
                # ... then the tail.
                first, _ = publish_keyed(client, "state", [(b"k1", f"tail-{sub}".encode())])
                message = subscription.receive(timeout=10)
                assert (message.seq, bytes(message.payload)) == (first, f"tail-{sub}".encode())
                subscription.ack(message)
            finally:
                subscription.close()


def test_tombstones_go_after_their_retention_and_stay_before(tmp_path):
    for retention, kept in ((0.0, False), (86400.0, True)):
        directory = tmp_path / f"r{int(retention)}"
        directory.mkdir()
        process = hub_process(directory, tombstone_retention_s=retention)
        with process, Client(process.address) as client:
            client.create_topic("t", compaction=True)
            publish_keyed(client, "t", [(b"gone", b"v1"), (b"stays", b"v1")])
            publish_keyed(client, "t", [(b"gone", b"")])  # the tombstone
            for i in range(6):
                publish_keyed(client, "t", [(b"stays", f"v{i + 2}".encode())])
            client.compact("t")
            found = table(client.read("t"))
            assert (b"gone" in found) is kept
            if kept:
                assert found[b"gone"] == (3, b"")
            assert found[b"stays"][1] == b"v7"


@pytest.mark.parametrize("step", ["written", "sealed", "swapped", "dropped"])
def test_a_hub_killed_during_a_compaction_reads_old_or_new_ledgers_never_a_mix(tmp_path, step):
    process = hub_process(tmp_path)
    process.env = {**os.environ, KILL_AT: step}
    with process, Client(process.address) as client:
        client.create_topic("crash", compaction=True)
        latest = publish_rounds(client, "crash", rounds=9, keys=4)
        last_seq = client.describe("crash")["last_seq"]
        with pytest.raises((ConnectionLost, CouldNotConnect)):  # (the request is retried)
            client.compact("crash")
        process.process.wait(30)
        assert process.process.returncode == -9
    process.env = None
    with process, Client(process.address) as client:
        messages = client.read("crash")
        assert table(messages) == latest
        assert client.describe("crash")["last_seq"] == last_seq
        seqs = [m.seq for m in messages]
        assert seqs == sorted(set(seqs))
        # Old ledgers (every message) before the swap, the new one (compacted) after it.
        if step in ("written", "sealed"):
            assert [m.seq for m in messages] == list(range(1, last_seq + 1))
        else:
            assert len(messages) < last_seq
        # The next compaction finishes the work, and no ledger is left behind.
        client.compact("crash")
        assert table(client.read("crash")) == latest
        named = {ledger["ledger_id"] for ledger in client.describe("crash")["ledgers"]}
    with process:
        ledgers = os.listdir(tmp_path / "data" / "ledgers")
        stored = {int(name[1:]) for name in ledgers if name.startswith("L")}
        assert stored == named, f"ledgers on disk {stored}, named by the topic {named}"


def test_the_hub_compacts_in_the_background_ledgers_older_than_the_lag(tmp_path):
    process = hub_process(tmp_path, interval_s=0.2, lag_s=0)
    with process, Client(process.address) as client:
        client.create_topic("bg", compaction=True)
        latest = publish_rounds(client, "bg", rounds=9, keys=3)
        last_seq = client.describe("bg")["last_seq"]
        # Compacted without being asked: the closed ledgers become one.
        wait_until(lambda: len(client.describe("bg")["ledgers"]) == 2, "a background compaction")
        assert table(client.read("bg")) == latest
        assert len(client.read("bg")) < last_seq
    lagging = tmp_path / "lag"
    lagging.mkdir()
    process = hub_process(lagging, interval_s=0.2, lag_s=3600)
    with process, Client(process.address) as client:
        client.create_topic("young", compaction=True)
        publish_rounds(client, "young", rounds=9, keys=3)
        # Ledgers younger than the lag wait: background runs pass them over ...
        runs = client.stats()["compaction"]["runs"]
        wait_until(lambda: client.stats()["compaction"]["runs"] >= runs + 3, "three background runs")
        assert client.stats()["compaction"]["compactions"] == 0
        assert len(client.read("young")) == client.describe("young")["last_seq"]
        # ... COMPACT (no lag) goes ahead.
        assert client.compact("young")["span"] is not None
        assert len(client.read("young")) < client.describe("young")["last_seq"]


def test_a_shared_subscription_of_a_compacted_topic_is_not_sent_its_gaps_again(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        client.create_topic("jobs", compaction=True)
        publish_rounds(client, "jobs", rounds=8, keys=3)
        client.compact("jobs")
        kept = client.read("jobs")
        last_seq = client.describe("jobs")["last_seq"]
        member = client.subscribe(
            "jobs", "workers", kind="shared", start="earliest", window=4, ack_timeout=0.5
        )
        got = []
        while len(got) < len(kept):
            message = member.receive(timeout=10)
            assert message is not None and message.delivery_count == 1, (got, message)
            got.append(message.seq)
            member.ack(message)
        assert got == [m.seq for m in kept]

        # The gaps count as acknowledged with the messages: the subscription's consumed
        # seq-id reaches the end, nothing is pending, nothing comes again.
        def settled():
            (row,) = client.describe("jobs")["subscribers"]
            return row["consumed_seq"] == last_seq and row["pending"] == 0

        wait_until(settled, "every seq-id acknowledged")
        first, _ = publish_keyed(client, "jobs", [(b"k0", b"after")])
        message = member.receive(timeout=10)
        assert (message.seq, message.delivery_count) == (first, 1)
        member.close()


def test_a_filtered_subscription_of_a_compacted_topic_gets_the_latest_that_match(tmp_path):
    process = hub_process(tmp_path)
    with process, Client(process.address) as client:
        client.create_topic("colors", compaction=True)
        latest = {}
        for r in range(8):
            keys = [f"k{i}" for i in range(4)]
            colors = ["red" if (r + i) % 3 == 0 else "blue" for i in range(4)]
            seqs = client.publish_many("colors", [f"r{r}".encode()] * 4, [{"color": c} for c in colors], keys)
            for seq, key, color in zip(seqs, keys, colors, strict=True):
                latest[key.encode()] = (seq, color)
        client.compact("colors")
        kept = client.read("colors")
        last_seq = client.describe("colors")["last_seq"]
        want = [m.seq for m in kept if m.properties["color"] == "red"]
        assert want and len(want) < len(kept)
        for kind, window in (("exclusive", 2), ("shared", 2)):
            sub = client.subscribe(
                "colors", f"reds-{kind}", kind=kind, start="earliest", window=window, filter="color = 'red'"
            )
            got = []
            while len(got) < len(want):
                message = sub.receive(timeout=10)
                assert message is not None, (kind, got)
                got.append(message.seq)
                sub.ack(message)
            assert got == want, kind

            def consumed(kind=kind):
                rows = {row["subscriber_id"]: row for row in client.describe("colors")["subscribers"]}
                return rows[f"reds-{kind}"]["consumed_seq"] == last_seq

            wait_until(consumed, f"the {kind} subscription's pointer past the gaps and the blue ones")
            sub.close()


def test_an_expired_tombstone_goes_on_a_topic_gone_quiet(tmp_path):
    """Issue 42: a tombstone compacted while young, nothing published after: once its
    retention passed, COMPACT answered `span: None` (a span of one ledger the compactor
    wrote was never compacted again) and the tombstone was read back for ever."""
    process = hub_process(tmp_path, tombstone_retention_s=3.0)
    with process, Client(process.address) as client:
        client.create_topic("quiet", compaction=True)
        pairs = [
            (b"gone", b"v1"),
            (b"gone", b""),
            (b"stays", b"v1"),
            (b"stays", b"v2"),
            (b"x", b"1"),
            (b"y", b"1"),
        ]
        for pair in pairs:  # (two sealed ledgers of three entries)
            publish_keyed(client, "quiet", [pair])
        report = client.compact("quiet")
        assert report["span"] == [1, 6]
        young = {b"gone": (2, b""), b"stays": (4, b"v2"), b"x": (5, b"1"), b"y": (6, b"1")}
        assert table(client.read("quiet")) == young
        ledger = report["ledger"]

        def compacted_again():
            return client.compact("quiet")["span"] is not None

        wait_until(compacted_again, "a compaction once the tombstone expired")
        del young[b"gone"]
        assert table(client.read("quiet")) == young
        assert client.describe("quiet")["ledgers"][0]["ledger_id"] != ledger
        # Nothing more to do now: the reply says why.
        again = client.compact("quiet")
        assert again["span"] is None and "compacted already" in again["why"]


def test_a_topic_deleted_while_it_is_compacted_answers_no_such_topic_and_logs_no_loss(tmp_path):
    """Issue 42: the compact() caller got `STORAGE_ERROR: EntriesUnreadable ... their
    ledger is missing` and the hub logged `ledger 1 is missing` at error level. A key
    map of two keys makes the compaction of 600 keys a few hundred passes: it is under
    way when the delete comes (the first pass's ledger shows it)."""
    process = hub_process(tmp_path, key_map_keys=2)
    with process, Client(process.address) as client:
        client.create_topic("doomed", compaction=True)
        for i in range(0, 600, 100):
            publish_keyed(client, "doomed", [(b"k%d" % k, b"v") for k in range(i, i + 100)])
        first_ledger = client.describe("doomed")["ledgers"][0]["ledger_id"]
        answer = {}

        def compact():
            with Client(process.address) as other:
                try:
                    answer["report"] = other.compact("doomed")
                except Exception as e:
                    answer["error"] = e

        compacting = threading.Thread(target=compact)
        compacting.start()
        wait_until(
            lambda: client.describe("doomed")["ledgers"][0]["ledger_id"] != first_ledger,
            "the compaction's first pass",
        )
        client.delete_topic("doomed", force=True)
        compacting.join(60)
        assert isinstance(answer.get("error"), NoSuchTopic), answer
        # The hub goes on; no ledger of the topic (nor of its compaction) is left.
        assert client.publish("fresh", b"x") == 1
        named = {ledger["ledger_id"] for ledger in client.describe("fresh")["ledgers"]}
        stored = {int(name[1:]) for name in os.listdir(tmp_path / "data" / "ledgers") if name.startswith("L")}
        assert stored == named
    log = process.output()
    assert "missing" not in log and "Unhandled" not in log and "error" not in log.lower(), log


def test_the_sweep_deletes_the_empty_ledger_a_kill_after_its_creation_left(tmp_path):
    """Issue 42: a SIGKILL between creating a compaction's ledger and recording it left an
    empty ledger that the hub warned about at every start, for an operator to delete by
    hand. No topic names it, no record does, it holds nothing: the sweep deletes it."""
    process = hub_process(tmp_path)
    process.env = {**os.environ, KILL_AT: "created"}
    with process, Client(process.address) as client:
        client.create_topic("crash", compaction=True)
        latest = publish_rounds(client, "crash", rounds=9, keys=4)
        with pytest.raises((ConnectionLost, CouldNotConnect)):
            client.compact("crash")
        process.process.wait(30)
        assert process.process.returncode == -9
    process.env = None
    with process, Client(process.address) as client:
        assert process.wait_for_log("empty ledger(s) no topic names")
        assert table(client.read("crash")) == latest
        named = {ledger["ledger_id"] for ledger in client.describe("crash")["ledgers"]}
        stored = {int(name[1:]) for name in os.listdir(tmp_path / "data" / "ledgers") if name.startswith("L")}
        assert stored == named, f"ledgers on disk {stored}, named by the topic {named}"
    assert "no topic names and the metadata does not record" not in process.output()


def test_a_key_flood_is_compacted_in_passes_of_a_bounded_key_map(tmp_path):
    """Issue 41: 2.6M distinct 3-byte keys from a publish-only user made the next
    compaction grow the hub by 595 MB (a map of every key) and stall everyone for up to
    2.2 s (a step was an entry, of up to 1.3M messages). With a key map of 2,000 keys,
    60,000 keys take 30 passes or more, and other publishes are answered meanwhile (the
    bounds themselves: tests/topiclog/test_compaction_passes.py; the figures:
    bench/compaction_bench.py)."""
    process = hub_process(tmp_path, key_map_keys=2_000)
    with process, Client(process.address) as client:
        client.create_topic("flood", compaction=True)
        for start in range(0, 60_000, 20_000):
            publish_keyed(
                client, "flood", [(i.to_bytes(3, "big"), b"v") for i in range(start, start + 20_000)]
            )
        publish_keyed(client, "flood", [((5).to_bytes(3, "big"), b"again")])
        answer = {}

        def compact():
            with Client(process.address) as other:
                answer["report"] = other.compact("flood")

        compacting = threading.Thread(target=compact)
        compacting.start()
        published = [client.publish("other", b"%d" % i) for i in range(50)]
        compacting.join(120)
        assert published == list(range(1, 51))
        report = answer["report"]
        assert report["span"] == [1, 60_001] and report["passes"] >= 30
        assert (report["messages"], report["kept"]) == (60_001, 60_000)
        kept = table(client.read("flood", 1, 70_000))
        assert len(kept) == 60_000 and kept[(5).to_bytes(3, "big")] == (60_001, b"again")


def test_a_topic_deleted_while_the_background_compacts_it_logs_no_failure(tmp_path):
    """The background pass's compaction of a topic deleted meanwhile stops (its log closed):
    a harmless race, not a failure with a traceback in the hub's log."""
    process = hub_process(tmp_path, interval_s=0.2, lag_s=0, key_map_keys=2)
    with process, Client(process.address) as client:
        client.create_topic("doomed", compaction=True)
        for i in range(0, 600, 100):
            publish_keyed(client, "doomed", [(b"k%d" % k, b"v") for k in range(i, i + 100)])
        first_ledger = client.describe("doomed")["ledgers"][0]["ledger_id"]
        wait_until(
            lambda: client.describe("doomed")["ledgers"][0]["ledger_id"] != first_ledger,
            "the background compaction's first pass",
        )
        runs = client.stats()["compaction"]["runs"]
        client.delete_topic("doomed", force=True)
        wait_until(lambda: client.stats()["compaction"]["runs"] >= runs + 2, "two background runs after")
        assert client.stats()["compaction"]["compactions"] == 0
    log = process.output()
    assert "failed" not in log and "Traceback" not in log and "missing" not in log, log


def test_a_key_map_of_no_bytes_is_refused_at_start(tmp_path):
    """A key map of 0 bytes (or less) would hold no key: refused, naming the setting."""
    conf = tmp_path / "hub.conf"
    conf.write_text("[log]\ncompaction_key_map_bytes = 0\n")
    command = [sys.executable, "-m", "hedwig", "hub", "--port", "0", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run([*command, "--conf", str(conf)], capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert b"[log] compaction_key_map_bytes = 0: expected a positive number of bytes" in done.stderr
