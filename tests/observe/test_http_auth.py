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


def test_slow_connections_without_credentials_cannot_keep_an_admin_out(auth_hub):
    """Issue 28, finding 7: 64 connections without credentials, each sending a header
    line now and then, held every slot for good, and an admin's scrape was refused. The
    admin is served at once, and the slow ones are cut off at their headers' deadline."""
    import socket

    host, port = auth_hub.http_url.split("//")[1].rstrip("/").rsplit(":", 1)
    slow = []
    for n in range(64):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(f"GET /metrics HTTP/1.1\r\nHost: hub\r\nX-Slow-{n}: 1\r\n".encode())
        slow.append(sock)
    assert get(auth_hub.http_url + "metrics", "root")[0] == 200  # in at once, and answered
    for sock in slow:  # each is answered 408, or pushed out (reset), and never left open
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except ConnectionResetError:
            received = b""
        assert received == b"" or received.startswith(b"HTTP/1.1 408 "), received
        sock.close()


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_an_admins_post_or_delete_is_405_without_a_traceback(auth_hub, method):
    request = urllib.request.Request(auth_hub.http_url + "metrics", method=method, data=b"")
    token = base64.b64encode(f"root:{USERS['root'][0]}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=10)
    assert answered.value.code == 405 and answered.value.headers["Allow"] == "GET, HEAD"
    assert get(auth_hub.http_url + "metrics", "root")[0] == 200  # (a later line in the log)
    assert " critical " not in auth_hub.output()
