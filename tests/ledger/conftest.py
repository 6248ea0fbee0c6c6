import pytest

from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.reactors import InlineThreadsReactor

SMALL = {"page_bytes": 8192, "index_page_records": 16, "max_mapped_pages": 4}


@pytest.fixture
def open_store(tmp_path):
    """open_store(**options) -> an MmapLedgerStore over tmp_path/ledgers with small pages
    and inline thread work; every store opened is closed after the test."""
    stores = []

    def open_(directory=None, reactor=None, **options):
        settings = dict(SMALL)
        settings.update(options)
        store = MmapLedgerStore(
            directory or tmp_path / "ledgers", reactor=reactor or InlineThreadsReactor(), **settings
        )
        stores.append(store)
        return store

    yield open_
    for store in stores:
        store.close()


def _harness(kind: str, tmp_path, request):
    from tests.ledger import stores

    if kind == "memory":
        return stores.MemoryHarness()
    if kind == "mmap":
        return stores.MmapHarness(tmp_path)
    if kind == "shared":
        return stores.SharedHarness(tmp_path)
    return stores.RadosHarness(request.getfixturevalue("ceph"))


@pytest.fixture(params=["memory", "mmap", "shared", "rados"])
def ledger_store(request, tmp_path):
    """The contract suite's store harness (tests/ledger/stores.py), one per store."""
    harness = _harness(request.param, tmp_path, request)
    yield harness
    harness.close()


@pytest.fixture(params=["mmap", "shared", "rados"])
def durable_ledger_store(request, tmp_path):
    harness = _harness(request.param, tmp_path, request)
    yield harness
    harness.close()


@pytest.fixture(params=["shared", "rados"])
def shared_ledger_store(request, tmp_path):
    harness = _harness(request.param, tmp_path, request)
    yield harness
    harness.close()
