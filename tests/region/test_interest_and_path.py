"""Interest per neighbour, the region path and its cycle checks, and the back-off."""

import json
import random

import pytest

from hedwig.region.backoff import Backoff
from hedwig.region.interest import InterestTable
from hedwig.region.path import PATH_FILE, RegionPath, cycle_through


def test_a_region_wants_a_topic_from_every_neighbour_but_the_one_whose_relay_is_its_only_interest():
    table = InterestTable()
    table.add("t", "__region__leaf1")  # a child relays t from here
    assert table.wants("t", "root") and table.wants("t", "leaf2")
    assert not table.wants("t", "leaf1")  # it would only go back there
    table.add("t", "__region__leaf2")
    assert table.wants("t", "leaf1") and table.wants("t", "leaf2")
    table.remove("t", "__region__leaf1")
    table.remove("t", "__region__leaf2")
    assert not table.wants("t", "root")
    table.add("t", "billing")  # a local subscriber: wanted from everyone
    assert all(table.wants("t", n) for n in ("root", "leaf1", "leaf2"))
    assert table.wanted_from("leaf1") == [("t", 0)]
    assert not table.wants("other", "root")


def test_a_topic_is_wanted_since_the_first_subscription_that_makes_it_wanted():
    table = InterestTable()
    table.add("t", "__region__leaf1", 100)
    table.add("t", "billing", 300)
    table.add("t", "audit", 200)
    assert table.since("t", "leaf1") == 200  # its own relay does not count towards it
    assert table.since("t", "root") == 100
    table.remove("t", "audit")
    assert table.since("t", "leaf1") == 300
    table.add("t", "billing", 50)  # known already: it keeps its time
    assert table.since("t", "leaf1") == 300
    table.remove("t", "billing")
    assert table.since("t", "leaf1") is None and table.since("t", "root") == 100
    assert table.wanted_from("root") == [("t", 100)]


def test_notices_and_a_listing_may_overlap():
    table = InterestTable()
    table.add("t", "billing")
    table.add("t", "billing")
    table.remove("t", "billing")
    assert not table.wants("t", "root") and len(table) == 0
    table.remove("t", "billing")  # unknown: nothing happens
    table.add("t", "__region__root")
    assert table.relayed_by("root") == ["t"] and table.relays("t") == {"root"}
    assert table.local_subscribers("t") == 0


def test_a_cycle_is_described_from_the_region_that_closes_it():
    assert cycle_through(["b", "c"], "a") is None
    assert cycle_through(["b", "a"], "a") == "cycle in the region hierarchy: a -> b -> a"
    assert cycle_through(["c", "b", "a", "c"], "a") == "cycle in the region hierarchy: a -> c -> b -> a"


def test_a_root_knows_its_path_and_a_child_learns_it_from_its_parent(tmp_path):
    assert (RegionPath("world", "").names, RegionPath("world", "").complete) == (["world"], True)
    path = RegionPath("paris", "europe", str(tmp_path))
    assert (path.names, path.complete) == (["paris", "europe"], False)
    assert not path.learned(["europe"], False)  # what it knew already
    assert path.learned(["europe", "world"], True)
    assert (path.names, path.complete) == (["paris", "europe", "world"], True)
    assert not path.learned(["europe", "world"], True)  # the same: no change
    assert json.loads((tmp_path / PATH_FILE).read_text()) == {"path": ["paris", "europe", "world"]}
    # A restart remembers it, as long as the parent is the same.
    assert RegionPath("paris", "europe", str(tmp_path)).complete
    assert RegionPath("paris", "germany", str(tmp_path)).names == ["paris", "germany"]


def test_a_path_through_a_cycle_stops_at_the_first_region_named_twice():
    path = RegionPath("a", "c")
    assert path.learned(["c", "b", "a", "c", "b", "a", "c"], True)
    assert (path.names, path.complete) == (["a", "c", "b", "a"], False)


def test_an_unreadable_path_file_is_ignored(tmp_path):
    (tmp_path / PATH_FILE).write_text("{not json")
    path = RegionPath("paris", "europe", str(tmp_path))
    assert not path.complete


def test_backoff_doubles_to_its_cap_and_starts_over_after_success():
    backoff = Backoff(0.5, 4.0, jitter=0)
    assert [backoff.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.failures == 6
    backoff.reset()
    assert backoff.next_delay() == 0.5
    assert backoff.longest() == 4.0 and backoff.next_delay() == 4.0


def test_backoff_jitter_only_shortens():
    backoff = Backoff(1.0, 8.0, jitter=0.2, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(5)]
    for delay, nominal in zip(delays, [1, 2, 4, 8, 8], strict=True):
        assert 0.8 * nominal <= delay <= nominal
    with pytest.raises(ValueError):
        Backoff(0, 1)
