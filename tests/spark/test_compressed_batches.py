"""The Spark source's record batch builder on compressed entries, without a session: a
compressed entry gives the rows its plain form gives, whole or from inside it, and a
damaged one is CorruptEntry naming the topic and seq-id, as a damaged plain one is."""

import pytest

from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.protocol.compression import CODECS_BY_NAME, compress_message_set
from hedwig.spark.batches import CorruptEntry, RecordBatchBuilder

PAYLOADS = [b'{"level":"info","n":%d,"msg":"request completed"}' % n for n in range(20)]
PROPERTIES = [{"host": b"web-%d" % (n % 2)} if n % 3 == 0 else None for n in range(20)]


def entry(message_set: bytes) -> bytes:
    return encode_entry_header(5, 20, 1_700_000_000_000_000, b"eu", 5) + message_set


@pytest.mark.parametrize("codec", sorted(CODECS_BY_NAME))
@pytest.mark.parametrize(("start", "stop"), [(0, 20), (7, 13)])
def test_a_compressed_entry_builds_the_rows_of_its_plain_form(codec, start, stop):
    plain = encode_message_set(PAYLOADS, PROPERTIES)
    batches = []
    for message_set in (plain, compress_message_set(plain, codec)):
        builder = RecordBatchBuilder("t")
        assert builder.add(start, stop, entry(message_set)) == stop - start
        batches.append(builder.build())
    assert batches[0].equals(batches[1])
    assert batches[1].column("payload").to_pylist() == PAYLOADS[start:stop]
    assert batches[1].column("seq").to_pylist() == list(range(5 + start, 5 + stop))


def test_a_damaged_compressed_entry_is_corrupt_entry():
    packed = bytearray(entry(compress_message_set(encode_message_set(PAYLOADS), "zstd")))
    packed[-8:] = b"\xff" * 8  # the end of the zstd frame
    with pytest.raises(CorruptEntry, match=r"topic t, entry at seq 5: .*zstd"):
        RecordBatchBuilder("t").add(0, 20, memoryview(bytes(packed)))
