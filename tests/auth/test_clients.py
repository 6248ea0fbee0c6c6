"""The blocking, Twisted and asyncio clients and the CLI authenticate, against a real hub process
with [auth] on: the right password serves the user's permissions; a wrong one, or none,
is the typed error AuthenticationFailed; a permission the user lacks is NotAuthorized."""

import os
import subprocess
import sys

import pytest

from hedwig.client.errors import AuthenticationFailed, NotAuthorized
from hedwig.protocol.auth_request import Credentials
from tests.auth.peers import USERS
from tests.client.every_client import Aio, Blocking, Twisted


def credentials(user, password=None):
    return Credentials(user, USERS[user][0] if password is None else password)


@pytest.mark.parametrize("kind", [Blocking, Twisted, Aio], ids=["blocking", "twisted", "asyncio"])
def test_a_client_with_credentials_publishes_and_subscribes_as_its_user(hub, kind):
    topic = f"t.clients-{kind.name}"
    client = kind(hub.address, credentials=credentials("alice"))
    try:
        subscription = client.subscribe(topic, "mine", start="earliest")
        client.call("publish", topic, b"hello")
        assert subscription.receive().payload == b"hello"
        with pytest.raises(NotAuthorized):
            client.call("publish", "x.not-hers", b"no")
    finally:
        client.close()


@pytest.mark.parametrize("kind", [Blocking, Twisted, Aio], ids=["blocking", "twisted", "asyncio"])
def test_a_wrong_password_is_authentication_failed(hub, kind):
    with pytest.raises(AuthenticationFailed):  # (both clients connect as they are made)
        kind(hub.address, credentials=credentials("alice", "wrong"))


def test_credentials_never_show_the_password():
    assert "alice-pw" not in repr(credentials("alice"))


def _hedwig(hub, *args, password=None):
    env = {k: v for k, v in os.environ.items() if k not in ("HEDWIG_PASSWORD", "HEDWIG_USER")}
    if password is not None:
        env["HEDWIG_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hub.address, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_the_cli_authenticates_with_user_and_the_password_from_the_environment(hub):
    done = _hedwig(hub, "--user", "alice", "publish", "t.cli", "one", password="alice-pw")
    assert done.returncode == 0, done.stderr
    refused = _hedwig(hub, "--user", "alice", "publish", "t.cli", "two", password="nope")
    assert refused.returncode == 1 and "AUTHENTICATION_FAILED" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    no_password = _hedwig(hub, "--user", "alice", "publish", "t.cli", "three")
    assert no_password.returncode != 0 and "HEDWIG_PASSWORD" in no_password.stderr
    anonymous = _hedwig(hub, "publish", "t.cli", "four")
    assert anonymous.returncode == 1 and "AUTHENTICATION_FAILED" in anonymous.stderr


@pytest.mark.parametrize("kind", [Blocking, Twisted, Aio], ids=["blocking", "twisted", "asyncio"])
def test_a_user_who_may_publish_but_not_read_publishes_keyed_messages(hub, kind):
    """A keyed publish asks the topic's partition count (DESCRIBE_TOPIC, a read): refused
    to a user who may only publish, it is the topic as named, and the publish goes on."""
    client = kind(hub.address, credentials=credentials("writer"))
    try:
        assert client.call("publish", f"w.keyed-{kind.name}", b"v", key=b"k") == 1
        assert client.call("publish_many", f"w.keyed-{kind.name}", [b"a", b"b"], keys=[b"k", b"j"]) == [2, 3]
    finally:
        client.close()
