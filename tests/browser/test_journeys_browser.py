"""The three journeys in a real browser at a phone's 390 px and a desktop's 1400 px: no page wider than
the screen, the view's main score on the first screen, every default column visible on a desktop, the
home cards filled, a value's popover linking its source, and sign-up → submit page → my submissions."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests.browser.chromium import new_page
from tests.leaderboard import factories

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 1000}
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
PASSWORD = "a-long-browser-pass-51"

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
TABLE_FIT = """() => { const box = document.querySelector('.table-wrap');
  return [box.scrollWidth - box.clientWidth, box.scrollHeight - box.clientHeight]; }"""


@pytest.fixture
def site(transactional_db, settings):
    """The seed, the built-in tasks and one verified entry; sign-up open."""
    settings.LEADERBOARD_SIGNUP = True
    call_command("seed", verbosity=0)
    call_command("import_tasks", "--builtin", verbosity=0)
    verified = factories.entry("Verified-Kernels", gpu="H100")
    factories.verified_run(verified, factories.FIVE_FAST * 4, gpu="H100", n_tasks=100)
    return verified


def sign_up(page, base: str, name: str) -> None:
    page.goto(f"{base}/")
    page.click("[data-testid=signup-link]")
    page.fill("#id_username", name)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("[data-testid=signup-form] button[type=submit]")
    page.wait_for_url("**/account/")


def main_pages(site_entry) -> list[str]:
    method = site_entry.method.slug
    return [
        "/", "/levels/1/", "/levels/2/", "/levels/3/", f"/methods/{method}/", f"/entries/{site_entry.pk}/",
        "/tasks/", "/tasks/builtin/1/1/", "/glossary/", "/methods/", "/accounts/login/", "/accounts/signup/",
    ]  # fmt: skip


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1400px"])
def test_no_main_page_is_wider_than_the_screen(live_server, site, browser, viewport):
    page = new_page(browser, viewport)
    for path in main_pages(site):
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        assert page.evaluate(OVERFLOW) <= 0, f"{path} is wider than {viewport['width']} px"
    sign_up(page, live_server.url, f"wide{viewport['width']}")
    for path in ("/submit/", "/submissions/", "/account/"):
        page.goto(f"{live_server.url}{path}")
        assert page.evaluate(OVERFLOW) <= 0, f"{path} is wider than {viewport['width']} px"


@pytest.mark.parametrize("view", ["", "?view=fastp", "?view=geomean"])
def test_on_a_phone_the_main_score_is_on_the_first_screen(live_server, site, browser, view):
    page = new_page(browser, PHONE)
    page.goto(f"{live_server.url}/levels/2/{view}")
    key = page.locator("#leaderboard").get_attribute("data-sort").removeprefix("-")
    cell = page.locator(f'#leaderboard tbody tr >> nth=0 >> td[data-key="{key}"]')
    box = cell.bounding_box()
    assert box is not None
    assert box["x"] + box["width"] <= PHONE["width"], "the main score is off to the right"
    assert box["y"] + box["height"] <= PHONE["height"], "the main score is below the first screen"
    name = page.locator("#leaderboard tbody tr >> nth=0 >> td.col-name")
    assert name.bounding_box()["height"] < 60  # the name and one line of metadata
    if not view:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "level2-390px.png"))


@pytest.mark.parametrize("level", [2, 3])
def test_on_a_desktop_every_default_column_is_visible_without_scrolling(live_server, site, browser, level):
    page = new_page(browser, DESKTOP)
    page.goto(f"{live_server.url}/levels/{level}/")
    if level == 2:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "level2-1400px.png"))
    sideways, inner = page.evaluate(TABLE_FIT)
    assert sideways <= 1, f"the table scrolls sideways by {sideways} px"  # 1 px: sub-pixel rounding
    assert inner <= 0, "the table scrolls inside a box of its own"


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1400px"])
def test_home_cards_are_filled(live_server, site, browser, viewport):
    page = new_page(browser, viewport)
    page.goto(f"{live_server.url}/")
    cards = page.locator(".level-card table.mini")
    assert cards.count() >= 2
    for index in range(cards.count()):
        values = cards.nth(index).locator("tbody td.num").all_inner_texts()
        assert values
        assert all(value.strip() for value in values)


def test_a_value_popover_links_its_source_and_entry(live_server, site, browser):
    page = new_page(browser, DESKTOP)
    page.goto(f"{live_server.url}/levels/2/")
    page.locator('#leaderboard tbody tr >> nth=0 >> td[data-key="fast_1"] .v').click()
    popover = page.locator("[data-testid=cell-popover]")
    popover.wait_for()
    assert "Reported" in popover.inner_text()
    assert popover.locator("a", has_text="Entry page").count() == 1
    assert page.url.endswith("/levels/2/")  # the first click opens the popover, it does not leave


def test_sign_up_submit_page_and_my_submissions_on_a_phone(live_server, site, browser):
    page = new_page(browser, PHONE)
    sign_up(page, live_server.url, "newcomer")
    assert "Signed in as newcomer" in page.inner_text("[data-testid=account]")
    page.click("nav .nav-submit")
    page.wait_for_url("**/submit/")
    assert page.locator("[data-testid=queue-health] tbody tr").count() >= 1
    page.click("text=My submissions and API tokens")
    page.wait_for_url("**/submissions/")
    assert "No submissions yet" in page.inner_text("body")
    page.click("[data-testid=logout]")
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("[data-testid=signup-link]").count() == 1
