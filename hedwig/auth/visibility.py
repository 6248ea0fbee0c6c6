"""What a user who is not an admin sees of a topic's subscriptions.

DESCRIBE_TOPIC and LIST_SUBSCRIPTIONS of one topic need the subscribe permission on it
(a user who may subscribe may see the topic's bounds, ledgers and its own position), not
admin. Subscription names are chosen by their users and often say what a team does, so
such a user sees the rows of the subscriptions it may use (its own, and those made with
[auth] off, which have no owner and which any permitted user may attach to: Principal.owns)
and only the number of the others (`hidden_subscriptions`). An admin sees every row,
with the user who made each (`user`).

A ledger's `location` (a path on the hub's disk, or a RADOS object name) is the
operator's business, not a tenant's: a user who is not an admin sees each ledger's id,
bounds and size only.
"""


def visible_rows(rows: list, principal) -> tuple[list, int]:
    """(the rows `principal` may see, how many it may not); every row when auth is off."""
    if principal is None or principal.admin:
        return rows, 0
    shown = [row for row in rows if principal.owns(row.get("user"))]
    return shown, len(rows) - len(shown)


def narrow_description(description: dict, principal) -> dict:
    """A DESCRIBE_TOPIC reply as `principal` may see it."""
    if principal is None or principal.admin:
        return description
    shown, hidden = visible_rows(description.get("subscribers", []), principal)
    narrowed = {**description, "subscribers": shown}
    if "ledgers" in description:
        narrowed["ledgers"] = [
            {key: value for key, value in row.items() if key != "location"} for row in description["ledgers"]
        ]
    if not hidden:
        return narrowed
    narrowed["hidden_subscriptions"] = hidden
    names = {row["subscriber_id"] for row in shown}
    if "relays" in description:
        narrowed["relays"] = [row for row in description["relays"] if row.get("subscriber_id") in names]
    return narrowed


def narrow_subscription_rows(rows: list, principal) -> list:
    """LIST_SUBSCRIPTIONS' rows as `principal` may see them (the count of the others is
    not a row: `describe` gives it)."""
    return visible_rows(rows, principal)[0]
