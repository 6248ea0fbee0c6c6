"""Issue 37's command-line findings, each as the operator met it: the `hedwig` command a
process of its own against a real hub process. Each test failed before its fix."""

import json

from tests.cli.test_cli import hedwig, lines

# -- 6: resuming a filtered subscription without --filter keeps its filter --------------------


def test_subscribe_after_reset_without_filter_resumes_with_the_subscriptions_filter(hub):
    for color in ("blue", "red", "blue"):
        hedwig("publish", "orders-6", f"a {color} one", "--property", f"color={color}", hub=hub)
    first = hedwig("subscribe", "orders-6", "red-ones", "--from", "earliest", "--filter", "color = 'red'",
                   "--count", "1", hub=hub)  # fmt: skip
    assert lines(first) == ["a red one"]
    assert lines(hedwig("reset", "orders-6", "red-ones", "--to", "earliest", hub=hub))
    again = hedwig("subscribe", "orders-6", "red-ones", "--count", "1", hub=hub)
    assert lines(again) == ["a red one"]  # (the filter still selects: not "a blue one")
    [row] = json.loads(hedwig("subscriptions", "orders-6", "--json", hub=hub).stdout)
    assert row["filter"] == "color = 'red'"
    # Removing the filter is said explicitly: --replace-filter without --filter.
    hedwig("reset", "orders-6", "red-ones", "--to", "earliest", hub=hub)
    unfiltered = hedwig("subscribe", "orders-6", "red-ones", "--replace-filter", "--count", "3", hub=hub)
    assert lines(unfiltered) == ["a blue one", "a red one", "a blue one"]
    [row] = json.loads(hedwig("subscriptions", "orders-6", "--json", hub=hub).stdout)
    assert row["filter"] is None
