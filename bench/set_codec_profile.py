"""What the message-set codec runs per operation, counted exactly: the parts of the
publish and receive paths the profile scripts do not reach (sets with properties, the
hub's check of a batch, the general decoder).

    .venv/bin/python bench/set_codec_profile.py [--no-save]

Bytecodes per call (sys.settrace with opcode events: exact, the same on a busy machine
as on an idle one) of encode_message_set, validate_published_set and decode_entry, for
sets of 3 messages: plain, and with bytes-valued properties (the sets of every publisher
before typed properties and keys), and, where the checkout has them, with typed
properties and keys. Written to run in checkouts from before keys too (bench/
before_after.py runs it in both): its figures are those both have, and the new kinds
where the code measured has them. Prints JSON; writes bench/results/set_codec_profile.json.
"""

import argparse
import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bytecodes import Counts
from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.protocol.compression import validate_published_set
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.messageset import encode_message_set

RESULTS = RESULTS_DIR / "set_codec_profile.json"
CALLS = 200
PAYLOADS = [b"x" * 100] * 3
BYTES_PROPERTIES = [{"color": b"red", "region": b"eu-west-1"}] * 3
HAS_KEYS = "keys" in inspect.signature(encode_message_set).parameters


def counted(operation) -> int:
    operation()  # (warm: first-call work is not the path)
    counts = Counts()
    with counts:
        for _ in range(CALLS):
            operation()
    return counts.report(CALLS)["bytecodes"]


def profile(kind: str, encode) -> dict:
    message_set = encode()
    entry = encode_entry_header(1, 3, 0, b"here", 1) + message_set
    return {
        f"{kind}_encode_bytecodes": counted(encode),
        f"{kind}_validate_bytecodes": counted(
            lambda: validate_published_set(message_set, 0, 1 << 20, 1 << 24)
        ),
        f"{kind}_decode_entry_bytecodes": counted(lambda: decode_entry("t", entry)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    report = report_start("set_codec_profile", argv, payload_bytes=100, messages_per_set=3)
    figures = {}
    figures.update(profile("plain", lambda: encode_message_set(PAYLOADS)))
    figures.update(profile("plain_none_properties", lambda: encode_message_set(PAYLOADS, [None] * 3)))
    figures.update(profile("bytes_properties", lambda: encode_message_set(PAYLOADS, BYTES_PROPERTIES)))
    if HAS_KEYS:
        typed = [{"color": "red", "n": 150}] * 3
        figures.update(profile("typed_properties", lambda: encode_message_set(PAYLOADS, typed)))
        figures.update(profile("keys", lambda: encode_message_set(PAYLOADS, None, [b"k1", b"k2", b"k3"])))
    report["figures"] = figures
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
