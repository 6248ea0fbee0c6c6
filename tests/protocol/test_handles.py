"""A connection's subscription handles on the hub's side (protocol/handles.py): unique
while attached, frames held until the SUBSCRIBE reply, refusals by status."""

import pytest

from hedwig.protocol.handles import MAX_HANDLE, HandleTable
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.status import Status

KEY = ("t", "s")


def test_what_is_sent_before_the_reply_is_held_and_released_behind_it():
    table = HandleTable()
    handle = table.open(KEY)
    assert table.hold(handle, (b"head", b"entry"))
    with pytest.raises(RequestRefused) as early:
        table.attached(handle)  # (not answered yet: CONSUME cannot name it)
    assert early.value.status is Status.CLIENT_NOT_SUBSCRIBED
    assert table.held_bytes == 9
    assert table.answered(handle) == [b"head", b"entry"] and table.held_bytes == 0
    assert table.attached(handle) == KEY and not table.hold(handle, (b"x",))


def test_a_second_attach_of_one_subscription_on_a_connection_is_refused():
    table = HandleTable()
    table.open(KEY)
    with pytest.raises(RequestRefused) as twice:
        table.open(KEY)
    assert twice.value.status is Status.CLIENT_ALREADY_SUBSCRIBED


def test_a_refused_subscribe_frees_its_handle_and_drops_what_was_held():
    table = HandleTable()
    handle = table.open(KEY)
    table.hold(handle, (b"abc",))
    assert table.refused(handle, KEY) == [b"abc"]
    assert len(table) == 0 and table.held_bytes == 0 and table.open(KEY) != 0


def test_close_forget_and_end_free_the_handle():
    table = HandleTable()
    for free in (lambda h: table.close(h), lambda h: table.forget(KEY), lambda h: table.end(h)):
        handle = table.open(KEY)
        table.answered(handle)
        free(handle)
        assert len(table) == 0 and KEY not in table.handles
    assert table.end(12345) is None and table.forget(KEY) is None


def test_handles_wrap_past_the_largest_u32_skipping_those_in_use():
    table = HandleTable()
    table._next = MAX_HANDLE
    last = table.open(("t", "a"))
    assert last == MAX_HANDLE
    table._next = MAX_HANDLE
    assert table.open(("t", "b")) == 1  # (MAX_HANDLE is taken, 0 is never a handle)
