"""A damaged topic serves what remains, against real hub processes on real files.

A damaged entry (its header overwritten, or its index record naming a garbage page) or a
missing ledger: READ_RANGE across the damage returns what precedes it, READ_RANGE at it
is refused naming the topic and seq-ids (never a server path), a subscriber from the
earliest gets every message before the damage and then EntryUnreadable (the
ENTRY_UNREADABLE event) instead of silence, and the hub's log names the ledger and where."""

import shutil

import pytest

from hedwig.client import Client
from hedwig.ledger.layout import RECORD, RECORD_BYTES, data_page_name, index_page_name
from hedwig.protocol.errors import EntryUnreadable, StorageError
from hedwig.testing.hubprocess import HubProcess


def ledger_dirs(data_dir):
    return sorted(p for p in (data_dir / "ledgers").iterdir() if p.is_dir())


def holding_entries(data_dir):
    """The ledger directories whose first index page records entries, in id order."""
    return [
        p
        for p in ledger_dirs(data_dir)
        if (p / index_page_name(0)).exists() and (p / index_page_name(0)).stat().st_size >= RECORD_BYTES
    ]


def damage_entry(ledger, entry_id: int, how: str) -> None:
    index = ledger / index_page_name(0)
    raw = bytearray(index.read_bytes())
    page, offset, length, check, time_us = RECORD.unpack_from(raw, entry_id * RECORD_BYTES)
    if how == "header":
        with open(ledger / data_page_name(page), "r+b") as f:
            f.seek(offset)
            f.write(bytes(20))
    else:  # a garbage page number, as a scribbled index would hold
        RECORD.pack_into(raw, entry_id * RECORD_BYTES, 4294967295, offset, length, check, time_us)
        index.write_bytes(bytes(raw))


def seqs(reply):
    return [entry for entry in reply.entries]


def payloads(client, topic, from_seq):
    return [m.payload for m in client.read(topic, from_seq)]


@pytest.mark.parametrize("how", ["header", "page number"])
def test_a_damaged_entry_stops_reads_and_ends_subscriptions_with_an_event(tmp_path, how):
    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as process, Client(process.address) as client:
        for i in range(1, 6):
            assert client.publish("t", b"m%d" % i) == i
    [ledger] = holding_entries(data_dir)
    damage_entry(ledger, 2, how)  # seq-id 3

    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert [m.payload for m in client.read("t", 1, 2)] == [b"m1", b"m2"]
        reply = client.read_range("t", 1, 5)
        assert len(reply.entries) == 2  # seq-ids 1 and 2: what precedes the damage
        with pytest.raises(StorageError) as refused:
            client.read_range("t", 3, 5)
        assert "topic t: seq-id 3 cannot be read" in refused.value.message
        assert str(tmp_path) not in refused.value.message
        assert [m.payload for m in client.read("t", 4, 5)] == [b"m4", b"m5"]

        subscription = client.subscribe("t", "reader", start="earliest")
        assert [subscription.receive(timeout=30).payload for _ in range(2)] == [b"m1", b"m2"]
        with pytest.raises(EntryUnreadable) as ended:
            subscription.receive(timeout=30)
        assert ended.value.seq == 3
        assert str(tmp_path) not in str(ended.value)
    log = process.output()  # (once the hub has stopped: every line its log reader took)
    ledger_id = int(ledger.name[1:])
    assert f"ledger {ledger_id} entry 2" in log, log
    assert "Traceback" not in log, log


def test_a_missing_ledger_loses_its_seq_ids_and_serves_the_rest(tmp_path):
    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert client.publish_many("t", [b"a", b"b", b"c"]) == [1, 2, 3]
    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert client.publish_many("t", [b"d", b"e"]) == [4, 5]
    first = holding_entries(data_dir)[0]
    shutil.rmtree(first)

    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert [m.payload for m in client.read("t", 4, 5)] == [b"d", b"e"]
        with pytest.raises(StorageError) as refused:
            client.read_range("t", 1, 5)
        assert "topic t: seq-ids 1..3 cannot be read" in refused.value.message
        assert str(tmp_path) not in refused.value.message
        subscription = client.subscribe("t", "reader", start="earliest")
        with pytest.raises(EntryUnreadable) as ended:
            subscription.receive(timeout=30)
        assert ended.value.seq == 1
        assert client.publish("t", b"f") == 6  # publishes go on after what it had
        log = process.output()
    assert f"ledger {int(first.name[1:])} is missing" in log and "seq-ids 1..3 are lost" in log, log
