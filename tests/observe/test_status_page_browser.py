"""The status page in a real headless browser: Debian's chromium, driven by its
chromedriver through selenium (no browser download). .ci/run installs both."""

import shutil

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

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
        screenshot = tmp_path / "status-page.png"
        assert browser.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 1000
