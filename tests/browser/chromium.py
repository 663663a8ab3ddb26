"""Debian's Chromium under Playwright for the browser tests: one launch, skipped without it unless
REQUIRE_BROWSER=1 (CI) makes that a failure. The fixtures `browser` and `browser_page` (tests/conftest.py)
are built from these."""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
TIMEOUT_MS = 20_000


@contextlib.contextmanager
def launched_chromium() -> Iterator:
    """A headless Chromium browser, closed afterwards."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is not installed (apt-get install chromium); the browser test needs it"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, viewport: dict):
    """A tab of the given size whose waits give up after TIMEOUT_MS."""
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(TIMEOUT_MS)
    return page
