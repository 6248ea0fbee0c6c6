"""What compiling a selector costs the hub: the bytes its compiled form holds while it
lives (tracemalloc, after a first compile of the same text so that the interpreter's
interned names are not counted, with the shared LIKE patterns and `re`'s cache emptied
so that its patterns are) and the milliseconds of one compile (the best of `--repeat`),
for issue 41's selector (132 copies of one LIKE pattern with `_`, 4 KB), typical ones,
and the dearest text (distinct LIKE patterns with `_`, 4 KB).

    .venv/bin/python bench/selector_compile_bench.py [--repeat N] [--no-save]

Per selector (`selectors`; flat in `figures` as NAME_FIGURE): `chars`, `held_bytes`,
`held_per_char`, `compile_ms`; the bytes are exact for a Python build, the milliseconds
move with the machine (compare two checkouts in one session: bench/before_after.py).
Prints JSON; writes
bench/results/selector_compile_bench.json. (A checkout from before the compact form
lacks hedwig/testing/compiled_size.py: copy it there with this script.)
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, report_start
from hedwig.selector import DEFAULT_LIMITS, compile_selector
from hedwig.testing.compiled_size import compiled_selector_bytes, forget_shared_patterns


def within_limit(text: str, joiner: str) -> str:
    return text[: text.rfind(joiner, 0, DEFAULT_LIMITS.max_length)]


SELECTORS = {
    "issue_41": within_limit(
        " OR ".join(" AND ".join(["s LIKE '%a_a_a_a_a_a_a_aX%'"] * 2) for _ in range(80)), " OR "
    ),
    "short": "color = 'red' AND n > 1",
    "typical": (
        "region IN ('eu', 'us') AND (priority >= 5 OR kind LIKE 'alert%') AND amount BETWEEN 10 AND 1000"
    ),
    "tenants_20": " OR ".join(f"(tenant = 't{n}' AND kind LIKE 'order.{n}%')" for n in range(20)),
    "distinct_underscores": within_limit(
        " OR ".join(f"s LIKE '%a_a_a_a_a_{i:03d}%'" for i in range(200)), " OR "
    ),
}


def compile_ms(text: str, repeat: int) -> float:
    best = None
    for _ in range(repeat):
        forget_shared_patterns()
        re.purge()
        start = time.perf_counter()
        compile_selector(text)
        spent = time.perf_counter() - start
        best = spent if best is None else min(best, spent)
    return round(best * 1000, 3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    report = report_start("selector_compile_bench", argv)
    figures = {}
    for name, text in SELECTORS.items():
        held = compiled_selector_bytes(text)
        figures[name] = {
            "chars": len(text),
            "held_bytes": held,
            "held_per_char": round(held / len(text), 2),
            "compile_ms": compile_ms(text, args.repeat),
        }
    report["selectors"] = figures
    report["figures"] = {  # (flat: bench/before_after.py compares these)
        f"{name}_{figure}": value
        for name, values in figures.items()
        for figure, value in values.items()
        if figure != "chars"
    }
    emit(report, RESULTS_DIR / "selector_compile_bench.json", save=not args.no_save)


if __name__ == "__main__":
    main()
