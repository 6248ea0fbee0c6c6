"""Takeover without losing an acknowledged message: the owner of topics SIGKILLed under
load, and an owner SIGSTOPped past its session timeout then woken (SIGCONT): it
acknowledges nothing more, and nothing is lost or duplicated."""

from tests.cluster.takeover_scenarios import pause_an_owner_past_its_session, sigkill_an_owner_under_load

TOPICS = [f"kill-{i}" for i in range(4)]


def test_sigkill_of_an_owner_under_load_loses_no_acknowledged_message(region):
    sigkill_an_owner_under_load(region(2, session_timeout_ms=2000), TOPICS)


def test_an_owner_paused_past_its_session_acknowledges_nothing_more_when_it_wakes(region):
    pause_an_owner_past_its_session(region(2, session_timeout_ms=1000))
