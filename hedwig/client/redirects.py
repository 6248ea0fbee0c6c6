"""Following NOT_RESPONSIBLE_FOR_TOPIC: one rule for both clients.

A hub that does not own a topic names the owner ("host:port") in its status message. The
client goes there, at most `max_redirects` times for one request, and never back to a
hub it already asked: hubs that disagree about an owner must not bounce a request
between them for ever.
"""

from hedwig.client.addresses import format_address, parse_address
from hedwig.client.errors import TooManyRedirects


def next_owner(topic: str, owner: str, asked: list, max_redirects: int) -> tuple[str, int]:
    """The address to ask next, after `asked[-1]` named `owner`; raises TooManyRedirects
    for no owner, an unusable one, a loop, or one redirect too many."""
    owner = owner.strip()
    here = format_address(asked[-1])
    if not owner:
        raise TooManyRedirects(message=f"{here} does not own {topic} and named no owner")
    try:
        address = parse_address(owner)
    except ValueError:
        raise TooManyRedirects(message=f"{here} named an unusable owner {owner!r} for {topic}") from None
    if address in asked:
        path = " -> ".join(format_address(a) for a in [*asked, address])
        raise TooManyRedirects(message=f"redirect loop for {topic}: {path}")
    if len(asked) > max_redirects:
        raise TooManyRedirects(message=f"{topic}: more than {max_redirects} redirects")
    return address
