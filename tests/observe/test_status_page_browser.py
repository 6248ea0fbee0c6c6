"""The status page in a real headless browser: Debian's chromium, driven by its
chromedriver through selenium (no browser download). .ci/run installs both.

Each test leaves a screenshot of the page in its output directory (pytest's tmp_path:
status-page.png, region.png, region-of-hubs.png) for people to look at."""

import json
import shutil
import urllib.request

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, free_port
from hedwig.testing.polling import wait_until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# As root, in a closed network: no sandbox, no background connections to Google's hosts.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
)


@pytest.fixture
def browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("the browser test needs Debian's chromium and chromium-driver (.ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_shows_the_topic_just_published_to_and_refreshes(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    conf = tmp_path / "hub.conf"
    conf.write_text("[http]\nsample_interval_s = 0.5\n")
    with HubProcess(tmp_path / "data", 0, "--conf", str(conf), http=True) as hub:
        with Client(hub.address) as client:
            client.publish_many("browser-topic", [b"m"] * 42)
        browser.get(hub.http_url)
        wait = WebDriverWait(browser, 20)
        row = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-topic="browser-topic"]'))
        assert row.find_element(By.CSS_SELECTOR, "td.messages").text == "42"
        assert row.find_element(By.CSS_SELECTOR, "td.range").text == "1..42"
        assert browser.find_element(By.ID, "name").text == hub.address
        assert browser.find_elements(By.CSS_SELECTOR, "#chart-publish svg polyline")
        # Live: a publish after the page loaded shows up without reloading it.
        with Client(hub.address) as client:
            client.publish_many("browser-topic", [b"m"] * 8)
        cell = 'tr[data-topic="browser-topic"] td.messages'
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, cell).text == "50")
        assert int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-refreshes")) >= 1
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        screenshot = tmp_path / "standalone.png"
        assert browser.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 1000


def texts(browser, css: str, attribute: str | None = None) -> list:
    """The text (or `attribute`) of every element `css` selects, read in one go: the page
    redraws itself every refresh, so elements found earlier may be gone."""
    script = "return Array.from(document.querySelectorAll(arguments[0])).map(e => arguments[1] ? "
    script += "e.getAttribute(arguments[1]) : e.textContent)"
    return browser.execute_script(script, css, attribute)


def waiting(browser):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))


def _no_errors(browser):
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_the_charts_have_axes_and_the_tables_read_as_text(tmp_path, browser):
    """Each chart has a value axis and a time axis, its legend beside its title (never
    over the line); states read as words; a Python client names itself; a connection
    with no request arriving shows "-"."""

    conf = tmp_path / "hub.conf"
    conf.write_text("[http]\nsample_interval_s = 0.5\n")
    with (
        HubProcess(tmp_path / "data", 0, "--conf", str(conf), http=True) as hub,
        Client(hub.address) as client,
    ):
        client.publish_many("orders", [b"m"] * 30)
        with client.subscribe("orders", "billing", start="earliest", window=5) as subscription:
            assert subscription.receive(timeout=30) is not None  # (then its window stays full)
            browser.get(hub.http_url)
            wait = waiting(browser)
            state = 'tr[data-subscriber="billing"] td.state'
            wait.until(lambda d: "window full" in "".join(texts(d, state)))
            wait.until(lambda d: len(texts(d, "#chart-publish svg text.x-tick")) == 3)
            for chart in ("publish", "delivery", "backlog"):
                assert len(texts(browser, f"#chart-{chart} svg text.y-tick")) == 3
                assert not [text for text in texts(browser, f"#chart-{chart} svg text") if "max" in text]
                (legend,) = texts(browser, f"#legend-{chart}")
                assert legend.startswith("now ") and " · max " in legend
            states = texts(browser, "td.state")
            assert states and not [text for text in states if "_" in text], states
            clients = texts(browser, "#connections td.client")
            assert any(text.startswith("hedwig-python/") and text.endswith("(blocking)") for text in clients)
            heading = texts(browser, "#connections th")
            assert "request arriving" in heading and "partial request" not in heading
            arriving = texts(browser, "#connections td.buffered_bytes")
            assert arriving and arriving == ["-"] * len(arriving)
            _no_errors(browser)
            assert browser.save_screenshot(str(tmp_path / "status-page.png"))


def test_a_region_shows_its_links_relays_apart_and_relayed_messages_in_the_rates(tmp_path, browser):
    """Two regions, europe a child of world: world's page counts what europe relays in
    its publish rate, lists the link, and shows europe's relay subscription as a relay,
    not among the users' (nor in their count)."""
    world_port = free_port()
    (tmp_path / "world.conf").write_text("[region]\nname = world\n[http]\nsample_interval_s = 0.5\n")
    (tmp_path / "europe.conf").write_text(
        f"[region]\nname = europe\nparent = world\nparent_address = 127.0.0.1:{world_port}\n"
        "[http]\nsample_interval_s = 0.5\n"
    )
    world = HubProcess(tmp_path / "w", world_port, "--conf", str(tmp_path / "world.conf"), http=True)
    europe = HubProcess(tmp_path / "e", 0, "--conf", str(tmp_path / "europe.conf"), http=True)
    with world, europe, Client(world.address) as at_world, Client(europe.address) as at_europe:
        desk = at_world.subscribe("news", "desk", start="latest")
        wait_until(lambda: at_europe.describe("news")["subscribers"], "europe relaying news up")
        at_europe.publish_many("news", [b"bonjour"] * 20)
        assert desk.receive(timeout=60) is not None

        def relayed_rate():
            with urllib.request.urlopen(world.http_url + "api/history", timeout=10) as response:
                return any(sample["publish_rate"] > 0 for sample in json.loads(response.read()))

        wait_until(relayed_rate, "world's publish rate counting the messages relayed in")
        browser.get(europe.http_url)
        wait = waiting(browser)
        relay = 'tr[data-subscriber="__region__world"] td.kind'
        wait.until(lambda d: texts(d, relay) == ["relay to region world"])
        tiles = dict(zip(texts(browser, ".tile small"), texts(browser, ".tile b"), strict=True))
        assert tiles["subscriptions"] == "0"  # (the relay is the hubs', not a user's)
        assert "parent world" in "".join(texts(browser, "#regions"))
        browser.get(world.http_url)
        wait.until(lambda d: "child europe" in "".join(texts(d, "#regions")))
        _no_errors(browser)
        assert browser.save_screenshot(str(tmp_path / "region.png"))
        desk.close()


def test_a_region_of_several_hubs_shows_its_hubs_and_every_subscription_with_its_owner(
    zookeeper, region, tmp_path, browser
):
    hubs = region(0, http=True)
    first, second = hubs.add(), hubs.add()
    with Client(hubs.addresses) as client:
        for i in range(6):
            client.publish_many(f"jobs-{i}", [b"x"] * (i + 1))
            client.subscribe(f"jobs-{i}", "workers", start="earliest").close()
        owners = client.owners()
    assert set(owners.values()) == {first.address, second.address}  # (topics on both hubs)
    browser.get(first.http_url)
    wait = waiting(browser)
    wait.until(lambda d: len(texts(d, "#region-hubs tr[data-hub]")) == 2)
    links = texts(browser, f'#region-hubs tr[data-hub="{second.address}"] a', "href")
    assert links == [second.http_url]
    rows = '#region-subscriptions tr[data-subscriber="workers"]'
    wait.until(lambda d: len(texts(d, rows)) == 6)
    shown = dict(zip(texts(browser, rows, "data-topic"), texts(browser, rows, "data-owner"), strict=True))
    assert shown == owners
    # "Topics owned by this hub (the region's are listed below)": and they are, with their owners.
    topics = "#region-topics tr[data-topic]"
    wait.until(lambda d: len(texts(d, topics)) == 6)
    listed = dict(
        zip(texts(browser, topics, "data-topic"), texts(browser, topics, "data-owner"), strict=True)
    )
    assert listed == owners
    assert "ZooKeeper connected" in "".join(texts(browser, "#zookeeper"))
    _no_errors(browser)
    assert browser.save_screenshot(str(tmp_path / "region-of-hubs.png"))
