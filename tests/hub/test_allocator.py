"""The hub fixes glibc's heap thresholds at start (hedwig.hub.main.tune_allocator), so a
large entry's memory comes from the heap and stays there for the next one instead of
being mapped and returned per entry. Observed through glibc's own accounting
(mallinfo2), in a child process: the setting is process-wide."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")

_PROBE = r"""
import ctypes, sys
from hedwig.hub.main import tune_allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
        "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
tuned = tune_allocator() if sys.argv[1] == "tune" else False
mapped_before = libc.mallinfo2().hblkhd
block = bytearray(4 << 20)  # an entry of 4 MiB
mapped_during = libc.mallinfo2().hblkhd
del block
print(tuned, mapped_during - mapped_before >= 4 << 20)
"""


def _probe(mode, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    environment.update(env)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], env=environment, capture_output=True, text=True, check=True
    ).stdout.split()
    return [word == "True" for word in out]


def test_tuned_a_large_entry_comes_from_the_heap():
    assert _probe("tune") == [True, False]


def test_untuned_glibc_maps_it_apart_and_the_environment_overrides_the_hub():
    assert _probe("plain") == [False, True]
    assert _probe("tune", MALLOC_TRIM_THRESHOLD_="131072") == [False, True]
