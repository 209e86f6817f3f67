"""The course as learners meet it: JupyterLab in Chromium, lessons run from the menus, widgets used.

Each test runs a lesson up to its widget cell, uses the widget and checks that what a learner
looks at is on the page (rendered widgets, not their text fallback), then keeps a screenshot in
test-artifacts/browser/. `make test-browser` runs these (installing Chromium if it is missing).
"""

import re
from pathlib import Path

import pytest
from notebook_page import NotebookPage
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.timeout(600)

MINUTE_MS = 60_000
NOT_RENDERED = ("the widget did not render: without JupyterLab's widget extension (jupyterlab_widgets)"
                " a widget shows as text, e.g. VBox(children=...)")


def open_lesson(page: Page, jupyter_lab, name: str) -> NotebookPage:
    notebook = NotebookPage(page, jupyter_lab.url, jupyter_lab.token, jupyter_lab.root_dir / name)
    notebook.open()
    return notebook


def progress_fraction(output: Locator) -> float:
    """How full the (first) progress bar in `output` is, 0..1, as drawn."""
    bar = output.locator(".widget-hprogress .progress-bar").first
    return float(bar.evaluate("bar => parseFloat(bar.style.width)")) / 100


def chart_width(chart: Locator) -> int:
    """The drawn width of a widget image in pixels (0: empty or not a valid PNG)."""
    return int(chart.evaluate("img => img.complete ? img.naturalWidth : 0"))


def screenshot(page: Page, output: Locator, path: Path) -> None:
    output.scroll_into_view_if_needed()
    page.screenshot(path=path)


def test_scaling_lab_measures_and_draws_its_chart(page: Page, jupyter_lab, artifacts: Path):
    notebook = open_lesson(page, jupyter_lab, "04_scaling.ipynb")
    index = notebook.index_of("ScalingLab(")
    notebook.run_up_to(index, timeout_s=300)
    output = notebook.cell(index).locator(".jp-Cell-outputArea")
    run = output.locator(".widget-button", has_text=re.compile("^Run$"))
    expect(run, NOT_RENDERED).to_be_visible(timeout=MINUTE_MS)
    chart = output.locator("img.widget-image")
    empty_chart = chart.get_attribute("src")

    run.click()
    expect(run).to_be_disabled(timeout=MINUTE_MS)  # the kernel took the click
    expect(run).to_be_enabled(timeout=5 * MINUTE_MS)  # and finished the sweep (or failed)
    screenshot(page, output, artifacts / "04_scaling_lab.png")

    status = output.locator(".widget-label").last.inner_text()
    assert not status.startswith("failed"), status
    assert progress_fraction(output) == 1.0, status
    assert chart.get_attribute("src") != empty_chart and chart_width(chart) > 0
    assert "env steps/s" in output.locator(".widget-output").inner_text()  # the run's own log


def test_training_dashboard_shows_progress_and_charts(page: Page, jupyter_lab, artifacts: Path):
    notebook = open_lesson(page, jupyter_lab, "01_ray_and_rl_basics.ipynb")
    index = notebook.index_of("TrainingDashboard(")
    notebook.run_up_to(index, timeout_s=300)
    output = notebook.cell(index).locator(".jp-Cell-outputArea")
    chart = output.locator("img.widget-image")
    # The chart is hidden until the first iteration is drawn.
    expect(chart, f"no chart after 3 minutes; or {NOT_RENDERED}").to_be_visible(timeout=3 * MINUTE_MS)
    notebook.wait_for_cells(range(index, index + 1), timeout_s=300)  # training finished
    screenshot(page, output, artifacts / "01_training_dashboard.png")

    status = output.locator(".widget-label").last.inner_text()
    assert re.match(r"iteration \d+", status), status
    assert progress_fraction(output) > 0, status
    assert chart_width(chart) > 0
