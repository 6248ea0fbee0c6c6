"""What a message selector costs per message: the work delivery adds for a filtered
subscription, beside floors measured in the same run.

    .venv/bin/python bench/selector_bench.py [--messages N] [--no-save]

For each selector, `matches(properties, key)` over N messages of typed properties (and
one case over the bytes-valued properties of an old publisher's set), in a plain Python
loop: ns per message (the best of several runs) and bytecodes per message (exact:
sys.settrace, the same on a busy machine as an idle one). Beside them, in the same run:

- call_floor: the same loop calling a function that returns False (what any Python
  filter per message costs at least);
- hand_written: `properties.get("color") == "red"` as a lambda (the selector
  `color = 'red'` written by hand);
- decode_entry_per_message: decode_entry of a set of 100 such messages, per message
  (what a subscriber pays for each message it receives);
- properties_and_keys_per_message and select_per_message: decoding the properties and
  keys of a set of 100 without Messages, and Selector.select over it (decode and
  evaluate), per message: what the hub would pay per message on delivery;
- the worst a selector can ask within its bounds: LIKE patterns over 64 KiB and 1 MiB
  values made to defeat them, and an OR chain of 300 comparisons (3,186 characters) of
  one property (one set lookup) and of ten properties (300 tests).

Ratios are to floors of the same run. Prints JSON; writes bench/results/selector_bench.json.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bytecodes import Counts
from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.messageset import encode_message_set, properties_and_keys
from hedwig.selector import compile_selector

RESULTS = RESULTS_DIR / "selector_bench.json"
RUNS = 7
COLORS = ["red", "blue", "green", "yellow", "black"]
REGIONS = ["eu-west-1", "us-east-1", "ap-south-1", "eu-central-1", "sa-east-1"]
OR_CHAIN = " OR ".join(f"n = {i}" for i in range(300))  # (3,186 characters, of the 4,096 allowed)
OR_MIXED = " OR ".join(f"p{i % 10} = {i}" for i in range(300))  # (ten properties: no set lookup)
SELECTORS = {
    "equal": "color = 'red'",
    "issue_example": "color = 'red' AND n BETWEEN 100 AND 200",
    "in_list": "region IN ('eu-west-1', 'us-east-1', 'ap-south-1')",
    "like_prefix": "region LIKE 'eu-%'",
    "like_general": "region LIKE 'e_-%-1'",
    "arithmetic": "price * 2 > 100",
    "not_or": "NOT (color = 'red' OR color = 'blue') AND ok",
    "ten_ors": " OR ".join(f"n = {i}" for i in range(10)),
    "key_prefix": "key LIKE 'user-1%'",
    "or_chain_300": OR_CHAIN,
    "or_chain_300_ten_properties": OR_MIXED,
}


def messages(count: int, rng: random.Random) -> list:
    return [
        (
            {
                "color": rng.choice(COLORS),
                "n": rng.randrange(1000),
                "price": rng.random() * 100,
                "region": rng.choice(REGIONS),
                "ok": rng.random() < 0.5,
            },
            b"user-%d" % rng.randrange(10000),
        )
        for _ in range(count)
    ]


def per_message_ns(function, pairs) -> float:
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter_ns()
        for properties, key in pairs:
            function(properties, key)
        best = min(best, (time.perf_counter_ns() - started) / len(pairs))
    return round(best, 1)


def per_message_bytecodes(function, pairs) -> float:
    counts = Counts()
    sample = pairs[:500]
    with counts:
        for properties, key in sample:
            function(properties, key)
    # (the loop's own bytecodes are in the count: the call floor's count has them too)
    return counts.report(len(sample))["bytecodes"]


def timed_per_message(operation, messages_per_call: int) -> float:
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter_ns()
        for _ in range(20):
            operation()
        best = min(best, (time.perf_counter_ns() - started) / (20 * messages_per_call))
    return round(best, 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages per timed loop (20,000)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    report = report_start("selector_bench", argv, messages=args.messages)
    rng = random.Random(30)
    pairs = messages(args.messages, rng)
    figures = {}

    def floor(_properties, _key):
        return False

    figures["call_floor_ns"] = per_message_ns(floor, pairs)
    figures["call_floor_bytecodes"] = per_message_bytecodes(floor, pairs)
    hand_written = lambda properties, _key: properties.get("color") == "red"  # noqa: E731
    figures["hand_written_equal_ns"] = per_message_ns(hand_written, pairs)
    selectors = {}
    for name, text in SELECTORS.items():
        selector = compile_selector(text)
        passed = sum(selector.matches(p, k) for p, k in pairs)
        ns = per_message_ns(selector.matches, pairs)
        selectors[name] = {
            "selector": text if len(text) < 120 else f"{text[:60]}... ({len(text)} characters)",
            "ns": ns,
            "bytecodes": per_message_bytecodes(selector.matches, pairs),
            "passing": round(passed / len(pairs), 3),
            "over_call_floor": round(ns / figures["call_floor_ns"], 2),
        }
    selectors["equal"]["over_hand_written"] = round(
        selectors["equal"]["ns"] / figures["hand_written_equal_ns"], 2
    )
    old_pairs = [({k: str(v).encode() for k, v in p.items()}, key) for p, key in pairs]
    old = compile_selector(SELECTORS["issue_example"].replace("n BETWEEN 100 AND 200", "region LIKE 'eu-%'"))
    selectors["bytes_values"] = {
        "selector": old.text,
        "ns": per_message_ns(old.matches, old_pairs),
        "bytecodes": per_message_bytecodes(old.matches, old_pairs),
        "note": "properties of an old publisher's set: bytes, compared as strings",
    }
    figures["selectors"] = selectors

    batch = pairs[:100]
    message_set = encode_message_set([b"x" * 100] * len(batch), [p for p, _ in batch], [k for _, k in batch])
    entry = encode_entry_header(1, len(batch), 0, b"here", 1) + message_set
    figures["decode_entry_per_message_ns"] = timed_per_message(lambda: decode_entry("t", entry), len(batch))
    figures["properties_and_keys_per_message_ns"] = timed_per_message(
        lambda: properties_and_keys(message_set), len(batch)
    )
    issue = compile_selector(SELECTORS["issue_example"])
    figures["select_per_message_ns"] = timed_per_message(lambda: issue.select(message_set), len(batch))
    figures["issue_example_over_decode_entry"] = round(
        selectors["issue_example"]["ns"] / figures["decode_entry_per_message_ns"], 3
    )
    figures["select_over_decode_entry"] = round(
        figures["select_per_message_ns"] / figures["decode_entry_per_message_ns"], 3
    )

    # The worst LIKE within the bounds, over values made to defeat it: a piece with `_`
    # as long as the parser allows (16), which matches at every place but for its last
    # character, and a literal piece of 254 (found by str.find).
    worst = {
        "underscore_piece_16": "%_" + "a" * 14 + "b%",
        "literal_piece_254": "%" + "a" * 253 + "b%",
    }
    for name, pattern in worst.items():
        hostile = compile_selector(f"v LIKE '{pattern}'")
        for size_name, size in (("64KiB", 65536), ("1MiB", 1 << 20)):
            value = {"v": "a" * size}
            started = time.perf_counter_ns()
            assert hostile.matches(value, None) is False
            figures[f"hostile_like_{name}_{size_name}_us"] = round(
                (time.perf_counter_ns() - started) / 1000, 1
            )
    report["figures"] = figures
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
