"""A real browser on /compare/: the per-task scatter draws (Chart.js under the site's CSP)."""

import pytest

from tests.browser.test_leaderboard_browser import CANVAS_INK, SCREENSHOTS
from tests.leaderboard import factories

pytestmark = pytest.mark.browser


@pytest.fixture
def two_runs(transactional_db):
    first = factories.entry("First-Kernels", gpu="H100")
    factories.verified_run(first, factories.FIVE_FAST, n_tasks=10)
    second = factories.entry("Second-Kernels", gpu="H100")
    factories.verified_run(second, [(True, 2.0, 1.0)] * 5, n_tasks=10)
    return first, second


def test_the_comparison_scatter_draws(live_server, two_runs, browser_page):
    first, second = two_runs
    errors = []
    browser_page.on("pageerror", lambda error: errors.append(str(error)))
    browser_page.goto(f"{live_server.url}/compare/?entries={first.pk},{second.pk}")
    browser_page.wait_for_function("() => typeof Chart !== 'undefined' && Chart.getChart('chart-compare')")
    assert browser_page.evaluate(CANVAS_INK, "chart-compare") > 500
    assert browser_page.locator("table.compare-tasks tbody tr").count() == 5
    assert errors == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser_page.screenshot(path=str(SCREENSHOTS / "compare.png"), full_page=True)
    browser_page.goto(f"{live_server.url}/levels/2/")
    browser_page.screenshot(path=str(SCREENSHOTS / "level2-intervals.png"), full_page=False)
