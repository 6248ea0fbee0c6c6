"""Real parts for the Spark tests: hub processes on 127.0.0.1 (the `hub` fixture is
tests/conftest.py's) and one local[2] session.

A Spark session costs 10-15 s to start here, so every Spark test of this directory
shares one (session-scoped, started on first use).
"""

import pytest

from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.spark import local_session

# Small ledgers and a quick collector, so garbage collection is seen within a test.
GC_CONF = """
[log]
max_ledger_entries = 4
gc_interval_s = 0.2
"""


@pytest.fixture(scope="module")
def gc_hub(tmp_path_factory):
    """A hub that rolls ledgers every 4 entries and collects 5 times a second."""
    directory = tmp_path_factory.mktemp("gc-hub")
    conf = directory / "hub.conf"
    conf.write_text(GC_CONF)
    with HubProcess(directory / "data", 0, "--conf", str(conf)) as process:
        yield process


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for every Spark test, with the hedwig sources registered."""
    from hedwig.spark import register

    session = local_session(
        "hedwig-tests", **{"spark.sql.session.timeZone": "UTC", "spark.driver.memory": "1g"}
    )
    register(session)
    yield session
    session.stop()
