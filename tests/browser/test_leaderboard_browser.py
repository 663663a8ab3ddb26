"""A real browser on the leaderboard: Playwright drives Debian's Chromium against the live server to sort by
a header, apply a filter, move p, see the charts draw, and save a screenshot."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests.leaderboard import factories

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"

pytestmark = pytest.mark.browser

CANVAS_INK = """
(id) => {
  const canvas = document.getElementById(id);
  const context = canvas.getContext("2d");
  const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let inked = 0;
  for (let i = 3; i < pixels.length; i += 4) { if (pixels[i] !== 0) { inked += 1; } }
  return inked;
}
"""


@pytest.fixture
def board_with_run(transactional_db):
    """The seed data and one verified entry with per-task results."""
    call_command("seed", verbosity=0)
    verified = factories.entry("Verified-Kernels", gpu="H100")
    results = factories.FIVE_FAST * 4
    return factories.verified_run(verified, results, gpu="H100", n_tasks=100)


def first_row_name(page) -> str:
    return page.locator("#leaderboard tbody tr").first.locator(".entry-link").inner_text()


def column_values(page, key: str) -> list[str]:
    return page.locator(f'#leaderboard tbody td[data-key="{key}"]').evaluate_all(
        "cells => cells.map(cell => cell.dataset.value)"
    )


def test_sort_filter_p_and_charts_in_a_real_browser(live_server, board_with_run, browser_page):
    page = browser_page
    page.goto(f"{live_server.url}/levels/2/")
    assert first_row_name(page) == "daVinci-kernel-14B"

    # Sort by clicking a header: Fast2, descending.
    page.locator('#leaderboard th[data-key="fast_2"] a.sort-link').click()
    page.wait_for_url("**sort=-fast_2**")
    assert first_row_name(page) == "daVinci-kernel-8B"
    values = [float(v) for v in column_values(page, "fast_2") if v]
    assert values == sorted(values, reverse=True)

    # A filter applies as soon as it changes, and the sort stays.
    page.select_option("#f-kind", "agent")
    page.wait_for_url("**kind=agent**")
    assert "sort=-fast_2" in page.url
    kinds = page.locator("#leaderboard tbody .sub").all_inner_texts()
    assert kinds
    assert all("Agent system" in text for text in kinds)

    # The fast_p view: move p, the table recomputes the verified row at that p.
    page.goto(f"{live_server.url}/levels/2/?view=fastp")
    page.locator("#p-range").fill("1.35")
    page.wait_for_url("**p=1.35**")
    assert page.locator('#leaderboard th[data-key="fast_p"]').inner_text().startswith("fast_1.35")
    verified_row = page.locator("#leaderboard tbody tr", has_text="Verified-Kernels")
    assert float(verified_row.locator('td[data-key="fast_p"]').get_attribute("data-value")) == pytest.approx(
        8.0
    )

    # The charts draw: every canvas has ink.
    page.wait_for_function("() => window.leaderboardCharts && window.leaderboardCharts['chart-fastp']")
    for canvas in ("chart-fastp", "chart-bars", "chart-time"):
        assert page.evaluate(CANVAS_INK, canvas) > 500, canvas

    # Unticking a row redraws the fast_p chart and keeps the choice in the URL.
    page.locator("#leaderboard tbody tr").first.locator('input[name="compare"]').uncheck()
    assert "compare=" in page.url

    page.goto(f"{live_server.url}/levels/2/")
    page.wait_for_function("() => window.leaderboardCharts && window.leaderboardCharts['chart-bars']")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / "leaderboard-level2.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000
