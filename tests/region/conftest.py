"""Fixtures of the region tests."""

import pytest


@pytest.fixture
def hubs():
    """A list the test appends the RegionHubs it starts to; each is stopped at the end."""
    started = []
    yield started
    for hub in started:
        hub.stop()
