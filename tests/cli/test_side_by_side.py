"""Hubs side by side on one host, as an operator starts them: each with only its own
--port, the docs' two-hub region commands as written, and the commands pointed at the
wrong one of a hub's ports (its HTTP listener for the protocol, its protocol port for
`hedwig top`): one line at once, never a hang or a traceback."""

import json
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from hedwig.testing.hubprocess import HubProcess, free_port, hub_environment

ROOT = Path(__file__).resolve().parents[2]
# How long a command pointed at the wrong port may take before the test calls it a hang:
# the clients' connect timeout (5 s) with room for a loaded machine, well under the 30 s
# request timeout a command used to wait.
NO_HANG_S = 20


def hedwig(*args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "hedwig", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=hub_environment(),
        cwd=ROOT,
    )


def free_ports(*offsets: int) -> int:
    """A base port such that base + each offset is free on 127.0.0.1 now."""
    for _ in range(200):
        base = free_port()
        if base + max(offsets) > 65535:
            continue
        taken = []
        try:
            for offset in offsets:
                sock = socket.socket()
                taken.append(sock)
                sock.bind(("127.0.0.1", base + offset))
            return base
        except OSError:
            continue
        finally:
            for sock in taken:
                sock.close()
    raise RuntimeError("no run of free ports found")


def api_status(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=10) as response:
        return json.loads(response.read())


def test_two_hubs_that_differ_only_in_their_port_both_start_each_with_its_status_page(tmp_path):
    first_port, second_port = free_ports(0, 1), free_ports(0, 1)
    first = HubProcess(tmp_path / "one", first_port, http="auto")
    second = HubProcess(tmp_path / "two", second_port, http="auto")
    with first, second:
        assert first.running and second.running
        # [http] port auto: each hub's HTTP listener is its port + 1, said in its log.
        assert first.http_port == first_port + 1 and second.http_port == second_port + 1
        assert api_status(first_port + 1)["hub"]["name"] == first.address
        assert api_status(second_port + 1)["hub"]["name"] == second.address


def test_the_help_says_how_the_http_port_is_chosen():
    out = hedwig("hub", "--help").stdout
    assert re.search(r"--http-port PORT.*auto.*hub's port \+\s*1", " ".join(out.split()))


def test_a_taken_http_port_is_one_line_naming_the_setting_and_the_way_out(tmp_path):
    port = free_ports(0, 1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 1))
        taken.listen()
        hub = HubProcess(tmp_path / "d", port, http="auto")
        try:
            hub.start()
        except RuntimeError:
            pass
        hub.stop()
    last = hub.output().strip().splitlines()[-1]
    assert f"127.0.0.1:{port + 1}" in last and "[http] port auto: the hub's port + 1" in last, last
    assert "--http-port" in last, last


class AsWritten(HubProcess):
    """A hub started by its launcher's command line alone (no option added)."""

    def command(self) -> list:
        return list(self.launcher)


def test_the_docs_two_hub_region_commands_work_as_written_on_one_machine(zookeeper, tmp_path):
    """docs/operations.md's two `hedwig hub ... --port 4080` / `--port 4090` lines, run as
    they are (the ZooKeeper servers and the ports moved to free ones, nothing added)."""
    text = (ROOT / "docs" / "operations.md").read_text()
    line = r"^    (hedwig hub --conf conf/region\.conf --zookeeper \S+ --port {})$"
    commands = re.findall(line.format(4080), text, re.M) + re.findall(line.format(4090), text, re.M)
    assert len(commands) == 2, commands
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "region.conf").write_text(
        f"[hub]\ndata_dir = shared\n[zookeeper]\nroot = /docs-{free_port()}\nsession_timeout_ms = 2000\n"
    )
    base = free_ports(0, 1, 10, 11)
    hubs = []
    for command in commands:
        words = command.split()[2:]  # (after `hedwig hub`)
        words[words.index("--zookeeper") + 1] = zookeeper.address
        port = int(words[words.index("--port") + 1]) - 4080 + base
        words[words.index("--port") + 1] = str(port)
        launcher = [sys.executable, "-m", "hedwig", "hub", *words]
        hubs.append(AsWritten(tmp_path, port, launcher=launcher, cwd=tmp_path, http="auto"))
    try:
        for hub in hubs:
            hub.start()
        listed = json.loads(hedwig("--hub", hubs[0].address, "hubs", "--json").stdout)
        assert sorted(row["hub"] for row in listed) == sorted(hub.address for hub in hubs)
        assert [hub.http_port for hub in hubs] == [base + 1, base + 11]
    finally:
        for hub in hubs:
            hub.stop()


def test_the_command_pointed_at_a_hubs_http_port_says_so_at_once(tmp_path):
    with HubProcess(tmp_path / "d", http=True) as hub:
        result = hedwig("--hub", f"127.0.0.1:{hub.http_port}", "topics", timeout=NO_HANG_S)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"127.0.0.1:{hub.http_port} is the HTTP port of hedwig hub {hub.address}" in line, line
    assert f"use --hub {hub.address}" in line, line


def test_the_command_pointed_at_a_port_that_never_answers_gives_up_within_its_connect_timeout():
    with socket.socket() as silent:  # accepts (the kernel's backlog), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        result = hedwig("--hub", f"127.0.0.1:{port}", "topics", timeout=NO_HANG_S)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "COULD_NOT_CONNECT" in line and "no answer to HELLO in 5 s (is it a hedwig hub's port?)" in line


def test_top_follows_hub_like_every_other_command(tmp_path):
    with HubProcess(tmp_path / "d", http=True) as hub:  # its HTTP listener on some free port
        before = hedwig("--hub", hub.address, "top", "--count", "1")
        after = hedwig("top", "--hub", hub.address, "--count", "1")
    for result in (before, after):
        assert result.returncode == 0, result.stderr
        assert f"hedwig {hub.address}  region standalone" in result.stdout


def test_top_pointed_at_a_hub_port_is_one_line_not_a_traceback(tmp_path):
    with HubProcess(tmp_path / "d") as hub:
        result = hedwig("top", "--url", f"http://{hub.address}/", "--count", "1")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"hedwig top: http://{hub.address}/api/status does not answer in HTTP"), line
