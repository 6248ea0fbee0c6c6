"""Issue 28, finding 5: no name a peer chooses can break the status page.

The page embeds the hub's state as JSON in a <script> element. A HELLO client name of
`<!--` was embedded as `<\\!--`, which is not JSON: the page drew nothing and stopped
refreshing. Here peers name themselves with every kind of character that means something
to HTML, to a script element, to JSON or to a terminal, and the page in a real headless
browser shows each name as text, raises no script error, and goes on refreshing."""

import pytest

from hedwig.observe.page import _embed
from hedwig.protocol import Op, Status, encode_frame
from hedwig.protocol.requests import encode_hello
from hedwig.testing.hubprocess import HubProcess
from tests.hub.rawpeer import RawPeer
from tests.observe.test_status_page_browser import browser  # noqa: F401 (the fixture)

NAMES = {
    "comment": "<!--",
    "script end": "</script><script>document.title='owned'</script>",
    "markup": "<img src=x onerror=\"document.title='owned'\">",
    "cdata": "<![CDATA[ ]]>",
    "entities": "&lt;&amp;&#60;",
    "quotes": "\"'`",
    "backslashes": "\\\\u003c \\n \\",
    "separators": "a\u2028b\u2029c",
    "controls": "bell\x07 escape\x1b[31m nul\x00 del\x7f",
    "newline": "first\nsecond",
    "non-ascii": "Zoë 日本 😀",
}


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_the_embedded_json_parses_back_to_the_same_name(name):
    import json

    embedded = _embed({"client": name})
    assert json.loads(embedded) == {"client": name}
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded


def test_peers_names_of_every_kind_show_as_text_and_the_page_refreshes(tmp_path, browser):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    conf = tmp_path / "hub.conf"
    conf.write_text("[http]\nsample_interval_s = 0.5\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf), http=True) as hub:
        peers = []
        for name in NAMES.values():
            peer = RawPeer(hub.address)
            peer.send(encode_frame(Op.HELLO, 1, encode_hello(name)))
            assert peer.next_response()[1] is Status.SUCCESS
            peers.append(peer)
        browser.get(hub.http_url)
        wait = WebDriverWait(browser, 20)

        def shown(driver):  # (read in one script: the table is drawn anew at each refresh)
            script = "return [...document.querySelectorAll('#connections td.client')].map(c => c.textContent)"
            return {text.replace("\x00", "") for text in driver.execute_script(script)}

        # Each name is there as text (NULs aside: how a browser shows one is its business).
        expected = {name.replace("\x00", "") for name in NAMES.values()}
        wait.until(lambda d: expected <= shown(d))
        assert browser.title != "owned"
        refreshes = int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-refreshes") or 0)
        wait.until(
            lambda d: int(d.find_element(By.TAG_NAME, "body").get_attribute("data-refreshes")) > refreshes
        )
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        for peer in peers:
            peer.close()
