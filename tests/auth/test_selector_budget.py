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
