"""CachedEntries against a plain model: whatever the order of adds, runs, evictions and
prunes, find(seq) answers exactly what a scan over the cached entries would."""

from hypothesis import given
from hypothesis import strategies as st

from hedwig.cache.cached_entries import CachedEntries
from hedwig.topiclog.entry import LogEntry

# A fixed log: 60 entries of 1-4 messages.
SIZES = [1 + (i * 7) % 4 for i in range(60)]
LOG = []
_seq = 1
for _n in SIZES:
    LOG.append(LogEntry(_seq, _seq + _n - 1, b"x", 0))
    _seq += _n
LAST = _seq - 1

operations = st.lists(
    st.one_of(
        st.tuples(st.just("run"), st.integers(0, 59), st.integers(1, 10)),
        st.tuples(st.just("remove"), st.integers(0, 59), st.just(0)),
        st.tuples(st.just("prune"), st.integers(0, LAST), st.just(0)),
    ),
    max_size=80,
)


@given(operations)
def test_find_matches_a_scan(ops):
    index = CachedEntries()
    model = {}
    for op, a, b in ops:
        if op == "run":
            run = LOG[a : a + b]
            index.add_run(run) if len(run) > 1 else index.add(run[0])
            for e in run:
                model[e.first_seq] = e
        elif op == "remove":
            index.remove(LOG[a].first_seq)
            model.pop(LOG[a].first_seq, None)
        else:
            removed = index.remove_upto(a)
            expected = sorted(s for s, e in model.items() if e.last_seq <= a)
            assert sorted(e.first_seq for e in removed) == expected
            for s in expected:
                del model[s]
        assert len(index) == len(model)
        assert len(index.starts) <= 2 * len(model) + 64 + 10
    for seq in range(1, LAST + 2):
        want = next((e for e in model.values() if e.first_seq <= seq <= e.last_seq), None)
        assert index.find(seq) is want
    assert index.entries() == [model[s] for s in sorted(model)]
