"""The partial-request limits on a task.Clock (StringTransports, real hub parts): a frame
that stops arriving ends its connection frame_timeout_s after its last byte, time the hub
holds a connection back for the intake budget does not count, and a connection that
says no HELLO within hello_timeout_s is closed."""

import pytest

from hedwig.config.settings import Config
from hedwig.protocol import Op
from hedwig.protocol.framing import frame_header
from tests.hub.harness import HubHarness

FRAME = 1000


@pytest.fixture
def harness(tmp_path):
    config = Config()
    config.hub.max_frame_bytes = FRAME
    config.hub.max_partial_request_bytes = 2 * (FRAME + 4)
    config.hub.frame_timeout_s = 5.0
    config.hub.hello_timeout_s = 3.0
    return HubHarness(tmp_path, config)


def half_frame() -> bytes:
    return frame_header(Op.PUBLISH, 9, FRAME - 5) + bytes(FRAME // 2)


def test_a_frame_that_stops_arriving_closes_its_connection_after_the_timeout(harness):
    peer = harness.connect()
    peer.send_raw(half_frame())
    assert harness.hub.intake.reserved == FRAME + 4
    harness.clock.advance(4)
    peer.send_raw(b"\x00" * 10)  # progress: the stall counts from here
    harness.clock.advance(4.9)
    assert not peer.closing
    harness.clock.advance(0.1)
    assert peer.closing and peer.transport.disconnected  # aborted
    assert harness.hub.intake.reserved == 0 and harness.hub.stats.frame_timeouts == 1


def test_waiting_for_the_budget_is_not_a_stall(harness):
    first, second, third = harness.connect(), harness.connect(), harness.connect()
    first.send_raw(half_frame())
    second.send_raw(half_frame())
    third.send_raw(half_frame())  # the budget holds two frames: the third waits, unread
    assert third.transport.producerState == "paused" and harness.hub.intake.stats()["waiting"] == 1
    harness.clock.advance(5)
    assert first.closing and second.closing  # stalled: their reservations go to the third
    assert not third.closing and third.transport.producerState == "producing"
    harness.clock.advance(4.9)
    assert not third.closing
    harness.clock.advance(0.1)
    assert third.closing and harness.hub.intake.reserved == 0


def test_a_greeted_connection_without_a_frame_in_progress_is_never_timed_out(harness):
    idle = harness.connect()
    silent = harness.connect(greet=False)
    harness.clock.advance(3)
    assert silent.closing and harness.hub.stats.hello_timeouts == 1
    harness.clock.advance(600)
    assert not idle.closing and harness.clock.getDelayedCalls() == []
