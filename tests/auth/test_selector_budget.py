"""Issue 41, points 2 and 3, against a real hub with [auth] on: what one user's selectors
can make the hub do for another user's messages.

Point 2: bob's message with a string property of most of a megabyte, and alice's
selector of over a hundred LIKE patterns with `_` in their pieces (within every parser limit), was
one uninterrupted evaluation of seconds on the reactor: every other publish waited for
it. A selector's general LIKE patterns now share a budget of steps per message
(SelectorLimits.max_like_steps): a value longer than the budget allows is not searched,
and the LIKE is unknown, so the message does not pass (as for a value of the wrong
type). The figures (another user's publish round trip meanwhile) are bench/attack_bench.py's.
"""

from hedwig.delivery.filtering import Filters, compiled_weight
from hedwig.protocol.auth_request import Credentials
from hedwig.selector import DEFAULT_LIMITS, compile_selector
from hedwig.selector.compiler import CompiledSelector
from hedwig.selector.parser import parse
from tests.auth.peers import USERS
from tests.client.every_client import Blocking

PIECE = "a_a_a_a_a_a_X"  # with 3 digits after it, 16 characters: the longest piece allowed


def hostile_selector(count: int = 132, negated: bool = True) -> str:
    not_ = "NOT " if negated else ""
    text = " AND ".join(f"s {not_}LIKE '%{PIECE}{n:03d}%'" for n in range(count))
    return text[: text.rfind(" AND ", 0, DEFAULT_LIMITS.max_length)]  # (within the length limit)


def client(hub, user):
    return Blocking(hub.address, credentials=Credentials(user, USERS[user][0]))


def test_a_selectors_like_patterns_share_a_budget_per_message():
    text = hostile_selector()
    selector = compile_selector(text)
    compiled = CompiledSelector(parse(text), DEFAULT_LIMITS.max_like_steps)
    likes = list(compiled._likes.values())
    assert len(likes) > 100
    steps = sum(like.steps_per_char for like in likes) * likes[0].max_value_chars
    assert steps <= DEFAULT_LIMITS.max_like_steps
    assert all(like.max_value_chars == likes[0].max_value_chars for like in likes)
    short = {"s": "b" * 100}
    assert selector.matches(short)  # within the budget: searched, and NOT LIKE is TRUE
    assert selector.evaluate({"s": "b" * 900_000}) is None  # past it: unknown


def test_a_huge_value_under_a_hostile_selector_is_unknown_not_seconds_of_search(hub):
    topic = "t.like-budget"
    alice, bob = client(hub, "alice"), client(hub, "bob")
    try:
        subscription = alice.subscribe(topic, "picky", start="earliest", filter=hostile_selector())
        bob.call("publish", topic, b"huge", properties={"s": "a" * 900_000})
        bob.call("publish", topic, b"short", properties={"s": "a" * 1000})
        # NOT LIKE of each pattern is TRUE of both values; the huge one is past the budget.
        assert subscription.receive().payload == b"short"
    finally:
        alice.close()
        bob.close()


def distinct_hostile(n: int) -> str:
    text = " OR ".join(f"s LIKE '%a_a_a_a_a_{n:03d}{i:03d}%'" for i in range(200))
    return text[: text.rfind(" OR ", 0, DEFAULT_LIMITS.max_length)]


def test_a_users_filters_are_held_to_a_budget_and_another_users_are_not(hub):
    """Issue 41, point 3: 300 subscriptions with distinct 4 KB selectors on one
    connection held +108 MB (a compiled selector weighs ~50 times its text) and cost 1.7 s
    of compiling back to back. The distinct filters of one user's attached subscriptions
    weigh at most [delivery] max_filter_bytes_per_user (8 MiB: 30 such selectors), on
    any of its connections; past it a SUBSCRIBE is refused before anything is compiled.
    Another user's budget is its own."""
    from hedwig.client.errors import HedwigError

    text = distinct_hostile(0)
    weight = compiled_weight(text)
    fits = (8 << 20) // weight
    assert 25 <= fits <= 40
    alice, again, bob = client(hub, "alice"), client(hub, "alice"), client(hub, "bob")
    try:
        for n in range(fits):
            alice.subscribe("t.filters", f"f{n}", filter=distinct_hostile(n))
        alice.subscribe("t.filters", "same", filter=distinct_hostile(0))  # one she has: free
        try:
            again.subscribe("t.filters", "one-more", filter=distinct_hostile(fits))
        except HedwigError as e:
            refusal = e
        else:
            refusal = None
        assert refusal is not None and "max_filter_bytes_per_user" in str(refusal), refusal
        bob.subscribe("t.filters", "bobs", filter=distinct_hostile(fits))  # his own budget
        alice.close()  # her subscriptions detach: her budget is free again
        again.subscribe("t.filters", "now", filter=distinct_hostile(fits + 1))
    finally:
        again.close()
        bob.close()


def test_the_hub_keeps_compiled_filters_no_one_uses_up_to_a_weight():
    """The hub-wide cache of compiled filters held 1,024 of them whatever they weighed
    (+108 MB after the connection that made them closed); it holds [delivery]
    filter_cache_bytes of them, the least recently asked for dropped first."""
    filters = Filters(1 << 20)
    for n in range(40):
        filters.get(distinct_hostile(n))
    assert filters.weight <= 1 << 20
    kept = len(filters._by_text)
    assert kept == (1 << 20) // compiled_weight(distinct_hostile(0))
    assert distinct_hostile(39) in filters._by_text and distinct_hostile(0) not in filters._by_text
