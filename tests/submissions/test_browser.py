"""A newcomer's path in a real browser: log in, upload a bundle, watch the progress bar fill while a real
worker evaluates it on the CPU, then see the verified scores on the submission's entry."""

from pathlib import Path

import pytest
from django.conf import settings

from tests.browser.chromium import new_page
from tests.submissions.samples import TORCH_GELU_KERNEL, TRITON_RELU_KERNEL, kernel_name, zip_bytes

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def page(browser):
    return new_page(browser, {"width": 1280, "height": 900})


@pytest.mark.django_db(transaction=True)
def test_upload_watch_progress_and_see_verified_scores(
    live_server, user, builtin_tasks, workers, tmp_path, page
):
    bundle = tmp_path / "run.zip"
    files = {kernel_name(1, 9): TRITON_RELU_KERNEL, kernel_name(1, 7): TORCH_GELU_KERNEL}
    bundle.write_bytes(zip_bytes(files))
    workers.start()

    page.goto(f"{live_server.url}/submit/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "a-long-password-1")
    page.click("button[type=submit]")
    page.set_input_files("#id_bundle", str(bundle))
    page.fill("#id_new_method", "Browser LLM")
    page.select_option("#id_hardware", label="CPU")
    page.click("form.upload-form button[type=submit]")

    page.wait_for_selector("#progress")
    assert page.locator("#progress").get_attribute("max") == "2"
    page.wait_for_function(
        "() => document.getElementById('status-badge').textContent.trim().toLowerCase() === 'completed'",
        timeout=300_000,
    )
    page.wait_for_selector("#submission-status[data-final=true]")  # the page reloads once finished
    assert page.locator("#progress").get_attribute("value") == "2"
    rows = page.inner_text("#task-rows")
    assert "9_ReLU" in rows
    assert "7_GELU" in rows
    assert "pending" not in rows
    assert "Completed" in page.inner_text("ol.events")
    assert "CPU-only" in page.inner_text("body")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "submission-completed.png"), full_page=True)

    page.click("text=Browser LLM (L1)")
    page.wait_for_load_state()
    assert "Browser LLM" in page.inner_text("body")
    page.screenshot(path=str(SCREENSHOTS / "submission-entry.png"), full_page=True)
