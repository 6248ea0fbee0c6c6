"""Signals ask the drain to stop rather than interrupt it (hedwig/spark/stopping.py)."""

import signal

import pytest

from hedwig.spark.stopping import SignalStop, StopRequest


def test_a_stop_request_keeps_the_first_reason():
    stop = StopRequest()
    assert not stop.requested and stop.reason is None
    stop.request("SIGTERM")
    stop.request("SIGINT")
    assert stop.requested and stop.reason == "SIGTERM"


def test_the_first_signal_asks_for_a_stop_and_the_second_interrupts():
    stop = StopRequest()
    before = signal.getsignal(signal.SIGTERM)
    with SignalStop(stop):
        signal.raise_signal(signal.SIGTERM)  # handled here: no exception, a request
        assert stop.reason == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is before


def test_install_again_takes_the_signals_back_and_exit_restores_the_originals():
    """Creating a SparkContext replaces the SIGINT handler; install() puts ours back, and
    leaving gives back what was there before, not what replaced ours meanwhile."""
    stop = StopRequest()
    original = signal.getsignal(signal.SIGINT)

    def spark_like(signum, frame):
        raise KeyboardInterrupt

    with SignalStop(stop) as signals:
        signal.signal(signal.SIGINT, spark_like)
        signals.install()
        signal.raise_signal(signal.SIGINT)
        assert stop.reason == "SIGINT"
    assert signal.getsignal(signal.SIGINT) is original
