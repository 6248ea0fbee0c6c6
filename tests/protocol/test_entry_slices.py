"""EntrySlices: an entry of its own cut from a stored entry holds exactly the messages the
stored entry holds there (seq-ids, origin seq-ids, payloads, typed properties, keys), from
plain and compressed sets alike."""

from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol.compression import compress_message_set
from hedwig.protocol.entry import EntrySlices, decode_entry, decode_entry_header, encode_entry_header
from hedwig.protocol.messageset import encode_message_set

values = st.one_of(
    st.binary(max_size=6), st.text(max_size=6), st.integers(-(2**63), 2**63 - 1), st.booleans()
)
property_maps = st.one_of(st.none(), st.dictionaries(st.text(min_size=1, max_size=4), values, max_size=3))
keys = st.one_of(st.none(), st.binary(min_size=1, max_size=5))


def fields(messages):
    return [
        (m.seq, bytes(m.payload), m.properties, m.key, m.origin_seq, m.origin_region, m.publish_time_us)
        for m in messages
    ]


@given(
    st.lists(st.tuples(st.binary(max_size=20), property_maps, keys), min_size=1, max_size=12),
    st.sampled_from([None, "gzip"]),
    st.data(),
)
def test_a_cut_holds_the_entrys_messages_there(messages, codec, data):
    payloads = [payload for payload, _, _ in messages]
    properties = [p for _, p, _ in messages] if any(p for _, p, _ in messages) else None
    message_keys = [k for _, _, k in messages] if any(k for _, _, k in messages) else None
    message_set = encode_message_set(payloads, properties, message_keys)
    if codec:
        message_set = compress_message_set(message_set, codec)
    entry = encode_entry_header(40, len(payloads), 1_700_000_000_000_000, b"eu", 70, b"us") + message_set
    slices = EntrySlices(entry)
    start = data.draw(st.integers(0, len(payloads) - 1))
    stop = data.draw(st.integers(start + 1, len(payloads)))
    cut = slices.cut(start, stop)
    assert fields(decode_entry("t", cut)) == fields(decode_entry("t", entry, start, stop))
    header = decode_entry_header(cut)
    assert (header.first_seq, header.count, header.via) == (40 + start, stop - start, "us")
