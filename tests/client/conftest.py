import pytest

from tests.client.hubprocess import HubProcess


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """One hub process shared by a module's tests (each test uses its own topics)."""
    with HubProcess(tmp_path_factory.mktemp("hub")) as process:
        yield process


@pytest.fixture
def own_hub(tmp_path):
    """A hub process of the test's own, to kill and restart."""
    process = HubProcess(tmp_path / "data")
    yield process
    process.stop()
