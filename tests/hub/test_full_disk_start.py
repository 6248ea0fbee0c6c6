"""A hub started on a full disk serves what it holds: reads and existing subscriptions
work, publishes (and anything else that must write) are refused STORAGE_FULL, and once
space returns publishes go on where the topic ended. A real hub process on a small tmpfs
(mounting needs root: skipped otherwise)."""

import os
import subprocess

import pytest

from hedwig.client import Client
from hedwig.protocol.errors import StorageFull
from hedwig.testing.hubprocess import HubProcess


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path) -> None:
    """Write zeros to `path` until the file system is full."""
    chunk = bytes(64 << 10)
    with open(path, "wb") as f:
        while True:
            try:
                f.write(chunk)
                f.flush()
            except OSError:
                break
    assert os.statvfs(os.path.dirname(path)).f_bavail == 0


def payloads(messages):
    return [m.payload for m in messages]


def test_a_hub_started_on_a_full_disk_serves_reads_and_refuses_publishes(small_disk):
    data_dir = small_disk / "data"
    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert client.publish_many("t", [b"a", b"b", b"c"]) == [1, 2, 3]
        with client.subscribe("t", "reader", start="earliest") as subscription:
            assert subscription.receive(timeout=30).payload == b"a"
            subscription.ack(1)
    filler = small_disk / "filler"
    fill(filler)

    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert payloads(client.read("t", 1)) == [b"a", b"b", b"c"]
        with pytest.raises(StorageFull):
            client.publish("t", b"d")
        with pytest.raises(StorageFull):
            client.publish("new-topic", b"x")
        with client.subscribe("t", "reader") as subscription:
            assert subscription.receive(timeout=30).payload == b"b"
        with pytest.raises(StorageFull):  # a new subscription must be recorded: no room
            client.subscribe("t", "newcomer", start="earliest")

        filler.unlink()  # space returns
        assert client.publish("t", b"d") == 4
        assert client.publish("new-topic", b"x") == 1
        with client.subscribe("t", "newcomer", start="earliest") as subscription:
            assert [subscription.receive(timeout=30).payload for _ in range(4)] == [b"a", b"b", b"c", b"d"]
        log = process.output()
    assert "Traceback" not in log, log
    assert "publishes refused until space returns" in log, log

    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert payloads(client.read("t", 1)) == [b"a", b"b", b"c", b"d"]
        assert client.publish("t", b"e") == 5
