"""The hub of the auth tests: a real hub process with [auth] on, the users of
tests/auth/peers.py, one per test module (it overrides the plain `hub` of tests/)."""

import pytest

from hedwig.testing.hubprocess import HubProcess
from tests.auth.peers import write_conf, write_users


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("auth-hub")
    conf = write_conf(directory, write_users(directory / "users.json"))
    with HubProcess(directory / "data", 0, "--conf", conf) as process:
        yield process
