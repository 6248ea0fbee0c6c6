"""Shared test settings, and the hub-process fixtures of every area that runs real hubs."""

import pytest
from hypothesis import HealthCheck, settings

from tests.hubprocess import HubProcess

# CI machines have 2 cores shared with Spark and hub processes: judge properties, not speed.
settings.register_profile(
    "hedwig", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("hedwig")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """One hub process shared by a module's tests (each test uses topics of its own)."""
    with HubProcess(tmp_path_factory.mktemp("hub")) as process:
        yield process


@pytest.fixture
def own_hub(tmp_path):
    """A hub process of the test's own, not started yet: to start, kill and restart."""
    process = HubProcess(tmp_path / "data")
    yield process
    process.stop()
