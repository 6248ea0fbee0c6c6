"""`hedwig publish --compression` as a user types it, against a real hub process: each
codec's sets are stored compressed and `hedwig subscribe` prints the plain lines; a
codec whose library is missing is an error naming the extra."""

import json

import pytest

from hedwig.client import Client
from hedwig.protocol.compression import CODECS_BY_NAME, set_codec
from hedwig.protocol.entry import decode_entry_header
from hedwig.testing.hubprocess import hub_environment
from tests.cli.test_cli import hedwig, lines

LOG = [json.dumps({"level": "error", "service": "search", "n": n, "msg": "timeout"}) for n in range(300)]


@pytest.mark.parametrize("codec", sorted(CODECS_BY_NAME))
def test_publish_compression_stores_compressed_and_subscribe_prints_plain(hub, codec):
    topic = f"cli-compressed-{codec}"
    stdin = "".join(f"{line}\n" for line in LOG).encode()
    assert lines(hedwig("publish", "--compression", codec, topic, stdin=stdin, hub=hub)) == [
        f"published 300 messages to {topic}: seq-ids 1..300"
    ]
    with Client(hub.address) as client:
        _, _, entry = client.read_range(topic, 1).entries[0]
    assert set_codec(entry, decode_entry_header(entry).body_offset) == CODECS_BY_NAME[codec]
    assert lines(hedwig("subscribe", topic, "me", "--from", "earliest", "--count", "300", hub=hub)) == LOG


def test_publish_with_a_missing_codec_library_names_the_extra(hub, tmp_path):
    missing = tmp_path / "without-zstandard"
    (missing / "zstandard").mkdir(parents=True)
    # A package that fails to import as an absent one does.
    (missing / "zstandard" / "__init__.py").write_text("raise ImportError(\"No module named 'zstandard'\")\n")
    env = hub_environment()
    env["PYTHONPATH"] = f"{missing}:{env.get('PYTHONPATH', '')}"
    result = hedwig("publish", "--compression", "zstd", "cli-no-zstd", "x", hub=hub, env=env)
    assert result.returncode != 0
    assert "make extras EXTRAS=compression" in result.stderr.decode()
    with Client(hub.address) as client:
        assert "cli-no-zstd" not in client.topics()
