"""With [auth] on, the HTTP listener answers admins only (a real hub process, the auth
tests' users file): Basic credentials checked by the hub's authenticator."""

import base64
import urllib.error
import urllib.request

import pytest

from hedwig.testing.hubprocess import HubProcess
from tests.auth.peers import USERS, write_conf, write_users


def get(url: str, user: str | None = None, password: str | None = None):
    request = urllib.request.Request(url)
    if user is not None:
        secret = USERS[user][0] if password is None else password
        token = base64.b64encode(f"{user}:{secret}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)


@pytest.fixture(scope="module")
def auth_hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("http-auth-hub")
    conf = write_conf(directory, write_users(directory / "users.json"))
    with HubProcess(directory / "data", 0, "--conf", conf, http=True) as process:
        yield process


@pytest.mark.parametrize("path", ["", "metrics", "api/status"])
def test_an_admin_is_served(auth_hub, path):
    assert get(auth_hub.http_url + path, "root")[0] == 200


@pytest.mark.parametrize(
    ("user", "password"), [(None, None), ("alice", None), ("root", "wrong"), ("nobody", "x")]
)
def test_anyone_else_is_refused_with_a_challenge(auth_hub, user, password):
    status, headers = get(auth_hub.http_url + "metrics", user, password)
    assert status == 401
    assert headers.get("WWW-Authenticate", "").startswith('Basic realm="hedwig"')
