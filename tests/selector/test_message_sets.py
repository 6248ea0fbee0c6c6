"""A selector over the messages of a message set as the hub stores them: bytes-valued
properties of an old publisher, typed ones, keys, and messages without properties."""

from hedwig.protocol.compression import compress_message_set, plain_message_set
from hedwig.protocol.messageset import encode_message_set
from hedwig.selector import compile_selector


def test_a_selector_picks_the_messages_of_a_set_that_pass():
    message_set = encode_message_set(
        [b"a", b"b", b"c", b"d", b"e"],
        [
            {"color": "red", "n": 150},
            {"color": "red", "n": 50},
            None,
            {"color": "blue", "n": 150},
            {"n": 120},
        ],
        [b"k1", None, b"k3", b"k4", b"user-5"],
    )
    selector = compile_selector("color = 'red' AND n BETWEEN 100 AND 200")
    assert selector.select(message_set) == [0]
    assert compile_selector("n > 100 OR key LIKE 'user-%'").select(message_set) == [0, 3, 4]
    assert compile_selector("NOT (color = 'red')").select(message_set) == [3]
    assert compile_selector("key IS NULL").select(message_set) == [1]


def test_bytes_valued_properties_of_an_old_set_select_as_strings():
    message_set = encode_message_set([b"a", b"b", b"c"], [{"color": b"red"}, {"color": b"\xff"}, None])
    assert message_set[1] == 1  # (the untyped blob of before)
    assert compile_selector("color = 'red'").select(message_set) == [0]
    assert compile_selector("color IS NOT NULL").select(message_set) == [0, 1]


def test_a_compressed_set_selects_from_its_plain_form():
    message_set = encode_message_set([b"x" * 100] * 4, [{"i": i} for i in range(4)], [b"k"] * 4)
    plain, offset = plain_message_set(b"head" + compress_message_set(message_set, "gzip"), 4)
    assert compile_selector("i >= 2").select(plain, offset) == [2, 3]


def test_a_set_without_properties_passes_only_conditions_true_of_nothing():
    message_set = encode_message_set([b"a", b"b"])
    assert compile_selector("n > 1").select(message_set) == []
    assert compile_selector("n IS NULL AND key IS NULL").select(message_set) == [0, 1]


def test_a_set_selected_in_steps_gives_what_it_gives_in_one_go_each_step_within_its_bounds():
    """Steps of at most `step` messages and `step_bytes` of properties and keys (one
    message at least, however large): each yields once, and together they select what
    `select` does, at any offset."""
    sizes = [0, 3, 40, 1, 200, 7, 0, 90, 5, 300, 2, 2, 2, 2, 2, 2]
    properties = [{"i": i, "pad": "p" * size} if size else None for i, size in enumerate(sizes)]
    keys = [b"k" * (i % 5) or None for i in range(len(sizes))]
    message_set = b"head" + encode_message_set([b"m"] * len(sizes), properties, keys)
    selector = compile_selector("i > 3 AND (key LIKE 'k%' OR pad LIKE '%p_p%')")
    expected = selector.select(message_set, 4)
    assert expected and len(expected) < len(sizes) - 4
    for step in (1, 3, 16):
        for step_bytes in (1, 60, 250, 10_000):
            selected = []
            steps = 0
            for _ in selector.select_in_steps(message_set, 4, selected, step, step_bytes):
                steps += 1
            assert selected == expected, (step, step_bytes)
            assert steps >= -(-len(sizes) // step)
            if step_bytes == 1:  # every message is its own step
                assert steps == len(sizes)
