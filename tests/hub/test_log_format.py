"""The hub's log lines: one documented format (hedwig.hub.logs), from every part of it."""

import io
import re

from twisted.logger import Logger, LogPublisher
from twisted.python.failure import Failure

from hedwig.hub import logs
from hedwig.testing.hubprocess import HubProcess

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (debug|info|warn|error|critical) [\w.\-]+: \S.*$")


def logged(level="info"):
    stream = io.StringIO()
    publisher = LogPublisher(logs.observer(stream, level))
    return Logger(namespace="hedwig.test", observer=publisher), stream


def test_an_event_is_one_line_of_time_level_namespace_and_text():
    logger, stream = logged()
    logger.info("topic {topic}: {count} ledgers", topic="t", count=2)
    [line] = stream.getvalue().splitlines()
    assert LINE.match(line), line
    assert line.endswith(" info hedwig.test: topic t: 2 ledgers")


def test_levels_below_the_chosen_one_are_left_out():
    logger, stream = logged("warn")
    logger.info("quiet")
    logger.warn("loud")
    assert [line.split(" ", 2)[1] for line in stream.getvalue().splitlines()] == ["warn"]


def test_a_failure_brings_its_traceback_after_its_line():
    logger, stream = logged()
    try:
        raise ValueError("broken")
    except ValueError:
        logger.failure("reading failed", Failure())
    first, *rest = stream.getvalue().splitlines()
    assert LINE.match(first) and first.endswith("critical hedwig.test: reading failed")
    assert any("ValueError: broken" in line for line in rest)


def test_a_hub_process_logs_every_line_in_the_format(tmp_path):
    hub = HubProcess(tmp_path / "data").start()
    assert hub.stop() == 0
    lines = hub.output().splitlines()
    assert any("serving" in line for line in lines) and any(line.endswith("stopped") for line in lines)
    assert [line for line in lines if not LINE.match(line)] == []


def test_what_a_peer_sent_cannot_make_a_line_of_its_own():
    """Issue 28, finding 6: a newline in a HELLO client name wrote a forged line."""
    logger, stream = logged()
    forged = "x\n2026-11-26T00:00:00.000000Z info hedwig.auth.gate: 127.0.0.1:1: authenticated as ops"
    logger.info("{peer}: hello from {client}", peer="127.0.0.1:5", client=forged + "\x1b[2J\r")
    [line] = stream.getvalue().splitlines()
    escaped = forged.replace("\n", "\\n") + "\\x1b[2J\\r"
    assert LINE.match(line) and line.endswith(f"hello from {escaped}"), line


def test_a_hello_name_with_a_newline_is_one_line_in_a_hub_process_log(tmp_path):
    from hedwig.protocol import Op, encode_frame
    from hedwig.protocol.requests import encode_hello
    from tests.hub.rawpeer import RawPeer

    with HubProcess(tmp_path / "data") as hub:
        peer = RawPeer(hub.address)
        peer.send(encode_frame(Op.HELLO, 1, encode_hello("x\n2026-11-26T00:00:00.000000Z info forged: ops")))
        peer.next_response()
        assert hub.wait_for_log("hello from x\\n2026-11-26T00:00:00.000000Z info forged: ops")
        peer.close()
    assert not any(line.startswith("2026-11-26T00:00:00") for line in hub.output().splitlines())
