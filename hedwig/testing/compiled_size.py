"""What a compiled selector holds in memory, for the tests and bench/ that bound it."""

import gc
import re
import tracemalloc

from hedwig.selector import compile_selector, like


def forget_shared_patterns() -> None:
    """Drop the LIKE patterns selectors share (none to drop in a checkout from before they
    were shared: bench/selector_compile_bench.py measures one)."""
    forget = getattr(like, "forget_shared_patterns", None)
    if forget is not None:
        forget()


def compiled_selector_bytes(text: str) -> int:
    """The bytes compiling `text` leaves allocated while its Selector lives
    (tracemalloc). Compiled once before, so that the names of the generated code are the
    interpreter's already (interned, shared by every selector); the shared LIKE patterns
    and `re`'s cache emptied, so that its patterns are counted (as for the first
    selector that has them)."""
    compile_selector(text)
    forget_shared_patterns()
    re.purge()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        selector = compile_selector(text)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert selector.matches({}) is False  # (alive until measured)
    return held
