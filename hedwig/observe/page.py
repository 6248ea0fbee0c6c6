"""The status page: one self-contained HTML document (status.html: no outside assets,
nothing fetched from the internet), rendered in the browser from the same JSON as
/api/status.

The hub's state at the time of the request is embedded in the page, so the first paint
needs no second request; a small script renders the tables and draws the charts as inline
SVG, then fetches api/status every sample interval and renders again. Table rows carry
data-* attributes (data-topic, data-subscriber) and cells a class per column, so tests
and people's scripts find what they look for without parsing text.
"""

import json
from functools import cache
from importlib import resources


@cache
def _template() -> str:
    return resources.files(__package__).joinpath("status.html").read_text(encoding="utf-8")


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def _embed(value) -> str:
    """JSON that stays JSON and cannot end or bend the <script> element it sits in: every
    '<', '>' and '&' is written as its \\u escape (valid in any JSON string, and the only
    characters the HTML parser looks for inside a script: '</script', '<!--'), and
    json.dumps escapes every control character and non-ASCII one. Whatever a peer named
    itself, the page parses the same data the API serves."""
    return json.dumps(value, sort_keys=True).translate(_SCRIPT_SAFE)


def render_page(status: dict, refresh_s: float) -> str:
    """The page with `status` (HubView.status) embedded, refreshing every `refresh_s`."""
    page = _template().replace("@REFRESH_MS@", str(max(500, int(refresh_s * 1000))))
    return page.replace("@STATUS@", _embed(status))
