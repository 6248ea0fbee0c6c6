"""Configuration and start-up errors as a user meets them: `hedwig hub` and `twistd -n
hedwig` in their own processes. A configuration that cannot work is one line naming the
file, the section, the key and the value (exit status 2, no traceback); a hub that cannot
start ends with the cause as its last line (exit status 1), never "Main loop terminated."."""

import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.testing.hubprocess import hub_environment

TWISTD = str(Path(sys.executable).parent / "twistd")
HEDWIG_HUB = [sys.executable, "-m", "hedwig", "hub"]
TWISTD_HEDWIG = [TWISTD, "-n", "hedwig"]
LAUNCHERS = {"hedwig hub": HEDWIG_HUB, "twistd hedwig": TWISTD_HEDWIG}


def run(command, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, env=hub_environment())


def one_line(result: subprocess.CompletedProcess, launcher: str) -> str:
    """The single line a refused configuration prints: exit status 2, nothing else."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{launcher}: "), lines
    return lines[0]


CONF_ERRORS = [
    # (file text, what the one line must say after the file's name)
    ("port = 4090\n", ", line 1: 'port = 4090' comes before any [section] header"),
    ("[hub]\nprot = 4090\n", ": [hub] prot = 4090: unknown setting (did you mean port?)"),
    ("[hub]\nport = forty\n", ": [hub] port = forty: expected an integer"),
    ("[hub]\nport = 99999\n", ": [hub] port = 99999: expected a port number from 0 to 65535"),
    ("[ledger]\nfsync = sometimes\n", ": [ledger] fsync = 'sometimes': expected never, interval or always"),
    ("[tls]\nenabled = maybe\n", ": [tls] enabled = maybe: expected true or false"),
    ("[hub]\nport = 1\nport = 2\n", ", line 3: [hub] port is set twice"),
    ("[hubs]\nport = 1\n", ": unknown section [hubs] (did you mean hub?)"),
    # A setting the hub's parts would refuse is refused here, before anything starts (the
    # cache's used to fail the start and leave the process hanging, even on SIGTERM) ...
    ("[cache]\ncache_bytes = 0\n", ": [cache] cache_bytes = 0: expected at least 1 byte"),
    ("[cache]\ncache_bytes = -100\n", ": [cache] cache_bytes = -100: expected 0 or more bytes"),
    ("[ledger]\nmax_open_ledgers = 0\n", ": [ledger] max_open_ledgers = 0: expected at least 1"),
    # ... and no time is negative.
    ("[log]\ngc_interval_s = -5\n", ": [log] gc_interval_s = -5: expected 0 or more seconds"),
    ("[log]\nmax_ledger_age_s = -1\n", ": [log] max_ledger_age_s = -1: expected 0 or more seconds"),
    (
        "[delivery]\nconsume_flush_ms = -1\n",
        ": [delivery] consume_flush_ms = -1: expected 0 or more milliseconds",
    ),
]


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize(
    "text, said", CONF_ERRORS, ids=[said.split(":")[1].strip() for _, said in CONF_ERRORS]
)
def test_a_conf_file_that_cannot_work_is_one_line_naming_file_section_key_and_value(
    tmp_path, launcher, text, said
):
    conf = tmp_path / "hub.conf"
    conf.write_text(text)
    result = run([*LAUNCHERS[launcher], "--conf", str(conf), "--data-dir", str(tmp_path / "d")], tmp_path)
    assert one_line(result, launcher).startswith(f"{launcher}: {conf}{said}")
    assert not (tmp_path / "d").exists(), "nothing is opened before the configuration is whole"


@pytest.mark.parametrize("option", ["--port", "--http-port"])
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_port_out_of_range_on_the_command_line_is_one_line(tmp_path, launcher, option):
    result = run([*LAUNCHERS[launcher], option, "99999", "--data-dir", str(tmp_path / "d")], tmp_path)
    assert one_line(result, launcher) == (
        f"{launcher}: {option} 99999: expected a port number from 0 to 65535 (0: a free one)"
    )


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_hub_that_cannot_listen_ends_with_the_cause_as_its_last_line(tmp_path, launcher):
    """The port is taken: the hub logs, shuts down, and the last line is still why."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(
            [
                *LAUNCHERS[launcher],
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / "d"),
            ],
            tmp_path,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{launcher}: could not start: "), result.stdout + result.stderr
    assert f"127.0.0.1:{port}" in last and "address already in use" in last.lower(), last
    # It never served: the data directory it made is gone again, and its shutdown names
    # the address it was to listen on (it said "hedwig hub  shutting down", no name).
    assert not (tmp_path / "d").exists()
    assert (
        f"hedwig hub for 127.0.0.1:{port} (it never listened) shutting down" in result.stdout + result.stderr
    )


def test_paths_in_a_conf_file_are_relative_to_the_file(tmp_path):
    """data_dir = data in /x/hub.conf is /x/data, wherever the hub is started from; the
    command line's --data-dir stays relative to the working directory."""
    from hedwig.testing.hubprocess import HubProcess

    confs = tmp_path / "confs"
    confs.mkdir()
    (confs / "hub.conf").write_text("[hub]\ndata_dir = data/here\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    class ConfHub(HubProcess):
        def command(self):  # no --data-dir: the file's own
            return [
                *HEDWIG_HUB,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--http-port",
                "0",
                "--conf",
                "../confs/hub.conf",
            ]

    from hedwig.client import Client

    with ConfHub(tmp_path / "unused", cwd=elsewhere, env=hub_environment()) as hub:
        with Client(hub.address) as client:
            assert client.publish("relative", b"x") == 1
        assert f"serving {confs / 'data' / 'here'}" in hub.output()
    assert (confs / "data" / "here" / "metadata.sqlite3").is_file()
    assert list(elsewhere.iterdir()) == []
