"""A raw Kafka peer for tests of what no client library sends: requests encoded with kio
(Kafka's own schemas), record batches built by kafka-python's record builder, and bytes
as they come, sent over a plain socket to a hub's Kafka port."""

import io
import socket
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from hedwig.kafka.envelope import build

TIMEOUT_S = 30.0


def record_batch(records, codec=0, producer_id=-1, base_sequence=-1):
    """A record batch v2 of (key, value, headers) records, built by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers) in enumerate(records):
        builder.append(offset, timestamp=None, key=key, value=value, headers=headers)
    return bytes(builder.build())


class KafkaPeer:
    def __init__(self, port, timeout=TIMEOUT_S, source="127.0.0.1"):
        """`source`: the address it connects from (another 127.0.0.x is another peer to
        the hub's once-per-peer client error lines)."""
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
        self.correlation_id = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def frame(self, api_key, version, body: bytes, correlation_id=None, flexible=None) -> bytes:
        """A request frame: header v1 (v2 when flexible: an empty tagged-field section)."""
        if correlation_id is None:
            self.correlation_id += 1
            correlation_id = self.correlation_id
        header = struct.pack("!hhih", api_key, version, correlation_id, 5) + b"tests"
        if flexible:
            header += b"\0"
        payload = header + body
        return struct.pack("!i", len(payload)) + payload

    def request(self, api_key, version, **fields) -> int:
        """Send kio's request entity of this API version made of `fields` (nested entities
        as dicts, durations in ms); its correlation id."""
        request_type = load_request_schema(api_key, version)
        out = io.BytesIO()
        entity_writer(request_type)(out, build(request_type, fields))
        self.sock.sendall(self.frame(api_key, version, out.getvalue(), flexible=request_type.__flexible__))
        return self.correlation_id

    def fetch(self, topic, partition, offset, max_bytes=1 << 20, max_wait=0, min_bytes=0) -> int:
        """Send a Fetch v12 of one partition from `offset`; its correlation id."""
        return self.request(
            1,
            12,
            max_wait=max_wait,
            min_bytes=min_bytes,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}
                    ],
                }
            ],
        )

    def read_frame(self) -> bytes:
        """The next response frame (after its size); b"" when the hub closed the connection."""
        head = self._read(4)
        if len(head) < 4:
            return b""
        (size,) = struct.unpack("!i", head)
        return self._read(size)

    def response(self, api_key, version, header_v0=False):
        """(correlation id, kio's response entity) of the next response."""
        frame = self.read_frame()
        assert frame, "the hub closed the connection"
        (correlation_id,) = struct.unpack_from("!i", frame)
        response_type = load_response_schema(api_key, version)
        offset = 4 + (1 if response_type.__flexible__ and not header_v0 else 0)
        body, _size = entity_reader(response_type)(frame, offset)
        return correlation_id, body

    def closed_by_hub(self) -> bool:
        """Whether the hub closed the connection (read until it does, or TIMEOUT_S)."""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _read(self, count) -> bytes:
        chunks = []
        while count:
            chunk = self.sock.recv(count)
            if not chunk:
                break
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)
