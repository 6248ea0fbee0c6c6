"""A real log shipper: Debian's rsyslog with omkafka (package rsyslog-kafka, librdkafka)
follows a file (imfile) and ships its lines into a hedwig topic through the Kafka port;
a native client reads them back in order, through a SIGKILL and a restart of the hub:
none lost, and those shipped while the hub ran each once.

omkafka itself is at-least-once across a broker outage, whatever its settings
(docs/kafka.md, "Log shippers", measured with enable.idempotence on and off,
resubmitOnFailure and keepFailedMessages): its doAction hands a line to librdkafka, which
keeps it and delivers it once the broker is back, and reports the action suspended when
librdkafka's queued error events said the broker is down, so rsyslog submits the line
again on resume: a new record, which librdkafka's idempotence cannot tell from a new line.
The test asserts that only lines written while the hub was down come more than once, and
counts them."""

import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest

from hedwig.client import Client
from hedwig.client.errors import NoSuchTopic
from hedwig.testing.hubprocess import HubProcess

DEADLINE_S = 60.0
TOPIC = "shipped-logs"

CONF = """\
global(workDirectory="{work}")
module(load="imfile")
module(load="omkafka")
template(name="line" type="string" string="%msg%")
input(type="imfile" file="{source}" tag="app" ruleset="ship")
ruleset(name="ship") {{
  action(type="omkafka" broker=["127.0.0.1:{port}"] topic="{topic}" template="line"
         confParam=["enable.idempotence=true", "linger.ms=5", "message.timeout.ms=0"]
         action.resumeRetryCount="-1" action.resumeInterval="1" queue.type="LinkedList")
}}
"""


def _lines(hub) -> list:
    try:
        with Client(hub.address) as client:
            return [m.payload.decode() for m in client.read(TOPIC)]
    except NoSuchTopic:
        return []


def _wait_for(hub, count) -> list:
    """The topic's lines once `count` distinct ones arrived."""
    deadline = time.monotonic() + DEADLINE_S
    while len(set(lines := _lines(hub))) < count:
        assert time.monotonic() < deadline, f"{len(set(lines))} of {count} lines arrived"
        time.sleep(0.2)
    return lines


@pytest.fixture
def rsyslogd():
    assert shutil.which("rsyslogd"), "rsyslogd (Debian's rsyslog, with rsyslog-kafka) is not installed"
    started = []

    def start(directory, port, source):
        work = directory / "work"
        work.mkdir()
        conf = directory / "rsyslog.conf"
        conf.write_text(CONF.format(work=work, source=source, port=port, topic=TOPIC))
        check = subprocess.run(["rsyslogd", "-N1", "-f", str(conf)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        process = subprocess.Popen(
            ["rsyslogd", "-n", "-f", str(conf), "-i", str(directory / "rsyslogd.pid")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_rsyslog_omkafka_ships_every_line_once_through_a_hub_kill_and_restart(tmp_path, rsyslogd):
    source = tmp_path / "app.log"
    source.write_text("")
    with HubProcess(tmp_path / "hub", kafka=True) as hub:
        rsyslogd(tmp_path, hub.kafka_port, source)
        first = [f"line {i} before the kill" for i in range(50)]
        with source.open("a") as log:
            log.write("".join(f"{line}\n" for line in first))
        assert _wait_for(hub, 50) == first
        hub.kill()
        second = [f"line {i} while the hub is down" for i in range(50)]
        with source.open("a") as log:
            log.write("".join(f"{line}\n" for line in second))
        hub.restart()
        third = [f"line {i} after the restart" for i in range(50)]
        with source.open("a") as log:
            log.write("".join(f"{line}\n" for line in third))
        lines = _wait_for(hub, 150)
    # Nothing lost, each line first arriving in the order it was written; the lines shipped
    # while the hub ran arrived once; omkafka's resubmissions (above) are counted.
    assert list(dict.fromkeys(lines)) == first + second + third
    assert lines[:50] == first
    repeated = {line: n for line, n in Counter(lines).items() if n > 1}
    assert repeated.keys() <= set(second), repeated
    print(f"omkafka resubmitted {len(repeated)} of {len(second + third)} lines written around the outage")
