"""Request ids count up from 1 and wrap past 2**32 - 1 to 1, never 0 (the pushed frames' id)."""

from hedwig.protocol.request_ids import MAX_REQUEST_ID, RequestIds


def test_ids_count_up_from_one_and_wrap_past_the_largest_to_one():
    ids = RequestIds()
    assert [ids.next() for _ in range(3)] == [1, 2, 3]
    ids.last = MAX_REQUEST_ID - 1
    assert [ids.next(), ids.next()] == [MAX_REQUEST_ID, 1]
