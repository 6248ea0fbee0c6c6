"""The HTTP listener of a real hub process, over real sockets on 127.0.0.1."""

import json
import socket
import ssl
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hedwig.client import Client
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import HubProcess


def fetch(url: str, context=None) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=10, context=context) as response:
        return response.status, response.headers.get("content-type"), response.read()


@pytest.fixture(scope="module")
def http_hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("http-hub"), http=True) as process:
        yield process


def test_metrics_count_what_was_published(http_hub):
    with Client(http_hub.address) as client:
        client.publish_many("metered", [b"m"] * 25)
        client.publish_many("metered", [b"m"] * 5)
    status, content_type, body = fetch(http_hub.http_url + "metrics")
    assert status == 200 and content_type.startswith("text/plain; version=")
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }
    assert values[("hedwig_messages_published_total", (("topic", "metered"),))] == 30
    assert values[("hedwig_message_sets_published_total", (("topic", "metered"),))] == 2
    assert values[("hedwig_connections_open", ())] == 0


def test_api_status_and_the_page_show_the_topic(http_hub):
    with Client(http_hub.address) as client:
        client.publish_many("shown", [b"a", b"b"])
    _status, content_type, body = fetch(http_hub.http_url + "api/status")
    assert content_type.startswith("application/json")
    status = json.loads(body)
    row = next(r for r in status["topics"] if r["topic"] == "shown")
    assert row["messages"] == 2 and row["last_seq"] == 2
    assert status["hub"]["name"] == http_hub.address
    _status, content_type, page = fetch(http_hub.http_url)
    assert content_type.startswith("text/html") and b'"topic": "shown"' in page


@pytest.mark.parametrize("path", ["api", "api/"])
def test_api_lists_its_parts_each_of_which_answers(http_hub, path):
    """/api/, which the README names, is an index of the JSON parts (not a 404)."""
    status, content_type, body = fetch(http_hub.http_url + path)
    assert status == 200 and content_type.startswith("application/json")
    parts = json.loads(body)["parts"]
    assert parts["status"] == "/api/status" and "subscriptions" in parts
    for part_path in parts.values():
        assert fetch(http_hub.http_url + part_path.lstrip("/"))[0] == 200


def test_a_request_held_half_sent_blocks_no_one(http_hub):
    """A peer that sends half a request and waits holds its own connection only: the
    hub answers HTTP and protocol requests meanwhile."""
    with socket.create_connection(("127.0.0.1", http_hub.http_port)) as stalled:
        stalled.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert fetch(http_hub.http_url + "api/topics")[0] == 200
        with Client(http_hub.address) as client:
            assert client.publish_many("meanwhile", [b"x"])
        stalled.sendall(b"1\r\n\r\n")  # finished at last, it is answered too
        assert stalled.recv(64).startswith(b"HTTP/1.1 200")


def test_a_body_is_refused_with_413(http_hub):
    request = urllib.request.Request(http_hub.http_url + "metrics", data=b"x" * 100_000, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 413
    assert fetch(http_hub.http_url + "metrics")[0] == 200


def test_http_port_0_turns_the_listener_off(tmp_path):
    hub = HubProcess(tmp_path / "data")  # (runs with --http-port 0)
    with hub, Client(hub.address) as client:
        client.publish_many("t", [b"x"])
    log = hub.output()
    assert "hedwig hub" in log and "stopped" in log  # the whole log, to its last line
    assert "HTTP on" not in log


def test_with_tls_the_listener_speaks_https(tmp_path):
    ca = Authority(tmp_path / "ca")
    cert, key = ca.issue("hub.test", ips=("127.0.0.1",))
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf), tls=True, http=True) as hub:
        assert f"HTTP on https://127.0.0.1:{hub.http_port}/" in hub.output()
        context = ssl.create_default_context(cafile=str(ca.cert_file))
        status, _type, body = fetch(f"https://127.0.0.1:{hub.http_port}/api/status", context)
        assert status == 200 and json.loads(body)["hub"]["name"] == hub.address
        with pytest.raises((urllib.error.URLError, ConnectionError, http_client_errors())):
            fetch(f"http://127.0.0.1:{hub.http_port}/api/status")


def http_client_errors():
    import http.client

    return http.client.HTTPException
