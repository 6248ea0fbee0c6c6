"""The drain job against a real hub: exactly once in the output, acknowledgements, GC,
a crash in the middle of a run, and clear errors."""

import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from hedwig.client.blocking import Client
from hedwig.spark.checkpoint import HadoopFiles, LocalFiles, last_committed
from hedwig.spark.drain import DrainFailed, drain
from hedwig.spark.hubs import HubUnreachable, UnknownTopic
from hedwig.spark.settings import DrainSettings
from hedwig.spark.stopping import SignalStop, StopRequest
from hedwig.testing.hubprocess import refusing_port
from hedwig.testing.polling import wait_until

pytestmark = pytest.mark.spark


def publish(client, topic, first, count, per_entry=25):
    """Messages `{topic}:{n}` for n in first..first+count-1, in entries of `per_entry`."""
    for at in range(first, first + count, per_entry):
        n = min(per_entry, first + count - at)
        client.publish_many(topic, [f"{topic}:{i}".encode() for i in range(at, at + n)])


def output_rows(spark, out):
    """(topic, seq, payload) of every row, read the way analysts read it: with Spark,
    which follows the file sink's log (so a crashed batch's stray files do not count)."""
    return [(r.topic, r.seq, bytes(r.payload)) for r in spark.read.parquet(str(out)).collect()]


def assert_exactly_once(rows, expected_counts):
    counts = Counter((topic, seq) for topic, seq, _ in rows)
    duplicates = [key for key, n in counts.items() if n > 1]
    assert not duplicates, f"rows written twice: {duplicates[:10]}"
    for topic, last in expected_counts.items():
        assert sorted(s for t, s in counts if t == topic) == list(range(1, last + 1)), topic
    assert all(payload == f"{topic}:{seq}".encode() for topic, seq, payload in rows)


def subscriber(client, topic, name):
    described = client.describe(topic)
    return described, next(s for s in described["subscribers"] if s["subscriber_id"] == name)


def settings(hub, tmp_path, topics, **overrides):
    values = dict(
        hubs=(hub.address,),
        topics=tuple(topics),
        out=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "checkpoint"),
        once=True,
        subscriber="lake",
        progress_interval_s=0.5,
    )
    values.update(overrides)
    return DrainSettings(**values)


def test_drain_once_twice_is_exactly_once_acknowledged_and_collected(spark, gc_hub, tmp_path):
    said = []
    with Client(gc_hub.address) as client:
        publish(client, "d-orders", 1, 430)
        publish(client, "d-clicks", 1, 120, per_entry=1)
        run = settings(gc_hub, tmp_path, ["d-orders", "d-clicks"], max_messages_per_trigger=200)
        first = drain(spark, run, say=said.append)
        assert first.drained == 550
        assert first.committed == {"d-orders": 430, "d-clicks": 120}
        assert first.batches == 3  # 550 messages, at most 200 per micro-batch
        assert_exactly_once(output_rows(spark, run.out), {"d-orders": 430, "d-clicks": 120})
        for topic, last in first.committed.items():
            _, lake = subscriber(client, topic, "lake")
            assert lake["consumed_seq"] == last
        # Ledgers wholly at or below the acknowledged seq-id go; the hub keeps the rest.
        wait_until(
            lambda: client.describe("d-orders")["first_seq"] > 400, "collection of d-orders", timeout=15.0
        )
        last_line = [line for line in said if line.startswith("drained ")][-1]
        assert last_line.startswith("drained 550 messages") and "lag d-orders=0 d-clicks=0" in last_line

        publish(client, "d-orders", 431, 70)
        publish(client, "d-clicks", 121, 5, per_entry=1)
        second = drain(spark, run, say=said.append)
        assert second.drained == 75
        assert second.committed == {"d-orders": 500, "d-clicks": 125}
        assert_exactly_once(output_rows(spark, run.out), {"d-orders": 500, "d-clicks": 125})
        assert subscriber(client, "d-orders", "lake")[1]["consumed_seq"] == 500


def test_output_is_partitioned_by_topic_and_date(spark, hub, tmp_path):
    with Client(hub.address) as client:
        publish(client, "p-one", 1, 10)
    run = settings(hub, tmp_path, ["p-one"])
    drain(spark, run, say=lambda line: None)
    directories = sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith("_"))
    assert directories == ["topic=p-one"]
    dates = [p.name for p in (tmp_path / "out" / "topic=p-one").iterdir()]
    assert len(dates) == 1 and dates[0].startswith("date=20")
    row = spark.read.parquet(run.out).first()
    assert str(row.date) == row.publish_time.strftime("%Y-%m-%d")
    # The checkpoint reads the same through Spark's Hadoop filesystem (how hdfs:// or
    # s3a:// checkpoints are read) as directly.
    through_hadoop = last_committed(HadoopFiles(spark, f"file://{run.checkpoint}"))
    assert through_hadoop == last_committed(LocalFiles(run.checkpoint)) == (0, {"p-one": 10})


def test_a_killed_drain_run_again_writes_every_message_exactly_once(spark, hub, tmp_path):
    total = 3000
    with Client(hub.address) as client:
        publish(client, "k-events", 1, total, per_entry=50)
    run = settings(hub, tmp_path, ["k-events"], max_messages_per_trigger=150, max_messages_per_partition=75)
    command = [
        sys.executable, "-m", "hedwig.commands.main", "drain",
        "--hub", hub.address, "--topics", "k-events", "--out", run.out, "--checkpoint", run.checkpoint,
        "--once", "--subscriber", "lake", "--max-messages-per-trigger", "150",
        "--max-messages-per-partition", "75", "--progress", "0.2", "--master", "local[2]",
    ]  # fmt: skip
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    child = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, start_new_session=True
    )
    try:
        drained_before_kill = wait_for_progress(child, at_least=300)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the driver and its JVM, mid-run
        child.wait()
        child.stderr.close()
    assert drained_before_kill < total, "the drain finished before it could be killed"
    committed_batch, committed = last_committed(LocalFiles(run.checkpoint))
    assert committed_batch + 1 < total // 150
    with Client(hub.address) as client:  # never acknowledged beyond what Spark committed
        assert subscriber(client, "k-events", "lake")[1]["consumed_seq"] <= committed["k-events"]

    # Run again, from the checkpoint, with the rest in one batch.
    rest_at_once = dataclasses.replace(run, max_messages_per_trigger=None)
    report = drain(spark, rest_at_once, say=lambda line: None)
    assert report.committed == {"k-events": total}
    assert_exactly_once(output_rows(spark, run.out), {"k-events": total})
    with Client(hub.address) as client:
        assert subscriber(client, "k-events", "lake")[1]["consumed_seq"] == total


def wait_for_progress(child, at_least, timeout=120.0):
    """Read the drain's progress lines until it reports `at_least` messages drained."""
    deadline = time.monotonic() + timeout
    buffered = b""
    seen = []
    with selectors.DefaultSelector() as selector:
        selector.register(child.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(deadline - time.monotonic()):
                break
            chunk = os.read(child.stderr.fileno(), 65536)
            if not chunk:
                break
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                seen.append(text)
                if text.startswith("hedwig drain: drained "):
                    drained = int(text.split()[3])
                    if drained >= at_least:
                        return drained
    raise AssertionError("the drain reported no progress:\n" + "\n".join(seen[-40:]))


def test_a_bad_hub_address_is_a_clear_error(spark, tmp_path):
    with refusing_port() as port:
        run = DrainSettings(
            hubs=(f"127.0.0.1:{port}",),
            topics=("x",),
            out=str(tmp_path / "o"),
            checkpoint=str(tmp_path / "c"),
        )
        with pytest.raises(HubUnreachable, match=f"could not connect to the hedwig hub at 127.0.0.1:{port}"):
            drain(spark, run, say=lambda line: None)


def test_an_unknown_topic_is_a_clear_error(spark, hub, tmp_path):
    with pytest.raises(UnknownTopic, match="topic 'no-such-topic' does not exist"):
        drain(spark, settings(hub, tmp_path, ["no-such-topic"]), say=lambda line: None)


def test_a_collected_range_fails_the_drain_unless_allowed(spark, gc_hub, tmp_path):
    run = settings(gc_hub, tmp_path, ["gone"], subscriber="late")
    with Client(gc_hub.address) as client:
        publish(client, "gone", 1, 10, per_entry=10)
        assert drain(spark, run, say=lambda line: None).committed == {"gone": 10}
        publish(client, "gone", 11, 90, per_entry=10)
        # An operator removes the drain's subscription; another subscriber consumes all,
        # and the hub collects what the drain has not read yet.
        client.unsubscribe("gone", "late")
        other = client.subscribe("gone", "other", start="earliest")
        for _ in range(100):
            other.ack(other.receive(timeout=10))
        other.close()
        wait_until(lambda: client.describe("gone")["first_seq"] > 50, "collection of 'gone'", timeout=15.0)
        first_held = client.describe("gone")["first_seq"]
    with pytest.raises(DrainFailed, match=rf"seq-ids 11\.\.{first_held - 1} of topic 'gone' were removed"):
        drain(spark, run, say=lambda line: None)
    allowed = dataclasses.replace(run, fail_on_data_loss=False)
    report = drain(spark, allowed, say=lambda line: None)
    assert report.committed == {"gone": 100}
    seqs = sorted(seq for _, seq, _ in output_rows(spark, run.out))
    assert seqs == list(range(1, 11)) + list(range(first_held, 101))


def test_a_running_drain_follows_new_messages_and_stops_cleanly_on_sigterm(spark, hub, tmp_path):
    """Without --once the drain keeps reading as messages arrive; SIGTERM stops it after
    acknowledging everything it committed: exit 130, one line that says so, no traceback."""
    run = settings(hub, tmp_path, ["live"])
    with Client(hub.address) as client:
        publish(client, "live", 1, 500)
        command = [
            sys.executable, "-m", "hedwig.commands.main", "--hub", hub.address, "--json", "drain",
            "--topics", "live", "--out", run.out, "--checkpoint", run.checkpoint, "--subscriber", "lake",
            "--interval", "0.2", "--progress", "0.2", "--master", "local[2]",
        ]  # fmt: skip
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
        child = subprocess.Popen(
            command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True
        )
        try:
            assert wait_for_progress(child, at_least=500) == 500
            publish(client, "live", 501, 300)
            assert wait_for_progress(child, at_least=800) == 800
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=60)  # reads both pipes: none fills and stalls it
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            child.stderr.close()
            child.stdout.close()
        said = err.decode("utf-8", "replace")
        ours = [line for line in said.splitlines() if line.startswith("hedwig drain: ")]
        assert child.returncode == 130, f"exit {child.returncode}; stderr after SIGTERM:\n{said[-6000:]}"
        assert "Traceback" not in said, said[-6000:]
        last = "hedwig drain: stopped by SIGTERM: drained 800 messages; acknowledged live=800"
        assert ours[-1] == last, said[-6000:]
        assert json.loads(out)["stopped"] is True
        assert subscriber(client, "live", "lake")[1]["consumed_seq"] == 800
    assert_exactly_once(output_rows(spark, run.out), {"live": 800})


def main_thread_inside(function: str, timeout: float = 60.0):
    """Wait until the main thread is blocked on a socket (a call into Spark or to the hub)
    inside `function`, and return; AssertionError at the deadline."""
    main = threading.main_thread().ident
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(main)
        if frame is not None and frame.f_code.co_name in ("readinto", "_read_once"):
            names = set()
            while frame is not None:
                names.add(frame.f_code.co_name)
                frame = frame.f_back
            if function in names:
                return
        time.sleep(0.0002)  # (the pace of looking, not a synchronisation)
    raise AssertionError(f"the main thread was never seen waiting inside {function}")


@pytest.mark.parametrize(
    "moment",
    [
        "awaitTermination",  # waiting on the query: a call into Spark (py4j), as found
        "describe",  # a progress tick asking the hub for the topic's bounds
        "start_query",  # the query starting
    ],
)
def test_sigterm_at_any_moment_stops_the_query_and_acknowledges_what_it_committed(
    spark, hub, tmp_path, moment
):
    """The signal lands while the drain's main thread is inside a call: the call carries
    on, the drain stops the query at its next step, acknowledges what Spark committed
    and returns a stopped report; the Spark session stays usable (an exception raised
    inside a py4j call used to break the connection the stop then needed)."""
    topic = f"moment-{moment.lower()}"
    run = settings(hub, tmp_path, [topic], once=False, trigger_interval_s=0.1, progress_interval_s=0.05)
    said = []
    progressed = threading.Event()

    def say(line):
        said.append(line)
        if line.startswith("drained 200 messages"):
            progressed.set()

    def signal_at_the_moment():
        if moment != "start_query":
            progressed.wait(60)
        main_thread_inside(moment)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)

    stop = StopRequest()
    with Client(hub.address) as client:
        publish(client, topic, 1, 200)
        sender = threading.Thread(target=signal_at_the_moment, daemon=True)
        with SignalStop(stop):
            sender.start()
            report = drain(spark, run, say=say, stop=stop)
        sender.join(10)
        assert stop.reason == "SIGTERM"
        assert report.stopped, said
        assert "SIGTERM: stopping the query" in said
        assert not spark.streams.active
        committed = last_committed(LocalFiles(run.checkpoint))
        done = committed[1][topic] if committed else 0
        if moment != "start_query":
            assert done == 200
        assert report.committed == report.acknowledged == {topic: done}
        assert subscriber(client, topic, "lake")[1]["consumed_seq"] == done
    if done:
        assert_exactly_once(output_rows(spark, run.out), {topic: done})


def test_a_stop_asked_before_the_query_starts_starts_nothing(spark, hub, tmp_path):
    with Client(hub.address) as client:
        publish(client, "early", 1, 10)
    stop = StopRequest()
    stop.request("SIGTERM")
    said = []
    report = drain(spark, settings(hub, tmp_path, ["early"], once=False), say=said.append, stop=stop)
    assert report.stopped and report.committed == {"early": 0} and report.lag == {"early": 10}
    assert said[-1] == "SIGTERM: stopped before the query started"
    assert not spark.streams.active and not os.path.exists(tmp_path / "checkpoint" / "commits")
