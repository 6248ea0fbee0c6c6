"""The IMetadataStore contract, run against every backend: SQLite (on the calling thread and
on a worker thread) and ZooKeeper (a real server, kazoo's threads answering through the
test's reactor stand-in)."""

import itertools

import pytest
from twisted.python.failure import Failure
from zope.interface.verify import verifyObject

from hedwig.meta import (
    MAX_ACKED_BYTES,
    NEW,
    BadRecord,
    BadVersion,
    IMetadataStore,
    LedgerRange,
    MetadataError,
    SqliteMetadataStore,
    SubscriptionState,
    Versioned,
)
from tests.meta.answers import ThreadAnswers

_answers = []  # the ThreadAnswers of a store working on a thread, while its test runs


def result(d):
    """The result of a Deferred (raising its failure): already fired for a store on the
    calling thread, awaited through its answers for a store on a worker thread."""
    if _answers:
        return _answers[0].wait_for(d)
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]


_roots = itertools.count()


@pytest.fixture(params=["sqlite", "sqlite on a worker thread", "zookeeper"])
def store(request, tmp_path):
    client = None
    if request.param == "sqlite":
        backend = SqliteMetadataStore(tmp_path / "meta" / "hedwig.db")
    elif request.param == "sqlite on a worker thread":
        _answers.append(ThreadAnswers())
        backend = SqliteMetadataStore(tmp_path / "meta" / "hedwig.db", reactor=_answers[0])
    else:
        backend, client = zookeeper_store(request.getfixturevalue("zookeeper"), f"/contract-{next(_roots)}")
    yield backend
    try:
        result(backend.close())
    finally:
        _answers.clear()
        if client is not None:
            client.stop()
            client.close()


def zookeeper_store(server, root: str, session_timeout_ms: int = 4000):
    """A ZkMetadataStore under `root` of `server`, answering through a ThreadAnswers, and
    its kazoo client (started here, on the test's thread; the caller stops it)."""
    from hedwig.meta.zk_session import ZkSession, kazoo_client
    from hedwig.meta.zk_store import ZkMetadataStore

    client = kazoo_client(server.address, session_timeout_ms)
    client.start(timeout=30)
    _answers.append(ThreadAnswers())
    backend = ZkMetadataStore(ZkSession(client, _answers[0]), root)
    result(backend.ensure_layout())
    return backend, client


RANGES = [LedgerRange(3, 1, 10), LedgerRange(7, 11, None)]


def test_provides_the_interface(store):
    assert verifyObject(IMetadataStore, store)


# -- topics: every compare-and-set rule ---------------------------------------------------


def test_missing_topic_reads_as_none(store):
    assert result(store.get_topic("absent")) is None


def test_create_with_new_then_read_back(store):
    assert result(store.put_topic("t", RANGES, NEW)) == 0
    assert result(store.get_topic("t")) == Versioned(RANGES, 0)
    assert all(isinstance(r, LedgerRange) for r in result(store.get_topic("t")).value)


def test_a_topics_options_are_kept_with_its_ranges(store):
    compacted = {"compaction": True}
    assert result(store.put_topic("t", RANGES, NEW, options=compacted)) == 0
    assert result(store.get_topic("t")) == Versioned(RANGES, 0, compacted)
    longer = [*RANGES[:1], LedgerRange(7, 11, None)]
    result(store.put_topic("t", longer, 0, [9], options=compacted))
    assert result(store.get_topic("t")) == Versioned(longer, 1, compacted)
    # A topic without options reads as one always did (None); unknown options are refused.
    result(store.put_topic("u", RANGES, NEW, options={"compaction": False}))
    assert result(store.get_topic("u")) == Versioned(RANGES, 0)
    for bad in ({"compaction": "yes"}, {"ttl": 3}, ["compaction"]):
        with pytest.raises(BadRecord):
            result(store.put_topic("t", RANGES, 1, options=bad))
    assert result(store.get_topic("t")) == Versioned(longer, 1, compacted)


def test_create_when_present_is_bad_version_and_changes_nothing(store):
    result(store.put_topic("t", RANGES, NEW))
    with pytest.raises(BadVersion, match="already exists"):
        result(store.put_topic("t", [LedgerRange(9, 1, None)], NEW))
    assert result(store.get_topic("t")) == Versioned(RANGES, 0)


def test_update_with_current_version_bumps_it(store):
    result(store.put_topic("t", RANGES, NEW))
    longer = [*RANGES[:1], LedgerRange(7, 11, 20), LedgerRange(8, 21, None)]
    assert result(store.put_topic("t", longer, 0)) == 1
    assert result(store.get_topic("t")) == Versioned(longer, 1)
    assert result(store.put_topic("t", RANGES, 1)) == 2


def test_update_with_stale_version_loses(store):
    result(store.put_topic("t", RANGES, NEW))
    result(store.put_topic("t", RANGES, 0))
    with pytest.raises(BadVersion, match="version 1, not 0"):
        result(store.put_topic("t", [LedgerRange(9, 1, None)], 0))
    assert result(store.get_topic("t")) == Versioned(RANGES, 1)


def test_update_of_missing_topic_loses(store):
    with pytest.raises(BadVersion, match="does not exist"):
        result(store.put_topic("t", RANGES, 0))
    assert result(store.get_topic("t")) is None


def test_delete_needs_the_current_version(store):
    result(store.put_topic("t", RANGES, NEW))
    with pytest.raises(BadVersion):
        result(store.delete_topic("t", 5))
    assert result(store.get_topic("t")) is not None
    result(store.delete_topic("t", 0))
    assert result(store.get_topic("t")) is None
    with pytest.raises(BadVersion, match="does not exist"):
        result(store.delete_topic("t", 0))


def test_recreate_after_delete_starts_at_version_zero(store):
    result(store.put_topic("t", RANGES, NEW))
    result(store.put_topic("t", RANGES, 0))
    result(store.delete_topic("t", 1))
    assert result(store.put_topic("t", RANGES, NEW)) == 0


def test_two_writers_racing_from_one_read_only_one_wins(store):
    result(store.put_topic("t", RANGES, NEW))
    seen_by_a = result(store.get_topic("t")).version
    seen_by_b = result(store.get_topic("t")).version
    result(store.put_topic("t", [LedgerRange(1, 1, None)], seen_by_a))
    with pytest.raises(BadVersion):
        result(store.put_topic("t", [LedgerRange(2, 1, None)], seen_by_b))
    assert result(store.get_topic("t")).value == [LedgerRange(1, 1, None)]


def test_list_topics_is_sorted(store):
    for name in ["b", "a.c", "A", "z-1"]:
        result(store.put_topic(name, [], NEW))
    assert result(store.list_topics()) == ["A", "a.c", "b", "z-1"]


def test_empty_ranges_are_a_valid_record(store):
    result(store.put_topic("t", [], NEW))
    assert result(store.get_topic("t")) == Versioned([], 0)


@pytest.mark.parametrize(
    "ranges, message",
    [
        ("not a list", "list"),
        ([(1, 1)], "expected"),
        ([(1, 0, None)], "first seq-id >= 1"),
        ([(-1, 1, None)], "ledger id >= 0"),
        ([(1, 1, None), (2, 1, None)], "only the last range may be open"),
        ([(1, 5, 4)], "last seq-id must be an integer >= first"),
        ([(1, 1, 10), (2, 12, None)], "starts at 12"),
        ([(1, 1.0, None)], "integers"),
    ],
)
def test_malformed_ranges_are_refused_and_nothing_changes(store, ranges, message):
    result(store.put_topic("t", RANGES, NEW))
    with pytest.raises(BadRecord, match=message):
        result(store.put_topic("t", ranges, 0))
    assert result(store.get_topic("t")) == Versioned(RANGES, 0)


@pytest.mark.parametrize("version", [None, "0", 1.0, -2])
def test_malformed_versions_are_refused(store, version):
    with pytest.raises(BadRecord, match="version"):
        result(store.put_topic("t", RANGES, version))


@pytest.mark.parametrize("topic", ["", None, b"t"])
def test_malformed_names_are_refused(store, topic):
    with pytest.raises(MetadataError, match="non-empty str"):
        result(store.get_topic(topic))


# -- subscriptions ------------------------------------------------------------------------

STATE = SubscriptionState(0, {"window": 10, "start": "latest"})


def test_subscription_create_read_update_delete(store):
    assert result(store.get_subscription("t", "s")) is None
    assert result(store.put_subscription("t", "s", STATE, NEW)) == 0
    assert result(store.get_subscription("t", "s")) == Versioned(STATE, 0)
    moved = STATE._replace(consumed_seq=42)
    assert result(store.put_subscription("t", "s", moved, 0)) == 1
    assert result(store.get_subscription("t", "s")) == Versioned(moved, 1)
    result(store.delete_subscription("t", "s", 1))
    assert result(store.get_subscription("t", "s")) is None


def test_subscription_cas_rules(store):
    result(store.put_subscription("t", "s", STATE, NEW))
    with pytest.raises(BadVersion, match="already exists"):
        result(store.put_subscription("t", "s", STATE, NEW))
    with pytest.raises(BadVersion, match="version 0, not 3"):
        result(store.put_subscription("t", "s", STATE._replace(consumed_seq=9), 3))
    with pytest.raises(BadVersion, match="does not exist"):
        result(store.put_subscription("t", "other", STATE, 0))
    with pytest.raises(BadVersion):
        result(store.delete_subscription("t", "s", 7))
    assert result(store.get_subscription("t", "s")) == Versioned(STATE, 0)


def test_subscriptions_are_listed_per_topic(store):
    result(store.put_subscription("t", "b", STATE, NEW))
    result(store.put_subscription("t", "a", STATE._replace(consumed_seq=5), NEW))
    result(store.put_subscription("u", "a", STATE, NEW))
    listed = result(store.list_subscriptions("t"))
    assert list(listed) == ["a", "b"]
    assert listed["a"] == Versioned(SubscriptionState(5, STATE.preferences), 0)
    assert result(store.list_subscriptions("nobody")) == {}


def test_subscriptions_do_not_depend_on_topic_records(store):
    result(store.put_topic("t", RANGES, NEW))
    result(store.put_subscription("t", "s", STATE, NEW))
    result(store.delete_topic("t", 0))
    assert result(store.get_subscription("t", "s")) == Versioned(STATE, 0)


@pytest.mark.parametrize(
    "state, message",
    [
        (SubscriptionState(-1, {}), "consumed seq-id"),
        (SubscriptionState("5", {}), "consumed seq-id"),
        (SubscriptionState(1, []), "dict"),
        (SubscriptionState(1, {1: "x"}), "str keys"),
        (SubscriptionState(1, {"x": object()}), "JSON-able"),
        (SubscriptionState(1, {"x": float("nan")}), "JSON-able"),
        ((1,), "consumed_seq, preferences"),
    ],
)
def test_malformed_subscriptions_are_refused_and_nothing_changes(store, state, message):
    result(store.put_subscription("t", "s", STATE, NEW))
    with pytest.raises(BadRecord, match=message):
        result(store.put_subscription("t", "s", state, 0))
    assert result(store.get_subscription("t", "s")) == Versioned(STATE, 0)


def test_a_subscription_keeps_its_acked_bytes_as_given(store):
    """The opaque `acked` field (shared subscriptions' acknowledgements above consumed_seq):
    written with the pointer, returned byte for byte, b"" when none was given."""
    assert result(store.get_subscription("t", "s")) is None
    result(store.put_subscription("t", "s", STATE, NEW))
    assert result(store.get_subscription("t", "s")).value.acked == b""
    blob = bytes(range(256)) * 4 + b"\x00"
    result(store.put_subscription("t", "s", SubscriptionState(5, {}, blob), 0))
    got = result(store.get_subscription("t", "s")).value
    assert (got.consumed_seq, got.acked) == (5, blob) and type(got.acked) is bytes
    assert result(store.list_subscriptions("t"))["s"].value.acked == blob
    result(store.put_subscription("t", "s", SubscriptionState(9, {}, bytearray(b"\x01\x02")), 1))
    assert result(store.get_subscription("t", "s")).value.acked == b"\x01\x02"
    result(store.put_subscription("t", "s", SubscriptionState(9, {}), 2))
    assert result(store.get_subscription("t", "s")).value.acked == b"", "a write without it clears it"


@pytest.mark.parametrize(
    "acked, message",
    [("text", "bytes"), (12, "bytes"), (b"x" * (MAX_ACKED_BYTES + 1), "at most")],
)
def test_an_acked_field_that_is_not_bytes_within_the_limit_is_refused(store, acked, message):
    result(store.put_subscription("t", "s", STATE, NEW))
    with pytest.raises(BadRecord, match=message):
        result(store.put_subscription("t", "s", SubscriptionState(1, {}, acked), 0))
    assert result(store.get_subscription("t", "s")) == Versioned(STATE, 0)
    result(store.put_subscription("t", "s", SubscriptionState(1, {}, b"x" * MAX_ACKED_BYTES), 0))


def test_a_closed_store_fails_clearly(store):
    result(store.close())
    with pytest.raises(MetadataError, match="closed"):
        result(store.get_topic("t"))
    with pytest.raises(MetadataError, match="closed"):
        result(store.put_subscription("t", "s", STATE, NEW))
